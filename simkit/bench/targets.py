"""The performance targets (issue 8) checked against a bench run's rows: each is
met, or the distance to it is stated. Printed, never asserted."""

from collections.abc import Callable

import attrs

from simkit.bench import BenchRow


@attrs.frozen
class PerformanceTarget:
    name: str
    goal: str
    measure: Callable[[dict[str, float]], float | None]  # from row name -> value
    met: Callable[[float], bool]
    unit: str

    def verdict(self, values: dict[str, float]) -> str | None:
        """``met``/``missed`` with the figure, or None when the run did not measure it."""
        value = self.measure(values)
        if value is None:
            return None
        state = "met" if self.met(value) else "MISSED"
        return f"{state:6} {self.name}: {value:,.2f} {self.unit} (goal {self.goal})"


def _relay_growth(values: dict[str, float]) -> float | None:
    """Push cost per op at the largest store over the smallest (pushes/s inverted)."""
    pushes = {name: v for name, v in values.items() if name.startswith("push ")}
    if len(pushes) < 2:
        return None
    rates = list(pushes.values())
    return rates[0] / rates[-1]


TARGETS = (
    PerformanceTarget(
        "deliveries/s, 100-device group", ">= 40,000",
        lambda v: v.get("deliveries/s (100 devices)"), lambda x: x >= 40_000, "/s",
    ),
    PerformanceTarget(
        "wall per delivery, 1,000 vs 10 devices", "<= 1.5x",
        lambda v: v.get("wall per delivery, 1,000 vs 10 devices"), lambda x: x <= 1.5, "x",
    ),
    PerformanceTarget(
        "relay push cost per op, largest vs smallest store", "<= 1.25x (flat)",
        _relay_growth, lambda x: x <= 1.25, "x",
    ),
    PerformanceTarget(
        "simulated day, 20 devices writing once a minute", "< 30 s wall",
        lambda v: v.get("wall s per simulated day (20 devices)"), lambda x: x < 30, "s",
    ),
    PerformanceTarget(
        "fuzz steps/s the device model costs, same examples", "<= 15 %",
        lambda v: v.get("device model cost (steps/s lost)"), lambda x: x <= 15, "%",
    ),
    PerformanceTarget(
        "peak memory flat in simulated time (day world, 4x longer)", "<= 1.3x",
        lambda v: v.get("peak memory, 4x the simulated time"), lambda x: x <= 1.3, "x",
    ),
    PerformanceTarget(
        "campaign scaling efficiency, 2 workers", ">= 0.85",
        lambda v: v.get("scaling efficiency, 2 workers"), lambda x: x >= 0.85, "x",
    ),
    PerformanceTarget(
        "peak memory, 100 devices x 10,000 records", "< 2,048 MiB",
        lambda v: v.get("peak memory (100 devices x 10,000 records)"), lambda x: x < 2048, "MiB",
    ),
)  # fmt: skip


def verdicts(rows: list[BenchRow]) -> list[str]:
    values = {row.name: row.value for row in rows}
    return [v for target in TARGETS if (v := target.verdict(values)) is not None]
