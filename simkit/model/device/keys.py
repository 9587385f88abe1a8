"""Keys, wraps and pins (client rules 12-14, Device approval pin): what a device may
post, discard and adopt, and whom it may trust."""

import functools
import json

from simkit.errors import SimkitError
from simkit.model.device.graph import Graph
from simkit.model.device.views import Pin
from simkit.model.device.wire import parsed
from simkit.protocol.keys import (
    device_fingerprint,
    import_public_jwk,
    self_attestation_bytes,
    verify_bytes,
)
from simkit.protocol.wrap import unwrap_graph_key


class KeyRules:
    """What ``DeviceModel`` judges of keys, wraps and pins: what the device may post,
    discard and adopt, and whom it may trust.
    A part of ``DeviceModel`` (its state, ``graph`` and ``find`` are the model's)."""

    def _ran_behind(self, graph_id: str, error: str | None) -> None:
        """Client rule 5: a higher epoch is a signal to fetch keys before the next write. A
        device that began a sync run behind its noted epoch with writes queued, and ended
        it so, must have asked for keys in that run (model: a run that ended without an
        error; asking may still bring no newer key, when the device is not granted it)."""
        sk = self._sk(graph_id)
        graph = self.graphs.get(sk)
        waiting = {
            g.sk for g in self.graphs.values() if g.queued and g.noted_epoch > max(g.keys or [0])
        }
        asked = graph is not None and graph.keys_asked > self._run_began
        if error is None and sk in self._waiting & waiting and not asked:  # behind all along
            self.find(
                "client rule 5",
                f"held its writes to {sk} behind epoch {graph.noted_epoch} through a sync "
                "run without fetching keys (model: fetch keys before the next write)",
                sk,
            )
        self._run_began, self._waiting = self.tick, waiting

    def _keys_posted(self, sk: str, request) -> None:
        """POST keys: client rule 14's gate on every wrap, and for a new epoch a post that
        covers every active device of the roster it read (wrapped or excluded)."""
        graph = self.graph(sk)
        body = parsed(request.body)
        if not isinstance(body, dict):
            return
        wraps = body.get("wraps") if isinstance(body.get("wraps"), list) else []
        targets = [w.get("deviceId") for w in wraps if isinstance(w, dict)]
        excluding = body.get("excluding") if isinstance(body.get("excluding"), list) else []
        epoch = body.get("epoch")
        # a new epoch is one above every epoch an answer showed the device, key gaps
        # included (an epoch only key gaps showed it is granted, not minted)
        mint = isinstance(epoch, int) and epoch > graph.shown_epoch
        roster = (graph.rosters[-1][2] if graph.rosters else {}) if mint else graph.keygaps
        for target in targets:
            if target == self.me.device_id or not isinstance(target, str):
                continue
            handed = self._handed(roster, target)
            pin = self.pins.get(target)
            if self.app.approval_mode == "approve" and (pin is None or pin.state != "approved"):
                self.find(
                    "client rule 14",
                    f"wrapped epoch {epoch} of {sk} to {target}, which it has not approved "
                    "(model: in approve mode only approved devices are wrapped to)",
                    sk,
                )
            elif (
                pin is not None
                and pin.state == "approved"
                and handed not in (None, pin.fingerprint)
            ):
                self.find(
                    "client rule 14",
                    f"wrapped epoch {epoch} of {sk} to {target}, whose published keys changed "
                    "since it was approved (model: the pin becomes conflicted)",
                    sk,
                )
        if self.app.approval_mode == "observe":
            for target in excluding:
                if isinstance(target, str) and self._handed(roster, target) is not None:
                    self.find(
                        "client rule 14",
                        f"excluded {target} from epoch {epoch} of {sk} in observe mode (model: "
                        "in mode observe the key is wrapped anyway)",
                        sk,
                    )
        if mint and epoch not in graph.minted:
            graph.minted.add(epoch)
            active = {
                d for d, e in roster.items() if isinstance(e, dict) and e.get("revokedAt") is None
            }
            missing = sorted(active - set(targets) - set(excluding))
            if missing:
                self.find(
                    "client rule 14",
                    f"posted epoch {epoch} of {sk} neither wrapped to nor excluding {missing} "
                    "of the roster it read (model: blocked devices are named in excluding)",
                    sk,
                )

    def _handed(self, roster: dict, device_id: str) -> str | None:
        """The fingerprint of the key triple the device was handed for ``device_id``."""
        entry = roster.get(device_id)
        if not isinstance(entry, dict):
            return None
        return fingerprint(entry)

    def _discarded(self, sk: str, epoch_text: str) -> None:
        """Client rule 12: DELETE keys/:epoch only for a wrap that did not open."""
        graph = self.graph(sk)
        epoch = int(epoch_text) if epoch_text.isdecimal() else None
        if epoch not in graph.unopenable or graph.unopenable[epoch][1]:
            self.find(
                "client rule 12",
                f"discarded its wrap of epoch {epoch_text} of {sk}, which opened or was not "
                f"served (model: discard only a wrap that fails to unwrap)",
                sk,
            )
            return
        graph.unopenable[epoch][1] = True

    def _keys_answered(self, graph: Graph, answer: dict) -> None:
        """GET keys: open each wrap with the device's own key; client rule 12 says a
        wrap that does not open is discarded before the keys are read again."""
        wraps = answer.get("wraps") if isinstance(answer.get("wraps"), list) else []
        now_unopenable = {}
        for wrap in wraps:
            if not isinstance(wrap, dict) or not isinstance(wrap.get("epoch"), int):
                continue
            epoch, wrapped = wrap["epoch"], wrap.get("wrapped")
            key = self._open(wrapped)
            if key is not None:
                graph.opened[epoch].add(key)
            elif epoch not in graph.keys:
                now_unopenable[epoch] = wrapped
        for epoch, wrapped in now_unopenable.items():
            if graph.unopenable.get(epoch) == [wrapped, False] and not graph.discards_cut:
                self.find(
                    "client rule 12",
                    f"was served the same unopenable wrap of epoch {epoch} of {graph.sk} again "
                    "without discarding it (model: DELETE keys/:epoch, then it is re-granted)",
                    graph.sk,
                )
        graph.unopenable = {epoch: [wrapped, False] for epoch, wrapped in now_unopenable.items()}
        graph.served_unopenable.update(now_unopenable)
        graph.discards_cut = False

    def _open(self, wrapped: object) -> bytes | None:
        """The key a wrap holds for this device, None when it does not open. A wrap the
        relay serves again (every keys read serves them all) is opened once."""
        if not isinstance(wrapped, str):
            return None
        if wrapped not in self._opened:
            try:
                self._opened[wrapped] = unwrap_graph_key(wrapped, self.me.wrap_key)
            except (SimkitError, ValueError, TypeError):
                self._opened[wrapped] = None
        return self._opened[wrapped]

    def _keys_adopted(self, graph: Graph, keys: dict[int, bytes]) -> None:
        """Keys are adopted from a wrap the relay served the device (client rule 13:
        after minting, what the relay holds), or from an imported bundle or invite; old
        epochs are kept."""
        imported = (self._importing or {}).get(graph.sk, {})
        for epoch in sorted(set(graph.keys) - set(keys)):
            if self._importing is None:
                self.find("keyring", f"dropped its key of epoch {epoch} of {graph.sk} (model: "
                          "old epochs are kept)", graph.sk)  # fmt: skip
        for epoch, key in sorted(keys.items()):
            if (
                graph.keys.get(epoch) == key
                or key in graph.opened.get(epoch, ())
                or (imported.get(epoch) == key)
            ):
                continue
            rule = "client rule 13" if epoch in graph.minted else "keyring"
            self.find(
                rule,
                f"adopted a key for epoch {epoch} of {graph.sk} that no keys answer wrapped to "
                "it (model: read keys back and adopt what the relay holds)",
                graph.sk,
            )
        graph.keys = dict(keys)

    def _pinned(self, device_id: str, pin: Pin | None) -> None:
        """Device approval pin: approved by possession only from unknown (no pin), and only
        with a verified record of that device and its valid selfSig; conflicted only from
        approved, when its published keys changed."""
        before = self.pins.get(device_id)
        if pin is None:
            self.pins.pop(device_id, None)
            return
        self.pins[device_id] = pin
        if pin.state not in PIN_STATES:
            self.find(
                "pin states",
                f"pinned {device_id} in state {pin.state!r} (model: a pin is one of "
                f"{', '.join(PIN_STATES)}; no pin is unknown)",
            )
        by_possession = pin.state == "approved" and pin.via == "possession" and before is None
        possession = pin.state == "approved" and pin.via == "possession"
        if possession and before is not None and before.state != "approved":
            self.find(  # rejected or conflicted: a human's decision, or a changed key
                "pin states",
                f"approved {device_id}, pinned {before.state}, by possession (model: only "
                "an unknown device is approved by proof of possession)",
            )
        if by_possession and not self._possession_proved(device_id, pin):
            self.find(
                "pin states",
                f"approved {device_id} by possession without a valid selfSig over the key "
                "triple it pinned (model: such a device is never auto-approved)",
            )
        if pin.state == "conflicted" and (before is None or before.state != "conflicted"):
            changed = (
                before is not None
                and before.state == "approved"
                and any(fp != before.fingerprint for fp in self.triples.get(device_id, ()))
            )
            if not changed:
                self.find(
                    "pin states",
                    f"marked {device_id} conflicted without having been handed keys other than "
                    "the ones it approved",
                )

    def _possession_proved(self, device_id: str, pin: Pin) -> bool:
        """A roster listed the device with the pinned key triple and a selfSig over it."""
        entries = (r.get(device_id) for g in self.graphs.values() for _, _, r in g.rosters)
        return any(
            isinstance(entry, dict)
            and fingerprint(entry) == pin.fingerprint
            and _self_sig_valid(entry, pin.fingerprint)
            for entry in entries
        )


