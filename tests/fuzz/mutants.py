"""Source mutants: realistic one- or two-line slips, each breaking one rule of the spec.

Each is the kind of change a protocol edit introduces (an off-by-one, ``>`` for
``>=``, a forgotten check, the wrong field, a unit read wrongly, a missed durable
commit), applied to a copy of ``simkit`` by ``simkit.fuzz.mutants``. ``rule`` quotes
the spec (relay-spec.md) or, where the spec leaves the decision open, docs/.
``simkit fuzz`` alone must catch each one: ``simkit campaign --mutants
tests.fuzz.mutants:ALL --time 60`` measures whether and how fast it does
(docs/fuzzing.md, "Mutants"), and ``tests/fuzz/test_mutants_caught.py`` keeps a
seeded check of those it catches.

The variants in ``tests/fuzz/variants.py`` cover six more rules through override
points; these reach the lines no override point isolates.
"""

import subprocess
from pathlib import Path

from simkit.fuzz.mutants import Mutant, run_mutated


def fuzz_mutant(
    mutant: Mutant, into: Path, *, seed: int, seconds: float, timeout: float, workers: int = 1
) -> subprocess.CompletedProcess:
    """``simkit fuzz --time SECONDS --seed SEED --shrink-time 0 --workers N`` on a copy of
    simkit with ``mutant`` applied (reproducer in ``into/repro.json``): the search alone."""
    args = ["fuzz", "--time", str(seconds), "--seed", str(seed), "--shrink-time", "0"]
    args += ["--workers", str(workers)]
    return run_mutated(mutant, into, [*args, "--out", str(into / "repro.json")], timeout)


# -- the relay: every route, the request pipeline and the request schemas ------------------

