"""Inverse kinematics of an :class:`~.chain.ArmChain`: damped least squares (Levenberg-Marquardt with
the error-dependent damping of Sugihara, 2011) inside the joint limits, with seeded random restarts.
A step that would carry a joint past a limit stops that joint at the limit and solves the others again
for the rest of the error, so the free joints make up for a pinned one.

Tasks (all in the chain's root frame):

* :class:`PoseTarget` - the full 6-D tool pose; needs an arm with at least 6 joints (UR5, Panda).
* :class:`PositionPitchTarget` - the tool point plus its *pitch*: the angle of the tool z axis above the
  plane normal to the arm's first joint axis (horizontal for a vertical first axis), measured in the
  vertical half-plane from that axis through the target: 0 horizontal pointing away from the base,
  -90 deg straight down, +90 deg straight up, +-180 deg horizontal pointing back. This is the task of
  the rover's 4-DOF arm (base yaw, then shoulder, elbow and wrist pitch): yaw places the arm's plane
  through the target, the three pitch joints place the tool point and its angle in that plane; the
  tool's roll about its own axis is not controlled. Needs 4 joints and a revolute first joint.
* :class:`PositionAxisTarget` - the tool point plus the direction of the tool's z axis (its approach axis), the roll
  about that axis free: five constraints, which an arm of five joints meets for every pair it can reach. What an arm
  of fewer than six joints can reach is exactly this: the set of (tool point, approach axis) pairs its joint
  configurations within the limits produce. A target drawn from that set is met (tested on 1000 such targets of a
  5-joint arm, the SO-101 of example-robot-data, and of the rover's 4-joint arm); a pitch alone does not say enough
  for a 5-joint arm, whose wrist roll turns the axis out of the arm's vertical plane (on 300 such SO-101 targets,
  seed 12, position+pitch met 245, Wilson 95 % 77-86 %, position+axis all 300). Needs 4 joints (a 4-joint arm
  meets only the axes in its plane).
* :class:`PositionTarget` - the tool point only (any arm with at least 3 joints).

The first attempt starts at ``initial`` (the current configuration, say) or mid-range; each restart
starts at a configuration drawn uniformly within the limits from ``numpy.random.default_rng(seed)``,
so a seed gives the same solution every time. An attempt ends when the errors are below
``convergence_ratio`` times the tolerances, or when it stalls (a joint pinned at a limit, a local
minimum). Every solution is re-checked - forward kinematics from scratch, errors against the full
tolerances (0.1 mm, 0.1 deg), joints within limits - before it is returned as a success.

:func:`solve_ik` never raises for bad input or an unreachable target: the :class:`IkResult` says why.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from ..description.model import RobotModel
from ..geometry import rotation_angle_between
from .chain import ArmChain, ChainError

POSITION_TOLERANCE = 1e-4
"""Largest tool position error of a solution (m): 0.1 mm."""
ORIENTATION_TOLERANCE = math.radians(0.1)
"""Largest tool orientation (or pitch) error of a solution (rad): 0.1 deg."""


@dataclass(frozen=True, eq=False)  # an array field: compare poses with numpy, not ==
class PoseTarget:
    """The tool frame at ``pose``: a 4x4 rigid transform in the chain's root frame."""

    pose: np.ndarray
    task = 'pose'


@dataclass(frozen=True)
class PositionPitchTarget:
    """The tool point at ``position`` (m, root frame) with its z axis at ``pitch`` (rad, see the module docstring)."""

    position: tuple[float, float, float]
    pitch: float
    task = 'position+pitch'


@dataclass(frozen=True)
class PositionTarget:
    """The tool point at ``position`` (m, root frame); orientation free."""

    position: tuple[float, float, float]
    task = 'position'


@dataclass(frozen=True)
class PositionAxisTarget:
    """The tool point at ``position`` (m, root frame) with its z axis along ``axis`` (a direction in the root frame,
    any length but 0); the roll about that axis is free."""

    position: tuple[float, float, float]
    axis: tuple[float, float, float]
    task = 'position+axis'


Target = PoseTarget | PositionPitchTarget | PositionAxisTarget | PositionTarget
REQUIRED_JOINTS = {'pose': 6, 'position+pitch': 4, 'position+axis': 4, 'position': 3}
"""Joints a task needs: an arm with fewer cannot meet an arbitrary target of that kind."""


