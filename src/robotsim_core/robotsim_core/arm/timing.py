"""Jerk-limited time parameterisation of a joint-space path (ROS-free).

A path is a list of waypoints (one position per joint). :func:`time_parameterize` turns it into a
trajectory sampled every ``dt`` seconds, with positions, velocities and accelerations per joint,
that respects each joint's velocity, acceleration and jerk limit (S-curve profiles from `ruckig`_).

Through the waypoints, how: the trajectory **stops at every waypoint** (rest to rest per segment)
and each segment is *phase-synchronised*, so all joints follow one common profile scaled by their
displacement: the motion between two waypoints is the straight joint-space line between them, the
joints never overshoot, and a position inside the joint limits at both ends stays inside them.
That is what a planner checked for collisions, so the executed path is the checked path. The
alternative, passing waypoints at speed (ruckig's intermediate waypoints are in Ruckig Pro only, and
a velocity chosen per waypoint makes each segment bulge off its line), would save the stops but
leave the checked path; callers pass a shortcut path with few waypoints instead.

Each segment's duration is rounded up to a whole number of ``dt`` (ruckig's discrete duration
mode re-plans the profile for that duration, still within the limits), so every waypoint falls
exactly on a sample and the sample grid is uniform: sample ``k`` is at ``k * dt``.

Bad input (a waypoint with the wrong number of positions, NaN, outside the joint limits, a
joint without limits, a bad ``dt``) raises :class:`TrajectoryInputError`, whose message is one
line naming the field and what was expected.

.. _ruckig: https://ruckig.com
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from ruckig import (DurationDiscretization, InputParameter, Result, Ruckig, RuckigError, Synchronization,
                    Trajectory)

from ..description.model import RobotModel

MAX_SAMPLES = 1_000_000
"""Most samples one trajectory may have (a guard against a tiny ``dt`` on a long path)."""
POSITION_LIMIT_TOLERANCE = 1e-9
"""How far (rad or m) a waypoint may sit outside its joint's limits and still count as inside:
float round-off of a position read back from a simulator or an IK solver."""


class TrajectoryInputError(ValueError):
    """A request that cannot be time-parameterised; ``str()`` is ``<field>: <problem>``, one line."""

    def __init__(self, field: str, problem: str):
        self.field = field
        self.problem = problem
        super().__init__(f'{field}: {problem}')


@dataclass(frozen=True)
class JointMotionLimits:
    """Everything time parameterisation needs to know about one joint."""

    name: str
    """Joint name (as in /joint_states)."""
    lower: float
    """Lower position limit (rad or m); -inf for a continuous joint."""
    upper: float
    """Upper position limit (rad or m); +inf for a continuous joint."""
    velocity: float
    """Velocity limit (rad/s or m/s), > 0."""
    acceleration: float
    """Acceleration limit (rad/s^2 or m/s^2), > 0."""
    jerk: float
    """Jerk limit (rad/s^3 or m/s^3), > 0."""


@dataclass(frozen=True)
class TimedTrajectory:
    """A trajectory sampled on a uniform grid: sample ``k`` is at ``time_from_start[k] == k * dt``."""

    joint_names: tuple[str, ...]
    """Joint order of the columns below."""
    dt: float
    """Sample period (s)."""
    time_from_start: np.ndarray
    """Sample times (s), shape (samples,); starts at 0, ends at :attr:`duration`."""
    positions: np.ndarray
    """Joint positions, shape (samples, joints)."""
    velocities: np.ndarray
    """Joint velocities, shape (samples, joints); zero at every waypoint."""
    accelerations: np.ndarray
    """Joint accelerations, shape (samples, joints); zero at every waypoint."""
    waypoint_indices: tuple[int, ...]
    """The sample index at which each input waypoint is reached (exactly, at rest)."""

    @property
    def duration(self) -> float:
        """Time from the first to the last sample (s)."""
        return float(self.time_from_start[-1])

    @property
    def waypoint_times(self) -> np.ndarray:
        """The time (s) at which each waypoint is reached."""
        return self.time_from_start[list(self.waypoint_indices)]


def joint_limits_from_model(model: RobotModel, joint_names: Sequence[str]) -> tuple[JointMotionLimits, ...]:
    """The motion limits of ``joint_names`` as the robot description declares them (acceleration
    and jerk defaults derived from the velocity limit where the description gives none)."""
    if len(set(joint_names)) != len(joint_names):
        raise TrajectoryInputError('joint_names', f'expected each joint once, got {list(joint_names)}')
    moving = {joint.name: joint for joint in model.tree.moving_joints()}
    limits = []
    for index, name in enumerate(joint_names):
        field = f'joint_names[{index}]'
        joint = moving.get(name)
        if joint is None:
            raise TrajectoryInputError(field, f'unknown joint {name!r}: expected a moving joint of robot '
                                              f'{model.name!r} ({", ".join(moving) or "it has none"})')
        if joint.limit is None or not joint.limit.velocity > 0:
            raise TrajectoryInputError(field, f'joint {name!r} has no velocity limit in the description of '
                                              f'{model.name!r}: cannot time a motion without one')
        if joint.type == 'continuous':
            lower, upper = -math.inf, math.inf
        else:
            lower, upper = joint.limit.lower, joint.limit.upper
        limits.append(JointMotionLimits(name, lower, upper, joint.limit.velocity, joint.limit.max_acceleration,
                                        joint.limit.max_jerk))
    return tuple(limits)


def _check_limits(limits: Sequence[JointMotionLimits]) -> None:
    if not limits:
        raise TrajectoryInputError('limits', 'expected at least one joint')
    for index, joint in enumerate(limits):
        for quantity in ('velocity', 'acceleration', 'jerk'):
            value = getattr(joint, quantity)
            if not (math.isfinite(value) and value > 0):
                raise TrajectoryInputError(f'limits[{index}].{quantity}',
                                           f'expected a finite number > 0 for joint {joint.name!r}, got {value!r}')
        if math.isnan(joint.lower) or math.isnan(joint.upper) or joint.lower > joint.upper:
            raise TrajectoryInputError(f'limits[{index}]', f'expected lower <= upper for joint {joint.name!r}, '
                                                           f'got [{joint.lower!r}, {joint.upper!r}]')


def _check_waypoints(waypoints: Sequence[Sequence[float]], limits: Sequence[JointMotionLimits]) -> np.ndarray:
    names = ', '.join(joint.name for joint in limits)
    try:
        count = len(waypoints)
    except TypeError:
        raise TrajectoryInputError('waypoints', f'expected a list of waypoints, got {waypoints!r}') from None
    if count == 0:
        raise TrajectoryInputError('waypoints', 'expected at least one waypoint, got none')
    rows = []
    for index, waypoint in enumerate(waypoints):
        field = f'waypoints[{index}]'
        try:
            row = np.asarray(waypoint, dtype=float)
        except (TypeError, ValueError):
            raise TrajectoryInputError(field, f'expected {len(limits)} numbers ({names}), got {waypoint!r}') from None
        if row.shape != (len(limits),):
            got = f'{row.size} value(s)' if row.ndim <= 1 else f'an array of shape {row.shape}'
            raise TrajectoryInputError(field, f'expected {len(limits)} positions, one per joint ({names}), got {got}')
        for joint_index, (value, joint) in enumerate(zip(row, limits)):
            if not math.isfinite(value):
                raise TrajectoryInputError(f'{field}[{joint_index}]',
                                           f'expected a finite position for joint {joint.name!r}, got {value}')
            if not joint.lower - POSITION_LIMIT_TOLERANCE <= value <= joint.upper + POSITION_LIMIT_TOLERANCE:
                raise TrajectoryInputError(f'{field}[{joint_index}]',
                                           f'position {value:.6g} of joint {joint.name!r} is outside its limits '
                                           f'[{joint.lower:.6g}, {joint.upper:.6g}]')
        rows.append(np.clip(row, [j.lower for j in limits], [j.upper for j in limits]))
    return np.array(rows)


def time_parameterize(waypoints: Sequence[Sequence[float]], limits: Sequence[JointMotionLimits],
                      dt: float = 0.01) -> TimedTrajectory:
    """Time ``waypoints`` (one position per joint of ``limits``, in that order) into a jerk-limited
    trajectory sampled every ``dt`` seconds that starts at the first waypoint, stops exactly at each
    of the others in turn, and moves on straight joint-space lines between them (module docstring).
    A waypoint up to :data:`POSITION_LIMIT_TOLERANCE` outside a joint limit is moved onto it."""
    _check_limits(limits)
    if isinstance(dt, bool) or not (isinstance(dt, numbers.Real) and math.isfinite(dt) and 1e-6 <= dt <= 1.0):
        raise TrajectoryInputError('dt', f'expected a sample period from 1e-06 to 1 s, got {dt!r}')
    path = _check_waypoints(waypoints, limits)
    dof = len(limits)

    generator = Ruckig(dof, dt)
    request = InputParameter(dof)
    request.max_velocity = [joint.velocity for joint in limits]
    request.max_acceleration = [joint.acceleration for joint in limits]
    request.max_jerk = [joint.jerk for joint in limits]
    # Phase: one profile shape for all joints, so the segment is a straight line in joint space.
    request.synchronization = Synchronization.Phase
    # Discrete: each segment lasts a whole number of samples, so waypoints land on the grid.
    request.duration_discretization = DurationDiscretization.Discrete

    segments: list[tuple[Trajectory, int]] = []
    total_steps = 0
    for index in range(1, len(path)):
        request.current_position = path[index - 1].tolist()
        request.target_position = path[index].tolist()
        segment = Trajectory(dof)
        try:
            result = generator.calculate(request, segment)
        except RuckigError as error:  # ruckig rejects what our checks let through: say so, in one line
            raise TrajectoryInputError(f'waypoints[{index}]', ' '.join(str(error).split())) from None
        if result not in (Result.Working, Result.Finished):
            raise TrajectoryInputError(f'waypoints[{index}]', f'no jerk-limited profile reaches it ({result.name})')
        steps = round(segment.duration / dt)
        segments.append((segment, steps))
        total_steps += steps
        if total_steps + 1 > MAX_SAMPLES:
            raise TrajectoryInputError('dt', f'{dt:g} s gives more than {MAX_SAMPLES:,} samples for this path; '
                                             'expected a larger sample period')

    positions = np.empty((total_steps + 1, dof))
    velocities = np.zeros((total_steps + 1, dof))
    accelerations = np.zeros((total_steps + 1, dof))
    positions[0] = path[0]
    waypoint_indices = [0]
    sample = 0
    for index, (segment, steps) in enumerate(segments, start=1):
        for step in range(1, steps):
            position, velocity, acceleration = segment.at_time(step * dt)
            positions[sample + step] = position
            velocities[sample + step] = velocity
            accelerations[sample + step] = acceleration
        sample += steps
        # The segment ends at rest exactly on the waypoint (ruckig's end state up to round-off).
        positions[sample] = path[index]
        waypoint_indices.append(sample)
    return TimedTrajectory(tuple(joint.name for joint in limits), float(dt), np.arange(total_steps + 1) * float(dt),
                           positions, velocities, accelerations, tuple(waypoint_indices))
