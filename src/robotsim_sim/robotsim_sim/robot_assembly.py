"""One robot of a simulation, assembled from its description and its MuJoCo binding.

:func:`assemble_robot` turns a :class:`~robotsim_sim.scene.RobotPlacement` and its
:class:`~robotsim_sim.binding.RobotBinding` into a :class:`RobotInstance`: the base controller and
wheel loop (or the firmware in the loop), the arm's and gripper's followers and goal controllers,
the address arrays the physics loop indexes with, and the schedule of its sensors (each sensor kind
places its own model, :mod:`robotsim_core.sensor_kinds`). :class:`NamedAccess` reads and writes one
robot's state by joint and actuator name, as dm_control's ``physics.named`` does.

The instance owns its controllers, its firmware link and its sensors' capture threads; the
:class:`~robotsim_sim.simulation.Simulation` that made it closes them.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field, replace

import mujoco
import numpy as np

from robotsim_core.contract import Contract, robot_contract
from robotsim_core.drive import WheelOdometry
from robotsim_core.errors import DescriptionError
from robotsim_core.sensor_kinds import SensorContext, sensor_kind
from robotsim_firmware.host_library import CHANNELS as FIRMWARE_MOTOR_CHANNELS
from robotsim_firmware.in_the_loop import FirmwareInTheLoop
from robotsim_sensors.camera import CameraRenderer

from .arm_controller import ArmController, GripperController
from .binding import RobotBinding
from .capture import CaptureThread
from .controllers import BaseController, PositionServoFeedForward, TrajectoryFollower, WheelSpeedLoop
from .joint_servos import JointServos
from .scene import FIRST_ROBOT_GROUP, RobotPlacement


@dataclass
class Scheduled:
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
    """One simulated robot: what it is made of in the scene and the controllers that drive it."""

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
    wheel_speed_targets: list[float] = field(default_factory=list)
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
    schedule: list[Scheduled] = field(default_factory=list)
    firmware: FirmwareInTheLoop | None = None
    wheel_qpos: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=int))
    leg_servos: JointServos | None = None
    """The legs' joint PD servos (None: the robot has no legs)."""
    # The legs' servoed joints in legs.joints order: their torque motors, qpos and dof addresses.
    leg_motors: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=int))
    leg_qpos: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=int))
    leg_dofs: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=int))
    odom_origin: tuple[np.ndarray, float] = (np.zeros(3), 0.0)
    """A legged robot's odom frame: (root position, heading) in the world at the last reset."""
    foot_geoms: dict[str, np.ndarray] = field(default_factory=dict)
    """Foot link -> ids of its collision geoms (what a foot contact is)."""
    foot_of_geom: dict[int, str] = field(default_factory=dict)
    """The same, geom id -> foot link (looked up per contact)."""

    @property
    def model(self):
        return self.placement.model

    @property
    def prefix(self) -> str:
        return self.placement.prefix

    def close(self) -> None:
        """Close the firmware's pseudo-terminal and the sensors' capture threads. Closing twice is harmless."""
        if self.firmware is not None:
            self.firmware.close()
        for item in self.schedule:
            if item.capture is not None:
                item.capture.close()


class NamedArray:
    """One of MuJoCo's arrays of one robot, indexed by the robot's own names (URDF joint or actuated joint).

    ``named.qpos['left_wheel_joint']`` reads, ``named.ctrl['shoulder_joint'] = 0.3`` writes; an unknown name is
    a KeyError naming the ones there are."""

    def __init__(self, array: np.ndarray, index: dict[str, int], what: str):
        self._array, self._index, self._what = array, index, what

    def _address(self, name: str) -> int:
        if name not in self._index:
            raise KeyError(f'{self._what}: no {name!r}; expected one of {", ".join(sorted(self._index))}')
        return self._index[name]

    def __getitem__(self, name: str) -> float:
        return float(self._array[self._address(name)])

    def __setitem__(self, name: str, value: float) -> None:
        self._array[self._address(name)] = value

    def keys(self) -> list[str]:
        return list(self._index)

    def __repr__(self) -> str:
        return f'{self._what}({", ".join(f"{k}={self[k]:.6g}" for k in self._index)})'


