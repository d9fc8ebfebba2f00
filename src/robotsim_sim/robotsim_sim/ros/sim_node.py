"""The simulator node: steps :class:`Simulation` and publishes what the real drivers publish.

A thin adapter: readings -> messages on the contract's topics with the contract's QoS, commands
and services -> simulation calls. The node runs on wall time (it *is* the clock): /clock comes
from the physics loop, and every message carries the sim time its data was taken at.

The arm's ros2_control interfaces: ``arm_controller/follow_joint_trajectory``
(control_msgs/action/FollowJointTrajectory), ``gripper_controller/gripper_cmd``
(control_msgs/action/GripperCommand) and ``arm_controller/controller_state`` per robot namespace,
beside the ``arm_controller/joint_trajectory`` topic, are served by :mod:`robotsim_sim.ros.arm_actions`. The
goal logic is ROS-free (:mod:`robotsim_sim.arm_goals`, run by the simulation at every physics step); an execute
callback is a coroutine that waits for the simulation to end its goal, so no callback ever blocks the physics
loop (one thread, the executor spun between steps).

Time across resets stays monotonic: a reset starts a new episode whose stamps continue one
step after the last published time, so /clock never goes back or repeats.
"""

from __future__ import annotations

import sys
import time
from dataclasses import dataclass, field

import rclpy
from geometry_msgs.msg import Twist, TwistStamped
from rcl_interfaces.msg import ParameterDescriptor
from rclpy.executors import SingleThreadedExecutor
from rclpy.impl.implementation_singleton import rclpy_implementation as _rclpy
from rclpy.node import Node
from rosgraph_msgs.msg import Clock
from std_msgs.msg import Float64MultiArray, String
from tf2_msgs.msg import TFMessage

from robotsim_core.run_values import default_serial_link, simulation_value_problem
from robotsim_core.contract import CLOCK_QOS, ENTITIES, LEG_COMMAND, LEG_POSITION_COMMANDS, LOCKSTEP, SCENARIO, QosSpec
from robotsim_core.description import load_robot
from robotsim_core.description.load import resolve_robot_path
from robotsim_core.description.world_spec import SpawnSpec
from robotsim_core.fleet import load_fleet, single_robot
from robotsim_core.errors import DescriptionError
from robotsim_core.ros.common import (ParameterError, checked_parameter, message_class, qos_profile, run_node,
                                      stamp_fields, stamp_msg, stamp_nanoseconds)
from robotsim_core.ros.wire import FixedLayout
from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus, KeyValue
from robotsim_firmware.base_commands import SETPOINT_PERIOD
from robotsim_firmware.host_library import FirmwareBuildError
from robotsim_firmware.in_the_loop import BUILDS
from robotsim_firmware.qemu_board import QemuError
from robotsim_firmware.virtual_serial import LinkInUseError
from robotsim_msgs.msg import LegCommand, LockstepTick, SimStatus
from robotsim_msgs.srv import GetEntityPose, InjectFault, Pause, Reset, SetEntityPose, Step
from robotsim_sensors.gl_backend import RenderUnavailable

from ..arm_controller import GripperConfig, TrajectoryConstraints
from ..rejections import PerReasonThrottle
from .. import scenario
from .arm_actions import ArmActions
from .robot_messages import RobotMessages, world_entities_message
from ..scene import RobotPlacement, load_world, resolve_world_path
from ..node_interface import PARAMETERS
from ..simulation import SimOptions, Simulation

_BUILD_NAMES = {'host': 'host build', 'qemu': 'MCU image under QEMU'}
"""How the start line names each firmware build."""

MAX_STEP_SECONDS = 60.0
"""/sim/step refuses more steps than this much sim time: the node serves nothing else meanwhile."""
STATUS_PERIOD = 0.5
"""Wall seconds between /sim/status messages (also during a long /sim/step)."""


SPIN_PERIOD = 0.005
SETPOINT_PERIOD_NS = round(SETPOINT_PERIOD * 1e9)
"""The motor bridges' setpoint period: a lockstep firmware link syncs with its bridge at each."""
"""Wall seconds between executor spins while running as fast as possible (at most; see SPIN_COST_SHARE)."""
SPIN_COST_SHARE = 20
"""A spin that took d seconds is followed by at least SPIN_COST_SHARE * d seconds of simulation."""

LOCKSTEP_HISTORY = 1000
"""In lockstep, the history of every published topic but images (20 s of 50 Hz odometry)."""
LOCKSTEP_WARN_PERIOD = 10.0
"""Wall seconds between warnings while the simulator waits for a driver's command in lockstep."""
MAX_PACE_LAG = 0.05
"""Seconds of wall time the paced simulation may run behind and still catch up (at full speed); a longer
stall is dropped rather than made up, so the simulation never runs ahead of its requested factor."""


