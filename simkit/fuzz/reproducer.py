"""Reproducers: a failing fuzz run as a self-contained JSON file, and its replay.

The file holds the simkit version, the machine, the world parameters (seed
included), the variant, and the step list. A variant given as a file path is
stored relative to the reproducer's folder (a module name as it is, resolved from
the directory replay runs in), so the reproducer replays from anywhere while the
two files stay side by side.

Replaying applies the same steps to the same world, checking the invariants after
each step and at quiescence, so it fails at the same place with the same trace
hash every time.
"""

import json
from pathlib import Path

import attrs

from simkit import __version__
from simkit.errors import InputError
from simkit.fuzz.actions import Invite, Step, StepError, parse_step, turns_malicious
from simkit.fuzz.driver import WorldDriver
from simkit.fuzz.steps import WorldParams, apply_step
from simkit.invariants import Monitor, Violation
from simkit.invariants.verdicts import first_violation, verdicts
from simkit.sim.variant import HONEST
from simkit.sim.variants import load_variant, named, ref_relative_to, ref_resolved_from

FORMAT = 1  # the reproducer file format this simkit writes and reads
KEYS = ("simkit", "format", "machine", "variant", "base", "world", "steps", "violations",
        "trace_hash", "fuzz_seed", "found")  # fmt: skip
"""A reproducer's keys (``found``: a person's note on what it found; ``base``: a
release's old version, present only when the world ran a rollout; ``fuzz_seed``: the
seed of the fuzz run that found it, ``--seed`` to run that search again)."""


class ReproducerError(InputError):
    """A reproducer file is missing, unreadable, or breaks its schema."""


def parse_steps(steps) -> tuple[Step, ...]:
    """A step list (steps or their JSON objects), each checked (``parse_step``)."""
    if not isinstance(steps, list | tuple):
        raise StepError(f'"steps" must be a list of steps, not {type(steps).__name__}')
    return tuple(parse_step(step, f"step {index}") for index, step in enumerate(steps))


def check_actors(params: WorldParams, steps: tuple[Step, ...]) -> None:
    """Every device and member a step names exists by then: the fleet's, or one a
    ``link``, ``recover`` or ``invite`` step brought in before (an invite brings its
    member too). A step naming a party that does not exist would do nothing, and a
    replay would read as "no violation"."""
    spec = params.spec()
    alive = {d for ids in spec.devices.values() for d in ids}
    members = {*spec.devices, *spec.outsiders}
    for index, step in enumerate(steps):
        member = step.named_member()
        invite = isinstance(getattr(step, "ceremony", step), Invite)
        if member is not None and not invite and member not in members:
            raise StepError(
                f"step {index} ({step.RULE}): member {member!r} does not exist then (the "
                f"members: {', '.join(sorted(members))}; an invite step brings in another)"
            )
        if invite:
            members.add(member)
        brought = step.creates()
        for device in step.actors():
            if device not in alive and device != brought:
                raise StepError(
                    f"step {index} ({step.RULE}): device {device!r} does not exist then "
                    f"(the fleet: {', '.join(sorted(alive))}; a link, recover or invite "
                    "step brings in another)"
                )
        if brought:
            alive.add(brought)


def _version(text: str) -> tuple[int, ...] | None:
    parts = text.split(".") if isinstance(text, str) else []
    return tuple(int(p) for p in parts) if parts and all(p.isdecimal() for p in parts) else None


