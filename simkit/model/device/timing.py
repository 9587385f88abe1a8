"""Client rule 10 in time: when a device retries a request, and how long it waits.

The spec says "429, 5xx and network failures retry with jittered backoff and bounded
attempts; other 4xx are not retried". The numbers are the client's to choose, and
docs/client.md states simkit's: the first retry after half a second, doubling to a 30 s
cap, each wait drawn between half and all of that, five attempts in all ("Backoff").
The model holds
those documented numbers itself (it never reads the client's configuration), so a client
that drifts from its documented policy is caught: a retry of an answer that is not
retried, a wait outside its range (a unit read wrongly, a backoff that never grows, a
retry at once), a sixth attempt, waits with no spread (no jitter). Which answer a retry
follows is what the device's ``retry`` event says it does: an application may send a
request again after a 4xx of its own accord (a step tried again), not the transport. A
change that retries otherwise on purpose declares ``client rule 10``. docs/model.md, "What
it judges".

A retry is the same request sent again by the same task after its failure, before that
task's sync run ends (``sync.done``): a later run that sends the same request again is a
new request, not an attempt; so is one sent after the last attempt failed, unless it
comes when a further retry would (an application that tries a whole step again, as the
world's setup does every 10 s, sends it later).
"""

import attrs

BACKOFF_BASE_S = 0.5  # docs/client.md, "Backoff (client rule 10)"
BACKOFF_CAP_S = 30.0
ATTEMPTS = 5
JITTER = (0.5, 1.0)  # each wait is this share of the nominal wait, drawn
# A device's clock may run fast or slow (scenarios allow 10 %: spec.max_drift_ppm), and
# the client waits on it: a wait of s on a clock drifting by d takes s / (1 + d).
DRIFT = 0.1
JITTER_SAMPLES = 6  # waits needed before waits of one and the same share mean no jitter
TASKS_KEPT = 64  # a task that ends without its run's end (a ceremony's) leaves its entry


def nominal_wait(retry: int) -> float:
    """The documented wait before retry ``retry`` (1 for the first), before jitter."""
    return min(BACKOFF_CAP_S, BACKOFF_BASE_S * 2 ** (retry - 1))


@attrs.define
class Attempts:
    """One task's request that failed: its signature, how often it failed, the last time."""

    signature: tuple
    failures: int
    failed_at: float


class TimingRules:
    """Client rule 10 over virtual time (mixed into ``DeviceModel``)."""

    def _timing_init(self) -> None:
        self._attempts: dict[object, Attempts] = {}  # task -> its failing request
        self._answered: dict[object, tuple] = {}  # task -> (signature, status): not retried
        self._shares: list[float] = []  # each wait over its nominal wait
        self._jitter_judged = False

    def _timing_sent(self, task: object, signature: tuple, what: str, now: float) -> None:
        """The task sends ``signature``: a retry is judged for its cause, wait and count."""
        self._answered.pop(task, None)
        failed = self._attempts.get(task)
        if failed is None or failed.signature != signature:
            self._attempts.pop(task, None)
            return
        retry = failed.failures
        waited, nominal = now - failed.failed_at, nominal_wait(retry)
        low, high = JITTER[0] * nominal / (1 + DRIFT), JITTER[1] * nominal / (1 - DRIFT)
        if retry >= ATTEMPTS:  # given up: sent again later, it is a new request
            del self._attempts[task]
            if low <= waited <= high:  # ... unless it comes as a further retry would
                self.find(
                    "client rule 10",
                    f"sent {what} a {retry + 1}th time {waited:.3f} s after its failure "
                    f"{retry} (model: attempts are bounded; docs/client.md makes {ATTEMPTS})",
                )
            return
        if not low <= waited <= high:
            self.find(
                "client rule 10",
                f"retried {what} {waited:.3f} s after its failure {retry} (model: docs/client.md's "
                f"backoff waits {JITTER[0] * nominal:g} to {JITTER[1] * nominal:g} s before "
                f"retry {retry})",
            )
        self._waited(waited / nominal, what)

    def _waited(self, share: float, what: str) -> None:
        """Jitter: a device's waits are not all one and the same share of their nominal."""
        if self._jitter_judged:
            return
        self._shares.append(share)
        if len(self._shares) < JITTER_SAMPLES:
            return
        self._jitter_judged = True
        if max(self._shares) - min(self._shares) < 1e-6 * max(self._shares):
            self.find(
                "client rule 10",
                f"waited {len(self._shares)} times exactly {self._shares[0]:.4f} of the nominal "
                f"backoff, the last before retrying {what} (model: jittered backoff)",
            )
        self._shares = []

    def _retrying(self, task: object) -> None:
        """The device says it retries the task's request (its ``retry`` event, before the
        wait): only after 429, 5xx, a loss or a malformed answer."""
        refused = self._answered.get(task)
        if refused is not None:
            self.find(
                "client rule 10",
                f"retried {refused[0][0]} {refused[0][1]} after it was answered {refused[1]} "
                "(model: other 4xx are not retried; they are surfaced)",
            )

    def _timing_failed(self, task: object, signature: tuple, now: float) -> None:
        """The task's request failed with 429, 5xx, a loss or a malformed answer."""
        failed = self._attempts.get(task)
        if failed is not None and failed.signature == signature:
            failed.failures += 1
            failed.failed_at = now
        else:
            self._attempts[task] = Attempts(signature, 1, now)
            _bounded(self._attempts)

    def _timing_answered(self, task: object, signature: tuple, status: int) -> None:
        """The task's request was answered: a 4xx other than 429 is not retried."""
        self._attempts.pop(task, None)
        if 400 <= status < 500 and status != 429:
            self._answered[task] = (signature, status)
            _bounded(self._answered)

    def _timing_ran(self, task: object) -> None:
        """The task's sync run of a graph ended: what it sends next is a new request."""
        self._attempts.pop(task, None)
        self._answered.pop(task, None)

    def _timing_crashed(self) -> None:
        self._attempts.clear()
        self._answered.clear()


def _bounded(by_task: dict) -> None:
    """Forget the oldest entries of tasks long gone (a long run must not grow)."""
    while len(by_task) > TASKS_KEPT:
        del by_task[next(iter(by_task))]
