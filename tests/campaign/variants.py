"""Variants and mutants for the campaign tests: the protocol as specified under
another name and a docstring changed (mutants no invariant can kill), a device that
crashes and a client that sends graph keys unwrapped (mutants the very first example
of any seed kills: Hypothesis starts every run with its simplest example), and a
relay whose worker process dies once."""

import os
import signal
from pathlib import Path

from simkit.fuzz.mutants import Mutant
from simkit.relay import Relay
from simkit.sim.variant import Variant
from tests.fuzz.crash_variants import a1_loop_raises

KILL_DIR = "SIMKIT_TEST_KILL_DIR"  # set before the test cluster starts: workers inherit it


class DiesOnceArmed(Relay):
    """Kills its own process at its first request while ``armed`` exists in the folder
    KILL_DIR names; the first to rename it to ``fired`` (recording its pid) dies."""

    def handle(self, request):
        folder = Path(os.environ[KILL_DIR])
        try:
            (folder / "armed").rename(folder / "fired")
        except FileNotFoundError:
            return super().handle(request)
        (folder / "pid").write_text(str(os.getpid()), encoding="utf-8")
        os.kill(os.getpid(), signal.SIGKILL)
        raise AssertionError("unreachable: the process was killed")


same_as_honest = Variant("same-as-honest", "a relay subclass that changes nothing", relay=Relay)
dies_once = Variant(
    "dies-once", "the worker process dies at its first request", relay=DiesOnceArmed
)

VARIANTS = [a1_loop_raises, same_as_honest]

SOURCE = [
    Mutant(
        "graph-key-sent-unwrapped",
        "client/keyops.py",
        'wraps[entry["deviceId"]] = wrap_graph_key(key, entry["pubJwk"], entropy=device.entropy)',
        'wraps[entry["deviceId"]] = __import__("simkit.protocol.b64").protocol.b64'
        ".b64url_encode(key)",
        "Key wrapping: a new epoch's key reaches each device wrapped to its public key",
    ),
    Mutant(
        "docstring-only",
        "relay/records.py",
        '"""Push rule 1: a rev more than maxRevSkewMs ahead of the relay\'s clock."""',
        '"""Push rule 1: a rev too far ahead of the relay\'s clock."""',
        "none: an equivalent mutant (it changes a docstring), which no test can kill",
    ),
]
