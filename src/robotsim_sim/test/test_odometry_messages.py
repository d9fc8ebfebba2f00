"""Encoder odometry -> /odom and /tf (robotsim_core/ros/odometry.py): the one builder the simulator and
the motor bridge share, with the covariance layout its docstring documents."""

from __future__ import annotations

import math

import pytest

from robotsim_core.description import load_robot
from nav_msgs.msg import Odometry
from rclpy.serialization import deserialize_message
from tf2_msgs.msg import TFMessage

from robotsim_core.odometry_uncertainty import UNMEASURED_VARIANCE, OdometryUncertainty
from robotsim_core.ros.odometry import OdometryEncoder
from robotsim_sim.ros.robot_messages import RobotMessages
from robotsim_sim.scene import RobotPlacement, load_world
from robotsim_sim.simulation import SimOptions, Simulation
from rostest_helpers import WORKSPACE

DIAGONAL = (0, 7, 14, 21, 28, 35)  # x, y, z, rotation about x, y, z in a row-major 6x6


def test_odometry_and_transform_of_one_state():
    odometry, tf = OdometryEncoder('r2/odom', 'r2/base_footprint').encode(1.5, -2.0, 2.5, 0.4, -0.3, 12_345_678_901,
                                                                          3.0, 4.5)
    odometry, tf = deserialize_message(odometry, Odometry), deserialize_message(tf, TFMessage)
    assert (odometry.header.frame_id, odometry.child_frame_id) == ('r2/odom', 'r2/base_footprint')
    assert (odometry.header.stamp.sec, odometry.header.stamp.nanosec) == (12, 345_678_901)
    pose, twist = odometry.pose.pose, odometry.twist.twist
    assert (pose.position.x, pose.position.y, pose.position.z) == (1.5, -2.0, 0.0)
    assert (pose.orientation.z, pose.orientation.w) == (math.sin(1.25), math.cos(1.25))
    assert pose.orientation.x == pose.orientation.y == 0.0
    assert (twist.linear.x, twist.linear.y, twist.angular.z) == (0.4, 0.0, -0.3)
    uncertainty = OdometryUncertainty()
    for covariance, variances in ((odometry.pose.covariance, uncertainty.pose_variances(3.0, 4.5)),
                                  (odometry.twist.covariance, uncertainty.twist_variances(-0.3))):
        assert [covariance[i] for i in DIAGONAL] == list(variances)
        assert all(covariance[i] == 0.0 for i in range(36) if i not in DIAGONAL)
        assert covariance[14] == covariance[21] == covariance[28] == UNMEASURED_VARIANCE  # z, roll, pitch
    assert odometry.pose.covariance[0] == pytest.approx((0.01 + 0.08 * 3.0 + 0.006 * 4.5) ** 2)
    (transform,) = tf.transforms
    assert (transform.header.frame_id, transform.child_frame_id) == ('r2/odom', 'r2/base_footprint')
    assert transform.header.stamp == odometry.header.stamp
    assert (transform.transform.translation.x, transform.transform.translation.y,
            transform.transform.translation.z) == (1.5, -2.0, 0.0)
    assert transform.transform.rotation == pose.orientation


def test_the_simulator_publishes_what_the_shared_builder_makes():
    """The sim's /odom and /tf (RobotMessages.base_state, hence also the dataset fast path) are the
    shared builder's messages for its encoder odometry: the bridge's come from the same function."""
    world = load_world(str(WORKSPACE / 'config' / 'worlds' / 'room.yaml'))
    sim = Simulation(world, [RobotPlacement(load_robot('rover'))], SimOptions(seed=3, cameras=False))
    messages = RobotMessages(sim.robots[0], 'r1/', True, sim.labels)
    encoder = OdometryEncoder('r1/odom', 'r1/base_footprint')
    compared = 0
    try:
        while sim.time_ns < 1_000_000_000:
            sim.command_base(0, 0.3, 0.6)
            for event in sim.step():
                if event.channel != 'base_state':
                    continue
                built = dict(messages.build(event.channel, event.reading, event.reading.stamp))
                odometry, tf = encoder.encode(*event.reading.odom_pose, *event.reading.odom_twist, event.reading.stamp,
                                              *event.reading.odom_travel)
                assert built['odom'] == odometry and built['tf'] == tf
                compared += 1
    finally:
        sim.close()
    assert compared >= 50 and deserialize_message(odometry, Odometry).pose.pose.position.x > 0.05  # it drove


def test_joint_states_without_the_wheels_the_motor_bridge_owns():
    """With firmware in the loop the motor bridge publishes the wheels: a robot with no other joint
    (the scout) gets a JointState of none from the simulator, stamped as the reading."""
    from sensor_msgs.msg import JointState

    world = load_world(str(WORKSPACE / 'config' / 'worlds' / 'room.yaml'))
    sim = Simulation(world, [RobotPlacement(load_robot('scout'))], SimOptions(seed=3, cameras=False))
    messages = RobotMessages(sim.robots[0], '', False, sim.labels)
    try:
        while True:
            events = [e for e in sim.step() if e.channel == 'joint_states']
            if events:
                break
        (name, data), = messages.build('joint_states', events[0].reading, events[0].reading.stamp)
    finally:
        sim.close()
    message = deserialize_message(data, JointState)
    assert name == 'joint_states' and list(message.name) == [] and list(message.position) == []
    assert message.header.stamp.nanosec == events[0].reading.stamp
