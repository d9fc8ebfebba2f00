"""The straight-to-goal baseline (ROS-free): turn toward the goal, then drive at it in a straight line.

It sees only odometry and the goal (both in ``odom``), no sensor at all: the naive baseline a learned
policy must beat where obstacles stand between the spawn and the goal. Deterministic.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from .observation import goal_in_base


@dataclass
class StraightConfig:
    cruise_speed: float = 0.3
    """Forward speed (m/s), slowing down within 0.5 m of the goal."""
    max_angular: float = 1.2
    """Largest yaw rate commanded (rad/s)."""
    heading_gain: float = 2.0
    """Yaw rate per radian of heading error (1/s)."""
    turn_in_place_angle: float = 0.5
    """Heading error above which the robot turns on the spot before driving (rad)."""
    goal_tolerance: float = 0.15
    """Distance to the goal at which the robot stops (m)."""


class StraightToGoal:
    def __init__(self, config: StraightConfig | None = None):
        self.config = config or StraightConfig()

    def command(self, pose: tuple[float, float, float], goal_xy) -> tuple[float, float]:
        """(linear m/s, angular rad/s) for the robot at ``pose`` (x, y, yaw) toward ``goal_xy``, both in odom."""
        c = self.config
        ahead, left = goal_in_base(goal_xy, pose)
        distance = math.hypot(ahead, left)
        if distance <= c.goal_tolerance:
            return 0.0, 0.0
        error = math.atan2(left, ahead)
        angular = max(-c.max_angular, min(c.max_angular, c.heading_gain * error))
        if abs(error) > c.turn_in_place_angle:
            return 0.0, angular
        return c.cruise_speed * min(1.0, distance / 0.5), angular
