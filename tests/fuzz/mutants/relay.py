"""Source mutants of the relay: every route, the request pipeline and the request schemas."""

from simkit.fuzz.mutants import Mutant

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
