"""The exit codes every command shares (README, "Exit codes")."""

HELD = 0  # every expectation and invariant held
FINDING = 1  # a finding of the change (or, without a change, of the stack), a world's crash
USAGE = 2  # a usage or input error
NO_VERDICT = 3  # the change never made a difference: "no violation" would say nothing
BASE_ONLY = 4  # failures only of the base: present without the change, none it caused
SIMKIT_FAILED = 70  # simkit itself failed outside any simulated world (an internal error)
INTERRUPTED = 130  # Ctrl-C before a finding


def without_finding(interrupted: bool, base_only: bool, no_verdict: object) -> int:
    """The exit code of a run with no finding of its own: failures the base has too
    come first (they are facts about the stack, Ctrl-C or not), then Ctrl-C, then a
    change that never ran."""
    if base_only:
        return BASE_ONLY
    if interrupted:
        return INTERRUPTED
    return NO_VERDICT if no_verdict else HELD
