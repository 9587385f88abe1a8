"""The tables both pages show, as plain text cells: report.md and report.html only
differ in how they escape and mark them up."""

import attrs

from simkit.report.data import Story

MAX_VIOLATIONS = 20  # listed per invariant in a report; summary.json keeps them all
TIMELINE_NOTE = (
    "Faults, adversary actions, crashes, ceremonies, alarms and rejections (each device's "
    "first, with its count), in virtual time."
)


@attrs.frozen
class Table:
    heading: str  # "" for none
    note: str  # a sentence above the table, "" for none
    header: tuple[str, ...]
    rows: list[tuple[str, ...]]
    verdicts: bool = False  # the first column says pass or fail


VERDICTS = {True: "✓ pass", False: "✗ FAIL", None: "– not checked"}


def verdict(passed: bool | None) -> str:
    """A result cell: pass, FAIL, or not checked (never a pass for what did not run)."""
    return VERDICTS[passed]


def summary_tables(story: Story, summary: dict) -> list[Table]:
    """The run at a glance, then its expectations and invariants."""
    result = (
        verdict(summary["passed"])
        if summary["passed"] is not None
        else "not judged: no summary.json, only what the trace records"
    )
    facts = [
        ("Result", result),
        ("Seed", "unknown" if summary["seed"] is None else str(summary["seed"])),
        ("Trace hash", summary["trace_hash"]),
        ("Events", f"{len(story.events)} over {story.end:.1f} s of virtual time"),
        ("Devices", ", ".join(story.devices) or "none"),
        ("Convergence", story.convergence.sentence()),
    ]
    if summary.get("variant"):
        facts.insert(2, ("Variant", summary["variant"]))
    expectations = [(verdict(e["passed"]), e["name"], e["detail"]) for e in summary["expectations"]]
    invariants = []
    for inv in summary["invariants"]:
        found = inv["violations"]
        detail = (
            f"{len(found)} violation(s); first: {found[0]}" if found else inv.get("note") or "none"
        )
        invariants.append((verdict(inv["passed"]), inv["name"], detail))
    checked = [inv for inv in summary["invariants"] if inv["passed"] is not None]
    note = (
        f"{len(checked)} of {len(summary['invariants'])} invariants were checked; "
        "the others say why not."
        if len(checked) < len(summary["invariants"])
        else ""
    )
    return [
        Table("", "", ("Run", ""), facts),
        Table("Expectations", "", ("Result", "Expectation", "Detail"), expectations, True),
        Table("Invariants", note, ("Result", "Invariant", "Violations"), invariants, True),
    ]


def violation_lists(summary: dict) -> list[tuple[str, list[str]]]:
    """(invariant, its first ``MAX_VIOLATIONS`` violations and a count of the rest)."""
    out = []
    for inv in summary["invariants"]:
        found = inv["violations"]
        if found:
            more = len(found) - MAX_VIOLATIONS
            out.append(
                (inv["name"], found[:MAX_VIOLATIONS] + ([f"… {more} more"] if more > 0 else []))
            )
    return out


def timeline_table(story: Story) -> Table:
    header = ("t (s)", "Kind", "Event", "Actor", "Detail")
    return Table("Timeline", TIMELINE_NOTE, header, [m.cells() for m in story.timeline])
