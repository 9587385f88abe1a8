"""Two versions of the protocol side by side, for a reviewer (docs/reviewing.md).

``compare`` runs each scenario under the base and under the change with the same
seed, and a seeded fuzz budget on each; ``write_comparison`` writes what a reviewer
reads: which verdicts, expectations and invariants flipped, where the two runs first
went apart (both traces' excerpts), what each cost, the behaviours each reached and
what each fuzz run found.
"""

import json
from collections import Counter
from collections.abc import Callable
from html import escape
from pathlib import Path

import attrs

from simkit.check.scope import load_scope
from simkit.check.search import CheckResult, check
from simkit.fuzz.attribution import CAUSED, PRESENT
from simkit.fuzz.runner import FuzzResult, fuzz
from simkit.report.batch import in_order
from simkit.report.data import describe, label
from simkit.report.html import page_start, table
from simkit.report.markdown import table as md_table
from simkit.report.tables import Table
from simkit.scenario.load import Scenario, load_scenario
from simkit.scenario.run import ScenarioResult, run_scenario
from simkit.sim.behaviours import NAMES
from simkit.sim.exercise import Exercise
from simkit.sim.variant import HONEST, Variant
from simkit.sim.variants import load_variant

EXCERPT = 3  # trace events shown before and after the first difference
WRAP = "white-space: pre-wrap; overflow-wrap: anywhere; font-size: 12px; margin: 0"
MAX_COST_GROWTH = 1.2


@attrs.frozen
class Side:
    """One version as the comparison names it: the Variant and how it was given."""

    variant: Variant
    ref: str


@attrs.frozen
class Pair:
    """One scenario run under both versions."""

    name: str
    base: dict  # each run's summary (``ScenarioResult.summary``)
    change: dict
    divergence: dict | None  # the first trace event that differs, with both excerpts

    @property
    def regressed(self) -> bool:
        return self.base["passed"] and not self.change["passed"]

    def flips(self) -> list[dict]:
        """Every expectation and invariant whose result differs between the two, with
        what it says under the side that failed (its first violation, or the detail)."""
        out = []
        for kind in ("expectations", "invariants"):
            before = {item["name"]: item for item in self.base[kind]}
            for item in self.change[kind]:
                old = before.get(item["name"])
                was = old["passed"] if old else "absent"
                if was == item["passed"]:
                    continue
                failed = item if item["passed"] is False or old is None else old
                out.append({
                    "check": item["name"], "base": _result(was),
                    "change": _result(item["passed"]), "why": _why(failed),
                })  # fmt: skip
        return out

    def flipped(self) -> list[str]:
        """``flips`` as lines: ``check: pass -> FAIL (why)``."""
        return [
            f"{f['check']}: {f['base']} -> {f['change']}" + (f" ({f['why']})" if f["why"] else "")
            for f in self.flips()
        ]

    def growth(self) -> float | None:
        """Requests under the change over requests under the base (None: no request)."""
        base, change = self.base["costs"]["requests"], self.change["costs"]["requests"]
        return round(change / base, 2) if base else None


def _why(check: dict) -> str:
    """What a check says when it fails: its first violation, else its detail."""
    found = check.get("violations") or []
    text = found[0] if found else check.get("detail") or check.get("note") or ""
    return text if len(text) <= WHY_CHARS else text[:WHY_CHARS].rsplit(" ", 1)[0] + " …"


WHY_CHARS = 300  # a flip's reason in a table cell (simkit run of the scenario says it whole)


def _result(passed) -> str:
    return {True: "pass", False: "FAIL", None: "not checked"}.get(passed, str(passed))


