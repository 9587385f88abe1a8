"""relay-model: every answer of the relay is the one the spec's executable model
(``simkit.model``) gives, and its whole store is the model's."""

from simkit.invariants.base import Invariant


class AgreesWithRelayModel(Invariant):
    """Each request the world's relay answered, each sweep and restart, was checked
    against the model as it happened (``World.answer``): status, error code, the
    body fields the spec fixes, and the state change the spec requires, or none. At
    quiescence the relay's whole store is compared with the model's. A finding names
    the spec rule (docs/model.md). Holds whatever the relay does to its answers: the
    model follows the honest store under them; a colluding relay that serves a
    revoked device changes that store behind the model's back, and from then on the
    relay is not checked (``RelayOracle.retired`` says so)."""

    name = "relay-model"

    def __init__(self) -> None:
        self._read = 0

    def step(self, world):
        findings = world.relay_oracle.findings[self._read :] if world.relay_oracle else []
        self._read += len(findings)
        return [
            self.violation(
                world, f.detail, f.trace_seq, graph=f.graph, devices=f.devices, records=f.records
            )
            for f in findings
        ]

    def final(self, world):
        if world.relay_oracle is None or not world.relay_up:
            return []
        return [self.violation(world, f) for f in world.relay_oracle.store_findings(world.relay)]


class AgreesWithDeviceModel(Invariant):
    """Each honest device did, input by input, what the spec's executable model of a
    device (``simkit.model.device``) says it must: every request it sent, every answer
    it processed and every commit of its durable state (World.device_oracle). A
    finding names the spec rule, the device, what it was given, and both outcomes
    (docs/model.md, "The device model"). Judged against what each device was served,
    it holds whatever the relay does."""

    name = "device-model"

    def __init__(self) -> None:
        self._read = 0

    def final(self, world):
        """A device still quiet at the end is judged for its spell so far (``cadence``)."""
        if world.device_oracle is None:
            return []
        world.device_oracle.quiet_until(world.now())
        return self.step(world)

    def step(self, world):
        oracle = world.device_oracle
        findings = oracle.findings[self._read :] if oracle else []
        self._read += len(findings)
        return [
            self.violation(
                world, f.detail, f.trace_seq, graph=f.graph, devices=f.devices, records=f.records
            )
            for f in findings
        ]
