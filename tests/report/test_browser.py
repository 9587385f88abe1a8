"""Look at report.html as a person would: headless Chromium (Debian's ``chromium``)
takes a screenshot, which must not be blank and must show what matters, and dumps
the DOM, which must hold it. Skipped where Chromium is not installed."""

import shutil
import subprocess

import pytest

from simkit.report import render_report

from . import png
from .conftest import summary

PLOTS = ("plot-lag-1", "plot-convergence", "plot-latency", "plot-availability", "plot-rejected",
         "plot-alarms", "plot-requests")  # fmt: skip
VIOLATION_BACKGROUND = (0xFF, 0xF7, 0xF7)  # section.violation
NOT_CHECKED_BACKGROUND = (0xFF, 0xF6, 0xE0)  # td.unchecked
MARKED_WRITE_BACKGROUND = (0xFF, 0xE8, 0xE8)  # tr.marked: a write the violation names


def chromium(tmp_path, *args: str) -> subprocess.CompletedProcess:
    binary = shutil.which("chromium")
    if binary is None:
        pytest.skip("chromium not installed: apt-get install -y chromium")
    command = [
        binary, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
        "--no-first-run", "--disable-background-networking", "--disable-component-update",
        "--disable-sync", f"--user-data-dir={tmp_path / 'profile'}", *args,
    ]  # fmt: skip
    return subprocess.run(command, capture_output=True, timeout=120, check=True)


def test_the_page_renders_with_its_plots_in_headless_chromium(alarm_trace, tmp_path):
    page = render_report(alarm_trace, summary("withhold"), tmp_path / "report")["report.html"]
    shot = tmp_path / "shot.png"
    chromium(tmp_path, f"--screenshot={shot}", "--window-size=1280,2000", page.as_uri())
    width, height, bpp, rows = png.pixels(shot.read_bytes())
    assert (width, height) == (1280, 2000)
    counts = png.colours(rows[::2], bpp)
    background = max(counts, key=counts.get)
    drawn = sum(counts.values()) - counts[background]
    assert len(counts) > 50, "too few colours: the page looks blank"
    assert drawn > 0.02 * sum(counts.values()), "almost every pixel is the background"
    dom = chromium(tmp_path, "--dump-dom", page.as_uri()).stdout.decode()
    for ident in PLOTS:
        assert f'id="{ident}"' in dom
    assert dom.count("<svg") == len(PLOTS) + 2  # a second lag plot, and the sequence diagram
    assert dom.count("<polyline") >= 6


def first_row_with(rows: list[bytearray], bpp: int, colour: tuple[int, int, int]) -> int | None:
    """The first pixel row holding a run of 3 pixels of exactly this colour."""
    target = bytes(colour)
    for y, row in enumerate(rows):
        line = bytes(b for i in range(0, len(row), bpp) for b in row[i : i + 3])
        if target * 3 in line:
            return y
    return None


def test_a_failing_report_shows_the_violation_the_history_and_not_checked(failing_run, tmp_path):
    """The whole page at half its size: the violation section, the cells of
    invariants that were not checked, and the history rows of the writes the violation
    names are all painted; what broke comes first (the first screen tells the story),
    then the invariants, then the history."""
    trace, run = failing_run
    page = render_report(trace, run, tmp_path / "report")["report.html"]
    shot = tmp_path / "shot.png"
    chromium(
        tmp_path, f"--screenshot={shot}", "--window-size=1024,12000",
        "--force-device-scale-factor=0.5", "--hide-scrollbars", page.as_uri(),
    )  # fmt: skip
    width, height, bpp, rows = png.pixels(shot.read_bytes())
    assert (width, height) == (512, 6000)
    violation = first_row_with(rows, bpp, VIOLATION_BACKGROUND)
    not_checked = first_row_with(rows, bpp, NOT_CHECKED_BACKGROUND)
    marked = first_row_with(rows, bpp, MARKED_WRITE_BACKGROUND)
    assert None not in (violation, not_checked, marked), (violation, not_checked, marked)
    assert violation < not_checked < marked
    dom = chromium(tmp_path, "--dump-dom", page.as_uri()).stdout.decode()
    assert '<section class="violation" id="violation">' in dom
    unchecked = sum(inv["passed"] is None for inv in run["invariants"])
    assert dom.count('class="unchecked"') == unchecked and dom.count('class="marked"') >= 1
    assert '<svg id="sequence"' in dom and 'id="per-operation-history"' in dom
