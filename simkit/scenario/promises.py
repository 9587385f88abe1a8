"""A scenario's promises: each outcome its description promises, with the checks that
judge it (invariants by name, expectations by the name a report gives them).

A description is prose; a promise ties one of its claims to what simkit checks, so a
reader sees in the report which check stands behind each sentence and what it found,
and a claim nothing checks cannot be written (the loader refuses a promise without a
check, or naming a check the run does not make)."""

import attrs

from simkit.scenario.reader import Reader

HELD, BROKEN, NOT_CHECKED = "held", "broken", "not checked"


@attrs.frozen
class Promise:
    says: str  # the claim, in the description's words
    checked_by: tuple[str, ...]  # invariant names and expectation names


@attrs.frozen
class PromiseCheck:
    says: str
    checked_by: tuple[str, ...]
    verdict: str  # held, broken or not checked (a check it names did not run)
    detail: str = ""  # the checks that failed or did not run

    def to_json(self) -> dict:
        return {**attrs.asdict(self), "checked_by": list(self.checked_by)}

    def line(self) -> str:
        """A promise not held, as ``simkit run`` prints it."""
        return f"promise {self.verdict}: {self.says} ({self.detail})"


def read_promises(rows: list[Reader], invariants: tuple[str, ...],
                  expectations: tuple[str, ...]) -> tuple[Promise, ...]:  # fmt: skip
    """The ``[[promise]]`` rows, each naming at least one of the run's ``invariants``
    (those it checks) or its ``expectations``."""
    promises = []
    for row in rows:
        row.only("says", "checked_by")
        says = row.get("says", str, required=True).strip()
        if not says:
            raise row.fail("says", "the claim, as the description makes it")
        checked_by = row.strings("checked_by")
        if not checked_by:
            raise row.fail("checked_by", "a list of the checks that judge it, at least one")
        for name in checked_by:
            if name not in invariants and name not in expectations:
                known = [*invariants, *(f'"{e}"' for e in expectations)]
                raise row.error(
                    "checked_by",
                    f"{name!r} is no check of this run; it checks the invariants and "
                    f"expectations {', '.join(known)}",
                )
        promises.append(Promise(says, checked_by))
    return tuple(promises)


def judge(promises, expectations, invariants) -> tuple[PromiseCheck, ...]:
    """Each promise's verdict from the run's ``ExpectationCheck``s and
    ``InvariantCheck``s: broken if a check it names failed, else not checked if one did
    not run, else held."""
    results = {e.name: e.passed for e in expectations}
    results.update({i.name: i.passed for i in invariants})
    out = []
    for promise in promises:
        found = {name: results.get(name) for name in promise.checked_by}
        failed = [n for n, passed in found.items() if passed is False]
        unrun = [n for n, passed in found.items() if passed is None]
        if failed:
            verdict, detail = BROKEN, f"failed: {', '.join(failed)}"
        elif unrun:
            verdict, detail = NOT_CHECKED, f"did not run: {', '.join(unrun)}"
        else:
            verdict, detail = HELD, ""
        out.append(PromiseCheck(promise.says, promise.checked_by, verdict, detail))
    return tuple(out)