RELAY = (
    Mutant(
        "push-first-seq-reuses-counter",
        "relay/records.py",
        "first = graph.seq + 1",
        "first = graph.seq",
        "Records, push rule 4: 'upsert the record and assign the next `seq` from a "
        "per-graph counter'; 'The seq comes from a counter, never from MAX(seq)+1.'",
    ),
    Mutant(
        "push-ops-share-range-end",
        "relay/records.py",
        "self._write(call, graph, stored, op, self._next_seq(graph, reserved))",
        "self._write(call, graph, stored, op, self._next_seq(graph, graph.seq))",
        "Records: 'A push allocates its whole seq range up front'; LogEntry: 'One entry "
        "per accepted write, in the order the relay assigned.'",
    ),
    Mutant(
        "push-quota-off-by-one",
        "relay/records.py",
        "len(graph.records) + 1 > self.settings.quota_records",
        "len(graph.records) > self.settings.quota_records",
        "Records, push rule 3: 'If a quota would be exceeded, reject that op with a "
        "reason and continue.'",
    ),
    Mutant(
        "push-rev-skew-read-as-seconds",
        "relay/records.py",
        "return rev > now + self.settings.max_rev_skew_ms",
        "return rev > now + self.settings.max_rev_skew_ms * 1000",
        "Records, push rule 1: 'If `rev` is more than 5 minutes ahead of the relay's "
        "clock, reject the op with reason `rev-too-far-ahead` and continue.'",
    ),
    Mutant(
        "pull-serves-superseded-rows",
        "relay/records.py",
        "if row is not None and row.seq == entry.seq:",
        "if row is not None:",
        "Pull rules: 'Returns ops with `seq > after`, ascending, at most `limit` (max "
        "500). `more` is true when another page waits.'",
    ),
    Mutant(
        "pull-limit-not-capped",
        "relay/records.py",
        'return after, min(query_int(query, "limit", ceiling, 1, MAX_SAFE_INTEGER), ceiling)',
        'return after, query_int(query, "limit", ceiling, 1, MAX_SAFE_INTEGER)',
        "Pull rules: 'at most `limit` (max 500)'; Limits: 'A relay may enforce stricter "
        "limits, never looser ones.'",
    ),
    Mutant(
        "log-after-inclusive",
        "relay/records.py",
        "start = bisect_right(log, after, key=_SEQ)",
        "start = bisect_right(log, after - 1, key=_SEQ)",
        "GET /graphs/:gid/log?after=&limit=: entries after the cursor, in seq order "
        "(Log chain: 'computed by clients, over entries in seq order').",
    ),
    Mutant(
        "keys-serve-latest-wrap-only",
        "relay/keys.py",
        "for epoch, holders in sorted(graph.wraps.items())",
        "for epoch, holders in sorted(graph.wraps.items())[-1:]",
        "GET /graphs/:gid/keys answers `{latestEpoch, rotationRequired, wraps: [{epoch, "
        "wrapped}]}` (wraps for the calling device only); Keyring: 'old epochs are kept'.",
    ),
    Mutant(
        "roster-forgets-departed-pushers",
        "relay/keys.py",
        "members = sorted({*self._current_members(call.graph.key), *call.graph.pushers})",
        "members = sorted(self._current_members(call.graph.key))",
        "Key rules: 'The roster (GET devices) serves the devices of every member who has "
        "pushed to the graph, including revoked devices and departed members.'",
    ),
    Mutant(
        "keygaps-miss-latest-epoch",
        "relay/keys.py",
        "for epoch in range(1, graph.latest_epoch + 1)",
        "for epoch in range(1, graph.latest_epoch)",
        "Key rules: 'keygaps lists devices holding no wrap for some epoch'.",
    ),
    Mutant(
        "eligible-includes-revoked",
        "relay/core.py",
        "            if device.revoked_at is None\n        ]",
        "        ]",
        "Keys, rotation rule 3: 'Wraps plus `excluding` must cover every eligible device "
        "(active devices of current members)'; rotation rule 6: 'Every wrap must address an active "
        "device of a current member, else `400 not-a-member-device`.'",
    ),
    Mutant(
        "rotate-checks-write-not-rotate",
        "relay/keys.py",
        'self._require_capability(call, "rotate")',
        'self._require_capability(call, "write")',
        "Keys, rotation rule 2: 'The caller must hold the `rotate` capability, else `403 "
        "not-permitted` with `need: rotate`.'",
    ),
    Mutant(
        "revoke-drops-callers-wraps",
        "relay/devices.py",
        "owed = sorted(self._owe_rotation(call.tx, target_id))",
        "owed = sorted(self._owe_rotation(call.tx, call.device))",
        "Devices: 'Revoke drops the device's wraps, marks it revoked and sets "
        "rotationRequired on every graph it held keys for.'",
    ),
    Mutant(
        "discard-drops-latest-epoch-wrap",
        "relay/keys.py",
        "holders = call.graph.wraps.get(epoch, {})",
        "holders = call.graph.wraps.get(call.graph.latest_epoch, {})",
        "Graph key epoch: 'DELETE keys/:epoch | by the holder of that wrap | same epoch, "
        "caller's wrap removed | the device reappears in keygaps'.",
    ),
    Mutant(
        "transport-forgotten-at-first-receipt",
        "relay/blobs.py",
        "return set(self._current_members(key)) <= set(blob.receipts)",
        "return set(self._current_members(key)) >= set(blob.receipts)",
        "Blob: 'transport | ack | every current member has acked (sweeper re-checks "
        "against the current member set) | forgotten (deleted)'.",
    ),
    Mutant(
        "ephemeral-ttl-read-as-seconds",
        "relay/blobs.py",
        'expires_at = call.now + query_int(query, "ttl", 0, 1, self.settings.max_blob_ttl_ms)',
        "expires_at = call.now + 1000 * query_int(\n"
        '                query, "ttl", 0, 1, self.settings.max_blob_ttl_ms)',
        "Blobs: '`ttl` is in milliseconds and applies to `ephemeral`, maximum 30 days'; "
        "Blob: 'ephemeral | time | ttl has passed | forgotten (deleted)'.",
    ),
    Mutant(
        "expired-blob-still-served",
        "relay/blobs.py",
        "if blob is None or blob.expired(call.now):",
        "if blob is None:",
        "Blob: 'ephemeral | time | ttl has passed | forgotten (deleted)' (GET, ack and "
        "DELETE of an expired blob find nothing, swept or not).",
    ),
    Mutant(
        "blob-delete-skips-lookup",
        "relay/blobs.py",
        "blob_id, _ = self._find_blob(call)",
        'blob_id = call.params["blobId"]',
        "Blob: 'retain | DELETE | caller holds `write` | deleted'; Errors: a blob the "
        "graph does not hold (or an expired one) is 404 not-found, never a crash.",
    ),
    Mutant(
        "discard-always-says-discarded",
        "relay/keys.py",
        'json_response(200, {"ok": True, "discarded": discarded})',
        'json_response(200, {"ok": True, "discarded": True})',
        "DELETE /graphs/:gid/keys/:epoch answers `{ok, discarded}`; 'DELETE keys/:epoch "
        "discards only the calling device's own wrap' (a device holding no wrap there "
        "discarded nothing).",
    ),
    Mutant(
        "blob-delete-without-write",
        "relay/routing.py",
        '"_delete_blob", "write",\n          capability="write"),',
        '"_delete_blob", "write"),',
        "Blobs: 'Upload and DELETE require `write`.'; Blob: 'retain | DELETE | caller "
        "holds `write` | deleted'.",
    ),
    Mutant(
        "register-swaps-keys",
        "relay/devices.py",
        "RegisteredDevice(device_id, call.member, pub, sig, self_sig, label, call.now)",
        "RegisteredDevice(device_id, call.member, sig, pub, self_sig, label, call.now)",
        "PUT /devices/:deviceId `{pubJwk, sigJwk, ...}`: 'It is set-once and takes both "
        "keys at once'; Device: pubJwk is the ECDH wrapping key, sigJwk the ECDSA signing key.",
    ),
    Mutant(
        "device-list-open-to-unregistered",
        "relay/routing.py",
        'Route("GET", ("devices",), "_list_devices", "read"),',
        'Route("GET", ("devices",), "_list_devices", "read", registered=False),',
        "Authentication 2: 'Every route except PUT /devices/:deviceId also requires that "
        "the named device is registered to the named member and is not revoked.'",
    ),
    Mutant(
        "capability-empty-list-allows-all",
        "relay/core.py",
        "if granted is not None and capability not in granted:",
        "if granted and capability not in granted:",
        "Authentication 5: 'If the directory has no capability function, or answers null "
        "for the group, everything is allowed. If it answers a list, the needed "
        "capability must be in it.'",
    ),
    Mutant(
        "decimal-query-refuses-zero",
        "relay/schema.py",
        '_DECIMAL = re.compile(r"0|[1-9][0-9]{0,15}")',
        '_DECIMAL = re.compile(r"[1-9][0-9]{0,15}")',
        "Pull rules: 'Returns ops with `seq > after`'; Endpoints: 'Every body is validated "
        "against a schema; failure is 400 `invalid`' (a valid request is never refused).",
    ),
    Mutant(
        "nonce-limit-in-bytes",
        "relay/schema.py",
        "MAX_NONCE_CHARS = 64",
        "MAX_NONCE_CHARS = 12",
        "Cryptographic constructions: 'nonce 96 random bits, fresh per encryption' (16 "
        "base64url characters on the wire); a valid push is never refused `400 invalid`.",
    ),
)

