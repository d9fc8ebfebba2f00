"""The simulated world (ROS-free): MuJoCo physics, built-in controllers, encoders, sensors.

Modelled on dm_control's split: :class:`Simulation` owns physics and time and hands out
readings; the ROS node (:mod:`robotsim_sim.ros.sim_node`) only converts them to messages. Time is
counted in physics steps (``time_ns = step_count * timestep_ns``) so stamps are exact. Every
random choice flows from the seed: each sensor has its own stream spawned from it by the sensor's
place in the robot description, so a reset with the same seed replays the same noise, and a
sensor's noise does not depend on which other sensors are simulated (e.g. cameras off).

What it is made of, each in a module of its own: the compiled scene and its names
(:mod:`.compiled_scene`), each robot's assembly with named access (:mod:`.robot_assembly`), the arm's
and gripper's goals (:mod:`.arm_goals`), entity poses (:mod:`.entities`) and the instability watch
(:mod:`.instability`). :class:`Simulation` keeps time, step, reset and readings, and closes what it made.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import math

import mujoco
import numpy as np

from robotsim_core.geometry import quat_to_yaw
from robotsim_core.sensor_kinds import sensor_kind
from robotsim_sensors.camera import CameraRenderer

from .arm_controller import ArmGoal, ArmOutcome, ControllerState, GripperConfig, GripperOutcome, TrajectoryConstraints
from .arm_goals import ArmGoals
from .binding import RobotBinding
from .compiled_scene import CompiledScene
from .entities import Entities
from .instability import Instability, InstabilityWatch
from .robot_assembly import AssemblyOptions, NamedAccess, RobotInstance, Scheduled, assemble_robot
from .scene import RobotPlacement
from robotsim_core.description.world_spec import WorldSpec

__all__ = ['BaseStateReading', 'Event', 'Instability', 'JointStateReading', 'RobotInstance', 'SimOptions', 'Simulation']


@dataclass
class JointStateReading:
    stamp: int
    names: list[str]
    positions: np.ndarray
    velocities: np.ndarray
    efforts: np.ndarray
    foot_forces: list[tuple[str, float]] = field(default_factory=list)
    """(foot link, normal force N) per foot of a legged robot (Simulation.foot_contacts); empty without legs."""


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
    odom_travel: tuple[float, float] = (0.0, 0.0)  # metres travelled, radians turned since the odometry started
    odom_pose_3d: tuple[np.ndarray, np.ndarray] | None = None
    """A legged robot's odometry: its root's true position and (w, x, y, z) quaternion in odom (the floor under its
    pose at the last reset, heading along it), as a perfect state estimator would report them; None otherwise."""


@dataclass
class Event:
    robot: int
    channel: str      # sensor name, 'joint_states' or 'base_state'
    reading: object


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
    firmware_build: str = 'host'
    """Which firmware runs in the loop (robotsim_firmware.in_the_loop.BUILDS): 'host' (the host build) or 'qemu'
    (the MCU image under qemu-system-arm, robotsim_firmware.qemu_board)."""
    firmware_image: str = ''
    """With ``firmware_build='qemu'``: the ELF to run ('' = built from the firmware sources, ``make qemu``)."""
    power_board: bool = False
    """With the firmware (host build): each robot also has a power board on a board-to-board bus with the base
    controller (robotsim_firmware.power_board; it cuts the motors' supply when the base goes silent)."""
    firmware_lockstep: bool = False
    """The firmware's serial links run in lockstep with the bridge (robotsim_firmware.virtual_serial): the
    caller then brackets /clock at every setpoint period with :meth:`Simulation.sync_firmware`."""
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
        self.watch = InstabilityWatch(self.model, self.data, self._entity_of_root)
        """Notices MuJoCo's resets after an instability (robotsim_sim.instability)."""
        self.renderer = None
        """The renderer of captures in the physics thread (None: cameras off, or each in its own thread)."""
        renders = any(sensor_kind(s.type).renders for p in placements for s in p.model.sensors)
        if renders and self.options.cameras and not self.options.camera_threads:
            self.renderer = CameraRenderer(self.model, world.light.shadows, world.light.reflections)
        bindings = scene.bindings
        self.geom_labels, self.labels = scene.geom_labels, scene.labels
        self.robots: list[RobotInstance] = []
        self.entities = Entities(self.model, self.data, world, self.robots)
        """The robots and free bodies by name: poses, teleports, the placement rule (robotsim_sim.entities)."""
        self.goals = ArmGoals(self.model, self.data, self.robots, lambda: self.time)
        """The arm's and gripper's goals of every robot and their outcomes (robotsim_sim.arm_goals)."""
        try:
            for index, (placement, binding) in enumerate(zip(placements, bindings)):
                self._make_robot(index, placement, binding)
            self._radio_boards = {}
            self.fleet_radio = self._fleet_radio()
            """The radio between the base controllers of a fleet (robotsim_firmware.board_bus.BoardBus, a robot a
            link, named by its namespace), None unless two or more robots run the firmware's host build."""
            self.reset(self.seed)
            self.entities.refuse_overlaps_at_start()
        except BaseException:
            self.close()  # the capture threads and firmware links made so far: a failed start leaks nothing
            raise

    # ------------------------------------------------------------------ construction
    def _make_robot(self, index: int, placement: RobotPlacement, binding: RobotBinding) -> RobotInstance:
        o = self.options
        links = o.serial_links or []
        options = AssemblyOptions(o.joint_state_rate, o.odom_rate, o.command_timeout, o.firmware,
                                  links[index] if index < len(links) else None, o.seed, o.baud, o.firmware_lockstep,
                                  o.firmware_build, o.firmware_image, o.power_board, o.cameras, o.camera_threads,
                                  o.arm_constraints, o.allow_partial_joints_goal, o.gripper)
        # appended before its threads and links exist: close() frees them if a later step fails
        robot = assemble_robot(index, placement, binding, self.model, options, self.world.light, self.renderer,
                               self.geom_labels, self.robots.append)
        robot.schedule[:0] = [  # readings of the simulation itself, before the description's sensors
            Scheduled('joint_states', o.joint_state_rate, lambda data, rng, stamp, r=robot: self._joint_states(r, stamp),
                      slot=0),
            Scheduled('base_state', o.odom_rate, lambda data, rng, stamp, r=robot: self._base_state(r, stamp), slot=1)]
        return robot

    def _fleet_radio(self):
        on_air = [r for r in self.robots if r.firmware is not None and r.firmware.build == 'host']
        if len(on_air) < 2:
            return None
        from robotsim_firmware.board_bus import BoardBus
        from robotsim_firmware.in_the_loop import RADIO_MAX_NODES

        if len(on_air) > RADIO_MAX_NODES:
            raise ValueError(f'fleet radio: {len(on_air)} robots with the firmware, the radio has '
                             f'{RADIO_MAX_NODES} nodes')
        names = [r.placement.namespace or r.model.name for r in on_air]
        radio = BoardBus(names)
        self._radio_boards = {name: robot.firmware for name, robot in zip(names, on_air)}
        for node, (robot, name) in enumerate(zip(on_air, names)):
            robot.firmware.radio_link = radio.links[name]
            robot.firmware.mcu.plant.radio_node = node
        return radio

    def named(self, robot: int = 0) -> NamedAccess:
        """Robot ``robot``'s joints, actuators and bodies by name (robotsim_sim.robot_assembly.NamedAccess)."""
        return NamedAccess(self.data, self.robots[robot])

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
                robot.firmware.reset(self.seed, self.data.qpos[robot.wheel_qpos])  # the wheels as reset
            robot.arm.reset()
            robot.gripper.reset()
            if robot.leg_servos is not None:
                robot.leg_servos.reset()
                self._set_odom_origin(robot)
            self.goals.end_at_reset(robot)
            for item in robot.schedule:
                item.rng = np.random.default_rng(streams[first_stream + item.slot])
                item.index = item.next_ns = 0
                if item.on_reset is not None:
                    item.on_reset(item.rng)
            for joint in [*robot.arm_actuators, *robot.model.held_joints]:  # every servo holds where it starts
                self.data.ctrl[robot.binding.position_servos[joint]] = self.data.qpos[robot.binding.qpos[joint]]
            first_stream += 2 + len(robot.model.sensors)

    def _set_odom_origin(self, robot: RobotInstance) -> None:
        """A legged robot's odom frame: on the floor under its root as it is now, heading along it."""
        w, x, y, z = self.data.xquat[robot.root_body]
        robot.odom_origin = (self.data.xpos[robot.root_body].copy(), quat_to_yaw(w, x, y, z))

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
        if robot.leg_servos is not None:
            self._set_odom_origin(robot)

    # ------------------------------------------------------------------ instability (robotsim_sim.instability)
    def _entity_of_root(self, root: int) -> str | None:
        for robot in self.robots:
            if root == self.model.body_rootid[robot.root_body]:
                return robot.placement.namespace or robot.model.name
        return None

    @property
    def instabilities(self) -> list[Instability]:
        """Instabilities not yet taken."""
        return self.watch.pending

    @property
    def instability_count(self) -> int:
        """Instabilities since the simulation started."""
        return self.watch.count

    def take_instabilities(self) -> list[Instability]:
        """Instabilities since the last call (for the node to report)."""
        return self.watch.take()

    # ------------------------------------------------------------------ commands
    def command_base(self, robot: int, linear: float, angular: float) -> bool:
        controller = self.robots[robot].base_controller
        return controller is not None and controller.set_command(linear, angular, self.time)

    # ------------------------------------------------------------------ arm and gripper (robotsim_sim.arm_goals)
    def command_leg_positions(self, robot: int, positions) -> str | None:
        """Position targets for a legged robot's servoed joints (legs.joints order, default gains); None, or why they
        were refused (the robot has no legs, a wrong count, a value that is not finite)."""
        servos = self.robots[robot].leg_servos
        if servos is None:
            return f'robot {self.robots[robot].model.name} has no legs (no joint servos to command)'
        return servos.command_positions(positions)

    def command_leg_joints(self, robot: int, names, q, dq, kp, kd, tau) -> str | None:
        """A low-level command (position, velocity, gains, feed-forward torque) for named leg joints; None, or why it
        was refused (see JointServos.command)."""
        servos = self.robots[robot].leg_servos
        if servos is None:
            return f'robot {self.robots[robot].model.name} has no legs (no joint servos to command)'
        return servos.command(names, q, dq, kp, kd, tau)

    def foot_contacts(self, robot: int) -> list[tuple[str, float]]:
        """(foot link, normal force in N) per foot of a legged robot, in legs.feet order: the sum over the foot's
        contacts of the force along each contact's normal (0: in the air)."""
        return self._foot_forces(self.robots[robot])

    def _foot_forces(self, instance: RobotInstance) -> list[tuple[str, float]]:
        force = np.zeros(6)
        totals = {foot: 0.0 for foot in instance.foot_geoms}
        owner = instance.foot_of_geom
        for index in range(self.data.ncon):
            contact = self.data.contact[index]
            foot = owner.get(int(contact.geom1), owner.get(int(contact.geom2)))
            if foot is not None:
                mujoco.mj_contactForce(self.model, self.data, index, force)
                totals[foot] += float(force[0])
        return list(totals.items())

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
    def sync_firmware(self, publish_clock, repeat_clock=lambda: None, period: int | None = None) -> list[str]:
        """At the start of setpoint period ``period`` of the bridges (its number: /clock time //
        robotsim_firmware.base_commands.SETPOINT_PERIOD): every lockstep link's waits before /clock,
        ``publish_clock()``, then their waits for the period's setpoints (``repeat_clock()`` sends the same
        /clock again while they wait). Returns why links left lockstep (empty: none did)."""
        firmware = [robot.firmware for robot in self.robots if robot.firmware is not None and robot.firmware.lockstep]
        problems = [problem for f in firmware if (problem := f.before_clock())]
        publish_clock()
        return problems + [problem for f in firmware if (problem := f.after_clock(repeat_clock, period))]

    def _wheel_positions(self, robot: RobotInstance) -> dict[str, float]:
        return {name: float(self.data.qpos[index]) for name, index in zip(robot.joint_names, robot.qpos_index)}

    def _apply_controls(self) -> None:
        dt = self.model.opt.timestep
        for robot in self.robots:
            if robot.firmware is not None:
                # (a free joint's angular velocity is in its body's frame: [5] is the rate about the base's z)
                self.data.ctrl[robot.wheel_actuators] = robot.firmware.step(
                    self.data.qpos[robot.wheel_qpos], self.timestep_ns, float(self.data.qvel[robot.root_dof + 5]))
            elif robot.base_controller is not None:
                targets = robot.base_controller.update(self.time, dt)
                if targets is not robot.wheel_targets:
                    robot.wheel_targets = targets
                    robot.wheel_speed_targets = [targets.wheel_speeds[w.joint] for w in robot.model.drive.driven_wheels]
                    for joint, angle in targets.steer_angles.items():
                        self.data.ctrl[robot.steer_actuators[joint]] = angle
                self.data.ctrl[robot.wheel_actuators] = robot.wheel_loop.duty(
                    robot.wheel_speed_targets, self.data.qvel[robot.wheel_dofs].tolist(), dt)
            if robot.leg_servos is not None:
                self.data.ctrl[robot.leg_motors] = robot.leg_servos.torques(self.data.qpos[robot.leg_qpos],
                                                                            self.data.qvel[robot.leg_dofs])
            if robot.arm_feedforward is not None:
                desired = robot.arm.sample(self.time)
                if desired is not None:
                    self.data.ctrl[robot.arm_actuator_ids] = robot.arm_feedforward.setpoints(self.data, desired)
            if len(robot.gripper_actuator_ids):
                desired = robot.gripper.sample(self.time)
                if desired is not None:
                    self.data.ctrl[robot.gripper_actuator_ids] = desired.positions[robot.gripper_columns]
        if self.fleet_radio is not None:  # every base controller has run this step: what each sent, for the next
            boards = self._radio_boards
            delivered = self.fleet_radio.exchange({name: f.mcu.plant.radio.sent() for name, f in boards.items()})
            for name, firmware in boards.items():
                firmware.radio_inbox = delivered[name]

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
        if self.watch.check(self.step_count, self.time_ns):  # MuJoCo reset the world: resync the controllers
            for robot in self.robots:
                self._resync_after_physics_reset(robot)
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
                                 self.data.qfrc_actuator[robot.dof_index].copy(),
                                 self._foot_forces(robot) if robot.foot_geoms else [])

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
        pose_3d = None
        if robot.leg_servos is not None:  # odom: the floor under the root at the last reset, heading along it
            origin, heading = robot.odom_origin
            turn = np.array([[math.cos(heading), math.sin(heading), 0.0], [-math.sin(heading), math.cos(heading), 0.0],
                             [0.0, 0.0, 1.0]])
            position = turn @ (self.data.xpos[body] - np.array([origin[0], origin[1], 0.0]))
            quaternion = np.empty(4)
            mujoco.mju_mulQuat(quaternion, np.array([math.cos(heading / 2), 0.0, 0.0, -math.sin(heading / 2)]),
                               self.data.xquat[body])
            pose_3d = (position, quaternion)
        return BaseStateReading(
            stamp, (odometry.x, odometry.y, odometry.yaw) if odometry else (0.0, 0.0, 0.0),
            (odometry.linear, odometry.angular) if odometry else (0.0, 0.0),
            self.data.xpos[body].copy(), self.data.xquat[body].copy(), rotation.T @ linear_world, angular_body.copy(),
            (odometry.travelled, odometry.turned) if odometry else (0.0, 0.0), pose_3d)

    def close(self) -> None:
        """Release what the simulation made: the firmware's pseudo-terminals, the capture threads (with their GL
        contexts) and the physics thread's camera renderer. Closing twice is harmless."""
        for robot in self.robots:
            robot.close()
        if self.renderer is not None:
            self.renderer.close()
            self.renderer = None

    def ground_truth_pose(self, robot: int = 0) -> tuple[np.ndarray, float]:
        """(position, yaw) of a robot's root link in the world."""
        body = self.robots[robot].root_body
        w, x, y, z = self.data.xquat[body]
        return self.data.xpos[body].copy(), quat_to_yaw(w, x, y, z)
