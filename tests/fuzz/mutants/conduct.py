"""Slips in what a device says, when it acts and what it excuses after a partial read
(issue 48): written before the checks that judge them, without looking at which
check would catch what. The first measure of simkit's judgement of a device's
conduct: ``python -m simkit.bench.mutants tests.fuzz.mutants:CONDUCT 60 2``.
"""

from simkit.fuzz.mutants import Mutant

# -- what a device says: events, status fields, pins -------------------------------------

SAYS = (
    Mutant(
        "rejected-reason-misnamed",
        "client/receive.py",
        'Refusal("wrong-author", f"r.by {record[\'by\']!r} is not {device_id!r}\'s member")',
        'Refusal("bad-signature", f"r.by {record[\'by\']!r} is not {device_id!r}\'s member")',
        "Events: '`record.rejected` a received record was skipped; carries a `reason`'; "
        "client rule 2: 'Failing records are skipped and the reason reported'.",
    ),
    Mutant(
        "unopenable-names-latest-epoch",
        "client/keyops.py",
        '"keys.unopenable", graph_id, epoch=epoch, latest=answer["latestEpoch"],',
        '"keys.unopenable", graph_id, epoch=answer["latestEpoch"], latest=epoch,',
        "Events: '`keys.unopenable` a wrap could not be opened and was discarded'.",
    ),
    Mutant(
        "behind-status-from-any-epoch",
        "client/status.py",
        "return GraphStatus(state, anchor, self.behind(graph_id), graph_id in self.readonly)",
        "return GraphStatus(state, anchor, self.relay_epoch(graph_id) > 0, "
        "graph_id in self.readonly)",
        "Client rule 5: 'A device behind an epoch holds its writes'; Events: '`keys.behind` "
        "the device is behind an epoch and holds writes'.",
    ),
    Mutant(
        "linking-waiting-when-behind",
        "client/status.py",
        "waiting = any(self.relay_epoch(g) > 0 and not self.keyring(g).keys for g in "
        "self.graphs())",
        "waiting = any(self.relay_epoch(g) > self.keyring(g).current for g in self.graphs())",
        "Linking status: 'has status `waiting` while it holds no wrap; after it unwraps the "
        "wraps with its own private key the status is `ok`'.",
    ),
    Mutant(
        "linking-ok-at-epoch-one",
        "client/status.py",
        "waiting = any(self.relay_epoch(g) > 0 and not self.keyring(g).keys for g in "
        "self.graphs())",
        "waiting = any(self.relay_epoch(g) > 1 and not self.keyring(g).keys for g in "
        "self.graphs())",
        "Linking status: 'A newly registered device polls GET keys and has status `waiting` "
        "while it holds no wrap'.",
    ),
    Mutant(
        "pending-for-rejected-devices",
        "client/approval.py",
        'event = "device.pending" if state == UNKNOWN else None',
        'event = "device.pending" if state != APPROVED else None',
        "Events: '`device.pending` a device awaits human approval'; Device approval pin: 'A "
        "device with no pin and no proof raises `device.pending`'.",
    ),
    Mutant(
        "conflict-never-pinned",
        "client/keyops.py",
        "if decision.pin == CONFLICTED and pin.state != CONFLICTED:",
        "if decision.pin == CONFLICTED and pin.state == CONFLICTED:",
        "Device approval pin: 'approved | published keys' fingerprint changed at a wrap | "
        "conflicted'.",
    ),
    Mutant(
        "conflict-for-any-pinned-device",
        "client/approval.py",
        "if state == APPROVED and pin.fingerprint == fingerprint:\n"
        "        return GateDecision(True, APPROVED)",
        "if state == APPROVED and pin.fingerprint == fingerprint:\n"
        '        return GateDecision(True, APPROVED, "device.conflict")',
        "Events: '`device.conflict` an approved device's published keys changed'.",
    ),
    Mutant(
        "possession-approves-rejected",
        "client/sync.py",
        "if device.pin(device_id) is None and self_sig_valid(entry):",
        "if self_sig_valid(entry):",
        "Device approval pin: 'unknown | a verified record from the device, with valid "
        "selfSig | approved'; a rejected device stays rejected.",
    ),
    Mutant(
        "readonly-on-any-403",
        "client/sync.py",
        'if refusal.get("error") == "not-permitted":  # client rule 11: hold, report, pull',
        "if response.status == 403:  # client rule 11: hold, report, pull",
        "Events: '`policy.readonly` a push was refused with `not-permitted`; the queue is held'.",
    ),
    Mutant(
        "readonly-never-lifted",
        "client/sync.py",
        "        device.readonly.discard(graph_id)\n        answer = response.json()",
        "        answer = response.json()",
        "Client rule 11: '`403 not-permitted` ... hold the queued writes, report it'; a push "
        "that lands says the graph is writable again (docs/client.md).",
    ),
    Mutant(
        "rejected-status-outlives-the-fix",
        "client/sync.py",
        '    device.store.put(f"records:{sk}", rid, record)\n'
        '    device.store.delete(f"refused:{sk}", rid)',
        '    device.store.put(f"records:{sk}", rid, record)',
        "Client status: '`status.rejected`' names the records refused; a later valid version "
        "of the record is applied and is no longer refused.",
    ),
    Mutant(
        "log-status-on-for-filtered-only",
        "client/status.py",
        "if not self.unfiltered(graph_id) or not self.config.log_verification:",
        "if not self.config.log_verification:",
        "Log verification status: 'unverified | only filtered subscriptions exist | off'.",
    ),
    Mutant(
        "anchored-device-reports-ok",
        "client/logverify.py",
        "    if log.state in (ALARM, OK) or log.anchored_from is not None:\n        return log",
        "    if log.state in (ALARM, OK):\n        return log",
        "Log verification: 'A device whose chain is anchored mid-log ... never reports `ok`'.",
    ),
    Mutant(
        "rejected-status-says-shape",
        "client/sync.py",
        'f"refused:{sk}", op["recordId"], {"rev": op["rev"], "reason": outcome.reason}',
        'f"refused:{sk}", op["recordId"], {"rev": op["rev"], "reason": "shape"}',
        "Client status: '`status.rejected`'; client rule 2: 'Failing records are skipped and "
        "the reason reported'.",
    ),
    Mutant(
        "unenforced-in-approve-mode",
        "client/device.py",
        "            if self.config.approval_mode == OBSERVE:\n"
        '                self.emit("linking.unenforced", None)',
        "            if self.config.approval_mode != OBSERVE:\n"
        '                self.emit("linking.unenforced", None)',
        "Events: '`linking.unenforced` raised once per boot when the approval gate runs in "
        "`observe` mode'.",
    ),
    Mutant(
        "behind-event-only-with-a-key",
        "client/sync.py",
        '        device.emit("keys.behind", graph_id, held=len(queue), holding=ring.current)',
        "        if ring.keys:\n"
        '            device.emit("keys.behind", graph_id, held=len(queue), holding=ring.current)',
        "Events: '`keys.behind` the device is behind an epoch and holds writes'.",
    ),
    Mutant(
        "pull-failure-not-surfaced",
        "client/sync.py",
        '            device.last_error = f"pull {graph_id}: {response.status}"',
        "            pass",
        "Client rule 10: 'other 4xx are not retried and are surfaced'; status.lastError.",
    ),
)

