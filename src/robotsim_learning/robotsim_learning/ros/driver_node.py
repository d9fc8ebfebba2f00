"""The driver node: any driver of the table (robotsim_core.drivers) on the ROS graph -> /cmd_vel.

One node runs every driver of the base: it builds the driver's ROS-free class
(:mod:`robotsim_learning.driving`), subscribes to the topics that driver reads (``inputs``) and to
``goal_pose``, and at the driver's ``rate`` (sim time under ``use_sim_time``, robot time otherwise)
hands it the newest messages and publishes its command. The executables ``wander``, ``expert``,
``policy`` and ``straight`` are this node with that driver (``driver`` parameter); the node takes the
driver's name.

It publishes a stop instead when a goal driver has no goal, when an input is older than
``max_input_age``, and when the driver says it does not drive (goal reached, no path, a failed
inference), logging each change once; it reports its state, the input ages and the time a decision
takes (a policy: the inference time of each stage, a chained policy's perception then control) on
``/diagnostics`` every second.

Goals come on ``goal_pose`` (geometry_msgs/PoseStamped) in the robot's ``odom`` frame (a privileged
driver also takes ``world``); a goal in any other frame is refused with a warning, never misread;
``goal`` (x, y in odom) gives one at start. A privileged driver (the expert) also reads
``sim/ground_truth`` and the world description (``world``, ``spawn``: where odom is in the world),
so the bringup never starts one in real mode; the others import nothing of the simulator. ``seed``
(a whole number >= 0, default 0) is the run's seed a driver's own random choices flow from (a sampling
policy's draws): the bringup passes its ``seed:=``.
"""

from __future__ import annotations

import math
import sys
import time
from collections import deque

import numpy as np
from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus, KeyValue
from geometry_msgs.msg import PoseStamped, Twist, TwistStamped
from nav_msgs.msg import Odometry
from rclpy.node import Node
from sensor_msgs.msg import Image, Imu, LaserScan

from robotsim_core.contract import LOCKSTEP, RELIABLE_QOS, SENSOR_QOS, QosSpec
from robotsim_core.drivers import DRIVERS
from robotsim_core.errors import DescriptionError
from robotsim_core.ros import common as ros_common

from ..driving import GOAL, GROUND_TRUTH, DriveContext, Observation, RunOptions, driver_class, make_driver
from ..observation import stamp_seconds
from ..policy_runtime import PolicyFileError
from .goals import accepted_goal

INPUTS = {'scan': (LaserScan, SENSOR_QOS, 'scan'), 'camera/image_raw': (Image, SENSOR_QOS, 'camera image'),
          'odom': (Odometry, RELIABLE_QOS, 'odometry'), 'imu/data': (Imu, SENSOR_QOS, 'imu'),
          GROUND_TRUTH: (Odometry, RELIABLE_QOS, 'ground truth')}
"""Every topic a driver may read: (message type, QoS as the contract publishes it, what a log line calls it)."""