def _link_states(bus) -> tuple[list[KeyValue], list[str]]:
    """A bus's links (robotsim_firmware.board_bus.BoardBus) as diagnostic values (frames sent, delivered, lost and
    why), and the faulted ones."""
    values, faulted = [], []
    for name, link in bus.links.items():
        c = link.counters
        values.append(KeyValue(key=f'{name} link', value=f'sent {c.sent}, delivered {c.delivered}, lost: link '
                               f'down {c.lost_link_down}, dropped {c.lost_dropped}, queue full {c.lost_queue_full}'))
        if link.down or link.drop_every:
            faulted.append(f'{name} link ' + ('down' if link.down else f'drops every {link.drop_every}'))
    return values, faulted


class CountedPublisher:
    """A publisher that counts what it sent (reported at exit: what a recording must contain)."""

    def __init__(self, publisher):
        self.publisher, self.count = publisher, 0

    def publish(self, message) -> None:
        self.publisher.publish(message)
        self.count += 1


@dataclass
class RobotPorts:
    """One robot's ROS side: its namespace, frame prefix, publishers and message building."""
    index: int
    namespace: str
    frame_prefix: str
    model: object
    pubs: dict = field(default_factory=dict)
    controller_state: object = None
    """The arm_controller/controller_state publisher (None: no arm); not a contract topic."""
    messages: RobotMessages | None = None
    """Readings -> (topic, message) pairs (shared with the dataset generator)."""
    newest: dict = field(default_factory=dict)
    """Lockstep: the stamp (ns) of the newest message published per topic (relative name)."""
    lockstep: object = None
    """Lockstep: the sim/lockstep publisher (None: not in lockstep)."""

    def frame(self, name: str) -> str:
        return f'{self.frame_prefix}{name}'

    def topic(self, name: str) -> str:
        return f'{self.namespace}/{name}' if self.namespace else name