@attrs.define
class Comparison:
    base: Side
    change: Side
    pairs: list[Pair] = attrs.Factory(list)
    fuzz: dict[str, FuzzResult | None] = attrs.Factory(dict)  # side -> result (None: not run)
    max_cost_growth: float = MAX_COST_GROWTH
    seed: int | None = None  # the fuzzing's
    checks: dict[str, CheckResult] = attrs.Factory(dict)  # side -> ``--check K``'s result

    def cost_grew(self) -> list[str]:
        """Scenarios whose requests grew past the threshold, and the total."""
        out = [p.name for p in self.pairs if (p.growth() or 0) > self.max_cost_growth]
        total = self.total_growth()
        if total is not None and total > self.max_cost_growth:
            out.append("all scenarios")
        return out

    def total_growth(self) -> float | None:
        base = sum(p.base["costs"]["requests"] for p in self.pairs)
        change = sum(p.change["costs"]["requests"] for p in self.pairs)
        return round(change / base, 2) if base else None

    def exercise(self) -> Exercise:
        """How often the change ran: in its scenario runs and its fuzzing."""
        ran = Exercise()
        for p in self.pairs:
            if "change" in p.change:
                ran.merge(Exercise.from_json(p.change["change"]))
        fuzzed = self.fuzz.get("change")
        if fuzzed is not None:
            ran.merge(fuzzed.exercise)
        if "change" in self.checks:
            ran.merge(self.checks["change"].exercise)
        if not ran.changed and self.change.variant != self.base.variant:
            ran.changed = True  # a change that the runs never saw differ
        return ran

    def routes(self) -> list[tuple[str, int, int, float | None]]:
        """Requests per route over every scenario: (route, base, change, ratio)."""
        out = []
        totals = {
            side: _route_requests(getattr(p, side)["costs"] for p in self.pairs)
            for side in ("base", "change")
        }
        for route in sorted(totals["base"].keys() | totals["change"].keys()):
            base, change = totals["base"][route], totals["change"][route]
            out.append((route, base, change, round(change / base, 2) if base else None))
        return out

    def routes_grew(self) -> list[str]:
        """Routes whose requests grew past the threshold (or appeared)."""
        return [
            route
            for route, base, change, ratio in self.routes()
            if (ratio is None and change) or (ratio or 0) > self.max_cost_growth
        ]

    def regressions(self) -> list[str]:
        out = [f"{p.name}: pass -> FAIL" for p in self.pairs if p.regressed]
        change = self.fuzz.get("change")
        if (
            change is not None
            and change.failure
            and (change.attribution is None or change.attribution.verdict == CAUSED)
        ):  # a failure the base has too on the same steps is no regression of the change
            out.append(f"fuzz: caused by the change: {_first_line(change.failure)}")
        checked = self.checks.get("change")
        whose = checked and checked.attribution and checked.attribution.verdict
        if whose == CAUSED:  # as the fuzzing's: the change's own, not the base's or stack's
            out.append(f"check: caused by the change: {checked.verdict()}")
        return out

    @property
    def failed(self) -> bool:
        return bool(self.regressions() or self.cost_grew())

    def base_failures(self) -> list[str]:
        """What fails on the base as well: scenarios failing under both, the base's own
        fuzzing, failures the change's fuzzing met that the base has too."""
        out = [f"{p.name}: fails under both" for p in self.pairs
               if not p.base["passed"] and not p.change["passed"]]  # fmt: skip
        base, change = self.fuzz.get("base"), self.fuzz.get("change")
        if base is not None and base.failure:
            out.append(f"fuzz of the base: {_first_line(base.failure)}")
        if change is not None:
            out += [f"fuzz of the change, {PRESENT}: {f.attribution.broke}"
                    for f in change.base_findings]  # fmt: skip
        for side, checked in sorted(self.checks.items()):
            if side == "base" and checked.failure is not None:
                out.append(f"check of the base: {checked.verdict()}")
            out += [f"check of the {side}, {PRESENT}: {f.attribution.broke}"
                    for f in checked.base_failures]  # fmt: skip
        return out

    @property
    def verdict(self) -> str:
        if self.failed:
            return "REGRESSED"
        base = self.base_failures()
        if base:
            return f"nothing regressed; {len(base)} failure(s) present without the change"
        return self.exercise().verdict or "nothing regressed"


def _route_requests(costs) -> Counter:
    counts: Counter = Counter()
    for cost in costs:
        counts.update({route: r["requests"] for route, r in cost["routes"].items()})
    return counts


def _first_line(text: str) -> str:
    return text.splitlines()[0] if text else ""


