"""The simulated world (ROS-free): MuJoCo physics, built-in controllers, encoders, sensors.

Modelled on dm_control's split: :class:`Simulation` owns physics and time and hands out
readings; the ROS node (:mod:`robotsim_sim.ros.sim_node`) only converts them to messages. Time is
counted in physics steps (``time_ns = step_count * timestep_ns``) so stamps are exact. Every
random choice flows from the seed: each sensor has its own stream spawned from it by the sensor's
place in the robot description, so a reset with the same seed replays the same noise, and a
sensor's noise does not depend on which other sensors are simulated (e.g. cameras off).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace

import mujoco
import numpy as np

from robotsim_core.contract import Contract, robot_contract
from robotsim_core.drive import WheelOdometry
from robotsim_core.errors import DescriptionError
from robotsim_core.geometry import quat_to_yaw
from robotsim_firmware.host_library import CHANNELS as FIRMWARE_MOTOR_CHANNELS
from robotsim_firmware.in_the_loop import FirmwareInTheLoop
from robotsim_core.sensor_kinds import SensorContext, sensor_kind
from robotsim_sensors.camera import CameraRenderer

from .arm_controller import (ArmController, ArmGoal, ArmOutcome, ControllerState, GripperConfig, GripperController,
                             GripperOutcome, TrajectoryConstraints)
from .controllers import BaseController, PositionServoFeedForward, TrajectoryFollower, WheelSpeedLoop
from .arm_goals import ArmGoals
from .binding import RobotBinding
from .capture import CaptureThread
from .entities import Entities
from .compiled_scene import CompiledScene
from .scene import FIRST_ROBOT_GROUP, RobotPlacement
from robotsim_core.description.world_spec import WorldSpec


@dataclass
class JointStateReading:
    stamp: int
    names: list[str]
    positions: np.ndarray
    velocities: np.ndarray
    efforts: np.ndarray


@dataclass
class BaseStateReading:
    """Encoder odometry (what the robot believes) and ground truth (what happened), same instant."""

    stamp: int
    odom_pose: tuple[float, float, float]          # x, y, yaw in odom
    odom_twist: tuple[float, float]                # forward m/s, yaw rad/s in the body frame
    true_position: np.ndarray                      # world frame (m)
    true_quaternion: np.ndarray                    # (w, x, y, z)
    true_linear_velocity: np.ndarray               # body frame (m/s)
    true_angular_velocity: np.ndarray              # body frame (rad/s)


@dataclass
class Event:
    robot: int
    channel: str      # sensor name, 'joint_states' or 'base_state'
    reading: object


# MuJoCo resets the world when one of these fires (unless auto-reset is disabled).
UNSTABLE_WARNINGS = {mujoco.mjtWarning.mjWARN_BADQACC: 'NaN, Inf or huge acceleration',
                     mujoco.mjtWarning.mjWARN_BADQVEL: 'NaN, Inf or huge velocity',
                     mujoco.mjtWarning.mjWARN_BADQPOS: 'NaN, Inf or huge position'}


@dataclass
class Instability:
    """MuJoCo found the physics unstable and reset the world to its initial state."""

    stamp: int        # sim time (ns) of the step that went unstable
    what: str
    entity: str       # robot or world body owning the offending degree of freedom
    dof: int


@dataclass
class _Scheduled:
    """A periodic reading: capture k is due at round(k * 1e9 / rate) ns of sim time (no drift
    for rates whose period is not a whole number of nanoseconds or steps), taken at the first
    physics step at or after that instant."""

    channel: str
    rate: float
    measure: object   # callable(data, rng, stamp) -> reading
    rng: np.random.Generator | None = None
    index: int = 0
    next_ns: int = 0
    on_reset: object = None   # callable(rng) run at every reset (e.g. draw IMU biases)
    capture: CaptureThread | None = None   # measured in a thread of its own (SimOptions.camera_threads)
    slot: int = 0
    """Which of the robot's noise streams is this reading's: joint states 0, base state 1, the
    description's sensors 2, 3, ... in order, whether or not each is simulated (cameras off leave
    theirs unused), so a sensor's noise does not depend on which other sensors run."""

    def advance(self, now_ns: int) -> None:
        while self.next_ns <= now_ns:
            self.index += 1
            self.next_ns = round(self.index * 1e9 / self.rate)


