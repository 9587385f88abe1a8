"""Look at report.html as a person would: headless Chromium (Debian's ``chromium``)
takes a screenshot, which must not be blank, and dumps the DOM, which must hold
the plots. Skipped where Chromium is not installed."""

import shutil
import subprocess

import pytest

from simkit.report import render_report

from . import png
from .conftest import summary

PLOTS = ("plot-lag-1", "plot-convergence", "plot-rejected", "plot-alarms")


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
    assert dom.count("<svg") == 5 and dom.count("<polyline") >= 6
