"""Record kinds: the application's registry, and the protocol's reserved kinds.

Kinds beginning with the engine's reserved prefix ``skm.`` are validated by the
protocol's own schemas here, never by the application registry.
"""

from collections.abc import Callable

from simkit.protocol.ids import is_safe_id
from simkit.protocol.logchain import CHECKPOINT_STRIDE

RESERVED_PREFIX = "skm."
CHECKPOINT_KIND = "skm.checkpoint"

Validator = Callable[[dict], bool]


def _is_b64url_head(value: object) -> bool:
    return isinstance(value, str) and len(value) == 43 and is_safe_id(value)


def checkpoint_data_ok(data: dict) -> bool:
    """``{v: 1, d: <device_id>, seq: multiple of 64, head: base64url}``."""
    seq = data.get("seq")
    return (
        data.get("v") == 1
        and is_safe_id(data.get("d"))
        and isinstance(seq, int)
        and not isinstance(seq, bool)
        and seq > 0
        and seq % CHECKPOINT_STRIDE == 0
        and _is_b64url_head(data.get("head"))
    )


RESERVED_SCHEMAS: dict[str, Validator] = {CHECKPOINT_KIND: checkpoint_data_ok}


def accept_any(data: dict) -> bool:
    return True


class Registry:
    """Maps application kinds to validators; ``default`` judges unlisted kinds
    (None refuses them)."""

    def __init__(
        self, validators: dict[str, Validator] | None = None, default: Validator | None = accept_any
    ) -> None:
        self._validators = dict(validators or {})
        self._default = default

    def accepts(self, kind: str, data: dict) -> bool:
        if kind.startswith(RESERVED_PREFIX):
            validator = RESERVED_SCHEMAS.get(kind)
        else:
            validator = self._validators.get(kind, self._default)
        if validator is None:
            return False
        try:
            return bool(validator(data))
        except Exception:  # an application validator that throws has refused the data
            return False