# -- the client: client rules 1-14, log checks, checkpoints, durability ----------------------

CLIENT = (
    Mutant(
        "stamp-ties-prior-rev",
        "client/device.py",
        'at = max(now, self.store.get("meta", "last", 0) + 1, int(prior_rev) + 1)',
        'at = max(now, self.store.get("meta", "last", 0) + 1, int(prior_rev))',
        "Client rule 1: 'Stamping: `at = max(now, last + 1, priorRev + 1)`, where ... "
        "`priorRev` is the `at` of the record being overwritten'.",
    ),
    Mutant(
        "receive-never-refreshes-roster",
        "client/sync.py",
        'if isinstance(outcome, Refusal) and outcome.reason == "unknown-device":',
        'if isinstance(outcome, Refusal) and outcome.reason == "unknown-devices":',
        "Client rule 2: 'a receiver accepts a record only if ... `d` is in the roster'; "
        "Errors: 'A failed check on the device side ... skips that record' (a device "
        "linked after the roster was cached is in the roster).",
    ),
    Mutant(
        "tombstone-checked-against-schema",
        "client/receive.py",
        'if not record.get("deleted") and not registry.accepts(record["kind"], record["data"]):',
        'if not registry.accepts(record["kind"], record["data"]):',
        "Client rule 2: 'the app's schema for `r.kind` accepts `r.data` (tombstones excepted)'.",
    ),
    Mutant(
        "lww-keeps-local-on-equal-rev",
        "client/sync.py",
        'if held is not None and held["at"] > record["at"]:',
        'if held is not None and held["at"] >= record["at"]:',
        "Client rule 3: 'take the relay's copy when `local.at <= record.at` and content "
        "differs (the relay keeps the first of two equal revisions)'.",
    ),
    Mutant(
        "cursor-saved-past-missing-epoch",
        "client/sync.py",
        'device.store.put("cursor", sub_key, cursor)',
        'device.store.put("cursor", sub_key, max(cursor, answer["cursor"]))',
        "Client rule 4: 'Op under a missing epoch: stop before that op without advancing "
        "the cursor, fetch keys, retry; never skip it.'",
    ),
    Mutant(
        "push-while-behind",
        "client/sync.py",
        "if device.behind(graph_id) or not ring.keys:",
        "if not ring.keys:",
        "Client rule 5: 'A device behind an epoch holds its writes.'",
    ),
    Mutant(
        "roster-offline-uses-cache",
        "client/keyops.py",
        '    response = await device.request("GET", f"/graphs/{graph_id}/devices")\n',
        "    try:\n"
        '        response = await device.request("GET", f"/graphs/{graph_id}/devices")\n'
        "    except Exception:  # offline: carry on with the roster fetched last\n"
        "        cached = device._rosters.get(graph_id)\n"
        "        return cached.entries if cached else {}\n",
        "Client rule 6: 'If the roster cannot be fetched, the batch is deferred with the "
        "cursor kept, not dropped.'",
    ),
    Mutant(
        "batch-one-op-over",
        "client/sync.py",
        "len(batch) >= device.config.max_batch_ops",
        "len(batch) > device.config.max_batch_ops",
        "Client rule 7: 'Batches are bounded by op count (200) and bytes (8 MiB).'",
    ),
    Mutant(
        "echo-skip-over-others-writes",
        "client/sync.py",
        "cursor == sub_cursor + len(batch)",
        "cursor >= sub_cursor + len(batch)",
        "Client rule 8: 'Echo skipping is allowed only when every op of the batch landed.' "
        "(docs/client.md: and nothing else was written in between)",
    ),
    Mutant(
        "clock-repair-skew-inverted",
        "client/sync.py",
        "skew = device.clock.now_ms() - relay_now",
        "skew = relay_now - device.clock.now_ms()",
        "Client rule 9: 'on `rev-too-far-ahead`, adopt the relay's `now` once (skew = own "
        "clock - relay now)'.",
    ),
    Mutant(
        "clock-repair-raises-high-water",
        "client/sync.py",
        'min(device.store.get("meta", "last", 0), corrected)',
        'max(device.store.get("meta", "last", 0), corrected)',
        "Client rule 9: 'on `rev-too-far-ahead`, adopt the relay's `now` once ... and "
        "reset the high-water mark to the minimum of itself and the corrected now.'",
    ),
    Mutant(
        "retry-every-4xx",
        "client/transport.py",
        "return status == 429 or status >= 500",
        "return status == 429 or status >= 400",
        "Client rule 10: '429, 5xx and network failures retry with jittered backoff and "
        "bounded attempts; other 4xx are not retried and are surfaced.'",
    ),
    Mutant(
        "readonly-drops-queue",
        "client/sync.py",
        "                    device.readonly.add(graph_id)\n",
        "                    device.readonly.add(graph_id)\n"
        '                    device.store.drop_tables(f"queue:{sk}")  # a 4xx: not retried\n',
        "Client rule 11: '`403 not-permitted` is not a transport failure: hold the queued "
        "writes, report it, and continue with the pull.'",
    ),
    Mutant(
        "unopenable-discards-latest-epoch",
        "client/keyops.py",
        'await device.request("DELETE", f"/graphs/{graph_id}/keys/{epoch}")',
        'await device.request("DELETE", f"/graphs/{graph_id}/keys/{answer[\'latestEpoch\']}")',
        "Client rule 12: 'A wrap that fails to unwrap is discarded with DELETE "
        "keys/:epoch and re-granted.'",
    ),
    Mutant(
        "mint-adopts-what-it-sent",
        "client/keyops.py",
        "    await refresh_keys(device, graph_id)  # adopt what the relay holds, not what was sent",
        "    device.adopt_key(graph_id, epoch, key)  # the key just minted",
        "Client rule 13: 'Key creation: after POST keys with epoch 1, read keys back and "
        "adopt what the relay holds, not what was sent.'",
    ),
    Mutant(
        "approve-mode-wraps-pending",
        "client/approval.py",
        "return GateDecision(mode == OBSERVE, state, event)",
        "return GateDecision(True, state, event)",
        "Client rule 14: 'Blocked devices are named in `excluding` (mode `approve`); in "
        "mode `observe` (default) the key is wrapped anyway.' Pin: 'Only `approved` "
        "devices are wrapped to in `approve` mode.'",
    ),
    Mutant(
        "log-check-ignores-rev",
        "client/logverify.py",
        "return (held is not None and held >= rev) or (refused is not None and refused >= rev)",
        "return held is not None or (refused is not None and refused >= rev)",
        "Log check (1): 'every log entry names a record the device holds at "
        "that rev or newer unless it refused it on purpose'.",
    ),
    Mutant(
        "checkpoint-publishes-current-head",
        "client/sync.py",
        '"head": log.heads[str(boundary)]',
        '"head": log.head',
        "Checkpoint record: data `{v: 1, d: <device_id>, seq: number, head: string}` ... "
        "'`head` is the chain head (base64url) at that boundary.'",
    ),
    Mutant(
        "checkpoint-slot-from-member-id",
        "client/sync.py",
        "slot = checkpoint_record_id(epoch1, device.device_id)",
        "slot = checkpoint_record_id(epoch1, device.member_id)",
        "Derived values: 'Checkpoint record ID: HMAC of the device ID under HKDF(epoch-1 "
        "key, `skm-ckpt-v1`)'; 'A receiver believes a checkpoint only if its record ID is "
        "the one derived for the `d` in its data'.",
    ),
    Mutant(
        "queued-write-not-durable",
        "client/device.py",
        '        self.store.put(f"queue:{sk}", record_id, {"r": record, "before": before})\n'
        "        self.store.commit()\n",
        '        self.store.put(f"queue:{sk}", record_id, {"r": record, "before": before})\n',
        "Device: 'Every device holds the real database in plaintext'; docs/client.md: a "
        "write is durable when it returns (committed with its queue entry), so a crash "
        "never loses what the application was told was written.",
    ),
    Mutant(
        "rotation-turn-clock-resets",
        "client/keyops.py",
        'if answer.get("rotationRequired") and "rotate" not in meta:',
        'if answer.get("rotationRequired"):',
        "Graph key state: 'rotationRequired | set on every graph a revoked device held "
        "keys for'; docs/client.md, Who rotates: a device takes its turn once the flag "
        "has stood rotate_after_s x (1 + rank) since it first saw it.",
    ),
)


