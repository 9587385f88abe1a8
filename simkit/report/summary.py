"""The run summary a report is rendered with: checked on the way in, and saved
beside the report so ``simkit report`` can render it again."""

import json
from pathlib import Path

from simkit.errors import InputError

SUMMARY_FILE = "summary.json"

_FIELDS = {
    "scenario": str,
    "description": str,
    "seed": int | None,  # None: not known (a trace rendered without its summary)
    "passed": bool | None,  # None: not judged
    "trace_hash": str,
    "expectations": list,
    "invariants": list,
}
_ITEMS = {
    "expectations": {"name": str, "passed": bool, "detail": str},
    "invariants": {"name": str, "passed": bool | None, "violations": list},
}
_OPTIONAL = {
    "variant": str | None, "violation": dict, "costs": dict, "promises": list,
    "recorded": str, "attribution": dict,
}  # fmt: skip
_PROMISE = {"says": str, "checked_by": list, "verdict": str, "detail": str}
_VIOLATION = {"invariant": str, "detail": str, "text": str}


class ReportError(InputError):
    """A summary or saved report that cannot be rendered (a missing or mistyped key)."""


def check_summary(summary: object, source: str = "summary") -> dict:
    """The summary, if it has every key the report reads, with the right types.

    An invariant's ``passed`` is None when it was not checked; ``violation`` (the
    first one, with its graph, devices, records and trace position) is optional."""
    _check(summary, _FIELDS, source)
    _check(summary, _OPTIONAL, source, optional=True)
    for key, fields in _ITEMS.items():
        for i, item in enumerate(summary[key]):
            _check(item, fields, f"{source}: {key}[{i}]")
    for i, inv in enumerate(summary["invariants"]):
        if not all(isinstance(v, str) for v in inv["violations"]):
            raise ReportError(f"{source}: invariants[{i}].violations must be strings")
    for i, promise in enumerate(summary.get("promises", ())):
        _check(promise, _PROMISE, f"{source}: promises[{i}]")
    if "violation" in summary:
        _check(summary["violation"], _VIOLATION, f"{source}: violation")
    return summary


def _check(value: object, fields: dict, where: str, optional: bool = False) -> None:
    if not isinstance(value, dict):
        raise ReportError(f"{where}: expected an object, got {type(value).__name__}")
    for key, kind in fields.items():
        if key not in value:
            if optional:
                continue
            raise ReportError(f"{where}: missing key {key!r}")
        kinds = getattr(kind, "__args__", (kind,))
        if not isinstance(value[key], kind) or (isinstance(value[key], bool) and bool not in kinds):
            names = ("null" if k is type(None) else k.__name__ for k in kinds)
            raise ReportError(f"{where}: {key!r} must be {' or '.join(names)}")


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


def summary_from_trace(trace, name: str) -> dict:
    """A summary for a trace saved without its own: only what the trace records (its
    hash, and the violations the world noted in it), no expectations, and no verdict
    unless a violation is recorded: nothing it cannot know is claimed."""
    from simkit.invariants import Violation

    found: dict[str, list[str]] = {}
    first = None
    for event in trace:
        if event.kind == "check" and event.fields.get("what") == "violation":
            fields = {k: v for k, v in event.fields.items() if k != "what"}
            violation = Violation(**fields)
            found.setdefault(violation.invariant, []).append(str(violation))
            if first is None:
                first = {**violation.to_json(), "text": str(violation)}
    summary = {
        "scenario": name,
        "description": "Rendered from the trace alone: no summary.json was found beside it.",
        "seed": None,
        "passed": False if found else None,
        "trace_hash": trace.trace_hash(),
        "expectations": [],
        "invariants": [
            {"name": inv, "passed": False, "violations": texts, "note": ""}
            for inv, texts in sorted(found.items())
        ],
    }
    if first is not None:
        summary["violation"] = first
    return summary
