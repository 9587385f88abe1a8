"""Protocol variants: a changed relay and/or device, fuzzed like the real thing.

A variant is a few lines: subclass ``Relay`` or ``Device``, override the one method
that holds the rule you change, and wrap it in a ``Variant`` (docs/variants.md).
``simkit.sim.variants`` loads one from a reference (``simkit fuzz --variant REF``).
"""

import difflib

import attrs

from simkit.client import Device
from simkit.errors import InputError
from simkit.model import RelayModel
from simkit.model.catalogue import UnknownRule, resolve
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


def _declared(value: object) -> tuple[str, ...]:
    """``changes`` as catalogue IDs: one name or several, each an ID of the spec's rule
    catalogue (``simkit rules``) in any case and spacing; anything else is an error
    naming the nearest IDs (checked as the variant is built, so at load: exit 2)."""
    names = (value,) if isinstance(value, str) else value
    try:
        names = tuple(names)
    except TypeError:
        raise VariantError(
            f"Variant: changes lists rule IDs (simkit rules), not {value!r}"
        ) from None
    out = []
    for name in names:
        try:
            out.append(resolve(name))
        except UnknownRule as exc:
            raise VariantError(f"Variant: changes: {exc}") from None
    return tuple(dict.fromkeys(out))


def _overrides(base: type):
    """A changed class must override something of its base: a class whose methods
    are all new names (a misspelt override) would run the protocol as specified."""

    def check(instance, attribute, value) -> None:
        if value is base:
            return
        defined = _defined(value, base)
        if any(hasattr(base, name) for name in defined):
            return
        if not defined:
            what = "defines no method"
        else:
            near = {
                name: difflib.get_close_matches(name, dir(base), n=1, cutoff=0.6)
                for name in sorted(defined)
            }  # fmt: skip
            what = "overrides no method of it: " + ", ".join(
                f"{name} (did you mean {found[0]}?)" if found else name
                for name, found in near.items()
            )
        raise VariantError(
            f"Variant {instance_name(instance)}: {attribute.name}={value.__qualname__} "
            f"{what}; a variant overrides the {base.__name__} method that holds the rule it "
            "changes (docs/variants.md, Override points)"
        )

    return check


def _defined(cls: type, base: type) -> set[str]:
    """The names ``cls`` (and its classes up to ``base``) define, dunders aside."""
    names: set[str] = set()
    for klass in cls.__mro__:
        if issubclass(base, klass):
            break
        names.update(name for name in vars(klass) if not name.startswith("__"))
    return names


def instance_name(variant) -> str:
    return repr(getattr(variant, "name", "?"))


@attrs.frozen
class Variant:
    """A protocol change: the relay and/or device classes that make it, and the spec
    rules it ``changes`` on purpose, by their IDs in the spec's rule catalogue
    (``simkit rules``: ``client rule 4``, ``push rule 2``, ``devices: revoke``). The
    models leave those rules to the other invariants, which judge what the change does;
    or, given ``relay_model`` / ``device_model``, the variant's own models judge them
    (docs/variants.md)."""

    name: str = attrs.field(validator=_text)
    description: str = attrs.field(validator=_text)
    relay: type[Relay] = attrs.field(default=Relay, validator=[_subclass(Relay), _overrides(Relay)])
    device: type[Device] = attrs.field(
        default=Device, validator=[_subclass(Device), _overrides(Device)]
    )
    changes: tuple[str, ...] = attrs.field(default=(), converter=_declared)
    relay_model: type[RelayModel] = attrs.field(default=RelayModel, validator=_subclass(RelayModel))
    device_model: type[DeviceModel] = attrs.field(
        default=DeviceModel, validator=_subclass(DeviceModel)
    )


HONEST = Variant("honest", "the protocol as specified")