# -- the client, clause by clause: written before the device model (issue 29), one per
# clause of the spec's client side that no mutant above covered. Three of the first 41
# proved equivalent (no input tells them from the honest client) and now break the same
# clause in a way that shows: ``echo-skip-when-an-op-lost`` (an op of a batch is lost only
# to a write made after the device's last pull, which already spoils the cursor test),
# ``log-folded-past-served`` (the log is read once the pull reached the counter, so the
# read never passed the seq served) and ``alarm-unlatches`` (no caller hands
# ``unverified`` an alarmed log); a fourth, ``epoch-not-durable``, is gone: a boot reads
# keys first, so an epoch a crash lost is learnt again before any push
# (docs/fuzzing.md, "Mutants") ------------------------------------------------------------

CLIENT_CLAUSES = (
    Mutant(
        "stamp-ignores-last",
        "client/device.py",
        'at = max(now, self.store.get("meta", "last", 0) + 1, int(prior_rev) + 1)',
        "at = max(now, int(prior_rev) + 1)",
        "Client rule 1: '`at = max(now, last + 1, priorRev + 1)`, where `last` is the "
        "device's previous stamp'.",
    ),
    Mutant(
        "stamp-ignores-prior-rev",
        "client/device.py",
        '"at": self.stamp(sync.prior_rev(held)),',
        '"at": self.stamp(0),',
        "Client rule 1: '`priorRev` is the `at` of the record being overwritten (0 for a new "
        "record). The record being overwritten is read before stamping.'",
    ),
    Mutant(
        "tombstone-keeps-data",
        "client/device.py",
        'return self.write_record(graph_id, record_id, {"kind":'
        ' kind, "deleted": True, "data": {}})',
        "return self.write_record(\n"
        "            graph_id, record_id,\n"
        '            {"kind": kind, "deleted": True, "data": dict(held["data"]) if held else {}},\n'
        "        )",
        "GraphRecord: '`deleted` ... tombstone: an empty husk (data is empty) that keeps syncing'.",
    ),
    Mutant(
        "delete-not-queued",
        "client/device.py",
        'return self.write_record(graph_id, record_id, {"kind":'
        ' kind, "deleted": True, "data": {}})',
        'record = self.write_record(graph_id, record_id, {"kind":'
        ' kind, "deleted": True, "data": {}})\n'
        '        self.store.delete(f"queue:{self.storage_key(graph_id)}", record_id)\n'
        "        return record",
        "GraphRecord: a tombstone is 'an empty husk (data is empty) that keeps syncing; the "
        "relay never deletes a row for a deletion'.",
    ),
    Mutant(
        "receive-skips-slot-check",
        "client/receive.py",
        "record = check_envelope(envelope, record_id)",
        'inner = envelope.get("r")\n'
        '        claimed = inner.get("id") if isinstance(inner, dict) else None\n'
        "        record = check_envelope(envelope, claimed if"
        " isinstance(claimed, str) else record_id)",
        "Client rule 2: 'a receiver accepts a record only if ... the envelope parses and "
        "`r.id` equals the slot'.",
    ),
    Mutant(
        "receive-skips-schema",
        "client/receive.py",
        'if not record.get("deleted") and not registry.accepts(record["kind"], record["data"]):',
        'if record["kind"].startswith("skm.") and not'
        ' registry.accepts(record["kind"], record["data"]):',
        "Client rule 2: 'the app's schema for `r.kind` accepts `r.data` (tombstones excepted)'.",
    ),
    Mutant(
        "receive-accepts-unknown-device",
        "client/receive.py",
        "    if entry is None:\n"
        '        return Refusal("unknown-device", f"signing device'
        ' {device_id!r} is not in the roster")\n',
        "    if entry is None:\n        return Opened(record, None)\n",
        "Client rule 2: 'unless the app opted out, `d` is in the roster'.",
    ),
    Mutant(
        "receive-skips-signature",
        "client/receive.py",
        '        valid = isinstance(envelope.get("s"), str) and verify_record(\n'
        '            entry["sigJwk"], storage_key, record, envelope["s"]\n'
        "        )\n",
        '        valid = isinstance(envelope.get("s"), str) and bool(entry["sigJwk"])\n',
        "Client rule 2: '`s` verifies over the record as sealed'.",
    ),
    Mutant(
        "receive-skips-author",
        "client/receive.py",
        'if record["by"] != entry["memberId"]:',
        'if not record["by"]:',
        "Client rule 2: '`r.by` equals that device's member'.",
    ),
    Mutant(
        "receive-checks-rev-one-way",
        "client/receive.py",
        'if record["at"] != op["rev"]:',
        'if record["at"] > op["rev"]:',
        "Ops on the wire: `rev` is 'the record's `at`'; client rule 2: 'the envelope parses' "
        "(docs/client.md: an op whose rev is not its record's `at` is refused as `shape`).",
    ),
    Mutant(
        "refusal-not-remembered",
        "client/sync.py",
        "        device.store.put(\n"
        '            f"refused:{sk}", op["recordId"], {"rev":'
        ' op["rev"], "reason": outcome.reason}\n'
        "        )\n",
        "",
        "Client rule 2: 'Failing records are skipped and the reason reported'; client "
        "verification (1): '... unless it refused it on purpose'.",
    ),
    Mutant(
        "missing-epoch-fetches-no-keys",
        "client/sync.py",
        "    if epoch not in ring.keys:\n        await keyops.refresh_keys(device, graph_id)\n",
        "    if epoch not in ring.keys and not ring.keys:\n"
        "        await keyops.refresh_keys(device, graph_id)\n",
        "Client rule 4: 'Op under a missing epoch: stop before that op without advancing the "
        "cursor, fetch keys, retry; never skip it.'",
    ),
    Mutant(
        "epoch-moves-down",
        "client/device.py",
        'if epoch is not None and epoch > meta.get("latest", 0):',
        'if epoch is not None and epoch != meta.get("latest", 0):',
        "Client rule 5: 'A client treats a higher `epoch` in an answer as a signal to fetch "
        "keys before its next write and only ever moves its epoch upward.'",
    ),
    Mutant(
        "behind-fetches-keys-only-on-recheck",
        "client/device.py",
        "            or self.behind(graph_id)\n",
        "",
        "Client rule 5: 'A client treats a higher `epoch` in an answer as a signal to fetch "
        "keys before its next write'.",
    ),
    Mutant(
        "pull-ignores-epoch",
        "client/sync.py",
        '        device.note_epoch(graph_id, answer.get("epoch"))\n        _counter(',
        "        _counter(",
        "Records: '`epoch` (on push and pull answers) is the graph's current key "
        "generation'; client rule 5: 'A client treats a higher `epoch` in an answer as a "
        "signal to fetch keys before its next write'.",
    ),
    Mutant(
        "echo-skip-when-an-op-lost",
        "client/sync.py",
        "if accepted == len(batch) and not rejected and cursor == sub_cursor + len(batch):",
        "if cursor == sub_cursor + len(batch):",
        "Client rule 8: 'Echo skipping is allowed only when every op of the batch landed.'",
    ),
    Mutant(
        "too-far-ahead-dropped",
        "client/sync.py",
        '        if reason == "rev-too-far-ahead":\n'
        "            _restamp(device, graph_id, sk, entry)\n"
        "            continue\n",
        "",
        "Client rule 9: 'Clock repair: on `rev-too-far-ahead`, adopt the relay's `now` once "
        "...' (the write is re-stamped and pushed again, docs/client.md).",
    ),
    Mutant(
        "no-retry-on-429",
        "client/transport.py",
        "return status == 429 or status >= 500",
        "return status >= 500",
        "Client rule 10: 'Retries: 429, 5xx and network failures retry with jittered backoff "
        "and bounded attempts'.",
    ),
    Mutant(
        "no-retry-on-lost-request",
        "client/transport.py",
        '            last = f"lost: {exc}"\n            continue\n',
        '            raise RelayUnavailable(f"{request.method}'
        ' {request.path}: lost: {exc}") from None\n',
        "Client rule 10: 'Retries: 429, 5xx and network failures retry with jittered backoff "
        "and bounded attempts'.",
    ),
    Mutant(
        "readonly-stops-pull",
        "client/sync.py",
        '    stats["pushed"] += await push(device, graph_id)\n'
        "    for sub_key, sub in device.subscriptions(graph_id):\n",
        '    stats["pushed"] += await push(device, graph_id)\n'
        "    if graph_id in device.readonly:\n"
        "        return stats\n"
        "    for sub_key, sub in device.subscriptions(graph_id):\n",
        "Client rule 11: '`403 not-permitted` is not a transport failure: hold the queued "
        "writes, report it, and continue with the pull.'",
    ),
    Mutant(
        "unopenable-wrap-kept",
        "client/keyops.py",
        '            await device.request("DELETE", f"/graphs/{graph_id}/keys/{epoch}")\n',
        "",
        "Client rule 12: 'A wrap that fails to unwrap is discarded with DELETE keys/:epoch and "
        "re-granted.'",
    ),
    Mutant(
        "blocked-not-excluded",
        "client/keyops.py",
        '            excluding.append(entry["deviceId"])\n',
        "            pass\n",
        "Client rule 14: 'Blocked devices are named in `excluding` (mode `approve`)'; "
        "Ceremonies, Rotate: 'POST keys with epoch latest+1 and excluding'.",
    ),
    Mutant(
        "observe-mode-blocks-pending",
        "client/approval.py",
        "return GateDecision(mode == OBSERVE, state, event)",
        "return GateDecision(False, state, event)",
        "Client rule 14: 'in mode `observe` (default) the key is wrapped anyway.'",
    ),
    Mutant(
        "gate-ignores-changed-keys",
        "client/approval.py",
        "if state == APPROVED and pin.fingerprint == fingerprint:",
        "if state == APPROVED:",
        "Client rule 14: 'one approval gate that fingerprints the key triple it was handed'; "
        "Pin: 'approved | published keys' fingerprint changed at a wrap | conflicted'.",
    ),
    Mutant(
        "possession-without-self-sig",
        "client/sync.py",
        "if device.pin(device_id) is None and self_sig_valid(entry):",
        "if device.pin(device_id) is None:",
        "Pin: 'unknown | proof of possession (... and its selfSig verifies under that signing "
        "key) | approved'; Device: selfSig 'absent on devices registered before it existed "
        "(such a device is never auto-approved by a client)'.",
    ),
    Mutant(
        "grant-only-latest-epoch",
        "client/keyops.py",
        "    for epoch, key in sorted(ring.keys.items()):\n",
        "    for epoch, key in sorted(ring.keys.items())[-1:]:\n",
        "Ceremonies, Link a device: 'A holder reads keygaps, fingerprints each triple, "
        "approves ..., wraps each missing epoch, and POSTs keys'.",
    ),
    Mutant(
        "log-folded-past-served",
        "client/sync.py",
        '    served = device.store.get("cursor", graph_id, 0)\n',
        '    served = device.store.get("counter", graph_id, 0)\n',
        "Client verification: 'SHOULD, only for an unfiltered subscription and only up to the "
        "seq actually served'.",
    ),
    Mutant(
        "unreachable-keeps-ok",
        "client/device.py",
        "if log is not None and log.state == OK:",
        'if log is not None and log.state == "alarm":',
        "Log verification status: 'ok | relay unreachable, or log pruned past the device | "
        "unverified'.",
    ),
    Mutant(
        "alarm-unlatches",
        "client/logverify.py",
        "    if log.state in (ALARM, OK) or log.anchored_from is not None:\n",
        "    if log.state == OK or log.anchored_from is not None:\n",
        "Log verification status: 'alarm | anything | alarm (latched)'.",
    ),
    Mutant(
        "missing-log-route-accuses",
        "client/sync.py",
        "            _save_log(device, graph_id, unverified(log))\n            return\n",
        '            _save_log(device, graph_id, log.alarmed(f"log route: {response.status}"))\n'
        "            return\n",
        "Versioning 3: 'A relay without the log route makes a client report log status "
        "`unverified`, not an accusation.'",
    ),
    Mutant(
        "chain-skips-checkpoints",
        "client/logverify.py",
        "        head, through, last_seq = log_step(head, seq, record_id, rev), seq, seq\n",
        "        if not is_checkpoint(record_id):\n"
        "            head = log_step(head, seq, record_id, rev)\n"
        "        through, last_seq = seq, seq\n",
        "Log chain: 'computed by clients, over entries in seq order'; 'The chain is over the "
        "entries present' (every entry, checkpoints included).",
    ),
    Mutant(
        "checkpoint-claims-folded-seq",
        "client/sync.py",
        '"seq": boundary, "head": log.heads[str(boundary)]}',
        '"seq": log.through, "head": log.heads[str(boundary)]}',
        "Checkpoint record: data `{v: 1, d: <device_id>, seq: number, head: string}`. "
        "'`seq` is a multiple of 64. `head` is the chain head (base64url) at that boundary.'",
    ),
    Mutant(
        "checkpoint-believed-in-any-slot",
        "client/sync.py",
        '    if opened.record["id"] != checkpoint_record_id(epoch1, claimed):\n        return\n',
        "",
        "Checkpoint rules: 'A receiver believes a checkpoint only if its record ID is the one "
        "derived for the `d` in its data AND the record's proven author owns device `d`.'",
    ),
    Mutant(
        "checkpoint-believed-from-any-author",
        "client/sync.py",
        'if claimed == device.device_id or epoch1 is None or owner != opened.record["by"]:',
        "if claimed == device.device_id or epoch1 is None:",
        "Checkpoint rules: 'A receiver believes a checkpoint only if its record ID is the one "
        "derived for the `d` in its data AND the record's proven author owns device `d`.'",
    ),
    Mutant(
        "engine-records-send-kind",
        "client/sync.py",
        "    if device.config.send_metadata:\n",
        '    if device.config.send_metadata or record["kind"].startswith("skm."):\n',
        "Partial sync rules: 'Clients send `k` and `sh` only when the app opts in; the default "
        "is to send neither.' (`k` is 'stored and readable by the relay forever').",
    ),
    Mutant(
        "envelope-names-the-member",
        "client/sync.py",
        'envelope = {"v": 1, "r": sealed, "d": device.device_id, "s": signature}',
        'envelope = {"v": 1, "r": sealed, "d": device.member_id, "s": signature}',
        "RecordEnvelope: '`d` | string | no | the DEVICE ID that signed'.",
    ),
    Mutant(
        "signs-over-the-graph-id",
        "client/sync.py",
        "signature = sign_record(device.keys.sign_key, sk, sealed)",
        "signature = sign_record(device.keys.sign_key, graph_id, sealed)",
        "Cryptographic constructions: 'Signature | ECDSA P-256 with SHA-256 over the bytes "
        "`skm-record-v1\\n` + storageKey + `\\n` + canonicalJson(record)'; 'Everything that "
        "binds or signs (AAD, signing bytes, log genesis) uses the storage key.'",
    ),
    Mutant(
        "seals-under-the-graph-id",
        "client/sync.py",
        "n, c = seal_record(key, sk, envelope, entropy=device.entropy)",
        "n, c = seal_record(key, graph_id, envelope, entropy=device.entropy)",
        "Cryptographic constructions: 'AAD | `<storageKey>/<recordId>` for records'; "
        "'Everything that binds or signs (AAD, signing bytes, log genesis) uses the storage "
        "key.'",
    ),
    Mutant(
        "unknown-members-kept",
        "client/receive.py",
        "    return Opened(known_members(record), device_id)\n",
        "    return Opened(record, device_id)\n",
        "Signature rule: 'Unknown members are covered by the signature and then ignored; "
        "only the parsed, schema-checked record is stored.'",
    ),
    Mutant(
        "import-keeps-the-record-store",
        "client/ceremonies.py",
        'for prefix in ("records:", "queue:", "refused:", "shadow:"):',
        'for prefix in ("queue:", "shadow:"):',
        "Ceremonies, Recover: 'import a bundle on a new device, register new keys, adopt graph "
        "keys; importing first wipes the local record store.'",
    ),
)

