"""Template-encoded messages (robotsim_core/ros/wire.py) are the bytes of rclpy's serializer with the
padding zeroed, for every message type the simulator and the dataset writer write, and a subscriber
receives them as the message they encode."""

from __future__ import annotations

import os
import random
import re

import pytest
import rclpy
from rclpy.serialization import deserialize_message, serialize_message
from sensor_msgs.msg import Imu

from robotsim_core.ros.wire import FixedLayout
from robotsim_learning.bag_writer import canonical_cdr_round_trip
from test_bag_writer import STORE, sample_messages, type_name


def _parent_and_key(message, path: str):
    *parents, last = re.split(r'\.', path)
    for part in parents:
        name, _, index = part.partition('[')
        message = getattr(message, name)
        if index:
            message = message[int(index[:-1])]
    return message, last


def get_field(message, path: str):
    parent, name = _parent_and_key(message, path)
    return getattr(parent, name)


def set_field(message, path: str, value) -> None:
    parent, name = _parent_and_key(message, path)
    setattr(parent, name, value)


def flat(value) -> list:
    return list(value) if hasattr(value, '__len__') and not isinstance(value, (str, bytes)) else [value]


def test_encoding_every_numeric_field_gives_rclpys_bytes_with_padding_zeroed():
    """Each sample message is encoded from a prototype whose numbers are all different (zero or
    another value): only the offsets the layout walk found can carry the sample's numbers there."""
    compared = set()
    for message in sample_messages(random.Random(9)):
        raw = serialize_message(message)
        prototype = deserialize_message(raw, type(message))
        layout = FixedLayout(prototype, [])
        for path in layout.numeric_fields:
            value = get_field(prototype, path)
            if isinstance(value, bool):
                set_field(prototype, path, not value)
            elif hasattr(value, '__len__'):
                set_field(prototype, path, [type(value[0])(1)] * len(value) if len(value) else value)
            else:
                set_field(prototype, path, type(value)(7))
        layout = FixedLayout(prototype, layout.numeric_fields)
        values = [v for path in layout.numeric_fields for v in flat(get_field(message, path))]
        assert len(values) == layout.size
        encoded = layout.encode(*values)
        assert encoded == canonical_cdr_round_trip(STORE, type_name(message), raw), type_name(message)
        assert layout.message(encoded) == deserialize_message(raw, type(message))  # float32 fields rounded alike
        compared.add(type_name(message))
    assert len(compared) >= 10, compared


def test_a_subset_of_fields_keeps_the_prototype_elsewhere():
    prototype = Imu()
    prototype.header.frame_id = 'imu_link'
    prototype.orientation_covariance[0] = 0.25
    layout = FixedLayout(prototype, ['header.stamp', 'orientation', 'linear_acceleration'])
    message = layout.message(layout.encode(3, 400, 0.1, 0.2, 0.3, 0.9, 1.0, 2.0, 9.8))
    assert (message.header.stamp.sec, message.header.stamp.nanosec, message.header.frame_id) == (3, 400, 'imu_link')
    assert (message.orientation.x, message.orientation.w) == (0.1, 0.9)
    assert (message.linear_acceleration.z, message.orientation_covariance[0]) == (9.8, 0.25)
    with pytest.raises(KeyError, match="Imu has no numeric field 'orientation.v'"):
        FixedLayout(prototype, ['orientation.v'])


def test_a_subscriber_receives_published_bytes_as_the_message():
    os.environ.setdefault('ROS_AUTOMATIC_DISCOVERY_RANGE', 'LOCALHOST')
    context = rclpy.Context()
    rclpy.init(context=context, domain_id=170 + os.getpid() % 30)
    try:
        node = rclpy.create_node('wire_test', context=context)
        received = []
        node.create_subscription(Imu, 'wire_imu', received.append, 10)
        publisher = node.create_publisher(Imu, 'wire_imu', 10)
        prototype = Imu()
        prototype.header.frame_id = 'imu_link'
        layout = FixedLayout(prototype, ['header.stamp', 'angular_velocity'])
        executor = rclpy.executors.SingleThreadedExecutor(context=context)
        executor.add_node(node)
        for attempt in range(500):  # until discovery matched the two (no wall-clock bound on a loaded machine)
            publisher.publish(layout.encode(5, attempt, 0.5, -0.5, 1.5))
            executor.spin_once(timeout_sec=0.05)
            if received:
                break
        assert received, 'nothing received'
        message = received[0]
        assert (message.header.stamp.sec, message.header.frame_id) == (5, 'imu_link')
        assert (message.angular_velocity.x, message.angular_velocity.y, message.angular_velocity.z) == (0.5, -0.5, 1.5)
        executor.shutdown()
        node.destroy_node()
    finally:
        rclpy.shutdown(context=context)


def test_a_joint_state_of_no_joints():
    """The motor bridge owns a base robot's wheel joints, so the simulator may publish a JointState with
    empty sequences (the scout with firmware in the loop); rclpy sizes those 8 bytes past their end."""
    from sensor_msgs.msg import JointState

    from robotsim_core.ros.common import JointStateEncoder
    encoded = JointStateEncoder([]).encode([], [], [], 3_000_000_004)
    message = deserialize_message(encoded, JointState)
    assert (message.header.stamp.sec, message.header.stamp.nanosec) == (3, 4)
    assert list(message.name) == list(message.position) == list(message.effort) == []
    assert encoded == bytes(STORE.serialize_cdr(STORE.deserialize_cdr(encoded, 'sensor_msgs/msg/JointState'),
                                                'sensor_msgs/msg/JointState'))


def test_latest_messages_hand_out_messages_however_they_are_read():
    """The episode loop keeps high-rate topics as the bytes the simulator published; a driver reading
    them by [], get, values or items gets the message, equal to the one encoded."""
    from robotsim_learning.ros.episode import LatestMessages
    imu = Imu()
    imu.header.frame_id = 'imu_link'
    imu.angular_velocity.z = 0.25
    latest = LatestMessages()
    latest.put_serialized('imu/data', serialize_message(imu), Imu)
    assert [type(message) for message in latest.values()] == [Imu]
    assert [(name, type(message)) for name, message in latest.items()] == [('imu/data', Imu)]
    assert latest['imu/data'] == imu and latest.get('imu/data') == imu and latest.get('scan') is None
    latest.put_serialized('imu/data', serialize_message(Imu()), Imu)  # a newer message replaces the decoded one
    assert latest['imu/data'] == Imu() and len(latest) == 1
