"""Ceremonies (spec: Ceremonies): bootstrap, link by pairing code or possession,
rotate after revoke, recover from a bundle, invite."""

import pytest

from simkit.client import APPROVE, DeviceError
from simkit.errors import CryptoError
from simkit.protocol import open_record
from tests.client.world import World, app_config, virtual


def _kinds(device, kind):
    return [e.fields for e in device.events if e.kind == kind]


@virtual
async def test_bootstrap_wraps_epoch_1_to_every_active_device_the_creator_vouches_for():
    world = World()
    a1 = await world.registered("alice", "a1")
    a2 = await world.registered("alice", "a2")
    b1 = await world.registered("bob", "b1")
    assert await a1.bootstrap("g:team")
    assert sorted(world.relay.state.graphs["g:team"].wraps[1]) == ["a1", "a2", "b1"]
    for device in (a2, b1):
        device.subscribe("g:team")
        await device.sync()
        assert device.keyring("g:team").keys == a1.keyring("g:team").keys


@virtual
async def test_link_device_waits_then_is_approved_by_a_human_comparing_pairing_codes():
    world = World(members=("alice",), groups={})
    config = app_config(approval_mode=APPROVE)
    a1 = await world.registered("alice", "a1", config=config)
    assert await a1.bootstrap("u")
    a1.put("u", "diary", "note", {"t": "private"})
    await a1.sync()
    new = await world.registered("alice", "a2", config=config)  # keypairs, selfSig, PUT
    new.subscribe("u")
    await new.sync()
    assert new.linking == "waiting"
    await a1.sync()  # the holder reads keygaps: a2 is pending, not wrapped
    assert _kinds(a1, "device.pending") == [{"device": "a2", "member": "alice"}]
    assert a1.pairing_code_of("a2") == new.pairing_code()  # the human compares the codes
    a1.approve("a2")
    await a1.sync()
    await new.sync()
    assert new.linking == "ok"
    assert new.get("u", "diary")["data"] == {"t": "private"}


@virtual
async def test_link_device_is_approved_automatically_on_possession_proof_with_a_valid_self_sig():
    world = World()
    config = app_config(approval_mode=APPROVE)
    a1 = await world.registered("alice", "a1", config=config)
    a2 = await world.registered("alice", "a2", config=config)
    b1 = await world.registered("bob", "b1", config=config)
    assert await b1.bootstrap("d:alice")  # bob's pairwise graph with alice, wrapped to a1 only
    b1.approve("a2")  # bob trusts a2: a2 can write in the pairwise graph
    await b1.sync()
    a2.subscribe("d:bob")
    await a2.sync()
    a2.put("d:bob", "hello", "note", {"t": "from a2"})  # proof of possession by a2
    await a2.sync()
    assert await a1.bootstrap("u")  # alice's personal graph: a2 not approved yet
    assert "a2" not in world.relay.state.graphs["u:alice"].wraps[1]
    a1.subscribe("d:bob")
    b1.approve("a1")
    await b1.sync()
    await a1.sync()  # a1 reads a2's signed record and its selfSig: approved via possession
    assert a1.pin("a2").via == "possession"
    a2.subscribe("u")
    await a1.sync()
    await a2.sync()
    assert 1 in a2.keyring("u").keys


@virtual
async def test_a_device_without_self_sig_is_never_approved_by_possession():
    world = World()
    a1 = await world.registered("alice", "a1")
    legacy = world.device("alice", "a2")
    body = legacy.registration()
    del body["selfSig"]
    answer = await legacy.request("PUT", "/devices/a2", body)
    assert answer.status == 200
    assert await a1.bootstrap("g:team")
    legacy.subscribe("g:team")
    await legacy.sync()
    legacy.put("g:team", "n1", "note", {"t": 1})
    await legacy.sync()
    await a1.sync()
    assert a1.get("g:team", "n1") is not None
    assert a1.pin("a2") is None


