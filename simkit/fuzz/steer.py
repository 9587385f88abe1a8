"""Steering a fuzz run toward the change it fuzzes (docs/variants.md, "Steering").

A change's first departure from the spec is rarely its interesting part: what follows
is. Once a run has seen the change depart, steering favours what made it depart and
explores what comes after:

- **follow-ups**: an example that departed is kept (its world and its steps up to the
  step that first departed, scored by how often it departed and how many behaviours
  it reached afterwards); half of the later examples start by replaying one of them,
  chosen in proportion to its score, and go on with fresh steps, so the search spends
  its time on the change's consequences, not on finding it again;
- **swarm weights**: each rule an example may leave out (``params.SWARM``) is drawn
  with the odds that examples with it departed more often than examples without it.

Until the change first departs nothing is steered: every draw is the unsteered run's,
so a steered run and an unsteered one with the same seed agree up to that moment.
Everything steering decides is drawn by Hypothesis from the chunk's seed and what
earlier examples of the same run found, so a run is repeatable from its seed; a
reproducer holds the whole step list (the replayed prefix included) and replays
without any of this.
"""

from collections import Counter

import attrs
from hypothesis import strategies as st

from simkit.fuzz.actions import Step
from simkit.fuzz.params import SWARM, WorldParams

POOL = 16  # departing examples kept per machine
MAX_PREFIX = 60  # steps a kept example's replayed prefix may have
MAX_DEPARTURES_SCORED = 20  # departures an example is credited with, at most
FLOOR, CEILING = 0.15, 0.85  # the odds a steered swarm gives a rule


@attrs.frozen
class Kept:
    """An example that departed: its world, its steps up to the departure, its score."""

    params: WorldParams
    prefix: tuple[Step, ...]
    score: int


class Steering:
    """What a fuzz run learned of where its change departs, shared by its machines."""

    def __init__(self) -> None:
        self.pools: dict[str, list[Kept]] = {}  # machine name -> kept examples
        self.examples: Counter = Counter()  # (rule, on) -> examples
        self.departed: Counter = Counter()  # (rule, on) -> examples that departed
        self.follow_ups = 0  # examples that started from a kept one
        self._learned: list[tuple] = []  # what this chunk's examples found, for ``commit``

    def commit(self) -> None:
        """Take in what the last chunk's examples found. Only between chunks: within
        one, Hypothesis may draw an example's choices again and needs the same draws."""
        learned, self._learned = self._learned, []
        for args in learned:
            self._learn(*args)

    @property
    def learned(self) -> bool:
        """Whether the change has departed yet (nothing is steered before)."""
        return any(self.departed.values())

    def weights(self) -> dict[str, float] | None:
        """Each swarm rule's odds of being on, or None (not steered yet)."""
        if not self.learned:
            return None
        odds = {}
        for rule in SWARM:
            on = (self.departed[rule, True] + 1) / (self.examples[rule, True] + 2)
            off = (self.departed[rule, False] + 1) / (self.examples[rule, False] + 2)
            odds[rule] = min(CEILING, max(FLOOR, on / (on + off)))
        return odds

    def follow_up(self, data, machine: str) -> Kept | None:
        """Draw whether this example follows up a kept one, and which (None: a new one)."""
        pool = self.pools.get(machine)
        if not pool or not data.draw(st.booleans(), label="follow up a departure"):
            return None
        total = sum(k.score for k in pool)
        ticket = data.draw(st.integers(0, total - 1), label="which departure")
        for kept in pool:
            ticket -= kept.score
            if ticket < 0:
                self.follow_ups += 1
                return kept
        raise AssertionError("unreachable: the tickets cover the pool")

    def learn(self, machine: str, params: WorldParams, steps, first: int | None, ran) -> None:
        """One example ended: ``first`` is the step whose departure came first after
        what it replayed (-1: during setup; None: it never departed); ``ran``: its
        world's ``Exercise``. Taken in at the next ``commit``."""
        self._learned.append((machine, params, tuple(steps), first, ran))

    def _learn(self, machine: str, params: WorldParams, steps, first: int | None, ran) -> None:
        departed = first is not None
        for rule in SWARM:
            on = params.enabled(rule)
            self.examples[rule, on] += 1
            self.departed[rule, on] += departed
        if not departed or first + 1 > MAX_PREFIX:
            return
        score = min(sum(ran.departures.values()), MAX_DEPARTURES_SCORED) + ran.after
        pool = self.pools.setdefault(machine, [])
        pool.append(Kept(params, tuple(steps[: first + 1]), max(1, score)))
        if len(pool) > POOL:
            pool.remove(min(pool, key=lambda k: k.score))
