"""Relay conformance over what HTTP shows: one check per spec rule, against any target.

``run(target, auth)`` runs every check in ``CHECKS`` (catalogue order: pipeline,
devices, records, keys, blobs, capabilities, limits) against a relay with an
empty store that knows the conformance directory (``members.toml`` beside this
file), and returns one ``Result`` per check. ``simkit conform URL`` prints them;
CI runs the same checks against the in-process reference relay
(docs/relay.md, "Conformance over HTTP").
"""

import importlib
from collections.abc import Callable
from pathlib import Path

import attrs

from simkit.errors import TransportError, describe
from simkit.wire.conform.check import CHECKS, NEEDS, Check, Failed, Skipped
from simkit.wire.conform.context import Context
from simkit.wire.members import Directory, load_directory
from simkit.wire.target import InProcessTarget, Target, require_unused

# The catalogue, in the order it runs and prints: each module registers its checks.
AREAS = ("pipeline", "devices", "records", "keys", "blobs", "capabilities", "limits")
for _area in AREAS:
    importlib.import_module(f"simkit.wire.conform.{_area}")

MEMBERS = Path(__file__).with_name("members.toml")
# Quotas the in-process reference relay runs with, small enough for the quota checks.
IN_PROCESS_QUOTAS = {"quota_records": 1_000, "quota_bytes": 4 * 1024 * 1024}


@attrs.frozen
class Result:
    check: Check
    outcome: str  # "pass", "fail" or "skip"
    detail: str = ""


def conformance_directory() -> Directory:
    return load_directory(MEMBERS)


def reference_target(relay_class=None) -> InProcessTarget:
    """The reference relay (or a variant) in-process, as CI checks it."""
    extra = {} if relay_class is None else {"relay_class": relay_class}
    return InProcessTarget.reference(conformance_directory(), **extra, **IN_PROCESS_QUOTAS)


def require_fresh(ctx: Context) -> None:
    """The relay must know the directory's tokens and hold no device of alice yet."""
    who = ctx.who("alice", "a1")
    require_unused(
        ctx.target,
        {"authorization": f"Bearer {who.token}"},
        unknown="configure it with the conformance directory (docs/relay.md) or pass its "
        "tokens with --auth",
        used="it already knows alice/a1; conform needs a relay with an empty store "
        "(restart it on a new one)",
    )


def run_check(ctx: Context, check: Check) -> Result:
    missing = [need for need in check.needs if not _offers(ctx.target, need)]
    if missing:
        return Result(check, "skip", NEEDS[missing[0]])
    try:
        check.run(ctx)
    except Skipped as exc:
        return Result(check, "skip", str(exc))
    except Failed as exc:
        return Result(check, "fail", str(exc))
    except TransportError as exc:
        return Result(check, "fail", f"no answer: {exc}")
    except Exception as exc:  # an answer of unexpected shape (a missing field, a wrong type)
        return Result(check, "fail", f"unexpected answer: {describe(exc)}")
    return Result(check, "pass")


def _offers(target: Target, need: str) -> bool:
    if need == "clock":
        return target.controls_clock
    return target.quotas is not None


def run(
    target: Target,
    auth: Directory,
    progress: Callable[[Result], None] | None = None,
    checks: list[Check] = CHECKS,
) -> list[Result]:
    """The checks (every one by default), in catalogue order, against a fresh relay."""
    ctx = Context(target, auth)
    require_fresh(ctx)
    results = []
    for check in checks:
        result = run_check(ctx, check)
        results.append(result)
        if progress is not None:
            progress(result)
    return results
