"""``simkit check``'s search (``simkit.check.search``): breadth first, every sequence of
a scope judged; the reductions skip only what they claim; a change's failure is found
at its shortest depth, as a reproducer that replays."""

from pathlib import Path

import attrs

from simkit.check.explore import Share, explore
from simkit.check.scope import load_scope
from simkit.check.search import Reductions, check
from simkit.fuzz.attribution import CAUSED
from simkit.fuzz.reproducer import replay

TINY = load_scope(Path(__file__).with_name("tiny.toml"))  # advance, restart, crash, concurrent
ALL_OFF = Reductions(snapshots=False, states=False, symmetry=False)


def test_depth_one_judges_every_letter_and_skips_mirrors_and_steps_that_change_nothing():
    result = check(TINY, 1)
    [level] = result.levels
    assert level.complete and result.failure is None
    assert level.planned == 4  # restart b2, crash b2 and concurrent [a1, b2] mirror the rest
    assert level.mirrored == 3
    assert level.repeated == 1  # restarting a running device leaves the set-up world as it was
    assert (level.sequences, level.states, result.states) == (4, 3, 4)
    assert result.verdict() == (
        "depth 1 complete over scope tiny: 4 sequences, 4 distinct states, 0 violations"
    )


def test_a_prefix_copied_judges_each_sequence_exactly_as_one_replayed_from_the_start():
    jobs = (((), (0, 3)), ((0,), (0, 3, 5)), ((3,), (1, 5)))
    copied = explore(Share(TINY, jobs))
    replayed = explore(Share(TINY, jobs, snapshots=False))
    assert copied == replayed
    assert [j.sequence for j in copied.judged] == [(0,), (3,), (0, 0), (0, 3), (0, 5), (3, 1),
                                                   (3, 5)]  # fmt: skip
    assert len({j.digest for j in copied.judged}) == 7


def test_the_reductions_change_how_much_is_run_never_the_verdict():
    reduced, full = check(TINY, 2), check(TINY, 2, reductions=ALL_OFF)
    assert reduced.completed == full.completed == 2
    assert reduced.failure is None and full.failure is None
    assert full.levels[1].planned == 7 * 7  # every prefix, every letter
    assert reduced.levels[1].planned < full.levels[1].planned / 2
    assert reduced.states <= full.states


def test_a_change_is_caught_at_its_shortest_depth_as_a_reproducer_that_replays(tmp_path):
    result = check(TINY, 2, variant="tests.fuzz.variants:log_loser")
    assert result.failure is not None and len(result.failure.sequence) == 1
    assert result.completed == 0  # every shorter sequence (the set-up world) held
    assert result.attribution.verdict == CAUSED
    assert [s.RULE for s in result.reproducer.steps] == ["concurrent"]
    assert result.exercise.calls["LogsLwwLosers._lose"] >= 1
    result.reproducer.write(tmp_path / "r.json")
    replayed = replay(attrs.evolve(result.reproducer, violations=()))
    assert {v.invariant for v in replayed.violations} >= {"seq-and-log"}


def test_a_budget_spent_before_any_depth_completes_gives_no_depth():
    result = check(TINY, 2, seconds=1e-9)
    assert result.completed == 0 and not result.levels[0].complete
    assert "no depth complete" in result.verdict()


def test_workers_read_back_in_order_give_the_run_of_one(tmp_path):
    from simkit.campaign.cluster import local_pool

    alone = check(TINY, 2, variant="tests.fuzz.variants:log_loser")
    with local_pool(2) as pool:
        shared = check(TINY, 2, workers=2, pool=pool, variant="tests.fuzz.variants:log_loser")
    assert shared.reproducer == alone.reproducer
    assert shared.failure.sequence == alone.failure.sequence


def test_a_moment_worth_exploring_is_the_root_of_every_sequence():
    from simkit.fuzz import actions as A

    moment = (A.Advance(seconds=5), A.Crash(device="b1"))
    scope = TINY.starting_from(TINY.params, moment, "m.json")
    result = check(scope, 2, variant="tests.fuzz.variants:log_loser")
    assert result.failure is not None and len(result.failure.sequence) == 1
    assert result.reproducer.steps[:2] == moment  # the moment, then the failing letter
    assert result.reproducer.steps[2].RULE == "concurrent"


def test_a_dask_cluster_runs_the_shares_as_local_processes_do():
    from simkit.campaign.cluster import DaskCluster, connect

    alone = check(TINY, 2)
    with connect(2) as client:
        shared = check(TINY, 2, workers=2, pool=DaskCluster(client))
    assert shared.verdict() == alone.verdict()
    counts = [{k: v for k, v in attrs.asdict(level).items() if k != "seconds"}
              for level in alone.levels]  # fmt: skip
    assert [{k: v for k, v in attrs.asdict(level).items() if k != "seconds"}
            for level in shared.levels] == counts  # fmt: skip


def test_a_malicious_relay_reached_in_a_copy_and_in_a_replay_is_one_state():
    scope = load_scope()
    modes = tuple(i for i, step in enumerate(scope.alphabet) if step.RULE in ("adversary", "merge"))
    jobs = (((), modes), ((modes[0],), (0, 2, modes[-1])))
    copied, replayed = explore(Share(scope, jobs)), explore(Share(scope, jobs, snapshots=False))
    assert [j.digest for j in copied.judged] == [j.digest for j in replayed.judged]


def test_a_depth_that_reaches_no_new_state_completes_every_deeper_one():
    from simkit.check.scope import parse_scope

    idle = parse_scope('[world]\nseed = 1\n[[steps]]\nrule = "heal"\n', "idle.toml")
    result = check(idle, 3)
    assert [(lv.sequences, lv.repeated) for lv in result.levels] == [(1, 1)]
    assert result.exhausted and result.completed == 3
    assert result.verdict().startswith(
        "depth 3 complete over scope idle: 1 sequence, 1 distinct state, 0 violations"
    )
