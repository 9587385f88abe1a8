"""Worlds shared by the simulator tests (small enough to run in about a second)."""

from collections import Counter

from simkit.protocol.ids import graph_id_for
from simkit.sim import spec as S
from simkit.sim.network import NetworkProfile

TEAM = {"alice": ("a1", "a2", "a3"), "bob": ("b1", "b2", "b3"), "carol": ("c1", "c2", "c3")}


def faulty_team(seed: int = 7, duration_s: float = 300, **changes) -> S.WorldSpec:
    """3 members x 3 devices; group, personal and pairwise graphs; 1% request and
    response loss; clocks up to 3 minutes off; one partition that heals."""
    spec = S.WorldSpec(
        seed=seed,
        devices=TEAM,
        groups={"team": ("alice", "bob", "carol")},
        graphs=("g:team", "u:alice", "d:alice:bob"),
        clocks=S.ClockSpec(max_offset_ms=180_000, max_drift_ppm=100),
        network=NetworkProfile(request_loss=0.01, response_loss=0.01),
        workload=S.Workload(interval_s=20),
        schedule=(S.Partition(("b1", "c2"), at=60, until=200),),
        duration_s=duration_s,
    )
    return S.WorldSpec(**{**_fields(spec), **changes})


def _fields(spec):
    import attrs

    return {a.name: getattr(spec, a.name) for a in attrs.fields(type(spec))}


def pair(mode: str, params: dict, schedule=(), **changes) -> S.WorldSpec:
    """Two members with two devices each in one group graph; ``mode`` aimed at b1 at 60 s."""
    spec = S.WorldSpec(
        seed=3,
        devices={"alice": ("a1", "a2"), "bob": ("b1", "b2")},
        groups={"team": ("alice", "bob")},
        graphs=("g:team", "u:bob"),
        workload=S.Workload(interval_s=5),
        schedule=(S.Adversary(mode, at=60, targets=("b1",), params=params), *schedule),
        duration_s=300,
        drain_s=120,
    )
    return S.WorldSpec(**{**_fields(spec), **changes})


def events(world, name: str) -> list:
    return [e for e in world.trace if e.kind == "event" and e.fields.get("name") == name]


def alarms(world) -> list[tuple[str, float, str]]:
    return [(e.actor, e.t, e.fields["reason"]) for e in events(world, "log.alarm")]


def rejections(world) -> Counter:
    return Counter((e.actor, e.fields["reason"]) for e in events(world, "record.rejected"))


def converged(world) -> list[str]:
    """Problems: a follower missing a relay LWW winner, holding another rev, or with writes left."""
    problems = []
    for sk in world.spec.graphs:
        rows = world.relay.state.graphs[sk].records
        for device_id in world.followers(sk):
            device = world.slots[device_id].device
            graph_id = graph_id_for(sk, device.member_id)
            if not device.unfiltered(graph_id):
                continue  # a filtered view holds only its matches
            held = device.records(graph_id)
            for record_id, row in sorted(rows.items()):
                if record_id not in held or held[record_id]["at"] != row.rev:
                    problems.append(f"{device_id} lacks {sk}/{record_id}@{row.rev}")
            if device.pending():
                problems.append(f"{device_id} still has {device.pending()} queued writes")
    return problems
