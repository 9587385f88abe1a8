import hashlib

import pytest

from simkit.errors import EncodingError
from simkit.sim import Trace, TraceError


class FakeTime:
    def __init__(self) -> None:
        self.t = 0.0

    def __call__(self) -> float:
        return self.t


def filled(fields_in_reverse: bool = False) -> Trace:
    now = FakeTime()
    trace = Trace(now)
    trace.register_clock("d1", lambda t: 1_700_000_000_123)
    trace.emit("request", "d1", method="POST", path="/graphs/g/push", size=10)
    now.t = 0.1 + 0.2  # 0.30000000000000004: stored as 0.3
    fields = {"status": 200, "xid": 0}
    if fields_in_reverse:
        fields = dict(reversed(fields.items()))
    trace.emit("delivery", "relay", **fields)
    trace.emit("fault", "network", fault="heal", devices=["d1", "d2"])
    return trace


def test_emit_stamps_order_time_and_the_actors_clock():
    events = list(filled())
    assert [e.seq for e in events] == [0, 1, 2]
    assert [e.t for e in events] == [0.0, 0.3, 0.3]
    assert [e.clock_ms for e in events] == [1_700_000_000_123, None, None]
    assert events[0].fields == {"method": "POST", "path": "/graphs/g/push", "size": 10}


def test_unknown_kind_is_refused():
    with pytest.raises(TraceError, match="unknown trace event kind 'requets'"):
        Trace(FakeTime()).emit("requets", "d1")


def test_hash_is_a_pure_function_of_the_events():
    whole = filled()
    assert filled(fields_in_reverse=True).trace_hash() == whole.trace_hash()

    stepwise = Trace(FakeTime())
    stepwise.emit("check", "world", name="converged", ok=True)
    early = stepwise.trace_hash()
    stepwise.emit("check", "world", name="converged", ok=False)
    assert stepwise.trace_hash() != early
    fresh = Trace(FakeTime())
    fresh.emit("check", "world", name="converged", ok=True)
    fresh.emit("check", "world", name="converged", ok=False)
    assert fresh.trace_hash() == stepwise.trace_hash()


def test_jsonl_round_trip_keeps_the_hash_which_is_the_files_sha256(tmp_path):
    trace = filled()
    path = tmp_path / "trace.jsonl"
    trace.dump(path)
    assert hashlib.sha256(path.read_bytes()).hexdigest() == trace.trace_hash()
    assert path.read_bytes().splitlines()[1] == (
        b'{"actor":"relay","clock_ms":null,"fields":{"status":200,"xid":0},'
        b'"kind":"delivery","seq":1,"t_us":300000}'
    )
    loaded = Trace.load(path)
    assert [e.to_data() for e in loaded] == [e.to_data() for e in trace]
    assert loaded.trace_hash() == trace.trace_hash()


def test_a_set_in_fields_is_refused_when_hashed():
    trace = Trace(FakeTime())
    trace.emit("fault", "network", fault="partition", devices={"d1", "d2"})
    with pytest.raises(EncodingError, match=r"trace event 0 \(fault by network\).*set"):
        trace.trace_hash()


def test_a_malformed_dump_names_the_line(tmp_path):
    path = tmp_path / "bad.jsonl"
    path.write_bytes(filled()[0].line() + b'{"seq":1}\n')
    with pytest.raises(EncodingError, match="trace line 2"):
        Trace.load(path)


def test_a_streamed_trace_file_holds_every_line_and_hashes_to_the_trace_hash(tmp_path):
    path = tmp_path / "streamed.jsonl"
    now = FakeTime()
    streamed = Trace(now)
    streamed.stream_to(path)
    for i in range(5):
        now.t = i / 10
        streamed.emit("fault", "network", fault="heal", devices=[f"d{i}"])
    streamed.close()
    assert len(path.read_bytes().splitlines()) == 5
    assert hashlib.sha256(path.read_bytes()).hexdigest() == streamed.trace_hash()
    assert Trace.load(path).trace_hash() == streamed.trace_hash()


def test_released_events_leave_memory_but_positions_keep_counting(tmp_path):
    now = FakeTime()
    trace = Trace(now)
    trace.stream_to(tmp_path / "t.jsonl")
    for _ in range(4):
        trace.emit("fault", "network", fault="heal", devices=[])
    trace.release(3)
    assert len(trace) == 4 and [e.seq for e in trace.since(3)] == [3]
    assert trace.emit("check", "world", what="x").seq == 4
    assert trace[-1].seq == 4
    with pytest.raises(TraceError, match="released"):
        trace.since(1)
    with pytest.raises(TraceError, match="released"):
        list(trace)
    with pytest.raises(TraceError, match="only a streamed trace"):
        Trace(now).release(1)