def _check_schema(data) -> None:
    """The file's shape, before any field is read: an object, known keys, a format and
    a simkit version this simkit reads."""
    if not isinstance(data, dict):
        raise ReproducerError(f"a reproducer is a JSON object, not a {type(data).__name__}")
    unknown = sorted(set(data) - set(KEYS))
    if unknown:
        raise ReproducerError(f"unknown key {unknown[0]!r} (a reproducer has: {', '.join(KEYS)})")
    for key in ("machine", "world", "steps"):
        if key not in data:
            raise ReproducerError(f"missing key {key!r}")
    if data.get("format", FORMAT) != FORMAT:
        raise ReproducerError(
            f"format {data['format']!r}: this simkit reads format {FORMAT} "
            "(a newer simkit wrote it?)"
        )
    written = data.get("simkit", __version__)
    version = _version(written)
    if version is None:
        raise ReproducerError(f'"simkit" must be a version like "{__version__}", not {written!r}')
    if version > _version(__version__):
        raise ReproducerError(f"written by simkit {written}, newer than this simkit {__version__}")
    if data["machine"] not in ("honest", "adversary"):
        raise ReproducerError(f'"machine" must be "honest" or "adversary", not {data["machine"]!r}')
    if not isinstance(data["world"], dict):
        raise ReproducerError(f'"world" must be an object, not {data["world"]!r}')
    for key in ("variant", "base"):
        ref = data.get(key)
        if ref is not None and (not isinstance(ref, str) or not (":" in ref or ref in named())):
            raise ReproducerError(
                f'"{key}" must be null, "module:name" or a built-in version '
                f"({', '.join(named())}), not {ref!r}"
            )
    if (data.get("base") is None) != (data["world"].get("rollout") is None):
        raise ReproducerError(
            'a release needs both "base" (the version it starts on; "honest" for the protocol '
            "as specified) and world.rollout (who starts on the new version); a world of one "
            "version has neither"
        )
    recorded = data.get("trace_hash")
    if recorded is not None and not (isinstance(recorded, str) and len(recorded) == 64):
        raise ReproducerError(
            f'"trace_hash" must be null or a SHA-256 hex digest, not {recorded!r}'
        )
    if not isinstance(data.get("violations", []), list):
        raise ReproducerError('"violations" must be a list')
    run_seed = data.get("fuzz_seed")
    if run_seed is not None and (
        isinstance(run_seed, bool) or not isinstance(run_seed, int) or run_seed < 0
    ):
        raise ReproducerError(f'"fuzz_seed" must be null or a whole number >= 0, not {run_seed!r}')


@attrs.frozen
class Reproducer:
    machine: str  # "honest" | "adversary"
    params: WorldParams
    steps: tuple[Step, ...] = attrs.field(converter=parse_steps)
    variant: str | None = None  # "module:name" or "path/to/file.py:name"
    violations: tuple[dict, ...] = ()
    base: str | None = None  # a release's old version (its new one: ``variant``)
    trace_hash: str | None = None
    simkit: str = __version__
    origin: str | None = attrs.field(default=None, eq=False)  # the file it was loaded from
    fuzz_seed: int | None = attrs.field(default=None, eq=False)  # the search that found it

    def to_json(self) -> dict:
        return {
            "simkit": self.simkit,
            "format": FORMAT,
            "machine": self.machine,
            "variant": self.variant,
            **({} if self.base is None else {"base": self.base}),
            "world": self.params.to_json(),
            "steps": [step.to_json() for step in self.steps],
            "violations": list(self.violations),
            "trace_hash": self.trace_hash,
            **({} if self.fuzz_seed is None else {"fuzz_seed": self.fuzz_seed}),
        }

    def write(self, path: str | Path) -> None:
        data = self.to_json()
        for key in ("variant", "base"):
            if data.get(key):
                data[key] = ref_relative_to(data[key], Path(path).parent)
        Path(path).write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")

    @classmethod
    def load(cls, path: str | Path) -> "Reproducer":
        try:
            data = json.loads(Path(path).read_text(encoding="utf-8"))
        except OSError as exc:
            raise ReproducerError(f"{path}: cannot read: {exc.strerror}") from None
        except ValueError as exc:
            raise ReproducerError(f"{path}: not JSON: {exc}") from None
        try:
            return cls.from_json(data, Path(path).parent, origin=str(path))
        except InputError as exc:  # the schema, a step, a world parameter
            raise ReproducerError(f"{path}: {exc}") from None

    @classmethod
    def from_json(
        cls, data: dict, folder: str | Path = ".", origin: str | None = None
    ) -> "Reproducer":
        """The reproducer ``data`` holds (``to_json``'s form); a variant's file path
        is read relative to ``folder``. Every field is checked (``ReproducerError``,
        ``StepError``, ``ParamsError``: each names what is wrong)."""
        _check_schema(data)
        variant = data.get("variant")
        params = WorldParams.from_json(data["world"])
        steps = parse_steps(data["steps"])
        check_actors(params, steps)
        upgrades = [i for i, step in enumerate(steps) if step.RULE == "upgrade"]
        if upgrades and params.rollout is None:
            raise StepError(
                f"step {upgrades[0]} (upgrade): a world of one version has nothing to upgrade "
                '(a release has "base" and world.rollout)'
            )
        return cls(
            machine=data["machine"],
            params=params,
            steps=steps,
            variant=variant and ref_resolved_from(variant, folder),
            violations=tuple(data.get("violations", ())),
            base=data.get("base") and ref_resolved_from(data["base"], folder),
            trace_hash=data.get("trace_hash"),
            simkit=data.get("simkit", __version__),
            origin=origin,
            fuzz_seed=data.get("fuzz_seed"),
        )


