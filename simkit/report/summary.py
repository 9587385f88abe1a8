"""The run summary a report is rendered with: checked on the way in, saved beside the
report so ``simkit report`` can render it again, and turned into table rows."""

import json
from pathlib import Path

from simkit.errors import SimkitError

SUMMARY_FILE = "summary.json"
MAX_VIOLATIONS = 20  # per invariant, in a report; summary.json keeps them all

_FIELDS = {
    "scenario": str,
    "description": str,
    "seed": int,
    "passed": bool,
    "trace_hash": str,
    "expectations": list,
    "invariants": list,
}
_ITEMS = {
    "expectations": {"name": str, "passed": bool, "detail": str},
    "invariants": {"name": str, "passed": bool, "violations": list},
}


class ReportError(SimkitError, ValueError):
    """A summary or saved report that cannot be rendered (a missing or mistyped key)."""


def check_summary(summary: object, source: str = "summary") -> dict:
    """The summary, if it has every key the report reads, with the right types."""
    _check(summary, _FIELDS, source)
    for key, fields in _ITEMS.items():
        for i, item in enumerate(summary[key]):
            _check(item, fields, f"{source}: {key}[{i}]")
    for i, inv in enumerate(summary["invariants"]):
        if not all(isinstance(v, str) for v in inv["violations"]):
            raise ReportError(f"{source}: invariants[{i}].violations must be strings")
    return summary


def _check(value: object, fields: dict[str, type], where: str) -> None:
    if not isinstance(value, dict):
        raise ReportError(f"{where}: expected an object, got {type(value).__name__}")
    for key, kind in fields.items():
        if key not in value:
            raise ReportError(f"{where}: missing key {key!r}")
        if not isinstance(value[key], kind) or (kind is int and isinstance(value[key], bool)):
            raise ReportError(f"{where}: {key!r} must be {kind.__name__}")


def summary_bytes(summary: dict) -> bytes:
    return (json.dumps(summary, indent=2, sort_keys=True, ensure_ascii=False) + "\n").encode()


def load_summary(directory: str | Path) -> dict:
    """The summary saved in a report folder (to re-render the report from it)."""
    path = Path(directory) / SUMMARY_FILE
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise ReportError(f"{path}: cannot read the saved summary ({exc.strerror})") from None
    except ValueError as exc:
        raise ReportError(f"{path}: not JSON ({exc})") from None
    return check_summary(data, str(path))


def verdict(passed: bool) -> str:
    return "✅ pass" if passed else "❌ FAIL"


def expectation_rows(summary: dict) -> list[tuple[str, str, str]]:
    return [(verdict(e["passed"]), e["name"], e["detail"]) for e in summary["expectations"]]


def invariant_rows(summary: dict) -> list[tuple[str, str, str]]:
    """(verdict, name, the violation count and the first one)."""
    rows = []
    for inv in summary["invariants"]:
        found = inv["violations"]
        detail = f"{len(found)} violation(s); first: {found[0]}" if found else "none"
        rows.append((verdict(inv["passed"]), inv["name"], detail))
    return rows


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
