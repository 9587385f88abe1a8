"""What a run can claim about each invariant: held, broken, or not checked.

A verdict never claims more than was checked: an invariant that did not run (it does
not apply to this relay, the scenario did not ask for it, or a replay stopped before
the quiescence check it needs) is "not checked", never a pass.
"""

import attrs

from simkit.invariants import ALL, Invariant, Monitor


@attrs.frozen
class InvariantCheck:
    """One invariant's outcome; ``note`` says why it was not checked, or how far it was."""

    name: str
    checked: bool
    violations: tuple[str, ...] = ()
    note: str = ""

    @property
    def passed(self) -> bool | None:
        """True or False when it ran; None when it was not checked."""
        return not self.violations if self.checked else None

    @property
    def status(self) -> str:
        return {True: "pass", False: "FAIL", None: "not checked"}[self.passed]

    def to_json(self) -> dict:
        return {
            "name": self.name,
            "passed": self.passed,
            "status": self.status,
            "violations": list(self.violations),
            "note": self.note,
        }


def checks_during_run(invariant: Invariant) -> bool:
    """Whether the invariant checks after every step, not only at quiescence: its
    ``step`` does, or its ``observe`` reports what it reads (``judges_events``)."""
    return type(invariant).step is not Invariant.step or invariant.judges_events


MODELS = ("relay-model", "device-model")
UNSETTLED = (
    "held in the state the drain ended in; the world never settled, so this judges that "
    'state, not a finished one (docs/fuzzing.md, "Quiescence")'
)


def verdicts(
    monitor: Monitor,
    violations,
    *,
    listed: tuple[str, ...] | None = None,
    stopped: str | None = None,
    world=None,
) -> tuple[InvariantCheck, ...]:
    """Every invariant simkit has, in its fixed order. ``listed``: the only ones the
    run was asked for; ``stopped``: the run ended early (``"after step 3"``), so an
    invariant that only runs at quiescence was not checked. An invariant the monitor
    left out otherwise is one that needs an honest relay. ``world``: the run's world,
    whose variant's changed rules the models leave to the other invariants (their
    note says which)."""
    ran = {inv.name: inv for inv in monitor.invariants}
    judged = _left_to_others(world)
    unsettled = world is not None and world.drained and world.settled_at is None
    out = []
    for cls in ALL:
        inv = ran.get(cls.name)
        found = tuple(str(v) for v in violations if v.invariant == cls.name)
        if inv is not None and (found or stopped is None):
            note = judged if cls.name in MODELS else ""
            if unsettled and not found and not checks_during_run(inv):
                note = UNSETTLED
            out.append(InvariantCheck(cls.name, True, found, note))
        elif inv is not None and checks_during_run(inv):
            out.append(InvariantCheck(cls.name, True, note=f"held until the run stopped {stopped}"))
        elif inv is not None:
            note = f"runs only at quiescence; the run stopped {stopped}"
            out.append(InvariantCheck(cls.name, False, note=note))
        elif listed is not None and cls.name not in listed:
            out.append(InvariantCheck(cls.name, False, note="not listed in expect.invariants"))
        else:
            note = f"applies only with an honest relay and no thief; {NOT_HONEST}"
            out.append(InvariantCheck(cls.name, False, note=note))
    return tuple(out)


NOT_HONEST = "this run had a malicious relay or a stolen device"


def _left_to_others(world) -> str:
    """The models' note in a run of a variant that changes rules on purpose: which
    rules, how often the change departed in each (followed, not reported)."""
    if world is None:
        return ""
    exercise = world.exercise()
    if not exercise.declared:
        return ""
    counts = ", ".join(f"{rule}: {exercise.departures[rule]}" for rule in exercise.declared)
    stopped = "".join(f"; stopped judging {what}" for what in sorted(exercise.stopped))
    return (
        f"judges every rule but those the variant changes ({', '.join(exercise.declared)}): "
        f"their departures are followed and left to the other invariants (departures: "
        f"{counts}){stopped}"
    )


def first_violation(violations) -> dict | None:
    """The earliest violation (by trace position) as the report's violation section
    reads it, or None."""
    if not violations:
        return None
    first = min(violations, key=lambda v: (v.trace_seq is None, v.trace_seq or 0))
    return {**first.to_json(), "text": str(first)}
