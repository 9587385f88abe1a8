"""The members file: the directory and bearer tokens of ``simkit serve`` (docs/relay.md).

A TOML file names the members (and which are inactive), the groups, the
capabilities per group and member, and the bearer tokens, each mapping to a member
and a device. ``TokenHost`` is the relay's host over it: ``authenticate`` reads
``Authorization: Bearer <token>``. ``simkit conform --auth`` reads the same format
(only its tokens) to know which credential names which identity.
"""

import hashlib
import re
import tomllib
from collections.abc import Sequence
from pathlib import Path

import attrs

from simkit.errors import InputError
from simkit.relay import Identity, Request, StaticHost

CAPABILITIES = ("write", "rotate")
# RFC 6750's b64token: what may follow "Bearer " in an Authorization header.
TOKEN = re.compile(r"[A-Za-z0-9._~+/-]+=*")
_TABLES = ("members", "inactive", "groups", "capabilities", "tokens")


@attrs.frozen
class Directory:
    """Everything a members file says; ``tokens`` maps a token to (member, device)."""

    members: tuple[str, ...] = ()
    inactive: tuple[str, ...] = ()
    groups: dict[str, tuple[str, ...]] = attrs.Factory(dict)
    capabilities: dict[tuple[str, str], tuple[str, ...]] = attrs.Factory(dict)
    tokens: dict[str, tuple[str, str]] = attrs.Factory(dict)

    def token_for(self, member: str, device: str) -> str | None:
        """The first token (in file order) naming this identity."""
        for token, identity in self.tokens.items():
            if identity == (member, device):
                return token
        return None


def _digest(token: str) -> bytes:
    return hashlib.sha256(token.encode()).digest()


class TokenHost(StaticHost):
    """A ``StaticHost`` whose credential is a bearer token from the members file.

    Tokens are looked up by their SHA-256, so the lookup's timing says nothing
    about how much of a guessed token was right.
    """

    def __init__(self, directory: Directory) -> None:
        super().__init__(
            directory.members,
            groups=directory.groups,
            capabilities=directory.capabilities,
            inactive=directory.inactive,
        )
        self._identities = {
            _digest(token): Identity(member, device)
            for token, (member, device) in directory.tokens.items()
        }

    def authenticate(self, request: Request) -> Identity | None:
        scheme, _, token = request.headers.get("authorization", "").partition(" ")
        if scheme.lower() != "bearer" or TOKEN.fullmatch(token.strip()) is None:
            return None
        return self._identities.get(_digest(token.strip()))


def load_directory(path: str | Path) -> Directory:
    """Read and check a members file; any mistake is an ``InputError`` naming file and key."""
    path = Path(path)
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise InputError(f"{path}: no such members file") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(f"{path}: cannot read the members file: {exc}") from None
    except tomllib.TOMLDecodeError as exc:
        raise InputError(f"{path}: not valid TOML: {exc}") from None
    return _Reader(path).directory(data)


class _Reader:
    def __init__(self, path: Path) -> None:
        self.path = path

    def fail(self, key: str, rule: str) -> InputError:
        return InputError(f"{self.path}: {key}: {rule}")

    def names(self, value: object, key: str) -> tuple[str, ...]:
        if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value):
            raise self.fail(key, "expected a list of non-empty strings")
        return tuple(dict.fromkeys(value))

    def table(self, value: object, key: str) -> dict:
        if not isinstance(value, dict):
            raise self.fail(key, "expected a table")
        return value

    def directory(self, data: dict) -> Directory:
        for key in data:
            if key not in _TABLES:
                raise self.fail(key, f"unknown key; a members file has {', '.join(_TABLES)}")
        members = self.names(data.get("members", []), "members")
        known = set(members)
        inactive = self.names(data.get("inactive", []), "inactive")
        groups = {}
        for group, ids in self.table(data.get("groups", {}), "groups").items():
            groups[group] = self.known(self.names(ids, f"groups.{group}"), known, f"groups.{group}")
        self.known(inactive, known, "inactive")
        return Directory(
            members=members,
            inactive=inactive,
            groups=groups,
            capabilities=self.capabilities(data.get("capabilities", {}), groups),
            tokens=self.tokens(data.get("tokens", {})),
        )

    def known(self, ids: Sequence[str], members: set[str], key: str) -> tuple[str, ...]:
        for member in ids:
            if member not in members:
                raise self.fail(key, f"{member!r} is not listed in members")
        return tuple(ids)

    def capabilities(self, value: object, groups: dict) -> dict[tuple[str, str], tuple[str, ...]]:
        caps = {}
        for group, per_member in self.table(value, "capabilities").items():
            key = f"capabilities.{group}"
            if group not in groups:
                raise self.fail(key, "not a group listed in groups")
            for member, granted in self.table(per_member, key).items():
                where = f"{key}.{member}"
                if member not in groups[group]:
                    raise self.fail(where, f"{member!r} is not a member of group {group!r}")
                if not isinstance(granted, list) or any(c not in CAPABILITIES for c in granted):
                    raise self.fail(where, f"expected a list of capabilities from {CAPABILITIES}")
                caps[member, group] = tuple(granted)
        return caps

    def tokens(self, value: object) -> dict[str, tuple[str, str]]:
        tokens = {}
        for token, identity in self.table(value, "tokens").items():
            key = f"tokens.{token!r}"
            if TOKEN.fullmatch(token) is None:
                raise self.fail(key, "a token must match [A-Za-z0-9._~+/-]+=* (RFC 6750)")
            identity = self.table(identity, key)
            if set(identity) != {"member", "device"} or not all(
                isinstance(v, str) for v in identity.values()
            ):
                raise self.fail(key, 'expected { member = "<member>", device = "<device>" }')
            tokens[token] = (identity["member"], identity["device"])
        return tokens