@dataclass
class RobotInstance:
    placement: RobotPlacement
    contract: Contract
    base_controller: BaseController | None
    wheel_loop: WheelSpeedLoop | None
    arm: TrajectoryFollower
    """Follows trajectories of the arm joints (every arm's, in description order)."""
    gripper: TrajectoryFollower
    """Follows the gripper fingers' setpoints (every gripper joint; mimicking fingers have no servo)."""
    odometry: WheelOdometry | None
    joint_names: list[str]
    binding: RobotBinding
    """MuJoCo ids and addresses of the robot's elements."""
    qpos_index: np.ndarray
    dof_index: np.ndarray
    root_body: int
    root_qpos: int
    root_dof: int
    # Driven wheels in drive.driven_wheels order: their motor actuators and joint dofs.
    wheel_actuators: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=int))
    wheel_dofs: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=int))
    wheel_targets: object = None          # the WheelTargets the arrays below were made from
    wheel_speed_targets: np.ndarray = field(default_factory=lambda: np.zeros(0))
    steer_actuators: dict[str, int] = field(default_factory=dict)
    arm_actuators: dict[str, int] = field(default_factory=dict)
    # The arm's servos: actuator, qpos and dof index of every arm joint (follower order).
    arm_actuator_ids: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=int))
    arm_qpos: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=int))
    arm_dofs: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=int))
    arm_feedforward: PositionServoFeedForward | None = None
    # Gripper: qpos/dof of every gripper joint; the servoed ones as (follower column, actuator).
    gripper_qpos: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=int))
    gripper_dofs: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=int))
    gripper_columns: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=int))
    gripper_actuator_ids: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=int))
    arm_controller: ArmController | None = None
    """FollowJointTrajectory goals on the arm joints (None: the robot has no arm)."""
    gripper_controller: GripperController | None = None
    """GripperCommand goals on the first gripper's driven finger (None: no gripper)."""
    joint_limits: dict[str, tuple[float, float]] = field(default_factory=dict)
    """Position limits of the arm and gripper joints (continuous joints have none)."""
    clamped_ever: set[str] = field(default_factory=set)
    """Joints a topic trajectory was clamped at (kept across resets: one warning per joint per run)."""
    newly_clamped: list[tuple[str, float, float]] = field(default_factory=list)
    """(joint, requested, clamped to) of the last topic trajectory, for joints clamped for the first time."""
    schedule: list[_Scheduled] = field(default_factory=list)
    firmware: FirmwareInTheLoop | None = None
    wheel_qpos: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=int))

    @property
    def model(self):
        return self.placement.model

    @property
    def prefix(self) -> str:
        return self.placement.prefix


@dataclass
class SimOptions:
    seed: int = 0
    """Seed of every random stream (sensor noise, biases)."""
    cameras: bool = True
    """Render cameras (False: camera topics are not produced, e.g. headless benchmarks)."""
    joint_state_rate: float = 50.0
    """Joint state publication rate (Hz, sim time)."""
    odom_rate: float = 50.0
    """Odometry, TF and ground-truth rate (Hz, sim time)."""
    command_timeout: float = 0.5
    """Seconds of sim time without a base command before the base stops."""
    firmware: bool = False
    """Drive the wheels with the real C firmware (host build) over a pty instead of the built-in controller."""
    serial_links: list[str] | None = None
    """Per robot: the path where the firmware's serial device appears (a symlink to the pty)."""
    baud: int = 115200
    """Serial link speed; limits the bytes per tick in each direction."""
    arm_constraints: TrajectoryConstraints = field(default_factory=TrajectoryConstraints)
    """Default tolerances of the arm's FollowJointTrajectory goals (joint_trajectory_controller's constraints)."""
    allow_partial_joints_goal: bool = False
    """Accept FollowJointTrajectory goals naming only some arm joints (the others hold their position)."""
    gripper: GripperConfig = field(default_factory=GripperConfig)
    """GripperCommand goal handling (gripper_action_controller's parameters)."""
    camera_threads: bool = False
    """Render each camera in a thread of its own beside the physics (robotsim_sim.capture): the same
    readings, delivered a few steps after their stamp (at the latest when that camera's next capture
    is due; :meth:`Simulation.flush` delivers the rest). The simulator node turns it on."""


