"""A device: one machine's keys, member, plaintext store, keyrings, cursors, pins,
queue of pending writes, status and events.

It reaches the relay only through an injected transport, reads time only from
its own clock and randomness only from its entropy source. Everything a real
device would persist lives in its ``LocalStore``, committed after each queued
write and each applied batch, so a crash at any await point loses nothing the
application was told was written.

Tables of the store (docs/client.md): ``meta`` (identity, keys, last stamp,
skew), ``graphs`` (graph ID -> storage key, epochs), ``subs`` (subscriptions),
``cursor``, ``keyring``, ``pin`` (``pin:<deviceId>``), ``log`` (log verification),
``records:<sk>``, ``queue:<sk>``, ``refused:<sk>``.
"""

import functools

import attrs
import trio

from simkit.client import answers, sync
from simkit.client.approval import OBSERVE
from simkit.client.ceremonies import Ceremonies
from simkit.client.clock import Clock
from simkit.client.config import AppConfig
from simkit.client.events import ClientEvent, DeviceError
from simkit.client.logverify import OK, LogState, unverified
from simkit.client.paging import PagingStalled
from simkit.client.pins import Pins
from simkit.client.receive import check_op
from simkit.client.status import Status
from simkit.client.store import LocalStore
from simkit.client.transport import RelayUnavailable, Transport, send_with_retries
from simkit.errors import ProtocolError
from simkit.protocol.canonical import compact_json
from simkit.protocol.entropy import Entropy
from simkit.protocol.http import Request, Response
from simkit.protocol.ids import require_safe_id, storage_key
from simkit.protocol.keyring import (
    Keyring,
)
from simkit.protocol.keys import DeviceKeys


def subscription_key(graph_id: str, kinds: tuple[str, ...], shards: tuple[str, ...]) -> str:
    if not kinds and not shards:
        return graph_id
    return f"{graph_id}|k={','.join(kinds)}|s={','.join(shards)}"


@attrs.frozen
class CachedRoster:
    """A graph's roster as fetched (GET devices): its entries by device ID, when it was
    fetched on this device's clock and on the relay's (as the last push answer's ``now``
    tells it), the relay's epoch then, and how many of its devices were unrevoked."""

    entries: dict[str, dict]
    fetched_at: int
    fetched_relay_ms: int | None  # None: this device does not know the relay's clock yet
    epoch: int
    active: int


