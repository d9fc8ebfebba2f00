"""Run monitor: the live summary of a bringup and, at the end, the run report PNG.

Watches every contract topic of every robot (raw subscriptions: counting costs no
deserialization) and prints every ``summary_period`` wall seconds: sim time, the simulator's
measured real-time factor and each topic's rate in sim time. It also keeps what the report
needs (ground truth, odometry, cmd_vel, wheel joint states, the last scan and camera frame) and
writes :func:`robotsim_sim.run_report.write_report` when it stops (Ctrl-C / SIGTERM / shutdown).
"""

from __future__ import annotations

import struct
import sys
import time

import numpy as np
from geometry_msgs.msg import Twist
from nav_msgs.msg import Odometry
from rclpy.clock import Clock, ClockType
from rclpy.node import Node
from rclpy.serialization import deserialize_message
from sensor_msgs.msg import Image, JointState, LaserScan

from robotsim_core.ros import common as ros_common
from robotsim_core.contract import resolve_topic, robot_contract
from robotsim_core.description import load_robot
from robotsim_core.errors import DescriptionError
from robotsim_core.geometry import quat_to_yaw
from robotsim_msgs.msg import SimStatus

from ..run_report import RobotTrace, write_report
from ..scene import load_world, resolve_world_path


def _seconds(stamp) -> float:
    return stamp.sec + stamp.nanosec * 1e-9


