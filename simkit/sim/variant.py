"""Protocol variants: a changed relay and/or device, fuzzed like the real thing.

A variant is a few lines: subclass ``Relay`` or ``Device``, override the one method
that holds the rule you change, and wrap it in a ``Variant`` (docs/variants.md).
``simkit.sim.variants`` loads one from a reference (``simkit fuzz --variant REF``).
"""

import attrs

from simkit.client import Device
from simkit.errors import InputError
from simkit.model import RelayModel
from simkit.model.device import DeviceModel
from simkit.relay import Relay


class VariantError(InputError):
    """A variant reference does not name a Variant."""


def _subclass(base: type):
    def check(instance, attribute, value) -> None:
        if not (isinstance(value, type) and issubclass(value, base)):
            raise VariantError(
                f"Variant {instance_name(instance)}: {attribute.name} must be a subclass of "
                f"{base.__module__}.{base.__qualname__}, not {value!r} (docs/variants.md)"
            )

    return check


def _text(instance, attribute, value) -> None:
    if not isinstance(value, str) or not value.strip():
        raise VariantError(f"Variant: {attribute.name} must be a non-empty string, not {value!r}")


def _rules(instance, attribute, value) -> None:
    for rule in value:
        if not isinstance(rule, str) or not rule.strip():
            raise VariantError(
                f"Variant {instance_name(instance)}: changes lists spec rules by name, as the "
                f"models name them (docs/model.md), not {rule!r}"
            )


def instance_name(variant) -> str:
    return repr(getattr(variant, "name", "?"))


@attrs.frozen
class Variant:
    """A protocol change: the relay and/or device classes that make it, and the spec
    rules it ``changes`` on purpose, named as the models name them (``client rule 4``,
    ``push rule 2``, ``store: keys: rotationRequired``). The models leave those rules to
    the other invariants, which judge what the change does; or, given ``relay_model`` /
    ``device_model``, the variant's own models judge them (docs/variants.md)."""

    name: str = attrs.field(validator=_text)
    description: str = attrs.field(validator=_text)
    relay: type[Relay] = attrs.field(default=Relay, validator=_subclass(Relay))
    device: type[Device] = attrs.field(default=Device, validator=_subclass(Device))
    changes: tuple[str, ...] = attrs.field(default=(), converter=tuple, validator=_rules)
    relay_model: type[RelayModel] = attrs.field(default=RelayModel, validator=_subclass(RelayModel))
    device_model: type[DeviceModel] = attrs.field(
        default=DeviceModel, validator=_subclass(DeviceModel)
    )


HONEST = Variant("honest", "the protocol as specified")