class SimNode(Node):
    def __init__(self):
        super().__init__('robotsim_sim')
        def declare(name, default=None):
            """The parameter ``name`` of the node's table (robotsim_sim.node_interface), checked."""
            spec = PARAMETERS[name]
            if spec.simulation_value:
                return self.simulation_parameter(name, spec.default)
            return checked_parameter(self, name, spec.default if default is None else default, spec.minimum,
                                     spec.maximum)
        robot_name = declare('robot')
        namespace = declare('namespace')
        fleet_name = declare('fleet')
        self.world_name = declare('world')
        seed = declare('seed')
        self.real_time_factor = float(declare('real_time_factor'))
        cameras = declare('cameras')
        self.lockstep_rate = float(declare('lockstep_rate'))
        self.cmd_vel_stamped = declare('cmd_vel_stamped') or self.lockstep_rate > 0
        command_timeout = declare('command_timeout')
        self.clock_rate = declare('clock_rate')
        frame_prefix = declare('frame_prefix')
        self.firmware = declare('firmware')
        firmware_build = declare('firmware_build')
        if firmware_build not in BUILDS:
            raise ParameterError(f'parameter firmware_build: expected one of {", ".join(BUILDS)}, got {firmware_build!r}')
        firmware_image = declare('firmware_image')
        power_board = declare('power_board')
        firmware_lockstep = declare('firmware_lockstep')
        serial_link = declare('serial_link')
        # With firmware in the loop the motor bridge publishes odometry, its TF and the wheel joints.
        self.publish_base = declare('publish_base', not self.firmware)
        self.duration = float(declare('duration'))
        start_paused = declare('start_paused')
        log_period = declare('log_period')  # a ROS timer period

        # The arm's and gripper's action servers: ros2_control's controller parameters, same names.
        constraints = TrajectoryConstraints(
            trajectory=declare('arm_controller.constraints.trajectory'),
            goal=declare('arm_controller.constraints.goal'),
            stopped_velocity_tolerance=declare('arm_controller.constraints.stopped_velocity_tolerance'),
            goal_time=declare('arm_controller.constraints.goal_time'))
        allow_partial = declare('arm_controller.allow_partial_joints_goal')
        feedback_rate = declare('arm_controller.action_monitor_rate')
        state_rate = declare('arm_controller.state_publish_rate')
        gripper = GripperConfig(
            goal_tolerance=declare('gripper_controller.goal_tolerance'),
            stall_velocity_threshold=declare('gripper_controller.stall_velocity_threshold'),
            stall_timeout=declare('gripper_controller.stall_timeout'),
            allow_stalling=declare('gripper_controller.allow_stalling'))

        fleet = load_fleet(fleet_name) if fleet_name else single_robot(robot_name, namespace)
        if serial_link and len(fleet.robots) > 1:
            raise ParameterError('parameter serial_link: only for a single robot (a fleet uses one default link per namespace)')
        placements = [RobotPlacement(load_robot(entry.robot), entry.namespace,
                                     SpawnSpec(entry.xyz, entry.yaw) if entry.xyz is not None else None)
                      for entry in fleet.robots]
        self.serial_links = [serial_link or default_serial_link(entry.namespace) for entry in fleet.robots]
        world = load_world(resolve_world_path(self.world_name))
        self.sim = Simulation(world, placements, SimOptions(
            seed=seed, cameras=cameras, command_timeout=command_timeout, firmware=self.firmware,
            firmware_lockstep=self.firmware and firmware_lockstep, firmware_build=firmware_build,
            firmware_image=firmware_image, power_board=self.firmware and power_board,
            serial_links=self.serial_links, arm_constraints=constraints, allow_partial_joints_goal=allow_partial,
            gripper=gripper, camera_threads=True))
        self.arm_actions = ArmActions(self, feedback_rate, state_rate)
        """Every robot's arm_controller / gripper_controller actions and topics (robotsim_sim.ros.arm_actions)."""
        self.ports = [self.make_ports(index, entry, frame_prefix if len(fleet.robots) == 1 and frame_prefix
                                      else entry.frame_prefix)
                      for index, entry in enumerate(fleet.robots)]
        self.clock_pub = CountedPublisher(self.create_publisher(Clock, '/clock', qos_profile(CLOCK_QOS)))
        self.clock_layout = FixedLayout(Clock(), ['clock'])  # /clock is sent hundreds of times a second
        # The world's own topics (contract.WORLD_TOPICS): its free bodies with the ground truth, and, latched,
        # what the run is made of, so that a recording carries its world and robots (robotsim_sim.scenario).
        self.entities_pub = CountedPublisher(self.create_publisher(TFMessage, f'/{ENTITIES.name}',
                                                                   qos_profile(ENTITIES.qos)))
        self.scenario_pub = CountedPublisher(self.create_publisher(String, f'/{SCENARIO.name}',
                                                                   qos_profile(SCENARIO.qos)))
        self.scenario_pub.publish(String(data=scenario.scenario_text(
            resolve_world_path(self.world_name), [(e.namespace, resolve_robot_path(e.robot)) for e in fleet.robots],
            seed)))
        self.create_service(Pause, 'sim/pause', self.on_pause)
        self.create_service(Step, 'sim/step', self.on_step)
        self.create_service(Reset, 'sim/reset', self.on_reset)
        self.create_service(SetEntityPose, 'sim/set_entity_pose', self.on_set_entity_pose)
        self.create_service(GetEntityPose, 'sim/get_entity_pose', self.on_get_entity_pose)

        self.paused = start_paused
        self.lockstep_period_ns = round(1e9 / self.lockstep_rate) if self.lockstep_rate > 0 else 0
        self.next_decision_ns = 0
        """Lockstep: the episode's sim time (ns) of the driver's next decision."""
        self.awaited: dict[int, int] = {}
        """Lockstep: robot index -> the stamp (ns) of the decision whose command the node waits for."""
        self.drivers_matched = False
        """Lockstep: every robot's driver is subscribed to sim/lockstep and to each topic of ours it reads."""
        self.time_offset_ns = 0
        self.last_clock_ns = -1
        self.synced_period: int | None = None
        """The setpoint period whose start the lockstep links were last synced at (/clock time // the period):
        each period's once, see :meth:`advance`."""
        if self.sim.options.firmware_lockstep and SETPOINT_PERIOD_NS % self.sim.timestep_ns:
            # A period's start is then a physics step's only at common multiples: the links sync there alone.
            self.get_logger().warning(
                f'firmware lockstep: the world timestep ({self.sim.timestep_ns * 1e-9:g} s) does not divide the '
                f'bridge\'s {SETPOINT_PERIOD_NS * 1e-6:g} ms setpoint period; the link syncs only where a period '
                'starts on a physics step (use a timestep such as 0.002, 0.004 or 0.005 s)')
        self.clock_period_ns = round(1e9 / self.clock_rate)
        self.rejected_commands = 0
        self.rejections = PerReasonThrottle(period=2.0)
        self.last_status_wall = time.monotonic()
        self.measured_rtf = 0.0
        self._rtf_window = (time.monotonic(), self.sim.time_ns)
        self._pace_origin = (time.monotonic(), self.sim.time_ns)
        self.create_timer(STATUS_PERIOD, self.publish_status)
        if self.sim.fleet_radio is not None or any(robot.firmware is not None and robot.firmware.bus is not None
                                                   for robot in self.sim.robots):
            self.diagnostics_pub = self.create_publisher(DiagnosticArray, '/diagnostics', 10)
            self.create_timer(1.0, self.publish_bus_diagnostics)
        self.create_timer(log_period, self.log_progress)
        for ports, robot in zip(self.ports, self.sim.robots):
            self.get_logger().info(
                f'robot {ports.model.name} {"in /" + ports.namespace + " " if ports.namespace else ""}'
                f'in world {world.name}: {len(ports.pubs)} topics, seed {seed}, '
                f'real_time_factor {self.real_time_factor}, {"paused" if self.paused else "running"}, '
                + (f'in lockstep with its driver at {self.lockstep_rate:g} Hz, ' if self.lockstep_rate > 0 else '')
                + (f'firmware in the loop ({_BUILD_NAMES[robot.firmware.build]}) on {self.serial_links[ports.index]} -> '
                   f'{robot.firmware.link.device}' if self.firmware else 'built-in base controller'))

    def make_ports(self, index: int, entry, frame_prefix: str) -> RobotPorts:
        robot = self.sim.robots[index]
        model = robot.model
        ports = RobotPorts(index, entry.namespace, frame_prefix, model)
        # The topics this robot's readings produce (one publisher per topic, as on the robot: without
        # /odom and /tf when the motor bridge owns them) and their messages: shared with the dataset
        # generator's fast path, so both hold the same messages.
        ports.messages = RobotMessages(robot, frame_prefix, self.publish_base, self.sim.labels)
        for topic in ports.messages.topics:
            qos = topic.qos
            if self.lockstep_rate > 0:
                # In lockstep a driver waits for the newest message of each input: best effort could lose it. And a
                # reliable reader that a loaded machine holds back (an evaluation's ground truth, at many times real
                # time) loses what the history no longer holds: LOCKSTEP_HISTORY messages, except images.
                depth = qos.depth if topic.type == 'sensor_msgs/msg/Image' else max(qos.depth, LOCKSTEP_HISTORY)
                qos = QosSpec('reliable', qos.durability, depth)
            ports.pubs[topic.name] = CountedPublisher(self.create_publisher(
                message_class(topic.type), ports.topic(topic.name), qos_profile(qos)))
        if self.lockstep_rate > 0:
            ports.lockstep = self.create_publisher(LockstepTick, ports.topic(LOCKSTEP.name), qos_profile(LOCKSTEP.qos))
        for name, message in ports.messages.latched():
            ports.pubs[name].publish(message)
        twist_type = TwistStamped if self.cmd_vel_stamped else Twist
        self.create_subscription(twist_type, ports.topic('cmd_vel'), lambda msg: self.on_cmd_vel(ports, msg), 10)
        if model.legs is not None:
            self.create_subscription(Float64MultiArray, ports.topic(LEG_POSITION_COMMANDS),
                                     lambda msg: self.on_leg_command(ports, LEG_POSITION_COMMANDS, msg), 10)
            self.create_subscription(LegCommand, ports.topic(LEG_COMMAND),
                                     lambda msg: self.on_leg_command(ports, LEG_COMMAND, msg), 10)
        self.create_service(InjectFault, ports.topic('sim/inject_fault'),
                            lambda request, response: self.on_inject_fault(ports, request, response))
        self.arm_actions.serve(ports)
        return ports

    # ------------------------------------------------------------------ helpers
    def simulation_parameter(self, name: str, default):
        """``seed``, ``real_time_factor`` or ``duration``, checked as the launch arguments are."""
        value = self.declare_parameter(name, default, ParameterDescriptor(dynamic_typing=True)).value
        problem = simulation_value_problem(name, value)
        if problem:
            raise ParameterError(f'parameter {name!r}: {problem}')
        return value

    def stamp_ns(self, episode_ns: int) -> int:
        return self.time_offset_ns + episode_ns

    def total_time_ns(self) -> int:
        """Sim time on /clock now: the episodes before the last reset and this one's time."""
        return self.time_offset_ns + self.sim.time_ns

    def publish_clock(self, now_ns: int, again: bool = False) -> None:
        """/clock at ``now_ns``, once (``again``: the same time once more, for a link waiting on it)."""
        if now_ns > self.last_clock_ns or (again and now_ns == self.last_clock_ns):
            self.clock_pub.publish(self.clock_layout.encode(*stamp_fields(now_ns)))
            self.last_clock_ns = now_ns

    # ------------------------------------------------------------------ stepping
    def sync_links(self, now: int) -> None:
        """If a setpoint period of the motor bridges starts at ``now`` (ns) and its sync is not done: the lockstep
        links wait for their frames around its /clock (robotsim_firmware.virtual_serial)."""
        period, start = divmod(now, SETPOINT_PERIOD_NS)
        if not self.sim.options.firmware_lockstep or start or period == self.synced_period:
            return
        self.synced_period = period
        for problem in self.sim.sync_firmware(lambda: self.publish_clock(now), lambda: self.publish_clock(now, True),
                                              period):
            self.warn_rejection(problem, f'{problem} (sim time {now * 1e-9:.3f} s)')

    def advance(self) -> None:
        # A period starting before this step is synced first: t = 0, and an episode reset whose start (a step after
        # the last one's end) falls on a period's start. At t = 0, a bridge that said HELLO while the simulation
        # waited there has it taken before the first step, and the MCU answers within period 0, when the only
        # /clock out is t = 0 (or later ones of period 0): however late the bridge takes the /clock, it then reads
        # the answer in period 0, as the link counts it (robotsim_firmware.virtual_serial; docs/firmware.md).
        self.sync_links(self.total_time_ns())
        events = self.sim.step()
        now = self.total_time_ns()
        self.sync_links(now)
        if events or now - self.last_clock_ns >= self.clock_period_ns:
            self.publish_clock(now)  # before data stamped with this time
        if self.sim.instabilities:
            self.report_instabilities()
        for event in events:
            self.publish_event(self.ports[event.robot], event.channel, event.reading)
            if event.robot == 0 and event.channel == 'base_state':  # the world's free bodies with the ground truth
                self.entities_pub.publish(world_entities_message(self.sim.world_entity_poses(),
                                                                 self.stamp_ns(event.reading.stamp)))
        self.arm_actions.after_step()

    def deliver_captures(self) -> None:
        """Publish the camera captures still being rendered (robotsim_sim.capture): before the node stops
        stepping (a pause, the end of a step request or of the run), every image up to now is out."""
        for event in self.sim.flush():
            self.publish_event(self.ports[event.robot], event.channel, event.reading)

    def report_instabilities(self) -> None:
        for event in self.sim.take_instabilities():
            # Throttled per kind and entity: a world unstable at every step must not flood the log.
            suppressed = self.rejections.admit(f'instability {event.what} {event.entity}', time.monotonic())
            if suppressed is not None:
                self.get_logger().error(
                    f'physics unstable at sim time {self.stamp_ns(event.stamp) * 1e-9:.3f} s: {event.what} '
                    f'(degree of freedom {event.dof}, {event.entity}); MuJoCo reset every body to its initial pose '
                    f'(robots back at their spawn poses, odometry restarted there); '
                    f'{self.sim.instability_count} instabilities so far')

    def warn_rejection(self, reason: str, message: str) -> None:
        """A throttled warning per distinct reason: a flood of one kind never hides another kind."""
        suppressed = self.rejections.admit(reason, time.monotonic())
        if suppressed is not None:
            more = f' ({suppressed} more like it since the last warning)' if suppressed else ''
            self.get_logger().warning(message + more)

    def publish_event(self, ports: RobotPorts, channel: str, reading) -> None:
        stamp = self.stamp_ns(reading.stamp)
        for name, message in ports.messages.build(channel, reading, stamp):
            ports.pubs[name].publish(message)
            ports.newest[name] = stamp

    def publish_status(self) -> None:
        wall, sim_ns = time.monotonic(), self.sim.time_ns
        self.last_status_wall = wall
        start_wall, start_sim = self._rtf_window
        if wall > start_wall and not self.paused:
            self.measured_rtf = (sim_ns - start_sim) * 1e-9 / (wall - start_wall)
        self._rtf_window = (wall, sim_ns)
        status = SimStatus(
            sim_time=stamp_msg(self.stamp_ns(sim_ns)), real_time_factor=self.measured_rtf,
            target_real_time_factor=self.real_time_factor, paused=self.paused,
            step_count=self.sim.step_count, physics_timestep=self.sim.model.opt.timestep, seed=self.sim.seed)
        for ports in self.ports:
            ports.pubs['sim/status'].publish(status)

    def publish_bus_diagnostics(self) -> None:
        """Each robot's board-to-board bus: its boards' links (frames sent, delivered, lost and why) and the power
        board's relay and battery; WARN while a link is faulted or the relay is open. The fleet radio: each robot's
        link, WARN while one is faulted."""
        array = DiagnosticArray()
        array.header.stamp = stamp_msg(self.stamp_ns(self.sim.time_ns))
        if self.sim.fleet_radio is not None:
            values, faulted = _link_states(self.sim.fleet_radio)
            array.status.append(DiagnosticStatus(
                level=DiagnosticStatus.WARN if faulted else DiagnosticStatus.OK, name='fleet radio',
                hardware_id='robotsim_sim', message='; '.join(faulted) or 'ok', values=values))
        for ports, robot in zip(self.ports, self.sim.robots):
            firmware = robot.firmware
            if firmware is None or firmware.bus is None:
                continue
            links, faulted = _link_states(firmware.bus)
            values = [KeyValue(key='motor relay', value='closed' if firmware.power.relay_closed else 'open'),
                      KeyValue(key='battery mV', value=str(firmware.power.plant.battery_mv)), *links]
            problems = faulted + ([] if firmware.power.relay_closed else ["motor relay open (the motors' supply is cut)"])
            prefix = f'{ports.namespace}/' if ports.namespace else ''
            array.status.append(DiagnosticStatus(
                level=DiagnosticStatus.WARN if problems else DiagnosticStatus.OK, name=f'{prefix}board bus',
                hardware_id='robotsim_sim', message='; '.join(problems) or 'ok', values=values))
        self.diagnostics_pub.publish(array)

    # ------------------------------------------------------------------ callbacks
    def on_cmd_vel(self, ports: RobotPorts, msg) -> None:
        twist = msg.twist if self.cmd_vel_stamped else msg
        if not self.sim.command_base(ports.index, twist.linear.x, twist.angular.z):
            self.rejected_commands += 1
            self.warn_rejection(f'{ports.topic("cmd_vel")} non-finite',
                                f'rejected non-finite {ports.topic("cmd_vel")} (linear.x={twist.linear.x}, '
                                f'angular.z={twist.angular.z}); {self.rejected_commands} rejected so far')
        if self.awaited and self.awaited.get(ports.index) == stamp_nanoseconds(msg.header.stamp):
            del self.awaited[ports.index]  # lockstep: the decision this robot's driver owed

    def on_leg_command(self, ports: RobotPorts, topic: str, msg) -> None:
        if topic == LEG_POSITION_COMMANDS:
            problem = self.sim.command_leg_positions(ports.index, list(msg.data))
        else:
            problem = self.sim.command_leg_joints(ports.index, list(msg.name), list(msg.position), list(msg.velocity),
                                                  list(msg.kp), list(msg.kd), list(msg.effort))
        if problem is not None:
            self.rejected_commands += 1
            self.warn_rejection(f'{ports.topic(topic)} refused', f'refused {ports.topic(topic)}: {problem}; '
                                                                 f'{self.rejected_commands} rejected so far')

    def on_pause(self, request, response):
        if request.paused:
            self.deliver_captures()
        self.paused = request.paused
        self.publish_clock(self.total_time_ns())  # while paused, /clock shows where time stopped
        self._pace_origin = (time.monotonic(), self.sim.time_ns)
        response.success, response.paused = True, self.paused
        response.message = 'paused' if self.paused else 'running'
        return response

    def on_step(self, request, response):
        max_steps = round(MAX_STEP_SECONDS * 1e9 / self.sim.timestep_ns)
        if not self.paused:
            response.success, response.message = False, 'step is only allowed while paused (call sim/pause first)'
        elif request.steps > max_steps:
            response.success = False
            response.message = (f'steps: {request.steps} is too many: expected at most {max_steps} '
                                f'({MAX_STEP_SECONDS:g} s of sim time at {self.sim.timestep_ns * 1e-9:g} s per step); '
                                'call step repeatedly or resume with sim/pause')
        else:
            for _ in range(request.steps):
                self.advance()
                if time.monotonic() - self.last_status_wall >= STATUS_PERIOD:
                    self.publish_status()  # the status timer cannot fire while this callback runs
            self.deliver_captures()
            self.publish_clock(self.total_time_ns())
            response.success, response.message = True, f'stepped {request.steps}'
        response.sim_time = stamp_msg(self.total_time_ns())
        response.step_count = self.sim.step_count
        return response

    def on_reset(self, request, response):
        problem = simulation_value_problem('seed', int(request.seed)) if request.use_seed else None
        if problem:
            # One range of seeds everywhere: a seed the launch argument refuses cannot be replayed from it.
            response.success, response.seed = False, self.sim.seed
            response.message = f'seed: {problem}; nothing was reset'
            return response
        # Images of the ending episode still rendering were due (their stamps are at most now): out
        # with them first, as a capture in the physics thread would have been.
        self.deliver_captures()
        # The new episode's time goes on from a step after every stamp sent so far: /clock and also
        # sim/status, feedback and controller state (stamped with the sim time, which can be ahead of /clock).
        self.time_offset_ns = self.total_time_ns() + self.sim.timestep_ns
        self.sim.reset(request.seed if request.use_seed else None)
        self.next_decision_ns, self.awaited = 0, {}
        self.arm_actions.restart()  # running arm and gripper goals end with the episode
        self._pace_origin = self._rtf_window = (time.monotonic(), self.sim.time_ns)
        self.publish_clock(self.stamp_ns(0))
        response.success, response.seed = True, self.sim.seed
        response.message = f'episode reset with seed {self.sim.seed}'
        return response

    def on_set_entity_pose(self, request, response):
        p, q = request.pose.position, request.pose.orientation
        error = self.sim.set_entity_pose(request.entity, (p.x, p.y, p.z), (q.w, q.x, q.y, q.z))
        response.success, response.message = error is None, error or 'ok'
        if error:
            self.warn_rejection(f'set_entity_pose: {error}', f'refused sim/set_entity_pose: {error}')
        return response

    def on_get_entity_pose(self, request, response):
        """Ground truth of a robot's base or a free world body, in the world frame (Gazebo's get_entity_state):
        what the ROS side has no other way to observe, such as whether a dropped cube lies in its bin."""
        found = self.sim.entity_pose(request.entity)
        if isinstance(found, str):
            response.success, response.message = False, found
            self.warn_rejection(f'get_entity_pose: {found}', f'refused sim/get_entity_pose: {found}')
            return response
        position, quaternion = found
        response.pose.header.frame_id = 'world'
        response.pose.header.stamp = stamp_msg(self.total_time_ns())
        pose = response.pose.pose
        pose.position.x, pose.position.y, pose.position.z = (float(v) for v in position)
        pose.orientation.w, pose.orientation.x, pose.orientation.y, pose.orientation.z = (float(v) for v in quaternion)
        response.success, response.message = True, 'ok'
        return response

    def on_inject_fault(self, ports: RobotPorts, request, response):
        firmware = self.sim.robots[ports.index].firmware
        error = 'firmware is not in the loop (start with firmware:=true)' if firmware is None else \
            firmware.inject(request.fault, request.channel, request.value)
        response.success, response.message = error is None, error or f'{request.fault} applied'
        if error:
            self.warn_rejection(f'inject_fault: {error}', f'refused {ports.topic("sim/inject_fault")}: {error}')
        else:
            self.get_logger().info(f'fault injected: {request.fault} channel {request.channel} value {request.value}')
        return response

    # ------------------------------------------------------------------ main loop
    def report(self, wall_seconds: float, cpu_seconds: float) -> str:
        """The end-of-run line: sim time, wall time, real-time factor, the CPU time of the run (every thread of
        the process, start-up excluded) and the messages published per topic."""
        sim_seconds = self.total_time_ns() * 1e-9
        rtf = sim_seconds / wall_seconds if wall_seconds > 0 else 0.0
        publishers = [self.clock_pub, self.scenario_pub, self.entities_pub]
        publishers += [p for ports in self.ports for p in ports.pubs.values()]
        counts = ', '.join(f'{p.publisher.topic_name} {p.count}' for p in publishers)
        return (f'simulated {sim_seconds:.3f} s in {wall_seconds:.3f} s wall: real-time factor {rtf:.2f}; '
                f'{cpu_seconds:.3f} s CPU; published messages: {counts}')

    def log_progress(self) -> None:
        self.get_logger().info(f'sim time {self.total_time_ns() * 1e-9:.1f} s, real-time factor {self.measured_rtf:.2f}'
                               f'{" (paused)" if self.paused else ""}, {self.rejected_commands} rejected commands'
                               + (f', {self.sim.instability_count} physics instabilities' if self.sim.instability_count
                                  else ''))

    def lockstep_matched(self) -> bool:
        """Lockstep, before the first step: whether every robot's sim/lockstep has a subscriber, and every topic of ours
        its node reads a matched subscription (a message published before would never reach it, and the driver would
        wait for it). The driver node subscribes to sim/lockstep last, so the graph's list of its subscriptions
        holding sim/lockstep holds the others."""
        published = {p.publisher.topic_name: p.publisher for ports in self.ports for p in ports.pubs.values()}
        for ports in self.ports:
            topic = ports.lockstep.topic_name
            subscribers = self.get_subscriptions_info_by_topic(topic)
            if not subscribers:
                return False
            for subscriber in subscribers:
                if not subscriber.node_namespace.startswith('/'):
                    return False  # its node not in the graph yet (the endpoint came first)
                try:
                    reads = [name for name, _ in self.get_subscriber_names_and_types_by_node(
                        subscriber.node_name, subscriber.node_namespace)]
                except Exception:  # noqa: BLE001 (rclpy's NodeNameNonExistentError: its node is still being discovered)
                    return False
                if topic not in reads or any(published[name].get_subscription_count() == 0
                                             for name in reads if name in published):
                    return False
        return True

    def await_decisions(self, executor: SingleThreadedExecutor) -> bool:
        """Lockstep: every image up to now out, sim/lockstep published for each robot (with the stamp of the newest
        message of each topic), then callbacks served until every robot's driver sent the command stamped now.
        The same inputs reach the driver at every real-time factor and machine load, so a run's outcome does not
        depend on either (the dataset generator's fast path decides the same way, in-process). False: shut down."""
        self.deliver_captures()
        now = self.total_time_ns()
        self.publish_clock(now)
        stamp = stamp_msg(now)
        for ports in self.ports:
            names = sorted(ports.newest)
            ports.lockstep.publish(LockstepTick(stamp=stamp, topics=names,
                                                stamps=[stamp_msg(ports.newest[name]) for name in names]))
            self.awaited[ports.index] = now
        started = warned = time.monotonic()
        while self.awaited:
            if not rclpy.ok():
                return False
            executor.spin_once(timeout_sec=0.05)
            if time.monotonic() - warned >= LOCKSTEP_WARN_PERIOD:
                warned = time.monotonic()
                waiting = ', '.join(self.ports[index].topic('cmd_vel') for index in sorted(self.awaited))
                self.get_logger().warning(f'lockstep: waited {warned - started:.0f} s for the command stamped '
                                          f'{now * 1e-9:.3f} s on {waiting} (is the driver running with lockstep:=true?)')
        return True

    def run(self, executor: SingleThreadedExecutor) -> None:
        next_spin = 0.0
        # rclpy.ok() takes the context's lock (about 2 us): it is asked before each spin, not at every step.
        while True:
            if self.paused:
                if not rclpy.ok():
                    break
                executor.spin_once(timeout_sec=0.02)
                continue
            if self.lockstep_period_ns and not self.drivers_matched:
                self.drivers_matched = self.lockstep_matched()
                if not self.drivers_matched:
                    if not rclpy.ok():
                        break
                    executor.spin_once(timeout_sec=0.05)
                    continue
            self.advance()
            if self.duration > 0 and self.total_time_ns() >= self.duration * 1e9:
                self.deliver_captures()
                break
            if self.lockstep_period_ns and self.sim.time_ns >= self.next_decision_ns:
                self.next_decision_ns += self.lockstep_period_ns
                if not self.await_decisions(executor):
                    break
            now = time.monotonic()
            if now >= next_spin:
                if not rclpy.ok():
                    break
                # Serve subscriptions and services every 5 ms of wall time, or less often when a spin is
                # dear: rclpy rebuilds its wait set from every entity at each spin (0.5-1 ms for one or two
                # robots' publishers, services and action servers), so spinning takes at most 1/20 of the loop.
                executor.spin_once(timeout_sec=0.0)
                spun = time.monotonic()
                next_spin = spun + max(SPIN_PERIOD, SPIN_COST_SHARE * (spun - now))
            if self.real_time_factor > 0:
                origin_wall, origin_sim = self._pace_origin
                target = origin_wall + (self.sim.time_ns - origin_sim) * 1e-9 / self.real_time_factor
                if time.monotonic() - target > MAX_PACE_LAG:
                    # Behind after a stall (a loaded machine): the lost wall time is not made up by running
                    # faster than the requested factor afterwards; pacing resumes from here.
                    self._pace_origin = (time.monotonic() - MAX_PACE_LAG, self.sim.time_ns)
                while (delay := target - time.monotonic()) > 0 and not self.paused and rclpy.ok():
                    executor.spin_once(timeout_sec=delay)


def _run(node: SimNode) -> None:
    executor = SingleThreadedExecutor()
    executor.add_node(node)
    started, cpu_started = time.monotonic(), time.process_time()
    try:
        node.run(executor)
    except _rclpy.RCLError:
        if rclpy.ok(context=node.context):
            raise
        # Ctrl-C: rclpy's signal handler shut the context down while the loop was publishing.
    finally:
        node.get_logger().info(node.report(time.monotonic() - started, time.process_time() - cpu_started))
        node.sim.close()


def main(args=None) -> int:
    return run_node('robotsim_sim', SimNode, (DescriptionError, RenderUnavailable, ParameterError, FirmwareBuildError,
                                              LinkInUseError, QemuError), args, _run)


if __name__ == '__main__':
    sys.exit(main())