class Simulation:
    def __init__(self, world: WorldSpec, placements: list[RobotPlacement], options: SimOptions | None = None):
        self.world = world
        self.options = options or SimOptions()
        scene = CompiledScene.compile(world, placements)
        self.spec = scene.spec
        """The scene as MuJoCo's model spec (MjSpec; ``spec.to_xml()`` gives its MJCF)."""
        self.model = scene.model
        self.data = mujoco.MjData(self.model)
        self.timestep_ns = round(world.timestep * 1e9)
        self.step_count = 0
        self.seed = self.options.seed
        self.instabilities: list[Instability] = []
        self.instability_count = 0
        self.renderer = None
        """The renderer of captures in the physics thread (None: cameras off, or each in its own thread)."""
        renders = any(sensor_kind(s.type).renders for p in placements for s in p.model.sensors)
        if renders and self.options.cameras and not self.options.camera_threads:
            self.renderer = CameraRenderer(self.model, world.light.shadows, world.light.reflections)
        bindings = scene.bindings
        self.geom_labels, self.labels = scene.geom_labels, scene.labels
        self.robots: list[RobotInstance] = []
        self.entities = Entities(self.model, self.data, world, self.robots)
        self.goals = ArmGoals(self.model, self.data, self.robots, lambda: self.time)
        """The arm's and gripper's goals of every robot and their outcomes (robotsim_sim.arm_goals)."""
        """The robots and free bodies by name: poses, teleports, the placement rule (robotsim_sim.entities)."""
        try:
            for index, (placement, binding) in enumerate(zip(placements, bindings)):
                self._make_robot(index, placement, binding)
            self.reset(self.seed)
            self.entities.refuse_overlaps_at_start()
        except BaseException:
            self.close()  # the capture threads and firmware links made so far: a failed start leaks nothing
            raise

    # ------------------------------------------------------------------ construction
    def _make_robot(self, index: int, placement: RobotPlacement, binding: RobotBinding) -> RobotInstance:
        model, prefix, m = placement.model, placement.prefix, self.model
        joints = [j.name for j in model.tree.moving_joints()]
        qpos_index = np.array([binding.qpos[j] for j in joints], dtype=int)
        dof_index = np.array([binding.dofs[j] for j in joints], dtype=int)
        arm_joints = [j for arm in model.arms for j in arm.joints + arm.gripper_joints[:1]]
        moved_by_arm = [j for arm in model.arms for j in arm.joints]
        fingers = [j for arm in model.arms for j in arm.gripper_joints]
        limits = {j: (model.tree.joints[j].limit.lower, model.tree.joints[j].limit.upper) for j in moved_by_arm + fingers
                  if model.tree.joints[j].limit is not None and model.tree.joints[j].type != 'continuous'}
        robot = RobotInstance(
            placement=placement, contract=robot_contract(model, self.options.joint_state_rate, self.options.odom_rate),
            base_controller=BaseController(model.drive, self.options.command_timeout) if model.drive else None,
            wheel_loop=WheelSpeedLoop(model.drive) if model.drive else None,
            arm=TrajectoryFollower(moved_by_arm), gripper=TrajectoryFollower(fingers), joint_limits=limits,
            odometry=WheelOdometry(model.drive) if model.drive else None,
            joint_names=joints, qpos_index=qpos_index, dof_index=dof_index, binding=binding,
            # A fixed-base robot is welded to the world: no free joint, no root dofs (-1).
            root_body=binding.root_body, root_qpos=binding.root_qpos, root_dof=binding.root_dof)
        self.robots.append(robot)  # before its threads and links exist: close() frees them if a later step fails
        if model.drive:
            driven = model.drive.driven_wheels
            robot.wheel_actuators = np.array([binding.wheel_motors[w.joint] for w in driven], dtype=int)
            robot.wheel_dofs = np.array([binding.dofs[w.joint] for w in driven], dtype=int)
            robot.wheel_qpos = np.array([binding.qpos[w.joint] for w in driven], dtype=int)
            if self.options.firmware:
                if model.drive.type != 'differential':
                    raise DescriptionError(model.source, 'drive.type', 'firmware in the loop drives differential bases; '
                                           f'{model.name} is {model.drive.type} (run it with firmware:=false)')
                if len(driven) > FIRMWARE_MOTOR_CHANNELS:
                    raise DescriptionError(model.source, 'wheels', f'firmware in the loop drives at most '
                                           f'{FIRMWARE_MOTOR_CHANNELS} wheels (one per motor channel of the MCU); '
                                           f'{model.name} has {len(driven)} driven wheels (run it with firmware:=false)')
                links = self.options.serial_links or []
                robot.firmware = FirmwareInTheLoop(len(driven), links[index] if index < len(links) else None,
                                                   self.options.seed, self.options.baud)
            for wheel in model.drive.wheels:
                if wheel.steer_joint:
                    robot.steer_actuators[wheel.steer_joint] = binding.position_servos[wheel.steer_joint]
        for joint in arm_joints:
            robot.arm_actuators[joint] = binding.position_servos[joint]
        self._make_arm_controllers(robot, moved_by_arm, fingers, limits)
        robot.schedule.append(_Scheduled('joint_states', self.options.joint_state_rate,
                                         lambda data, rng, stamp, r=robot: self._joint_states(r, stamp), slot=0))
        robot.schedule.append(_Scheduled('base_state', self.options.odom_rate,
                                         lambda data, rng, stamp, r=robot: self._base_state(r, stamp), slot=1))
        for slot, sensor in enumerate(model.sensors, 2):  # each kind places its own model (robotsim_core.sensor_kinds)
            kind = sensor_kind(sensor.type)
            context = SensorContext(m, prefix, sensor, FIRST_ROBOT_GROUP + index, self.renderer, self.geom_labels)
            if kind.renders and self.options.cameras and self.options.camera_threads:
                light = self.world.light
                capture = CaptureThread(m, lambda: CameraRenderer(m, light.shadows, light.reflections),
                                        lambda renderer, c=context, k=kind: k.make(replace(c, renderer=renderer)))
                on_reset = getattr(capture.sensor, 'on_reset', None)
                robot.schedule.append(_Scheduled(sensor.name, sensor.spec.rate, None, capture=capture, slot=slot, on_reset=(
                    None if on_reset is None else lambda rng, c=capture, f=on_reset: c.run(f, rng))))
                continue
            placed = kind.make(context)
            if placed is not None:
                robot.schedule.append(_Scheduled(sensor.name, sensor.spec.rate, placed.measure, slot=slot,
                                                 on_reset=getattr(placed, 'on_reset', None)))
        return robot

    def _make_arm_controllers(self, robot: RobotInstance, arm_joints: list[str], fingers: list[str],
                              limits: dict[str, tuple[float, float]]) -> None:
        m, model, binding = self.model, robot.model, robot.binding

        def addresses(joints):
            return (np.array([binding.qpos[j] for j in joints], dtype=int),
                    np.array([binding.dofs[j] for j in joints], dtype=int))
        robot.arm_qpos, robot.arm_dofs = addresses(arm_joints)
        robot.gripper_qpos, robot.gripper_dofs = addresses(fingers)
        robot.gripper_columns = np.array([i for i, j in enumerate(fingers) if j in robot.arm_actuators], dtype=int)
        robot.gripper_actuator_ids = np.array([robot.arm_actuators[fingers[i]] for i in robot.gripper_columns], dtype=int)
        if arm_joints:
            robot.arm_actuator_ids = np.array([robot.arm_actuators[j] for j in arm_joints], dtype=int)
            robot.arm_feedforward = PositionServoFeedForward(m, robot.arm_qpos, robot.arm_dofs, robot.arm_actuator_ids)
            robot.arm_feedforward.widen_control_range(m)
            robot.arm_controller = ArmController(robot.arm, {j: limits[j] for j in arm_joints if j in limits},
                                                 self.options.arm_constraints, self.options.allow_partial_joints_goal)
        driven = next((arm.gripper_joints[0] for arm in model.arms if arm.gripper_joints), None)
        if driven is not None:
            limit = model.tree.joints[driven].limit
            lower, upper = limits.get(driven, (-math.inf, math.inf))
            effort = limit.effort if limit is not None and limit.effort > 0 else float(
                m.actuator_forcerange[robot.arm_actuators[driven], 1])
            robot.gripper_controller = GripperController(robot.gripper, driven, lower, upper, effort,
                                                         self.options.gripper)

    # ------------------------------------------------------------------ time
    @property
    def time_ns(self) -> int:
        return self.step_count * self.timestep_ns

    @property
    def time(self) -> float:
        return self.time_ns * 1e-9

    def reset(self, seed: int | None = None) -> None:
        """Initial state, zero time, and every noise stream restarted from ``seed``."""
        if seed is not None:
            self.seed = int(seed)
        for robot in self.robots:
            for item in robot.schedule:
                if item.capture is not None:
                    item.capture.discard()  # a capture of the old episode: its noise stream is about to restart
        mujoco.mj_resetData(self.model, self.data)
        for robot in self.robots:
            # Joints whose range excludes 0 start at the nearest limit, not outside it.
            for name, value in robot.model.initial_positions.items():
                self.data.qpos[robot.binding.qpos[name]] = value
        mujoco.mj_forward(self.model, self.data)
        self.step_count = 0
        streams = np.random.SeedSequence(self.seed).spawn(sum(2 + len(r.model.sensors) for r in self.robots))
        first_stream = 0
        for robot in self.robots:
            if robot.base_controller:
                robot.base_controller.reset()
            self._resync_after_physics_reset(robot)
            if robot.firmware is not None:
                robot.firmware.reset(self.seed)
            robot.arm.reset()
            robot.gripper.reset()
            self.goals.end_at_reset(robot)
            for item in robot.schedule:
                item.rng = np.random.default_rng(streams[first_stream + item.slot])
                item.index = item.next_ns = 0
                if item.on_reset is not None:
                    item.on_reset(item.rng)
            for joint, actuator in robot.arm_actuators.items():
                self.data.ctrl[actuator] = self.data.qpos[robot.binding.qpos[joint]]
            first_stream += 2 + len(robot.model.sensors)

    def _resync_after_physics_reset(self, robot: RobotInstance) -> None:
        """The world's state went back to its initial one (a reset, or MuJoCo's own after an
        instability): the controllers' memory of wheel speeds and angles must follow, or the
        odometry would count the jump of the wheel angles as driving."""
        if robot.wheel_loop is not None:
            robot.wheel_loop.reset()
            robot.wheel_targets = None  # re-applies the steering targets MuJoCo's reset zeroed
        if robot.odometry:
            robot.odometry.reset()
            robot.odometry.update(self.time, self._wheel_positions(robot))

    # ------------------------------------------------------------------ instability
    def _unstable_warning(self):
        return next((kind for kind in UNSTABLE_WARNINGS if self.data.warning[kind].number), None)

    def _on_instability(self) -> None:
        """MuJoCo reset the whole world to its initial state because a position, velocity or
        acceleration became NaN, infinite or huge (it prints this only to stderr). Record what
        happened, when and where, and resynchronise the controllers with the reset world."""
        kind = self._unstable_warning()
        dof = int(self.data.warning[kind].lastinfo) if kind is not None else -1
        entity = self._entity_of_dof(dof) if 0 <= dof < self.model.nv else 'unknown'
        what = UNSTABLE_WARNINGS[kind] if kind is not None else 'unstable physics'
        self.instabilities.append(Instability(self.time_ns, what, entity, dof))
        self.instability_count += 1
        # MuJoCo's reset set its clock and counters back to zero (the counters to one for the
        # warning at hand, however often it fired); align both so the next one shows again.
        self.data.time = self.time
        for warning in UNSTABLE_WARNINGS:
            self.data.warning[warning].number = 0
        for robot in self.robots:
            self._resync_after_physics_reset(robot)

    def _entity_of_dof(self, dof: int) -> str:
        root = self.model.body_rootid[self.model.jnt_bodyid[self.model.dof_jntid[dof]]]
        for robot in self.robots:
            if root == self.model.body_rootid[robot.root_body]:
                return robot.placement.namespace or robot.model.name
        return self.model.body(root).name or f'body {root}'

    def take_instabilities(self) -> list[Instability]:
        """Instabilities since the last call (for the node to report)."""
        taken, self.instabilities = self.instabilities, []
        return taken

    # ------------------------------------------------------------------ commands
    def command_base(self, robot: int, linear: float, angular: float) -> bool:
        controller = self.robots[robot].base_controller
        return controller is not None and controller.set_command(linear, angular, self.time)

    # ------------------------------------------------------------------ arm and gripper (robotsim_sim.arm_goals)
    def command_arm(self, robot: int, joint_names, points, start_time: float | None = None) -> str | None:
        """A trajectory for the arm and/or gripper joints (the ``arm_controller/joint_trajectory`` topic); why it
        is refused, if it is (:meth:`ArmGoals.command`)."""
        return self.goals.command(robot, joint_names, points, start_time)

    def send_arm_goal(self, robot: int, goal: ArmGoal, token) -> None:
        """Start a FollowJointTrajectory goal (:meth:`ArmGoals.send_arm`)."""
        self.goals.send_arm(robot, goal, token)

    def cancel_arm_goal(self, robot: int, token) -> bool:
        """Cancel the running arm goal ``token`` (:meth:`ArmGoals.cancel_arm`)."""
        return self.goals.cancel_arm(robot, token)

    def send_gripper_goal(self, robot: int, token, position: float, max_effort: float) -> None:
        """Start a GripperCommand goal (:meth:`ArmGoals.send_gripper`)."""
        self.goals.send_gripper(robot, token, position, max_effort)

    def cancel_gripper_goal(self, robot: int, token) -> bool:
        """Cancel the running gripper goal ``token`` (:meth:`ArmGoals.cancel_gripper`)."""
        return self.goals.cancel_gripper(robot, token)

    def take_controller_outcomes(self) -> list[ArmOutcome | GripperOutcome]:
        """Goals that ended since the last call, in the order they ended."""
        return self.goals.take_outcomes()

    def arm_state(self, robot: int) -> ControllerState | None:
        """The arm controller's desired, actual and error state now (None: no arm)."""
        return self.goals.arm_state(robot)

    # ------------------------------------------------------------------ entities (robotsim_sim.entities)
    def entity_joints(self) -> dict[str, int]:
        """Free joint id of every entity SetEntityPose can move (:meth:`Entities.entity_joints`)."""
        return self.entities.entity_joints()

    def world_bounds(self) -> tuple[np.ndarray, np.ndarray]:
        """Where an entity may be placed (:meth:`Entities.world_bounds`)."""
        return self.entities.world_bounds()

    def world_entity_poses(self) -> list[tuple[str, np.ndarray, np.ndarray]]:
        """(name, position, quaternion w x y z) of every free body of the world (:meth:`Entities.world_entity_poses`)."""
        return self.entities.world_entity_poses()

    def entity_pose(self, name: str) -> tuple[np.ndarray, np.ndarray] | str:
        """(position, quaternion w x y z) of a robot or free world body, or why not (:meth:`Entities.entity_pose`)."""
        return self.entities.entity_pose(name)

    def set_entity_pose(self, name: str, position, quaternion) -> str | None:
        """Teleport a robot or free world body; why not, if refused (:meth:`Entities.set_entity_pose`)."""
        return self.entities.set_entity_pose(name, position, quaternion)

    # ------------------------------------------------------------------ stepping
    def _wheel_positions(self, robot: RobotInstance) -> dict[str, float]:
        return {name: float(self.data.qpos[index]) for name, index in zip(robot.joint_names, robot.qpos_index)}

    def _apply_controls(self) -> None:
        dt = self.model.opt.timestep
        for robot in self.robots:
            if robot.firmware is not None:
                self.data.ctrl[robot.wheel_actuators] = robot.firmware.step(self.data.qpos[robot.wheel_qpos],
                                                                            self.timestep_ns)
            elif robot.base_controller is not None:
                targets = robot.base_controller.update(self.time, dt)
                if targets is not robot.wheel_targets:
                    robot.wheel_targets = targets
                    robot.wheel_speed_targets = np.array([targets.wheel_speeds[w.joint]
                                                          for w in robot.model.drive.driven_wheels])
                    for joint, angle in targets.steer_angles.items():
                        self.data.ctrl[robot.steer_actuators[joint]] = angle
                self.data.ctrl[robot.wheel_actuators] = robot.wheel_loop.duty(
                    robot.wheel_speed_targets, self.data.qvel[robot.wheel_dofs], dt)
            if robot.arm_feedforward is not None:
                desired = robot.arm.sample(self.time)
                if desired is not None:
                    self.data.ctrl[robot.arm_actuator_ids] = robot.arm_feedforward.setpoints(self.data, desired)
            if len(robot.gripper_actuator_ids):
                desired = robot.gripper.sample(self.time)
                if desired is not None:
                    self.data.ctrl[robot.gripper_actuator_ids] = desired.positions[robot.gripper_columns]

    def step(self) -> list[Event]:
        """One physics step; returns the readings that fell due at the new time.

        mj_step integrates qpos/qvel to the new time but leaves everything derived from them
        (body and sensor poses, sensor data, camera poses) at the state before the step. So when
        a reading is due, mj_forward first brings the derived quantities to the new time: every
        reading stamped t holds the state at t. (Stamping with the pre-step time instead would
        need qpos/qvel from before the step as well.) mj_forward changes nothing the next step
        depends on, so the trajectory is the same bit for bit; it costs one forward pass on the
        steps that carry a reading (about a fifth of them at the default rates)."""
        self._apply_controls()
        mujoco.mj_step(self.model, self.data)
        self.step_count += 1
        if self.goals.running:
            self.goals.update()
        # MuJoCo's reset after an instability puts its clock back: one comparison per step notices.
        # (On an episode's first step the clock agrees either way, so look at the warnings.)
        if self.data.time < (self.step_count - 0.5) * self.model.opt.timestep or (
                self.step_count == 1 and self._unstable_warning() is not None):
            self._on_instability()
        now = self.time_ns
        events = []
        synced = False
        for index, robot in enumerate(self.robots):
            for item in robot.schedule:
                capture = item.capture
                if capture is not None and capture.done:
                    events.append(Event(index, item.channel, capture.collect()))
                if now >= item.next_ns:
                    if not synced:
                        mujoco.mj_forward(self.model, self.data)
                        synced = True
                    if capture is None:
                        events.append(Event(index, item.channel, item.measure(self.data, item.rng, now)))
                    else:
                        if capture.in_flight:  # one capture in flight per camera: wait for the previous one
                            events.append(Event(index, item.channel, capture.collect()))
                        capture.start(self.data, item.rng, now)
                    item.advance(now)
        return events

    def flush(self) -> list[Event]:
        """The readings of captures still in flight (SimOptions.camera_threads), waiting for them: what
        a caller that stops stepping (pause, the end of a step request or of the run) delivers."""
        return [Event(index, item.channel, item.capture.collect())
                for index, robot in enumerate(self.robots) for item in robot.schedule
                if item.capture is not None and item.capture.in_flight]

    def _joint_states(self, robot: RobotInstance, stamp: int) -> JointStateReading:
        return JointStateReading(stamp, [robot.prefix + n for n in robot.joint_names],
                                 self.data.qpos[robot.qpos_index].copy(), self.data.qvel[robot.dof_index].copy(),
                                 self.data.qfrc_actuator[robot.dof_index].copy())

    def _base_state(self, robot: RobotInstance, stamp: int) -> BaseStateReading:
        odometry = robot.odometry
        if odometry is not None:  # encoders are read at the odometry rate, as a base controller does
            positions = self._wheel_positions(robot)
            odometry.update(self.time, positions, positions)
        body = robot.root_body
        rotation = self.data.xmat[body].reshape(3, 3)
        # Free-joint qvel: linear velocity in the world frame, angular velocity in the body frame.
        if robot.root_dof < 0:
            linear_world, angular_body = np.zeros(3), np.zeros(3)
        else:
            linear_world = self.data.qvel[robot.root_dof:robot.root_dof + 3]
            angular_body = self.data.qvel[robot.root_dof + 3:robot.root_dof + 6]
        return BaseStateReading(
            stamp, (odometry.x, odometry.y, odometry.yaw) if odometry else (0.0, 0.0, 0.0),
            (odometry.linear, odometry.angular) if odometry else (0.0, 0.0),
            self.data.xpos[body].copy(), self.data.xquat[body].copy(), rotation.T @ linear_world, angular_body.copy())

    def close(self) -> None:
        """Release what the simulation made: the firmware's pseudo-terminals, the capture threads (with their GL
        contexts) and the physics thread's camera renderer. Closing twice is harmless."""
        for robot in self.robots:
            if robot.firmware is not None:
                robot.firmware.close()
            for item in robot.schedule:
                if item.capture is not None:
                    item.capture.close()
        if self.renderer is not None:
            self.renderer.close()
            self.renderer = None

    def ground_truth_pose(self, robot: int = 0) -> tuple[np.ndarray, float]:
        """(position, yaw) of a robot's root link in the world."""
        body = self.robots[robot].root_body
        w, x, y, z = self.data.xquat[body]
        return self.data.xpos[body].copy(), quat_to_yaw(w, x, y, z)
