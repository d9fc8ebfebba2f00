"""One simulated robot's readings -> (topic, ROS message) pairs, exactly as the simulator node
publishes them.

Shared by the simulator node (which publishes the pairs) and the dataset generator's fast path
(which serializes them straight into a bag without DDS), so a dataset holds the very messages a
recording of the ROS graph holds. No rclpy node here: only message types.
"""

from __future__ import annotations

import json

import numpy as np
from nav_msgs.msg import Odometry
from geometry_msgs.msg import TransformStamped
from std_msgs.msg import String
from tf2_msgs.msg import TFMessage

from robotsim_core.contract import TopicSpec
from robotsim_core.ros.common import JointStateEncoder, message_class, stamp_fields, stamp_msg
from robotsim_core.ros.odometry import OdometryEncoder
from robotsim_core.ros.wire import FixedLayout
from robotsim_sensors.ros.converters import sensor_converter

NOT_FROM_SIMULATOR = ('clock', 'tf_static', 'robot_description')
"""Contract topics the robot's readings do not produce: /clock is the world's; the state publisher
owns the other two."""


class RobotMessages:
    """Message building for one robot of a :class:`~robotsim_sim.simulation.Simulation`.

    ``frame_prefix`` prefixes every frame id (multi-robot); ``publish_base`` False leaves /odom,
    /tf and the wheel joints to the motor bridge (firmware in the loop); ``labels`` is the
    simulation's segmentation label table."""

    def __init__(self, robot, frame_prefix: str, publish_base: bool, labels: dict[int, str]):
        model = robot.model
        self.model = model
        self.frame_prefix = frame_prefix
        self.publish_base = publish_base
        scheduled = {item.channel for item in robot.schedule}
        self.topics: list[TopicSpec] = [
            topic for topic in robot.contract.topics
            if topic.name not in NOT_FROM_SIMULATOR
            and not (topic.sensor and topic.sensor not in scheduled)          # e.g. cameras disabled
            and not (topic.name in ('odom', 'tf') and not publish_base)]      # the motor bridge owns them
        produced = {topic.name for topic in self.topics}
        self._types = {topic.name: message_class(topic.type) for topic in self.topics}
        self.publishes_odometry = 'odom' in produced
        # One converter per producing sensor, from its kind's row (robotsim_sensors.ros.converters).
        self.converters = {s.name: sensor_converter(s, self.frame(s.frame), [t for t in self.topics if t.sensor == s.name])
                           for s in model.sensors if s.name in scheduled}
        self.label_table = json.dumps({str(label): name for label, name in sorted(labels.items())})
        # Joint names on the wire are the URDF's (robot_state_publisher resolves them), not MuJoCo's
        # prefixed ones; without the wheels when the motor bridge publishes those.
        wheels = {w.joint for w in model.drive.wheels} if model.drive and not publish_base else set()
        keep = [i for i, name in enumerate(robot.joint_names) if name not in wheels]
        self.joint_names, self.joint_keep = [robot.joint_names[i] for i in keep], np.array(keep, dtype=int)
        self.joint_states = JointStateEncoder(self.joint_names)
        self.odometry = OdometryEncoder(self.frame('odom'), self.frame(model.footprint_link))
        truth = Odometry(child_frame_id=self.frame(model.footprint_link))
        truth.header.frame_id = 'world'
        self.ground_truth_layout = FixedLayout(truth, ['header.stamp', 'pose.pose', 'twist.twist'])
        self._stamp_ns, self._stamp = -1, None

    def frame(self, name: str) -> str:
        return f'{self.frame_prefix}{name}'

    def latched(self) -> list[tuple[str, object]]:
        """Messages sent once at start (the segmentation label table)."""
        return [(topic.name, String(data=self.label_table)) for topic in self.topics
                if topic.name.endswith('segmentation/labels')]

    def build(self, channel: str, reading, stamp_ns: int) -> list[tuple[str, object]]:
        """The (contract topic name, message) pairs of one reading, stamped ``stamp_ns``. A message is
        a ROS message object or, for the high-rate fixed-layout ones (IMU, odometry, TF, joint states,
        ground truth), its serialized bytes (robotsim_core.ros.wire): rclpy publishes either, and
        :meth:`message_type` turns bytes back into an object where one is needed."""
        if stamp_ns != self._stamp_ns:  # readings of one instant share their stamp message (read-only)
            self._stamp_ns, self._stamp = stamp_ns, stamp_msg(stamp_ns)
        stamp = self._stamp
        if channel == 'joint_states':
            keep = self.joint_keep
            messages = [('joint_states', self.joint_states.encode(reading.positions[keep], reading.velocities[keep],
                                                                  reading.efforts[keep], stamp_ns))]
            if reading.foot_forces:
                messages.append(('foot_contacts', self.foot_contacts(reading.foot_forces, stamp)))
            return messages
        if channel == 'base_state':
            return self.base_state(reading, stamp_ns)
        return self.converters[channel](reading, stamp)

    def legged_odometry(self, reading, stamp_ns: int) -> list[tuple[str, object]]:
        """/odom and the odom -> root transform of a legged robot: the root's true 3-D pose in odom and its twist in
        the body frame (no wheel encoders: what a perfect state estimator reports)."""
        stamp = stamp_msg(stamp_ns)
        position, (w, x, y, z) = reading.odom_pose_3d
        odometry = Odometry(child_frame_id=self.frame(self.model.footprint_link))
        odometry.header.stamp, odometry.header.frame_id = stamp, self.frame('odom')
        pose = odometry.pose.pose
        pose.position.x, pose.position.y, pose.position.z = (float(v) for v in position)
        pose.orientation.x, pose.orientation.y, pose.orientation.z, pose.orientation.w = float(x), float(y), float(z), float(w)
        twist = odometry.twist.twist
        twist.linear.x, twist.linear.y, twist.linear.z = (float(v) for v in reading.true_linear_velocity)
        twist.angular.x, twist.angular.y, twist.angular.z = (float(v) for v in reading.true_angular_velocity)
        transform = TransformStamped(child_frame_id=odometry.child_frame_id)
        transform.header = odometry.header
        transform.transform.translation.x, transform.transform.translation.y, transform.transform.translation.z = \
            pose.position.x, pose.position.y, pose.position.z
        transform.transform.rotation = pose.orientation
        return [('odom', odometry), ('tf', TFMessage(transforms=[transform]))]

    def foot_contacts(self, forces: list[tuple[str, float]], stamp):
        """/foot_contacts: per foot, whether it touches something and the normal force (N)."""
        message = self._types['foot_contacts']()
        message.header.stamp = stamp
        message.header.frame_id = self.frame(self.model.base_link)
        message.name = [foot for foot, _ in forces]
        message.in_contact = [force > 0.0 for _, force in forces]
        message.normal_force = [float(force) for _, force in forces]
        return message

    def message_type(self, topic_name: str):
        """The message class of one of :attr:`topics` (to deserialize the bytes :meth:`build` returns)."""
        return self._types[topic_name]

    def ground_truth(self, reading, stamp_ns: int) -> bytes:
        """/sim/ground_truth: the root link's true pose in ``world``, twist in the body frame."""
        w, x, y, z = reading.true_quaternion.tolist()
        return self.ground_truth_layout.encode(
            *stamp_fields(stamp_ns), *reading.true_position.tolist(), x, y, z, w,
            *reading.true_linear_velocity.tolist(), *reading.true_angular_velocity.tolist())

    def base_state(self, reading, stamp_ns: int) -> list[tuple[str, object]]:
        out = [('sim/ground_truth', self.ground_truth(reading, stamp_ns))]
        if not self.publishes_odometry:
            return out  # the motor bridge publishes odometry, or a fixed-base robot has none
        if reading.odom_pose_3d is not None:  # a legged robot: its true pose in odom (a perfect state estimator)
            return out + self.legged_odometry(reading, stamp_ns)
        # Encoder odometry: the same messages and covariances as the motor bridge's (robotsim_core.ros.odometry).
        odometry, tf = self.odometry.encode(*reading.odom_pose, *reading.odom_twist, stamp_ns, *reading.odom_travel)
        out.append(('odom', odometry))
        out.append(('tf', tf))
        return out


def world_entities_message(poses, stamp_ns: int) -> TFMessage:
    """/sim/entities: ``world`` -> each free world body, from :meth:`Simulation.world_entity_poses`
    (shared by the simulator node and the dataset generator, so both write the same messages)."""
    stamp = stamp_msg(stamp_ns)
    transforms = []
    for name, position, quaternion in poses:
        transform = TransformStamped(child_frame_id=name)
        transform.header.stamp, transform.header.frame_id = stamp, 'world'
        translation, rotation = transform.transform.translation, transform.transform.rotation
        translation.x, translation.y, translation.z = (float(v) for v in position)
        rotation.w, rotation.x, rotation.y, rotation.z = (float(v) for v in quaternion)
        transforms.append(transform)
    return TFMessage(transforms=transforms)
