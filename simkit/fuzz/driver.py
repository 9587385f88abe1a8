"""Drive a world one step at a time from synchronous code (a Hypothesis state machine).

The world runs in its own thread inside one deterministic ``trio.run`` with a
``VirtualClock``. Between steps the clock is frozen (no jumps) and every task is
blocked, so the caller reads the world's state safely and nothing happens behind
its back. A step runs inside the Trio thread until it and every task it woke are
blocked again; ``advance`` lets virtual time run. The same steps in the same order
give the same trace.

An exception raised inside the world reaches the caller as itself, with notes
saying where and when (``simkit.sim.failure``): from the step that raised it, or,
when a task of the world raised it (a device, a timer), from the step during which
the world failed, and from every call after that.
"""

import threading

import trio
import trio.testing

from simkit.errors import SimkitError
from simkit.sim.determinism import collecting_rarely, deterministic_trio
from simkit.sim.failure import surfaced
from simkit.sim.spec import WorldSpec
from simkit.sim.variant import HONEST, Variant
from simkit.sim.world import World


class DriverError(SimkitError):
    """The world was used after it was closed."""


class WorldDriver:
    def __init__(
        self,
        spec: WorldSpec,
        variant: Variant = HONEST,
        device_model: bool = True,
        base: Variant = HONEST,
    ):
        self.world = World(spec, variant, model_check=True, device_model=device_model, base=base)
        self.clock = self.world.clock
        self._ready = threading.Event()
        self._token = None
        self._stop: trio.Event | None = None
        self._error: BaseException | None = None  # what ended the world's run
        self.failure: BaseException | None = None  # the last exception raised from the world
        self.busy = False  # a call is in the world (a snapshot refuses it: not quiescent)
        self._thread = threading.Thread(target=self._main, name="simkit-world", daemon=True)
        self._thread.start()
        self._ready.wait()
        if self._error is not None:
            self.failure = self._error
            raise self.failure

    def _main(self) -> None:
        try:
            with deterministic_trio(self.world.spec.seed), collecting_rarely():
                trio.run(self._serve, clock=self.clock)
        except BaseException as exc:  # reported to the caller, never lost in the thread
            self._error = surfaced(exc, self._where())
        finally:
            self._ready.set()

    def _where(self) -> str:
        return f"seed {self.world.spec.seed!r}, virtual time {self.clock.current_time():.3f} s"

    async def _serve(self) -> None:
        async with self.world.running():
            self._stop = trio.Event()
            self._token = trio.lowlevel.current_trio_token()
            await self._settle()
            self._ready.set()
            await self._stop.wait()

    async def _settle(self) -> None:
        """Freeze time and wait until every other task is blocked."""
        self.clock.frozen = True
        await trio.testing.wait_all_tasks_blocked()

    def run(self, async_fn, *args):
        """Run ``async_fn(*args)`` in the world, then let the world settle; return its result."""

        async def step():
            self.clock.frozen = False  # the step may wait on the network or a timer
            try:
                result = await async_fn(*args)
            finally:
                self.clock.frozen = True  # a step that raised leaves time standing too
            await self._settle()
            return result

        return self._call(step)

    def do(self, fn, *args):
        """Run a synchronous ``fn(*args)`` inside the world's thread (it may wake tasks)."""

        async def call():
            return fn(*args)

        return self.run(call)

    def between_steps(self, fn, *args):
        """Run a synchronous ``fn(*args)`` in the world's thread with time frozen and
        nothing woken: the world stays exactly as it stands (``simkit.fuzz.snapshot``)."""

        async def call():
            return fn(*args)

        return self._call(call)

    def advance(self, seconds: float) -> None:
        """Let ``seconds`` of virtual time pass."""

        self.run(trio.sleep, seconds)

    def now(self) -> float:
        return self.clock.current_time()

    def _call(self, async_fn):
        if self._error is not None:
            self.failure = self._error
            raise self.failure
        if not self._thread.is_alive():
            raise DriverError("the world is closed")
        self.busy = True
        try:
            return trio.from_thread.run(async_fn, trio_token=self._token)
        except BaseException as exc:
            if _run_ended(exc):  # a task of the world raised: the run has ended
                self._thread.join()  # (the step's own tasks, cancelled with it, say so)
                if self._error is None:
                    raise
                failure = self._error
            else:  # the step itself raised
                failure = surfaced(exc, self._where())
        finally:
            self.busy = False
        self.failure = failure
        raise failure

    def close(self) -> None:
        """Stop the world and its thread."""
        if self._thread.is_alive() and self._token is not None:
            trio.from_thread.run_sync(self._stop.set, trio_token=self._token)
        self._thread.join(timeout=60)


def _run_ended(exc: BaseException) -> bool:
    """Whether ``exc`` only says the world's run ended under a step: Trio's cancellation
    (of the step, or of every task a step's nursery ran) or a finished run."""
    if isinstance(exc, BaseExceptionGroup):
        return all(_run_ended(e) for e in exc.exceptions)
    return isinstance(exc, trio.Cancelled | trio.RunFinishedError)
