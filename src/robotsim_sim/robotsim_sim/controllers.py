"""Built-in controllers (ROS-free), like Gazebo's DiffDrive/AckermannSteering and ros2_control's
joint_trajectory_controller: they turn commands into MuJoCo actuator targets. The arm's goal
handling (validation, tolerances, results) is :mod:`robotsim_sim.arm_controller`."""

from __future__ import annotations

import bisect
import copy
import math
from collections.abc import Sequence
from dataclasses import dataclass

import mujoco
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
    sequences ordered like ``drive.driven_wheels``. It runs every physics step on two to six
    wheels, where Python floats cost a fifth of numpy's per-call overhead; the arithmetic is the
    same, operation for operation, so the duties are the same to the bit."""

    def __init__(self, drive: DriveRole, kp: float = 0.3, ki: float = 3.0):
        self.no_load_speed = drive.wheel_no_load_speed
        self.kp, self.ki = kp, ki
        self.integral = [0.0] * len(drive.driven_wheels)

    def reset(self) -> None:
        self.integral = [0.0] * len(self.integral)

    def duty(self, target: Sequence[float], measured: Sequence[float], dt: float) -> list[float]:
        ki_dt, kp, no_load = self.ki * dt, self.kp, self.no_load_speed
        integral = self.integral
        duties = []
        for index, (wanted, speed) in enumerate(zip(target, measured)):
            error = wanted - speed
            held = integral[index] + ki_dt * error
            held = 0.5 if held > 0.5 else -0.5 if held < -0.5 else held
            integral[index] = held
            value = wanted / no_load + kp * error + held
            duties.append(1.0 if value > 1.0 else -1.0 if value < -1.0 else value)
        return duties


@dataclass(frozen=True)
class TrajectoryPoint:
    """One point of a joint trajectory, as ``trajectory_msgs/JointTrajectoryPoint`` carries it (ROS-free).

    ``velocities`` and ``accelerations`` are empty or hold one value per joint; what a point gives
    decides how the follower interpolates up to it (see :class:`TrajectoryFollower`)."""

    time_from_start: float
    """Seconds after the trajectory's start at which the joints are at this point."""
    positions: tuple[float, ...]
    """One position per joint (rad or m)."""
    velocities: tuple[float, ...] = ()
    """Empty, or one velocity per joint (rad/s or m/s)."""
    accelerations: tuple[float, ...] = ()
    """Empty, or one acceleration per joint (rad/s^2 or m/s^2); used only with velocities."""


@dataclass
class DesiredState:
    """What the follower wants the joints to do at one instant (arrays in the follower's joint order)."""

    positions: np.ndarray
    velocities: np.ndarray
    accelerations: np.ndarray
    index: int
    """The trajectory point the current segment starts from (joint_trajectory_controller's start segment:
    0 before the first point, the last point once it is reached); -1 when there is no trajectory
    (holding a position)."""
    moving: bool
    """True before the trajectory's last point is due; False while holding."""


def _segment_coefficients(kind: int, duration: float, p0, v0, a0, p1, v1, a1) -> np.ndarray:
    """Coefficients c0..c5 (per joint, shape (joints, 6)) of p(tau) = sum c_i tau^i on [0, duration]:
    linear (positions only), cubic Hermite (positions and velocities) or quintic (positions,
    velocities and accelerations) between the two states."""
    coefficients = np.zeros((len(p0), 6))
    coefficients[:, 0] = p0
    h = p1 - p0
    T = duration
    if kind == LINEAR:
        coefficients[:, 1] = h / T
    elif kind == CUBIC:
        coefficients[:, 1] = v0
        coefficients[:, 2] = (3 * h - (2 * v0 + v1) * T) / T ** 2
        coefficients[:, 3] = (-2 * h + (v0 + v1) * T) / T ** 3
    else:
        coefficients[:, 1] = v0
        coefficients[:, 2] = a0 / 2
        coefficients[:, 3] = (20 * h - (8 * v1 + 12 * v0) * T - (3 * a0 - a1) * T ** 2) / (2 * T ** 3)
        coefficients[:, 4] = (-30 * h + (14 * v1 + 16 * v0) * T + (3 * a0 - 2 * a1) * T ** 2) / (2 * T ** 4)
        coefficients[:, 5] = (12 * h - 6 * (v1 + v0) * T + (a1 - a0) * T ** 2) / (2 * T ** 5)
    return coefficients


LINEAR, CUBIC, QUINTIC = 1, 3, 5
"""Interpolation between two trajectory states: the degree of the polynomial."""