@dataclass(frozen=True)
class IkOptions:
    position_tolerance: float = POSITION_TOLERANCE
    """Largest position error (m) the forward-kinematics re-check accepts."""
    orientation_tolerance: float = ORIENTATION_TOLERANCE
    """Largest orientation or pitch error (rad) the re-check accepts."""
    convergence_ratio: float = 0.01
    """An attempt converges at this fraction of the tolerances, leaving margin for the re-check."""
    max_restarts: int = 50
    """Random restarts after the first attempt before giving up."""
    max_iterations: int = 50
    """Iterations per attempt (a converging attempt needs 10-30; a fresh start is cheaper than crawling)."""
    stall_iterations: int = 8
    """An attempt is abandoned after this many iterations without a 0.1 % improvement."""
    damping: float = 1e-9
    """Constant part of the Levenberg-Marquardt damping (added to half the squared scaled error): keeps the
    step bounded at a singularity. Larger values crawl towards solutions near one: of 1000 random UR5
    targets, 1e-4 missed 1.5 %, 1e-6 0.1-0.3 %, 1e-9 none."""


@dataclass(frozen=True)
class IkResult:
    success: bool
    joint_names: tuple[str, ...]
    positions: tuple[float, ...]
    """The solution in ``joint_names`` order; empty when there is none."""
    position_error: float
    """Tool position error (m) of the solution, else of the best attempt (inf before any attempt)."""
    orientation_error: float
    """Tool orientation error (rad): geodesic angle (pose), tool-axis or pitch angle (position+pitch), tool-axis angle
    (position+axis), 0 (position)."""
    iterations: int
    """Iterations over all attempts."""
    restarts: int
    """Random restarts used (0: the first attempt succeeded)."""
    task: str = ''
    reason: str = ''
    """Why there is no solution; empty on success."""

    def as_dict(self) -> dict[str, float]:
        return dict(zip(self.joint_names, self.positions))


# ---------------------------------------------------------------------------- task residuals
def _rotation_vector(rotation: np.ndarray) -> np.ndarray:
    """Axis * angle of a rotation matrix (the matrix logarithm), accurate near 0 and pi."""
    skew = np.array([rotation[2, 1] - rotation[1, 2], rotation[0, 2] - rotation[2, 0], rotation[1, 0] - rotation[0, 1]])
    sine = np.linalg.norm(skew) / 2.0
    cosine = (np.trace(rotation) - 1.0) / 2.0
    angle = math.atan2(sine, cosine)
    if sine > 1e-6:
        return skew / (2.0 * sine) * angle
    if cosine > 0:
        return skew / 2.0  # small angle: sin(angle) ~ angle
    symmetric = (rotation + np.eye(3)) / 2.0  # angle ~ pi: axis from R + I = 2 a a^T
    column = int(np.argmax(np.diag(symmetric)))
    axis = symmetric[:, column] / math.sqrt(max(symmetric[column, column], 1e-300))
    if skew @ axis < 0:
        axis = -axis
    return axis * angle


def _turn_between(axis: np.ndarray, goal: np.ndarray) -> tuple[np.ndarray, float]:
    """(rotation vector taking unit ``axis`` onto unit ``goal``, the angle between them)."""
    cross = np.cross(axis, goal)
    sine, cosine = np.linalg.norm(cross), float(axis @ goal)
    angle = math.atan2(sine, cosine)
    if sine > 1e-12:
        return cross / sine * angle, angle
    if cosine > 0:
        return cross, angle
    helper = np.array([1.0, 0.0, 0.0]) if abs(axis[0]) < 0.9 else np.array([0.0, 1.0, 0.0])
    normal = np.cross(axis, helper)
    return normal / np.linalg.norm(normal) * angle, angle