# -- Versioning rule 3's compatibility clauses: slips that pass in a world of one version
# and break a release; `simkit fuzz` of the protocol as specified runs every third chunk
# as a release (docs/releases.md) -------------------------------------------------------

COMPAT = (
    Mutant(
        "pull-requires-epoch",
        "client/sync.py",
        "        answer = response.json()\n"
        '        device.note_epoch(graph_id, answer.get("epoch"))',
        '        answer = response.json()\n        device.note_epoch(graph_id, answer["epoch"])',
        "Versioning rule 3: '`epoch` on push and pull answers is optional so clients can talk "
        "to an older relay.'",
    ),
    Mutant(
        "missing-log-route-alarms",
        "client/sync.py",
        "            _save_log(device, graph_id, unverified(log))\n            return",
        '            _save_log(device, graph_id, log.alarmed("no log route"))\n            return',
        "Versioning rule 3: 'A relay without the log route makes a client report log status "
        "`unverified`, not an accusation.'",
    ),
    Mutant(
        "strict-record-members",
        "client/receive.py",
        '    if record["at"] != op["rev"]:',
        '    if record["at"] != op["rev"] or known_members(record) != record:',
        "Versioning rule 3: 'Unknown record members are signed and ignored, so new optional "
        "fields do not partition a fleet.'",
    ),
    Mutant(
        "relay-refuses-unknown-members",
        "relay/schema.py",
        "        if strict and name not in known:",
        "        if name not in known:",
        "Versioning rule 3: 'An older relay drops `excluding`': a relay drops request members "
        "it does not know (docs/findings.md, F19).",
    ),
)

