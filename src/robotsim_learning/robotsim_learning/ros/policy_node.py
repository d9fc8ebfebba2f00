"""Policy node: the robot's own topics -> the ONNX policy -> /cmd_vel. The same node runs on the robot.

Subscribes only to contract topics (``scan``, ``camera/image_raw`` when the policy looks at images,
``odom``, ``imu/data`` when the policy takes its heading from the IMU) and ``goal_pose`` (or a ``goal``
x, y in odom at start); nothing of the simulator. At ``rate`` Hz it takes the latest scan, the
image and odometry closest to the scan's stamp, builds the observation, runs onnxruntime (the
``providers`` parameter picks the CPU by default, TensorRT or CUDA on a Jetson) and publishes the command.
It publishes a stop instead when there is no goal, when the goal is reached, when an input is older
than ``max_input_age`` (sim or robot time) or when inference fails or is not finite, and reports
inference latency and input ages on ``/diagnostics``.
"""

from __future__ import annotations

import math
import sys
import time
from collections import deque

import numpy as np
from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus, KeyValue
from geometry_msgs.msg import PoseStamped, Twist
from nav_msgs.msg import Odometry
from rclpy.node import Node
from sensor_msgs.msg import Image, Imu, LaserScan

from robotsim_core.ros import common as ros_common
from robotsim_core.contract import RELIABLE_QOS, SENSOR_QOS
from robotsim_core.errors import DescriptionError

from ..observation import (ImuHeadingOdometry, closest_by_stamp, goal_in_base, observation_from_messages,
                          stamp_seconds, yaw_of)
from ..policy_runtime import InferenceError, PolicyFileError, policy_for_robot
from .goals import accepted_goal

COMMAND_RATE = 10.0
"""Hz of /cmd_vel by default (sim or robot time; the ``rate`` parameter)."""


