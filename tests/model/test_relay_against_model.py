"""simkit's relay alone against the executable model of the spec's relay.

A rogue device sends raw requests drawn from the whole request space of the
fifteen routes (simkit.model.requests), between clock moves, sweeps, restarts,
rollbacks and directory changes, under settings drawn per example (tiny limits,
quotas, rate limits and ttls, or the spec's). Every answer is checked against the
model's prediction and the whole store against the model's after every step.

The second half proves the check has teeth: every deliberately broken relay in
``broken_relays`` is caught within a small, derandomized budget.
"""

import json

import pytest
from hypothesis import Phase, event, settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    initialize,
    invariant,
    rule,
    run_state_machine_as_test,
)

from simkit.model import RelayModel, compare, relay_counters, store_findings
from simkit.model.requests import RequestSpace, jwk, requests
from simkit.relay import RateLimit, Relay, Request, StaticHost
from tests.model.broken_relays import BROKEN

T0 = 1_700_000_000_000
DAY = 86_400_000
MEMBERS = {"alice": ("a1", "a2", "a3"), "bob": ("b1", "b2"), "carol": ("c1", "c2"), "dave": ("d1",)}
GROUPS = {"team": ["alice", "bob"], "ops": ["bob", "carol", "dave"]}
SPACE = RequestSpace(devices=MEMBERS, groups=("team", "ops"))
TIGHT = {"read": RateLimit(4, 2_000), "write": RateLimit(4, 2_000), "blob": RateLimit(2, 5_000)}

# Tiny values for the settings; each example keeps the spec's values for all but a
# few of them (all tiny at once would refuse nearly everything).
TINY = {
    "max_ops_per_push": st.sampled_from([2, 3]),
    "max_pull_limit": st.sampled_from([1, 2, 3]),
    "max_push_bytes": st.sampled_from([700, 2_000]),
    "max_ciphertext_chars": st.sampled_from([12, 40]),
    "max_blob_bytes": st.sampled_from([8, 64]),
    "max_rev_skew_ms": st.sampled_from([1, 1_000]),
    "max_blob_ttl_ms": st.sampled_from([1, 5_000]),
    "quota_records": st.sampled_from([1, 3]),
    "quota_bytes": st.sampled_from([20, 60]),
    "quota_blob_bytes": st.sampled_from([10, 100]),
    "rate_limits": st.sampled_from([TIGHT, {}]),
    "sweep_interval_ms": st.sampled_from([0, 1_000]),
}
relay_settings = st.sets(st.sampled_from(sorted(TINY)), max_size=4).flatmap(
    lambda names: st.fixed_dictionaries({name: TINY[name] for name in sorted(names)})
)

# Every status and code the spec's Errors table (and docs/relay.md) lists, and the
# per-op reasons of a 200 push: the honest run must reach each of them.
SPEC_ANSWERS = {
    "200", "400 invalid", "400 incomplete-rotation", "400 invalid-exclusion",
    "400 not-a-member-device", "401 unauthenticated", "403 malformed-identity",
    "403 device-not-registered", "403 device-revoked", "403 device-mismatch",
    "403 not-a-member", "403 not-permitted", "404 not-found", "404 unknown-member",
    "404 unknown-device", "405 method-not-allowed", "409 device-key-conflict",
    "409 epoch-gap", "413 too-large", "413 quota-blob-bytes", "429 rate-limited",
    "rejected rev-too-far-ahead", "rejected quota-records", "rejected quota-bytes",
}  # fmt: skip


class Clock:
    def __init__(self) -> None:
        self.now = T0

    def __call__(self) -> int:
        return self.now


def registration(member: str, device: str) -> Request:
    body = {"pubJwk": jwk(device, 0, "pub"), "sigJwk": jwk(device, 0, "sig")}
    return Request("PUT", f"/devices/{device}", None, SPACE.credential(member, device),
                   json.dumps(body).encode())  # fmt: skip