class TrajectoryFollower:
    """Samples joint trajectories the way ros2_control's joint_trajectory_controller does (its
    ``splines`` interpolation): between two points a quintic polynomial when both give positions,
    velocities and accelerations, a cubic one when both give positions and velocities, a straight
    line when they give positions only. A new trajectory replaces the old one at once and starts
    from the joints' current (measured) positions and velocities: the first segment runs from that
    state to the first point (cubic when the point gives velocities, else linear), unless the first
    point is due at once. After the last point the follower holds it (velocity and acceleration 0).

    Joints of the follower a trajectory does not name hold the position they had when it was loaded.
    The trajectory is assumed checked (:func:`robotsim_sim.arm_controller.check_trajectory`)."""

    def __init__(self, joints: list[str]):
        self.joints = list(joints)
        self._column = {name: index for index, name in enumerate(self.joints)}
        self.reset()

    def reset(self) -> None:
        """No trajectory and nothing to hold: :meth:`sample` returns None until a load or a hold."""
        self._starts: list[float] = []
        self._ends: list[float] = []
        # Per segment, rows: position, velocity and acceleration polynomials of every joint, as
        # coefficients of tau^0..tau^5: one product with the powers of tau gives all three.
        self._derivatives = np.zeros((0, 3 * len(self.joints), 6))
        self._first_point: list[int] = []
        self._hold: np.ndarray | None = None
        self._holding: DesiredState | None = None
        self._last_index = -1
        self._cached: tuple[float, DesiredState | None] | None = None

    @property
    def end_time(self) -> float:
        """When the last point is due (sim seconds); -inf while holding."""
        return self._ends[-1] if self._ends else -math.inf

    @property
    def active(self) -> bool:
        """True once a trajectory or a hold has been given since the last reset."""
        return self._hold is not None

    def hold(self, positions) -> None:
        """Drop the trajectory and hold ``positions`` (one per follower joint)."""
        self.reset()
        self._hold = np.array(positions, dtype=float)
        zeros = np.zeros(len(self.joints))
        self._holding = DesiredState(self._hold, zeros, zeros, -1, False)

    def load(self, joint_names: Sequence[str], points: Sequence[TrajectoryPoint], start: float, now: float,
             positions, velocities) -> None:
        """Follow ``points`` (their values in ``joint_names`` order) from sim time ``start`` on, starting
        at ``now`` from the measured ``positions`` and ``velocities`` (one per follower joint)."""
        current_positions = np.array(positions, dtype=float)
        current_velocities = np.array(velocities, dtype=float)
        columns = [self._column[name] for name in joint_names]
        count = len(self.joints)

        def full(values, fill) -> np.ndarray:
            state = fill.copy()
            state[columns] = values
            return state
        zeros = np.zeros(count)
        states = []   # (time, kind available: 1/3/5, positions, velocities, accelerations)
        for point in points:
            degree = LINEAR
            if len(point.velocities):
                degree = QUINTIC if len(point.accelerations) else CUBIC
            states.append((start + point.time_from_start, degree, full(point.positions, current_positions),
                           full(point.velocities, zeros) if len(point.velocities) else zeros,
                           full(point.accelerations, zeros) if len(point.accelerations) else zeros))
        # The state before the trajectory: measured position and velocity (no acceleration measured,
        # as a controller without acceleration state interfaces has none: at most a cubic to point 0).
        previous = (now, CUBIC, current_positions, current_velocities, zeros)
        starts, ends, coefficients, first_points = [], [], [], []
        for index, state in enumerate(states):
            begin, end = previous[0], state[0]
            if end > begin:
                kind = min(previous[1], state[1])
                coefficients.append(_segment_coefficients(kind, end - begin, *previous[2:], *state[2:]))
                starts.append(begin)
                ends.append(end)
                first_points.append(max(index - 1, 0))
            previous = state
        self.reset()
        self._starts, self._ends, self._first_point = starts, ends, first_points
        positions_polynomials = np.array(coefficients).reshape(len(starts), count, 6)
        self._derivatives = np.zeros((len(starts), 3 * count, 6))
        self._derivatives[:, :count] = positions_polynomials
        self._derivatives[:, count:2 * count, :5] = positions_polynomials[:, :, 1:] * _VELOCITY_FACTORS
        self._derivatives[:, 2 * count:, :4] = positions_polynomials[:, :, 2:] * _ACCELERATION_FACTORS
        self._hold = states[-1][2].copy()
        self._last_index = len(states) - 1
        self._holding = DesiredState(self._hold, zeros, zeros, self._last_index, False)

    def sample(self, now: float) -> DesiredState | None:
        """The desired state at sim time ``now`` (None before anything was loaded or held)."""
        if self._cached is not None and self._cached[0] == now:
            return self._cached[1]
        if self._hold is None:
            state = None
        elif not self._ends or now >= self._ends[-1]:
            state = self._holding
        else:
            segment = bisect.bisect_right(self._ends, now)
            tau = max(now - self._starts[segment], 0.0)
            square = tau * tau
            values = self._derivatives[segment] @ np.array([1.0, tau, square, square * tau, square * square,
                                                            square * square * tau])
            count = len(self.joints)
            state = DesiredState(values[:count], values[count:2 * count], values[2 * count:],
                                 self._first_point[segment], True)
        self._cached = (now, state)
        return state


