"""Jerk-limited time parameterisation of arm paths (robotsim_core.arm.timing, ruckig): the sampled
profiles never exceed the description's velocity, acceleration and jerk limits, start and end
exactly on the path, stop exactly at every waypoint, move on straight joint-space lines between
them, and bad requests are refused with one line naming the field."""

from __future__ import annotations

import math

import numpy as np
import pytest
import yaml

from robotsim_core.arm.timing import (JointMotionLimits, TimedTrajectory, TrajectoryInputError,
                                      joint_limits_from_model, time_parameterize)
from robotsim_core.description import load_robot
from robotsim_core.description.model import DEFAULT_ACCELERATION_PER_VELOCITY, DEFAULT_JERK_PER_ACCELERATION
from robotsim_core.description.urdf import tree_to_urdf

from test_description_errors import assert_clean_error, describe
from test_robot_import import needs_example_robots
from rostest_helpers import WORKSPACE

ROBOTS = WORKSPACE / 'config' / 'robots'
# Round-off allowance on the limit checks: ruckig's profiles touch the limits exactly, and the
# finite-difference jerk of exact samples equals the true jerk only up to floating-point error.
LIMIT_TOLERANCE = 1e-9
JERK_TOLERANCE = 1e-6


def arm_limits(robot: str) -> tuple[JointMotionLimits, ...]:
    model = load_robot(str(ROBOTS / f'{robot}.yaml'))
    return joint_limits_from_model(model, model.arms[0].joints)


def random_path(limits, rng: np.random.Generator, count: int) -> list[np.ndarray]:
    lower = np.array([joint.lower for joint in limits])
    upper = np.array([joint.upper for joint in limits])
    return [rng.uniform(lower, upper) for _ in range(count)]


def check_trajectory(trajectory: TimedTrajectory, waypoints, limits) -> None:
    """Every property the module promises, on the samples themselves."""
    dt = trajectory.dt
    velocity = np.array([joint.velocity for joint in limits])
    acceleration = np.array([joint.acceleration for joint in limits])
    jerk = np.array([joint.jerk for joint in limits])
    samples = len(trajectory.time_from_start)
    assert trajectory.positions.shape == trajectory.velocities.shape == trajectory.accelerations.shape \
        == (samples, len(limits))
    # A uniform grid from 0.
    np.testing.assert_array_equal(trajectory.time_from_start, np.arange(samples) * dt)

    # Limits: |v| <= v_max, |a| <= a_max, |finite-difference jerk| <= j_max, positions inside.
    assert np.all(np.abs(trajectory.velocities) <= velocity * (1 + LIMIT_TOLERANCE))
    assert np.all(np.abs(trajectory.accelerations) <= acceleration * (1 + LIMIT_TOLERANCE))
    if samples > 1:
        sampled_jerk = np.diff(trajectory.accelerations, axis=0) / dt
        assert np.all(np.abs(sampled_jerk) <= jerk * (1 + JERK_TOLERANCE))
    assert np.all(trajectory.positions >= [joint.lower for joint in limits])
    assert np.all(trajectory.positions <= [joint.upper for joint in limits])

    # The three columns are one motion: integrating a and v over each sample period gives the next
    # v and p (Hermite rule, exact for the quadratic velocity of a constant-jerk phase; a jerk switch
    # inside the period costs O(j dt^3)).
    if samples > 1:
        p, v, a = trajectory.positions, trajectory.velocities, trajectory.accelerations
        predicted_p = p[:-1] + dt / 2 * (v[:-1] + v[1:]) + dt ** 2 / 12 * (a[:-1] - a[1:])
        predicted_v = v[:-1] + dt / 2 * (a[:-1] + a[1:])
        assert np.abs(predicted_p - p[1:]).max() <= jerk.max() * dt ** 3
        assert np.abs(predicted_v - v[1:]).max() <= jerk.max() * dt ** 2

    # Endpoints and every waypoint exact, at rest, in order.
    assert len(trajectory.waypoint_indices) == len(waypoints)
    assert trajectory.waypoint_indices[0] == 0 and trajectory.waypoint_indices[-1] == samples - 1
    assert list(trajectory.waypoint_indices) == sorted(trajectory.waypoint_indices)
    for index, waypoint in zip(trajectory.waypoint_indices, waypoints):
        np.testing.assert_array_equal(trajectory.positions[index], waypoint)
        np.testing.assert_array_equal(trajectory.velocities[index], 0.0)
        np.testing.assert_array_equal(trajectory.accelerations[index], 0.0)

    # Between two waypoints the motion stays on their straight joint-space line, moving forward
    # (what a planner checked for collisions is what is executed).
    for start, end in zip(trajectory.waypoint_indices[:-1], trajectory.waypoint_indices[1:]):
        origin, step = trajectory.positions[start], trajectory.positions[end] - trajectory.positions[start]
        segment = trajectory.positions[start:end + 1]
        if not np.any(step):
            assert end == start
            continue
        progress = (segment - origin) @ step / (step @ step)
        assert np.abs(segment - (origin + np.outer(progress, step))).max() < 1e-9
        assert np.all(np.diff(progress) >= -1e-12)
        assert progress[0] == 0.0 and progress[-1] == pytest.approx(1.0, abs=1e-12)


