"""The host application's seams: authentication, the directory, capabilities.

The spec leaves members to the host app, so the relay asks a ``Host`` who is
calling and who belongs where. ``StaticHost`` is the ready-made host for tests,
scenarios and the CLI; a real deployment plugs in its own object with the same
methods (docs/relay.md, Host seams).
"""

from collections.abc import Iterable, Sequence
from typing import Protocol

import attrs

from simkit.protocol.http import Request


@attrs.frozen
class Identity:
    """Who a credential names: a member and one of its devices (not yet checked)."""

    member_id: str
    device_id: str


class Host(Protocol):
    """What the relay needs from the host app.

    A host may also define ``capabilities(member_id, group_id) -> list[str] | None``;
    without it, or when it answers ``None``, every capability is granted.
    """

    def authenticate(self, request: Request) -> Identity | None:
        """Map a request's credential to an identity, or ``None`` (401)."""

    def is_member(self, member_id: str) -> bool:
        """Whether the directory knows this member (active or not)."""

    def is_active(self, member_id: str) -> bool:
        """Whether the member is known and currently active."""

    def group_members(self, group_id: str) -> Sequence[str]:
        """The group's members (inactive ones included); empty for an unknown group."""


class StaticHost:
    """An in-memory directory whose credential is two plain headers.

    ``authenticate`` trusts ``x-member`` and ``x-device`` as given (missing either
    means no identity), which is right for a simulation and wrong for anything
    else. Membership changes through the small methods below, because scenarios
    add and remove members while devices keep syncing.
    """

    def __init__(
        self,
        members: Iterable[str],
        groups: dict[str, Iterable[str]] | None = None,
        capabilities: dict[tuple[str, str], Iterable[str]] | None = None,
        inactive: Iterable[str] = (),
    ) -> None:
        self._members = dict.fromkeys(members)  # an ordered set: lookups are O(1)
        self._groups = {group: list(dict.fromkeys(ids)) for group, ids in (groups or {}).items()}
        self._capabilities = {key: list(caps) for key, caps in (capabilities or {}).items()}
        self._inactive = set(inactive)

    def to_json(self) -> dict:
        """The whole directory, in a canonical order."""
        return {
            "members": list(self._members),
            "groups": {group: ids for group, ids in sorted(self._groups.items())},
            "capabilities": sorted([*key, caps] for key, caps in self._capabilities.items()),
            "inactive": sorted(self._inactive),
        }

    def authenticate(self, request: Request) -> Identity | None:
        member = request.headers.get("x-member")
        device = request.headers.get("x-device")
        if member is None or device is None:
            return None
        return Identity(member, device)

    def is_member(self, member_id: str) -> bool:
        return member_id in self._members

    def is_active(self, member_id: str) -> bool:
        return member_id in self._members and member_id not in self._inactive

    def group_members(self, group_id: str) -> Sequence[str]:
        return tuple(self._groups.get(group_id, ()))

    def capabilities(self, member_id: str, group_id: str) -> list[str] | None:
        caps = self._capabilities.get((member_id, group_id))
        return None if caps is None else list(caps)

    def add_member(self, member_id: str) -> None:
        """Make a member known to the directory (idempotent)."""
        self._members.setdefault(member_id)

    def join(self, group_id: str, member_id: str) -> None:
        """Add a member to a group, making it known first if needed."""
        self.add_member(member_id)
        group = self._groups.setdefault(group_id, [])
        if member_id not in group:
            group.append(member_id)

    def leave(self, group_id: str, member_id: str) -> None:
        """Remove a member from a group; its devices stay in the roster if it pushed."""
        group = self._groups.get(group_id, [])
        if member_id in group:
            group.remove(member_id)

    def deactivate(self, member_id: str) -> None:
        """Mark a member inactive: it stops counting as a current member anywhere."""
        self._inactive.add(member_id)

    def reactivate(self, member_id: str) -> None:
        self._inactive.discard(member_id)

    def set_capabilities(
        self, member_id: str, group_id: str, capabilities: Iterable[str] | None
    ) -> None:
        """Grant exactly these capabilities in a group; ``None`` means everything."""
        if capabilities is None:
            self._capabilities.pop((member_id, group_id), None)
        else:
            self._capabilities[member_id, group_id] = list(capabilities)