class NamedAccess:
    """One robot's state by name (dm_control's ``physics.named`` for one robot): ``qpos``/``qvel``/``qfrc_actuator``
    by moving joint, ``ctrl`` by actuated joint (wheel motors and position servos), ``body_position(link)``."""

    def __init__(self, data: mujoco.MjData, robot: RobotInstance):
        binding = robot.binding
        self._data, self._bodies = data, binding.bodies
        self.qpos = NamedArray(data.qpos, binding.qpos, 'qpos')
        self.qvel = NamedArray(data.qvel, binding.dofs, 'qvel')
        self.qfrc_actuator = NamedArray(data.qfrc_actuator, binding.dofs, 'qfrc_actuator')
        self.ctrl = NamedArray(data.ctrl, {**binding.wheel_motors, **binding.position_servos}, 'ctrl')

    def body_position(self, link: str) -> np.ndarray:
        """World position of a link's body (links MuJoCo merged into their parent are absent: KeyError)."""
        if link not in self._bodies:
            raise KeyError(f'body: no {link!r}; expected one of {", ".join(sorted(self._bodies))}')
        return self._data.xpos[self._bodies[link]].copy()


@dataclass(frozen=True)
class AssemblyOptions:
    """What assembling a robot needs of the simulation's options (robotsim_sim.simulation.SimOptions)."""

    joint_state_rate: float
    odom_rate: float
    command_timeout: float
    firmware: bool
    serial_link: str | None
    seed: int
    baud: int
    firmware_lockstep: bool
    firmware_build: str
    firmware_image: str
    power_board: bool
    cameras: bool
    camera_threads: bool
    arm_constraints: object
    allow_partial_joints_goal: bool
    gripper: object


def assemble_robot(index: int, placement: RobotPlacement, binding: RobotBinding, m: mujoco.MjModel,
                   options: AssemblyOptions, light, renderer, geom_labels,
                   created: Callable[[RobotInstance], None]) -> RobotInstance:
    """The ``index``-th robot of the scene ``m``. ``created`` is called as soon as the instance exists, before its
    threads and links do, so that the caller can close them if a later step fails."""
    model = placement.model
    joints = [j.name for j in model.tree.moving_joints()]
    qpos_index = np.array([binding.qpos[j] for j in joints], dtype=int)
    dof_index = np.array([binding.dofs[j] for j in joints], dtype=int)
    arm_joints = [j for arm in model.arms for j in arm.joints + arm.gripper_joints[:1]]
    moved_by_arm = [j for arm in model.arms for j in arm.joints]
    fingers = [j for arm in model.arms for j in arm.gripper_joints]
    limits = {j: (model.tree.joints[j].limit.lower, model.tree.joints[j].limit.upper) for j in moved_by_arm + fingers
              if model.tree.joints[j].limit is not None and model.tree.joints[j].type != 'continuous'}
    robot = RobotInstance(
        placement=placement, contract=robot_contract(model, options.joint_state_rate, options.odom_rate),
        base_controller=BaseController(model.drive, options.command_timeout) if model.drive else None,
        wheel_loop=WheelSpeedLoop(model.drive) if model.drive else None,
        arm=TrajectoryFollower(moved_by_arm), gripper=TrajectoryFollower(fingers), joint_limits=limits,
        odometry=WheelOdometry(model.drive) if model.drive else None,
        joint_names=joints, qpos_index=qpos_index, dof_index=dof_index, binding=binding,
        # A fixed-base robot is welded to the world: no free joint, no root dofs (-1).
        root_body=binding.root_body, root_qpos=binding.root_qpos, root_dof=binding.root_dof)
    created(robot)
    if model.drive:
        driven = model.drive.driven_wheels
        robot.wheel_actuators = np.array([binding.wheel_motors[w.joint] for w in driven], dtype=int)
        robot.wheel_dofs = np.array([binding.dofs[w.joint] for w in driven], dtype=int)
        robot.wheel_qpos = np.array([binding.qpos[w.joint] for w in driven], dtype=int)
        if options.firmware:
            if model.drive.type != 'differential':
                raise DescriptionError(model.source, 'drive.type', 'firmware in the loop drives differential bases; '
                                       f'{model.name} is {model.drive.type} (run it with firmware:=false)')
            if len(driven) > FIRMWARE_MOTOR_CHANNELS:
                raise DescriptionError(model.source, 'wheels', f'firmware in the loop drives at most '
                                       f'{FIRMWARE_MOTOR_CHANNELS} wheels (one per motor channel of the MCU); '
                                       f'{model.name} has {len(driven)} driven wheels (run it with firmware:=false)')
            robot.firmware = FirmwareInTheLoop(len(driven), options.serial_link, options.seed, options.baud,
                                               options.firmware_lockstep, options.firmware_build,
                                               options.firmware_image, options.power_board)
        for wheel in model.drive.wheels:
            if wheel.steer_joint:
                robot.steer_actuators[wheel.steer_joint] = binding.position_servos[wheel.steer_joint]
    for joint in arm_joints:
        robot.arm_actuators[joint] = binding.position_servos[joint]
    if model.legs is not None:
        _make_leg_servos(robot, m)
    _make_arm_controllers(robot, m, options, moved_by_arm, fingers, limits)
    for slot, sensor in enumerate(model.sensors, 2):  # each kind places its own model (robotsim_core.sensor_kinds)
        kind = sensor_kind(sensor.type)
        context = SensorContext(m, placement.prefix, sensor, FIRST_ROBOT_GROUP + index, renderer, geom_labels)
        if kind.renders and options.cameras and options.camera_threads:
            capture = CaptureThread(m, lambda: CameraRenderer(m, light.shadows, light.reflections),
                                    lambda renderer, c=context, k=kind: k.make(replace(c, renderer=renderer)))
            on_reset = getattr(capture.sensor, 'on_reset', None)
            robot.schedule.append(Scheduled(sensor.name, sensor.spec.rate, None, capture=capture, slot=slot, on_reset=(
                None if on_reset is None else lambda rng, c=capture, f=on_reset: c.run(f, rng))))
            continue
        placed = kind.make(context)
        if placed is not None:
            robot.schedule.append(Scheduled(sensor.name, sensor.spec.rate, placed.measure, slot=slot,
                                            on_reset=getattr(placed, 'on_reset', None)))
    return robot