@pytest.mark.parametrize('robot', ['rover', pytest.param('ur5', marks=needs_example_robots),
                                   pytest.param('panda', marks=needs_example_robots)])
def test_random_paths_respect_every_limit_and_pass_every_waypoint(robot):
    limits = arm_limits(robot)
    rng = np.random.default_rng(20261130)
    for trial in range(30):
        waypoints = random_path(limits, rng, count=2 + trial % 5)
        dt = (0.002, 0.01, 0.033)[trial % 3]
        trajectory = time_parameterize(waypoints, limits, dt=dt)
        check_trajectory(trajectory, waypoints, limits)
        assert trajectory.dt == dt


def test_long_moves_use_the_limits_they_are_given():
    """Not merely under the limits: a long single-joint move reaches its velocity, acceleration and
    jerk limits (so the limits come through), and tighter limits make it slower."""
    limits = arm_limits('rover')
    start, goal = np.zeros(len(limits)), np.zeros(len(limits))
    start[0], goal[0] = limits[0].lower, limits[0].upper
    trajectory = time_parameterize([start, goal], limits, dt=0.001)
    assert np.abs(trajectory.velocities[:, 0]).max() == pytest.approx(limits[0].velocity, rel=1e-9)
    assert np.abs(trajectory.accelerations[:, 0]).max() == pytest.approx(limits[0].acceleration, rel=1e-9)
    assert np.abs(np.diff(trajectory.accelerations[:, 0]) / 0.001).max() == pytest.approx(limits[0].jerk, rel=1e-6)
    # Distance / v_max plus the time lost ramping up and down (a/j + v/a for an S-curve).
    distance = limits[0].upper - limits[0].lower
    ideal = distance / limits[0].velocity + limits[0].velocity / limits[0].acceleration \
        + limits[0].acceleration / limits[0].jerk
    assert trajectory.duration == pytest.approx(ideal, abs=0.001)

    slow = [JointMotionLimits(j.name, j.lower, j.upper, j.velocity, j.acceleration / 4, j.jerk / 4) for j in limits]
    slower = time_parameterize([start, goal], slow, dt=0.001)
    check_trajectory(slower, [start, goal], slow)
    assert slower.duration > trajectory.duration + 0.5
    assert np.abs(slower.accelerations[:, 0]).max() == pytest.approx(slow[0].acceleration, rel=1e-9)


def test_degenerate_paths():
    limits = arm_limits('rover')
    home = np.zeros(len(limits))
    single = time_parameterize([home], limits)
    assert single.duration == 0.0 and single.positions.shape == (1, len(limits)) and single.waypoint_indices == (0,)
    target = np.full(len(limits), 0.5)
    repeated = time_parameterize([home, home, target, target], limits)
    check_trajectory(repeated, [home, home, target, target], limits)
    assert repeated.waypoint_indices[:2] == (0, 0) and repeated.waypoint_indices[2] == repeated.waypoint_indices[3]
    # Round-off just outside a limit (a position read back from a simulator) is moved onto the limit.
    edge = home.copy()
    edge[1] = limits[1].upper + 5e-10
    clamped = time_parameterize([home, edge], limits)
    assert clamped.positions[-1, 1] == limits[1].upper
    # Waypoints as one numpy array work the same as a list of lists.
    as_array = time_parameterize(np.array([home, target]), limits)
    as_lists = time_parameterize([home.tolist(), target.tolist()], limits)
    np.testing.assert_array_equal(as_array.positions, as_lists.positions)