@attrs.frozen
class ReplayResult:
    violations: tuple[Violation, ...]
    failed_at: int | None  # step index, len(steps) for quiescence, None when nothing failed
    trace_hash: str
    world: object = attrs.field(eq=False, repr=False)
    monitor: Monitor | None = attrs.field(default=None, eq=False, repr=False)

    def where(self, repro: Reproducer) -> str:
        """Where the run broke: after which step, before the first, or at quiescence."""
        if self.failed_at is None:
            return "nowhere"
        if self.failed_at == len(repro.steps):
            return "at quiescence"
        if self.failed_at < 0:
            return "before the first step"
        return f"after step {self.failed_at}: {json.dumps(repro.steps[self.failed_at].to_json())}"


def replay(repro: Reproducer) -> ReplayResult:
    """Rerun a reproducer; stop at the first step after which an invariant breaks."""
    variant = load_variant(repro.variant, repro.origin) if repro.variant else HONEST
    base = HONEST
    if repro.base:
        base = load_variant(repro.base, where=f'{repro.origin}: "base" {repro.base}')
    # the adversary machine's run whose relay never acted maliciously (no malicious mode,
    # no theft among its steps) is judged by every invariant, as an honest one is: each
    # check that does not run then is one that could not (docs/reports.md)
    malicious = any(turns_malicious(step) for step in repro.steps)
    monitor = Monitor(honest=repro.machine == "honest" or not malicious)
    driver = WorldDriver(repro.params.spec(), variant, base=base)

    def stop(violations, failed_at: int) -> ReplayResult:
        world = driver.world
        return ReplayResult(tuple(violations), failed_at, world.trace.trace_hash(), world, monitor)

    try:
        violations = monitor.step(driver.world)
        for index, step in enumerate(repro.steps):
            if violations:
                return stop(violations, index - 1)
            apply_step(driver, step, index)
            violations = monitor.step(driver.world)
        if violations:
            return stop(violations, len(repro.steps) - 1)
        driver.run(driver.world.quiesce)
        violations = monitor.final(driver.world)
        return stop(violations, len(repro.steps) if violations else None)
    finally:
        driver.close()


def replay_summary(repro: Reproducer, result: ReplayResult, name: str, attribution=None) -> dict:
    """A replayed run as a report summary (docs/reports.md): the invariants as far as
    the replay checked them, the violation with the step it broke after, and
    (``attribution``, a ``simkit.fuzz.attribution.Attribution``) whose finding it is."""
    stopped = None
    if result.failed_at is not None and result.failed_at < len(repro.steps):
        stopped = (
            "before the first step" if result.failed_at < 0 else f"after step {result.failed_at}"
        )
    checks = verdicts(result.monitor, result.violations, stopped=stopped, world=result.world)
    reproduces = bool(result.violations) == bool(repro.violations)
    summary = {
        "scenario": name,
        "description": (
            f"Replay of a reproducer: the {repro.machine} machine"
            + (f" with variant {repro.variant}" if repro.variant else "")
            + (f", a rollout from {repro.base}" if repro.base else "")
            + f", {len(repro.steps)} steps, simkit {repro.simkit}."
        ),
        "seed": repro.params.seed,
        "variant": repro.variant,
        "passed": not result.violations,
        "trace_hash": result.trace_hash,
        "expectations": [],  # a replay expects nothing: it says whether the run came back
        "recorded": (
            f"{'reproduces' if reproduces else 'DIFFERS'}: recorded "
            f"{len(repro.violations)} violation(s), replayed {len(result.violations)}"
        ),
        "invariants": [c.to_json() for c in checks],
        "behaviours": result.world.coverage.to_json(),
        "costs": result.world.cost().to_json(),
    }
    exercise = result.world.exercise()
    if exercise.changed:
        summary["change"] = {**exercise.to_json(), "lines": exercise.lines()}
    first = first_violation(result.violations)
    if first is not None:
        step = result.failed_at
        in_steps = step is not None and 0 <= step < len(repro.steps)
        summary["violation"] = {
            **first,
            "step": step if in_steps else None,
            "where": result.where(repro),
        }
    if attribution is not None:
        summary["attribution"] = {**attribution.to_json(), "line": attribution.line()}
    return summary
