"""Capabilities: asked only for g: graphs; absent or None allows all (spec: Authentication)."""

from relay_helpers import Harness, op

from simkit.relay import Identity, Relay, StaticHost


class RecordingHost(StaticHost):
    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.asked = []

    def capabilities(self, member_id, group_id):
        self.asked.append((member_id, group_id))
        return []


def test_capabilities_are_asked_only_for_group_graphs():
    h = Harness()
    h.host = RecordingHost(["alice", "bob"], {"team": ["alice", "bob"]})
    h.relay = Relay(h.host, h.clock)
    h.register("alice", "a1")
    h.register("bob", "b1", 2)
    assert h.push("u", [op("r1", 1)]).status == 200
    assert h.push("d:bob", [op("r1", 1)]).status == 200
    assert h.put_keys("d:bob", 1, ["a1", "b1"]).status == 200
    assert h.host.asked == []
    assert h.push("g:team", [op("r1", 1)]).status == 403
    assert h.host.asked == [("alice", "team")]


def test_a_host_without_a_capability_function_allows_everything():
    class PlainHost:
        def authenticate(self, request):
            return Identity(request.headers["x-member"], request.headers["x-device"])

        def is_member(self, member_id):
            return True

        is_active = is_member

        def group_members(self, group_id):
            return ["alice"]

    h = Harness()
    h.relay = Relay(PlainHost(), h.clock)
    h.register("alice", "a1")
    assert h.push("g:team", [op("r1", 1)]).status == 200
    assert h.put_keys("g:team", 1, ["a1"]).status == 200


def test_capabilities_none_for_the_group_allows_everything(h):
    h.host.set_capabilities("alice", "team", None)
    assert h.push("g:team", [op("r1", 1)]).status == 200


def test_capabilities_set_back_to_none_allow_everything_again(h):
    """The host's directory answers null again: the earlier list no longer holds."""
    h.host.set_capabilities("alice", "team", [])
    assert h.push("g:team", [op("r1", 1)]).json()["need"] == "write"
    h.host.set_capabilities("alice", "team", None)
    assert h.push("g:team", [op("r1", 2)]).status == 200


def test_capability_list_must_contain_the_needed_capability(h):
    h.host.set_capabilities("alice", "team", ["write"])
    assert h.push("g:team", [op("r1", 1)]).status == 200
    assert h.put_keys("g:team", 1, ["a1", "a2", "b1"]).json()["need"] == "rotate"
    h.host.set_capabilities("alice", "team", ["rotate"])
    assert h.push("g:team", [op("r1", 2)]).json()["need"] == "write"
    assert h.put_keys("g:team", 1, ["a1", "a2", "b1"]).status == 200
