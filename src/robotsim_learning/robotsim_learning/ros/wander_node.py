"""Demo driver node: /scan -> Wanderer -> /cmd_vel (geometry_msgs/Twist)."""

from __future__ import annotations

import sys

import numpy as np
from geometry_msgs.msg import Twist
from rclpy.node import Node
from sensor_msgs.msg import LaserScan

from robotsim_core.ros import common as ros_common
from robotsim_core.contract import SENSOR_QOS

from ..wander import Wanderer


class WanderNode(Node):
    def __init__(self):
        super().__init__('wander')
        self.wanderer = Wanderer()
        self.publisher = self.create_publisher(Twist, 'cmd_vel', 10)
        self.create_subscription(LaserScan, 'scan', self.on_scan, ros_common.qos_profile(SENSOR_QOS))

    def on_scan(self, scan: LaserScan) -> None:
        linear, angular = self.wanderer.command(np.asarray(scan.ranges, dtype=np.float64), scan.angle_min,
                                                scan.angle_increment)
        message = Twist()
        message.linear.x, message.angular.z = linear, angular
        self.publisher.publish(message)


def main(args=None) -> int:
    return ros_common.run_node('wander', WanderNode, (), args)


if __name__ == '__main__':
    sys.exit(main())
