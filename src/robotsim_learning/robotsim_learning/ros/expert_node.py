"""Expert driver node (simulation only): /goal_pose + /sim/ground_truth + the known world -> /cmd_vel.

The ROS adapter of :class:`robotsim_learning.expert.Expert`. It reads privileged simulator topics
(``sim/ground_truth``) and the world description, so the bringup never starts it in real mode. Goals
come on ``goal_pose`` (geometry_msgs/PoseStamped) in the robot's ``odom`` frame (or ``world``); a goal in
any other frame is refused with a warning, never misread. ``goal`` (x, y in odom) gives one at start.
"""

from __future__ import annotations

import math
import sys

import numpy as np
from geometry_msgs.msg import PoseStamped, Twist
from nav_msgs.msg import Odometry
from rclpy.node import Node

from robotsim_core.ros import common as ros_common
from robotsim_core.contract import RELIABLE_QOS
from robotsim_core.description import load_robot
from robotsim_core.errors import DescriptionError
from robotsim_sim.scene import load_world, resolve_world_path

from ..expert import Expert
from .goals import accepted_goal

COMMAND_RATE = 20.0
"""Hz of /cmd_vel (sim time)."""
STALE_AFTER = 0.5
"""Seconds of sim time without ground truth after which the robot is stopped."""


class ExpertNode(Node):
    def __init__(self):
        super().__init__('expert')
        robot = ros_common.checked_parameter(self, 'robot', 'rover')
        world_name = ros_common.checked_parameter(self, 'world', 'room')
        self.frame_prefix = ros_common.checked_parameter(self, 'frame_prefix', '')
        spawn = self.declare_parameter('spawn', [math.nan, math.nan, math.nan]).value
        goal = self.declare_parameter('goal', [math.nan, math.nan]).value
        world = load_world(resolve_world_path(world_name))
        self.expert = Expert(world, load_robot(robot))
        # odom is where the robot's odometry started: its spawn pose in the world (default: the world's).
        if any(math.isnan(v) for v in spawn):
            spawn = [world.spawn.xyz[0], world.spawn.xyz[1], world.spawn.yaw]
        self.spawn = tuple(float(v) for v in spawn)
        self.goal_world = self.odom_to_world(goal) if not any(math.isnan(v) for v in goal) else None
        self.pose = None
        self.pose_stamp = None
        self.status = ''
        self.publisher = self.create_publisher(Twist, 'cmd_vel', 10)
        self.create_subscription(PoseStamped, 'goal_pose', self.on_goal, ros_common.qos_profile(RELIABLE_QOS))
        self.create_subscription(Odometry, 'sim/ground_truth', self.on_ground_truth,
                                 ros_common.qos_profile(RELIABLE_QOS))
        self.create_timer(1.0 / COMMAND_RATE, self.tick)

    def odom_to_world(self, xy) -> np.ndarray:
        x, y, yaw = self.spawn
        c, s = math.cos(yaw), math.sin(yaw)
        return np.array([x + c * xy[0] - s * xy[1], y + s * xy[0] + c * xy[1]])

    def on_goal(self, message: PoseStamped) -> None:
        frame = message.header.frame_id
        point = accepted_goal(self, message, self.frame_prefix, other_frames=('world',))
        if point is None:
            return
        self.goal_world = np.array(point) if frame == 'world' else self.odom_to_world(point)
        self.status = ''
        self.get_logger().info(f'goal ({point[0]:.2f}, {point[1]:.2f}) in {frame}')

    def on_ground_truth(self, message: Odometry) -> None:
        q = message.pose.pose.orientation
        yaw = math.atan2(2 * (q.w * q.z + q.x * q.y), 1 - 2 * (q.y * q.y + q.z * q.z))
        self.pose = (message.pose.pose.position.x, message.pose.pose.position.y, yaw)
        self.pose_stamp = self.get_clock().now()

    def tick(self) -> None:
        command = Twist()
        fresh = self.pose_stamp is not None and \
            (self.get_clock().now() - self.pose_stamp).nanoseconds < STALE_AFTER * 1e9
        if self.goal_world is not None and fresh:
            linear, angular, status = self.expert.command(self.pose, self.goal_world)
            command.linear.x, command.angular.z = linear, angular
            if status != self.status and status == 'reached':
                self.get_logger().info('goal reached')
            elif status != self.status and status == 'no_path':  # the robot stands still: say so loudly
                x, y = self.goal_world
                self.get_logger().warning(f'no collision-free path to the goal ({x:.2f}, {y:.2f}) in world: '
                                          'standing still; send another goal_pose')
            self.status = status
        self.publisher.publish(command)


def main(args=None) -> int:
    return ros_common.run_node('expert', ExpertNode, (DescriptionError, ros_common.ParameterError), args)


if __name__ == '__main__':
    sys.exit(main())
