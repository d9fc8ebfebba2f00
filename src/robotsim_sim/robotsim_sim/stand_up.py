"""The stand-up demo's controller: a legged robot rises from its crouch to its stance and holds it.

Position targets move from the crouch to the stance along a smooth (half-cosine) profile over ``rise_time`` seconds,
then stay at the stance: what a legged robot's bring-up script sends before a gait controller takes over. Plain
Python (no ROS): the ``stand_up`` node publishes its targets, tests feed them to the simulation directly.
"""

from __future__ import annotations

import math

import numpy as np

from robotsim_core.description.model import LegsRole


class StandUp:
    """Owns nothing but its profile: the targets at a time since it started."""

    def __init__(self, legs: LegsRole, rise_time: float = 1.5, start_time: float = 0.0):
        if not (math.isfinite(rise_time) and rise_time > 0):
            raise ValueError(f'rise_time: expected a positive number of seconds, got {rise_time}')
        self.crouch = np.asarray(legs.crouch, dtype=float)
        self.stance = np.asarray(legs.stance, dtype=float)
        self.rise_time = float(rise_time)
        self.start_time = float(start_time)

    def targets(self, now: float) -> np.ndarray:
        """Joint position targets (legs.joints order) at time ``now`` (s)."""
        progress = min(1.0, max(0.0, (now - self.start_time) / self.rise_time))
        blend = 0.5 - 0.5 * math.cos(math.pi * progress)
        return self.crouch + blend * (self.stance - self.crouch)

    def standing(self, now: float) -> bool:
        return now - self.start_time >= self.rise_time