def compare(
    scenarios: list[Scenario],
    base: Side,
    change: Side,
    *,
    seconds: float = 0.0,
    seed: int = 0,
    max_cost_growth: float = MAX_COST_GROWTH,
    rollout: bool = False,
    progress: Callable[[str], None] = lambda line: None,
    jobs: int = 1,
    check_depth: int = 0,
) -> Comparison:
    """Each scenario under both versions (each run's trace kept in memory while the
    pair is compared), then ``seconds`` of seeded fuzzing on each (0: none);
    ``rollout``: the change's fuzzing is a release from the base (docs/releases.md).
    ``jobs``: processes to run the pairs (and the two fuzz runs) on; the comparison is
    the same whatever their number. ``check_depth``: also ``simkit check`` each version
    to that depth (its default scope), a proof within bounds beside the fuzzing."""
    result = Comparison(base, change, max_cost_growth=max_cost_growth, seed=seed)
    pairs = in_order(pair_of, [(str(s.path), s.spec.seed, base.ref, change.ref)
                               for s in scenarios], jobs)  # fmt: skip
    for index, scenario in enumerate(scenarios):
        progress(f"scenario {index + 1}/{len(scenarios)}: {scenario.name}")
        result.pairs.append(next(pairs))
    if seconds > 0:
        progress(f"fuzzing each version for {seconds:g} s")
        runs = [(name, side.ref, base.ref, seconds, seed, rollout and side is change)
                for name, side in (("base", base), ("change", change))]  # fmt: skip
        result.fuzz = dict(zip(("base", "change"), in_order(fuzz_side, runs, jobs), strict=True))
    else:
        result.fuzz = {"base": None, "change": None}
    if check_depth:
        progress(f"checking each version to depth {check_depth}")
        runs = [(side.ref, base.ref, check_depth) for side in (base, change)]
        result.checks = dict(zip(("base", "change"), in_order(check_side, runs, jobs), strict=True))
    return result


def check_side(job: tuple[str, str, int]) -> CheckResult:
    """One version checked to a depth over the default scope, in one process."""
    ref, base_ref, depth = job
    variant = None if load_variant(ref) == HONEST else ref
    return check(load_scope(), depth, variant=variant, against=base_ref)


def pair_of(job: tuple[str, int, str, str]) -> Pair:
    """One scenario (its file and seed) under the base and under the change (each
    given by reference): both summaries and where the two traces first differ."""
    path, seed, base_ref, change_ref = job
    scenario = load_scenario(path).with_seed(seed)
    runs = [
        run_scenario(_as(scenario, Side(load_variant(ref), ref))) for ref in (base_ref, change_ref)
    ]
    return Pair(scenario.name, *(r.summary() for r in runs), divergence=_divergence(*runs))


def fuzz_side(job: tuple[str, str, str, float, int, bool]) -> FuzzResult:
    """One version fuzzed for the comparison, in one process with the comparison's seed
    (``release``: rolled out from the base)."""
    _, ref, base_ref, seconds, seed, release = job
    return fuzz(
        load_variant(ref), seconds=seconds, seed=seed, max_steps=25, variant_ref=ref,
        shrink_seconds=max(seconds / 2, 5.0), release=frozenset({"rollout"}) if release else
        frozenset(), base=load_variant(base_ref), base_ref=base_ref, against=base_ref,
    )  # fmt: skip


def _as(scenario: Scenario, side: Side) -> Scenario:
    """The scenario under one version: its own variant, if it names one, is replaced
    (the scenario is the situation; the comparison asks how each version meets it)."""
    return attrs.evolve(scenario, variant=side.variant, variant_ref=side.ref)


def _divergence(base: ScenarioResult, change: ScenarioResult) -> dict | None:
    """The first trace event that differs, and the events around it in each trace."""
    a, b = list(base.world.trace), list(change.world.trace)
    first = next(
        (i for i, (x, y) in enumerate(zip(a, b, strict=False)) if _differ(x, y)),
        None if len(a) == len(b) else min(len(a), len(b)),
    )
    if first is None:
        return None

    def excerpt(events) -> list[str]:
        window = events[max(0, first - EXCERPT) : first + EXCERPT + 1]
        return [
            f"{'>' if e.seq == first else ' '} #{e.seq} {e.t:.3f} s {e.actor} {label(e)} "
            f"{describe(e.fields)}"[:200]
            for e in window
        ]

    at = (a[first] if first < len(a) else b[first]).t
    return {"trace_seq": first, "t": round(at, 3), "base": excerpt(a), "change": excerpt(b)}


LABELS = ("version", "version.upgrade")  # events that name the version a party runs


def _differ(x, y) -> bool:
    """Whether two trace events differ in more than the version they name (the two
    runs run different versions: that alone is no difference)."""
    if x.line() == y.line():
        return False
    if x.kind == y.kind == "event" and x.fields.get("name") in LABELS:
        plain = [attrs.evolve(e, fields={k: v for k, v in e.fields.items() if k != "version"})
                 for e in (x, y)]  # fmt: skip
        return plain[0].line() != plain[1].line()
    return True


# -- what a reviewer reads -------------------------------------------------------------------


