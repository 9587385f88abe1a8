"""A chunk: one piece of a campaign's work (a target, a seed, a budget), run by one
Dask worker, which sends back a small, JSON-ready outcome.

A chunk is ``simkit fuzz`` with an example budget: the runner's search stops after
``examples`` examples (or at ``seconds``, the campaign's time left, whichever comes
first), shrinks a violation within ``shrink_attempts`` and ``shrink_seconds``, and
the outcome carries the counts, the behaviours reached and the failure as its
reproducer's JSON. The seed comes from the campaign's seed and the chunk's index,
so a chunk that ends by its example budget is the same run every time.

Hypothesis also draws constants from the local modules a process has imported, so
a chunk first loads every variant of its campaign, in order: whichever chunks a
worker ran before, it generates from the same pool. A source mutant's chunk runs
in a fresh process on a mutated copy of simkit (``simkit.fuzz.mutants``):
``python -m simkit.campaign.chunk IN OUT`` runs a chunk given as JSON.
"""

import hashlib
import json
import os
import subprocess
import sys
import tempfile
import warnings
from pathlib import Path

import attrs
from hypothesis.errors import HypothesisDeprecationWarning

from simkit.campaign.cluster import LOCAL_STOP, local_begun, local_stop
from simkit.fuzz.mutants import Mutant, mutated_copy
from simkit.fuzz.runner import FuzzResult, fuzz
from simkit.realtime import wall_clock
from simkit.sim.costs import Costs
from simkit.sim.exercise import Exercise
from simkit.sim.variant import HONEST
from simkit.sim.variants import load_variant

CHUNK_EXAMPLES = 10  # two of the runner's alternating chunks: 5 honest, 5 adversary
STOP_CHECK_S = 1.0  # how often a running chunk asks whether the campaign stopped
# a mutant's process may run this much past twice its budget (start-up, the last example,
# which cannot be cut mid-step) before its mutant is judged to hang the world
PROCESS_SLACK_S = 120.0


def chunk_seed(campaign_seed: int, index: int) -> int:
    """Chunk ``index``'s seed: a 32-bit number from the campaign's seed and the index
    (a hash, so neighbouring campaigns share no chunk seeds)."""
    digest = hashlib.sha256(f"simkit-campaign:{campaign_seed}:{index}".encode()).digest()
    return int.from_bytes(digest[:4], "big")


@attrs.frozen
class Chunk:
    index: int
    seed: int
    seconds: float  # wall budget of the search (and of shrinking when none of its own)
    variant: str | None = None  # "module:name" or an absolute "path.py:name"; None: honest
    mutant: Mutant | None = None  # a source mutant, fuzzed on the honest stack it changes
    examples: int | None = CHUNK_EXAMPLES  # None: only ``seconds`` ends the search
    max_steps: int = 25
    shrink_seconds: float | None = 60.0
    shrink_attempts: int | None = 500
    preload: tuple[str, ...] = ()  # the campaign's variants, loaded in order first
    stop: str | None = None  # the Dask Event whose setting stops the chunk early
    release: tuple[str, ...] = attrs.field(default=(), converter=tuple)  # rollout, mix
    base: str | None = None  # a release's old version ("module:name" or a built-in)
    shrink: bool = True  # False: send the failing run back unshrunk (``simkit fuzz``)
    steer: bool = True  # toward where the change departs (docs/variants.md)
    # ``simkit fuzz``'s run of one process, as its first chunk (a built-in version's
    # name each): the previous version and the next, released every third runner chunk
    neighbours: tuple[str, str] | None = None
    # a LocalPool's chunks end their search at the run's deadline (``wall_clock()`` of the
    # process that planned them: one host, one monotonic clock), whenever they started
    deadline: float | None = None

    @property
    def target(self) -> str:
        """What the chunk fuzzes, as reports name it."""
        if self.mutant is not None:
            return self.mutant.name
        return self.variant or HONEST.name

    def to_json(self) -> dict:
        return attrs.asdict(self, recurse=True)

    @classmethod
    def from_json(cls, data: dict) -> "Chunk":
        mutant = data.get("mutant")
        fields = {**data, "mutant": mutant and Mutant(**mutant), "preload": tuple(data["preload"])}
        fields["neighbours"] = data.get("neighbours") and tuple(data["neighbours"])
        return cls(**fields)


