"""``simkit serve`` in a subprocess on 127.0.0.1 and a free port (``--port 0``)."""

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
START_TIMEOUT_S = 30


class Served:
    """A running ``simkit serve``; ``url`` is what its first line announced."""

    def __init__(self, tmp_path: Path, *args: str) -> None:
        self.args = args
        self.stderr_path = tmp_path / f"serve-{os.getpid()}-{id(self)}.err"
        self.start()

    def start(self) -> None:
        env = {**os.environ, "PYTHONPATH": str(ROOT)}
        self.stderr = open(self.stderr_path, "ab")  # noqa: SIM115 - closed in stop()
        self.process = subprocess.Popen(
            [sys.executable, "-m", "simkit.cli", "serve", "--port", "0", *self.args],
            cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=self.stderr,
        )  # fmt: skip
        line = self.process.stdout.readline().decode()
        if not line.startswith("listening on "):
            self.process.kill()
            self.process.wait()
            raise AssertionError(f"simkit serve did not start: {line!r} {self.errors()}")
        self.url = line.split()[2]
        self.port = int(self.url.rsplit(":", 1)[1])

    def errors(self) -> str:
        return self.stderr_path.read_text(errors="replace")

    def alive(self) -> bool:
        return self.process.poll() is None

    def kill(self) -> None:
        """SIGKILL: the server gets no chance to finish anything."""
        self.process.send_signal(signal.SIGKILL)
        self.process.wait()
        self.stderr.close()

    def stop(self) -> int:
        """SIGTERM and wait: the exit code."""
        if self.alive():
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=START_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self.process.stdout.close()
        self.stderr.close()
        return self.process.returncode


@pytest.fixture
def serve(tmp_path):
    """``serve(*args)`` starts a server; every one started is stopped after the test."""
    started: list[Served] = []

    def start(*args: str) -> Served:
        started.append(Served(tmp_path, *args))
        return started[-1]

    yield start
    for served in started:
        served.stop()