# -- when and how often a device acts: retries, debounce, polls, key fetches -------------

ACTS = (
    Mutant(
        "retries-every-4xx",
        "client/transport.py",
        "return status == 429 or status >= 500",
        "return status == 429 or status >= 400",
        "Client rule 10: 'other 4xx are not retried and are surfaced'.",
    ),
    Mutant(
        "retry-without-jitter",
        "client/transport.py",
        "return min(self.cap_s, self.base_s * 2**attempt) * (0.5 + unit_random / 2)",
        "return min(self.cap_s, self.base_s * 2**attempt) * 0.75",
        "Client rule 10: '429, 5xx and network failures retry with jittered backoff'.",
    ),
    Mutant(
        "backoff-base-in-ms",
        "client/transport.py",
        "base_s: float = 0.5",
        "base_s: float = 500",
        "Client rule 10: 'jittered backoff' (docs/client.md: 0.5 s doubling to a 30 s cap); a "
        "unit read wrongly.",
    ),
    Mutant(
        "backoff-never-grows",
        "client/transport.py",
        "return min(self.cap_s, self.base_s * 2**attempt) * (0.5 + unit_random / 2)",
        "return min(self.cap_s, self.base_s * 2) * (0.5 + unit_random / 2)",
        "Client rule 10: 'retry with jittered backoff' (docs/client.md: doubling).",
    ),
    Mutant(
        "first-retry-at-once",
        "client/transport.py",
        "        if attempt:\n            on_retry",
        "        if attempt > 1:\n            on_retry",
        "Client rule 10: '429, 5xx and network failures retry with jittered backoff'.",
    ),
    Mutant(
        "no-retry-at-all",
        "client/transport.py",
        "attempts: int = 5",
        "attempts: int = 1",
        "Client rule 10: '429, 5xx and network failures retry with jittered backoff and "
        "bounded attempts'.",
    ),
    Mutant(
        "debounce-in-ms",
        "client/config.py",
        "push_debounce_s: float = 0.25  # [250 ms]",
        "push_debounce_s: float = 250  # [250 ms]",
        "Defaults: 'client push debounce 250 ms'.",
    ),
    Mutant(
        "no-push-debounce",
        "client/device.py",
        "config.push_debounce_s if self._written else config.poke_debounce_s",
        "0 if self._written else config.poke_debounce_s",
        "Defaults: 'client push debounce 250 ms'.",
    ),
    Mutant(
        "key-recheck-in-seconds",
        "client/device.py",
        "if urgent or last is None or now - last >= self.config.recheck_s * 1000 or now < last:",
        "if urgent or last is None or now - last >= self.config.recheck_s or now < last:",
        "docs/client.md: keys and key gaps are re-read every recheck_s (30 s); a unit read "
        "wrongly makes every run read them again.",
    ),
    Mutant(
        "behind-not-urgent",
        "client/device.py",
        "            not self.keyring(graph_id).keys\n            or self.behind(graph_id)\n",
        "            not self.keyring(graph_id).keys\n",
        "Client rule 5: 'A client treats a higher `epoch` in an answer as a signal to fetch keys "
        "before its next write'.",
    ),
    Mutant(
        "grants-every-run",
        "client/sync.py",
        '        and device.due(graph_id, "grants")\n',
        "        and True\n",
        "docs/client.md: key gaps are read every recheck_s, not at every run (work).",
    ),
    Mutant(
        "repull-from-zero",
        "client/sync.py",
        '        after = cursor = device.store.get("cursor", sub_key, 0)',
        '        after = cursor = device.store.get("cursor", sub_key, 0) if pages.read else 0',
        "Pull rules: 'Returns ops with `seq > after`'; a device pulls after its cursor, not "
        "from the start of the graph at every run.",
    ),
    Mutant(
        "clock-repair-on-any-rejection",
        "client/sync.py",
        '    if "rev-too-far-ahead" in rejected.values():\n        _repair_clock',
        "    if rejected:\n        _repair_clock",
        "Client rule 9: 'Clock repair: on `rev-too-far-ahead`, adopt the relay's `now` once'.",
    ),
    Mutant(
        "yield-waits-for-the-poll",
        "client/paging.py",
        '    device.emit("sync.stopped", graph_id, route=route, reason="run-budget")\n'
        "    device.wake()",
        '    device.emit("sync.stopped", graph_id, route=route, reason="run-budget")',
        "docs/client.md, 'How long a sync run lasts': a run cut at its share runs again at once.",
    ),
    Mutant(
        "poll-interval-in-ms",
        "client/device.py",
        "            await self.clock.sleep(self.config.poll_interval_s)",
        "            await self.clock.sleep(self.config.poll_interval_s * 1000)",
        "docs/client.md: an idle device polls every poll_interval_s (5 s); a unit read wrongly.",
    ),
)

