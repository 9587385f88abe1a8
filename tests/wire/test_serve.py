"""``simkit serve`` over real HTTP on the loopback interface, and ``simkit conform``
against it; the command's own errors are exit 2."""

import json
import socket
import sqlite3

from click.testing import CliRunner

from simkit.cli import main
from simkit.relay import Request
from simkit.wire.store import STORE_VERSION, Store
from simkit.wire.target import HttpTarget

ALICE = {"authorization": "Bearer conform-alice-a1"}
NOTICE = (
    "simkit serve: no --members: serving the conformance directory, whose tokens are public "
    "(docs/relay.md)"
)
JWK = {"kty": "EC", "crv": "P-256", "x": "A" * 43, "y": "A" * 43}


def simkit(*args: str):
    return CliRunner().invoke(main, [str(a) for a in args])


def test_conform_over_http_passes_every_check_simkit_serve_can_be_asked_once(serve):
    served = serve()
    result = simkit("conform", served.url)
    assert result.exit_code == 0, result.output
    summary = result.output.strip().splitlines()[-1]
    assert "66 passed, 0 failed, 3 skipped of 69 checks" in summary, result.output
    again = simkit("conform", served.url)  # the store is no longer empty
    assert again.exit_code == 2 and "needs a relay with an empty store" in again.output
    assert served.alive() and served.stop() == 0
    assert served.errors().splitlines() == [NOTICE]  # no 500, no traceback


def test_conform_over_http_exits_1_and_names_the_rule_a_served_variant_breaks(serve):
    served = serve("--variant", "tests.wire.broken_relays:last_of_equals")
    result = simkit("conform", served.url)
    assert result.exit_code == 1
    failed = [line for line in result.output.splitlines() if line.startswith("FAIL")]
    assert failed == [
        "FAIL  spec:245  records      push_rule_2_stored_rev_at_least_op_rev_skips_silently"
    ], result.output


def test_serve_with_a_store_answers_after_a_restart_what_it_answered_before(serve, tmp_path):
    store = tmp_path / "relay.db"
    first = serve("--store", store)
    http = HttpTarget(first.url)
    body = json.dumps({"pubJwk": JWK, "sigJwk": JWK}).encode()
    assert http.send(Request("PUT", "/devices/a1", headers=ALICE, body=body)).status == 200
    push = b'{"ops": [{"recordId": "r1", "rev": 1, "n": "bm9uY2U", "c": "Y2lwaGVy"}]}'
    assert http.send(Request("POST", "/graphs/u/push", headers=ALICE, body=push)).status == 200
    pulled = http.send(Request("GET", "/graphs/u/pull", headers=ALICE)).body
    http.close()
    assert first.stop() == 0
    second = serve("--store", store)
    http = HttpTarget(second.url)
    assert http.send(Request("GET", "/graphs/u/pull", headers=ALICE)).body == pulled
    http.close()


def test_serve_refuses_a_store_written_by_a_newer_build_exit_2(tmp_path):
    path = tmp_path / "relay.db"
    Store(path).close()
    db = sqlite3.connect(path)
    db.execute("INSERT INTO migrations VALUES (?, 'x', '9.9.9')", (STORE_VERSION + 1,))
    db.commit()
    db.close()
    result = simkit("serve", "--store", path, "--port", "0")
    assert result.exit_code == 2
    assert "refusing a store written by a newer build" in result.output
    assert len(result.output.strip().splitlines()) == 1


def test_serve_on_a_port_in_use_exits_2(tmp_path):
    with socket.create_server(("127.0.0.1", 0)) as taken:
        port = taken.getsockname()[1]
        result = simkit("serve", "--port", port)
    assert result.exit_code == 2 and f"--port {port}: cannot listen there" in result.output


def test_serve_variant_that_does_not_load_exits_2():
    result = simkit("serve", "--variant", "no_such_module:thing", "--port", "0")
    assert result.exit_code == 2 and "--variant no_such_module:thing" in result.output


def test_http_target_sends_any_path_so_the_served_relay_reads_what_an_in_process_one_does(
    serve,
):
    from simkit.wire.conform import reference_target

    served, local = serve(), reference_target()
    http = HttpTarget(served.url)
    body = json.dumps({"pubJwk": JWK, "sigJwk": JWK}).encode()
    for target in (http, local):
        assert target.send(Request("PUT", "/devices/a1", headers=ALICE, body=body)).status == 200
    paths = ["/graphs/a b/pull", "/graphs/g:té/pull", "/devices/%E2%82", "/graphs/u%2Fx/log",
             "/graphs/d:zed/keys", "/devices/\x01"]  # fmt: skip
    for path in paths:
        request = Request("GET", path, headers=ALICE)
        over_http, in_process = http.send(request), local.send(request)
        assert (over_http.status, over_http.body) == (in_process.status, in_process.body), path
    http.close()


def test_bench_http_rows_measure_serve_in_memory_and_with_a_store():
    from simkit.bench.relay import http_rows

    rows = http_rows(quick=True)
    assert [r.name for r in rows] == [
        "HTTP push 1 op (memory)", "HTTP pull 50 ops (memory)",
        "HTTP push 1 op (--store)", "HTTP pull 50 ops (--store)",
    ]  # fmt: skip
    assert all(r.value > 0 and r.unit == "req/s" for r in rows)
