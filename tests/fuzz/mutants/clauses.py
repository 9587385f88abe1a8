"""Source mutants of the client, clause by clause (issue 29)."""

from simkit.fuzz.mutants import Mutant

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
        '        device.note_epoch(graph_id, answer.get("epoch"))\n        note_counter(',
        "        note_counter(",
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
        "client/logread.py",
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
        "client/logread.py",
        "            save_log(device, graph_id, unverified(log))\n            return\n",
        '            save_log(device, graph_id, log.alarmed(f"log route: {response.status}"))\n'
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
        "client/logread.py",
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