class _Task:
    """Scaled residual and Jacobian of a target: position rows in units of the arm's reach, so a
    millimetre on the rover and a millimetre on the UR5 weigh against radians alike."""

    def __init__(self, chain: ArmChain, target: Target):
        self.kind = target.task
        self.scale = 1.0 / max(chain.reach, 0.05)
        if isinstance(target, PoseTarget):
            pose = np.asarray(target.pose, dtype=float)
            self.position, self.rotation = pose[:3, 3].copy(), pose[:3, :3].copy()
            self.tool_axis = self.rotation[:, 2]
        else:
            self.position = np.asarray(target.position, dtype=float)
            self.tool_axis = None
        if isinstance(target, PositionPitchTarget):
            self.pitch = float(target.pitch)
            self.tool_axis = chain.pitch_direction(self.position, self.pitch)
        if isinstance(target, PositionAxisTarget):
            axis = np.asarray(target.axis, dtype=float)
            self.tool_axis = axis / np.linalg.norm(axis)

    def residual(self, pose: np.ndarray, jacobian: np.ndarray) -> tuple[np.ndarray, np.ndarray, float, float]:
        """(scaled error e, scaled task Jacobian A with dq = A^+ e, position error m, orientation error rad)."""
        position_error = self.position - pose[:3, 3]
        distance = math.sqrt(position_error @ position_error)
        if self.kind == 'position':
            return position_error * self.scale, jacobian[:3] * self.scale, distance, 0.0
        if self.kind == 'pose':
            rotation_error = _rotation_vector(self.rotation @ pose[:3, :3].T)
            angular = jacobian[3:]
            angle = math.sqrt(rotation_error @ rotation_error)
        else:
            axis = pose[:3, 2]
            rotation_error, angle = _turn_between(axis, self.tool_axis)
            # Turning about the tool axis itself changes nothing: leave it out of the task.
            angular = jacobian[3:] - np.outer(axis, axis @ jacobian[3:])
        error = np.concatenate((position_error * self.scale, rotation_error))
        return error, np.vstack((jacobian[:3] * self.scale, angular)), distance, angle


# ---------------------------------------------------------------------------- solver
def _check_target(chain: ArmChain, target) -> str:
    """Why ``target`` cannot be solved for on ``chain`` ('' if it can be tried)."""
    if not isinstance(target, (PoseTarget, PositionPitchTarget, PositionAxisTarget, PositionTarget)):
        return ('target: expected a PoseTarget, PositionPitchTarget, PositionAxisTarget or PositionTarget, '
                f'got {type(target).__name__}')
    if isinstance(target, PoseTarget):
        try:
            pose = np.asarray(target.pose, dtype=float)
        except (TypeError, ValueError):
            return 'target.pose: expected a 4x4 rigid transform of numbers'
        if pose.shape != (4, 4) or not np.all(np.isfinite(pose)):
            return f'target.pose: expected a finite 4x4 rigid transform, got shape {pose.shape}' + (
                '' if pose.shape != (4, 4) else ' with non-finite values')
        rotation = pose[:3, :3]
        if (np.abs(rotation.T @ rotation - np.eye(3)).max() > 1e-6 or np.linalg.det(rotation) < 0
                or np.abs(pose[3] - (0, 0, 0, 1)).max() > 1e-12):
            return 'target.pose: expected a rigid transform (orthonormal right-handed rotation, last row 0 0 0 1)'
    else:
        try:
            position = np.asarray(target.position, dtype=float)
        except (TypeError, ValueError):
            return f'target.position: expected 3 numbers (m), got {target.position!r}'
        if position.shape != (3,) or not np.all(np.isfinite(position)):
            return f'target.position: expected 3 finite numbers (m), got {target.position!r}'
    if isinstance(target, PositionAxisTarget):
        try:
            axis = np.asarray(target.axis, dtype=float)
        except (TypeError, ValueError):
            axis = np.zeros(0)
        if axis.shape != (3,) or not np.all(np.isfinite(axis)) or not np.linalg.norm(axis) > 1e-9:
            return f'target.axis: expected 3 finite numbers, not all 0 (a direction), got {target.axis!r}'
    if isinstance(target, PositionPitchTarget):
        if not isinstance(target.pitch, (int, float, np.floating, np.integer)) or not math.isfinite(target.pitch):
            return f'target.pitch: expected a finite angle (rad), got {target.pitch!r}'
        if chain.pitch_axis is None:
            return f'target: position+pitch needs a revolute first joint; {chain.arm!r} of {chain.robot} has none'
    needed = REQUIRED_JOINTS[target.task]
    if chain.dof < needed:
        hint = ' (give a position and pitch: PositionPitchTarget)' if target.task == 'pose' else ''
        return (f'target: a {target.task} task needs {needed} joints, arm {chain.arm!r} of {chain.robot} '
                f'has {chain.dof}{hint}')
    return ''


