"""A long-lived Node WebCrypto peer (webcrypto_peer.mjs) shared by the interop tests."""

import json
import math
import shutil
import subprocess
from pathlib import Path

import pytest

PEER = Path(__file__).with_name("webcrypto_peer.mjs")


def _tag_nonfinite(value):
    """Non-finite floats cannot cross JSON; the peer revives this tagged form."""
    if isinstance(value, float) and not math.isfinite(value):
        return {
            "\u0000n": "NaN" if math.isnan(value) else ("Infinity" if value > 0 else "-Infinity")
        }
    if isinstance(value, dict):
        return {k: _tag_nonfinite(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_tag_nonfinite(v) for v in value]
    return value


class WebCryptoPeer:
    def __init__(self) -> None:
        self._proc = subprocess.Popen(
            ["node", str(PEER)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            encoding="utf-8",
            errors="surrogatepass",
        )

    def call(self, op: str, **args):
        line = json.dumps({"op": op, "args": _tag_nonfinite(args)}, ensure_ascii=True)
        self._proc.stdin.write(line + "\n")
        self._proc.stdin.flush()
        answer = json.loads(self._proc.stdout.readline())
        if "error" in answer:
            raise RuntimeError(f"webcrypto peer {op}: {answer['error']}")
        return answer["ok"]

    def close(self) -> None:
        self._proc.stdin.close()
        self._proc.wait(timeout=10)


@pytest.fixture(scope="session")
def webcrypto():
    if shutil.which("node") is None:
        pytest.skip(
            "node is not installed: install Node.js 20+ (apt-get install nodejs) to run interop"
        )
    peer = WebCryptoPeer()
    yield peer
    peer.close()
