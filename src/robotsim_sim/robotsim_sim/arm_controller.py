"""What the arm's and the gripper's action servers decide, ROS-free: goal checks, tolerances, result
codes and the goal state machines of ros2_control's ``joint_trajectory_controller`` (JTC) and
``gripper_action_controller``, on plain Python values. The simulator node only converts messages
(:mod:`robotsim_sim.ros.sim_node`); :class:`robotsim_sim.simulation.Simulation` runs these controllers
at every physics step, so tests and benchmarks use them without rclpy.

FollowJointTrajectory, as JTC (Kilted) does it:

* A goal names the controller's joints (all of them unless ``allow_partial_joints_goal``: joints it
  leaves out hold their position), each once; every point gives one finite position per joint,
  velocities and accelerations are empty or one per joint, ``time_from_start`` increases strictly.
  Positions beyond a joint's limits are refused too (JTC leaves that to the hardware).
* Tolerances: a goal's ``path_tolerance`` / ``goal_tolerance`` entry replaces the controller's default
  for that joint and quantity when > 0, erases it when -1 (not checked), keeps it when 0; anything
  else is refused. ``goal_time_tolerance`` 0 keeps the default.
* While the trajectory runs (and on its first sample) every joint must stay within its path
  tolerance, else the goal aborts with PATH_TOLERANCE_VIOLATED and the arm holds where it is. After
  the last point's time the joints must come within the goal tolerance (position, and velocity
  within ``stopped_velocity_tolerance``): SUCCESSFUL; still outside once ``goal_time`` has passed
  after the end: GOAL_TOLERANCE_VIOLATED, the arm holds where it is.
* Cancel: the arm holds its current position, the goal ends CANCELED. A new goal preempts the
  running one, which ends with INVALID_GOAL and an error string saying so (JTC's code for it).

Where this differs from JTC, and why: JTC *rejects* an invalid goal, and a rejected ROS 2 goal
carries no result, so the client never learns why; here it is accepted and aborted at once with
the error code and ``error_string`` (INVALID_JOINTS, INVALID_GOAL, OLD_HEADER_TIMESTAMP), as ROS 1's
controller reported them. A preempted goal ends ABORTED rather than CANCELED (rclpy can only cancel
a goal whose client asked for it).

GripperCommand, as gripper_action_controller does it: the position is the finger joint's setpoint
(the description's gripper: travel of each finger from closed, m), applied at once; the goal
succeeds with ``reached_goal`` when the finger is within ``goal_tolerance`` of it, and reports
``stalled`` when the finger has moved slower than ``stall_velocity_threshold`` for ``stall_timeout``
seconds short of it: the fingers closed on something, which is how a grasp shows. A stalled goal
ends SUCCEEDED when ``allow_stalling`` (the default here: a grasp is the purpose), else ABORTED (the
controller's own default), and the fingers keep squeezing either way. ``max_effort`` > 0 limits the
finger's force below the description's effort; 0 leaves the description's limit.
"""

from __future__ import annotations

import enum
import math
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from .controllers import TrajectoryFollower, TrajectoryPoint

ERASE_TOLERANCE = -1.0
"""A goal's tolerance value that erases the default (control_msgs/JointTolerance)."""


class ResultCode(enum.IntEnum):
    """control_msgs/action/FollowJointTrajectory result codes."""

    SUCCESSFUL = 0
    INVALID_GOAL = -1
    INVALID_JOINTS = -2
    OLD_HEADER_TIMESTAMP = -3
    PATH_TOLERANCE_VIOLATED = -4
    GOAL_TOLERANCE_VIOLATED = -5


class GoalStatus(enum.Enum):
    """How a goal ended (the action's terminal states)."""

    SUCCEEDED = 'succeeded'
    ABORTED = 'aborted'
    CANCELED = 'canceled'


@dataclass(frozen=True)
class JointTolerance:
    """A goal's tolerance for one joint, as control_msgs/JointTolerance: 0 keeps the default, -1 erases it."""

    name: str
    position: float = 0.0
    velocity: float = 0.0
    acceleration: float = 0.0


