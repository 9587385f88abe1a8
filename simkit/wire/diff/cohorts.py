"""Cohorts: disjoint sets of identities, one per example, so examples never meet.

A relay at a URL cannot be reset between examples, and shrinking replays examples
many times, so every example runs in a cohort of its own: members, devices, groups
and a stranger no other cohort names, and so state no other example touched. The
reference relay and the model are new for each example; the relay under test
holds every cohort's history, which other cohorts cannot see.

``diff_directory(count)`` is the directory the relay under test must know
(``simkit diff --write-members FILE`` writes it for ``simkit serve --members``).
"""

import json
import re

import attrs

from simkit.model.requests import UNSAFE_IDS, RequestSpace
from simkit.relay import Request
from simkit.wire.members import Directory

DEFAULT_COHORTS = 1_000
# Per cohort: members and their devices, and the two groups (as the model's tests).
MEMBERS = {"alice": ("1", "2"), "bob": ("1",), "carol": ("1",)}
GROUPS = {"team": ("alice", "bob"), "ops": ("bob", "carol")}
# Capabilities, the same in every cohort (an example must not depend on which cohort
# it gets): alice may write but not rotate in team, carol may do nothing in ops, bob
# is not listed (everything).
CAPABILITIES = {("alice", "team"): ("write",), ("carol", "ops"): ()}


NAMES = ("alice", "bob", "carol", "team", "ops", "zed")


@attrs.frozen
class Cohort:
    """Cohort ``k``: members ``alice<k>x`` ..., devices ``alice<k>x-1`` ..., groups
    ``team<k>x`` ...; the ``x`` ends the number, so ``moved`` can rename them."""

    index: int

    def member(self, name: str) -> str:
        return f"{name}{self.index}x"

    @property
    def devices(self) -> dict[str, tuple[str, ...]]:
        return {self.member(m): tuple(f"{self.member(m)}-{d}" for d in ds)
                for m, ds in MEMBERS.items()}  # fmt: skip

    @property
    def groups(self) -> dict[str, tuple[str, ...]]:
        return {self.member(g): tuple(self.member(m) for m in ms) for g, ms in GROUPS.items()}

    @property
    def stranger(self) -> str:
        return self.member("zed")  # a member ID the directory does not know

    @property
    def capabilities(self) -> dict[tuple[str, str], tuple[str, ...]]:
        return {(self.member(m), self.member(g)): caps for (m, g), caps in CAPABILITIES.items()}

    def identities(self) -> list[tuple[str, str]]:
        """Every (member, device) of this cohort the request generator may present:
        each member with each device (its own or another's), and the stranger."""
        devices = [d for ds in self.devices.values() for d in ds]
        return [
            *((m, d) for m in self.devices for d in devices),
            (self.stranger, f"{self.stranger}1"),
        ]

    def space(self, tokens: dict[tuple[str, str], str]) -> RequestSpace:
        """What the request generator draws from; credentials are bearer tokens
        (``token_index``), and an identity without one sends none. An identity with an
        unsafe ID is refused before anything else is read (403 malformed-identity),
        so a cohort member with an unsafe device presents the shared ``alice`` one."""

        def credential(member: str | None, device: str | None) -> dict[str, str]:
            token = tokens.get((member, device))
            if token is None and device in UNSAFE_IDS and member in self.devices:
                token = tokens.get(("alice", device))
            return {} if token is None else {"authorization": f"Bearer {token}"}

        return RequestSpace(
            devices=self.devices,
            groups=tuple(self.groups),
            strangers=(self.stranger,),
            credential=credential,
        )


# Identities with an unsafe ID are refused before any state is read, so all cohorts
# share them; MARKER's device is registered by each run (a relay that knows it is not
# fresh).
SHARED = [*((unsafe, "d1") for unsafe in UNSAFE_IDS), *(("alice", u) for u in UNSAFE_IDS)]
MARKER = ("simkit-diff", "run")


def diff_directory(count: int = DEFAULT_COHORTS) -> Directory:
    """The directory of ``count`` cohorts, with one bearer token per identity."""
    members, groups, capabilities, tokens = [], {}, {}, {}
    for index in range(count):
        cohort = Cohort(index)
        members += cohort.devices
        groups |= cohort.groups
        capabilities |= cohort.capabilities
        for i, identity in enumerate(cohort.identities()):
            tokens[f"diff-{index}-{i}"] = identity
    for i, identity in enumerate(SHARED):
        tokens[f"diff-shared-{i}"] = identity
    tokens["diff-marker"] = MARKER
    return Directory(tuple(members), (), groups, capabilities, tokens)


def moved(request: Request, source: Cohort, target: Cohort) -> Request:
    """The request as the same caller would send it in cohort ``target``: every name
    and token of cohort ``source`` renamed (to replay a divergence in a fresh cohort)."""
    # Not after a lowercase letter (names are lowercase; "%3Ateam1x" is g:team1x).
    names = re.compile(rf"(?<![a-z])({'|'.join(NAMES)}){source.index}x".encode())
    token = re.compile(rf"\bdiff-{source.index}-".encode())

    def rename(text: str | bytes) -> str | bytes:
        raw = text.encode("utf-8", "surrogatepass") if isinstance(text, str) else text
        raw = token.sub(f"diff-{target.index}-".encode(), raw)
        raw = names.sub(lambda m: m[1] + f"{target.index}x".encode(), raw)
        return raw.decode("utf-8", "surrogatepass") if isinstance(text, str) else raw

    return Request(
        request.method,
        rename(request.path),
        {rename(k): rename(v) for k, v in request.query.items()},
        {k: rename(v) for k, v in request.headers.items()},
        rename(bytes(request.body)),
    )


def token_index(directory: Directory) -> dict[tuple[str, str], str]:
    """Each identity's token (the first the directory lists for it)."""
    return {identity: token for token, identity in reversed(directory.tokens.items())}


def members_toml(directory: Directory) -> str:
    """The directory as a members file (docs/relay.md, "The members file")."""
    text = json.dumps  # a JSON string is a TOML basic string
    lines = ["# simkit diff's cohorts: serve this with simkit serve --members FILE", ""]
    lines.append("members = [")
    lines += [f"    {text(m)}," for m in directory.members]
    lines += ["]", "", "[groups]"]
    lines += [f"{text(g)} = [{', '.join(map(text, ms))}]" for g, ms in directory.groups.items()]
    by_group: dict[str, dict[str, tuple[str, ...]]] = {}
    for (member, group), grants in directory.capabilities.items():
        by_group.setdefault(group, {})[member] = grants
    for group, grants in by_group.items():
        lines += ["", f"[capabilities.{text(group)}]"]
        lines += [f"{text(m)} = [{', '.join(map(text, g))}]" for m, g in grants.items()]
    lines += ["", "[tokens]"]
    lines += [
        f"{text(token)} = {{ member = {text(member)}, device = {text(device)} }}"
        for token, (member, device) in directory.tokens.items()
    ]
    return "\n".join(lines) + "\n"
