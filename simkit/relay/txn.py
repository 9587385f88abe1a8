"""One handler, one transaction: changes are applied in place and undone on failure.

Every change to ``RelayState`` goes through a ``Transaction`` method that
records its inverse, so a request refused or crashing part-way is rolled back
to exactly the state it found (spec: Endpoints, "one write transaction").
Undoing costs only what the request changed, never a copy of the store.
``changed`` lists what each change touched, so a driver that keeps the state
elsewhere (the SQLite store of ``simkit serve``) writes just that on commit.
"""

from collections.abc import Callable, MutableMapping
from functools import partial

from simkit.relay.events import Event, Poke


class Transaction:
    """An undo journal plus the events to deliver if the transaction commits.

    ``changed`` holds one ``(container, key)`` pair per change, in order: the
    mapping and key set or deleted, the list and the item appended, or the object
    and the attribute assigned.
    """

    def __init__(self, now: int) -> None:
        self.now = now
        self.changed: list[tuple[object, object]] = []
        self._undo: list[Callable[[], object]] = []
        self._events: list[Event] = []
        self._poked: dict[str, None] = {}

    def set(self, mapping: MutableMapping, key: object, value: object) -> None:
        if key in mapping:
            self._undo.append(partial(mapping.__setitem__, key, mapping[key]))
        else:
            self._undo.append(partial(mapping.pop, key))
        mapping[key] = value
        self.changed.append((mapping, key))

    def delete(self, mapping: MutableMapping, key: object) -> None:
        self._undo.append(partial(mapping.__setitem__, key, mapping.pop(key)))
        self.changed.append((mapping, key))

    def append(self, items: list, item: object) -> None:
        items.append(item)
        self._undo.append(items.pop)
        self.changed.append((items, item))

    def assign(self, obj: object, name: str, value: object) -> None:
        self._undo.append(partial(setattr, obj, name, getattr(obj, name)))
        setattr(obj, name, value)
        self.changed.append((obj, name))

    def emit(self, event: Event) -> None:
        self._events.append(event)

    def poke(self, graph: str) -> None:
        """Queue the content-free poke for a graph this request wrote (once per graph)."""
        self._poked[graph] = None

    def rollback(self) -> None:
        while self._undo:
            self._undo.pop()()
        self.changed.clear()
        self._events.clear()
        self._poked.clear()

    def events(self) -> list[Event]:
        """What to deliver on commit: events in order, then one poke per written graph."""
        return [*self._events, *(Poke(graph) for graph in self._poked)]
