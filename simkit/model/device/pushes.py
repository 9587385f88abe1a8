"""Pushes (client rules 5, 7, 9, Ops on the wire, Checkpoint record): what a device
sends, sealed and signed as the spec says, and what it does with the answer."""

from simkit.model.device import facts
from simkit.model.device.graph import Graph, PushRun, PushSent
from simkit.model.device.wire import at_text, parsed, verifies
from simkit.protocol.derived import checkpoint_record_id

MAX_OPS_PER_PUSH = 200  # client rule 7
MAX_PUSH_BYTES = 8 * 1024 * 1024


class PushRules:
    """What ``DeviceModel`` judges of the device's pushes: each op as sent, the
    checkpoints it publishes, and what it does with the answer.
    A part of ``DeviceModel`` (its state, ``graph`` and ``find`` are the model's)."""

    def _push_sent(self, task: object, sk: str, request) -> None:
        graph = self.graph(sk)
        body = parsed(request.body)
        ops = body.get("ops") if isinstance(body, dict) else None
        if not isinstance(ops, list):
            self.find("client rule 7", f"sent a push to {sk} whose body is not {{ops: [...]}}", sk)
            return
        if len(ops) > MAX_OPS_PER_PUSH or len(request.body) > MAX_PUSH_BYTES:
            self.find(
                "client rule 7",
                f"pushed {len(ops)} ops ({len(request.body)} bytes) in one batch to {sk} "
                "(model: at most 200 ops and 8 MiB)",
                sk,
            )
        current = max(graph.keys, default=0)
        if not graph.keys or graph.relay_epoch > current:
            self.find(
                "client rule 5",
                f"pushed to {sk} holding epoch {current} while an answer showed epoch "
                f"{graph.relay_epoch} (model: a device behind an epoch holds its writes)",
                sk,
                [op.get("recordId") for op in ops if isinstance(op, dict)],
            )
        # batches sealed when the device began pushing may still go out: under the epoch
        # it held then, with the versions queued then (docs/model.md)
        began = self._pushing.get((task, sk)) or PushRun(
            current, dict(graph.queued), graph.pushed[0]
        )
        for op in ops:
            self._check_pushed(graph, op, began, current)
        self._pushes[task] = PushSent(sk, ops, task)
        self._pushing[task, sk] = began

    def _check_pushed(self, graph: Graph, op: object, began: "PushRun", current: int) -> None:
        """One op as the device pushes it: sealed under its current epoch in its slot,
        signed by itself over the storage key, its queued write, and nothing more."""
        sk = graph.sk
        if not isinstance(op, dict) or not facts.safe_id(op.get("recordId")):
            self.find("ops on the wire", f"pushed a malformed op to {sk}: {op!r:.80}", sk)
            return
        rid = op["recordId"]
        epoch = op.get("e", current)
        if not began.epoch <= epoch <= current:
            self.find(
                "client rule 5",
                f"sealed {rid} under epoch {epoch} while holding epoch {current} (model: writes "
                "go out under the current epoch)",
                sk,
                [rid],
            )
        key = graph.keys.get(epoch)
        if key is None:
            return
        envelope, problem = facts.open_op(key, sk, op)
        problem = problem or facts.envelope_problem(envelope, rid)
        if problem is not None:
            self.find(
                ("construction: records and blobs", "construction: AAD", "record envelope"),
                f"pushed {rid} to {sk} sealed wrong: {problem[1]} (model: AES-GCM under the "
                f"epoch key with AAD {sk}/{rid}, a RecordEnvelope of v 1)",
                sk,
                [rid],
            )
            return
        record = envelope["r"]
        signature = envelope.get("s")
        if envelope.get("d") != self.me.device_id:
            self.find(
                "record envelope",
                f"pushed {rid} with d {envelope.get('d')!r} (model: the device ID that signed, "
                f"{self.me.device_id!r})",
                sk,
                [rid],
            )
        elif _sampled(graph, record) and not (
            isinstance(signature, str) and verifies(self.me.sig_jwk, sk, record, signature)
        ):
            self.find(
                "construction: signature",
                f"pushed {rid} whose signature does not verify over skm-record-v1, the storage "
                f"key {sk} and the record (model: ECDSA over the storage key)",
                sk,
                [rid],
            )
        if op.get("rev") != record["at"]:
            self.find(
                "ops on the wire",
                f"pushed {rid} with rev {op.get('rev')} for a record at {record['at']} (model: "
                "rev is the record's at)",
                sk,
                [rid],
            )
        if record["by"] != self.me.member_id:
            self.find("graph record", f"pushed {rid} with by {record['by']!r}", sk, [rid])
        if ("k" in op or "sh" in op) and not self.app.send_metadata:
            self.find(
                "partial sync: opt-in",
                f"sent k/sh on {rid} ({op.get('k')!r}) though the app did not opt in (model: "
                "the default is to send neither)",
                sk,
                [rid],
            )
        elif "k" in op and op["k"] != record["kind"]:
            self.find("ops on the wire", f"pushed {rid} with k {op['k']!r}, not its kind", sk)
        # members this spec does not know (a newer client's) are signed and ignored by
        # every receiver (Versioning rule 3): the queued write is its known members
        record = facts.parsed(record)
        if record == graph.queued.get(rid) and graph.accepted.get(rid) == record["at"]:
            self.find(
                "queued writes",
                f"pushed {rid} (at {record['at']}) to {sk} again after an answer it committed "
                "accepted it (model: a settled write leaves the queue)",
                sk,
                [rid],
            )
        elif record != graph.queued.get(rid) and record != began.queued.get(rid):
            self.find(
                "queued writes",
                f"pushed a version of {rid} (at {record['at']}) that is not its queued write "
                f"(queued: {at_text(graph.queued.get(rid))})",
                sk,
                [rid],
            )
        if record["kind"] == facts.CHECKPOINT_KIND:
            self._check_checkpoint(graph, record)

    def _check_checkpoint(self, graph: Graph, record: dict) -> None:
        """A checkpoint the device publishes: the protocol's schema, its own device, the
        slot derived for it, and the head at that boundary of the log it was served."""
        sk, data = graph.sk, record["data"]
        problem = facts.checkpoint_problem(data)
        if problem is not None:
            self.find("checkpoint record", f"published a checkpoint in {sk}: {problem}", sk)
            return
        if data["d"] != self.me.device_id:
            self.find("checkpoint record", f"published a checkpoint naming {data['d']!r}", sk)
        epoch1 = graph.keys.get(1)
        if epoch1 is not None and record["id"] != checkpoint_record_id(epoch1, data["d"]):
            self.find(
                "derived: checkpoint record ID",
                f"published its checkpoint in slot {record['id']!r}, not the one derived "
                "from its device ID (HMAC under HKDF(epoch-1 key, skm-ckpt-v1))",
                sk,
                [record["id"]],
            )
        view = graph.log_view
        if view is not None and view.anchored is not None:
            self.find("log status: anchored", "anchored mid-log, published a checkpoint", sk)
        head = graph.log.head_at(data["seq"])
        if head is not None and head != data["head"]:
            self.find(
                "log chain",
                f"published head {data['head'][:10]}... at boundary {data['seq']} of {sk}; the "
                f"log it was served gives {head[:10]}...",
                sk,
                [record["id"]],
            )

    def _push_answered(self, sk: str, push: PushSent, answer: dict, clock_ms: int) -> None:
        """A push answer: client rule 9 adopts the relay's now on rev-too-far-ahead."""
        graph = self.graph(sk)
        rejected = {}
        for entry in answer.get("rejected") or []:
            if isinstance(entry, dict) and isinstance(entry.get("recordId"), str):
                rejected[entry["recordId"]] = entry.get("reason")
        for op in push.ops:
            if isinstance(op, dict) and isinstance(op.get("recordId"), str):
                graph.settled[op["recordId"]] = rejected.get(op["recordId"])
                if op["recordId"] not in rejected:
                    graph.accepted[op["recordId"]] = op.get("rev")
        cursor, accepted = answer.get("cursor"), answer.get("accepted")
        if isinstance(cursor, int):
            graph.pushes = [*graph.pushes[-3:], (self.tick, len(push.ops), accepted, answer)]
            self._counter(graph, cursor, "a push answer")
        order = [op.get("recordId") for op in push.ops if isinstance(op, dict)]
        graph.restamps = {
            rid: index
            for index, rid in enumerate(order)
            if rejected.get(rid) == "rev-too-far-ahead"
        }
        now = answer.get("now")
        if graph.restamps and facts.is_number(now):
            self.skew = clock_ms - now
            self.last = min(self.last, clock_ms - self.skew)

    def _dequeued(self, graph: Graph, rid: str, queued: dict, held: dict | None) -> None:
        """A queued write leaves the queue only when the relay settled it (accepted it, it
        lost the rev comparison, or it was refused for good), or a newer relay copy won
        (client rule 3)."""
        superseded = held is not None and held != queued and held.get("at", 0) >= queued["at"]
        settled = rid in graph.settled and graph.settled[rid] != "rev-too-far-ahead"
        if self._importing is not None or superseded or settled:
            return
        if graph.settled.get(rid) == "rev-too-far-ahead":
            self.find(
                "client rule 9",
                f"dropped its write of {rid} in {graph.sk} refused as rev-too-far-ahead (model: "
                "adopt the relay's now, re-stamp it and push it again)",
                graph.sk,
                [rid],
            )
        else:
            self.find(
                "queued writes",
                f"dropped its queued write of {rid} in {graph.sk} (at {queued['at']}) that the "
                "relay never settled (model: writes are held until settled)",
                graph.sk,
                [rid],
            )


SIGNATURE_SAMPLE = 8


def _sampled(graph: Graph, record: dict) -> bool:
    """Whether to verify a pushed op's signature: the first of each kind of write in
    the graph (a create or edit of each kind, a delete), then one in ``SIGNATURE_SAMPLE``.
    Verifying is most of what judging a push costs, and most pushed ops are never pulled
    by anyone; every op another device pulls is verified by its client and judged by its
    model, and a refused honest record breaks ``alarm-soundness`` (docs/model.md)."""
    kind = "delete" if record.get("deleted") else str(record.get("kind"))
    graph.signed[kind] += 1
    return graph.signed[kind] % SIGNATURE_SAMPLE == 1
