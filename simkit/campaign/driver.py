"""The campaign loop: keep every worker busy with chunks until the budget is spent,
collect what each chunk sends back, deduplicate the findings and write each one's
reproducer as it arrives.

There is one chunk in flight per worker thread, no queue: a chunk submitted when a
worker frees up starts at once, so its wall budget (the campaign's time left) ends
with the campaign. Dask reruns the chunk of a worker that dies on another worker;
a chunk whose workers keep dying (``distributed.scheduler.allowed-failures``) is
reported lost, as is a mutant chunk whose process died. Known findings
(``simkit.fuzz.corpus``) are replayed first.
"""

import itertools
from collections.abc import Callable
from pathlib import Path

import attrs

from simkit.campaign.chunk import CHUNK_EXAMPLES, Chunk, chunk_seed, run_chunk
from simkit.campaign.cluster import LOCAL_STOP, DaskCluster, LocalPool
from simkit.campaign.findings import Finding, Findings, key_of
from simkit.ctrl_c import CtrlC, deferred_ctrl_c
from simkit.fuzz import corpus
from simkit.fuzz.attribution import STACK
from simkit.fuzz.mutants import Mutant
from simkit.fuzz.reproducer import Reproducer, replay
from simkit.realtime import wall_clock
from simkit.sim.behaviours import Coverage
from simkit.sim.exercise import Exercise
from simkit.sim.variant import HONEST

TICK_S = 0.5  # how often the loop wakes to report progress and refill workers
_NUMBERS = itertools.count()  # campaigns run by this process, to name their stop events


@attrs.frozen
class Plan:
    """What a campaign runs. ``seconds`` is the whole campaign's wall budget or, with
    ``mutants``, each mutant's; ``chunks`` stops it after that many chunks."""

    seconds: float
    seed: int = 0
    variants: tuple[str | None, ...] = (None,)  # variant refs; None: the honest stack
    mutants: tuple[str | Mutant, ...] = ()  # a mutation campaign: variant refs or mutants
    chunk_examples: int | None = CHUNK_EXAMPLES
    chunks: int | None = None
    max_steps: int = 25
    shrink_seconds: float = 60.0
    shrink_attempts: int = 500
    stop_on_failure: bool = False
    corpus: Path | None = None  # known findings: replayed first, new findings added
    release: tuple[str, ...] = ()  # "rollout" and/or "mix": a release (docs/releases.md)
    base: str | None = None  # the version a release starts on; None: the honest stack
    # every third chunk: a release instead, in turn from the first version to this one
    # and from this one to the second (a source mutant's chunk: every third runner chunk)
    neighbours: tuple[str, str] | None = None
    shrink: bool = True  # False: chunks send their failing run back unshrunk
    steer: bool = True  # chunks steer toward their change (docs/variants.md)
    # chunk 0 is the run one process would make: the plan's own seed, no example budget
    # (``simkit fuzz --workers N`` finds at least what ``--workers 1`` would, as early;
    # the other workers search chunks beside it)
    run_first: bool = False
    deadline: float | None = None  # a LocalPool's: every chunk's search ends at it (Chunk)

    def chunk(self, index: int, remaining: float, stop: str) -> Chunk | None:
        """Chunk ``index``, or None when the campaign has no more."""
        if self.chunks is not None and index >= self.chunks:
            return None
        common = {
            "index": index, "max_steps": self.max_steps,
            "seed": chunk_seed(self.seed, index),
            "shrink_seconds": self.shrink_seconds, "shrink_attempts": self.shrink_attempts,
            "examples": self.chunk_examples, "stop": stop, "release": self.release,
            "base": self.base, "shrink": self.shrink, "steer": self.steer,
            "deadline": self.deadline,
        }  # fmt: skip
        if index == 0 and self.run_first:
            common.update(seed=self.seed, examples=None, neighbours=self.neighbours)
        variants = [m for m in self.mutants if isinstance(m, str)] + [v for v in self.variants if v]
        common["preload"] = tuple(variants)
        if self.mutants:
            if index >= len(self.mutants):
                return None
            target = self.mutants[index]
            if isinstance(target, Mutant):  # a fresh process of its own: nothing to preload
                variant = self.variants[0] if self.variants else None  # simkit mutate --variant
                # the mutated protocol is fuzzed as ``simkit fuzz`` fuzzes it: released from
                # the previous version and into the next one every third runner chunk
                neighbours = self.neighbours if variant is None else None
                return Chunk(
                    seconds=self.seconds, mutant=target, variant=variant,
                    **{**common, "preload": (), "neighbours": neighbours},
                )  # fmt: skip
            return Chunk(seconds=self.seconds, variant=target, **common)
        if remaining <= 0:
            return None
        variant = self.variants[index % len(self.variants)]
        if self.neighbours is not None and index % 3 == 2:
            common.update(release=("mix", "rollout"), base=self.neighbours[0])
            if index % 6 == 5:
                variant, common["base"] = self.neighbours[1], variant
        return Chunk(seconds=remaining, variant=variant, **common)