def run_chunk(chunk: Chunk) -> dict:
    """The task a Dask worker runs: the chunk's outcome, with the worker named."""
    # Dask's own threads in the worker draw from the global ``random`` while a chunk
    # draws an example, which Hypothesis takes for a strategy using it; simkit never
    # does (ARCHITECTURE.md, determinism rule 1), and no draw depends on it.
    warnings.filterwarnings(
        "ignore", "Do not use the `random` module", HypothesisDeprecationWarning
    )
    if chunk.mutant is not None:
        outcome = _in_mutated_copy(chunk)
    else:
        outcome = fuzz_chunk(chunk, _stopper(chunk.stop))
    return {**outcome, "worker": _worker_name()}


def fuzz_chunk(chunk: Chunk, progress=lambda result: None) -> dict:
    """Fuzz the chunk's variant in this process (a mutant's chunk: in the mutated
    copy's process); its outcome (``progress`` as in ``fuzz``)."""
    for ref in chunk.preload:
        load_variant(ref)
    variant = load_variant(chunk.variant) if chunk.variant else HONEST
    started = wall_clock()
    seconds = chunk.seconds if chunk.deadline is None else min(chunk.seconds,
                                                              chunk.deadline - started)  # fmt: skip
    result = fuzz(
        variant, seconds=max(seconds, 0.0), seed=chunk.seed, max_steps=chunk.max_steps,
        examples=chunk.examples, shrink_seconds=chunk.shrink_seconds,
        shrink_attempts=chunk.shrink_attempts, variant_ref=chunk.variant, progress=progress,
        release=frozenset(chunk.release), base=chunk.base and load_variant(chunk.base),
        base_ref=chunk.base, shrink=chunk.shrink, steer=chunk.steer,
        neighbours=chunk.neighbours and tuple(load_variant(n) for n in chunk.neighbours),
    )  # fmt: skip
    return {**outcome(chunk, result), "started": started}


def outcome(chunk: Chunk, result: FuzzResult) -> dict:
    """What a chunk sends back: counts, behaviours reached, and any failure."""
    if result.failure is not None:
        ended = "violation"
    elif result.interrupted:
        ended = "stopped"
    else:
        ended = "examples" if result.examples == chunk.examples else "time"
    repro = result.reproducer
    return {
        "index": chunk.index,
        "target": chunk.target,
        "seed": chunk.seed,
        "ended": ended,
        "examples": result.examples,
        "steps": result.steps,
        "seconds": result.seconds,
        "invariants": result.invariants,
        "found_after": result.found_after,
        "first_steps": result.first_steps,
        "shrink_attempts": result.shrink_attempts,
        "shrinking": result.shrinking,
        "failure": result.failure,
        "attribution": result.attribution and result.attribution.to_json(),
        "reproducer": repro and repro.to_json(),
        # failures the base has too (present without the change): the base's run each
        "base_findings": [
            {
                "failure": f.failure,
                "reproducer": f.reproducer.to_json(),
                "attribution": f.attribution.to_json(),
                "found_after": f.found_after,
            }
            for f in result.base_findings
        ],
        "error": result.error,
        "coverage": dict(sorted(result.coverage.counts.items())),
        "worlds": result.coverage.worlds,
        "exercise": result.exercise.to_json(),
        "costs": result.costs.state(),
    }