def _reach_check(chain: ArmChain, task: _Task, tolerance: float) -> str:
    """Why the target is certainly out of reach ('' if it may be reachable)."""
    distance = float(np.linalg.norm(task.position - chain.reach_centre))
    if distance > chain.reach + tolerance:
        return (f'unreachable: target {distance:.3f} m from the shoulder ({chain.reach_joint}), '
                f'reach {chain.reach:.3f} m')
    if task.tool_axis is not None and chain.wrist_to_tool is not None and chain.wrist_reach is not None:
        wrist = task.position - chain.wrist_to_tool * task.tool_axis
        distance = float(np.linalg.norm(wrist - chain.reach_centre))
        if distance > chain.wrist_reach + tolerance:
            how = (f'at pitch {math.degrees(task.pitch):.1f} deg' if task.kind == 'position+pitch'
                   else 'along that axis' if task.kind == 'position+axis' else 'in that orientation')
            return (f'unreachable {how}: the last joint would be {distance:.3f} m from the shoulder '
                    f'({chain.reach_joint}), reach {chain.wrist_reach:.3f} m')
    return ''


def _recheck(chain: ArmChain, task: _Task, positions: np.ndarray) -> tuple[float, float]:
    """Errors of ``positions`` from a fresh forward kinematics, by formulas independent of the solver's."""
    pose = chain.forward(positions)
    position_error = float(np.linalg.norm(pose[:3, 3] - task.position))
    if task.kind == 'pose':
        return position_error, rotation_angle_between(pose[:3, :3], task.rotation)
    if task.kind == 'position+pitch':
        # Pitch in the half-plane through the target (the tool point may sit within a micrometre of the
        # first joint's axis, where its own half-plane is ill-defined).
        axis = pose[:3, 2]
        pitch = math.atan2(float(axis @ chain.pitch_axis), float(axis @ chain.pitch_reference(task.position)))
        pitch_error = abs(math.remainder(pitch - task.pitch, 2 * math.pi))
        axis_error = math.acos(min(1.0, max(-1.0, float(axis @ task.tool_axis))))
        return position_error, max(pitch_error, axis_error)
    if task.kind == 'position+axis':
        return position_error, math.acos(min(1.0, max(-1.0, float(pose[:3, 2] @ task.tool_axis))))
    return position_error, 0.0


@dataclass
class _Attempt:
    positions: np.ndarray
    position_error: float
    orientation_error: float
    iterations: int
    converged: bool
    score: float = field(default=math.inf)


def _limited_step(chain: ArmChain, q: np.ndarray, error: np.ndarray, jacobian: np.ndarray, damping: float) -> np.ndarray:
    """The damped least-squares step, with joints that it would push past a limit stopped at the limit
    and the others solved again for what remains (active set): near a limit the free joints make up
    for a pinned one instead of the attempt stalling against it."""
    normal_matrix = jacobian.T @ jacobian
    step = np.linalg.solve(normal_matrix + damping * np.eye(len(q)), jacobian.T @ error)
    free = np.ones(len(q), dtype=bool)
    for _ in range(3):
        target = q + step
        pinned = free & ((target > chain.upper) | (target < chain.lower))
        if not pinned.any():
            break
        step[pinned] = np.clip(target[pinned], chain.lower[pinned], chain.upper[pinned]) - q[pinned]
        free &= ~pinned
        if not free.any():
            break
        remaining = error - jacobian[:, ~free] @ step[~free]
        sub = jacobian[:, free]
        step[free] = np.linalg.solve(sub.T @ sub + damping * np.eye(int(free.sum())), sub.T @ remaining)
    return step