@dataclass(frozen=True)
class StateTolerance:
    """The tolerance in force for one joint; 0: that quantity is not checked."""

    position: float = 0.0
    velocity: float = 0.0
    acceleration: float = 0.0


@dataclass
class TrajectoryConstraints:
    """The arm controller's default tolerances (JTC's ``constraints`` parameters), used where a goal
    leaves a tolerance at 0."""

    trajectory: float = 0.05
    """Path position tolerance of every joint while a trajectory runs (rad or m); 0: not checked.
    JTC's default is 0; here a collision or a stuck joint aborts the goal early."""
    goal: float = 0.01
    """Goal position tolerance of every joint after the last point (rad or m); 0: not checked."""
    stopped_velocity_tolerance: float = 0.01
    """Goal velocity tolerance of every joint (rad/s or m/s): how still the arm must be to succeed; 0: not checked."""
    goal_time: float = 1.0
    """Seconds after the last point's time within which the goal tolerance must be met; 0: wait for
    ever (JTC's default; here a goal that cannot settle ends instead of hanging its client)."""

    def problem(self) -> str | None:
        """Why these constraints are unusable (one line naming the field), or None."""
        for name in ('trajectory', 'goal', 'stopped_velocity_tolerance', 'goal_time'):
            value = getattr(self, name)
            if not (isinstance(value, (int, float)) and math.isfinite(value) and value >= 0):
                return f'constraints.{name}: expected a finite number >= 0, got {value!r}'
        return None


@dataclass
class ArmGoal:
    """A FollowJointTrajectory goal in plain values (the node converts the message)."""

    joint_names: Sequence[str]
    points: Sequence[TrajectoryPoint]
    start_time: float | None = None
    """Sim seconds from which ``time_from_start`` counts (the header stamp); None: when received (a zero stamp)."""
    path_tolerance: Sequence[JointTolerance] = ()
    goal_tolerance: Sequence[JointTolerance] = ()
    goal_time_tolerance: float = 0.0
    """Seconds; 0 keeps the controller's ``goal_time``."""
    unsupported: str = ''
    """A part of the request this controller cannot follow, as one line naming the field (e.g. a
    multi-DOF trajectory): the goal is refused with INVALID_GOAL."""


@dataclass
class ArmOutcome:
    """How an arm goal ended."""

    token: object
    """The caller's handle of the goal (whatever it passed to :meth:`ArmController.start`)."""
    status: GoalStatus
    code: ResultCode
    error_string: str


@dataclass
class GripperOutcome:
    """How a gripper goal ended (the GripperCommand result, plus why, for the log)."""

    token: object
    status: GoalStatus
    position: float
    effort: float
    stalled: bool
    reached_goal: bool
    reason: str = ''


@dataclass
class Rejection:
    """Why a trajectory is refused: its result code and one line naming the field."""

    code: ResultCode
    message: str


@dataclass
class CheckedTrajectory:
    """A trajectory that passed :func:`check_trajectory`: names and points in the request's order."""

    joint_names: list[str]
    points: list[TrajectoryPoint]
    clamped: list[tuple[str, float, float]] = field(default_factory=list)
    """(joint, requested, clamped to) for each position moved onto a limit (``beyond_limits='clamp'``)."""


def _float(value) -> float:
    try:
        return float(value)
    except (TypeError, ValueError):
        return math.nan


def _seconds(value: float) -> str:
    return f'{value:.6g} s'


MAX_TRAJECTORY_POINTS = 100_000
"""Points one trajectory may hold (a planner's trajectory has hundreds; at 100 Hz this is over 16 minutes)."""


