"""The policy's pose estimate with the IMU's heading (robotsim_learning.observation.ImuHeadingOdometry):
wheel odometry whose heading drifts (skid-steer scrub) is corrected by a fused IMU's orientation."""

import math

import numpy as np
from nav_msgs.msg import Odometry
from sensor_msgs.msg import Imu

from robotsim_learning.observation import ImuHeadingOdometry


def quaternion(yaw: float):
    return math.sin(yaw / 2), math.cos(yaw / 2)


def odometry_message(x: float, y: float, yaw: float) -> Odometry:
    message = Odometry()
    message.pose.pose.position.x, message.pose.pose.position.y = x, y
    message.pose.pose.orientation.z, message.pose.pose.orientation.w = quaternion(yaw)
    return message


def imu_message(yaw: float, has_orientation: bool = True) -> Imu:
    message = Imu()
    message.orientation.z, message.orientation.w = quaternion(yaw)
    if not has_orientation:
        message.orientation_covariance[0] = -1.0
    return message


def drive(every: int = 1):
    """A rover drives an S-curve; its wheel odometry overestimates every turn by 30 % (scrub), the IMU
    reports the true heading in its own world (offset 1 rad). Returns (true poses, odometry poses,
    estimates), fed every ``every``-th sample (the episode driver sees every fifth odometry message)."""
    dt, speed = 0.02, 0.3
    true = np.zeros(3)
    odometry = np.zeros(3)
    estimate = ImuHeadingOdometry()
    rows = []
    for step in range(1000):
        rate = 0.6 * math.sin(step * dt * 0.8)
        true += [speed * dt * math.cos(true[2] + rate * dt / 2), speed * dt * math.sin(true[2] + rate * dt / 2), rate * dt]
        odometry += [speed * dt * math.cos(odometry[2] + 1.3 * rate * dt / 2),
                     speed * dt * math.sin(odometry[2] + 1.3 * rate * dt / 2), 1.3 * rate * dt]
        if step % every == 0:
            estimate.add_imu(imu_message(true[2] + 1.0))
            estimate.add_odometry(odometry_message(*odometry))
            rows.append((true.copy(), odometry.copy(), estimate.pose()))
    return rows


def test_the_imu_heading_removes_the_odometry_heading_drift():
    for every in (1, 5):
        true, odometry, estimate = drive(every)[-1]
        assert abs(math.remainder(odometry[2] - true[2], math.tau)) > 0.1  # the drift this corrects
        assert np.hypot(*(odometry[:2] - true[:2])) > 0.3
        assert abs(math.remainder(estimate[2] - true[2], math.tau)) < 1e-9
        assert np.hypot(estimate[0] - true[0], estimate[1] - true[1]) < 0.02, (every, estimate, true)


def test_the_estimate_starts_at_the_odometry_pose_and_waits_for_the_imu():
    estimate = ImuHeadingOdometry()
    estimate.add_odometry(odometry_message(1.0, 2.0, 0.5))
    assert estimate.pose() is None and 'no IMU orientation' in estimate.problem
    estimate.add_imu(imu_message(-2.0))
    estimate.add_odometry(odometry_message(1.0, 2.0, 0.5))
    assert estimate.pose() == (1.0, 2.0, 0.5)


def test_an_imu_without_orientation_is_named():
    estimate = ImuHeadingOdometry()
    estimate.add_imu(imu_message(0.0, has_orientation=False))
    estimate.add_odometry(odometry_message(0.0, 0.0, 0.0))
    assert estimate.pose() is None
    assert 'orientation_covariance[0] == -1' in estimate.problem
