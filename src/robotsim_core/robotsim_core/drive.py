"""Base drive kinematics (ROS-free): body twist <-> wheel speeds and steering angles, limits.

Conventions (REP 103): v forward (m/s), w counter-clockwise yaw rate (rad/s), wheel speeds in
rad/s positive when rolling forward, steering angles positive turning left.

Differential (skid-steer) bases use the drive's effective track (track x
``wheel_separation_multiplier``, as ros2_control's diff_drive_controller does) in both directions:
the odometry then reports the yaw the base really turned, and a commanded yaw rate is the one the
base really turns, although its tyres scrub sideways.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from .description.model import DriveRole

MCU_MOTOR_CHANNELS = 4
"""Motor channels of the base MCU (the firmware's HAL_MOTOR_CHANNELS; robotsim_firmware's protocol and host
library read this value): firmware in the loop drives differential bases with at most this many driven wheels."""


@dataclass(frozen=True)
class WheelTargets:
    """What the base controller asks of the wheel and steering actuators."""

    wheel_speeds: dict[str, float]    # wheel joint -> rad/s
    steer_angles: dict[str, float]    # steering joint -> rad


class VelocityLimiter:
    """Clamps a commanded twist to the drive's speed and yaw-rate limits and slews the linear
    speed at the acceleration limit (angular rate slews at the matching wheel acceleration)."""

    def __init__(self, drive: DriveRole):
        self.drive = drive
        self.linear = 0.0
        self.angular = 0.0
        # (runs every physics step: the drive's limits are read once)
        self._speed, self._yaw_rate = drive.max_linear_speed, drive.max_yaw_rate
        self._acceleration = drive.max_linear_acceleration
        # The outer wheel's acceleration when the yaw rate changes is (effective track / 2) x the yaw acceleration.
        self._half_track = max(drive.effective_track / 2, 1e-6)

    def reset(self) -> None:
        self.linear = self.angular = 0.0

    def __call__(self, linear: float, angular: float, dt: float) -> tuple[float, float]:
        linear = max(-self._speed, min(self._speed, linear))
        angular = max(-self._yaw_rate, min(self._yaw_rate, angular))
        step = self._acceleration * dt
        self.linear += max(-step, min(step, linear - self.linear))
        angular_step = step / self._half_track
        self.angular += max(-angular_step, min(angular_step, angular - self.angular))
        return self.linear, self.angular


def _rear_axle_x(drive: DriveRole) -> float:
    unsteered = [w.position[0] for w in drive.wheels if not w.steer_joint and w.side != 'centre']
    return sum(unsteered) / len(unsteered)


def inverse_kinematics(drive: DriveRole, linear: float, angular: float) -> WheelTargets:
    """Wheel speeds (and steering angles) that realise the body twist without slip where possible."""
    if drive.type == 'differential':
        scale = drive.wheel_separation_multiplier
        return WheelTargets({w.joint: (linear - angular * w.position[1] * scale) / w.radius
                             for w in drive.driven_wheels}, {})
    # Ackermann about the rear axle: the virtual centre wheel angle is limited, which limits w.
    rear_x = _rear_axle_x(drive)
    if abs(linear) > 1e-9:
        centre_angle = math.atan(drive.wheelbase * angular / linear)
        centre_angle = max(-drive.max_steering_angle, min(drive.max_steering_angle, centre_angle))
        angular = linear * math.tan(centre_angle) / drive.wheelbase
    else:
        angular = 0.0  # a car cannot turn on the spot
    steer, speeds = {}, {}
    for wheel in drive.wheels:
        if wheel.side == 'centre':
            continue
        x, y = wheel.position[0] - rear_x, wheel.position[1]
        if wheel.steer_joint:
            # tan(angle) = x / (R - y) with R = v / w; atan keeps the angle in (-pi/2, pi/2) when reversing.
            along = linear - angular * y
            steer[wheel.steer_joint] = math.atan(angular * x / along) if abs(along) > 1e-12 else 0.0
        if wheel.driven:
            ground = math.copysign(math.hypot(linear - angular * y, angular * x), linear - angular * y)
            speeds[wheel.joint] = ground / wheel.radius
    return WheelTargets(speeds, steer)


def _side_mean(values: list[float]) -> float:
    return sum(values) / len(values) if values else 0.0


def forward_kinematics(drive: DriveRole, wheel_travel: dict[str, float],
                       steer_angles: dict[str, float] | None = None) -> tuple[float, float]:
    """Body (forward distance, yaw change) from per-wheel rolled distances (m) of the driven wheels.

    Works on increments (encoder deltas times radius) or on rates (wheel speed times radius)."""
    left = [wheel_travel[w.joint] for w in drive.driven_wheels if w.side == 'left']
    right = [wheel_travel[w.joint] for w in drive.driven_wheels if w.side == 'right']
    forward = (_side_mean(left) + _side_mean(right)) / 2
    if drive.type == 'differential':
        return forward, (_side_mean(right) - _side_mean(left)) / drive.effective_track
    # Ackermann: turn radius from the measured steering angles of the steered wheels.
    rear_x = _rear_axle_x(drive)
    curvatures = []
    for wheel in drive.wheels:
        if wheel.steer_joint and steer_angles is not None:
            angle = steer_angles.get(wheel.steer_joint, 0.0)
            x, y = wheel.position[0] - rear_x, wheel.position[1]
            # tan(angle) = x / (R - y)  ->  curvature 1/R = tan / (x + y tan)
            curvatures.append(math.tan(angle) / (x + y * math.tan(angle)))
    return forward, forward * _side_mean(curvatures)


class WheelOdometry:
    """Dead reckoning from wheel encoder positions (what a real base controller does), REP 105 odom."""

    def __init__(self, drive: DriveRole):
        self.drive = drive
        self.reset()

    def reset(self) -> None:
        self.x = self.y = self.yaw = 0.0
        self.linear = self.angular = 0.0
        self.travelled = 0.0
        """Metres the base has moved since the reset, forward or back (what its pose uncertainty grows with)."""
        self.turned = 0.0
        """Radians the base has turned since the reset, either way."""
        self._last: dict[str, float] | None = None
        self._last_time: float | None = None

    def rebase(self) -> None:
        """Keep the pose, forget the wheel angles: the next update only takes its angles as the new baseline.
        For encoders that restarted their count (a rebooted MCU) while the base did not move by the jump."""
        self._last = self._last_time = None

    def update(self, time: float, wheel_positions: dict[str, float],
               steer_angles: dict[str, float] | None = None, measured_turn: float | None = None) -> None:
        """Integrate the wheels' motion since the last update. ``measured_turn``: the yaw (rad) the base turned
        since then by a better source than its wheels (a gyro), taken instead of the encoders' turn."""
        if self._last is None:
            self._last, self._last_time = dict(wheel_positions), time
            return
        travel = {w.joint: (wheel_positions[w.joint] - self._last[w.joint]) * w.radius for w in self.drive.driven_wheels}
        distance, turn = forward_kinematics(self.drive, travel, steer_angles)
        if measured_turn is not None:
            turn = measured_turn
        self.travelled += abs(distance)
        self.turned += abs(turn)
        heading = self.yaw + turn / 2  # midpoint rule
        self.x += distance * math.cos(heading)
        self.y += distance * math.sin(heading)
        self.yaw = math.atan2(math.sin(self.yaw + turn), math.cos(self.yaw + turn))
        dt = time - self._last_time
        if dt > 0:
            self.linear, self.angular = distance / dt, turn / dt
        self._last, self._last_time = dict(wheel_positions), time