class PolicyNode(Node):
    def __init__(self):
        super().__init__('policy')
        path = ros_common.checked_parameter(self, 'policy', '')
        providers = self.declare_parameter('providers', ['CPUExecutionProvider']).value
        robot = ros_common.checked_parameter(self, 'robot', 'rover')
        self.frame_prefix = ros_common.checked_parameter(self, 'frame_prefix', '')
        rate = ros_common.checked_parameter(self, 'rate', COMMAND_RATE, minimum=0.5, maximum=200.0)
        self.max_input_age = ros_common.checked_parameter(self, 'max_input_age', 0.5, minimum=0.01, maximum=10.0)
        self.goal_tolerance = ros_common.checked_parameter(self, 'goal_tolerance', 0.15, minimum=0.01, maximum=5.0)
        goal = self.declare_parameter('goal', [math.nan, math.nan]).value
        if not path:
            raise PolicyFileError("parameter 'policy': expected the path of an ONNX policy file, got ''")
        self.runtime = policy_for_robot(path, robot, tuple(providers))
        self.spec = self.runtime.spec
        self.scan: LaserScan | None = None
        self.images: deque[Image] = deque(maxlen=5)
        self.odometry: deque[Odometry] = deque(maxlen=20)
        self.estimate = ImuHeadingOdometry() if self.spec.uses_imu else None
        self.imu: Imu | None = None
        self.goal_odom = (float(goal[0]), float(goal[1])) if all(map(math.isfinite, goal)) else None
        self.latencies: deque[float] = deque(maxlen=100)
        self.last_problem = 'no input yet'
        self.stopped_for = ''
        self.publisher = self.create_publisher(Twist, 'cmd_vel', 10)
        self.diagnostics = self.create_publisher(DiagnosticArray, '/diagnostics', 10)
        sensor = ros_common.qos_profile(SENSOR_QOS)
        self.create_subscription(LaserScan, 'scan', lambda m: setattr(self, 'scan', m), sensor)
        if self.spec.uses_image:
            self.create_subscription(Image, 'camera/image_raw', lambda m: self.images.append(m), sensor)
        self.create_subscription(Odometry, 'odom', self.on_odometry, ros_common.qos_profile(RELIABLE_QOS))
        if self.estimate is not None:
            self.create_subscription(Imu, 'imu/data', self.on_imu, sensor)
        self.create_subscription(PoseStamped, 'goal_pose', self.on_goal, ros_common.qos_profile(RELIABLE_QOS))
        self.create_timer(1.0 / rate, self.tick)
        self.create_timer(1.0, self.report)
        self.get_logger().info(f'policy {path} ({self.spec.size} inputs) on {", ".join(providers)} at {rate:g} Hz')

    def on_odometry(self, message: Odometry) -> None:
        self.odometry.append(message)
        if self.estimate is not None:
            self.estimate.add_odometry(message)

    def on_imu(self, message: Imu) -> None:
        self.imu = message
        self.estimate.add_imu(message)

    def _pose(self, stamp: float) -> tuple[float, float, float]:
        """The robot in odom: the IMU-heading estimate, or the odometry closest to ``stamp``."""
        if self.estimate is not None:
            return self.estimate.pose()
        pose = closest_by_stamp(self.odometry, stamp).pose.pose
        return pose.position.x, pose.position.y, yaw_of(pose.orientation)

    def on_goal(self, message: PoseStamped) -> None:
        point = accepted_goal(self, message, self.frame_prefix)
        if point is None:
            return
        self.goal_odom = point
        self.get_logger().info(f'goal ({point[0]:.2f}, {point[1]:.2f}) in odom')

    def _stale_input(self) -> str:
        """Why the inputs cannot be used now ('' when they can): each paired message must be recent."""
        now = self.get_clock().now().nanoseconds * 1e-9
        if self.goal_odom is None:
            return 'no goal'
        if self.scan is None or now - stamp_seconds(self.scan.header.stamp) > self.max_input_age:
            return 'scan is stale'
        stamp = stamp_seconds(self.scan.header.stamp)
        image = closest_by_stamp(self.images, stamp) if self.spec.uses_image else None
        if self.spec.uses_image and (image is None or now - stamp_seconds(image.header.stamp) > self.max_input_age):
            return 'camera image is stale'
        odometry = closest_by_stamp(self.odometry, stamp)
        if odometry is None or now - stamp_seconds(odometry.header.stamp) > self.max_input_age:
            return 'odometry is stale'
        if self.estimate is not None:
            if self.imu is None or now - stamp_seconds(self.imu.header.stamp) > self.max_input_age:
                return 'imu is stale'
            if self.estimate.pose() is None:
                return self.estimate.problem
        return ''

    def tick(self) -> None:
        command = Twist()
        problem = self._stale_input()
        if not problem:
            pose = self._pose(stamp_seconds(self.scan.header.stamp))
            goal = goal_in_base(self.goal_odom, pose)
            if math.hypot(*goal) <= self.goal_tolerance:
                problem = 'goal reached'
            else:
                started = time.perf_counter()
                try:
                    vector = observation_from_messages(self.spec, self.scan, self.images, self.odometry,
                                                       self.goal_odom, pose if self.estimate is not None else None)
                    command.linear.x, command.angular.z = self.runtime.act(vector)
                except (InferenceError, ValueError) as error:
                    problem = f'inference failed: {error}'
                    command = Twist()
                self.latencies.append(time.perf_counter() - started)
        if problem != self.stopped_for:
            if problem:
                self.get_logger().warning(f'stopping the robot: {problem}') if problem != 'goal reached' \
                    else self.get_logger().info('goal reached')
            self.stopped_for = problem
        self.last_problem = problem
        self.publisher.publish(command)

    def report(self) -> None:
        status = DiagnosticStatus(name=f'{self.get_name()}: policy', hardware_id='policy')
        status.level = DiagnosticStatus.OK if not self.last_problem else DiagnosticStatus.WARN
        status.message = self.last_problem or 'driving'
        now = self.get_clock().now().nanoseconds * 1e-9
        ages = {'scan_age_s': self.scan, 'odom_age_s': self.odometry[-1] if self.odometry else None,
                'image_age_s': self.images[-1] if self.images else None, 'imu_age_s': self.imu}
        values = {name: f'{now - stamp_seconds(m.header.stamp):.3f}' if m is not None else 'none'
                  for name, m in ages.items()}
        if self.latencies:
            values['inference_ms_p50'] = f'{1000 * float(np.percentile(self.latencies, 50)):.3f}'
            values['inference_ms_p99'] = f'{1000 * float(np.percentile(self.latencies, 99)):.3f}'
        status.values = [KeyValue(key=k, value=v) for k, v in values.items()]
        array = DiagnosticArray(status=[status])
        array.header.stamp = self.get_clock().now().to_msg()
        self.diagnostics.publish(array)


def main(args=None) -> int:
    return ros_common.run_node('policy', PolicyNode, (PolicyFileError, DescriptionError, ros_common.ParameterError),
                               args)


if __name__ == '__main__':
    sys.exit(main())
