"""Protocol variants: a changed relay and/or device, fuzzed like the real thing.

A variant is a few lines: subclass ``Relay`` or ``Device``, override the one method
that holds the rule you change, and wrap it in a ``Variant`` (docs/variants.md).
``simkit fuzz --variant module:name`` loads one.
"""

import importlib

import attrs

from simkit.client import Device
from simkit.errors import InputError
from simkit.relay import Relay


class VariantError(InputError):
    """``--variant`` does not name a Variant."""


@attrs.frozen
class Variant:
    name: str
    description: str
    relay: type[Relay] = Relay
    device: type[Device] = Device


HONEST = Variant("honest", "the protocol as specified")


def load_variant(ref: str) -> Variant:
    """Import ``module:name`` and check that it is a Variant."""
    module_name, sep, name = ref.partition(":")
    if not sep or not module_name or not name:
        raise VariantError(f"--variant must be MODULE:NAME, got {ref!r}")
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise VariantError(f"--variant {ref}: cannot import {module_name!r}: {exc}") from None
    variant = getattr(module, name, None)
    if not isinstance(variant, Variant):
        raise VariantError(f"--variant {ref}: {name!r} in {module_name} is not a Variant")
    return variant
