"""``simkit bench``: the command's table, JSON and signature-cache switch, the
target verdicts, and that the benchmark worlds deliver what they claim. Figures
themselves are never asserted (machines here are noisy)."""

import json

from click.testing import CliRunner

from simkit.bench import BenchRow, isolated, peak_memory_mib
from simkit.bench.crypto import receive_floor_us
from simkit.bench.crypto import run as crypto_rows
from simkit.bench.mutants import ratios
from simkit.bench.sim import exchange_floor_us, group_world, measure
from simkit.bench.targets import verdicts
from simkit.cli import main
from simkit.protocol.primitives import pbkdf2_sha256
from simkit.protocol.sigcache import SIGNATURES


def test_bench_prints_the_table_and_the_cache_setting_and_writes_json(tmp_path):
    out = tmp_path / "bench.json"
    result = CliRunner().invoke(main, ["bench", "crypto", "--quick", "--json", str(out)])
    assert result.exit_code == 0, result.output
    assert "signature cache: on" in result.output
    report = json.loads(out.read_text())
    assert report["signature_cache"] == "on" and report["quick"] is True
    names = {row["name"] for row in report["rows"]}
    assert {"seal", "open", "sign", "verify", "wrap", "unwrap"} <= names


def test_no_crypto_cache_turns_the_signature_cache_off_and_reports_say_so(tmp_path):
    out = tmp_path / "bench.json"
    try:
        result = CliRunner().invoke(
            main, ["bench", "crypto", "--quick", "--no-crypto-cache", "--json", str(out)]
        )
        assert result.exit_code == 0, result.output
        assert "signature cache: off" in result.output
        assert json.loads(out.read_text())["signature_cache"] == "off"
        assert not SIGNATURES.enabled
    finally:
        SIGNATURES.configure(True)


def test_targets_say_met_or_missed_with_the_figure():
    rows = [
        BenchRow("sim", "deliveries/s (100 devices)", 41_000, "/s"),
        BenchRow("sim", "wall per delivery, 1,000 vs 10 devices", 2.0, "x"),
        BenchRow("relay", "push 200 ops @ 1,000 records", 600, "push/s"),
        BenchRow("relay", "push 200 ops @ 1,000,000 records", 580, "push/s"),
    ]
    lines = verdicts(rows)
    assert lines[0].startswith("met") and "41,000.00" in lines[0]
    assert lines[1].startswith("MISSED") and "2.00 x" in lines[1]
    assert lines[2].startswith("met") and "1.03 x" in lines[2]
    assert len(lines) == 3  # targets this run did not measure are not reported


def test_a_group_world_delivers_every_record_to_every_other_device():
    run = measure(group_world(devices=4, records=40))
    assert run["deliveries"] >= 3 * 40  # plus the checkpoints
    assert run["wall"] > 0 and run["simulated"] >= 40 / 200
    assert run["requests"] >= 4 * 2  # every device pulled and read the log at least once


def _cache_setting() -> bool:
    return SIGNATURES.enabled


def test_isolated_runs_in_a_fresh_process_with_this_process_cache_setting():
    with SIGNATURES.switched(False):
        enabled, peak = isolated(_cache_setting)
    assert enabled is False and peak > 0


def test_the_receive_floor_takes_a_real_record_through_the_whole_receive_path():
    with SIGNATURES.switched(False):
        assert receive_floor_us() > 0
        assert SIGNATURES.enabled is False  # measured with the cache on, then put back


def test_the_exchange_floor_runs_every_exchange_through_the_simulated_network():
    assert exchange_floor_us(devices=3, each=5) > 0


def test_an_isolated_run_reports_its_own_peak_memory_not_its_parents():
    """``ru_maxrss`` survives exec: a child spawned after its parent once held 400 MiB
    would report at least that (every bench row after the largest world did)."""
    held = b"x" * (400 * 2**20)
    del held
    assert peak_memory_mib() >= 400
    _, peak = isolated(abs, -1)
    assert peak < 200


def test_the_pbkdf2_row_derives_every_time_not_from_the_process_cache():
    """The derivation is remembered per process (primitives.pbkdf2_sha256); the bench
    row must time the derivation itself, not a dictionary lookup."""
    before = pbkdf2_sha256.cache_info()
    (row,) = crypto_rows(quick=True, only=("pbkdf2 (310,000 iterations)",))
    after = pbkdf2_sha256.cache_info()
    assert (after.hits, after.misses) == (before.hits, before.misses)
    assert row.unit == "ms/op"


def test_the_mutant_table_ratios_leave_out_what_neither_kills_and_name_perfect_scaling():
    """Two mutants: one worker kills the first at 20 s, two at 10 s; neither kills the
    second (60 s each side). Measured 1 killed/70 s vs 1/80 s; over the found ones
    20 s vs 10 s; perfect scaling is exactly what two workers did."""

    def run(found):
        return {"mutant": "m", "exit": 1 if found else 0, "found_after": found, "examples": 1}

    got = ratios([run(20.0), run(None)], [run(10.0), run(None)], 60.0, 2)
    assert got["ratio_killed_per_minute"] == 80 / 70
    assert got["ratio_over_mutants_found"] == 2.0
    assert got["ratio_with_perfect_scaling"] == 80 / 70
    assert got["share_of_perfect_scaling"] == 1.0


def test_the_conduct_checks_cost_is_measured_on_the_same_examples_both_ways():
    """``simkit bench fuzz``'s issue-48 row: with the checks made no-ops (in a fresh
    process) the world runs the very same examples and steps, so only time differs."""
    from simkit.bench.fuzz import default_mix_for, default_mix_without_conduct

    on = isolated(default_mix_for, 3600.0, 1, 3)[0]
    off = isolated(default_mix_without_conduct, 3600.0, 1, 3)[0]
    assert (on["examples"], on["steps"]) == (off["examples"], off["steps"]) == (3, on["steps"])
    assert on["steps"] > 0