# Slips that change no behaviour, kept out of ``ALL`` (a mutant set measures time to a
# finding; one nobody can find only adds its budget to both sides): each still applies
# (tests/fuzz/test_mutants_apply.py), and docs/fuzzing.md, "Mutants", says why each is
# equivalent.
EQUIVALENT = (
    Mutant(
        "pull-without-roster",
        "client/sync.py",
        "            return applied, refused  # client rule 6: defer the batch, keep the cursor",
        '            device.last_error = f"pull {graph_id}: roster unavailable"',
        "Client rule 6: 'If the roster cannot be fetched, the batch is deferred with the "
        "cursor kept, not dropped.'",
    ),
    Mutant(
        "boundary-head-before-its-entry",
        "client/logverify.py",
        "fresh.update(_final_boundaries(last_seq, seq - 1, head))",
        "fresh.update(_final_boundaries(last_seq, seq, head))",
        "Log chain: 'The head at boundary B is the chain after folding every entry with seq <= B'.",
    ),
)

CLIENT_ALL = CLIENT + CLIENT_CLAUSES
ALL = RELAY + CLIENT_ALL + COMPAT
BY_NAME = {mutant.name: mutant for mutant in ALL}


FINDINGS = Path(__file__).with_name("mutant_findings")


def collect(report: Path, into: Path = FINDINGS) -> dict[str, str]:
    """Keep, per mutant the campaign scored killed (its ``--report`` folder's
    campaign.json: a run that failed the honest code too scores ``honest-fails``), the
    shortest reproducer it found as ``into/NAME.json``, the seeded check of
    tests/fuzz/test_mutants_caught.py. What was done, per mutant."""
    import json

    from simkit.fuzz.reproducer import Reproducer

    scores = json.loads((report / "campaign.json").read_text())["mutation"]["scores"]
    done = {}
    for score in scores:
        name = score["name"]
        if score["verdict"] != "killed":
            done[name] = f"left out: {score['verdict']}"
            continue
        paths = (report / "findings").glob(f"{name}-*.json")  # no name prefixes another
        best = min(paths, key=lambda p: len(Reproducer.load(p).steps))
        (into / f"{name}.json").write_text(best.read_text(encoding="utf-8"), encoding="utf-8")
        done[name] = f"kept {best.name}"
    return done


if __name__ == "__main__":  # python -m tests.fuzz.mutants REPORT_DIR
    import sys

    for name, what in collect(Path(sys.argv[1])).items():
        print(f"{name}: {what}")