class RelayAgainstModel(RuleBasedStateMachine):
    """The relay (or a broken subclass: ``relay_class``) against ``RelayModel``."""

    relay_class: type[Relay] = Relay
    reached: set[str] = set()  # answers seen, over every example of a run

    def __init__(self) -> None:
        super().__init__()
        self.model = None

    @initialize(
        config=relay_settings,
        capabilities=st.sampled_from([{}, {("carol", "ops"): []}, {("bob", "team"): ["write"]}]),
    )
    def start(self, config, capabilities):
        self.config, self.clock, self.saved = config, Clock(), None
        self.host = StaticHost(MEMBERS, groups=GROUPS, capabilities=capabilities)
        self.relay = self.relay_class(self.host, self.clock, **config)
        self.model = RelayModel(self.host, self.clock.now, **config)
        for member, device in (("alice", "a1"), ("bob", "b1"), ("carol", "c1")):
            self.send(registration(member, device))

    def send(self, request: Request) -> dict | None:
        """One exchange, checked against the model; the parsed answer."""
        expected = self.model.handle(request, self.clock.now)
        response = self.relay.handle(request)
        body = response.json() if expected.raw is None and response.status != 500 else None
        answer = f"{response.status} {body.get('error', '')}".strip() if body else "200"
        self.reached.add(answer)
        for rejected in (body or {}).get("rejected", []):
            self.reached.add(f"rejected {rejected.get('reason')}")
        event(answer)
        findings = compare(expected, response)
        assert not findings, "\n".join([f"{request!r}", *findings])
        return body

    @rule(data=st.data())
    def raw_requests(self, data):
        for _ in range(data.draw(st.integers(1, 8), label="requests")):
            self.send(data.draw(requests(self.model, SPACE, self.clock.now)))

    @rule(
        who=st.sampled_from(["a1", "b1", "c1"]),
        gid=st.sampled_from(["u", "g:team", "g:ops", "d:alice", "d:dave"]),
        what=st.sampled_from(["pull", "log"]),
        limit=st.sampled_from([None, "1", "2"]),
        kinds=st.sampled_from([None, "note", "note,task"]),
    )
    def page_through(self, who, gid, what, limit, kinds):
        """Follow cursors until ``more`` is false; a relay that never gets there fails."""
        member = self.model.devices[who]["memberId"]
        gid = "d:bob" if gid == f"d:{member}" else gid
        query = {"after": "0"} | ({"limit": limit} if limit else {})
        if kinds and what == "pull":
            query["kinds"] = kinds
        bound = max((g.counter for g in self.model.graphs.values()), default=0) + 2
        for _ in range(bound):
            page = self.send(Request("GET", f"/graphs/{gid}/{what}", query,
                                     SPACE.credential(member, who)))  # fmt: skip
            if page is None or "more" not in page or not page["more"]:
                return
            query["after"] = str(page["cursor"])
        raise AssertionError(f"{what} of {gid} still says more after {bound} pages")

    @rule(ms=st.sampled_from([1, 999, 1_000, 5_000, 300_000, 300_001, DAY, 31 * DAY]))
    def clock_moves(self, ms):
        self.clock.now += ms

    @rule(what=st.sampled_from(["sweep", "sweep_if_due", "restart", "save", "roll_back"]))
    def relay_event(self, what):
        """The sweeper runs (directly or on its schedule), the relay restarts from its
        store (rate-limit buckets refill), a snapshot is saved, or the relay is restored
        from the saved one (the model restores its own)."""
        now = self.clock.now
        if what == "sweep":
            forgotten, expected = self.relay.sweep(), self.model.sweep(now)
            assert forgotten == expected, f"sweeper: forgot {forgotten}, expected {expected}"
        elif what == "sweep_if_due":
            forgotten, expected = self.relay.sweep_if_due(), self.model.sweep_if_due(now)
            assert forgotten == expected, f"sweep schedule: swept {forgotten}, expected {expected}"
        elif what == "save":
            self.saved = (self.relay.snapshot(), self.model.snapshot())
        else:
            data = self.relay.snapshot()
            if what == "roll_back" and self.saved is not None:
                data = self.saved[0]
                self.model.restore(self.saved[1])
            self.relay = self.relay_class.restore(self.host, self.clock, data, **self.config)
            self.model.restart(now)

    @rule(
        change=st.sampled_from(["join", "leave", "deactivate", "reactivate", "capabilities"]),
        member=st.sampled_from(sorted(MEMBERS)),
        group=st.sampled_from(sorted(GROUPS)),
        caps=st.sampled_from([None, [], ["write"], ["rotate"], ["write", "rotate"]]),
    )
    def directory_changes(self, change, member, group, caps):
        """The host's directory moves under the relay (both read it live)."""
        if change == "capabilities":
            self.host.set_capabilities(member, group, caps)
        elif change in ("join", "leave"):
            getattr(self.host, change)(group, member)
        else:
            getattr(self.host, change)(member)

    @invariant()
    def store_matches_the_model(self):
        if self.model is not None:
            findings = store_findings(self.model, self.relay.snapshot(), relay_counters(self.relay))
            assert not findings, "\n".join(findings)


def run(relay_class: type[Relay], **budget) -> type[RelayAgainstModel]:
    machine = type(f"{relay_class.__name__}AgainstModel", (RelayAgainstModel,),
                   {"relay_class": relay_class, "reached": set()})  # fmt: skip
    run_state_machine_as_test(machine, settings=settings(database=None, **budget))
    return machine


def test_relay_answers_and_store_match_the_model_and_reach_every_spec_answer():
    machine = run(Relay, max_examples=80, stateful_step_count=40)
    missing = sorted(SPEC_ANSWERS - machine.reached)
    assert not missing, f"never reached: {missing}"


@pytest.mark.parametrize("broken", BROKEN, ids=[b.__name__ for b in BROKEN])
def test_model_check_catches_a_broken_relay(broken):
    with pytest.raises(AssertionError):
        run(
            broken,
            max_examples=broken.budget,
            stateful_step_count=30,
            derandomize=True,
            phases=[Phase.explicit, Phase.generate],
            report_multiple_bugs=False,
        )
