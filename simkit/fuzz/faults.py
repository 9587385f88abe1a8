"""The rules that draw faults: crashes and restarts, clock jumps, partitions, a relay
in trouble or down, and a ceremony cut between two of its requests."""

from hypothesis import strategies as st
from hypothesis.stateful import rule

from simkit.fuzz import actions as A
from simkit.fuzz.swarm import swarm

# A partial outage fails one route (None: all of them).
OUTAGE_ROUTES = (
    None,
    "GET /graphs/:gid/devices",
    "GET /graphs/:gid/keys",
    "GET /graphs/:gid/keygaps",
    "POST /graphs/:gid/keys",
    "GET /graphs/:gid/log",
)


class FaultRules:
    """Rules of the machines (``simkit.fuzz.machine``) that break what the protocol
    runs on; mixed into ``WorldMachine``."""

    @swarm("interrupt")
    @rule(
        data=st.data(),
        # a ceremony's first request 40 % of the time: a crash before it, or between it
        # and the next, is a situation of its own (simkit.sim.situations)
        requests=st.sampled_from((1, 1, 1, 1, 2, 2, 3, 4, 6, 8)),
        before=st.booleans(),
        fault=st.sampled_from(["crash", "crash", "partition"]),
    )
    def interrupt(self, data, requests, before, fault):
        """A ceremony cut by a crash or a partition right before (or after) one of its
        requests: who finishes it afterwards is what the invariants check."""
        choices = self.ceremonies(data)
        if not choices:
            return
        # the once-per-world ceremonies (a9 recovers, dave joins, a theft) come up less
        # often than a link or a rotation: twice the weight here, a theft (offered by
        # the adversary's examples alone) five times
        once = [c for c in choices if isinstance(c, A.Recover | A.Invite | A.Steal)]
        thefts = [c for c in choices if isinstance(c, A.Steal)] * 3
        step = self.pick(data, choices + once + thefts, "ceremony")
        if isinstance(step, A.Link):
            self.links += 1
        self.do(A.Interrupt(ceremony=step, requests=requests, before=before, fault=fault))

    @swarm("crash")
    @rule(data=st.data())
    def crash_or_restart(self, data):
        down = [
            d for d, s in sorted(self.world.slots.items()) if s.device is None and not s.revoked
        ]
        if down and data.draw(st.booleans(), label="restart"):
            self.do(A.Restart(device=self.pick(data, down, "device")))
        elif len(self.honest_devices()) > 2:
            self.do(A.Crash(device=self.pick(data, self.honest_devices(), "device")))

    @swarm("jump")
    @rule(data=st.data(), ms=st.sampled_from([-600_000, -90_000, 90_000, 400_000, 3_600_000]))
    def jump_clock(self, data, ms):
        if not self.honest_devices():
            return
        self.do(A.Jump(device=self.pick(data, self.honest_devices(), "device"), ms=ms))

    @swarm("partition")
    @rule(data=st.data(), seconds=st.sampled_from([10, 60, 300]))
    def partition(self, data, seconds):
        if not self.alive():
            return
        devices = data.draw(
            st.lists(st.sampled_from(self.alive()), min_size=1, max_size=3, unique=True)
        )
        self.do(A.Partition(devices=sorted(devices), seconds=seconds))

    @swarm("partition")
    @rule()
    def heal(self):
        self.do(A.Heal())

    @swarm("errors")
    @rule(data=st.data(), status=st.sampled_from([503, 429]))
    def relay_trouble(self, data, status):
        """The relay fails every request for a while, or only one route's (a partial
        outage: the roster or the keys cannot be read while pushes and pulls work).
        ``classic`` work: whole outages of 5 or 30 s, as 685eb33 drew."""
        seconds = self.pick(data, [5, 30] if self.classic else [5, 30, 120], "seconds")
        route = None if self.classic else self.pick(data, OUTAGE_ROUTES, "route")
        self.do(A.Errors(status=status, seconds=seconds, route=route))

    @swarm("relay-crash")
    @rule(seconds=st.sampled_from([5, 30]))
    def relay_crash(self, seconds):
        self.do(A.RelayCrash(seconds=seconds))
