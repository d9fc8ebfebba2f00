"""Built-in controllers (ROS-free), like Gazebo's DiffDrive/AckermannSteering and a joint
trajectory controller: they turn commands into MuJoCo actuator targets."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from robotsim_core.description.model import DriveRole
from robotsim_core.drive import VelocityLimiter, inverse_kinematics


class BaseController:
    """Twist command -> limited twist -> wheel speed / steering targets, with a command watchdog.

    Non-finite commands are rejected (counted, previous command kept); no command for
    ``timeout`` seconds of sim time stops the base."""

    def __init__(self, drive: DriveRole, timeout: float = 0.5):
        self.drive = drive
        self.timeout = timeout
        self.limiter = VelocityLimiter(drive)
        self.rejected = 0
        self.reset()

    def reset(self) -> None:
        self.command = (0.0, 0.0)
        self.command_time = -math.inf
        self.limiter.reset()
        self.timed_out = True
        self._last_twist = None
        self._targets = None

    def set_command(self, linear: float, angular: float, now: float) -> bool:
        if not (math.isfinite(linear) and math.isfinite(angular)):
            self.rejected += 1
            return False
        self.command = (float(linear), float(angular))
        self.command_time = now
        return True

    def update(self, now: float, dt: float):
        self.timed_out = now - self.command_time > self.timeout
        linear, angular = (0.0, 0.0) if self.timed_out else self.command
        twist = self.limiter(linear, angular, dt)
        if twist != self._last_twist:  # steady commands (most steps) reuse the last solution
            self._last_twist, self._targets = twist, inverse_kinematics(self.drive, *twist)
        return self._targets


class WheelSpeedLoop:
    """Motor-driver speed loop: PWM duty per wheel from target and measured wheel speed.

    Feedforward through the motor's no-load speed (duty = w / w0 spins a free wheel at w) plus a
    PI term for load; the integral is clamped so a stalled wheel does not wind up. Works on
    arrays ordered like ``drive.driven_wheels``."""

    def __init__(self, drive: DriveRole, kp: float = 0.3, ki: float = 3.0):
        self.no_load_speed = drive.wheel_no_load_speed
        self.kp, self.ki = kp, ki
        self.integral = np.zeros(len(drive.driven_wheels))

    def reset(self) -> None:
        self.integral[:] = 0.0

    def duty(self, target: np.ndarray, measured: np.ndarray, dt: float) -> np.ndarray:
        error = target - measured
        # np.minimum/np.maximum: np.clip costs ~4x more on 4-element arrays, and this runs every step.
        self.integral = np.minimum(np.maximum(self.integral + self.ki * dt * error, -0.5), 0.5)
        return np.minimum(np.maximum(target / self.no_load_speed + self.kp * error + self.integral, -1.0), 1.0)


@dataclass
class _Segment:
    start: float
    end: float
    start_positions: np.ndarray
    end_positions: np.ndarray


class TrajectoryFollower:
    """Follows joint trajectories point by point with linear interpolation between points
    (the position actuators do the tracking); holds the last point afterwards.

    Positions beyond a joint's limits are clamped to the limit (the position actuator could not
    go further anyway); :attr:`newly_clamped` names the joints a load clamped for the first time,
    so the caller can warn once per joint rather than on every trajectory."""

    def __init__(self, joints: list[str], limits: dict[str, tuple[float, float]] | None = None):
        self.joints = list(joints)
        self.limits = dict(limits or {})
        self.segments: list[_Segment] = []
        self.hold: np.ndarray | None = None
        self.clamped_ever: set[str] = set()   # kept across resets: a warning per joint per run
        self.newly_clamped: list[tuple[str, float, float]] = []  # (joint, requested, clamped to) of the last load

    def reset(self) -> None:
        self.segments, self.hold = [], None

    def load(self, joint_names: list[str], points: list[tuple[float, list[float]]], start: float,
             current: dict[str, float]) -> str | None:
        """Replace the active trajectory; returns an error string for a bad one (nothing changes)."""
        self.newly_clamped = []
        unknown = [name for name in joint_names if name not in self.joints]
        if unknown:
            return f'unknown joints {unknown}; expected a subset of {self.joints}'
        if not points:
            return 'trajectory has no points'
        previous_time = 0.0
        for time, positions in points:
            if len(positions) != len(joint_names) or not all(math.isfinite(p) for p in positions):
                return 'every point needs one finite position per joint'
            if time < previous_time:
                return 'time_from_start must not decrease'
            previous_time = time
        base = np.array([current[name] for name in self.joints])
        previous = base.copy()
        index = [self.joints.index(name) for name in joint_names]
        segments, last_time = [], start
        for time, positions in points:
            target = previous.copy()
            target[index] = [self._clamp(name, position) for name, position in zip(joint_names, positions)]
            segments.append(_Segment(last_time, start + time, previous, target))
            previous, last_time = target, start + time
        self.segments, self.hold = segments, previous
        return None

    def _clamp(self, joint: str, position: float) -> float:
        if joint not in self.limits:
            return position
        lower, upper = self.limits[joint]
        clamped = min(max(position, lower), upper)
        if clamped != position and joint not in self.clamped_ever:
            self.clamped_ever.add(joint)
            self.newly_clamped.append((joint, position, clamped))
        return clamped

    def targets(self, now: float) -> dict[str, float] | None:
        if self.hold is None:
            return None
        for segment in self.segments:
            if now < segment.end:
                span = segment.end - segment.start
                fraction = 1.0 if span <= 0 else max(0.0, (now - segment.start) / span)
                return dict(zip(self.joints, segment.start_positions + fraction * (segment.end_positions - segment.start_positions)))
        return dict(zip(self.joints, self.hold))
