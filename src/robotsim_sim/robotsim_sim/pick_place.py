"""Pick and place with the rover's arm (ROS-free): a small cube from the floor into a bin.

The world (``config/worlds/pick.yaml``) holds the cube, a box entity with a mass (a free body), and a
bin made of fixed boxes whose names start with ``bin_`` (its walls; the floor is its bottom). The
rover stands still; :func:`sample_placements` puts the cube at seeded poses in front of it, within the
arm's reach and clear of the rover and the bin.

The sequence (:class:`PickAndPlace`), each motion planned with :class:`~.arm_motion.ArmMotionPlanner`
(inverse kinematics for tool position + pitch, MuJoCo collision checks, RRT-Connect, ruckig timing)
and executed by an :class:`Executor` (the simulator core here, the ROS actions in
:mod:`robotsim_sim.ros.arm_commander`):

1. **grasp**: for each approach pitch (straight down first, then flatter) and each tool height from
   the lowest up, a configuration with the tool point over the cube's centre whose fingers clear the
   floor (the scene's margin) and touch nothing but the cube, and a pre-grasp
   :attr:`PickPlaceOptions.approach` back along the tool axis joined to it by a collision-free
   straight joint-space motion;
2. open the gripper, plan to the pre-grasp, descend straight, close the gripper (position 0 with the
   servo's force limit: the fingers stop on the cube, which only friction holds), and check that
   the fingers stopped apart (something is between them);
3. **lift** straight up by :attr:`PickPlaceOptions.lift`, then check that the cube came along;
4. **carry**: the cube becomes part of the arm in the planning scene
   (:meth:`~.arm_planning.PlanningScene.attach`) in the pose it has in the gripper, a place
   configuration is solved with the cube centred over the bin just above its floor, and the path
   from the lift to a pre-place above it is planned with the cube's contacts checked too;
5. descend, open the gripper, retreat straight up, plan back to the start configuration, and
   check that the cube lies inside the bin.

There is no welding and no teleporting: the cube is held by the fingers' contact forces alone
(MuJoCo's soft contacts with friction), so it can slip, be knocked over or be dropped, and each of
those ends the run with a reason (:data:`FAILURE_CODES`). Where the executor can observe the cube (the
simulator core; through ROS the simulator's ``/sim/get_entity_pose``), its measured pose is used for the
grasp offset and for the checks; where it cannot (a simulator without that service), the planned pose is
assumed and the checks use the gripper's width only.

Why this cube: the rover's fingers open to 40 mm and their servo (kp 100 N/m, 5 N limit) squeezes a
cube of side ``s`` with about 100 * s / 2 N per finger when commanded closed. A 25 mm cube fits
between the open fingers at any yaw (its diagonal is 35.4 mm) and is squeezed with about 1.25 N per
finger; with friction 1 (MuJoCo's default on both geoms), the two contacts hold up to 2.5 N, eight
times the weight of a 30 g cube (0.29 N), which leaves room for the arm's accelerations.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Protocol

import mujoco
import numpy as np

from robotsim_core.arm.timing import TimedTrajectory

from .arm_motion import ArmMotionPlanner, MotionPlan
from robotsim_core.description.world_spec import BoxSpec, WorldSpec

FAILURE_CODES = {
    'bad_world': 'the world has no cube or no bin as the task expects',
    'unreachable': 'no approach pitch or height reaches the cube (inverse kinematics)',
    'grasp_in_collision': 'every grasp that reaches the cube, or its straight approach, touches something else',
    'planning_failed': 'no collision-free path to the pre-grasp or to the bin was found',
    'execution_failed': 'the controller refused or did not finish a motion',
    'missed': 'the fingers closed on nothing',
    'slipped': 'the cube did not come up with the gripper, or fell out of it on the way',
    'place_unreachable': 'no configuration puts the held cube over the bin without touching it',
    'not_in_bin': 'the cube was released but did not end inside the bin',
}
"""Why a pick and place failed (:attr:`PickPlaceResult.code`)."""


SKEWED_GRIP = 1.1
"""Fingers stopped more than this times half the cube's width apart hold it across two vertical edges
(the cube turned to the fingers' closing direction) rather than on two faces."""


class PickSetupError(ValueError):
    """The world or options do not fit the task; the message is one line naming the field."""


@dataclass
class PickPlaceOptions:
    """How the pick and place is done; lengths in metres, angles in radians."""

    cube: str = 'cube'
    """Name of the cube: a box of the world with a mass (a free body)."""
    bin_prefix: str = 'bin_'
    """The bin is every fixed box of the world whose name starts with this."""
    pitches: tuple[float, ...] = tuple(math.radians(a) for a in (-90, -80, -70, -60, -50, -40))
    """Approach pitches tried for the grasp and the place, in order (straight down first)."""
    height_step: float = 0.002
    """Tool heights tried for a grasp, lowest first: from the cube's centre up to
    :attr:`grasp_above_top` above its top, this far apart."""
    grasp_above_top: float = 0.006
    """Highest tool point of a grasp above the cube's top: the fingers (40 mm long, the tool point at
    their middle) still cover the cube's upper 14 mm there."""
    approach: float = 0.05
    """Pre-grasp distance back along the tool axis, and pre-place height above the place pose."""
    lift: float = 0.06
    """How far the gripper rises straight up with the cube before carrying it."""
    release_height: float = 0.01
    """Gap between the cube's bottom and the bin's floor when the gripper opens; where the arm cannot
    get that low, the gap between the cube's bottom and the top of the bin's walls (a short drop)."""
    search_restarts: int = 10
    """Inverse kinematics restarts per candidate grasp (many heights and pitches are tried: a candidate
    the solver misses with these costs only a try at the next height)."""
    min_grip_fraction: float = 0.5
    """The fingers must stop at least this fraction of the cube's width apart, else nothing is held."""
    lift_fraction: float = 0.5
    """The cube must rise at least this fraction of :attr:`lift` with the gripper, else it slipped."""
    settle_time: float = 0.5
    """Seconds the world is left to settle before the final check."""

    def check(self) -> None:
        for name in ('height_step', 'grasp_above_top', 'approach', 'lift', 'release_height', 'settle_time'):
            value = getattr(self, name)
            if not (isinstance(value, (int, float)) and math.isfinite(value) and value > 0):
                raise PickSetupError(f'PickPlaceOptions.{name}: expected a finite number > 0, got {value!r}')
        for name in ('min_grip_fraction', 'lift_fraction'):
            value = getattr(self, name)
            if not (isinstance(value, (int, float)) and 0 < value < 1):
                raise PickSetupError(f'PickPlaceOptions.{name}: expected a fraction between 0 and 1, got {value!r}')
        if isinstance(self.search_restarts, bool) or not isinstance(self.search_restarts, int) or self.search_restarts < 0:
            raise PickSetupError(f'PickPlaceOptions.search_restarts: expected an integer >= 0, got {self.search_restarts!r}')
        if not self.pitches or not all(math.isfinite(p) and -math.pi / 2 - 1e-9 <= p <= 0 for p in self.pitches):
            raise PickSetupError(f'PickPlaceOptions.pitches: expected pitches from -pi/2 (down) to 0 (horizontal), '
                                 f'got {self.pitches!r}')


# ---------------------------------------------------------------------------- the task's world
@dataclass(frozen=True)
class BinGeometry:
    """An axis-aligned open bin on the floor (world frame, m)."""

    centre: tuple[float, float]
    inner_half: tuple[float, float]
    """Half extents of the free space inside the walls (x, y)."""
    outer_min: tuple[float, float]
    outer_max: tuple[float, float]
    floor: float
    """Height of the bin's floor (the lowest wall bottom)."""
    top: float
    """Height of the lowest wall top."""

    def contains(self, position: Sequence[float], half_size: float = 0.0) -> bool:
        """Whether a point (a cube centre of half size ``half_size``) lies inside the walls, below their top."""
        x, y, z = position
        return (abs(x - self.centre[0]) <= self.inner_half[0] - half_size
                and abs(y - self.centre[1]) <= self.inner_half[1] - half_size and self.floor <= z <= self.top)


@dataclass(frozen=True)
class PickWorld:
    """The cube and the bin of a world."""

    cube: BoxSpec
    bin: BinGeometry

    @property
    def cube_size(self) -> float:
        """Width of the cube across the fingers (its smallest horizontal extent)."""
        return float(min(self.cube.size[:2]))

    @classmethod
    def from_world(cls, world: WorldSpec, options: PickPlaceOptions) -> 'PickWorld':
        source = world.source or world.name
        cubes = [box for box in world.boxes if box.name == options.cube]
        if not cubes or cubes[0].mass <= 0:
            raise PickSetupError(f'{source}: boxes: expected a box named {options.cube!r} with a mass > 0 (the cube '
                                 'to pick)' + (', it is fixed (mass 0)' if cubes else ''))
        walls = [box for box in world.boxes if box.name.startswith(options.bin_prefix) and box.mass == 0]
        if len(walls) < 3:
            raise PickSetupError(f'{source}: boxes: expected at least 3 fixed boxes named {options.bin_prefix}* (the '
                                 f'bin\'s walls), got {len(walls)}')
        lows, highs, thickness = [], [], []
        for wall in walls:
            if abs(math.sin(2 * wall.yaw)) > 1e-6 or wall.pitch != 0:
                raise PickSetupError(f'{source}: boxes: bin wall {wall.name!r}: expected an axis-aligned wall '
                                     f'(yaw a multiple of 90 deg, no pitch), got yaw {wall.yaw!r}, pitch {wall.pitch!r}')
            sx, sy = (wall.size[1], wall.size[0]) if abs(math.sin(wall.yaw)) > 0.5 else wall.size[:2]
            centre = np.asarray(wall.position, dtype=float)
            half = np.array([sx / 2, sy / 2, wall.size[2] / 2])
            lows.append(centre - half)
            highs.append(centre + half)
            thickness.append(min(sx, sy))
        low, high = np.min(lows, axis=0), np.max(highs, axis=0)
        wall = max(thickness)
        inner = ((high[0] - low[0]) / 2 - wall, (high[1] - low[1]) / 2 - wall)
        if min(inner) <= 0:
            raise PickSetupError(f'{source}: boxes: the {options.bin_prefix}* walls leave no room inside the bin')
        geometry = BinGeometry(((low[0] + high[0]) / 2, (low[1] + high[1]) / 2), inner, (low[0], low[1]),
                               (high[0], high[1]), float(low[2]), float(min(h[2] for h in highs)))
        return cls(cubes[0], geometry)


@dataclass(frozen=True)
class PlacementRegion:
    """Where seeded cube placements are drawn: an annular sector around the arm's first joint axis,
    horizontal distances and bearings relative to the robot's heading."""

    min_radius: float = 0.12
    """Nearest the cube's centre may be to the arm's first (vertical) joint axis (m)."""
    max_radius: float = 0.19
    """Farthest (m): the tool reaches the floor out to about 0.2 m from that axis (pitched approach)."""
    min_bearing: float = math.radians(-100)
    """Right-most direction (rad, 0 = straight ahead, positive to the left)."""
    max_bearing: float = math.radians(25)
    """Left-most direction (rad); the bin stands further left."""
    clearance: float = 0.02
    """Least gap between the cube and the robot's or the bin's outline (m)."""


def sample_placements(planner: ArmMotionPlanner, task: PickWorld, count: int, seed: int,
                      region: PlacementRegion = PlacementRegion(), max_draws: int = 100_000) -> list[tuple[float, float, float]]:
    """``count`` cube placements (x, y, yaw in the world) drawn from ``seed``: uniform over the
    region's area and over yaw, keeping those clear of the robot's outline (the bounding rectangle
    of its collision geoms in its base frame, at the planner's current state) and of the bin."""
    rng = np.random.default_rng(seed)
    root = planner.root_pose()
    axis = root[:3, :3] @ planner.chain.pitch_origin + root[:3, 3]
    heading = math.atan2(root[1, 0], root[0, 0])
    robot_low, robot_high = _robot_outline(planner)
    half = task.cube_size / 2 * math.sqrt(2)  # a cube at any yaw stays within this of its centre
    placements = []
    for _ in range(max_draws):
        if len(placements) == count:
            break
        radius = math.sqrt(rng.uniform(region.min_radius ** 2, region.max_radius ** 2))
        bearing = rng.uniform(region.min_bearing, region.max_bearing)
        yaw = rng.uniform(-math.pi / 4, math.pi / 4)  # a cube looks the same every quarter turn
        x = axis[0] + radius * math.cos(heading + bearing)
        y = axis[1] + radius * math.sin(heading + bearing)
        local = root[:3, :3].T @ (np.array([x, y, root[2, 3]]) - root[:3, 3])
        margin = half + region.clearance
        if (robot_low[0] - margin < local[0] < robot_high[0] + margin
                and robot_low[1] - margin < local[1] < robot_high[1] + margin):
            continue
        if (task.bin.outer_min[0] - margin < x < task.bin.outer_max[0] + margin
                and task.bin.outer_min[1] - margin < y < task.bin.outer_max[1] + margin):
            continue
        placements.append((x, y, heading + yaw))
    if len(placements) < count:
        raise PickSetupError(f'placement region: only {len(placements)} of {count} placements clear of the robot and '
                             f'the bin in {max_draws} draws; expected a larger region')
    return placements


def _robot_outline(planner: ArmMotionPlanner) -> tuple[np.ndarray, np.ndarray]:
    """(low, high) x, y corners of the rectangle around the robot's collision geoms, in its base frame."""
    model, data = planner.scene.model, planner.scene.data
    mujoco.mj_kinematics(model, data)
    root = planner.root_pose()
    robot_root = model.body_rootid[planner._root_body]
    corners = []
    for geom in range(model.ngeom):
        if model.body_rootid[model.geom_bodyid[geom]] != robot_root:
            continue
        if model.geom_contype[geom] == 0 and model.geom_conaffinity[geom] == 0:
            continue
        centre, half = model.geom_aabb[geom][:3], model.geom_aabb[geom][3:]
        for signs in np.array(np.meshgrid([-1, 1], [-1, 1], [-1, 1])).T.reshape(-1, 3):
            world = data.geom_xmat[geom].reshape(3, 3) @ (centre + signs * half) + data.geom_xpos[geom]
            corners.append(root[:3, :3].T @ (world - root[:3, 3]))
    corners = np.array(corners)
    return corners.min(axis=0)[:2], corners.max(axis=0)[:2]


# ---------------------------------------------------------------------------- execution
class Executor(Protocol):
    """Runs motions on a robot (the simulator core, or the ROS controllers) and reports its state."""

    def joint_positions(self) -> dict[str, float]:
        """Measured positions of the arm and gripper joints by name."""

    def update_scene(self, planner: ArmMotionPlanner) -> None:
        """Write what is known of the world into the planner's scene (robot state, entity poses)."""

    def entity_pose(self, name: str) -> np.ndarray | None:
        """The measured pose (4x4, world) of a free entity, or None where it cannot be observed."""

    def follow(self, trajectory: TimedTrajectory, gripper: float) -> str:
        """Execute an arm trajectory with the gripper held at ``gripper``; '' or why it failed."""

    def grip(self, position: float) -> tuple[float, str]:
        """Move the fingers towards ``position`` until they stop; (where they stopped, '' or why it failed)."""

    def wait(self, seconds: float) -> None:
        """Let the world run (settle) for ``seconds``."""


class SimulationExecutor:
    """Executes on a :class:`~.simulation.Simulation` through its arm trajectory follower: the
    trajectory's samples become the follower's points (with the gripper's target), the physics steps
    until the trajectory's end plus ``settle`` seconds. Holds the last commanded arm positions while
    the gripper moves (holding the measured ones would let the arm sag a little more at each step)."""

    def __init__(self, sim, planner: ArmMotionPlanner, robot: int = 0, settle: float = 0.25,
                 goal_tolerance: float = 0.05, on_step: Callable[[], None] | None = None):
        self.sim, self.robot, self.settle, self.goal_tolerance = sim, robot, settle, goal_tolerance
        self.on_step = on_step
        instance = sim.robots[robot]
        self.prefix = instance.prefix
        self.arm = list(planner.joint_names)
        self.gripper = list(planner.gripper_joints[:1])  # the other finger mimics the first
        binding = instance.binding
        self._qpos = {name: binding.qpos[name] for name in self.arm + list(planner.gripper_joints)}
        self._dof = {name: binding.dofs[name] for name in self._qpos}
        self.commanded = np.array([self.sim.data.qpos[self._qpos[name]] for name in self.arm])

    def joint_positions(self) -> dict[str, float]:
        return {name: float(self.sim.data.qpos[address]) for name, address in self._qpos.items()}

    def update_scene(self, planner: ArmMotionPlanner) -> None:
        planner.set_world_state(self.sim.data.qpos)

    def entity_pose(self, name: str) -> np.ndarray | None:
        try:
            body = self.sim.model.body(name)
        except KeyError:
            return None
        pose = np.eye(4)
        pose[:3, :3] = self.sim.data.xmat[body.id].reshape(3, 3)
        pose[:3, 3] = self.sim.data.xpos[body.id]
        return pose

    def _run(self, seconds: float) -> None:
        for _ in range(max(1, round(seconds / self.sim.model.opt.timestep))):
            self.sim.step()
            if self.on_step is not None:
                self.on_step()

    def _load(self, times, arm_positions, gripper: float) -> str:
        points = [(float(t), [float(v) for v in q] + [float(gripper)] * len(self.gripper))
                  for t, q in zip(times, arm_positions)]
        problem = self.sim.command_arm(self.robot, self.arm + self.gripper, points)
        return f'the simulator refused the trajectory: {problem}' if problem else ''

    def follow(self, trajectory: TimedTrajectory, gripper: float) -> str:
        problem = self._load(trajectory.time_from_start, trajectory.positions, gripper)
        if problem:
            return problem
        self.commanded = trajectory.positions[-1].copy()
        self._run(trajectory.duration + self.settle)
        measured = np.array([self.sim.data.qpos[self._qpos[name]] for name in self.arm])
        error = np.abs(measured - self.commanded)
        if error.max() > self.goal_tolerance:
            joint = self.arm[int(np.argmax(error))]
            return (f'the arm stopped {error.max():.3f} rad from the goal at {joint} (tolerance '
                    f'{self.goal_tolerance} rad): blocked?')
        return ''

    def grip(self, position: float) -> tuple[float, str]:
        problem = self._load([0.0], [self.commanded], position)
        if problem:
            return math.nan, problem
        finger = self.gripper[0]
        step = self.sim.model.opt.timestep
        still, elapsed = 0.0, 0.0
        while elapsed < 2.0:  # the fingers close in about 0.2 s; stop once they have been still for 0.1 s
            self._run(step)
            elapsed += step
            moving = abs(self.sim.data.qvel[self._dof[finger]]) > 1e-3
            still = 0.0 if moving else still + step
            if still >= 0.1 and elapsed >= 0.2:
                break
        return float(self.sim.data.qpos[self._qpos[finger]]), ''

    def wait(self, seconds: float) -> None:
        self._run(seconds)


# ---------------------------------------------------------------------------- the sequence
@dataclass
class PickPlaceResult:
    """The outcome of one pick and place; on failure ``code`` (:data:`FAILURE_CODES`) and ``reason``."""

    success: bool
    code: str = ''
    reason: str = ''
    stage: str = ''
    """The stage it ended in (grasp, approach, close, lift, carry, place, release, retreat, check, done)."""
    cube_start: tuple[float, ...] = ()
    """The cube's centre at the start (world, m)."""
    cube_end: tuple[float, ...] = ()
    """Its centre at the end (measured; empty when the executor cannot observe it)."""
    cube_rise: float = math.nan
    """How far the cube rose during the lift (m; NaN when not observable)."""
    grip_width: float = math.nan
    """Finger position when closed on the cube (m; each finger's travel from closed)."""
    grasp_pitch: float = math.nan
    """Approach pitch of the grasp used (rad)."""
    place_pitch: float = math.nan
    planning_time: float = 0.0
    """Wall-clock seconds spent planning (all motions)."""
    motion_time: float = 0.0
    """Seconds of trajectories executed."""
    log: list[str] = field(default_factory=list)
    """One line per step taken."""


class PickAndPlace:
    """The pick-and-place sequence of the module docstring for one cube and one bin."""

    def __init__(self, planner: ArmMotionPlanner, task: PickWorld, options: PickPlaceOptions | None = None,
                 on_log: Callable[[str], None] | None = None):
        self.planner, self.task = planner, task
        self.on_log = on_log
        """Called with each line of the result's log as it is written (a node logs the steps live)."""
        self.options = options or PickPlaceOptions()
        self.options.check()
        scene = planner.scene
        self.cube_body = task.cube.name
        self.fingers = [planner.placement.prefix + planner.model.tree.joints[name].child for name in planner.gripper_joints]
        if not self.fingers:
            raise PickSetupError(f'robot {planner.model.name}: arm {planner.chain.arm!r} has no gripper to pick with')
        self.wrist = planner.placement.prefix + planner.chain.tool.link
        for body in [self.cube_body, *self.fingers, self.wrist]:
            scene.model.body(body)  # KeyError would mean a scene that does not match the task

    # ------------------------------------------------------------------ helpers
    def _set_fingers(self, position: float) -> None:
        self.planner.scene.set_positions({self.planner.gripper_joints[0]: position})

    def _allow_fingers(self, allowed: bool) -> None:
        for finger in self.fingers:
            (self.planner.scene.allow_contact if allowed else self.planner.scene.forbid_contact)(finger, self.cube_body)

    def _tool_target(self, world_point: np.ndarray) -> np.ndarray:
        return self.planner.world_to_root(world_point)

    def _arm_now(self, executor: Executor) -> np.ndarray:
        joints = executor.joint_positions()
        return np.array([joints[name] for name in self.planner.joint_names])

    def _grasp(self, cube_pose: np.ndarray, current: np.ndarray):
        """(pre-grasp q, grasp q, pitch) or (None, code, reason)."""
        planner, options = self.planner, self.options
        centre = cube_pose[:3, 3]
        half_height = self.task.cube.size[2] / 2
        heights = np.arange(centre[2], centre[2] + half_height + options.grasp_above_top + 1e-9, options.height_step)
        reasons = {'unreachable': [], 'grasp_in_collision': []}
        for pitch in options.pitches:
            for height in heights:
                target = self._tool_target(np.array([centre[0], centre[1], height]))
                grasp = planner.goal_configuration(target, pitch, current, facing_only=True,
                                                   restarts=options.search_restarts)
                if not grasp.success:
                    reasons.setdefault(grasp.code, []).append(f'pitch {math.degrees(pitch):.0f} deg, tool '
                                                               f'{1000 * height:.0f} mm up: {grasp.reason}')
                    continue
                axis_world = planner.tool_pose(grasp.goal)[:3, 2]
                back = self._tool_target(np.array([centre[0], centre[1], height]) - options.approach * axis_world)
                pre = planner.goal_configuration(back, pitch, grasp.goal, facing_only=True)
                if not pre.success:
                    reasons.setdefault('grasp_in_collision' if pre.code == 'target_in_collision' else pre.code,
                                       []).append(f'pre-grasp at pitch {math.degrees(pitch):.0f} deg: {pre.reason}')
                    continue
                descent = planner.straight(pre.goal, grasp.goal)
                if not descent.success:
                    reasons['grasp_in_collision'].append(f'descent at pitch {math.degrees(pitch):.0f} deg: '
                                                         f'{descent.reason}')
                    continue
                return pre.goal, grasp.goal, pitch
        collided = reasons.get('grasp_in_collision', []) + reasons.get('target_in_collision', [])
        if collided:
            return None, 'grasp_in_collision', (collided[0] if len(collided) == 1 else
                                                f'{len(collided)} grasps touch something, from {collided[0]} to '
                                                f'{collided[-1]}')
        first = reasons['unreachable'][0] if reasons['unreachable'] else 'no grasp found'
        return None, 'unreachable', f'no approach pitch reaches the cube at ({centre[0]:.3f}, {centre[1]:.3f}) m: {first}'

    def _place(self, cube_in_tool: np.ndarray, current: np.ndarray):
        """(pre-place q, place q, pitch) for the held cube over the bin, or (None, code, reason)."""
        planner, options, task = self.planner, self.options, self.task
        half_height = task.cube.size[2] / 2
        # Lowered into the bin first; if the arm cannot get that low there, dropped from just above the walls.
        releases = (options.release_height, task.bin.top - task.bin.floor + options.release_height)
        reasons = []
        for pitch, release in [(pitch, release) for release in releases for pitch in options.pitches]:
            goal = np.array([task.bin.centre[0], task.bin.centre[1], task.bin.floor + release + half_height])
            tool_world = goal - (planner.tool_pose(current)[:3, :3] @ cube_in_tool[:3, 3])
            place = None
            for _ in range(4):  # the cube's offset turns with the tool: correct for it a few times
                place = planner.goal_configuration(self._tool_target(tool_world), pitch, current, facing_only=True)
                if not place.success:
                    break
                held = planner.tool_pose(place.goal) @ cube_in_tool
                tool_world = tool_world + (goal - held[:3, 3])
            if place is None or not place.success:
                reasons.append(f'pitch {math.degrees(pitch):.0f} deg, released {1000 * release:.0f} mm up: '
                               f'{place.reason if place else "no solution"}')
                continue
            held = planner.tool_pose(place.goal) @ cube_in_tool
            if np.linalg.norm(held[:3, 3] - goal) > 0.005:
                reasons.append(f'pitch {math.degrees(pitch):.0f} deg: the held cube would be '
                               f'{1000 * np.linalg.norm(held[:3, 3] - goal):.0f} mm off the bin centre')
                continue
            above = self._tool_target(planner.tool_pose(place.goal)[:3, 3] + np.array([0.0, 0.0, options.approach]))
            pre = planner.goal_configuration(above, pitch, place.goal, facing_only=True)
            if not pre.success:
                reasons.append(f'pre-place at pitch {math.degrees(pitch):.0f} deg: {pre.reason}')
                continue
            descent = planner.straight(pre.goal, place.goal)
            if not descent.success:
                reasons.append(f'descent into the bin at pitch {math.degrees(pitch):.0f} deg: {descent.reason}')
                continue
            return pre.goal, place.goal, pitch
        return None, 'place_unreachable', (f'{reasons[0]} (and {len(reasons) - 1} other pitches and heights)'
                                           if reasons else 'no pitch to try')

    def _execute(self, executor: Executor, motion: MotionPlan, gripper: float, what: str,
                 result: PickPlaceResult) -> bool:
        result.planning_time += motion.planning_time
        if not motion.success:
            code = {'unreachable': 'unreachable', 'target_in_collision': 'planning_failed',
                    'start_in_collision': 'planning_failed'}.get(motion.code, 'planning_failed')
            self._fail(result, code, f'{what}: {motion.reason}')
            return False
        problem = executor.follow(motion.trajectory, gripper)
        result.motion_time += motion.duration
        if problem:
            self._fail(result, 'execution_failed', f'{what}: {problem}')
            return False
        result.log.append(f'{what}: {len(motion.path)} waypoints, {motion.duration:.2f} s '
                          f'(planned in {1000 * motion.planning_time:.0f} ms)')
        return True

    def _fail(self, result: PickPlaceResult, code: str, reason: str) -> None:
        square = self.task.cube_size / 2
        if code == 'slipped' and result.grip_width > SKEWED_GRIP * square:
            reason += (f' (it was held across two edges, not two faces: the fingers stopped at '
                       f'{1000 * result.grip_width:.1f} mm, {1000 * square:.1f} mm on square faces; the cube stood turned '
                       'to the fingers, and a 4-joint arm cannot roll its gripper to match)')
        result.success, result.code, result.reason = False, code, reason
        result.log.append(f'FAILED ({code}): {reason}')

    # ------------------------------------------------------------------ the run
    def run(self, executor: Executor, cube_pose: np.ndarray | None = None) -> PickPlaceResult:
        """Pick the cube and place it in the bin. ``cube_pose`` (4x4, world): where the cube is when the
        executor cannot observe it (the pose it was put at); an observed pose takes precedence."""
        planner, options, task = self.planner, self.options, self.task
        result = PickPlaceResult(False, log=_Log(self.on_log))
        began = time.perf_counter()
        observed = executor.entity_pose(self.cube_body)
        cube = observed if observed is not None else cube_pose
        if cube is None:
            self._fail(result, 'bad_world', f'the cube {self.cube_body!r}: its pose is neither observable nor given')
            return result
        result.cube_start = tuple(float(v) for v in cube[:3, 3])
        home = self._arm_now(executor)
        executor.update_scene(planner)
        if cube_pose is not None and observed is None:
            planner.set_entity_pose(self.cube_body, cube[:3, 3], _quaternion(cube[:3, :3]))
        planner.scene.detach(self.cube_body)

        # 1. grasp
        result.stage = 'grasp'
        self._set_fingers(planner.gripper_open)
        self._allow_fingers(True)
        grasp = self._grasp(cube, home)
        result.planning_time += time.perf_counter() - began
        if grasp[0] is None:
            self._fail(result, grasp[1], grasp[2])
            return result
        pre_grasp, grasp_q, result.grasp_pitch = grasp
        result.log.append(f'grasp: pitch {math.degrees(result.grasp_pitch):.0f} deg, tool at '
                          f'{1000 * planner.tool_pose(grasp_q)[2, 3]:.0f} mm above the floor')

        # 2. approach and close
        result.stage = 'approach'
        width, problem = executor.grip(planner.gripper_open)
        if problem:
            self._fail(result, 'execution_failed', f'opening the gripper: {problem}')
            return result
        self._allow_fingers(False)  # on the way to the pre-grasp the fingers must not brush the cube
        motion = planner.plan_to(self._arm_now(executor), pre_grasp)
        if not self._execute(executor, motion, planner.gripper_open, 'to the pre-grasp', result):
            return result
        self._allow_fingers(True)
        if not self._execute(executor, planner.straight(pre_grasp, grasp_q), planner.gripper_open, 'descend', result):
            return result
        result.stage = 'close'
        width, problem = executor.grip(planner.gripper_closed)
        result.grip_width = width
        if problem:
            self._fail(result, 'execution_failed', f'closing the gripper: {problem}')
            return result
        if not width >= options.min_grip_fraction * task.cube_size / 2:
            self._fail(result, 'missed', f'the fingers closed to {1000 * width:.1f} mm each: nothing between them '
                                         f'(a {1000 * task.cube_size:.0f} mm cube stops them at '
                                         f'{500 * task.cube_size:.1f} mm)')
            return result
        result.log.append(f'closed on the cube: fingers at {1000 * width:.1f} mm')
        grasped_at = self._arm_now(executor)
        observed = executor.entity_pose(self.cube_body)
        cube_at_grasp = observed if observed is not None else cube
        cube_in_tool = np.linalg.inv(planner.tool_pose(grasped_at)) @ cube_at_grasp

        # 3. lift (the cube is not yet part of the arm: it rests on the floor, which it may touch)
        result.stage = 'lift'
        executor.update_scene(planner)
        self._set_fingers(width)
        lift_point = planner.tool_pose(grasp_q)[:3, 3] + np.array([0.0, 0.0, options.lift])
        lifted = planner.goal_configuration(self._tool_target(lift_point), result.grasp_pitch, grasp_q,
                                            facing_only=True)
        if not lifted.success:
            self._fail(result, 'planning_failed', f'lift: {lifted.reason}')
            return result
        # From the planned grasp (checked free): the measured one sags a few millimetres towards the floor.
        if not self._execute(executor, planner.straight(grasp_q, lifted.goal), planner.gripper_closed, 'lift',
                             result):
            return result
        observed = executor.entity_pose(self.cube_body)
        if observed is not None:
            result.cube_rise = float(observed[2, 3] - cube_at_grasp[2, 3])
            if result.cube_rise < options.lift_fraction * options.lift:
                self._fail(result, 'slipped', f'the cube rose {1000 * result.cube_rise:.0f} mm while the gripper '
                                              f'rose {1000 * options.lift:.0f} mm')
                return result
        width, _ = executor.grip(planner.gripper_closed)  # still squeezing: read where the fingers are
        if not width >= options.min_grip_fraction * task.cube_size / 2:
            self._fail(result, 'slipped', f'after the lift the fingers are at {1000 * width:.1f} mm: the cube fell out')
            return result
        result.log.append('lifted' + (f': the cube rose {1000 * result.cube_rise:.0f} mm'
                                      if math.isfinite(result.cube_rise) else ''))

        # 4. carry: the cube is part of the arm now
        result.stage = 'carry'
        executor.update_scene(planner)
        now = self._arm_now(executor)
        if observed is None:  # not observable: where the grasp offset says it hangs
            carried = planner.tool_pose(now) @ cube_in_tool
            planner.set_entity_pose(self.cube_body, carried[:3, 3], _quaternion(carried[:3, :3]))
        else:
            cube_in_tool = np.linalg.inv(planner.tool_pose(now)) @ observed
        planner.scene.attach(self.cube_body, self.wrist, now)
        placed = self._place(cube_in_tool, now)
        if placed[0] is None:
            planner.scene.detach(self.cube_body)
            self._fail(result, placed[1], placed[2])
            return result
        pre_place, place_q, result.place_pitch = placed
        motion = planner.plan_to(now, pre_place)
        if not self._execute(executor, motion, planner.gripper_closed, 'carry to the bin', result):
            planner.scene.detach(self.cube_body)
            return result
        width, _ = executor.grip(planner.gripper_closed)
        if not width >= options.min_grip_fraction * task.cube_size / 2:
            planner.scene.detach(self.cube_body)
            self._fail(result, 'slipped', f'on the way to the bin the fingers closed to {1000 * width:.1f} mm: '
                                          'the cube fell out')
            return result
        observed = executor.entity_pose(self.cube_body)
        if observed is not None:
            # The cube may have turned in the fingers (they hold it by friction at two small faces):
            # carry it as it now hangs, and re-plan the descent if that changes it.
            now = self._arm_now(executor)
            moved = np.linalg.norm(observed[:3, 3] - (planner.tool_pose(now) @ cube_in_tool)[:3, 3])
            if moved > task.cube_size:
                planner.scene.detach(self.cube_body)
                self._fail(result, 'slipped', f'on the way to the bin the cube moved {1000 * moved:.0f} mm in the gripper')
                return result
            if moved > 0.002:
                result.log.append(f'the cube turned in the gripper on the way ({1000 * moved:.0f} mm): re-planning the place')
                executor.update_scene(planner)
                cube_in_tool = np.linalg.inv(planner.tool_pose(now)) @ observed
                planner.scene.attach(self.cube_body, self.wrist, now)
                placed = self._place(cube_in_tool, now)
                if placed[0] is None:
                    planner.scene.detach(self.cube_body)
                    self._fail(result, placed[1], placed[2])
                    return result
                pre_place, place_q, result.place_pitch = placed
                if not self._execute(executor, planner.plan_to(now, pre_place), planner.gripper_closed,
                                     'over the bin again', result):
                    planner.scene.detach(self.cube_body)
                    return result
        result.stage = 'place'
        if not self._execute(executor, planner.straight(pre_place, place_q), planner.gripper_closed,
                             'lower into the bin', result):
            planner.scene.detach(self.cube_body)
            return result

        # 5. release, retreat, check
        result.stage = 'release'
        width, problem = executor.grip(planner.gripper_open)
        planner.scene.detach(self.cube_body)
        if problem:
            self._fail(result, 'execution_failed', f'opening the gripper: {problem}')
            return result
        result.stage = 'retreat'
        executor.update_scene(planner)
        now = self._arm_now(executor)
        if executor.entity_pose(self.cube_body) is None:
            released = planner.tool_pose(now) @ cube_in_tool
            planner.set_entity_pose(self.cube_body, released[:3, 3], _quaternion(released[:3, :3]))
        self._set_fingers(planner.gripper_open)
        self._allow_fingers(True)
        # From the planned place pose (checked free), as for the lift.
        if not self._execute(executor, planner.straight(place_q, pre_place), planner.gripper_open, 'retreat', result):
            return result
        self._allow_fingers(False)
        executor.update_scene(planner)
        if executor.entity_pose(self.cube_body) is None:
            planner.set_entity_pose(self.cube_body, released[:3, 3], _quaternion(released[:3, :3]))
        if not self._execute(executor, planner.plan_to(self._arm_now(executor), home), planner.gripper_open,
                             'back to the start', result):
            return result
        result.stage = 'check'
        executor.wait(options.settle_time)
        observed = executor.entity_pose(self.cube_body)
        if observed is not None:
            result.cube_end = tuple(float(v) for v in observed[:3, 3])
            if not task.bin.contains(observed[:3, 3]):
                self._fail(result, 'not_in_bin', 'the cube ended at (' + ', '.join(f'{v:.3f}' for v in observed[:3, 3])
                           + f') m, outside the bin (centre {task.bin.centre[0]:.3f}, {task.bin.centre[1]:.3f})')
                return result
            result.log.append('the cube lies in the bin at (' + ', '.join(f'{v:.3f}' for v in observed[:3, 3]) + ') m')
        else:
            result.log.append('released over the bin (the cube\'s final pose is not observable here)')
        result.stage = 'done'
        result.success = True
        return result


class _Log(list):
    """A list of lines that also hands each new line to a callback."""

    def __init__(self, callback: Callable[[str], None] | None):
        super().__init__()
        self.callback = callback

    def append(self, line: str) -> None:
        super().append(line)
        if self.callback is not None:
            self.callback(line)


def _quaternion(rotation: np.ndarray) -> np.ndarray:
    quaternion = np.empty(4)
    mujoco.mju_mat2Quat(quaternion, np.ascontiguousarray(rotation, dtype=float).reshape(9))
    return quaternion


# ---------------------------------------------------------------------------- one call
def run_in_simulation(world: WorldSpec, placements, placement: tuple[float, float, float] | None = None,
                      seed: int = 0, options: PickPlaceOptions | None = None, robot: int = 0,
                      on_step: Callable | None = None):
    """Build a simulation of ``world``, put the cube at ``placement`` (x, y, yaw; None: where the
    world has it), let it settle and run the pick and place. Returns (result, simulation)."""
    from .simulation import SimOptions, Simulation
    options = options or PickPlaceOptions()
    task = PickWorld.from_world(world, options)
    sim = Simulation(world, placements, SimOptions(seed=seed, cameras=False))
    if placement is not None:
        x, y, yaw = placement
        problem = sim.set_entity_pose(task.cube.name, (x, y, task.cube.size[2] / 2),
                                      (math.cos(yaw / 2), 0.0, 0.0, math.sin(yaw / 2)))
        if problem:
            raise PickSetupError(f'placement: {problem}')
    planner = ArmMotionPlanner(world, placements, robot, seed=seed)
    executor = SimulationExecutor(sim, planner, robot, on_step=on_step)
    executor.wait(0.5)  # the rover settles on its wheels, the cube on the floor
    result = PickAndPlace(planner, task, options).run(executor)
    return result, sim