def _attempt(chain: ArmChain, task: _Task, start: np.ndarray, options: IkOptions) -> _Attempt:
    position_goal = options.position_tolerance * options.convergence_ratio
    orientation_goal = options.orientation_tolerance * options.convergence_ratio
    q = chain.clamp(start)
    best = _Attempt(q, math.inf, math.inf, 0, False)
    since_improvement = 0
    for iteration in range(1, options.max_iterations + 1):
        pose, jacobian = chain.forward_with_jacobian(q)
        error, task_jacobian, position_error, orientation_error = task.residual(pose, jacobian)
        squared = float(error @ error)
        if position_error <= position_goal and orientation_error <= orientation_goal:
            return _Attempt(q, position_error, orientation_error, iteration, True, squared)
        if squared < best.score * (1 - 1e-3):
            best = _Attempt(q, position_error, orientation_error, iteration, False, squared)
            since_improvement = 0
        else:
            since_improvement += 1
            if since_improvement >= options.stall_iterations:
                break
        q = chain.clamp(q + _limited_step(chain, q, error, task_jacobian, 0.5 * squared + options.damping))
    best.iterations = iteration
    return best


def solve_ik(chain: ArmChain, target: Target, *, seed: int = 0, initial=None,
             options: IkOptions = IkOptions()) -> IkResult:
    """Joint positions putting ``chain``'s tool on ``target`` (see the module docstring); never raises
    for bad input: the result's ``reason`` says what was wrong."""
    names = chain.joint_names
    kind = getattr(target, 'task', '')

    def failure(reason: str, position_error=math.inf, orientation_error=math.inf, iterations=0, restarts=0):
        return IkResult(False, names, (), position_error, orientation_error, iterations, restarts, kind, reason)

    reason = _check_target(chain, target)
    if reason:
        return failure(reason)
    if initial is not None:
        try:
            start = np.asarray(initial, dtype=float).reshape(-1)
        except (TypeError, ValueError):
            start = None
        if start is None or start.shape != (chain.dof,) or not np.all(np.isfinite(start)):
            return failure(f'initial: expected {chain.dof} finite joint positions ({", ".join(names)}), got {initial!r}')
    else:
        start = chain.middle_positions()
    if not isinstance(seed, (int, np.integer)) or isinstance(seed, bool):
        return failure(f'seed: expected an integer, got {seed!r}')
    task = _Task(chain, target)
    reason = _reach_check(chain, task, options.position_tolerance)
    if reason:
        return failure(reason)

    rng = np.random.default_rng(seed)
    iterations, best = 0, None
    try:
        for restart in range(options.max_restarts + 1):
            attempt = _attempt(chain, task, start if restart == 0 else chain.random_positions(rng), options)
            iterations += attempt.iterations
            if attempt.converged and chain.within_limits(attempt.positions):
                position_error, orientation_error = _recheck(chain, task, attempt.positions)
                if position_error <= options.position_tolerance and orientation_error <= options.orientation_tolerance:
                    return IkResult(True, names, tuple(float(v) for v in attempt.positions), position_error,
                                    orientation_error, iterations, restart, kind)
            if best is None or attempt.score < best.score:
                best = attempt
    except (np.linalg.LinAlgError, FloatingPointError, ValueError) as error:
        return failure(f'numerical failure: {error}', iterations=iterations)
    return failure(f'no solution within {options.position_tolerance * 1000:g} mm / '
                   f'{math.degrees(options.orientation_tolerance):g} deg after {options.max_restarts} restarts: '
                   f'best position error {best.position_error * 1000:.2f} mm, orientation error '
                   f'{math.degrees(best.orientation_error):.2f} deg (the target may lie beyond the joint limits)',
                   best.position_error, best.orientation_error, iterations, options.max_restarts)


def solve_arm_ik(model: RobotModel, target: Target, *, arm: str | None = None, root: str | None = None,
                 tool: str | None = None, seed: int = 0, initial=None, options: IkOptions = IkOptions()) -> IkResult:
    """:func:`solve_ik` on the chain of ``model``'s ``arm`` (the first arm if None); an unknown arm,
    root or tool gives a result with the reason instead of raising. Builds the chain on every call
    (under a millisecond): keep an :class:`ArmChain` for repeated solves."""
    try:
        chain = ArmChain(model, arm, root=root, tool=tool)
    except ChainError as error:
        return IkResult(False, (), (), math.inf, math.inf, 0, 0, getattr(target, 'task', ''), str(error))
    return solve_ik(chain, target, seed=seed, initial=initial, options=options)
