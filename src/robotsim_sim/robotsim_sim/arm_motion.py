"""Arm motions from tool targets (ROS-free): inverse kinematics, a collision check of the goal,
collision-free planning and jerk-limited timing, in one call.

:class:`ArmMotionPlanner` ties the arm core together for one arm of one robot in a world:
:mod:`robotsim_core.arm.ik` (tool position + pitch for the rover's 4-DOF arm, the full pose for 6- and
7-joint arms), :class:`~robotsim_sim.arm_planning.PlanningScene` and :func:`~robotsim_sim.arm_planning.plan`
(MuJoCo collision checks against the world and the robot itself, RRT-Connect) and
:func:`robotsim_core.arm.timing.time_parameterize` (ruckig). Its answers are :class:`MotionPlan` values
whose ``code`` says why a motion cannot be made, one of :data:`FAILURE_CODES`; nothing raises for a
target out of reach or in collision. `robotsim arm reach`, the ``arm/reach`` service and the
pick-and-place demo all plan through it.

Targets are given in the chain's root frame (the robot's ``base_link``) or, with
:meth:`ArmMotionPlanner.world_to_root`, in the world: the planning scene holds the base pose.

Goal selection: a position + pitch target has up to four arm configurations on the rover (elbow up or
down, the base turned towards the target or away from it and the arm leaning back). The solver returns
one per start; :meth:`ArmMotionPlanner.goal_configuration` solves from the current configuration
(with the solver's restarts), then once each from the configuration facing the target
(:meth:`ArmMotionPlanner.facing`) and from :data:`IK_STARTS` seeded random starts, and keeps the
collision-free solution nearest the facing configuration (joint-space distance): a reachable
target whose first solution is in collision is still reached, and the arm reaches forward rather
than over its back. With no pitch given, the pitches of :data:`DEFAULT_PITCHES` are tried in turn.
"""

from __future__ import annotations

import dataclasses
import math
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import mujoco
import numpy as np

from robotsim_core.arm.chain import ArmChain
from robotsim_core.arm.ik import IkOptions, PositionPitchTarget, solve_ik
from robotsim_core.arm.timing import TimedTrajectory, TrajectoryInputError, joint_limits_from_model, time_parameterize

from .arm_planning import DEFAULT_MARGIN, PlannerOptions, PlanningScene, plan
from .binding import entity_free_joint
from .scene import RobotPlacement
from robotsim_core.description.world_spec import WorldSpec

FAILURE_CODES = {
    'bad_request': 'the request itself is malformed (a field out of range, a non-finite number)',
    'unreachable': 'no arm configuration puts the tool there (inverse kinematics found none within the joint limits)',
    'target_in_collision': 'every arm configuration that reaches the target touches something',
    'start_in_collision': 'the arm already touches something where it stands',
    'planning_failed': 'no collision-free path from the current configuration was found',
}
"""Why a motion plan failed (:attr:`MotionPlan.code`), with what each code means."""

DEFAULT_PITCHES = tuple(math.radians(angle) for angle in (-90, -75, -60, -45, -30, -15, 0, 15, 30, 45))
"""Tool pitches (rad) tried, in order, when a position target gives none: straight down first (a
top-down approach suits a gripper reaching to the floor or a table), then flatter."""
IK_STARTS = 6
"""Seeded random initial configurations tried besides the current one when looking for a
collision-free inverse kinematics solution."""
DISTINCT_SOLUTION = 1e-3
"""Two solutions closer than this (rad, largest joint difference) are the same configuration."""


@dataclass
class MotionPlan:
    """A timed, collision-free motion of the arm, or why there is none."""

    success: bool
    joint_names: tuple[str, ...]
    code: str = ''
    """'' on success, else one of :data:`FAILURE_CODES`."""
    reason: str = ''
    """One line: what failed and why (the colliding pair, the unreachable distance)."""
    goal: np.ndarray | None = None
    """The goal configuration (arm joint order); None when no goal was found."""
    pitch: float = math.nan
    """The tool pitch of the goal (rad) for a position target; NaN otherwise."""
    path: np.ndarray = field(default_factory=lambda: np.empty((0, 0)))
    """Waypoints (N, joints) from the start to the goal; straight joint-space edges between them."""
    trajectory: TimedTrajectory | None = None
    """The jerk-limited trajectory through the path (stops at every waypoint)."""
    planning_time: float = 0.0
    """Wall-clock seconds for the whole request (inverse kinematics, checks, planning, timing)."""

    @property
    def duration(self) -> float:
        return self.trajectory.duration if self.trajectory is not None else 0.0


