"""Releases in the world: two versions at once, parties moving from the base to the
new one by restarting from what they kept (docs/releases.md)."""

import attrs

from simkit.client import Device
from simkit.client.versions import NEWER_MEMBER, NewerClient
from simkit.invariants import Monitor
from simkit.model import RelayModel
from simkit.model.older import OlderRelayModel
from simkit.protocol.records import check_envelope, open_record
from simkit.relay import Relay
from simkit.relay.older import OlderRelay
from simkit.sim import spec as S
from simkit.sim.exercise import running_class
from simkit.sim.variant import HONEST, Variant
from simkit.sim.versions import newer_client, older_relay
from simkit.sim.world import run_world
from tests.sim.worlds import events

FLEET = {"alice": ("a1", "a2"), "bob": ("b1",)}
ALL_ON_BASE = S.Rollout()


def release(schedule=(), rollout=ALL_ON_BASE, seed=4, **changes) -> S.WorldSpec:
    return S.WorldSpec(
        seed=seed,
        devices=FLEET,
        groups={"team": ("alice", "bob")},
        graphs=("g:team", "u:alice"),
        workload=S.Workload(interval_s=10),
        schedule=tuple(schedule),
        duration_s=200,
        drain_s=120,
        rollout=rollout,
        **changes,
    )


def run(spec, variant, base=HONEST):
    monitor = Monitor(honest=True)
    return run_world(spec, variant, monitor=monitor, base=base)


def test_release_parties_start_on_the_base_and_a_device_upgrade_restarts_into_the_new_one():
    world = run(release([S.Upgrade("a1", at=60)]), newer_client)
    assert running_class(world.slots["a1"].device) is NewerClient
    assert running_class(world.slots["a2"].device) is Device
    assert running_class(world.relay) is Relay
    [upgrade] = events(world, "version.upgrade")
    assert (upgrade.actor, upgrade.t, upgrade.fields["version"]) == ("a1", 60, "newer-client")
    started = {e.actor: e.fields["version"] for e in events(world, "version")}
    assert started == {"relay": "honest", "a1": "honest", "a2": "honest", "b1": "honest"}
    [kept] = world.ledger.upgrades
    assert kept.party == "a1" and kept.before == kept.after and kept.before["graphs"]
    assert world.violations == []


def test_release_mixed_fleet_starts_the_named_devices_and_the_relay_on_the_new_version():
    world = run(release(rollout=S.Rollout(relay_new=True, devices_new=("b1",))), newer_client)
    assert running_class(world.slots["b1"].device) is NewerClient
    assert running_class(world.slots["a1"].device) is Device
    assert world.parties.relay_version is newer_client and events(world, "version.upgrade") == []


def test_release_relay_upgrade_restores_its_store_under_the_new_class_and_model():
    world = run(release([S.Upgrade("relay", at=100)]), HONEST, base=older_relay)
    assert running_class(world.relay) is Relay
    assert type(world.relay_oracle.check.model) is RelayModel
    [kept] = world.ledger.upgrades
    assert kept.party == "relay" and kept.before == kept.after
    assert world.violations == []


def test_release_relay_of_the_base_is_judged_by_the_base_model():
    world = run(release(), HONEST, base=older_relay)
    assert running_class(world.relay) is OlderRelay
    assert type(world.relay_oracle.check.model) is OlderRelayModel
    assert world.relay_oracle.findings == [] and world.violations == []


def test_versioning_3_newer_client_records_carry_an_unknown_member_every_device_accepts():
    world = run(release(rollout=S.Rollout(devices_new=("a1",))), newer_client)
    graph = world.relay.state.graphs["g:team"]
    key = world.slots["b1"].device.keyring("g:team").keys
    sealed = {}
    for rid, row in graph.records.items():
        envelope = open_record(key[row.e], "g:team", rid, row.n, row.c)
        sealed[envelope["d"]] = check_envelope(envelope, rid)
    assert NEWER_MEMBER in sealed["a1"] and NEWER_MEMBER not in sealed["b1"]
    assert events(world, "record.rejected") == []
    assert all(NEWER_MEMBER not in r for r in world.slots["b1"].device.records("g:team").values())
    assert world.violations == []


def test_release_upgrade_without_a_rollout_or_twice_changes_nothing():
    world = run(release([S.Upgrade("a1", at=50), S.Upgrade("a1", at=90)]), newer_client)
    assert len(events(world, "version.upgrade")) == 1
    single = run_world(release(rollout=None), newer_client)
    assert running_class(single.slots["a1"].device) is NewerClient  # one version: all on it
    single.parties.upgrade("a2")
    assert events(single, "version.upgrade") == []


class ForgetsPins(Device):
    """A new version that cannot read the pins the old one kept."""

    def pin(self, device_id):
        return None


def test_release_persisted_state_names_what_the_new_version_reads_back_differently():
    forgets = Variant("forgets-pins", "reads no pin back", device=ForgetsPins)
    world = run(release([S.Upgrade("a2", at=60)]), forgets)
    found = [v for v in world.violations if v.invariant == "persisted-state"]
    assert found and "pins" in found[0].detail and found[0].devices == ("a2",)


def test_release_trace_is_a_function_of_the_seed():
    spec = release([S.Upgrade("a1", at=40), S.Upgrade("relay", at=80)])
    first = run(spec, newer_client, base=older_relay).trace.trace_hash()
    assert first == run(spec, newer_client, base=older_relay).trace.trace_hash()
    other = attrs.evolve(spec, seed=spec.seed + 1)
    assert run(other, newer_client, base=older_relay).trace.trace_hash() != first