class Device(Pins, Status, Ceremonies):
    def __init__(
        self,
        store: LocalStore,
        transport: Transport,
        clock: Clock,
        entropy: Entropy,
        config: AppConfig | None = None,
        on_event=None,
    ) -> None:
        """Boot a device from its store. ``entropy`` must be fresh for this boot:
        replaying a stream after a restart would reuse AES-GCM nonces."""
        meta = store.get("meta", "device")
        if meta is None:
            raise DeviceError("the store holds no device identity: use Device.create")
        self.store = store
        self.transport = transport
        self.clock = clock
        self.entropy = entropy
        self.config = config or AppConfig()
        self.on_event = on_event
        self.member_id: str = meta["memberId"]
        self.device_id: str = meta["deviceId"]
        self.keys = DeviceKeys.from_json(meta["keys"])
        self.events: list[ClientEvent] = []
        self.last_error: str | None = None
        self.readonly: set[str] = set()
        # own clock minus the relay's, from the last push answer's ``now`` (None: no
        # push answered since boot): when a roster was fetched on the relay's clock (F21)
        self.relay_offset: int | None = None
        self._booted = False
        self._rosters: dict[str, CachedRoster] = {}  # graph -> the roster fetched last
        self._rings: dict[str, tuple[dict, Keyring]] = {}  # graph -> (stored wire, parsed)
        self._storage_keys: dict[str, str] = {}
        self.selfsig_checked: set[str] = set()
        self._wake = trio.Event()
        self._written = False
        self._runs = 0  # sync runs started by ``run``: the poll timer skips a busy interval
        self._checked: dict[tuple[str, str], int] = {}
        # graph -> the highest seq of an op a pull served since boot: every op served is
        # a write the relay logged, so the log's ``head`` is never below it (F41)
        self.served_top: dict[str, int] = {}
        self.share: tuple[int, float] | None = None  # (start, ms): a graph's part of a run
        # (storage key, record) -> (queued record, epoch, op): a queued write is sealed
        # and signed once, not again on every push attempt (memory only: a restart
        # seals afresh)
        self.sealed: dict[tuple[str, str], tuple[dict, int, dict]] = {}
        self._syncing = trio.Lock()  # one sync run at a time, whoever asks ("sync now", a poke)

    # -- construction -----------------------------------------------------------------

    @classmethod
    def create(
        cls,
        member_id: str,
        device_id: str,
        transport: Transport,
        clock: Clock,
        entropy: Entropy,
        config: AppConfig | None = None,
        on_event=None,
    ) -> "Device":
        """A new device with fresh keypairs (nothing is sent until ``register``)."""
        require_safe_id(member_id, "member ID")
        require_safe_id(device_id, "device ID")
        store = LocalStore()
        keys = DeviceKeys.generate(entropy)
        store.put(
            "meta",
            "device",
            {"memberId": member_id, "deviceId": device_id, "keys": keys.to_json()},
        )
        store.commit()
        return cls(store, transport, clock, entropy, config, on_event)

    @classmethod
    def restore(cls, snapshot: dict, transport, clock, entropy, config=None, on_event=None):
        """Restart from a durable snapshot (what survived a crash)."""
        durable = {table: dict(rows) for table, rows in snapshot.items()}
        return cls(LocalStore(durable), transport, clock, entropy, config, on_event)

    def snapshot(self) -> dict:
        """The durable state: everything a real device keeps across a crash."""
        return self.store.durable()

    # -- identity ---------------------------------------------------------------------

    @functools.cached_property
    def fingerprint(self) -> str:
        return self.keys.fingerprint(self.member_id)

    def registration(self, label: str | None = None, self_sig: bool = True) -> dict:
        """The PUT /devices body; an older client registers without ``selfSig`` (it is
        optional, Versioning rule 3), and holders then cannot approve it by possession."""
        body = {"pubJwk": self.keys.pub_jwk, "sigJwk": self.keys.sig_jwk}
        if self_sig:
            body["selfSig"] = self.keys.self_sig(self.member_id)
        if label is not None:
            body["label"] = label
        return body

    async def register(self, label: str | None = None, self_sig: bool = True) -> bool:
        """PUT /devices/:id with both keys and (unless an older client) selfSig.
        Returns ``fresh``."""
        body = self.registration(label, self_sig)
        response = await self.request("PUT", f"/devices/{self.device_id}", body)
        if response.status != 200:
            raise DeviceError(f"registration refused: {response.status} {response.body!r}")
        return bool(response.json()["fresh"])

    # -- graphs, subscriptions, keyrings --------------------------------------------

    def storage_key(self, graph_id: str) -> str:
        """The graph's storage key, resolved once per graph (asked for on every op)."""
        sk = self._storage_keys.get(graph_id)
        if sk is None:
            sk = self._storage_keys[graph_id] = storage_key(graph_id, self.member_id)
        return sk

    def subscribe(self, graph_id: str, kinds=(), shards=()) -> str:
        """Follow a graph, unfiltered or filtered by kinds and shards (own cursor each)."""
        sk = self.storage_key(graph_id)
        kinds, shards = tuple(sorted(kinds)), tuple(sorted(shards))
        key = subscription_key(graph_id, kinds, shards)
        if self.store.get("subs", key) is None:
            self.store.put(
                "subs", key, {"graph": graph_id, "kinds": list(kinds), "shards": list(shards)}
            )
            self.store.put("graphs", graph_id, self.store.get("graphs", graph_id) or {"sk": sk})
            if (
                key == graph_id
                and self.config.log_verification
                and self.log_state(graph_id) is None
            ):
                self.store.put("log", sk, LogState.start(sk, 0))  # anchored at genesis
            self.store.commit()
        return key

    def graphs(self) -> list[str]:
        return sorted(self.store.rows("graphs"))

    def subscriptions(self, graph_id: str) -> list[tuple[str, dict]]:
        return [
            (k, s) for k, s in sorted(self.store.rows("subs").items()) if s["graph"] == graph_id
        ]

    def unfiltered(self, graph_id: str) -> bool:
        return self.store.get("subs", graph_id) is not None

    def keyring(self, graph_id: str) -> Keyring:
        """The graph's keys, parsed once per stored version (asked for on every op)."""
        wire = self.store.get("keyring", self.storage_key(graph_id))
        if not wire:
            return Keyring()
        parsed = self._rings.get(graph_id)
        if parsed is None or parsed[0] is not wire:
            parsed = self._rings[graph_id] = (wire, Keyring.from_wire(wire))
        return parsed[1]

    def adopt_key(self, graph_id: str, epoch: int, key: bytes) -> None:
        """Keep a graph key; durable at once, so a crash never moves the epoch back."""
        ring = self.keyring(graph_id).with_key(epoch, key)
        self.store.put("keyring", self.storage_key(graph_id), ring.to_wire())
        self.store.commit()

    def relay_epoch(self, graph_id: str) -> int:
        return (self.store.get("graphs", graph_id) or {}).get("latest", 0)

    def note_epoch(self, graph_id: str, epoch: int | None) -> None:
        """Remember the relay's epoch from an answer; it only ever moves up (client rule 5)."""
        meta = self.store.get("graphs", graph_id) or {"sk": self.storage_key(graph_id)}
        if epoch is not None and epoch > meta.get("latest", 0):
            self.store.put("graphs", graph_id, {**meta, "latest": epoch})
            self.store.commit()  # durable at once: the epoch never moves back after a crash

    def due(self, graph_id: str, what: str) -> bool:
        """Whether to ask the relay for ``keys`` or ``grants`` (key gaps) this run.

        Keys: when the device holds none, is behind, owes a rotation, or has not asked
        for ``recheck_s``. Grants: every ``recheck_s``. Both on the first run of a boot.
        """
        now = self.clock.now_ms()
        last = self._checked.get((graph_id, what))
        urgent = what == "keys" and (
            not self.keyring(graph_id).keys
            or self.behind(graph_id)
            or (
                (self.store.get("graphs", graph_id) or {}).get("rotate")
                and not self.rotation_refused(graph_id)
            )
        )
        if urgent or last is None or now - last >= self.config.recheck_s * 1000 or now < last:
            self._checked[graph_id, what] = now
            return True
        return False

    def rotation_refused(self, graph_id: str) -> bool:
        """The relay refused this graph's last rotation although ``excluding`` named
        every device it missed (it drops ``excluding``: an older relay, Versioning rule
        3), less than ``recheck_s`` ago: the rotation is tried again after that, not at
        every run (each try is a roster read and a key post)."""
        refused = (self.store.get("graphs", graph_id) or {}).get("refused")
        if refused is None:
            return False
        return 0 <= self.clock.now_ms() - refused < self.config.recheck_s * 1000

    def not_checked(self, graph_id: str, what: str) -> None:
        """A check the relay refused (403 while the member was out of the group, say)
        did not happen: it is due again next run, before any push (F18)."""
        self._checked.pop((graph_id, what), None)

    def cache_roster(self, graph_id: str, entries: dict[str, dict]) -> None:
        active = sum(1 for entry in entries.values() if entry.get("revokedAt") is None)
        now = self.clock.now_ms()
        on_relay = None if self.relay_offset is None else now - self.relay_offset
        self._rosters[graph_id] = CachedRoster(
            entries, now, on_relay, self.relay_epoch(graph_id), active
        )

    def active_devices(self, graph_id: str) -> int:
        """How many unrevoked devices the last roster fetched lists (0 before any)."""
        cached = self._rosters.get(graph_id)
        return 0 if cached is None else cached.active

    def roster(self, graph_id: str, newest_rev: int = 0) -> dict[str, dict] | None:
        """The cached roster while it is fresh: fetched less than ``recheck_s`` ago,
        before no epoch change, and after ``newest_rev``, the newest record it is to
        vouch for. Client rule 2 refuses a record whose device was revoked when ``r.at`` says
        it was written; a roster fetched before that moment cannot know, and the
        rotation that follows a revocation may come minutes later (F12). An op signed
        by a device missing from it makes the client fetch it again."""
        cached = self._rosters.get(graph_id)
        if cached is None:
            return None
        age = self.clock.now_ms() - cached.fetched_at
        if (
            cached.epoch != self.relay_epoch(graph_id)
            or not 0 <= age < self.config.recheck_s * 1000
        ):
            return None
        fetched = cached.fetched_relay_ms
        vouches = not newest_rev or (fetched is not None and newest_rev <= fetched)
        return cached.entries if vouches else None

    def behind(self, graph_id: str) -> bool:
        """Behind an epoch: the relay has a newer key than this device holds (client rule 5)."""
        return self.relay_epoch(graph_id) > self.keyring(graph_id).current

    # -- local records and the write path -------------------------------------------

    def get(self, graph_id: str, record_id: str) -> dict | None:
        """The record as held (tombstones included), or None."""
        return self.store.get(f"records:{self.storage_key(graph_id)}", record_id)

    def records(self, graph_id: str) -> dict[str, dict]:
        """Every record held in a graph, tombstones included."""
        return dict(self.store.rows(f"records:{self.storage_key(graph_id)}"))

    def pending(self, graph_id: str | None = None) -> int:
        """How many writes wait in the queue (one graph, or all)."""
        names = [graph_id] if graph_id else self.graphs()
        return sum(len(self.store.rows(f"queue:{self.storage_key(g)}")) for g in names)

    def queued(self, graph_id: str) -> list[str]:
        """The records whose writes wait in a graph's queue."""
        return sorted(self.store.rows(f"queue:{self.storage_key(graph_id)}"))

    def stamp(self, prior_rev: float) -> int:
        """Client rule 1: at = max(now, last + 1, priorRev + 1), now corrected by the
        adopted skew."""
        now = self.clock.now_ms() - self.store.get("meta", "skew", 0)
        at = max(now, self.store.get("meta", "last", 0) + 1, int(prior_rev) + 1)
        self.store.put("meta", "last", at)
        return at

    def put(self, graph_id: str, record_id: str, kind: str, data: dict) -> dict:
        """Write a record locally and queue it; durable when this returns."""
        if not self.config.registry.accepts(kind, data):
            raise DeviceError(f"kind {kind!r} refuses this data (application schema)")
        return self.write_record(graph_id, record_id, {"kind": kind, "data": data})

    def delete(self, graph_id: str, record_id: str) -> dict:
        """Write a tombstone: an empty husk that keeps syncing."""
        held = self.get(graph_id, record_id)
        kind = held["kind"] if held else "deleted"
        return self.write_record(graph_id, record_id, {"kind": kind, "deleted": True, "data": {}})

    def write_record(self, graph_id: str, record_id: str, body: dict) -> dict:
        require_safe_id(record_id, "record ID")
        sk = self.storage_key(graph_id)
        if self.store.get("graphs", graph_id) is None:
            self.subscribe(graph_id)
        held = self.get(graph_id, record_id)  # read the record being overwritten first
        record = {
            "id": record_id,
            **body,
            "at": self.stamp(sync.prior_rev(held)),
            "by": self.member_id,
        }
        queued = self.store.get(f"queue:{sk}", record_id)
        self.store.put(f"records:{sk}", record_id, record)
        # ``before``: what this device held before its queued writes (restored if refused)
        before = queued["before"] if queued else held
        self.store.put(f"queue:{sk}", record_id, {"r": record, "before": before})
        self.store.commit()
        self._written = True
        self._wake.set()
        return record

    # -- protocol rules a variant may change (docs/variants.md) -------------------------

    def check(self, op: dict, storage_key_: str, key: bytes, roster: dict[str, dict]):
        """Client rule 2: may this op be applied? Returns ``Opened`` or ``Refusal``."""
        return check_op(
            op,
            storage_key=storage_key_,
            graph_key=key,
            roster=roster,
            registry=self.config.registry,
            verify_signatures=self.config.verify_signatures,
        )

    def as_sealed(self, record: dict) -> dict:
        """The record as this version signs and seals it: as written (a newer client
        adds members an older one does not know, Versioning rule 3)."""
        return record

    def skip_missing_epoch(self) -> bool:
        """Client rule 4: an op under an epoch this device lacks stops the pull (never skipped)."""
        return False

    # -- approval pins ----------------------------------------------------------------

    # -- events, status ---------------------------------------------------------------

    def emit(self, kind: str, graph_id: str | None, **fields) -> None:
        """Hand an event to ``on_event``; without a handler it is kept in ``events``
        (a handler owns what to keep: a long-running device must not grow for ever)."""
        event = ClientEvent(kind, graph_id, fields)
        if self.on_event is not None:
            self.on_event(self, event)
        else:
            self.events.append(event)

    # -- talking to the relay ---------------------------------------------------------

    def headers(self) -> dict[str, str]:
        """The credential: simkit's hosts read ``x-member``/``x-device`` (docs/client.md)."""
        return {"x-member": self.member_id, "x-device": self.device_id}

    async def request(
        self, method: str, path: str, body=None, query=None, raw: bytes | None = None, headers=None
    ) -> Response:
        """Send JSON ``body`` (or ``raw`` bytes) with the retry rule; raises
        RelayUnavailable when out of attempts."""
        payload = raw if raw is not None else b""
        if body is not None:
            payload = compact_json(body).encode()
        request = Request(
            method, path, query=query, headers={**self.headers(), **(headers or {})}, body=payload
        )
        return await send_with_retries(
            self.transport, request, self.clock, self.entropy.random, self.config.backoff,
            lambda why: self.emit("retry", None, why="503" if why.startswith("5") else why),
            answers.problem,
        )  # fmt: skip

    def refusal(self, response: Response) -> dict:
        """The error body of a refused request (empty when it is not JSON)."""
        try:
            body = response.json()
        except ProtocolError:
            return {}
        return body if isinstance(body, dict) else {}

    # -- sync -------------------------------------------------------------------------

    async def sync(self, graph_id: str | None = None, *, full: bool = False) -> None:
        """One sync run over one graph or every followed graph; ``sync.done`` after each.

        ``full`` (a user's "sync now") also re-reads keys and key gaps at once.
        """
        async with self._syncing:
            await self._sync(graph_id, full)

    async def _sync(self, graph_id: str | None, full: bool) -> None:
        if full:
            self._checked.clear()
        if not self._booted:
            self._booted = True
            if self.config.approval_mode == OBSERVE:
                self.emit("linking.unenforced", None)
        gids = [graph_id] if graph_id else self.graphs()
        for gid in gids:
            try:
                stats = await sync.sync_graph(self, gid, of=len(gids))
            except RelayUnavailable as exc:
                self.last_error = str(exc)
                self._relay_unreachable(gid)
                stats = {"error": "unreachable"}
            except PagingStalled as exc:  # docs/client.md, "Paging": the run for gid ends
                self.last_error = str(exc)
                self.emit("sync.stopped", gid, route=exc.route, reason="no-progress",
                          after=exc.after, cursor=exc.cursor)  # fmt: skip
                stats = {"error": "stalled"}
            self.store.commit()
            self.emit("sync.done", gid, **stats)

    def _relay_unreachable(self, graph_id: str) -> None:
        """ok -> unverified when the relay cannot be reached (alarm stays latched)."""
        log = self.log_state(graph_id)
        if log is not None and log.state == OK:
            self.store.put("log", self.storage_key(graph_id), unverified(log))

    def wake(self) -> None:
        """A realtime poke (or the poll timer): sync soon."""
        self._wake.set()

    async def run(self) -> None:
        """Sync until cancelled: after a local write once the push debounce has passed,
        after a poke once the poke debounce has, and after a poll interval without a
        sync run. Whatever arrives during a debounce joins that run, so a busy group
        syncs in batches, not once per write. All waiting is on the device's own clock."""
        async with trio.open_nursery() as nursery:
            nursery.start_soon(self._poll_timer)
            while True:
                await self._wake.wait()
                config = self.config
                await self.clock.sleep(
                    config.push_debounce_s if self._written else config.poke_debounce_s
                )
                self._wake = trio.Event()
                self._written = False
                self._runs += 1
                await self.sync()

    async def _poll_timer(self) -> None:
        """Poll when idle: a device that pokes and writes keep busy never polls, so a
        quiet group costs one run per device per interval, and a busy one nothing more."""
        runs = self._runs
        while True:
            await self.clock.sleep(self.config.poll_interval_s)
            if self._runs == runs:
                self.wake()
                runs += 1  # the run this poll asks for is not activity
            else:
                runs = self._runs

    # -- ceremonies -------------------------------------------------------------------