def test_limits_come_from_the_description_with_derived_defaults(tmp_path):
    """The rover's YAML gives velocity only: acceleration and jerk are derived. A YAML that gives them
    has them used, and the URDF (which has no such fields) is the same either way."""
    rover = load_robot(str(ROBOTS / 'rover.yaml'))
    limits = joint_limits_from_model(rover, rover.arms[0].joints)
    for joint in limits:
        assert joint.acceleration == DEFAULT_ACCELERATION_PER_VELOCITY * joint.velocity
        assert joint.jerk == DEFAULT_JERK_PER_ACCELERATION * joint.acceleration
        assert math.isfinite(joint.lower) and math.isfinite(joint.upper)

    data = yaml.safe_load((ROBOTS / 'rover.yaml').read_text())
    data['arms'][0]['joints'][1].update(acceleration=1.5, jerk=6.0)
    data['arms'][0]['joints'][2].update(acceleration=3.0)
    path = tmp_path / 'rover_limits.yaml'
    path.write_text(yaml.safe_dump(data))
    custom = load_robot(str(path))
    custom_limits = joint_limits_from_model(custom, custom.arms[0].joints)
    assert (custom_limits[1].acceleration, custom_limits[1].jerk) == (1.5, 6.0)
    assert (custom_limits[2].acceleration, custom_limits[2].jerk) == (3.0, 30.0)
    assert custom_limits[0] == limits[0]
    assert tree_to_urdf(custom.tree) == tree_to_urdf(rover.tree)

    start, goal = np.zeros(4), np.zeros(4)
    start[1], goal[1] = -1.5, 1.5
    trajectory = time_parameterize([start, goal], custom_limits, dt=0.002)
    check_trajectory(trajectory, [start, goal], custom_limits)
    assert np.abs(trajectory.accelerations[:, 1]).max() == pytest.approx(1.5, rel=1e-9)


@needs_example_robots
def test_imported_urdf_arms_get_limits_from_their_urdf():
    ur5 = load_robot('ur5')
    limits = joint_limits_from_model(ur5, ur5.arms[0].joints)
    urdf_velocity = {joint.name: joint.limit.velocity for joint in ur5.tree.moving_joints()}
    assert [joint.velocity for joint in limits] == [urdf_velocity[name] for name in ur5.arms[0].joints]
    assert all(joint.acceleration == DEFAULT_ACCELERATION_PER_VELOCITY * joint.velocity > 0 for joint in limits)


ROVER_JOINTS = 'arm_base_joint, arm_shoulder_joint, arm_elbow_joint, arm_wrist_joint'


@pytest.mark.parametrize('waypoints, dt, field, expected', [
    ([[0, 0, 0, 0], [0.1, 0.2, 0.3]], 0.01, 'waypoints[1]',
     f'expected 4 positions, one per joint ({ROVER_JOINTS}), got 3 value(s)'),
    ([[0, 0, 0, 0], [0, 0, 0, 0, 0]], 0.01, 'waypoints[1]', 'expected 4 positions'),
    ([[0, 0, 0, 0], [[0, 0], [0, 0]]], 0.01, 'waypoints[1]', 'got an array of shape (2, 2)'),
    ([[0, 0, 0, 0], [0, float('nan'), 0, 0]], 0.01, 'waypoints[1][1]',
     "expected a finite position for joint 'arm_shoulder_joint', got nan"),
    ([[0, 0, 0, float('inf')]], 0.01, 'waypoints[0][3]', 'expected a finite position'),
    ([[0, 0, 0, 0], [0, 2.0, 0, 0]], 0.01, 'waypoints[1][1]',
     "position 2 of joint 'arm_shoulder_joint' is outside its limits [-1.57, 1.57]"),
    ([[-3.0, 0, 0, 0], [0, 0, 0, 0]], 0.01, 'waypoints[0][0]', 'is outside its limits [-2.9, 2.9]'),
    ([[0, 0, 0, 0], ['a', 0, 0, 0]], 0.01, 'waypoints[1]', 'expected 4 numbers'),
    ([], 0.01, 'waypoints', 'expected at least one waypoint, got none'),
    (None, 0.01, 'waypoints', 'expected a list of waypoints, got None'),
    ([[0, 0, 0, 0]], 0.0, 'dt', 'expected a sample period from 1e-06 to 1 s, got 0.0'),
    ([[0, 0, 0, 0]], float('nan'), 'dt', 'expected a sample period'),
    ([[0, 0, 0, 0]], True, 'dt', 'expected a sample period from 1e-06 to 1 s, got True'),
    ([[0, 0, 0, 0]], '0.01', 'dt', "got '0.01'"),
    ([[-2.9, 0, 0, 0], [2.9, 0, 0, 0]], 1e-6, 'dt', 'gives more than 1,000,000 samples'),
])
def test_bad_requests_are_one_clear_line(waypoints, dt, field, expected):
    with pytest.raises(TrajectoryInputError) as raised:
        time_parameterize(waypoints, arm_limits('rover'), dt=dt)
    message = str(raised.value)
    assert '\n' not in message
    assert raised.value.field == field and message.startswith(f'{field}: '), message
    assert expected in message, message


