"""Straight-to-goal baseline node: /odom + /goal_pose (or ``goal`` x, y in odom) -> /cmd_vel at ``rate`` Hz.

The ROS adapter of :class:`robotsim_learning.straight.StraightToGoal`. Uses only contract topics, so it
runs in sim and on the robot; it ignores obstacles by design (a baseline). Stops the robot when
odometry is older than ``max_input_age``; a goal in another frame than odom is refused with a warning.
"""

from __future__ import annotations

import math
import sys

from geometry_msgs.msg import PoseStamped, Twist
from nav_msgs.msg import Odometry
from rclpy.node import Node

from robotsim_core.ros import common as ros_common
from robotsim_core.contract import RELIABLE_QOS

from ..observation import stamp_seconds, yaw_of
from ..straight import StraightToGoal
from .goals import accepted_goal

COMMAND_RATE = 10.0
"""Default Hz of /cmd_vel (sim time on /clock in simulation)."""


class StraightNode(Node):
    def __init__(self):
        super().__init__('straight')
        self.frame_prefix = ros_common.checked_parameter(self, 'frame_prefix', '')
        rate = ros_common.checked_parameter(self, 'rate', COMMAND_RATE, minimum=0.5, maximum=200.0)
        self.max_input_age = ros_common.checked_parameter(self, 'max_input_age', 0.5, minimum=0.01, maximum=10.0)
        goal = self.declare_parameter('goal', [math.nan, math.nan]).value
        self.goal = (float(goal[0]), float(goal[1])) if all(map(math.isfinite, goal)) else None
        self.driver = StraightToGoal()
        self.odometry: Odometry | None = None
        self.publisher = self.create_publisher(Twist, 'cmd_vel', 10)
        reliable = ros_common.qos_profile(RELIABLE_QOS)
        self.create_subscription(Odometry, 'odom', lambda m: setattr(self, 'odometry', m), reliable)
        self.create_subscription(PoseStamped, 'goal_pose', self.on_goal, reliable)
        self.create_timer(1.0 / rate, self.tick)

    def on_goal(self, message: PoseStamped) -> None:
        point = accepted_goal(self, message, self.frame_prefix)
        if point is not None:
            self.goal = point

    def tick(self) -> None:
        command = Twist()
        now = self.get_clock().now().nanoseconds * 1e-9
        odometry = self.odometry
        if self.goal is not None and odometry is not None and \
                now - stamp_seconds(odometry.header.stamp) <= self.max_input_age:
            pose = odometry.pose.pose
            command.linear.x, command.angular.z = self.driver.command(
                (pose.position.x, pose.position.y, yaw_of(pose.orientation)), self.goal)
        self.publisher.publish(command)


def main(args=None) -> int:
    return ros_common.run_node('straight', StraightNode, (ros_common.ParameterError,), args)


if __name__ == '__main__':
    sys.exit(main())
