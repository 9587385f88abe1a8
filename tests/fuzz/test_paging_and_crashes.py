"""``simkit fuzz`` on a relay that never stops paging ends promptly with a violation
naming the rule (``paging``), and on a device with a bug it reports the original
exception with where and when it was raised; both reproducers replay."""

import json

from click.testing import CliRunner

from simkit.cli import main


def _fuzz(variant: str, out) -> object:
    args = ["fuzz", "--variant", variant, "--time", "60", "--seed", "0", "--max-steps", "8"]
    args += ["--workers", "1"]
    return CliRunner().invoke(main, [*args, "--out", str(out)])


def test_simkit_fuzz_stops_a_relay_whose_pages_never_end_naming_the_paging_rule(tmp_path):
    out = tmp_path / "repro.json"
    result = _fuzz("tests.fuzz.paging_variants:endless_more", out)
    assert result.exit_code == 1, result.output
    assert "[paging] the relay returned a pull page that did not advance the cursor" in (
        result.output
    )
    replayed = CliRunner().invoke(main, ["replay", str(out)])
    assert replayed.exit_code == 1, replayed.output
    assert "[paging]" in replayed.output


def test_simkit_fuzz_reports_a_crash_in_the_world_as_the_original_exception(tmp_path):
    out = tmp_path / "repro.json"
    result = _fuzz("tests.fuzz.crash_variants:a1_loop_raises", out)
    assert result.exit_code == 1, result.output
    assert 'KeyError: "a bug in a1\'s loop"' in result.output
    assert "in device a1 at virtual time" in result.output
    assert "raised inside the simulated world (seed " in result.output
    assert "ExceptionGroup" not in result.output
    assert json.loads(out.read_text())["variant"] == "tests.fuzz.crash_variants:a1_loop_raises"
    replayed = CliRunner().invoke(main, ["replay", str(out)])
    assert replayed.exit_code == 1, replayed.output
    assert "internal error: KeyError" in replayed.output