# -- what a device excuses after a partial read, and how fresh a roster must be ----------

EXCUSES = (
    Mutant(
        "cut-pull-counts-as-whole",
        "client/sync.py",
        'whole = stopped_at is None and not answer["more"]',
        "whole = stopped_at is None",
        "Log verification: a contradiction alarms; docs/findings.md F26: only a whole pull "
        "makes the relay's counter the cursor.",
    ),
    Mutant(
        "roster-fresh-for-half-an-hour",
        "client/device.py",
        "            or not 0 <= age < self.config.recheck_s * 1000\n        ):",
        "            or not 0 <= age < self.config.recheck_s * 1000 * 60\n        ):",
        "Client rule 2: 'the device was not revoked when `r.at` says the record was written': "
        "a roster read long ago cannot say so (docs/findings.md, F12).",
    ),
    Mutant(
        "roster-vouches-for-later-records",
        "client/device.py",
        "vouches = not newest_rev or (fetched is not None and newest_rev <= fetched)",
        "vouches = True",
        "Client rule 2: 'the device was not revoked when `r.at` says the record was written' "
        "(docs/findings.md, F12).",
    ),
    Mutant(
        "filtered-cursor-moves-the-graph-cursor",
        "client/sync.py",
        '        device.store.put("cursor", sub_key, cursor)\n        # a whole pull',
        '        device.store.put("cursor", graph_id, cursor)\n        # a whole pull',
        "Partial sync: 'a cursor per subscription'; a filtered pull's cursor says nothing about "
        "the kinds it did not ask for.",
    ),
    Mutant(
        "kinds-query-misnamed",
        "client/sync.py",
        '            query["kinds"] = ",".join(sub["kinds"])',
        '            query["kind"] = ",".join(sub["kinds"])',
        "Partial sync: pulls filtered by `kinds`.",
    ),
    Mutant(
        "metadata-without-opt-in",
        "client/sync.py",
        '    if device.config.send_metadata:\n        op["k"] = record["kind"]',
        '    if True:\n        op["k"] = record["kind"]',
        "Defaults: 'partial-sync metadata off': `k` and `sh` are sent only on opt-in.",
    ),
    Mutant(
        "stale-roster-refuses",
        "client/sync.py",
        "        if roster is None:\n            return NO_ROSTER",
        "        if roster is None:\n            roster = device.roster(graph_id) or {}",
        "Client rule 6: 'If the roster cannot be fetched, the batch is deferred with the cursor "
        "kept, not dropped.'",
    ),
)

CONDUCT = SAYS + ACTS + EXCUSES
