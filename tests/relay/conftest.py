import pytest
from relay_helpers import Harness


@pytest.fixture
def h() -> Harness:
    """alice (a1, a2), bob (b1) and carol (c1) registered; group team = alice + bob."""
    harness = Harness()
    harness.register("alice", "a1", 1)
    harness.register("alice", "a2", 2)
    harness.register("bob", "b1", 3)
    harness.register("carol", "c1", 4)
    harness.events.clear()
    return harness
