"""``simkit serve``: the reference relay on a real socket, served by Hypercorn on Trio.

One relay object answers every request. Relay work (``handle`` and the sweeper)
runs on a worker thread, one call at a time (the relay is a single-threaded
object and the store's commit waits for the disk), while Trio keeps reading and
writing every other connection. The relay's clock is the real clock here, the
only place in simkit that gives it one (docs/relay.md, "On the wire").
"""

import signal
import socket
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

import attrs
import trio
from hypercorn.config import Config
from hypercorn.trio import serve as hypercorn_serve

from simkit.errors import InputError
from simkit.realtime import epoch_ms
from simkit.relay import Event, Relay
from simkit.wire.asgi import RelayApp
from simkit.wire.members import TokenHost, load_directory
from simkit.wire.store import Store

T = TypeVar("T")

# Hypercorn's limits, decided here (docs/relay.md, "HTTP limits").
READ_TIMEOUT_S = 30  # a connection that sends nothing for this long mid-request is closed
KEEP_ALIVE_TIMEOUT_S = 5  # an idle connection (no request under way) is closed
MAX_HEADER_BYTES = 16 * 1024  # request line plus headers (HTTP/1.1); more is refused


def conformance_members() -> Path:
    """The members file shipped with simkit: the identities ``simkit conform`` uses."""
    return Path(__file__).with_name("conform") / "members.toml"


@attrs.define
class Server:
    """What ``simkit serve`` runs: the relay, its store (if any), its listening socket."""

    relay: Relay
    store: Store | None
    sock: socket.socket
    limiter: trio.CapacityLimiter | None = None

    async def run_relay(self, work: Callable[[], T]) -> T:
        """Run relay work on a worker thread, never two at once."""
        return await trio.to_thread.run_sync(work, limiter=self.limiter)


def open_server(
    host: str,
    port: int,
    members: str | None,
    store: str | None,
    relay_class: type[Relay] = Relay,
    rate_limits: bool = True,
) -> Server:
    """The relay over its directory and (optionally) its store, and its bound socket."""
    directory = load_directory(members or conformance_members())
    opened = Store(store) if store else None
    state = opened.load() if opened else None
    relay = relay_class(
        TokenHost(directory),
        epoch_ms,  # a served relay lives in real time
        state=state,
        on_event=_report_internal_errors,
        on_commit=opened.commit if opened else None,
        **({} if rate_limits else {"rate_limits": {}}),
    )
    try:
        return Server(relay, opened, listen(host, port))
    except InputError:
        if opened is not None:
            opened.close()
        raise


def _report_internal_errors(event: Event) -> None:
    if event.kind == "relay.internal-error":
        print(f"simkit serve: 500 for {event.method} {event.path}: {event.error}", file=sys.stderr)


def listen(host: str, port: int) -> socket.socket:
    """The listening socket, bound before Hypercorn starts so a bad address is exit 2."""
    try:
        family = socket.AF_INET6 if ":" in host else socket.AF_INET
        return socket.create_server((host, port), family=family, backlog=128)
    except (OSError, OverflowError) as exc:
        raise InputError(f"--host {host} --port {port}: cannot listen there: {exc}") from None


def hypercorn_config(sock: socket.socket) -> Config:
    config = Config()
    config.bind = [f"fd://{sock.detach()}"]
    config.accesslog = None
    config.loglevel = "WARNING"
    config.read_timeout = READ_TIMEOUT_S
    config.keep_alive_timeout = KEEP_ALIVE_TIMEOUT_S
    config.h11_max_incomplete_size = MAX_HEADER_BYTES
    config.h2_max_header_list_size = MAX_HEADER_BYTES
    config.include_server_header = False
    return config


async def run(server: Server, announce: Callable[[str], None]) -> None:
    """Serve until SIGINT or SIGTERM, then stop accepting, finish, and close the store."""
    server.limiter = trio.CapacityLimiter(1)
    app = RelayApp(server.relay, server.run_relay)
    with trio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as signals:

        async def shutdown_requested() -> None:
            async for _ in signals:
                return

        async with trio.open_nursery() as nursery:

            async def serve_then_stop(task_status=trio.TASK_STATUS_IGNORED) -> None:
                await hypercorn_serve(
                    app,
                    hypercorn_config(server.sock),
                    shutdown_trigger=shutdown_requested,
                    task_status=task_status,
                )
                nursery.cancel_scope.cancel()  # the sweeper stops with the server

            binds = await nursery.start(serve_then_stop)
            nursery.start_soon(sweeper, server)
            announce(binds[0])
    if server.store is not None:
        server.store.close()


async def sweeper(server: Server) -> None:
    """The relay's built-in blob sweeper, on the real clock (spec: Limits, 60 s)."""
    relay = server.relay
    interval_s = relay.settings.sweep_interval_ms / 1000
    while relay.next_sweep_at is not None:
        await trio.sleep(max(0, relay.next_sweep_at - relay.clock()) / 1000)
        try:
            await server.run_relay(relay.sweep_if_due)
        except Exception as exc:  # a failed sweep was undone; try again next interval
            print(f"simkit serve: sweep failed, retrying in {interval_s:g} s: {exc!r}",
                  file=sys.stderr)  # fmt: skip
            await trio.sleep(interval_s)