def _stopper(event_name: str | None):
    """A ``progress`` callback that stops the chunk (as Ctrl-C would) once the
    campaign sets its stop event, asking the scheduler at most once a second."""
    if event_name is None:
        return lambda result: None
    if event_name == LOCAL_STOP:  # a process of a LocalPool: the event it was handed
        event, begun, counted = local_stop(), local_begun(), [0, 0]

        def progress(result) -> None:
            if begun is not None:  # the pool's count, for the run's progress line
                with begun.get_lock():
                    begun[0] += result.examples - counted[0]
                    begun[1] += result.steps - counted[1]
                counted[:] = result.examples, result.steps
            _stop_if(event.is_set())

        return progress
    from distributed import Event

    event, asked = Event(event_name), [-STOP_CHECK_S]

    def progress(result) -> None:
        now = wall_clock()
        if now - asked[0] >= STOP_CHECK_S:
            asked[0] = now
            if event.is_set():
                raise KeyboardInterrupt

    return progress


def _stop_if(stopped: bool) -> None:
    if stopped:
        raise KeyboardInterrupt


def _worker_name() -> str:
    if "distributed" not in sys.modules:  # a LocalPool process: importing Dask to learn
        return f"pid {os.getpid()}"  # that costs a fifth of a second per finding
    from distributed import get_worker

    try:
        return str(get_worker().address)
    except ValueError:  # not on a Dask worker (a chunk run in this process)
        return f"pid {os.getpid()}"


def _in_mutated_copy(chunk: Chunk) -> dict:
    """Run a source mutant's chunk in a fresh process that imports the mutated copy. A
    process that runs far past its budget (the mutant hangs the world: a step that never
    returns) is stopped, and one that dies without an outcome (the mutated code cannot
    even start, the OOM killer) is reported: each is the mutant's verdict ("timed out",
    "crashed"), never the campaign's end."""
    with tempfile.TemporaryDirectory(prefix="simkit-mutant-") as tmp:
        root = mutated_copy(chunk.mutant, Path(tmp))
        (Path(tmp) / "chunk.json").write_text(json.dumps(chunk.to_json()), encoding="utf-8")
        budget = chunk.seconds + ((chunk.shrink_seconds or chunk.seconds) if chunk.shrink else 0)
        limit = 2 * budget + PROCESS_SLACK_S
        try:
            done = subprocess.run(
                [sys.executable, "-m", "simkit.campaign.chunk", "chunk.json", "outcome.json"],
                cwd=tmp,
                env={
                    **os.environ,
                    "PYTHONPATH": os.pathsep.join([str(root), os.environ.get("PYTHONPATH", "")]),
                },
                capture_output=True,
                text=True,
                timeout=limit,
            )
        except subprocess.TimeoutExpired:
            why = f"its process ran past {limit:g} s (a budget of {budget:g} s) and was stopped"
            return ended(chunk, "timed out", why)
        if done.returncode != 0:
            killed = " (killed: out of memory?)" if done.returncode == -9 else ""
            why = f"its process exited {done.returncode}{killed}: {done.stderr[-1500:]}"
            return ended(chunk, "crashed", why)
        return json.loads((Path(tmp) / "outcome.json").read_text(encoding="utf-8"))


def ended(chunk: Chunk, how: str, why: str) -> dict:
    """The outcome of a chunk whose process gave none (``how``: "timed out", "crashed")."""
    return {
        "index": chunk.index, "target": chunk.target, "seed": chunk.seed, "ended": how,
        "why": why, "examples": 0, "steps": 0, "seconds": 0.0, "invariants": [],
        "found_after": None, "first_steps": None, "shrink_attempts": 0, "shrinking": None,
        "failure": None, "attribution": None, "reproducer": None, "base_findings": [],
        "error": None, "coverage": {}, "worlds": 0, "exercise": Exercise().to_json(),
        "costs": Costs().state(),
    }  # fmt: skip


def _main(source: str, target: str) -> None:
    chunk = Chunk.from_json(json.loads(Path(source).read_text(encoding="utf-8")))
    Path(target).write_text(json.dumps(fuzz_chunk(chunk)), encoding="utf-8")


if __name__ == "__main__":
    _main(*sys.argv[1:3])
