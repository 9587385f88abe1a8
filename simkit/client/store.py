"""The device's local storage: what survives a crash.

Named tables of JSON-able values or frozen records (like IndexedDB object
stores). Writes go to a live view at once and reach durable storage only at
``commit()``, which a device calls where a real one would write to disk: after
each queued write and after each applied batch. A crash discards the live view;
``LocalStore(durable)`` restarts from the last commit. Values are never mutated in
place (always replaced), so commit copies references, not data.
"""

from collections.abc import Callable
from typing import Any

GONE = object()  # what ``on_commit`` hears for a deleted row


class LocalStore:
    def __init__(self, durable: dict[str, dict[str, Any]] | None = None) -> None:
        self._durable: dict[str, dict[str, Any]] = durable if durable is not None else {}
        self._live = {name: dict(rows) for name, rows in self._durable.items()}
        self._dirty: dict[tuple[str, str], None] = {}
        # an observer of durable state (the simulator's device model): it hears each
        # commit's changes, {(table, key): the new value, or GONE}; a row put again with
        # the value it had is no change (most commits rewrite an unchanged cursor)
        self.on_commit: Callable[[dict[tuple[str, str], Any]], None] | None = None

    def get(self, table: str, key: str, default: Any = None) -> Any:
        return self._live.get(table, {}).get(key, default)

    def put(self, table: str, key: str, value: Any) -> None:
        self._live.setdefault(table, {})[key] = value
        self._dirty[table, key] = None

    def delete(self, table: str, key: str) -> None:
        if self._live.get(table, {}).pop(key, None) is not None:
            self._dirty[table, key] = None

    def rows(self, table: str) -> dict[str, Any]:
        """The live rows of ``table`` (read-only by convention)."""
        return self._live.get(table, {})

    def drop_tables(self, prefix: str) -> None:
        """Delete every table whose name starts with ``prefix`` (a local wipe)."""
        for name in [n for n in self._live if n.startswith(prefix)]:
            for key in list(self._live[name]):
                self.delete(name, key)

    def commit(self) -> None:
        """Make every write since the last commit durable."""
        if self.on_commit is not None and self._dirty:
            changed = {}
            for table, key in self._dirty:
                value = self._live.get(table, {}).get(key, GONE)
                before = self._durable.get(table, {}).get(key, GONE)
                if value is not before and value != before:
                    changed[table, key] = value
            self.on_commit(changed)
        for table, key in self._dirty:
            live = self._live.get(table, {})
            if key in live:
                self._durable.setdefault(table, {})[key] = live[key]
            else:
                self._durable.get(table, {}).pop(key, None)
        self._dirty.clear()

    def durable(self) -> dict[str, dict[str, Any]]:
        """The durable snapshot, in a deterministic order."""
        return {
            name: dict(sorted(rows.items())) for name, rows in sorted(self._durable.items()) if rows
        }
