"""Hostile messages from the spec's tables (simkit.protocol.messages): every
malformation of the record a device receives, pushed by a member's non-conforming
client (on the honest stack each invalid one is refused by every receiver and each
valid one applied), and of every answer a device reads, sent by a relay that lies
(the device neither crashes nor believes it); no invariant, models included, breaks."""

import json

import pytest

from simkit.fuzz.actions import StepError, parse_step
from simkit.fuzz.params import WorldParams
from simkit.fuzz.reproducer import Reproducer, replay
from simkit.protocol.messages import (
    ANSWER_MALFORMATIONS,
    GRAPH_RECORD,
    MAX_READ,
    RECORD_ENVELOPE,
    RECORD_ID_BOUNDARY,
    RECORD_MALFORMATIONS,
    Field,
    malformations,
    request_shows,
)


def run(what: str):
    steps = (
        {"rule": "malformed", "device": "a1", "graph": "g:team", "record": "r1", "what": what},
        {"rule": "advance", "seconds": 30},
    )
    return replay(Reproducer("honest", WorldParams(4), steps))


def test_every_member_of_the_records_tables_is_broken_every_way():
    for table in (GRAPH_RECORD, RECORD_ENVELOPE):
        names = {m.field for m in malformations(table)}
        assert {f.name for f in table.fields} <= names
    kinds = {m.kind for m in RECORD_MALFORMATIONS.values()}
    assert kinds == {"absent", "wrong-type", "out-of-range", "boundary", "unknown-member",
                     "duplicate-key"}  # fmt: skip


@pytest.mark.parametrize("what", sorted(RECORD_MALFORMATIONS))
def test_a_receiver_refuses_an_invalid_record_and_applies_a_valid_one(what):
    result = run(what)
    assert not result.violations, "\n".join(str(v) for v in result.violations)
    record = RECORD_ID_BOUNDARY if what == "GraphRecord.id boundary" else "r1"
    events = [e for e in result.world.trace if e.fields.get("recordId") == record
              and e.actor in ("b1", "c1")]  # fmt: skip
    names = {e.fields.get("name") for e in events}
    if RECORD_MALFORMATIONS[what].valid:
        assert "record.applied" in names and "record.rejected" not in names, names
    else:
        assert "record.rejected" in names and "record.applied" not in names, names
    assert result.world.coverage.counts[f"malformed {what}"] == 1


def answered(what: str):
    steps = (
        {"rule": "adversary", "mode": "malform", "targets": ["a1"], "params": {"what": what}},
        {"rule": "link", "member": "bob", "device": "b6"},
        {"rule": "write", "device": "b1", "graph": "g:team", "record": "r1", "op": "edit"},
        {"rule": "write", "device": "a1", "graph": "g:team", "record": "r2", "op": "edit"},
        {"rule": "advance", "seconds": 30},
        {"rule": "advance", "seconds": 30},
    )
    return replay(Reproducer("adversary", WorldParams(4), steps))


@pytest.mark.parametrize("what", sorted(ANSWER_MALFORMATIONS))
def test_a_device_answered_with_a_malformed_message_neither_crashes_nor_believes_it(what):
    """Before issue 38, 47 of these crashed the client (a KeyError on a member left out,
    a TypeError on one of the wrong type): a relay that lies could stop every device."""
    result = answered(what)
    assert not result.violations, "\n".join(str(v) for v in result.violations)
    assert result.world.coverage.counts[f"malformed {what}"] >= 1


def test_a_malform_step_must_name_an_answers_malformation():
    with pytest.raises(StepError, match=r"did you mean 'PullOp\.c absent'"):
        parse_step({"rule": "adversary", "mode": "malform", "targets": ["a1"],
                    "params": {"what": "PullOp.c absnt"}})  # fmt: skip


def test_a_request_body_shows_each_malformation_it_carries_unless_it_is_oversize():
    """The behaviours count the rogue's request malformations from the body it sent;
    a body past ``MAX_READ`` is the oversize fault and shows none."""
    op = {"recordId": "r1", "rev": "7", "n": "bm9uY2U", "c": "QUJD", "x-unknown": 1}
    body = json.dumps({"ops": [op]}).encode()
    shown = request_shows("POST /graphs/:gid/push", body)
    assert {"GraphOpIn.rev wrong-type", "GraphOpIn unknown-member"} <= shown
    assert request_shows("POST /graphs/:gid/push", body + b" " * MAX_READ) == set()


@pytest.mark.parametrize(
    ("rule", "value", "holds"),
    [("id", "a1", True), ("id", "a:b", False), ("id", "x" * 65, False), ("count", 0, True),
     ("count", -1, False), ("positive", 0, False), ("positive", 1, True), ("count", 1.5, False)],
)  # fmt: skip
def test_a_member_holds_a_value_of_its_type_within_its_rule(rule, value, holds):
    """The tables' rules: a safe ID (Safe IDs), a whole number from 0 or from 1."""
    kind = "string" if rule == "id" else "number"
    assert Field("m", kind, rule=rule).holds(value) is holds