@attrs.define
class Campaign:
    """A campaign's state as it runs, and its result at the end."""

    plan: Plan
    scheduler: str
    seconds: float = 0.0
    workers: dict[str, int] = attrs.Factory(dict)  # the workers now: address -> threads
    seen: list[str] = attrs.Factory(list)  # every worker that took part
    running: int = 0
    outcomes: list[dict] = attrs.Factory(list)  # each chunk's, in the order they ended
    lost: list[dict] = attrs.Factory(list)  # chunks whose workers kept dying
    known: list[dict] = attrs.Factory(list)  # known findings replayed first
    findings: Findings = attrs.Factory(Findings)
    # failures met under a change that the base has too: the stack's, not the change's
    base_findings: Findings = attrs.Factory(Findings)
    coverage: Coverage = attrs.Factory(Coverage)
    reached: list[tuple[float, int]] = attrs.Factory(list)  # behaviours reached over time
    interrupted: bool = False
    stopped: str | None = None  # why chunks were stopped early: "finding", "Ctrl-C"
    exercise: dict[str, Exercise] = attrs.Factory(dict)  # target -> how often its change ran

    @property
    def unexercised(self) -> list[str]:
        """Changes asked for (``--variant``) that never made a difference in any chunk:
        no verdict on them."""
        asked = {v for v in self.plan.variants if v is not None}
        return [t for t, e in sorted(self.exercise.items()) if t in asked and e.verdict]

    @property
    def examples(self) -> int:
        return sum(o["examples"] for o in self.outcomes)

    @property
    def steps(self) -> int:
        return sum(o["steps"] for o in self.outcomes)

    @property
    def lost_workers(self) -> list[str]:
        return [w for w in self.seen if w not in self.workers]


def run_campaign(
    plan: Plan,
    client,
    progress: Callable[[Campaign], None] = lambda campaign: None,
    found: Callable[[Campaign, Finding], None] = lambda campaign, finding: None,
) -> Campaign:
    """Run ``plan`` on the cluster of ``client`` (a Dask client, or a ``LocalPool``).
    ``progress`` is called about twice a second, ``found`` with each new finding (its
    reproducer already written to the corpus, when the plan has one)."""
    cluster = client if isinstance(client, LocalPool | DaskCluster) else DaskCluster(client)
    start = wall_clock()
    campaign = Campaign(plan, cluster.address)
    name = LOCAL_STOP if cluster.local else f"simkit-campaign-stop-{id(cluster)}-{next(_NUMBERS)}"
    stop = cluster.stop_event(name)

    def now() -> float:
        return wall_clock() - start

    def record(finding: Finding, base: bool = False) -> None:
        kept = (campaign.base_findings if base else campaign.findings).add(finding)
        if kept is not None and kept.reproducer is not None and plan.corpus and not plan.mutants:
            repro = Reproducer.from_json(kept.reproducer)
            kept.path = str(corpus.add(plan.corpus, repro, kept.key.stem))
        if base:
            return  # the search goes on: it is looking for the change's own
        if kept is finding:
            found(campaign, finding)
            if plan.stop_on_failure and not campaign.stopped:
                campaign.stopped = "finding"
                stop.set()

    for known in _known(plan):
        campaign.known.append(known)
        if known["failure"] is not None:
            record(known.pop("finding"))
    pending: dict[object, Chunk] = {}
    index = 0
    try:
        with deferred_ctrl_c(CtrlC()) as ctrl_c:
            while True:
                _refresh_workers(campaign, cluster)
                slots = max(1, sum(campaign.workers.values()))
                while not campaign.stopped and len(pending) < slots:
                    chunk = plan.chunk(index, plan.seconds - now(), name)
                    if chunk is None:
                        break
                    pending[cluster.submit(run_chunk, chunk)] = chunk
                    index += 1
                if not pending:
                    break
                cluster.wait_any(pending, TICK_S)
                if ctrl_c.pressed:  # raised here, not inside a Dask call (simkit.ctrl_c)
                    raise KeyboardInterrupt
                for future in [f for f in pending if f.done()]:
                    chunk = pending.pop(future)
                    _collect(campaign, chunk, future, now(), record, cluster.lost)
                campaign.running, campaign.seconds = len(pending), now()
                progress(campaign)
    except KeyboardInterrupt:
        campaign.interrupted, campaign.stopped = True, "Ctrl-C"
        stop.set()
        for future, chunk in pending.items():
            _collect(campaign, chunk, future, now(), record, cluster.lost, wait=True)
    finally:
        stop.set()  # chunks still running (after an error) stop at their next example
        for future in pending:
            future.cancel()
    campaign.running, campaign.seconds = 0, now()
    return campaign


