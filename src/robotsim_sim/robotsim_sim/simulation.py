"""The simulated world (ROS-free): MuJoCo physics, built-in controllers, encoders, sensors.

Modelled on dm_control's split: :class:`Simulation` owns physics and time and hands out
readings; the ROS node (:mod:`robotsim_sim.sim_node`) only converts them to messages. Time is
counted in physics steps (``time_ns = step_count * timestep_ns``) so stamps are exact. Every
random choice flows from the seed: each sensor has its own stream spawned from it, so a reset
with the same seed replays the same noise.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import mujoco
import numpy as np

from robotsim_core.contract import Contract, robot_contract
from robotsim_core.drive import WheelOdometry
from robotsim_core.errors import DescriptionError
from robotsim_core.geometry import quat_to_yaw
from robotsim_firmware.in_the_loop import FirmwareInTheLoop
from robotsim_sensors.camera import Camera, CameraRenderer
from robotsim_sensors.imu import Imu
from robotsim_sensors.lidar import Lidar

from .controllers import BaseController, TrajectoryFollower, WheelSpeedLoop
from .scene import FIRST_ROBOT_GROUP, RobotPlacement, build_scene
from .world_spec import WorldSpec


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
    odometry: WheelOdometry | None
    joint_names: list[str]
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


class Simulation:
    def __init__(self, world: WorldSpec, placements: list[RobotPlacement], options: SimOptions | None = None):
        self.world = world
        self.options = options or SimOptions()
        self.mjcf = build_scene(world, placements)
        self.model = mujoco.MjModel.from_xml_string(self.mjcf)
        self.data = mujoco.MjData(self.model)
        self.timestep_ns = round(world.timestep * 1e9)
        self.step_count = 0
        self.seed = self.options.seed
        self.renderer = None
        cameras = [s for p in placements for s in p.model.sensors if s.type == 'camera']
        if cameras and self.options.cameras:
            self.renderer = CameraRenderer(self.model, world.light.shadows, world.light.reflections)
        self.geom_labels, self.labels = self._segmentation_labels(placements)
        self.robots = [self._make_robot(index, placement) for index, placement in enumerate(placements)]
        self.reset(self.seed)

    # ------------------------------------------------------------------ construction
    def _segmentation_labels(self, placements):
        """Entity label per geom: 0 floor/walls/static world, one id per free body or robot."""
        labels = {0: 'world'}
        geom_labels = np.zeros(self.model.ngeom, dtype=np.int32)
        names = {}
        for geom in range(self.model.ngeom):
            root = self.model.body_rootid[self.model.geom_bodyid[geom]]
            if root == 0:
                name = self.model.geom(geom).name or 'world'
                name = name if not name.startswith('wall_') and name != 'floor' else 'world'
            else:
                name = self.model.body(root).name
                for placement in placements:
                    if name == placement.prefix + placement.model.tree.root():
                        name = placement.namespace or placement.model.name
            if name not in names:
                names[name] = 0 if name == 'world' else len(names) + 1
                labels[names[name]] = name
            geom_labels[geom] = names[name]
        return geom_labels, labels

    def _make_robot(self, index: int, placement: RobotPlacement) -> RobotInstance:
        model, prefix, m = placement.model, placement.prefix, self.model
        joints = [j.name for j in model.tree.moving_joints()]
        qpos_index = np.array([m.jnt_qposadr[m.joint(prefix + j).id] for j in joints], dtype=int)
        dof_index = np.array([m.jnt_dofadr[m.joint(prefix + j).id] for j in joints], dtype=int)
        root = model.tree.root()
        root_joint = m.joint(f'{prefix}{root}_freejoint').id
        arm_joints = [j for arm in model.arms for j in arm.joints + arm.gripper_joints[:1]]
        robot = RobotInstance(
            placement=placement, contract=robot_contract(model, self.options.joint_state_rate, self.options.odom_rate),
            base_controller=BaseController(model.drive, self.options.command_timeout) if model.drive else None,
            wheel_loop=WheelSpeedLoop(model.drive) if model.drive else None,
            arm=TrajectoryFollower([j for arm in model.arms for j in arm.joints + arm.gripper_joints]),
            odometry=WheelOdometry(model.drive) if model.drive else None,
            joint_names=joints, qpos_index=qpos_index, dof_index=dof_index,
            root_body=m.body(prefix + root).id, root_qpos=int(m.jnt_qposadr[root_joint]),
            root_dof=int(m.jnt_dofadr[root_joint]))
        if model.drive:
            driven = model.drive.driven_wheels
            robot.wheel_actuators = np.array([m.actuator(f'{prefix}{w.joint}_motor').id for w in driven], dtype=int)
            robot.wheel_dofs = np.array([m.jnt_dofadr[m.joint(prefix + w.joint).id] for w in driven], dtype=int)
            robot.wheel_qpos = np.array([m.jnt_qposadr[m.joint(prefix + w.joint).id] for w in driven], dtype=int)
            if self.options.firmware:
                if model.drive.type != 'differential':
                    raise DescriptionError(model.source, 'drive.type', 'firmware in the loop drives differential bases; '
                                           f'{model.name} is {model.drive.type} (run it with firmware:=false)')
                links = self.options.serial_links or []
                robot.firmware = FirmwareInTheLoop(len(driven), links[index] if index < len(links) else None,
                                                   self.options.seed, self.options.baud)
            for wheel in model.drive.wheels:
                if wheel.steer_joint:
                    robot.steer_actuators[wheel.steer_joint] = m.actuator(f'{prefix}{wheel.steer_joint}_position').id
        for joint in arm_joints:
            robot.arm_actuators[joint] = m.actuator(f'{prefix}{joint}_position').id
        robot.schedule.append(_Scheduled('joint_states', self.options.joint_state_rate,
                                         lambda data, rng, stamp, r=robot: self._joint_states(r, stamp)))
        robot.schedule.append(_Scheduled('base_state', self.options.odom_rate,
                                         lambda data, rng, stamp, r=robot: self._base_state(r, stamp)))
        for sensor in model.sensors:
            rate = sensor.spec.rate
            if sensor.type == 'lidar':
                lidar = Lidar(m, prefix + sensor.frame, sensor.spec, FIRST_ROBOT_GROUP + index)
                robot.schedule.append(_Scheduled(sensor.name, rate, lidar.measure))
            elif sensor.type == 'camera' and self.renderer is not None:
                camera = Camera(self.renderer, prefix + sensor.name, sensor.spec, self.geom_labels)
                robot.schedule.append(_Scheduled(sensor.name, rate, camera.capture))
            elif sensor.type == 'imu':
                imu = Imu(m, prefix, sensor.spec)
                robot.schedule.append(_Scheduled(sensor.name, rate, imu.measure, on_reset=imu.draw_biases))
        return robot

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
        mujoco.mj_resetData(self.model, self.data)
        mujoco.mj_forward(self.model, self.data)
        self.step_count = 0
        streams = iter(np.random.SeedSequence(self.seed).spawn(sum(len(r.schedule) for r in self.robots)))
        for robot in self.robots:
            if robot.base_controller:
                robot.base_controller.reset()
                robot.wheel_loop.reset()
                robot.wheel_targets = None
            if robot.firmware is not None:
                robot.firmware.reset(self.seed)
            robot.arm.reset()
            if robot.odometry:
                robot.odometry.reset()
                robot.odometry.update(0.0, self._wheel_positions(robot))
            for item in robot.schedule:
                item.rng = np.random.default_rng(next(streams))
                item.index = item.next_ns = 0
                if item.on_reset is not None:
                    item.on_reset(item.rng)
            for joint, actuator in robot.arm_actuators.items():
                self.data.ctrl[actuator] = self.data.qpos[self.model.jnt_qposadr[self.model.joint(robot.prefix + joint).id]]

    # ------------------------------------------------------------------ commands
    def command_base(self, robot: int, linear: float, angular: float) -> bool:
        controller = self.robots[robot].base_controller
        return controller is not None and controller.set_command(linear, angular, self.time)

    def command_arm(self, robot: int, joint_names, points, start_time: float | None = None) -> str | None:
        r = self.robots[robot]
        current = dict(zip(r.joint_names, self.data.qpos[r.qpos_index]))
        start = self.time if start_time is None or start_time <= 0 else max(start_time, self.time)
        return r.arm.load(list(joint_names), points, start, current)

    def set_entity_pose(self, name: str, position, quaternion) -> str | None:
        """Teleport a robot (by namespace or model name) or a free world body; zero its velocity."""
        joint = None
        for robot in self.robots:
            if name in (robot.placement.namespace, robot.model.name):
                joint = self.model.joint(f'{robot.prefix}{robot.model.tree.root()}_freejoint').id
        if joint is None:
            try:
                joint = self.model.joint(f'{name}_freejoint').id
            except KeyError:
                return f'no entity {name!r}: expected a robot or a free world body'
        quaternion = np.asarray(quaternion, dtype=float)
        if not (np.all(np.isfinite(position)) and np.all(np.isfinite(quaternion)) and np.linalg.norm(quaternion) > 0):
            return 'pose must be finite with a non-zero quaternion'
        address, dof = self.model.jnt_qposadr[joint], self.model.jnt_dofadr[joint]
        self.data.qpos[address:address + 3] = position
        self.data.qpos[address + 3:address + 7] = quaternion / np.linalg.norm(quaternion)
        self.data.qvel[dof:dof + 6] = 0.0
        mujoco.mj_forward(self.model, self.data)
        return None

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
            arm_targets = robot.arm.targets(self.time)
            if arm_targets:
                for joint, actuator in robot.arm_actuators.items():
                    self.data.ctrl[actuator] = arm_targets[joint]

    def step(self) -> list[Event]:
        """One physics step; returns the readings that fell due at the new time."""
        self._apply_controls()
        mujoco.mj_step(self.model, self.data)
        self.step_count += 1
        now = self.time_ns
        events = []
        for index, robot in enumerate(self.robots):
            for item in robot.schedule:
                if now >= item.next_ns:
                    events.append(Event(index, item.channel, item.measure(self.data, item.rng, now)))
                    item.advance(now)
        return events

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
        linear_world = self.data.qvel[robot.root_dof:robot.root_dof + 3]
        angular_body = self.data.qvel[robot.root_dof + 3:robot.root_dof + 6]
        return BaseStateReading(
            stamp, (odometry.x, odometry.y, odometry.yaw) if odometry else (0.0, 0.0, 0.0),
            (odometry.linear, odometry.angular) if odometry else (0.0, 0.0),
            self.data.xpos[body].copy(), self.data.xquat[body].copy(), rotation.T @ linear_world, angular_body.copy())

    def close(self) -> None:
        """Release OS resources (the firmware's pseudo-terminals)."""
        for robot in self.robots:
            if robot.firmware is not None:
                robot.firmware.close()

    def ground_truth_pose(self, robot: int = 0) -> tuple[np.ndarray, float]:
        """(position, yaw) of a robot's root link in the world."""
        body = self.robots[robot].root_body
        w, x, y, z = self.data.xquat[body]
        return self.data.xpos[body].copy(), quat_to_yaw(w, x, y, z)
