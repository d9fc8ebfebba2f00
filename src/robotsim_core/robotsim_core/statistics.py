"""Statistics shared by the benchmarks and the evaluator (ROS-free)."""

from __future__ import annotations

import math

WILSON_Z = 1.959963984540054
"""The standard normal quantile of a two-sided 95 % interval."""


def wilson_interval(successes: int, trials: int, z: float = WILSON_Z) -> tuple[float, float]:
    """Wilson score interval of a success probability (95 % by default); (0, 1) without trials."""
    if trials <= 0:
        return 0.0, 1.0
    p = successes / trials
    denominator = 1 + z * z / trials
    centre = (p + z * z / (2 * trials)) / denominator
    half = z * math.sqrt(p * (1 - p) / trials + z * z / (4 * trials * trials)) / denominator
    return max(0.0, centre - half), min(1.0, centre + half)