def check_trajectory(joint_names: Sequence[str], points: Sequence[TrajectoryPoint], joints: Sequence[str],
                     limits: dict[str, tuple[float, float]], *, allow_partial: bool, beyond_limits: str = 'reject',
                     strictly_increasing: bool = True, controller: str = 'arm_controller',
                     field_prefix: str = 'trajectory.') -> CheckedTrajectory | Rejection:
    """Check a trajectory against the controller's ``joints`` and their position ``limits``.

    ``beyond_limits``: 'reject' refuses a position outside its joint's limits; 'clamp' moves it onto
    the limit and lists it in :attr:`CheckedTrajectory.clamped`. ``strictly_increasing`` False lets
    two points share a time (the topic interface's rule). Messages are one line: the field, the
    problem, what was expected."""
    names = [str(name) for name in joint_names]
    expected = ', '.join(joints)
    if not names:
        return Rejection(ResultCode.INVALID_JOINTS, f'{field_prefix}joint_names: empty; expected joints of {controller} '
                                                    f'({expected})')
    unknown = [name for name in names if name not in joints]
    if unknown:
        # The phrase "unknown joints [...]" is what the topic interface has always logged.
        return Rejection(ResultCode.INVALID_JOINTS, f'{field_prefix}joint_names: unknown joints {unknown}; expected a '
                                                    f'subset of {list(joints)} (the joints of {controller})')
    repeated = sorted({name for name in names if names.count(name) > 1})
    if repeated:
        return Rejection(ResultCode.INVALID_JOINTS, f'{field_prefix}joint_names: {repeated} named more than once; '
                                                    'expected each joint once')
    missing = [name for name in joints if name not in names]
    if missing and not allow_partial:
        return Rejection(ResultCode.INVALID_JOINTS, f'{field_prefix}joint_names: missing {missing}; expected all joints '
                                                    f'of {controller} ({expected}): allow_partial_joints_goal is false')
    if not points:
        return Rejection(ResultCode.INVALID_GOAL, f'{field_prefix}points: trajectory has no points; expected at least one')
    if len(points) > MAX_TRAJECTORY_POINTS:
        return Rejection(ResultCode.INVALID_GOAL, f'{field_prefix}points: {len(points)} points; expected at most '
                                                  f'{MAX_TRAJECTORY_POINTS}')
    count = len(names)
    checked, clamped = [], []
    previous_time = None
    for index, point in enumerate(points):
        where = f'{field_prefix}points[{index}]'
        time = _float(point.time_from_start)
        if not (math.isfinite(time) and time >= 0):
            return Rejection(ResultCode.INVALID_GOAL, f'{where}.time_from_start: expected a time >= 0 s, got {time!r}')
        if previous_time is not None and (time <= previous_time if strictly_increasing else time < previous_time):
            rule = ('time_from_start must increase strictly' if strictly_increasing
                    else 'time_from_start must not decrease')
            return Rejection(ResultCode.INVALID_GOAL, f'{where}.time_from_start: {_seconds(time)} after point '
                                                      f'{index - 1} at {_seconds(previous_time)}; {rule}')
        previous_time = time
        positions = [_float(value) for value in point.positions]
        if len(positions) != count or not all(math.isfinite(value) for value in positions):
            return Rejection(ResultCode.INVALID_GOAL, f'{where}.positions: every point needs one finite position per '
                                                      f'joint ({count}: {", ".join(names)}), got {list(point.positions)}')
        values = {}
        for quantity in ('velocities', 'accelerations'):
            given = [_float(value) for value in getattr(point, quantity)]
            if given and (len(given) != count or not all(math.isfinite(value) for value in given)):
                return Rejection(ResultCode.INVALID_GOAL, f'{where}.{quantity}: expected none or one finite value per '
                                                          f'joint ({count}), got {list(getattr(point, quantity))}')
            values[quantity] = tuple(given)
        if values['accelerations'] and not values['velocities']:
            return Rejection(ResultCode.INVALID_GOAL, f'{where}.accelerations: given without velocities; expected '
                                                      'velocities too (or no accelerations)')
        for joint_index, (name, value) in enumerate(zip(names, positions)):
            if name not in limits:
                continue
            lower, upper = limits[name]
            if lower <= value <= upper:
                continue
            if beyond_limits == 'clamp':
                limited = min(max(value, lower), upper)
                clamped.append((name, value, limited))
                positions[joint_index] = limited
            else:
                return Rejection(ResultCode.INVALID_GOAL, f'{where}.positions[{joint_index}]: {value:.6g} is beyond the '
                                                          f'limits [{lower:.6g}, {upper:.6g}] of joint {name!r}')
        checked.append(TrajectoryPoint(time, tuple(positions), values['velocities'], values['accelerations']))
    return CheckedTrajectory(names, checked, clamped)


