"""A reactive lidar wanderer (ROS-free): the demo driver of `make sim`, and a simple expert.

Drive forward while the way ahead is clear; when an obstacle comes inside the safety distance,
stop and turn toward the most open direction until the way ahead is clear again. Deterministic:
the same scans give the same commands.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np


@dataclass
class WanderConfig:
    cruise_speed: float = 0.25
    """Forward speed when the way is clear (m/s)."""
    turn_rate: float = 1.0
    """Yaw rate while turning away from an obstacle (rad/s)."""
    safety_distance: float = 0.45
    """An obstacle closer than this inside the front sector stops the robot (m, from the lidar)."""
    clear_distance: float = 0.7
    """The front sector must be clear to this distance before driving on (m)."""
    front_half_angle: float = math.radians(35)
    """Half-width of the front sector (rad)."""


class Wanderer:
    def __init__(self, config: WanderConfig | None = None):
        self.config = config or WanderConfig()
        self.turn_direction = 0.0  # 0 driving, +1 / -1 turning left / right

    def command(self, ranges: np.ndarray, angle_min: float, angle_increment: float) -> tuple[float, float]:
        """(linear m/s, angular rad/s) for one LaserScan (REP 117 values allowed)."""
        c = self.config
        angles = angle_min + angle_increment * np.arange(len(ranges))
        angles = np.arctan2(np.sin(angles), np.cos(angles))
        usable = np.where(np.isnan(ranges), 0.0, ranges)          # NaN: treat as blocked
        usable = np.where(np.isneginf(usable), 0.0, usable)       # too close to measure: blocked
        usable = np.where(np.isposinf(usable), 100.0, usable)     # no return: open
        front = np.abs(angles) <= c.front_half_angle
        nearest_ahead = float(usable[front].min()) if front.any() else 100.0
        if self.turn_direction == 0.0 and nearest_ahead < c.safety_distance:
            # Turn toward the side with more room (sum of clear range on each side).
            left = usable[(angles > 0) & (angles < math.pi / 2)].mean() if ((angles > 0) & (angles < math.pi / 2)).any() else 0
            right = usable[(angles < 0) & (angles > -math.pi / 2)].mean() if ((angles < 0) & (angles > -math.pi / 2)).any() else 0
            self.turn_direction = 1.0 if left >= right else -1.0
        if self.turn_direction != 0.0:
            if nearest_ahead >= c.clear_distance:
                self.turn_direction = 0.0
            else:
                return 0.0, self.turn_direction * c.turn_rate
        # Slow down as obstacles approach, steer gently away from the nearer side.
        speed = c.cruise_speed * min(
            1.0, (nearest_ahead - c.safety_distance) / max(c.clear_distance - c.safety_distance, 1e-6) + 0.3)
        side = (angles > 0) & front
        bias = float(usable[front & ~side].min() - usable[side].min()) if side.any() and (front & ~side).any() else 0.0
        return max(0.0, speed), float(np.clip(-0.5 * bias, -c.turn_rate, c.turn_rate))