def _known(plan: Plan) -> list[dict]:
    """Replay the known findings of the campaign's variants (not of mutants: a
    mutant's finding is no bug of the protocol)."""
    if plan.corpus is None or plan.mutants:
        return []
    out = []
    for variant in plan.variants:
        for known in corpus.replayed(plan.corpus, variant):
            entry = {"path": str(known.path), "target": variant or HONEST.name,
                     "failure": known.failure}  # fmt: skip
            if known.failure is not None:
                repro = attrs.evolve(known.reproducer, violations=known.violations).to_json()
                key = key_of(entry["target"], known.failure, repro)
                entry["finding"] = Finding(key, known.failure, repro, None, 0.0, path=entry["path"])
            out.append(entry)
    return out


def _refresh_workers(campaign: Campaign, cluster) -> None:
    campaign.workers = cluster.workers()
    campaign.seen += [w for w in campaign.workers if w not in campaign.seen]


def fails_honestly(reproducer: dict, source: bool) -> bool:
    """Whether a mutant's failing run fails without the mutation as well (replayed here,
    on the code this driver runs: the base): then it shows a fault of the stack or the
    harness, present without the change, and kills no mutant. A source mutant's base
    is the code unmutated, with the variant it was fuzzed under (``mutate --variant``);
    a planted variant's is the protocol as specified."""
    repro = Reproducer.from_json(reproducer)
    if not source:
        repro = attrs.evolve(repro, variant=None)
    try:
        return bool(replay(repro).violations)
    except KeyboardInterrupt:
        raise
    except BaseException:  # the base crashes on it (a Trio exception group included):
        return True  # a fault of the stack all the same, never simkit's end


def _collect(campaign: Campaign, chunk: Chunk, future, at: float, record, lost, wait=False):
    """Take in one finished chunk's outcome: counts, behaviours, any failure (``lost``:
    the errors that say its worker died)."""
    try:
        outcome = future.result() if wait or future.done() else None
    except lost as exc:
        campaign.lost.append({"index": chunk.index, "target": chunk.target, "why": str(exc)})
        return
    if outcome is None:
        return
    outcome["at"] = at
    if campaign.plan.mutants and outcome["reproducer"] is not None:
        outcome["honest_fails"] = fails_honestly(outcome["reproducer"], chunk.mutant is not None)
    campaign.outcomes.append(outcome)
    campaign.coverage.counts.update(outcome["coverage"])
    campaign.coverage.worlds += outcome.get("worlds", 0)
    if not campaign.plan.mutants:
        ran = Exercise.from_json(outcome["exercise"])
        campaign.exercise.setdefault(outcome["target"], Exercise()).merge(ran)
    campaign.reached.append((at, len(campaign.coverage.reached)))
    for base in outcome.get("base_findings", ()):
        if campaign.plan.variants == (None,):  # a campaign of the protocol as specified:
            base["attribution"]["verdict"] = STACK  # its neighbouring versions' chunks
            key = key_of(HONEST.name, base["failure"], base["reproducer"])  # find its own
            record(Finding(key, base["failure"], base["reproducer"], outcome["index"], at,
                           base["found_after"], attribution=base["attribution"]))  # fmt: skip
            continue
        target = base["attribution"]["base"]
        key = key_of(target, base["failure"], base["reproducer"])
        found = Finding(key, base["failure"], base["reproducer"], outcome["index"], at,
                        base["found_after"], attribution=base["attribution"])  # fmt: skip
        record(found, base=True)
    if outcome["failure"] is not None:
        key = key_of(outcome["target"], outcome["failure"], outcome["reproducer"])
        record(
            Finding(
                key, outcome["failure"], outcome["reproducer"], outcome["index"], at,
                outcome["found_after"], outcome["first_steps"], outcome["shrinking"],
                attribution=outcome.get("attribution"),
            )
        )  # fmt: skip