def resolve_tolerances(goal: ArmGoal, joints: Sequence[str], constraints: TrajectoryConstraints
                       ) -> tuple[list[StateTolerance], list[StateTolerance], float] | Rejection:
    """(path tolerance per joint, goal tolerance per joint, goal time) in force for ``goal``, JTC's way
    (module docstring), or why its tolerances are refused."""
    path = [StateTolerance(constraints.trajectory) for _ in joints]
    final = [StateTolerance(constraints.goal, constraints.stopped_velocity_tolerance) for _ in joints]
    for kind, given, resolved in (('path_tolerance', goal.path_tolerance, path),
                                  ('goal_tolerance', goal.goal_tolerance, final)):
        for index, tolerance in enumerate(given):
            if tolerance.name not in joints:
                return Rejection(ResultCode.INVALID_GOAL, f'{kind}[{index}].name: unknown joint {tolerance.name!r}; '
                                                          f'expected one of {list(joints)}')
            column = list(joints).index(tolerance.name)
            values = {}
            for quantity in ('position', 'velocity', 'acceleration'):
                value = _float(getattr(tolerance, quantity))
                default = getattr(resolved[column], quantity)
                if value > 0 and math.isfinite(value):
                    values[quantity] = value
                elif abs(value - ERASE_TOLERANCE) < 1e-6:
                    values[quantity] = 0.0
                elif value == 0:
                    values[quantity] = default
                else:
                    return Rejection(ResultCode.INVALID_GOAL,
                                     f'{kind}[{index}].{quantity}: {value!r} for joint {tolerance.name!r}; expected a '
                                     'tolerance > 0, 0 (the default) or -1 (not checked)')
            resolved[column] = StateTolerance(**values)
    goal_time = _float(goal.goal_time_tolerance)
    if not (math.isfinite(goal_time) and goal_time >= 0):
        return Rejection(ResultCode.INVALID_GOAL, f'goal_time_tolerance: expected a duration >= 0 s, got {goal_time!r}')
    return path, final, goal_time if goal_time > 0 else constraints.goal_time


def first_violation(joints: Sequence[str], tolerances: Sequence[StateTolerance], position_error: np.ndarray,
                    velocity_error: np.ndarray, acceleration_error: np.ndarray) -> str | None:
    """The first joint and quantity whose error exceeds its tolerance, as a phrase, or None."""
    for index, (name, tolerance) in enumerate(zip(joints, tolerances)):
        for quantity, error, unit in (('position', position_error, ''), ('velocity', velocity_error, '/s'),
                                      ('acceleration', acceleration_error, '/s^2')):
            limit = getattr(tolerance, quantity)
            if limit > 0 and not abs(error[index]) <= limit:
                return f'joint {name!r} {quantity} error {error[index]:.4g} exceeds {limit:.4g} (rad or m{unit})'
    return None


@dataclass
class ControllerState:
    """The controller's view at one instant, in its joint order (feedback and controller_state)."""

    joint_names: list[str]
    desired: tuple[np.ndarray, np.ndarray, np.ndarray]
    """Desired positions, velocities, accelerations."""
    actual: tuple[np.ndarray, np.ndarray, np.ndarray]
    error: tuple[np.ndarray, np.ndarray, np.ndarray]
    """desired - actual, per quantity."""
    index: int
    """The trajectory point the current segment starts from (-1: no trajectory)."""
    time_from_start: float
    """Seconds since the running goal's trajectory started (0 without a goal)."""