class MonitorNode(Node):
    def __init__(self):
        super().__init__('robotsim_monitor')
        self.report_path = self.declare_parameter('report', '').value
        world_name = self.declare_parameter('world', 'room').value
        namespaces = list(self.declare_parameter('namespaces', ['/']).value)
        robots = list(self.declare_parameter('robots', ['rover']).value)
        self.summary_period = float(self.declare_parameter('summary_period', 5.0).value)
        if len(namespaces) != len(robots):
            raise DescriptionError('monitor parameters', 'namespaces', f'expected one per robot ({len(robots)})')
        self.world = load_world(resolve_world_path(world_name))
        self.counts: dict[str, int] = {}
        self.traces: list[RobotTrace] = []
        self.rtf = 0.0
        self.latched: set[str] = set()  # event-driven / transient-local topics: shown as received, no rate
        for namespace, robot in zip(namespaces, robots):
            namespace = namespace.strip('/')
            self.watch_robot(namespace, load_robot(robot))
        self.last_summary = (time.monotonic(), 0.0, dict(self.counts))
        self.baseline_pending = True
        # Wall-clock period: the summary keeps coming while the simulation is paused or slow.
        self.create_timer(self.summary_period, self.print_summary, clock=Clock(clock_type=ClockType.STEADY_TIME))

    def sim_seconds(self) -> float:
        return self.get_clock().now().nanoseconds * 1e-9

    def watch_robot(self, namespace: str, model) -> None:
        trace = RobotTrace(namespace or model.name)
        self.traces.append(trace)
        contract = robot_contract(model)
        for spec in contract.topics:
            name = resolve_topic(namespace, spec.name)
            if name in self.counts:
                continue
            self.counts[name] = 0
            if not spec.rate and spec.name != 'clock':
                self.latched.add(name)
            qos = ros_common.qos_profile(spec.qos)
            qos.depth = max(qos.depth, 100)  # a busy monitor must not drop what it came to count
            self.create_subscription(ros_common.message_class(spec.type), name, self._counter(name, spec, trace),
                                     qos, raw=True)
        drive = model.drive
        wheels = {w.joint: w for w in drive.driven_wheels} if drive else {}
        stall = drive.wheel_max_torque if drive else 1.0
        now = self.sim_seconds

        def on_truth(msg: Odometry):
            pose, q = msg.pose.pose.position, msg.pose.pose.orientation
            trace.truth.append((_seconds(msg.header.stamp), pose.x, pose.y, quat_to_yaw(q.w, q.x, q.y, q.z),
                                msg.twist.twist.linear.x))

        def on_odom(msg: Odometry):
            trace.odom.append((_seconds(msg.header.stamp), msg.pose.pose.position.x, msg.pose.pose.position.y))

        def on_cmd(msg: Twist):
            trace.commands.append((now(), msg.linear.x, msg.angular.z))

        def on_joints(msg: JointState):
            index = [i for i, n in enumerate(msg.name) if n in wheels]
            if not index or len(msg.velocity) != len(msg.name):
                return
            rim = np.mean([msg.velocity[i] * wheels[msg.name[i]].radius for i in index])
            effort = np.mean([abs(msg.effort[i]) for i in index]) / stall if len(msg.effort) == len(msg.name) else np.nan
            trace.wheels.append((_seconds(msg.header.stamp), float(rim), float(effort)))

        reliable = ros_common.qos_profile(contract.topic('joint_states').qos)  # odom's too (a fixed base has none)
        self.create_subscription(Odometry, resolve_topic(namespace, 'sim/ground_truth'), on_truth, reliable)
        self.create_subscription(Odometry, resolve_topic(namespace, 'odom'), on_odom, reliable)
        self.create_subscription(Twist, resolve_topic(namespace, 'cmd_vel'), on_cmd, 10)
        self.create_subscription(JointState, resolve_topic(namespace, 'joint_states'), on_joints, reliable)
        self.create_subscription(SimStatus, resolve_topic(namespace, 'sim/status'), self.on_status, reliable)

    def _counter(self, name: str, spec, trace: RobotTrace):
        keep_scan = spec.type == 'sensor_msgs/msg/LaserScan'
        keep_image = spec.type == 'sensor_msgs/msg/Image' and name.endswith('/image_raw') and \
            not name.endswith(('depth/image_raw', 'segmentation/image_raw'))

        def callback(data: bytes) -> None:
            self.counts[name] += 1
            if self.baseline_pending and name == '/clock':
                # Rates start from the first /clock seen, not from node start (discovery takes seconds).
                sec, nanosec = struct.unpack_from('<iI' if data[1] == 1 else '>iI', data, 4)
                self.last_summary = (time.monotonic(), sec + nanosec * 1e-9, dict(self.counts))
                self.baseline_pending = False
            if keep_scan:
                trace.scan = data
            elif keep_image:
                trace.image = data
        return callback

    def on_status(self, msg: SimStatus) -> None:
        self.rtf = msg.real_time_factor

    def print_summary(self) -> None:
        if self.baseline_pending:
            print('waiting for /clock (is the simulator running?)', flush=True)
            return
        wall, sim, counts = time.monotonic(), self.sim_seconds(), dict(self.counts)
        _, last_sim, last_counts = self.last_summary
        self.last_summary = (wall, sim, counts)
        elapsed = sim - last_sim
        rates = []
        for name, count in counts.items():
            if count and name not in self.latched:
                rate = (count - last_counts.get(name, 0)) / elapsed if elapsed > 0 else 0.0
                rates.append(f'{name} {rate:.0f}')
        latched = [name for name in self.latched if counts[name]]
        silent = [name for name, count in counts.items() if not count]
        print(f'sim time {sim:7.1f} s | RTF {self.rtf:5.2f} | Hz (sim time): {", ".join(rates)}'
              + (f' | received: {", ".join(latched)}' if latched else '')
              + (f' | silent: {", ".join(silent)}' if silent else ''), flush=True)

    def write(self) -> None:
        if not self.report_path:
            return
        for trace in self.traces:  # the last raw scan / frame, decoded once
            if isinstance(trace.scan, bytes):
                scan = deserialize_message(trace.scan, LaserScan)
                ranges = np.asarray(scan.ranges, dtype=float)
                trace.scan = (scan.angle_min + scan.angle_increment * np.arange(len(ranges)), ranges)
            if isinstance(trace.image, bytes):
                image = deserialize_message(trace.image, Image)
                if image.encoding == 'rgb8':
                    trace.image = np.frombuffer(bytes(image.data), np.uint8).reshape(image.height, image.width, 3)
                else:
                    trace.image = None
        title = (f'robotsim run report: world {self.world.name}, {self.sim_seconds():.1f} s sim time, '
                 f'robots {", ".join(t.label for t in self.traces)}')
        write_report(self.report_path, self.world, self.traces, title)
        contents = '; '.join(
            f'{t.label}: {len(t.truth)} ground-truth poses, {len(t.odom)} odometry poses, {len(t.commands)} commands, '
            f'{len(t.wheels)} wheel samples, last scan {"yes" if t.scan is not None else "no"}, '
            f'camera frame {"yes" if t.image is not None else "no"}' for t in self.traces)
        print(f'run report written to {self.report_path} ({contents})', flush=True)


def main(args=None) -> int:
    return ros_common.run_node('monitor', MonitorNode, (DescriptionError,), args, finish=MonitorNode.write)


if __name__ == '__main__':
    sys.exit(main())