def _make_arm_controllers(robot: RobotInstance, m: mujoco.MjModel, options: AssemblyOptions, arm_joints: list[str],
                          fingers: list[str], limits: dict[str, tuple[float, float]]) -> None:
    model, binding = robot.model, robot.binding

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
                                             options.arm_constraints, options.allow_partial_joints_goal)
    driven = next((arm.gripper_joints[0] for arm in model.arms if arm.gripper_joints), None)
    if driven is not None:
        limit = model.tree.joints[driven].limit
        lower, upper = limits.get(driven, (-math.inf, math.inf))
        effort = limit.effort if limit is not None and limit.effort > 0 else float(
            m.actuator_forcerange[robot.arm_actuators[driven], 1])
        robot.gripper_controller = GripperController(robot.gripper, driven, lower, upper, effort, options.gripper)


def _make_leg_servos(robot: RobotInstance, m: mujoco.MjModel) -> None:
    legs, binding = robot.model.legs, robot.binding
    robot.leg_motors = np.array([binding.joint_motors[j] for j in legs.joints], dtype=int)
    robot.leg_qpos = np.array([binding.qpos[j] for j in legs.joints], dtype=int)
    robot.leg_dofs = np.array([binding.dofs[j] for j in legs.joints], dtype=int)
    robot.leg_servos = JointServos(legs.joints, legs.kp, legs.kd, m.actuator_ctrlrange[robot.leg_motors, 1],
                                   legs.crouch)
    for foot in legs.feet:  # the collision geoms of the foot's body (contype set: visual geoms have none)
        body = binding.bodies.get(foot)
        if body is None:
            raise DescriptionError(robot.model.source, 'legs.feet', f'foot {foot!r} has no body of its own in the scene')
        robot.foot_geoms[foot] = np.array([g for g in range(m.ngeom) if m.geom_bodyid[g] == body
                                           and (m.geom_contype[g] or m.geom_conaffinity[g])], dtype=int)
        robot.foot_of_geom.update({int(g): foot for g in robot.foot_geoms[foot]})