@dataclass
class _ActiveArmGoal:
    token: object
    path: list[StateTolerance]
    final: list[StateTolerance]
    goal_time: float
    start_time: float
    end_time: float
    first_sample: bool = True


class ArmController:
    """The FollowJointTrajectory goal state machine over one :class:`TrajectoryFollower` (module docstring).

    :meth:`start`, :meth:`cancel` and :meth:`preempt` change goals; :meth:`update` runs after every
    physics step with the measured joint state. Each returns the outcomes of the goals that ended
    (every goal ends exactly once, with one outcome)."""

    def __init__(self, follower: TrajectoryFollower, limits: dict[str, tuple[float, float]],
                 constraints: TrajectoryConstraints | None = None, allow_partial_joints_goal: bool = False,
                 name: str = 'arm_controller'):
        self.follower = follower
        self.joints = list(follower.joints)
        self.limits = dict(limits)
        self.constraints = constraints or TrajectoryConstraints()
        problem = self.constraints.problem()
        if problem:
            raise ValueError(problem)
        self.allow_partial_joints_goal = allow_partial_joints_goal
        self.name = name
        self.active: _ActiveArmGoal | None = None

    @property
    def active_token(self):
        return self.active.token if self.active is not None else None

    def start(self, goal: ArmGoal, token, now: float, positions, velocities) -> list[ArmOutcome]:
        """Check ``goal``; if it is good, follow it (preempting the running goal), else end it at once."""
        def refuse(code: ResultCode, message: str) -> list[ArmOutcome]:
            return [ArmOutcome(token, GoalStatus.ABORTED, code, message)]
        if goal.unsupported:
            return refuse(ResultCode.INVALID_GOAL, goal.unsupported)
        checked = check_trajectory(goal.joint_names, goal.points, self.joints, self.limits,
                                   allow_partial=self.allow_partial_joints_goal, controller=self.name)
        if isinstance(checked, Rejection):
            return refuse(checked.code, checked.message)
        tolerances = resolve_tolerances(goal, self.joints, self.constraints)
        if isinstance(tolerances, Rejection):
            return refuse(tolerances.code, tolerances.message)
        start = now if goal.start_time is None else float(goal.start_time)
        if not math.isfinite(start):
            return refuse(ResultCode.INVALID_GOAL, f'trajectory.header.stamp: expected a finite time, got {start!r}')
        end = start + checked.points[-1].time_from_start
        if end < now:
            return refuse(ResultCode.OLD_HEADER_TIMESTAMP,
                          f'trajectory.header.stamp: the trajectory ends at {_seconds(end)} sim time, before now '
                          f'({_seconds(now)}); expected a stamp of 0 (start on receipt) or a later one')
        outcomes = self.preempt(f'preempted by a new goal at {_seconds(now)} sim time', now, hold=None)
        self.follower.load(checked.joint_names, checked.points, start, now, positions, velocities)
        path, final, goal_time = tolerances
        self.active = _ActiveArmGoal(token, path, final, goal_time, start, end)
        return outcomes

    def preempt(self, reason: str, now: float, hold=None) -> list[ArmOutcome]:
        """End the running goal (INVALID_GOAL, ``reason``); ``hold``: positions for the arm to hold."""
        if self.active is None:
            return []
        outcome = ArmOutcome(self.active.token, GoalStatus.ABORTED, ResultCode.INVALID_GOAL, reason)
        self.active = None
        if hold is not None:
            self.follower.hold(hold)
        return [outcome]

    def cancel(self, token, now: float, positions) -> list[ArmOutcome]:
        """The client cancelled ``token``: if it is the running goal, hold where the arm is and end it."""
        if self.active is None or self.active.token is not token:
            return []
        self.follower.hold(positions)
        self.active = None
        return [ArmOutcome(token, GoalStatus.CANCELED, ResultCode.SUCCESSFUL,
                           f'canceled at {_seconds(now)} sim time; holding the position reached')]

    def state(self, now: float, positions, velocities, accelerations) -> ControllerState:
        desired = self.follower.sample(now)
        actual = (np.asarray(positions, dtype=float), np.asarray(velocities, dtype=float),
                  np.asarray(accelerations, dtype=float))
        if desired is None:
            wanted = (actual[0], np.zeros(len(self.joints)), np.zeros(len(self.joints)))
            index = -1
        else:
            wanted = (desired.positions, desired.velocities, desired.accelerations)
            index = desired.index
        error = tuple(w - a for w, a in zip(wanted, actual))
        elapsed = now - self.active.start_time if self.active is not None else 0.0
        return ControllerState(self.joints, wanted, actual, error, index, elapsed)

    def update(self, now: float, positions, velocities, accelerations) -> list[ArmOutcome]:
        """Check the running goal against the measured state at ``now`` (after a physics step)."""
        goal = self.active
        if goal is None:
            return []
        desired = self.follower.sample(now)
        positions = np.asarray(positions, dtype=float)
        position_error = desired.positions - positions
        velocity_error = desired.velocities - np.asarray(velocities, dtype=float)
        acceleration_error = desired.accelerations - np.asarray(accelerations, dtype=float)
        before_end = now < goal.end_time
        if before_end or goal.first_sample:
            goal.first_sample = False
            violation = first_violation(self.joints, goal.path, position_error, velocity_error, acceleration_error)
            if violation is not None:
                self.follower.hold(positions)
                self.active = None
                return [ArmOutcome(goal.token, GoalStatus.ABORTED, ResultCode.PATH_TOLERANCE_VIOLATED,
                                   f'path tolerance violated at {_seconds(now)} sim time: {violation}; holding the '
                                   'position reached')]
        if before_end:
            return []
        violation = first_violation(self.joints, goal.final, position_error, velocity_error, acceleration_error)
        if violation is None:
            self.active = None
            return [ArmOutcome(goal.token, GoalStatus.SUCCEEDED, ResultCode.SUCCESSFUL, 'Goal successfully reached!')]
        late = now - goal.end_time
        if goal.goal_time > 0 and late > goal.goal_time:
            self.follower.hold(positions)
            self.active = None
            return [ArmOutcome(goal.token, GoalStatus.ABORTED, ResultCode.GOAL_TOLERANCE_VIOLATED,
                               f'goal tolerance violated {_seconds(late)} after the trajectory\'s end (goal time '
                               f'tolerance {_seconds(goal.goal_time)}): {violation}; holding the position reached')]
        return []


