"""Source mutants of the client: client rules 1-14, log checks, checkpoints, durability."""

from simkit.fuzz.mutants import Mutant

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
        "client/logread.py",
        '"head": log.heads[str(boundary)]',
        '"head": log.head',
        "Checkpoint record: data `{v: 1, d: <device_id>, seq: number, head: string}` ... "
        "'`head` is the chain head (base64url) at that boundary.'",
    ),
    Mutant(
        "checkpoint-slot-from-member-id",
        "client/logread.py",
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