def test_bad_limits_and_joint_names_are_one_clear_line():
    rover = load_robot(str(ROBOTS / 'rover.yaml'))
    cases = [
        (lambda: joint_limits_from_model(rover, ['arm_base_joint', 'elbow']), 'joint_names[1]',
         "unknown joint 'elbow': expected a moving joint of robot 'rover'"),
        (lambda: joint_limits_from_model(rover, ['arm_base_joint', 'arm_base_joint']), 'joint_names',
         'expected each joint once'),
        (lambda: time_parameterize([[0]], [JointMotionLimits('j', -1, 1, 0.0, 1, 1)]), 'limits[0].velocity',
         "expected a finite number > 0 for joint 'j', got 0.0"),
        (lambda: time_parameterize([[0]], [JointMotionLimits('j', -1, 1, 1, math.inf, 1)]), 'limits[0].acceleration',
         'expected a finite number > 0'),
        (lambda: time_parameterize([[0]], [JointMotionLimits('j', 1, -1, 1, 1, 1)]), 'limits[0]',
         "expected lower <= upper for joint 'j', got [1, -1]"),
        (lambda: time_parameterize([[0]], []), 'limits', 'expected at least one joint'),
    ]
    for call, field, expected in cases:
        with pytest.raises(TrajectoryInputError) as raised:
            call()
        assert str(raised.value).startswith(f'{field}: ') and expected in str(raised.value), str(raised.value)
        assert '\n' not in str(raised.value)


def test_a_joint_without_a_velocity_limit_is_named(tmp_path):
    """A continuous URDF joint with velocity="0" cannot be timed: the error names it."""
    urdf = tmp_path / 'spinner.urdf'
    urdf.write_text("""<robot name="spinner">
  <link name="base_link"><inertial><mass value="1"/>
    <inertia ixx="0.01" iyy="0.01" izz="0.01" ixy="0" ixz="0" iyz="0"/></inertial></link>
  <link name="rotor"><inertial><mass value="0.1"/>
    <inertia ixx="0.001" iyy="0.001" izz="0.001" ixy="0" ixz="0" iyz="0"/></inertial></link>
  <joint name="spin" type="continuous"><parent link="base_link"/><child link="rotor"/><axis xyz="0 0 1"/>
    <limit effort="1" velocity="0"/></joint>
</robot>
""")
    overlay = tmp_path / 'spinner.yaml'
    overlay.write_text(f'urdf: {urdf}\nname: spinner\nbase_link: base_link\nmount: {{xyz: [0, 0, 0]}}\n'
                       'arms:\n  - name: arm\n    joints: [spin]\n')
    model = load_robot(str(overlay))
    with pytest.raises(TrajectoryInputError, match=r"^joint_names\[0\]: joint 'spin' has no velocity limit"):
        joint_limits_from_model(model, ['spin'])


@pytest.mark.parametrize('key, value, expected', [
    ('acceleration', -1.0, 'expected a number > 0, got -1'),
    ('jerk', 0, 'expected a number > 0, got 0'),
    ('acceleration', 'fast', 'expected a number'),
])
def test_bad_acceleration_or_jerk_in_a_robot_file_is_one_clear_line(tmp_path, key, value, expected):
    data = yaml.safe_load((ROBOTS / 'rover.yaml').read_text())
    data['arms'][0]['joints'][1][key] = value
    path = tmp_path / 'rover_bad.yaml'
    path.write_text(yaml.safe_dump(data))
    assert_clean_error(describe(path), path, f'arms[0].joints[1].{key}', expected)
