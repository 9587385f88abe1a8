"""Keys: wrapped graph keys per device and epoch, the roster, key gaps (spec: Keys)."""

from simkit.model import schema
from simkit.model.answer import Expected, Refuse, invalid, ok
from simkit.model.state import Call

ROSTER = ("deviceId", "memberId", "pubJwk", "sigJwk", "selfSig", "revokedAt")


def get_keys(model, call: Call) -> Expected:
    """The graph's key state and the calling device's own wraps."""
    graph = model.graph(call.key)
    wraps = [
        {"epoch": epoch, "wrapped": holders[call.device]}
        for epoch, holders in sorted(graph.wraps.items())
        if call.device in holders
    ]
    return ok(
        "keys: GET keys",
        {
            "latestEpoch": graph.latest_epoch,
            "rotationRequired": graph.rotation_required,
            "wraps": wraps,
        },
    )


def roster(model, call: Call) -> Expected:
    """Devices of current members and of every member who ever pushed, revoked included."""
    members = sorted({*model.current_members(call.key), *model.graph(call.key).pushers})
    devices = [{name: d[name] for name in ROSTER} for m in members for d in model.devices_of(m)]
    return ok("keys: roster", {"devices": devices})


def keygaps(model, call: Call) -> Expected:
    """Eligible devices lacking some epoch, with public keys from the roster."""
    graph = model.graph(call.key)
    gaps = []
    for device in model.eligible(call.key):
        epochs = [
            e for e in range(1, graph.latest_epoch + 1)
            if device["deviceId"] not in graph.wraps.get(e, {})
        ]  # fmt: skip
        if epochs:
            gaps.append({**{name: device[name] for name in ROSTER[:-1]}, "epochs": epochs})
    return ok("keys: keygaps", {"latestEpoch": graph.latest_epoch, "gaps": gaps})


def put_keys(model, call: Call) -> Expected:
    """``epoch > latest`` mints (rotation rules 1-6); ``epoch <= latest`` grants into gaps."""
    if not schema.keys_body(call.body):
        raise invalid("pipeline step 7", "POST keys body schema")
    epoch = int(call.body["epoch"])
    wraps = {w["deviceId"]: w["wrapped"] for w in call.body["wraps"]}
    excluding = call.body.get("excluding", [])
    graph = model.graph(call.key)
    eligible = [d["deviceId"] for d in model.eligible(call.key)]
    if epoch <= graph.latest_epoch:
        _only_member_devices(wraps, eligible, ("keys: grant", "rotation rule 6"))
        holders = graph.wraps.get(epoch, {})
        granted = {d: w for d, w in wraps.items() if d not in holders}  # never overwrites
        if granted:
            model.written_graph(call.key).wraps[epoch] = {**holders, **granted}
        answer = {"ok": True, "latestEpoch": graph.latest_epoch}
        return ok(("keys: grant", "epoch states"), answer, "never overwrites")
    if epoch != graph.latest_epoch + 1:
        raise Refuse(
            409, "epoch-gap", ("rotation rule 1", "epoch states"), "epoch = latest + 1",
            latestEpoch=graph.latest_epoch,
        )  # fmt: skip
    model.require(call, "rotate", ("rotation rule 2", "auth rule 5"))
    missing = [d for d in eligible if d not in wraps and d not in excluding]
    if missing:
        raise Refuse(
            400, "incomplete-rotation", "rotation rule 3", "cover every eligible device",
            missing=missing,
        )  # fmt: skip
    bad = [d for d in excluding if d in wraps or d not in eligible]
    if bad:
        raise Refuse(
            400, "invalid-exclusion", "rotation rule 4", "exclude only eligible, unwrapped",
            devices=bad,
        )  # fmt: skip
    _only_member_devices(wraps, eligible, "rotation rule 6")
    graph = model.written_graph(call.key)
    graph.wraps[epoch] = dict(wraps)
    graph.latest_epoch = epoch
    graph.rotation_required = False  # docs/relay.md: a new epoch is what a revocation owes
    return ok(
        ("rotation rule 1", "epoch states"), {"ok": True, "latestEpoch": epoch}, "mints latest + 1"
    )


def _only_member_devices(wraps: dict[str, str], eligible: list[str], rule) -> None:
    """Rotation rule 6: every wrap addresses an active device of a current member."""
    strangers = [d for d in wraps if d not in eligible]
    if strangers:
        raise Refuse(400, "not-a-member-device", rule, devices=strangers)


def discard(model, call: Call) -> Expected:
    """DELETE keys/:epoch removes the caller's own wrap and nobody else's."""
    rule = "keys: discard"
    if not schema.decimal(call.params["epoch"], 1):
        raise invalid(rule, "epoch")
    holders = model.graph(call.key).wraps.get(int(call.params["epoch"]), {})
    discarded = call.device in holders
    if discarded:
        del holders[call.device]
        model.written_graph(call.key)
    return ok(rule, {"ok": True, "discarded": discarded})
