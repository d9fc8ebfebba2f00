"""Bare-machine stand-in for robot_state_publisher (which is not on PyPI).

Same interface as the real one: URDF from the ``robot_description`` parameter (or a robot
name/path via ``robot``), publishes ``/robot_description`` and one ``/tf_static`` message
(both transient-local) for the fixed joints, and ``/tf`` for the moving joints of every
``/joint_states`` message, stamped with that message's stamp. Mimic joints follow their
leader. The sim bringup uses it in both launchers (one node graph); the real bringup names
robot_state_publisher in config/real/<robot>.yaml, and it is a drop-in replacement here too.
"""

from __future__ import annotations

import sys

import numpy as np
import transforms3d.quaternions as t3q
from rclpy.node import Node
from sensor_msgs.msg import JointState
from std_msgs.msg import String
from tf2_msgs.msg import TFMessage

from robotsim_core.contract import LATCHED_QOS, TF_QOS
from robotsim_core.description import load_robot
from robotsim_core.errors import DescriptionError
from robotsim_core.description.kinematics import joint_motion
from robotsim_core.description.urdf import tree_to_urdf, urdf_to_tree
from robotsim_core.ros import common as convert


def _transform_msg(parent, child, matrix, stamp):
    w, x, y, z = t3q.mat2quat(matrix[:3, :3])
    return convert.transform(parent, child, matrix[:3, 3], (x, y, z, w), stamp)


class StatePublisher(Node):
    def __init__(self):
        super().__init__('robot_state_publisher')
        description = self.declare_parameter('robot_description', '').value
        robot = self.declare_parameter('robot', 'rover').value
        self.frame_prefix = self.declare_parameter('frame_prefix', '').value
        if not description:
            description = tree_to_urdf(load_robot(robot).tree)
        self.tree = urdf_to_tree(description, 'robot_description parameter')
        self.moving = self.tree.moving_joints()
        self.positions: dict[str, float] = {}

        latched = convert.qos_profile(LATCHED_QOS)
        self.create_publisher(String, 'robot_description', latched).publish(String(data=description))
        static = [_transform_msg(self.frame(j.parent), self.frame(j.child), j.origin.matrix(), convert.stamp_msg(0))
                  for j in self.tree.joints.values() if j.type == 'fixed']
        self.static_pub = self.create_publisher(TFMessage, 'tf_static', latched)
        self.static_pub.publish(TFMessage(transforms=static))
        self.tf_pub = self.create_publisher(TFMessage, 'tf', convert.qos_profile(TF_QOS))
        self.create_subscription(JointState, 'joint_states', self.on_joint_states, 10)
        self.get_logger().info(f'{len(static)} static and {len(self.moving)} moving transforms of {self.tree.name}')

    def frame(self, name: str) -> str:
        return f'{self.frame_prefix}{name}'

    def on_joint_states(self, msg: JointState) -> None:
        if len(msg.position) != len(msg.name):
            return
        prefix = self.frame_prefix
        updated = set()
        for name, position in zip(msg.name, msg.position):
            name = name[len(prefix):] if prefix and name.startswith(prefix) else name
            if np.isfinite(position):
                self.positions[name] = float(position)
                updated.add(name)
        transforms = []
        for joint in self.moving:
            if joint.mimic is not None:
                if joint.mimic.joint not in updated:
                    continue
                position = joint.mimic.multiplier * self.positions[joint.mimic.joint] + joint.mimic.offset
            elif joint.name in updated:
                position = self.positions[joint.name]
            else:
                continue
            matrix = joint.origin.matrix() @ joint_motion(joint, position)
            transforms.append(_transform_msg(self.frame(joint.parent), self.frame(joint.child), matrix, msg.header.stamp))
        if transforms:
            self.tf_pub.publish(TFMessage(transforms=transforms))


def main(args=None) -> int:
    return convert.run_node('state_publisher', StatePublisher, (DescriptionError,), args)


if __name__ == '__main__':
    sys.exit(main())