def to_json(c: Comparison) -> dict:
    return {
        "base": c.base.ref,
        "change": c.change.ref,
        "seed": c.seed,
        "verdict": c.verdict,
        "regressed": c.regressions(),
        "cost_grew": c.cost_grew(),
        "routes_grew": c.routes_grew(),
        "change_ran": c.exercise().to_json(),
        "routes": [
            {"route": route, "base": base, "change": change, "ratio": ratio}
            for route, base, change, ratio in c.routes()
        ],
        "max_cost_growth": c.max_cost_growth,
        "total_request_growth": c.total_growth(),
        "scenarios": [
            {
                "name": p.name,
                "base_passed": p.base["passed"],
                "change_passed": p.change["passed"],
                "flipped": p.flips(),
                "request_growth": p.growth(),
                "base_costs": p.base["costs"],
                "change_costs": p.change["costs"],
                "base_behaviours": p.base["behaviours"]["reached"],
                "change_behaviours": p.change["behaviours"]["reached"],
                "divergence": p.divergence,
            }
            for p in c.pairs
        ],
        "fuzz": {
            side: None
            if r is None
            else {
                "examples": r.examples,
                "steps": r.steps,
                "behaviours": len(r.coverage.reached),
                "release": list(r.release),
                "finding": r.failure and _first_line(r.failure),
                "attribution": r.attribution and r.attribution.to_json(),
                "base_findings": [f.to_json() for f in r.base_findings],
                "change_ran": r.exercise.to_json(),
            }
            for side, r in c.fuzz.items()
        },
        "check": {side: r.to_json() for side, r in c.checks.items()},
    }


def _fuzz_found(r: FuzzResult) -> str:
    """What one side's fuzzing found, and whose it is."""
    out = []
    if r.failure:
        whose = f" [{r.attribution.verdict}]" if r.attribution else ""
        out.append(f"{_first_line(r.failure)}{whose}")
    if r.base_findings:
        out.append(f"{len(r.base_findings)} failure(s) present without the change")
    return "; ".join(out) or "no violation"


def tables(c: Comparison, only_changed: bool = False) -> list[Table]:
    """The scenarios (``only_changed``: those whose runs differ) and the fuzzing."""
    pairs = [p for p in c.pairs if not only_changed or p.divergence is not None]
    verdicts = [
        (
            p.name,
            _result(p.base["passed"]),
            _result(p.change["passed"]),
            "; ".join(p.flipped()) or "none",
            f"{p.base['costs']['requests']:,} -> {p.change['costs']['requests']:,}"
            + (f" ({p.growth():.2f}x)" if p.growth() is not None else "")
            + (" GREW" if (p.growth() or 0) > c.max_cost_growth else ""),
            "same trace"
            if p.divergence is None
            else f"#{p.divergence['trace_seq']} at {p.divergence['t']:g} s",
        )
        for p in pairs
    ]
    header = ("Scenario", "Base", "Change", "Flipped", "Requests (ratio)", "First difference")
    fuzz_rows = [
        (
            f"{side} (rolled out from the base)" if r.release else side,
            f"{r.examples} examples, {r.steps} steps, {len(r.coverage.reached)} behaviours",
            _fuzz_found(r),
        )
        for side, r in c.fuzz.items()
        if r is not None
    ] + [
        (f"{side}: check to depth {r.depth}", f"{r.sequences:,} sequences, {r.states:,} states",
         r.verdict() + (f" [{r.attribution.verdict}]" if r.attribution else ""))
        for side, r in c.checks.items()
    ]  # fmt: skip
    total = c.total_growth()
    reached = [_reached(c.pairs, side) for side in ("base", "change")]
    requests = (
        "no request was made" if total is None else f"requests over all scenarios: {total:.2f}x"
    )
    past = f" (past {c.max_cost_growth:g}x)" if "all scenarios" in c.cost_grew() else ""
    note = (
        f"Base {c.base.ref}, change {c.change.ref}, same seeds; {requests}{past}. Behaviours "
        f"reached over the scenarios: {reached[0]} (base), {reached[1]} (change)."
    )
    if len(pairs) < len(c.pairs):
        same = len(c.pairs) - len(pairs)
        note += f" {same} other scenario(s) ran the same trace under both (compare.html lists all)."
    grew = set(c.routes_grew())
    routes = [
        (route, f"{base:,}", f"{change:,}", "new" if ratio is None else f"{ratio:.2f}x",
         "GREW" if route in grew else "")
        for route, base, change, ratio in c.routes()
        if not only_changed or base != change
    ]  # fmt: skip
    ran = c.exercise()
    return [
        Table("Scenarios", note, header, verdicts, empty=NO_SCENARIO if c.pairs else "None ran."),
        Table(
            "Requests per route",
            f"Over every scenario, same seeds; GREW: past {c.max_cost_growth:g}x (or new)."
            + (" Routes with equal counts are left out (compare.html lists all)." * only_changed),
            ("Route", "Base", "Change", "Ratio", "Grew"),
            routes,
            empty="Every route served as many requests under the change as under the base.",
        ),
        Table(
            "Fuzzing",
            "The same seeded budget on each version." if fuzz_rows else "",
            ("Side", "Ran", "Found"),
            fuzz_rows,
            empty=NOT_FUZZED,
        ),
        Table(
            "The change ran",
            "How often the change departed from the spec in the rules it declares (the models "
            "follow it and leave its consequences to the other invariants), or how often the "
            "methods it overrides ran, over its scenario runs and its fuzzing. A change that "
            "never did gives no verdict (exit 3).",
            ("What ran", "How often"),
            [(line.split(":")[0], line.partition(":")[2].strip()) for line in ran.lines()]
            + ([("verdict", ran.verdict)] if ran.verdict else []),
        ),
    ]