class ArmMotionPlanner:
    """Inverse kinematics, collision checks, planning and timing for one arm of ``placements[robot]``
    in ``world`` (see the module docstring). ``seed`` seeds every random choice (inverse kinematics
    restarts, planner samples) together with a per-request counter: the same sequence of requests
    gives the same motions."""

    def __init__(self, world: WorldSpec, placements: list[RobotPlacement], robot: int = 0, arm: str | None = None,
                 margin: float = DEFAULT_MARGIN, planner_options: PlannerOptions | None = None,
                 ik_options: IkOptions | None = None, dt: float = 0.01, seed: int = 0):
        self.scene = PlanningScene(world, placements, robot, arm, margin)
        self.placement = placements[robot]
        model = self.placement.model
        self.model = model
        self.chain = ArmChain(model, self.scene.arm.name)
        self.joint_names = self.chain.joint_names
        self.gripper_joints = self.chain.gripper_joints
        self.limits = joint_limits_from_model(model, self.joint_names)
        self.planner_options = planner_options or PlannerOptions()
        self.ik_options = ik_options or IkOptions()
        self.dt = float(dt)
        self.seed = int(seed)
        self.requests = 0
        self._root_body = self.scene.binding.bodies[self.chain.root]
        if self.gripper_joints:
            limit = model.tree.joints[self.gripper_joints[0]].limit
            self.gripper_open, self.gripper_closed = limit.upper, limit.lower
        else:
            self.gripper_open = self.gripper_closed = 0.0

    # ------------------------------------------------------------------ world state
    def set_world_state(self, qpos: Sequence[float]) -> None:
        """The full MuJoCo state of a simulation of the same world and robots (the simulator core)."""
        self.scene.set_world_state(qpos)

    def set_robot_state(self, joints: Mapping[str, float], base: tuple[float, float, float, float] | None = None) -> None:
        """What a ROS client knows: joint positions by name (from /joint_states; unknown names are
        ignored) and, for a mobile base, its pose (x, y, z, yaw) in the world (/sim/ground_truth)."""
        tree = self.model.tree
        known = {name: float(value) for name, value in joints.items()
                 if name in tree.joints and tree.joints[name].type != 'fixed'}
        self.scene.set_positions(known)
        if base is not None and not self.model.fixed_base:
            x, y, z, yaw = base
            self.scene.set_base_pose(x, y, yaw, z)

    def set_entity_pose(self, name: str, position: Sequence[float], quaternion: Sequence[float] = (1, 0, 0, 0)) -> None:
        """Move a free world entity (a box with a mass) of the planning scene to ``position`` (world, m)
        and ``quaternion`` (w, x, y, z)."""
        try:
            address = int(self.scene.model.jnt_qposadr[entity_free_joint(self.scene.model, name)])
        except KeyError:
            raise ValueError(f'entity: {name!r} is not a free entity of the world') from None
        quaternion = np.asarray(quaternion, dtype=float)
        self.scene.data.qpos[address:address + 3] = position
        self.scene.data.qpos[address + 3:address + 7] = quaternion / np.linalg.norm(quaternion)

    def root_pose(self) -> np.ndarray:
        """The chain root's (base_link's) pose in the world (4x4) in the scene's current state."""
        mujoco.mj_kinematics(self.scene.model, self.scene.data)
        pose = np.eye(4)
        pose[:3, :3] = self.scene.data.xmat[self._root_body].reshape(3, 3)
        pose[:3, 3] = self.scene.data.xpos[self._root_body]
        return pose

    def world_to_root(self, point: Sequence[float]) -> np.ndarray:
        pose = self.root_pose()
        return pose[:3, :3].T @ (np.asarray(point, dtype=float) - pose[:3, 3])

    def root_to_world(self, point: Sequence[float]) -> np.ndarray:
        pose = self.root_pose()
        return pose[:3, :3] @ np.asarray(point, dtype=float) + pose[:3, 3]

    def tool_pose(self, q: Sequence[float]) -> np.ndarray:
        """The tool frame in the world (4x4) with the arm at ``q``."""
        return self.root_pose() @ self.chain.forward(q)

    def _next_seed(self) -> int:
        self.requests += 1
        return self.seed * 1_000_003 + self.requests

    # ------------------------------------------------------------------ goals
    def goal_configuration(self, position: Sequence[float], pitch: float | None, current: Sequence[float],
                           allowed_pitches: Sequence[float] = DEFAULT_PITCHES, facing_only: bool = False,
                           restarts: int | None = None) -> MotionPlan:
        """A collision-free configuration putting the tool point at ``position`` (root frame, m) with
        ``pitch`` (rad; None: the first of ``allowed_pitches`` that works), nearest the configuration
        facing it (:meth:`facing`). ``facing_only``: leave out solutions whose first joint is turned
        more than a quarter turn from facing the target (the arm leaning back over its base).
        ``restarts``: the solver's random restarts from the current configuration (default: the
        planner's IK options); a search over many candidate targets can afford fewer.
        Returns a plan without a path: success and ``goal``, or the failure code and reason."""
        began = time.perf_counter()
        names = self.joint_names

        def result(success, code='', reason='', goal=None, chosen=math.nan):
            return MotionPlan(success, names, code, reason, goal, chosen, planning_time=time.perf_counter() - began)

        problem = _position_problem(position) or (
            '' if pitch is None or _finite(pitch) else f'pitch: expected a finite angle (rad), got {pitch!r}')
        if problem:
            return result(False, 'bad_request', problem)
        try:
            current = np.asarray(current, dtype=float)
        except (TypeError, ValueError):
            current = np.empty(0)
        if current.shape != (self.chain.dof,) or not np.all(np.isfinite(current)):
            return result(False, 'bad_request', f'current: expected {self.chain.dof} finite joint positions '
                                                f'({", ".join(names)})')
        if self.chain.pitch_axis is None:
            return result(False, 'bad_request', f'position+pitch targets need an arm whose first joint is revolute; '
                                                f'{self.chain.describe()}')
        pitches = [float(pitch)] if pitch is not None else [float(p) for p in allowed_pitches]
        unreachable, collisions = [], []
        seed = self._next_seed()
        rng = np.random.default_rng(seed)
        single = dataclasses.replace(self.ik_options, max_restarts=0)
        first = (self.ik_options if restarts is None else dataclasses.replace(self.ik_options, max_restarts=restarts))
        start = np.clip(current, self.chain.lower, self.chain.upper)
        for candidate in pitches:
            target = PositionPitchTarget(tuple(float(v) for v in position), candidate)
            reference = self.facing(position, start)
            # From the current configuration, with the solver's own restarts: no solution means none exists
            # (as far as the restarts can tell). Then one attempt each from the configuration facing the
            # target and from seeded random ones, for the other solutions.
            solved = solve_ik(self.chain, target, seed=seed, initial=start, options=first)
            if not solved.success:
                unreachable.append(f'{math.degrees(candidate):.0f} deg: {solved.reason}')
                continue
            solutions = [np.array(solved.positions)]
            starts = [reference] + [self.chain.random_positions(rng) for _ in range(IK_STARTS)]
            for index, initial in enumerate(starts):
                solved = solve_ik(self.chain, target, seed=seed + 1 + index, initial=initial, options=single)
                q = np.array(solved.positions) if solved.success else None
                if q is not None and all(np.max(np.abs(q - other)) > DISTINCT_SOLUTION for other in solutions):
                    solutions.append(q)
            if facing_only:
                kept = [q for q in solutions if abs(q[0] - reference[0]) < math.pi / 2]
                if not kept:
                    unreachable.append(f'{math.degrees(candidate):.0f} deg: only with the arm leaning back over '
                                       'its base')
                    continue
                solutions = kept
            for q in sorted(solutions, key=lambda q: float(np.linalg.norm(q - reference))):
                hit = self.scene.in_collision(q)
                if hit is None:
                    return result(True, goal=q, chosen=candidate)
                collisions.append(f'{math.degrees(candidate):.0f} deg: {hit}')
        where = f'({", ".join(f"{v:.3f}" for v in position)}) m in {self.chain.root}'
        if collisions:
            return result(False, 'target_in_collision',
                          f'target {where}: every solution touches something ({"; ".join(collisions[:3])}'
                          f'{"; ..." if len(collisions) > 3 else ""})')
        return result(False, 'unreachable', f'target {where}: {unreachable[0] if len(pitches) == 1 else "no pitch reaches it"}'
                                            + ('' if len(pitches) == 1 else f' (tried {len(pitches)} pitches from '
                                               f'{math.degrees(pitches[0]):.0f} to {math.degrees(pitches[-1]):.0f} deg; '
                                               f'first: {unreachable[0]})'))

    def facing(self, position: Sequence[float], current: Sequence[float]) -> np.ndarray:
        """``current`` with the first joint turned so that the arm leans towards ``position`` (root
        frame) when its second joint bends forward: the reference that solutions are chosen near.

        Nearest the current configuration alone is ambiguous for an arm whose first joint turns its
        plane (the rover): turning the base half a turn and bending the other joints the other way
        reaches the same point with the gripper rolled over, and from an upright arm both are about
        as near. Facing the target picks the one that leans forward, so that a grasp and the place
        after it are in the same family and the motion between them needs no swing over the top."""
        q = np.array(current, dtype=float)
        chain = self.chain
        if chain.pitch_axis is None or chain.dof < 2:
            return q
        axis = chain.pitch_axis
        # The direction the second joint moves the tool with every joint at zero (the rover's arm
        # upright): the way the arm leans forward when the first joint is at zero.
        lean = chain.jacobian(np.zeros(chain.dof))[:3, 1]
        offset = np.asarray(position, dtype=float) - chain.pitch_origin
        lean, offset = lean - (lean @ axis) * axis, offset - (offset @ axis) * axis
        if np.linalg.norm(lean) < 1e-9 or np.linalg.norm(offset) < 1e-9:
            return q
        turn = math.atan2(float(np.cross(lean, offset) @ axis), float(lean @ offset))
        options = [turn + k * 2 * math.pi for k in (-1, 0, 1)]
        inside = [angle for angle in options if chain.lower[0] <= angle <= chain.upper[0]]
        q[0] = (min(inside, key=lambda angle: abs(angle - q[0])) if inside
                else float(np.clip(turn, chain.lower[0], chain.upper[0])))
        return q

    # ------------------------------------------------------------------ motions
    def plan_to(self, start: Sequence[float], goal: Sequence[float]) -> MotionPlan:
        """A collision-free timed motion from ``start`` to ``goal`` (arm joint order)."""
        began = time.perf_counter()
        names = self.joint_names
        start = np.asarray(start, dtype=float)
        goal = np.asarray(goal, dtype=float)
        planned = plan(self.scene, start, goal, seed=self._next_seed(), options=self.planner_options)
        if not planned.success:
            code = ('start_in_collision' if planned.reason.startswith('start in collision')
                    else 'target_in_collision' if planned.reason.startswith('goal in collision')
                    else 'bad_request' if 'outside joint limits' in planned.reason or 'expected' in planned.reason
                    else 'planning_failed')
            return MotionPlan(False, names, code, planned.reason, goal, planning_time=time.perf_counter() - began)
        return self._timed(planned.path, goal, began)

    def straight(self, start: Sequence[float], goal: Sequence[float]) -> MotionPlan:
        """The straight joint-space motion from ``start`` to ``goal`` if it is collision-free (an
        approach or retreat over a few centimetres, where a detour would be worse than no motion)."""
        began = time.perf_counter()
        start = np.clip(np.asarray(start, dtype=float), self.scene.lower, self.scene.upper)
        goal = np.asarray(goal, dtype=float)
        steps = max(1, math.ceil(float(np.max(np.abs(goal - start))) / self.planner_options.resolution))
        for k in range(steps + 1):
            hit = self.scene.in_collision(start + (goal - start) * (k / steps))
            if hit is not None:
                code = 'start_in_collision' if k == 0 else 'target_in_collision' if k == steps else 'planning_failed'
                return MotionPlan(False, self.joint_names, code,
                                  f'the straight motion touches something {100 * k / steps:.0f} % of the way: {hit}',
                                  goal, planning_time=time.perf_counter() - began)
        return self._timed(np.array([start, goal]), goal, began)

    def reach(self, position: Sequence[float], pitch: float | None, current: Sequence[float]) -> MotionPlan:
        """Goal configuration for a tool target (root frame) and a collision-free timed motion to it."""
        began = time.perf_counter()
        target = self.goal_configuration(position, pitch, current)
        if not target.success:
            return target
        motion = self.plan_to(current, target.goal)
        motion.pitch = target.pitch
        motion.planning_time = time.perf_counter() - began
        return motion

    def _timed(self, path: np.ndarray, goal: np.ndarray, began: float) -> MotionPlan:
        try:
            trajectory = time_parameterize(path, self.limits, self.dt)
        except TrajectoryInputError as error:
            return MotionPlan(False, self.joint_names, 'bad_request', f'timing: {error}', goal,
                              planning_time=time.perf_counter() - began)
        return MotionPlan(True, self.joint_names, goal=goal, path=np.asarray(path), trajectory=trajectory,
                          planning_time=time.perf_counter() - began)


def _finite(value) -> bool:
    return isinstance(value, (int, float, np.integer, np.floating)) and not isinstance(value, bool) and math.isfinite(value)


def _position_problem(position) -> str:
    try:
        values = [float(v) for v in position]
    except (TypeError, ValueError):
        return f'position: expected 3 numbers (m), got {position!r}'
    if len(values) != 3 or not all(math.isfinite(v) for v in values):
        return f'position: expected 3 finite numbers (m), got {position!r}'
    return ''
