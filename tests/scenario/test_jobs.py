"""``simkit run --jobs N`` and ``simkit compare --jobs N``: scenarios on N processes,
printed and written in library order, byte for byte what one process gives."""

import filecmp
import json
from pathlib import Path

from click.testing import CliRunner

from simkit.cli import main

ROOT = Path(__file__).resolve().parents[2]
THREE = [
    ROOT / "scenarios" / name
    for name in ("bootstrap.toml", "revoke-then-rotate.toml", "release-relay-without-epoch.toml")
]


def library(tmp_path: Path) -> Path:
    folder = tmp_path / "library"
    folder.mkdir()
    for path in THREE:
        (folder / path.name).write_text(path.read_text())
    return folder


def same_tree(a: Path, b: Path) -> bool:
    compared = filecmp.dircmp(a, b)
    if compared.left_only or compared.right_only or compared.diff_files or compared.funny_files:
        return False
    _, mismatch, errors = filecmp.cmpfiles(a, b, compared.common_files, shallow=False)
    return (
        not mismatch
        and not errors
        and all(same_tree(a / sub, b / sub) for sub in compared.common_dirs)
    )


def test_scenarios_on_two_processes_print_and_write_what_one_process_does(tmp_path):
    folder = library(tmp_path)
    outputs = {}
    for jobs in ("1", "2"):
        out = tmp_path / f"reports-{jobs}"
        result = CliRunner().invoke(
            main, ["run", str(folder), "--report", str(out), "--jobs", jobs]
        )
        assert result.exit_code == 0, result.output
        # stdout: the status line on stderr says how far a run is, every 10 s off a
        # terminal, so how many of them a run prints depends on the machine's speed
        outputs[jobs] = result.stdout
    assert outputs["1"] == outputs["2"]
    names = [line.split()[1] for line in outputs["1"].splitlines() if line.startswith("PASS")]
    assert names == sorted(names) and len(names) == 3  # library order
    assert same_tree(tmp_path / "reports-1", tmp_path / "reports-2")  # traces included


def test_compare_on_two_processes_is_the_comparison_of_one(tmp_path):
    folder = library(tmp_path)
    data = {}
    for jobs in ("1", "2"):
        out = tmp_path / f"cmp-{jobs}"
        args = [
            "compare",
            "--variant",
            "tests.fuzz.variants:skip_revoked",
            str(folder),
            "--time",
            "0",
        ]
        result = CliRunner().invoke(main, [*args, "--report", str(out), "--jobs", jobs])
        assert result.exit_code in (0, 1), result.output
        data[jobs] = json.loads((out / "compare.json").read_text())
        data[jobs].pop("seed")  # a fresh one each time (--time 0: nothing was fuzzed)
    assert data["1"] == data["2"]