PIN_STATES = ("approved", "rejected", "conflicted")  # the spec's table, but unknown (no pin)


def fingerprint(entry: dict) -> str | None:
    """The fingerprint of a roster or key gap entry's triple; None when it has none."""
    try:
        triple = json.dumps([entry["memberId"], entry["pubJwk"], entry["sigJwk"]], sort_keys=True)
    except (KeyError, TypeError, ValueError):
        return None
    return _fingerprint(triple)


@functools.lru_cache(maxsize=4096)
def _fingerprint(triple: str) -> str | None:
    """A pure function of the triple, computed once: every roster read lists them all.
    None when either key is no point of P-256: nobody can wrap to it (the Device
    table: both keys are P-256 keys), so excluding it is no choice of the device's."""
    try:
        member, pub, sig = json.loads(triple)
        import_public_jwk(pub)
        import_public_jwk(sig)
        return device_fingerprint(member, pub, sig)
    except (SimkitError, KeyError, TypeError, ValueError):
        return None


def _self_sig_valid(entry: dict, fingerprint: str | None) -> bool:
    signature = entry.get("selfSig")
    if fingerprint is None or not isinstance(signature, str):
        return False
    try:
        return verify_bytes(entry["sigJwk"], self_attestation_bytes(fingerprint), signature)
    except (SimkitError, ValueError, TypeError):
        return False