_VELOCITY_FACTORS = np.array([1.0, 2.0, 3.0, 4.0, 5.0])
_ACCELERATION_FACTORS = np.array([2.0, 6.0, 12.0, 20.0])


def _as_slice(indices: np.ndarray):
    """Consecutive indices as a slice (an arm's joints usually are): cheaper to read and write."""
    if len(indices) and np.array_equal(indices, np.arange(indices[0], indices[0] + len(indices))):
        return slice(int(indices[0]), int(indices[0]) + len(indices))
    return indices


class PositionServoFeedForward:
    """Setpoints that make MuJoCo position servos track a moving reference.

    A MuJoCo ``position`` actuator pushes with ``kp (ctrl - q) - kv qdot``: fed the reference
    position alone it lags a moving reference by about ``kv / kp`` times the velocity (0.1 rad at
    the rover's 2 rad/s) and more under acceleration, and sags under gravity it does not cancel.
    With ``ctrl = q_ref + (kv v_ref + tau_ff) / kp`` it pushes with
    ``kp (q_ref - q) + kv (v_ref - qdot) + tau_ff``: a PD servo with velocity and torque
    feed-forward, ``tau_ff`` being the arm's inverse dynamics at the reference state (inertia,
    Coriolis, joint damping, and the gravity the description's gravity compensation leaves), as an
    arm controller with a model of its arm feeds it forward. Measured on planned, ruckig-timed
    trajectories (bench/bench_arm_tracking.py): worst tracking error 0.1-0.16 rad with the
    position alone, 0.006-0.011 rad with velocity feed-forward, under 0.0005 rad with both.

    The inverse dynamics runs on a private copy of the model without contacts and constraints (a
    grasped object or a touching finger adds no phantom torque), built on first use.

    Near a joint limit the setpoint can lie beyond it (the limit stops the joint, not the servo's
    setpoint): :meth:`widen_control_range` lets the servos take it, or a trajectory ending at a
    limit would lose its feed-forward there (measured: 2.6 mrad instead of 0.2 mrad of error)."""

    def __init__(self, model: mujoco.MjModel, qpos_index, dof_index, actuators):
        self._source = model
        self.qpos_index = _as_slice(np.asarray(qpos_index, dtype=int))
        self.dof_index = _as_slice(np.asarray(dof_index, dtype=int))
        self.actuators = np.asarray(actuators, dtype=int)
        self.kp = model.actuator_gainprm[self.actuators, 0].copy()
        self.kv = -model.actuator_biasprm[self.actuators, 2].copy()
        self._model = None
        self._data = None

    def widen_control_range(self, model: mujoco.MjModel) -> None:
        """Widen the servos' control range (the joint's range in the MJCF) by the largest offset the
        feed-forward can use, ``force limit / kp``: beyond it the servo's force saturates anyway."""
        for actuator, kp in zip(self.actuators, self.kp):
            if model.actuator_ctrllimited[actuator] and model.actuator_forcelimited[actuator] and kp > 0:
                margin = float(np.max(np.abs(model.actuator_forcerange[actuator]))) / kp
                model.actuator_ctrlrange[actuator] += (-margin, margin)

    def setpoints(self, data: mujoco.MjData, desired: DesiredState) -> np.ndarray:
        """The servo setpoints for ``desired`` (arm joints in follower order), from the robot's state in ``data``."""
        if self._model is None:
            self._model = copy.copy(self._source)
            self._model.opt.disableflags |= (mujoco.mjtDisableBit.mjDSBL_CONTACT | mujoco.mjtDisableBit.mjDSBL_CONSTRAINT
                                             | mujoco.mjtDisableBit.mjDSBL_SENSOR)
            self._data = mujoco.MjData(self._model)   # qvel and qacc 0: only the arm's entries are ever set
        reference = self._data
        reference.qpos[:] = data.qpos
        reference.qpos[self.qpos_index] = desired.positions
        reference.qvel[self.dof_index] = desired.velocities
        reference.qacc[self.dof_index] = desired.accelerations
        mujoco.mj_inverse(self._model, reference)
        # Gravity on the links MuJoCo's own gravity compensation carries is not the servo's to cancel.
        torque = reference.qfrc_inverse[self.dof_index] - reference.qfrc_gravcomp[self.dof_index]
        return desired.positions + (self.kv * desired.velocities + torque) / self.kp
