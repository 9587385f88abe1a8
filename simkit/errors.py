"""Exception classes shared by every layer.

Every library call that refuses its input raises a subclass of ``SimkitError``
whose message names the rule that was broken, so callers never need to parse a
traceback to learn what went wrong.

The command line sorts them by who can fix the problem (README, "Exit codes"):
an ``InputError`` is the user's input (a file, an option, a reference), exit 2;
anything else that escapes a command is an internal error, exit 1, printed as a
short message that names what to rerun with ``--debug``.
"""


class SimkitError(Exception):
    """Base class of every error simkit raises on purpose."""


class InputError(SimkitError, ValueError):
    """The user's input breaks a rule: a scenario or reproducer file, an option, a
    ``module:name`` reference. The message names the file or option and the rule."""


class ProtocolError(SimkitError, ValueError):
    """A value breaks one of the protocol's byte-exact rules."""


class EncodingError(ProtocolError):
    """Malformed base64url, JSON or another wire encoding."""


class UnsafeIdError(ProtocolError):
    """An ID or graph ID breaks the safe-ID rule ``[A-Za-z0-9_-]{1,64}``."""


class KeyFormatError(ProtocolError):
    """A key or JWK has the wrong size, curve or members."""


class CryptoError(ProtocolError):
    """Decryption, unwrapping or an authenticity check failed."""


class TransportError(SimkitError):
    """A request or its response was lost on the way: the device cannot know
    whether the relay applied it, so it retries (spec: client rule 10)."""


class WorldErrors(SimkitError):
    """Several exceptions escaped one simulated world at once (a single one is
    re-raised as itself, see ``simkit.sim.failure``). Each is in ``exceptions``,
    with notes saying where it was raised; the message lists them one by one."""

    def __init__(self, exceptions: list[BaseException]) -> None:
        self.exceptions = tuple(exceptions)
        lines = [f"{len(self.exceptions)} exceptions escaped the simulated world:"]
        lines += [f"  {i}. {describe(exc)}" for i, exc in enumerate(self.exceptions, 1)]
        super().__init__("\n".join(lines))


def in_world(exc: BaseException) -> bool:
    """Whether ``exc`` escaped a simulated world (the stack under test crashed there,
    ``simkit.sim.failure.surfaced``), as opposed to simkit failing outside any world."""
    inner = exc.exceptions if isinstance(exc, BaseExceptionGroup) else (exc,)
    return any(getattr(e, "simkit_world", None) is not None for e in inner)


def describe(exc: BaseException) -> str:
    """``Type: message``, then each note (where a world raised it) on its own line."""
    text = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
    notes = getattr(exc, "__notes__", ())
    return "\n".join([text, *(f"    {note}" for note in notes)])
