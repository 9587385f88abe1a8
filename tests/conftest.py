"""Hypothesis profiles: CI runs a short derandomized profile; `dev` explores more.

Select with HYPOTHESIS_PROFILE=dev (the default is `ci`).
"""

import importlib
import os
import pkgutil

import pytest
from hypothesis import HealthCheck, settings

settings.register_profile(
    "ci",
    derandomize=True,
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    print_blob=True,
)
settings.register_profile(
    "dev",
    max_examples=500,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    print_blob=True,
)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))


def _import_all_of_simkit() -> None:
    """Hypothesis draws constants from every local module its process has imported, so a
    derandomized test drew otherwise on a pytest-xdist worker whose earlier tests had
    imported more of simkit (a budgeted test then missed what it catches alone): every
    process imports all of simkit before its first test."""
    import simkit

    for module in pkgutil.walk_packages(simkit.__path__, "simkit."):
        if not module.name.endswith("__main__"):
            importlib.import_module(module.name)


_import_all_of_simkit()


@pytest.fixture(autouse=True)
def _known_findings_of_this_test(tmp_path, monkeypatch):
    """Each test keeps its own known-findings folder: a finding one test's fuzz run
    writes is never replayed first by another test (or by the user's next fuzz)."""
    monkeypatch.setattr("simkit.fuzz.corpus.KNOWN", tmp_path / ".hypothesis" / "simkit-findings")
