"""When a device acts of its own accord: how long a running device may stay quiet.

The spec fixes the push debounce (250 ms, Defaults) and leaves polling to the client;
docs/client.md states simkit's: a sync run after a write or a poke once its debounce has
passed, and after a poll interval without a run, so that "an idle device syncs at least
every interval and a busy one at most two intervals apart"; a run cut at its share of
the run budget "runs again at once" ("How long a sync run lasts"). The poll interval and
the debounces are the deployment's (``App.poll_interval_s``, ``App.debounce_s``: inputs
of the world, like the approval mode), never read from the device.

A device is *quiet* while its run loop runs and none of its requests is in flight; a
quiet spell starts with the answer or failure that ended its last exchange and ends with
its next request. The longest spell allowed:
- after an answer: two poll intervals and a debounce, on a clock that may run 10 % slow;
- while a task waits to retry a failed request (lost, 429, 5xx): the longest backoff wait
  too (client rule 10), whatever the device's other tasks did meanwhile;
- after a run cut at its share (``sync.stopped`` with ``run-budget``): one debounce.
A spell is judged when the device next sends, and at the end of the run for one still
going. A device that polls a thousand times too seldom, or waits for the poll after a run
it cut short, is caught; one that acts sooner is not (a poke or a write may wake it).
Findings name the catalogue's rule about when a device acts (``default: push debounce``):
the spec's only word on it; the rest is the client's, judged as docs/client.md states it.
docs/model.md, "What it judges".
"""

from simkit.model.device.timing import BACKOFF_CAP_S, DRIFT

SLACK_S = 1.0  # scheduling between a wake-up and its request: none in virtual time, kept safe


class CadenceRules:
    """How long a running device stays quiet (mixed into ``DeviceModel``)."""

    def _cadence_init(self) -> None:
        self._looping = False  # its run loop runs (started, not crashed since)
        self._synced = False  # ... and has ended a sync run since it started
        self._in_flight = 0
        self._quiet_since: float | None = None
        self._backing_off: dict[object, None] = {}  # tasks whose last request failed
        # a run was cut at its share of the budget in this graph: the next run comes at
        # once, until the graph's part of that next run ends (its second ``sync.done``)
        self._cut: str | None = None
        self._cut_ends = 0

    def looping(self, now: float) -> None:
        """The device's run loop starts (at the world's start, or after a restart); its
        spells are judged once it has ended a sync run (a device that follows no graph
        yet, one invited later, has nothing to sync)."""
        self._looping, self._synced, self._in_flight = True, False, 0
        self._quiet_since = now
        self._backing_off.clear()

    def quiet_until(self, now: float) -> None:
        """Judge the spell the device is in at ``now`` (the end of a run)."""
        if self._in_flight == 0:
            self._judge_quiet(now)

    def _cadence_ran(self, graph_id: str) -> None:
        self._synced = True
        if graph_id == self._cut:
            self._cut_ends += 1
            if self._cut_ends == 2:  # the cut run's end, then the next run's
                self._cut = None

    def _cadence_sent(self, task: object, now: float) -> None:
        if self._in_flight == 0:
            self._judge_quiet(now)
        self._backing_off.pop(task, None)
        self._in_flight += 1
        self._quiet_since = None

    def _cadence_done(self, task: object, now: float, failed: bool) -> None:
        """An exchange of ``task`` ended; a failed one's task may wait out a backoff (a
        ceremony's task that gives up never sends again: only kept to a bound)."""
        self._in_flight = max(0, self._in_flight - 1)
        if failed:
            self._backing_off[task] = None
            if len(self._backing_off) > 16:
                del self._backing_off[next(iter(self._backing_off))]
        if self._in_flight == 0 and self._looping:
            self._quiet_since = now

    def _cadence_cut(self, graph_id: str | None) -> None:
        """The device said a run of ``graph_id`` stopped at its share of the run budget."""
        self._cut, self._cut_ends = graph_id, 0

    def _cadence_crashed(self) -> None:
        self._looping, self._in_flight, self._quiet_since = False, 0, None
        self._cut = None
        self._backing_off.clear()

    def _judge_quiet(self, now: float) -> None:
        since = self._quiet_since
        if since is None or not (self._looping and self._synced):
            return
        quiet, app = now - since, self.app
        poll = (2 * app.poll_interval_s + app.debounce_s) / (1 - DRIFT)
        bound, why = poll, f"two poll intervals of {app.poll_interval_s:g} s and a debounce"
        if self._backing_off:
            bound, why = max(poll, BACKOFF_CAP_S / (1 - DRIFT)), "the longest backoff wait"
        elif self._cut is not None:
            bound, why = app.debounce_s / (1 - DRIFT), "a debounce (a run cut at its share)"
        if quiet > bound + SLACK_S:
            self._quiet_since = now  # one finding per spell
            self.find(
                "default: push debounce",
                f"stayed quiet {quiet:.1f} s with its run loop running (model: at most "
                f"{bound + SLACK_S:.1f} s, {why}; docs/client.md)",
            )
