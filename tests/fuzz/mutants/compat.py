"""Source mutants of Versioning rule 3, and the slips that change no behaviour."""

from simkit.fuzz.mutants import Mutant

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
        "client/logread.py",
        "            save_log(device, graph_id, unverified(log))\n            return",
        '            save_log(device, graph_id, log.alarmed("no log route"))\n            return',
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
