"""The built-in other versions: the protocol one release before and one after this
one, as Versioning rule 3 describes them, so that a release is fuzzed even without a
variant of one's own (``simkit fuzz --rollout``, docs/releases.md). Each is a
``Variant``; ``--variant`` and ``--base`` take their names."""

from simkit.client.versions import NewerClient, OlderClient
from simkit.model.older import OlderRelayModel
from simkit.relay.older import OlderRelay
from simkit.sim.variant import Variant

older_relay = Variant(
    "older-relay",
    "the previous release's relay: no epoch on push and pull answers, drops excluding, "
    "no log route",
    relay=OlderRelay,
    relay_model=OlderRelayModel,
)
older_client = Variant(
    "older-client",
    "the previous release's client: registers without selfSig",
    device=OlderClient,
)
previous_release = Variant(
    "previous-release",
    "the previous release: its relay and its client",
    relay=OlderRelay,
    device=OlderClient,
    relay_model=OlderRelayModel,
)
newer_client = Variant(
    "newer-client",
    "the next release's client: an unknown optional member in every record it writes "
    "and an unknown field in every JSON request",
    device=NewerClient,
)

BUILT_IN = {v.name: v for v in (older_relay, older_client, previous_release, newer_client)}