class DriverNode(Node):
    """Owns one driver, its subscriptions, its command publisher and its timers."""

    def __init__(self, preset: str = ''):
        name = preset or 'driver'
        super().__init__(name)
        driver_name = ros_common.checked_parameter(self, 'driver', preset or 'wander')
        driver_class(driver_name, "parameter 'driver'")  # one line naming the known ones if unknown
        info = DRIVERS[driver_name]
        robot = ros_common.checked_parameter(self, 'robot', 'rover')
        self.frame_prefix = ros_common.checked_parameter(self, 'frame_prefix', '')
        self.max_input_age = ros_common.checked_parameter(self, 'max_input_age', 0.5, minimum=0.01, maximum=10.0)
        goal = self.declare_parameter('goal', [math.nan, math.nan]).value
        seed = ros_common.checked_parameter(self, 'seed', 0, minimum=0)
        if info.argument == 'policy':
            path = ros_common.checked_parameter(self, 'policy', '')
            providers = tuple(self.declare_parameter('providers', ['CPUExecutionProvider']).value)
            tolerance = ros_common.checked_parameter(self, 'goal_tolerance', 0.15, minimum=0.01, maximum=5.0)
            shield = ros_common.checked_parameter(self, 'shield', True)
            if not path:
                raise PolicyFileError("parameter 'policy': expected the path of an ONNX policy file, got ''")
            self.driver = make_driver(f'{driver_name}:{path}', "parameter 'driver'", RunOptions(shield=shield),
                                      providers=providers, robot=robot, goal_tolerance=tolerance)
        else:
            self.driver = make_driver(driver_name, "parameter 'driver'")
        self.goal_driver = info.goal
        rate = ros_common.checked_parameter(self, 'rate', float(self.driver.rate), minimum=0.5, maximum=200.0)
        self.lockstep = ros_common.checked_parameter(self, 'lockstep', False)
        """Decide when the simulator says a decision is due (sim/lockstep), on exactly the messages it names, and
        answer with a TwistStamped carrying its stamp; the simulator waits for it (its lockstep_rate is ``rate``)."""
        self.pending = None
        """Lockstep: (stamp ns, {topic: stamp ns of its newest message}) of the decision due, until it is made."""
        self.world = self.spawn = None
        if self.driver.privileged:
            from robotsim_core.description import load_robot  # the simulator's world: privileged drivers only
            from robotsim_sim.scene import load_world, resolve_world_path
            self.world = load_world(resolve_world_path(ros_common.checked_parameter(self, 'world', 'room')))
            spawn = self.declare_parameter('spawn', [math.nan, math.nan, math.nan]).value
            if any(math.isnan(v) for v in spawn):  # odom is where the robot's odometry started: its spawn
                spawn = [self.world.spawn.xyz[0], self.world.spawn.xyz[1], self.world.spawn.yaw]
            self.spawn = tuple(float(v) for v in spawn)
            model = load_robot(robot)
            context = DriveContext(lambda: model, seed)
        else:
            context = DriveContext(lambda: None, seed)
        self.driver.reset(context)
        self.latest: dict[str, object] = {}
        self.updated: set[str] = set()
        if all(map(math.isfinite, goal)):
            self._set_goal(float(goal[0]), float(goal[1]))
        self.latencies: deque[float] = deque(maxlen=100)
        self.stopped_for = ''
        self.ticks = {'decided': 0, 'stale': 0, 'waiting': 0, 'other': 0}
        """Timer ticks by what happened: the driver decided on fresh inputs; an input was stale; an input had not
        come yet (or no goal); the driver stood still for its own reason (goal reached, gave up). Printed at exit
        (:meth:`tick_report`): an evaluation reads from it whether the driver kept up."""
        self.publisher = self.create_publisher(TwistStamped if self.lockstep else Twist, 'cmd_vel', 10)
        self.diagnostics = self.create_publisher(DiagnosticArray, '/diagnostics', 10)
        for topic in self.driver.inputs:
            message_type, qos, _ = INPUTS[topic]
            if self.lockstep:  # the simulator publishes them reliably then: every newest message is waited for
                qos = QosSpec('reliable', qos.durability, qos.depth)
            self.create_subscription(message_type, topic, lambda m, t=topic: self._received(t, m),
                                     ros_common.qos_profile(qos))
        if self.goal_driver:
            self.create_subscription(PoseStamped, GOAL, self.on_goal, ros_common.qos_profile(RELIABLE_QOS))
        if self.lockstep:
            from robotsim_msgs.msg import LockstepTick
            self.create_subscription(LockstepTick, LOCKSTEP.name, self.on_lockstep, ros_common.qos_profile(LOCKSTEP.qos))
        else:
            self.create_timer(1.0 / rate, self.tick)
        self.create_timer(1.0, self.report)
        self.get_logger().info(f'driver {driver_name}: {self.driver.describe()} at {rate:g} Hz, reading '
                               f'{", ".join(self.driver.inputs + ((GOAL,) if self.goal_driver else ()))}')

    def _received(self, topic: str, message) -> None:
        self.latest[topic] = message
        self.updated.add(topic)
        if self.pending is not None:
            self._decide_pending()

    def on_lockstep(self, message) -> None:
        stamps = {topic: ros_common.stamp_nanoseconds(stamp) for topic, stamp in zip(message.topics, message.stamps)}
        self.pending = (ros_common.stamp_nanoseconds(message.stamp), stamps)
        self._decide_pending()

    def _decide_pending(self) -> None:
        """Lockstep: decide once the newest message of every input the simulator published has come."""
        stamp_ns, stamps = self.pending
        for topic in self.driver.inputs:
            expected = stamps.get(topic)
            message = self.latest.get(topic)
            if expected is not None and (message is None or ros_common.stamp_nanoseconds(message.header.stamp) < expected):
                return
        self.pending = None
        command = self.decide(stamp_ns)
        message = TwistStamped()
        message.header.stamp = ros_common.stamp_msg(stamp_ns)
        message.twist.linear.x, message.twist.angular.z = float(command[0]), float(command[1])
        self.publisher.publish(message)

    def _set_goal(self, x: float, y: float) -> None:
        """A goal (x, y) in odom, as the drivers read it."""
        message = PoseStamped()
        message.header.frame_id = self.frame_prefix + 'odom'
        message.header.stamp = self.get_clock().now().to_msg()
        message.pose.position.x, message.pose.position.y = x, y
        self._received(GOAL, message)

    def _odom_in_world(self, x: float, y: float, inverse: bool = False) -> tuple[float, float]:
        sx, sy, yaw = self.spawn
        c, s = math.cos(yaw), math.sin(yaw)
        if inverse:  # world -> odom
            dx, dy = x - sx, y - sy
            return c * dx + s * dy, -s * dx + c * dy
        return sx + c * x - s * y, sy + s * x + c * y

    def on_goal(self, message: PoseStamped) -> None:
        frame = message.header.frame_id
        other = ('world',) if self.driver.privileged else ()
        point = accepted_goal(self, message, self.frame_prefix, other_frames=other)
        if point is None:
            return
        self._set_goal(*(self._odom_in_world(*point, inverse=True) if frame == 'world' else point))
        self.stopped_for = 'a new goal'  # the next state, whatever it is, is logged
        self.get_logger().info(f'goal ({point[0]:.2f}, {point[1]:.2f}) in {frame}')

    def _stale_input(self, now: float) -> str:
        """Why the inputs cannot be used now ('' when they can): a goal, and every input recent."""
        if self.goal_driver and GOAL not in self.latest:
            return 'no goal'
        for topic in self.driver.inputs:
            message = self.latest.get(topic)
            if message is None:
                return f'waiting for the first {INPUTS[topic][2]} message'
            if now - stamp_seconds(message.header.stamp) > self.max_input_age:
                return f'{INPUTS[topic][2]} is stale'
        return ''

    def tick(self) -> None:
        command = self.decide(self.get_clock().now().nanoseconds)
        message = Twist()
        message.linear.x, message.angular.z = float(command[0]), float(command[1])
        self.publisher.publish(message)

    def decide(self, now_ns: int) -> tuple[float, float]:
        """The command at ``now_ns`` (sim or robot time): the driver's, or a stop (no goal, an input missing or stale,
        the driver standing still); counted in the ticks."""
        now = now_ns * 1e-9
        problem = self._stale_input(now)
        command = (0.0, 0.0)
        if problem:
            self.ticks['stale' if problem.endswith(' is stale') else 'waiting'] += 1
        else:
            observation = Observation(now_ns, self.latest, set(self.updated))
            if self.driver.privileged:
                goal = self.latest[GOAL].pose.position if GOAL in self.latest else None
                observation.ground_truth, observation.world = self.latest.get(GROUND_TRUTH), self.world
                observation.goal_in_world = None if goal is None else self._odom_in_world(goal.x, goal.y)
            self.updated.clear()
            started = time.perf_counter()
            decided = self.driver.act(observation)
            self.latencies.append(time.perf_counter() - started)
            problem = self.driver.status
            if decided is None:
                problem = f'{self.driver.status or "the driver gave up"}: standing still' + \
                    ('; send another goal_pose' if self.goal_driver else '')
                self.ticks['other'] += 1
            else:
                command = decided
                self.ticks['decided'] += 1
        self._say(problem)
        return command

    def _say(self, problem: str) -> None:
        """Log a change of state once: a stop as a warning; goal reached, waiting to start as information."""
        if problem != self.stopped_for:
            if problem == 'goal reached' or problem == 'no goal' or problem.startswith('waiting for'):
                self.get_logger().info(problem)
            elif 'standing still' in problem:
                self.get_logger().warning(problem)
            elif problem:
                self.get_logger().warning(f'stopping the robot: {problem}')
            self.stopped_for = problem

    def report(self) -> None:
        status = DiagnosticStatus(name=f'{self.get_name()}: driver', hardware_id=self.get_name())
        quiet = ('', 'goal reached', 'no goal', 'a new goal')
        status.level = DiagnosticStatus.OK if self.stopped_for in quiet or self.stopped_for.startswith('waiting for') \
            else DiagnosticStatus.WARN
        status.message = self.stopped_for or 'driving'
        now = self.get_clock().now().nanoseconds * 1e-9
        values = {f'{topic}_age_s': f'{now - stamp_seconds(m.header.stamp):.3f}' if (m := self.latest.get(topic))
                  is not None else 'none' for topic in self.driver.inputs}
        if self.latencies:
            values['decision_ms_p50'] = f'{1000 * float(np.percentile(self.latencies, 50)):.3f}'
            values['decision_ms_p99'] = f'{1000 * float(np.percentile(self.latencies, 99)):.3f}'
        runtime = getattr(self.driver, 'runtime', None)
        if runtime is not None:  # a policy: inference time per stage (a chained policy's perception, then control)
            stages = ([('perception', runtime.perceive.seconds)] if runtime.perceive is not None else []) \
                + [('control', runtime.seconds)]
            for stage, seconds in stages:
                if seconds:
                    values[f'{stage}_ms_p50'] = f'{1000 * float(np.percentile(seconds, 50)):.3f}'
                    values[f'{stage}_ms_p99'] = f'{1000 * float(np.percentile(seconds, 99)):.3f}'
        shield = getattr(self.driver, 'shield', None)
        if shield is not None:  # the policy's velocity shield: how often it slowed or stopped the policy's command
            values['shield_limited'] = f'{shield.limited} of {shield.checked}'
            values['stall_recoveries'] = str(self.driver.recovery.recoveries)
        status.values = [KeyValue(key=k, value=v) for k, v in values.items()]
        array = DiagnosticArray(status=[status])
        array.header.stamp = self.get_clock().now().to_msg()
        self.diagnostics.publish(array)


    def tick_report(self) -> str:
        t = self.ticks
        shield = getattr(self.driver, 'shield', None)
        return (f'{self.get_name()}: ticks {sum(t.values())}: decided {t["decided"]}, stale input {t["stale"]}, '
                f'waiting for inputs {t["waiting"]}, standing still {t["other"]}'
                + (f'; shield limited {shield.limited} of {shield.checked} commands' if shield is not None else ''))


REFUSED = (PolicyFileError, DescriptionError, ros_common.ParameterError, ValueError)
"""Errors at start that are one line and exit status 2 (a bad file, robot, world or parameter)."""


def main(args=None, preset: str = '') -> int:
    # The tick counts at exit (stdout: the logger may be gone with the context by then).
    return ros_common.run_node(preset or 'driver', lambda: DriverNode(preset), REFUSED, args,
                               finish=lambda node: print(node.tick_report(), flush=True))


def wander(args=None) -> int:
    return main(args, 'wander')


def expert(args=None) -> int:
    return main(args, 'expert')


def policy(args=None) -> int:
    return main(args, 'policy')


def straight(args=None) -> int:
    return main(args, 'straight')


if __name__ == '__main__':
    sys.exit(main())