@dataclass
class GripperConfig:
    """gripper_action_controller's parameters (defaults chosen for small simulated grippers)."""

    goal_tolerance: float = 0.001
    """How close (m) the finger must come to the commanded position to reach the goal (the
    controller's default, 0.01 m, is half the rover's whole stroke)."""
    stall_velocity_threshold: float = 0.001
    """Finger speed (m/s) below which it counts as not moving (the controller's default)."""
    stall_timeout: float = 1.0
    """Seconds without moving, short of the goal, after which the gripper counts as stalled (the controller's default)."""
    allow_stalling: bool = True
    """A stalled goal ends SUCCEEDED (True) or ABORTED (False, the controller's default)."""

    def problem(self) -> str | None:
        for name in ('goal_tolerance', 'stall_velocity_threshold', 'stall_timeout'):
            value = getattr(self, name)
            if not (isinstance(value, (int, float)) and math.isfinite(value) and value > 0):
                return f'gripper.{name}: expected a finite number > 0, got {value!r}'
        return None


@dataclass
class _ActiveGripperGoal:
    token: object
    target: float
    last_movement: float
    note: str = ''


class GripperController:
    """The GripperCommand goal state machine over the gripper's follower (module docstring).

    ``joint`` is the driven finger (a second finger follows it in the model); its position range is
    ``[lower, upper]`` and ``effort_limit`` the description's force limit (N). :attr:`effort_limit_in_force`
    is the force limit the simulation applies to the finger's servo."""

    def __init__(self, follower: TrajectoryFollower, joint: str, lower: float, upper: float, effort_limit: float,
                 config: GripperConfig | None = None):
        self.follower = follower
        self.joint = joint
        self.lower, self.upper = float(lower), float(upper)
        self.effort_limit = float(effort_limit)
        self.config = config or GripperConfig()
        problem = self.config.problem()
        if problem:
            raise ValueError(problem)
        self.effort_limit_in_force = self.effort_limit
        self.active: _ActiveGripperGoal | None = None

    @property
    def active_token(self):
        return self.active.token if self.active is not None else None

    def _outcome(self, token, status: GoalStatus, position: float, effort: float, stalled: bool = False,
                 reached: bool = False, reason: str = '') -> GripperOutcome:
        return GripperOutcome(token, status, float(position), abs(float(effort)), stalled, reached, reason)

    def start(self, token, position: float, max_effort: float, now: float, current_position: float,
              current_effort: float, positions, velocities) -> list[GripperOutcome]:
        """Move the finger to ``position`` with at most ``max_effort`` (N; 0: the description's limit).
        ``positions``/``velocities``: the measured state of every follower joint."""
        position, max_effort = _float(position), _float(max_effort)
        if not math.isfinite(position):
            return [self._outcome(token, GoalStatus.ABORTED, current_position, current_effort,
                                  reason=f'command.position: expected a finite finger position (m), got {position!r}')]
        if not (math.isfinite(max_effort) and max_effort >= 0):
            return [self._outcome(token, GoalStatus.ABORTED, current_position, current_effort,
                                  reason=f'command.max_effort: expected a force >= 0 N (0: the description\'s '
                                         f'{self.effort_limit:g} N), got {max_effort!r}')]
        note = ''
        target = min(max(position, self.lower), self.upper)
        if target != position:
            note = (f'command.position {position:g} m is beyond the finger travel [{self.lower:g}, {self.upper:g}] m; '
                    f'moving to {target:g} m')
        outcomes = self.preempt(f'preempted by a new goal at {_seconds(now)} sim time', current_position, current_effort)
        self.effort_limit_in_force = min(max_effort, self.effort_limit) if max_effort > 0 else self.effort_limit
        self.follower.load([self.joint], [TrajectoryPoint(0.0, (target,))], now, now, positions, velocities)
        self.active = _ActiveGripperGoal(token, target, now, note)
        return outcomes

    def preempt(self, reason: str, position: float, effort: float) -> list[GripperOutcome]:
        if self.active is None:
            return []
        outcome = self._outcome(self.active.token, GoalStatus.ABORTED, position, effort, reason=reason)
        self.active = None
        return [outcome]

    def cancel(self, token, now: float, position: float, effort: float, positions) -> list[GripperOutcome]:
        """The client cancelled ``token``: hold the fingers where they are."""
        if self.active is None or self.active.token is not token:
            return []
        self.follower.hold(positions)
        self.active = None
        return [self._outcome(token, GoalStatus.CANCELED, position, effort,
                              reason=f'canceled at {_seconds(now)} sim time; holding the fingers where they are')]

    def update(self, now: float, position: float, velocity: float, effort: float) -> list[GripperOutcome]:
        goal = self.active
        if goal is None:
            return []
        if abs(goal.target - position) < self.config.goal_tolerance:
            self.active = None
            return [self._outcome(goal.token, GoalStatus.SUCCEEDED, position, effort, reached=True, reason=goal.note)]
        if abs(velocity) > self.config.stall_velocity_threshold:
            goal.last_movement = now
        elif now - goal.last_movement > self.config.stall_timeout:
            self.active = None
            status = GoalStatus.SUCCEEDED if self.config.allow_stalling else GoalStatus.ABORTED
            return [self._outcome(goal.token, status, position, effort, stalled=True,
                                  reason=f'stalled at {position:.4g} m, {goal.target - position:+.4g} m short of '
                                         f'{goal.target:.4g} m (an object between the fingers)')]
        return []
