"""Rare situations (docs/fuzzing.md, "Situations"): each is counted once per world that
reaches it, so a merged count over many worlds reads as worlds per 1,000."""

from simkit.invariants import Monitor
from simkit.sim.behaviours import NAMES, Coverage
from simkit.sim.network import NetworkProfile
from simkit.sim.situations import SITUATIONS
from simkit.sim.world import run_world
from tests.sim.worlds import faulty_team, pair


def _reached(spec, honest=True) -> Coverage:
    return run_world(spec, monitor=Monitor(honest, only=())).coverage


def test_every_situation_is_a_catalogue_behaviour():
    assert set(SITUATIONS) <= NAMES


def test_a_push_cut_by_an_outage_counts_once_per_world_however_often():
    lossy = NetworkProfile(request_loss=0.1, response_loss=0.1)
    coverage = _reached(faulty_team(duration_s=240, network=lossy))
    assert coverage.counts["situation a push cut by an outage"] == 1
    assert coverage.worlds == 1


def test_a_rolled_back_relay_answering_a_push_is_reached_by_a_rollback():
    coverage = _reached(pair("rollback", {"snapshot_at": 30}), honest=False)
    assert coverage.counts["situation a rolled-back relay answers a push"] == 1
    quiet = _reached(pair("withhold", {"log": "lists"}), honest=False)
    assert quiet.counts["situation a rolled-back relay answers a push"] == 0


def test_merged_coverage_reads_as_worlds_per_thousand():
    merged = Coverage()
    for reached in (True, False, False, False):
        one = Coverage(worlds=1)
        if reached:
            one.add(["situation a push cut by an outage"])
        merged.merge(one)
    rates = merged.situations()
    assert merged.worlds == 4
    assert rates["situation a push cut by an outage"] == 250.0
    assert rates["situation an older epoch granted after a newer one"] == 0.0
    assert merged.to_json()["situations_per_1000"]["situation a push cut by an outage"] == 250.0


def test_partial_sync_worlds_reach_filtered_pulls_and_metadata_and_whole_ones_do_not():
    """The fuzz's partial-sync views (``simkit.fuzz.params.PARTIAL``) in a faulty team:
    pulls filtered by kinds and by shards, pushes with ``k``/``sh``; judged by every
    invariant, both models included."""
    from simkit.fuzz.params import PARTIAL
    from simkit.sim import spec as S

    names = [f"situation {s}" for s in ("a pull filtered by kinds", "a pull filtered by shards",
                                        "a push carrying partial-sync metadata")]  # fmt: skip
    workload = S.Workload(interval_s=10, kinds=("note", "task"))
    spec = faulty_team(duration_s=120, workload=workload, subscriptions=PARTIAL["metadata"],
                       send_metadata=True, shards=True)  # fmt: skip
    world = run_world(spec, monitor=Monitor(True))
    assert [world.coverage.counts[n] for n in names] == [1, 1, 1]
    assert world.violations == []
    whole = _reached(faulty_team(duration_s=120, workload=workload))
    assert [whole.counts[n] for n in names] == [0, 0, 0]


def test_alarm_completeness_obliges_no_device_whose_views_of_a_graph_are_all_filtered():
    """Log verification status: 'unverified -> off when only filtered subscriptions
    exist'. b2 sees only the group graph's tasks in a partial-sync fuzz world, so nothing
    obliges it to alarm there (a contradiction a malicious relay serves it is not read);
    its other graphs, and every other device, are obliged as before."""
    from types import SimpleNamespace

    from simkit.fuzz.params import WorldParams
    from simkit.invariants.alarms import _verifies
    from simkit.sim.world import World

    world = World(WorldParams(5, partial="views").spec())
    b2, a2 = (
        SimpleNamespace(member="bob", device_id="b2"),
        SimpleNamespace(member="alice", device_id="a2"),
    )
    assert not _verifies(world, b2, "g:team")
    assert _verifies(world, b2, "d:alice")  # its pairwise graph with alice
    assert _verifies(world, a2, "u")  # a filtered view beside its whole personal graph
    assert _verifies(World(WorldParams(5).spec()), b2, "g:team")