NO_SCENARIO = "No scenario ran differently under the change (compare.html lists them all)."
NOT_FUZZED = (
    "Not run (--time 0): this comparison judged the change on the scenarios only; "
    "--time S fuzzes each version for S seconds."
)


def _reached(pairs: list[Pair], side: str) -> int:
    """Catalogue behaviours one version reached over every scenario."""
    counts = (getattr(p, side)["behaviours"]["counts"] for p in pairs)
    return len({b for c in counts for b, n in c.items() if n and b in NAMES})


def markdown(c: Comparison) -> str:
    """The summary to paste into a code review."""
    lines = [f"# simkit compare: {c.change.ref} against {c.base.ref}: {c.verdict}", ""]
    lines += [f"- regressed: {r}" for r in c.regressions()]
    lines += [f"- cost grew past {c.max_cost_growth:g}x: {name}" for name in c.cost_grew()]
    lines += [""] if c.failed else []
    for t in tables(c, only_changed=True):
        lines += md_table(t)
    lines.append("The traces' first differences, side by side, are in compare.html.")
    return "\n".join(lines) + "\n"


def html(c: Comparison) -> str:
    out = page_start(f"simkit compare: {c.change.ref} against {c.base.ref}")
    out.append(f"<p><strong>{escape(c.verdict)}</strong></p>")
    items = [*c.regressions(), *(f"cost grew: {n}" for n in c.cost_grew())]
    if items:
        out.append("<ul>" + "".join(f"<li>{escape(i)}</li>" for i in items) + "</ul>")
    out += [table(t) for t in tables(c)]
    out.append("<h2>First differences</h2>")
    for p in c.pairs:
        if p.divergence is None:
            continue
        d = p.divergence
        cells = "".join(
            f'<td><pre style="{WRAP}">{escape(chr(10).join(d[side]))}</pre></td>'
            for side in ("base", "change")
        )
        out.append(
            f"<h3>{escape(p.name)}: trace #{d['trace_seq']} at {d['t']:g} s</h3>"
            '<table style="table-layout: fixed; width: 100%">'
            f"<tr><th>{escape(c.base.ref)}</th><th>{escape(c.change.ref)}</th></tr>"
            f"<tr>{cells}</tr></table>"
        )
    out += ["</body></html>", ""]
    return "\n".join(out)


def write_comparison(c: Comparison, folder: str | Path, json_path: str | Path | None) -> Path:
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    data = json.dumps(to_json(c), indent=2) + "\n"
    (folder / "compare.json").write_text(data, encoding="utf-8")
    if json_path:
        Path(json_path).write_text(data, encoding="utf-8")
    (folder / "compare.md").write_text(markdown(c), encoding="utf-8")
    (folder / "compare.html").write_text(html(c), encoding="utf-8")
    for side, r in c.fuzz.items():
        if r is not None and r.reproducer is not None:
            r.reproducer.write(folder / f"finding-{side}.json")
    for side, r in c.checks.items():
        if r.reproducer is not None:
            r.reproducer.write(folder / f"finding-check-{side}.json")
    return folder / "compare.html"
