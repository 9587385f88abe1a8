"""simkit.fuzz: Hypothesis state machines over simulated worlds, reproducers, variants.

from hypothesis.stateful import run_state_machine_as_test
from simkit.fuzz import HonestMachine
run_state_machine_as_test(HonestMachine)
"""

from simkit.fuzz.driver import WorldDriver
from simkit.fuzz.machine import (
    AdversaryMachine,
    HonestMachine,
    InvariantViolation,
    WorldMachine,
    machine_for,
)
from simkit.fuzz.steps import WorldParams, apply_step
from simkit.sim.variant import HONEST, Variant
from simkit.sim.variants import load_variant

__all__ = [
    "HONEST",
    "AdversaryMachine",
    "HonestMachine",
    "InvariantViolation",
    "Variant",
    "WorldDriver",
    "WorldMachine",
    "WorldParams",
    "apply_step",
    "load_variant",
    "machine_for",
]