@virtual
async def test_revoke_then_rotate_the_revoked_device_gets_no_new_key_and_reads_nothing_new():
    world = World()
    a1 = await world.registered("alice", "a1")
    a2 = await world.registered("alice", "a2")
    b1 = await world.registered("bob", "b1")
    assert await a1.bootstrap("g:team")
    for device in (a2, b1):
        device.subscribe("g:team")
    await world.sync_all()
    owed = await a1.revoke("a2")
    assert owed == ["g:team"]
    graph = world.relay.state.graphs["g:team"]
    assert graph.latest_epoch == 2 and "a2" not in graph.wraps[2]
    assert not graph.rotation_required
    a1.put("g:team", "after", "note", {"t": "secret"})
    await world.sync_all()
    assert b1.get("g:team", "after")["data"] == {"t": "secret"}
    assert 2 not in a2.keyring("g:team").keys
    row = graph.records["after"]

    with pytest.raises(CryptoError):
        open_record(a2.keyring("g:team").keys[1], "g:team", "after", row.n, row.c)


@virtual
async def test_recover_from_a_bundle_is_a_new_device_and_import_wipes_the_local_store():
    world = World()
    a1 = await world.registered("alice", "a1")
    assert await a1.bootstrap("g:team")
    a1.put("g:team", "n1", "note", {"t": 1})
    await a1.sync()
    bundle = a1.recovery_bundle("correct horse")
    assert "keys" not in str(bundle)
    fresh = await world.registered("alice", "a9")
    fresh.put("u", "local-only", "note", {"t": "wiped"})
    await fresh.import_bundle(bundle, "correct horse")
    assert fresh.records("u") == {}
    assert fresh.device_id == "a9" and fresh.keys.sig_jwk != a1.keys.sig_jwk
    await fresh.sync()
    assert fresh.get("g:team", "n1")["data"] == {"t": 1}
    with pytest.raises(CryptoError):
        await fresh.import_bundle(bundle, "wrong")


@virtual
async def test_invite_carries_the_keyring_and_only_the_door_code_leaves_the_device():
    world = World(groups={"team": ["alice"]})
    a1 = await world.registered("alice", "a1")
    assert await a1.bootstrap("g:team")
    a1.put("g:team", "n1", "note", {"t": "welcome"})
    await a1.sync()
    invite, box = a1.invite("g:team")
    _door, secret = invite.split(".")
    assert secret not in str(box)
    world.host.join("team", "carol")
    c1 = await world.registered("carol", "c1")
    assert c1.accept_invite(invite, box) == "g:team"
    await c1.sync()
    assert c1.get("g:team", "n1")["data"] == {"t": "welcome"}


@virtual
async def test_registering_the_same_device_id_with_other_keys_is_refused():
    world = World()
    a1 = await world.registered("alice", "a1")
    assert await a1.register() is False  # same keys: idempotent, not fresh
    impostor = world.device("alice", "a1", entropy_label="impostor")
    with pytest.raises(DeviceError, match="409"):
        await impostor.register()


@virtual
async def test_protocol_limit_concurrent_rotations_in_approve_mode_split_an_epoch():
    """Spec gap (docs/client.md): a second POST of a new epoch is a grant, and its
    answer does not say so. Its key reaches every device the first rotator excluded."""
    import trio

    world = World()
    strict = app_config(approval_mode=APPROVE)
    a1 = await world.registered("alice", "a1", config=strict)
    b1 = await world.registered("bob", "b1", config=strict)
    c1 = await world.registered("carol", "c1", config=strict)
    for holder, others in ((a1, ("b1",)), (b1, ("a1", "c1"))):
        for other in others:
            holder.set_pin(other, "approved", "human", world.devices[other].fingerprint)
    assert await a1.bootstrap("g:team")
    for device in (b1, c1):
        device.subscribe("g:team")
    await world.sync_all()
    a1_posted = trio.Event()
    a1.transport.fail = lambda r: (
        a1_posted.set() if r.path.endswith("/keys") and r.method == "POST" else None
    )
    b1_send = b1.transport.send

    async def b1_after_a1(request):  # both read epoch 1; a1 (which excludes c1) posts first
        if request.method == "POST" and request.path.endswith("/keys"):
            await a1_posted.wait()
        return await b1_send(request)

    b1.transport.send = b1_after_a1
    async with trio.open_nursery() as nursery:
        nursery.start_soon(a1.rotate, "g:team")
        nursery.start_soon(b1.rotate, "g:team")
    await world.sync_all()
    keys = {d.device_id: d.keyring("g:team").keys.get(2) for d in (a1, b1, c1)}
    assert keys["a1"] == keys["b1"]  # the rotators read back what the relay holds
    assert keys["c1"] is not None and keys["c1"] != keys["a1"]  # c1 got the loser's key
