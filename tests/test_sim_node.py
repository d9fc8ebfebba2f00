"""The simulator node as a real subprocess, observed by a plain rclpy node in this process."""

import math
import time
from pathlib import Path

import numpy as np
import pytest
import yaml
from geometry_msgs.msg import Twist
from nav_msgs.msg import Odometry
from rclpy.qos import ReliabilityPolicy
from rosgraph_msgs.msg import Clock
from sensor_msgs.msg import CameraInfo, Image, Imu, JointState, LaserScan
from tf2_msgs.msg import TFMessage

from robotsim_msgs.msg import SimStatus
from robotsim_msgs.srv import Pause, Reset, SetEntityPose, Step
from rostest_helpers import RELIABLE, SENSOR, NodeProcess, Observer, stamp_seconds, yaw_of

WORLDS = Path(__file__).parent / 'data' / 'worlds'
CONFIG = Path(__file__).resolve().parents[1] / 'config' / 'robots'
LIDAR_IN_WORLD = np.array([-0.08, 0.0, 0.045 + 0.085])   # rover at the origin: base_link z + laser mount
CAMERA_X = 0.155                                          # camera_link x in base_link


@pytest.fixture(scope='module')
def observer():
    obs = Observer('sim_test')
    yield obs
    obs.close()


@pytest.fixture
def quiet_rover(tmp_path) -> str:
    """The shipped rover with lidar and depth noise off, for exact geometry checks."""
    data = yaml.safe_load((CONFIG / 'rover.yaml').read_text())
    for sensor in data['sensors']:
        if sensor['type'] == 'lidar':
            sensor['noise_stddev'] = 0.0
    path = tmp_path / 'rover_quiet.yaml'
    path.write_text(yaml.safe_dump(data))
    return str(path)


def fresh(observer: Observer) -> Observer:
    """Drain what an earlier test's (stopped) simulator left in our readers, then start empty."""
    observer.spin_for(0.3)
    observer.messages.clear()
    return observer


def wait_for_publisher(observer: Observer, topic: str) -> None:
    assert observer.spin_until(lambda: observer.node.count_publishers(topic) > 0, 30), f'no publisher on {topic}'
    observer.spin_for(0.5)  # let the publisher match us too


def step(observer: Observer, steps: int):
    response = observer.call(Step, '/sim/step', Step.Request(steps=steps))
    assert response.success, response.message
    return response


def headless_sim(world: str, real_time_factor: float = 2.0, **parameters) -> NodeProcess:
    """The simulator in a test world without cameras (the base tests need no rendering)."""
    return NodeProcess('robotsim_sim', 'sim_node', {'world': str(WORLDS / world), 'cameras': False,
                                                   'real_time_factor': real_time_factor, **parameters})


def test_topics_types_frames_and_sim_time(observer):
    obs = fresh(observer)
    topics = {'/scan': (LaserScan, SENSOR, 'laser'), '/imu/data': (Imu, SENSOR, 'imu_link'),
              '/camera/image_raw': (Image, SENSOR, 'camera_color_optical_frame'),
              '/camera/depth/image_raw': (Image, SENSOR, 'camera_color_optical_frame'),
              '/camera/camera_info': (CameraInfo, SENSOR, 'camera_color_optical_frame'),
              '/joint_states': (JointState, RELIABLE, ''), '/odom': (Odometry, RELIABLE, 'odom'),
              '/sim/ground_truth': (Odometry, RELIABLE, 'world')}
    for topic, (kind, qos, _) in topics.items():
        obs.watch(topic, kind, qos)
    obs.watch('/clock', Clock, RELIABLE)
    obs.watch('/tf', TFMessage, RELIABLE)
    with NodeProcess('robotsim_sim', 'sim_node', {'real_time_factor': 2.0, 'world': str(WORLDS / 'wall_ahead.yaml')}):
        assert obs.spin_until(lambda: all(len(obs.messages[t]) >= 3 for t in topics), 60), \
            {t: len(obs.messages[t]) for t in topics}
        obs.spin_for(2.0)
    obs.drain()  # every /clock sent before the last reading (a loaded observer may still hold some)
    clock = [stamp_seconds(m.clock) for m in obs.messages['/clock']]
    assert len(clock) > 100
    assert all(b > a for a, b in zip(clock, clock[1:])), 'clock must increase strictly (no duplicates)'
    for topic, (_, _, frame) in topics.items():
        messages = obs.messages[topic]
        assert all(m.header.frame_id == frame for m in messages), topic
        stamps = [stamp_seconds(m.header.stamp) for m in messages]
        # Sim time: starts near zero (not wall time), never beyond the clock, and increasing.
        # (a reading can overtake the /clock message published just before it: topics are not ordered)
        assert 0 < stamps[0] < 60 and stamps[-1] <= clock[-1] + 0.1, topic
        assert all(b > a for a, b in zip(stamps, stamps[1:])), topic
    assert {t.child_frame_id for m in obs.messages['/tf'] for t in m.transforms} == {'base_footprint'}
    assert obs.messages['/odom'][-1].child_frame_id == 'base_footprint'
    scan = obs.messages['/scan'][-1]
    assert len(scan.ranges) == 360 and scan.angle_increment == pytest.approx(2 * math.pi / 360)
    info = obs.messages['/camera/camera_info'][-1]
    assert (info.width, info.height, info.distortion_model) == (320, 240, 'plumb_bob')
    assert list(info.d) == [0.0] * 5, 'the shipped rover is a pinhole camera (no distortion key)'
    fy = 120 / math.tan(0.9 / 2)
    assert info.k[0] == pytest.approx(fy) and info.k[4] == pytest.approx(fy)
    assert list(info.p) == pytest.approx([info.k[0], 0, info.k[2], 0, 0, info.k[4], info.k[5], 0, 0, 0, 1, 0])
    assert obs.messages['/camera/image_raw'][-1].encoding == 'rgb8'
    assert obs.messages['/camera/depth/image_raw'][-1].encoding == '32FC1'


def test_lidar_geometry_ranges_and_order(observer, quiet_rover):
    obs = fresh(observer)
    obs.watch('/scan', LaserScan, SENSOR)
    with NodeProcess('robotsim_sim', 'sim_node', {'robot': quiet_rover, 'world': str(WORLDS / 'wall_ahead.yaml'),
                                                  'start_paused': True, 'cameras': False}):
        wait_for_publisher(obs, '/scan')
        step(obs, 100)
        assert obs.spin_until(lambda: obs.messages['/scan'], 20)
    scan = obs.messages['/scan'][-1]
    ranges = np.array(scan.ranges)
    angles = scan.angle_min + scan.angle_increment * np.arange(len(ranges))
    face = 1.95 - LIDAR_IN_WORLD[0]
    for degrees in (0, 20, -20, 40, -40):
        index = int(np.argmin(np.abs(angles - math.radians(degrees))))
        # The arm stands between the lidar and the wall: the self-filter lets the beam through.
        assert ranges[index] == pytest.approx(face / math.cos(angles[index]), abs=0.01), degrees
    behind = int(np.argmin(np.abs(np.abs(angles) - math.pi)))
    assert math.isinf(ranges[behind]) and ranges[behind] > 0, 'open direction reads +Inf (REP 117)'
    # Counter-clockwise order: the post on the left (+y) is at +90 degrees, the right is open.
    left = int(np.argmin(np.abs(angles - math.pi / 2)))
    right = int(np.argmin(np.abs(angles + math.pi / 2)))
    assert ranges[left] == pytest.approx(1.0 - 0.1 - np.hypot(LIDAR_IN_WORLD[0], 0) * 0, abs=0.1)
    assert math.isinf(ranges[right])


def test_depth_and_pixel_of_a_box(observer):
    obs = fresh(observer)
    obs.watch('/camera/depth/image_raw', Image, SENSOR)
    obs.watch('/camera/camera_info', CameraInfo, SENSOR)
    with NodeProcess('robotsim_sim', 'sim_node', {'world': str(WORLDS / 'box_ahead.yaml'), 'start_paused': True}):
        wait_for_publisher(obs, '/camera/depth/image_raw')
        step(obs, 50)
        assert obs.spin_until(lambda: obs.messages['/camera/depth/image_raw'] and obs.messages['/camera/camera_info'])
    image = obs.messages['/camera/depth/image_raw'][-1]
    info = obs.messages['/camera/camera_info'][-1]
    depth = np.frombuffer(bytes(image.data), dtype=np.float32).reshape(image.height, image.width)
    fx, cx, cy = info.k[0], info.k[2], info.k[5]
    z = 1.4 - CAMERA_X
    # Optical frame: x right = -y of the robot. The cube spans y in [0.2, 0.4].
    u_centre = cx + fx * (-0.3) / z
    v = int(round(cy))  # the camera is at z = 0.075, inside the cube's height
    assert depth[v, int(round(u_centre))] == pytest.approx(z, abs=0.01)
    on_cube = np.where(np.abs(depth[v] - z) < 0.01)[0]
    assert on_cube.min() == pytest.approx(cx + fx * (-0.4) / z, abs=1.5)
    assert on_cube.max() == pytest.approx(cx + fx * (-0.2) / z, abs=1.5)
    # Nothing but the floor ends the view: the sky above the horizon is +Inf (REP 118).
    assert np.isinf(depth[0]).all() and (depth[0] > 0).all()


def test_imu_at_rest_and_counter_clockwise_turn(observer):
    obs = fresh(observer)
    obs.watch('/imu/data', Imu, SENSOR)
    obs.watch('/sim/ground_truth', Odometry, RELIABLE)
    with headless_sim('wall_ahead.yaml'):
        assert obs.spin_until(lambda: len(obs.messages['/imu/data']) > 100, 30)
        rest = np.array([[m.linear_acceleration.x, m.linear_acceleration.y, m.linear_acceleration.z]
                         for m in obs.messages['/imu/data'][20:]])
        publisher = obs.node.create_publisher(Twist, '/cmd_vel', 10)
        obs.messages['/imu/data'].clear()
        start_yaw = yaw_of(obs.messages['/sim/ground_truth'][-1].pose.pose.orientation)
        end = sim_now(obs) + 2.0
        while sim_now(obs) < end:  # 2 s of sim time, commands at 20 Hz wall
            publisher.publish(Twist(angular=type(Twist().angular)(z=0.8)))
            obs.spin_for(0.05)
        end_yaw = yaw_of(obs.messages['/sim/ground_truth'][-1].pose.pose.orientation)
        gyro_z = np.mean([m.angular_velocity.z for m in obs.messages['/imu/data'][-50:]])
    np.testing.assert_allclose(rest.mean(axis=0), [0.0, 0.0, 9.81], atol=0.05)
    imu = obs.messages['/imu/data'][-1]
    assert imu.header.frame_id == 'imu_link' and imu.orientation_covariance[0] > 0
    assert end_yaw - start_yaw > 0.3, 'positive yaw rate turns counter-clockwise'
    assert gyro_z > 0.2


def sim_now(obs: Observer) -> float:
    return stamp_seconds(obs.messages['/sim/ground_truth'][-1].header.stamp)


def spin_sim_seconds(obs: Observer, seconds: float, timeout: float = 60.0) -> None:
    """Spin until the simulator's time (seen on /sim/ground_truth) has advanced by ``seconds``."""
    target = sim_now(obs) + seconds
    assert obs.spin_until(lambda: sim_now(obs) >= target, timeout)


def drive(obs: Observer, linear: float, seconds_sim: float, rate: float = 20.0, timeout: float = 60.0) -> None:
    """Publish cmd_vel at ``rate`` Hz (wall) until ``seconds_sim`` of sim time have passed, however
    fast the simulator happens to run on this machine."""
    publisher = obs.node.create_publisher(Twist, '/cmd_vel', 10)
    message = Twist()
    message.linear.x = linear
    end = sim_now(obs) + seconds_sim
    deadline = time.monotonic() + timeout
    while sim_now(obs) < end:
        assert time.monotonic() < deadline, 'the simulator stopped advancing'
        publisher.publish(message)
        obs.spin_for(1.0 / rate)
    obs.node.destroy_publisher(publisher)


def test_drive_distance_and_watchdog(observer):
    obs = fresh(observer)
    obs.watch('/sim/ground_truth', Odometry, RELIABLE)
    obs.watch('/odom', Odometry, RELIABLE)
    # Half real time: this test publishes commands from its own process, which a loaded machine can starve;
    # the 0.5 s (sim) watchdog then allows 1 s of wall time between commands before stopping the base.
    with headless_sim('wall_ahead.yaml', real_time_factor=0.5):
        obs.spin_until(lambda: obs.messages['/sim/ground_truth'], 30)
        start = obs.messages['/sim/ground_truth'][-1]
        drive(obs, 0.3, 5.0)
        moving = obs.messages['/sim/ground_truth'][-1]
        spin_sim_seconds(obs, 1.5)  # > 0.5 s without commands: the watchdog stops the base
        stopped = obs.messages['/sim/ground_truth'][-1]
        spin_sim_seconds(obs, 1.0)
        still = obs.messages['/sim/ground_truth'][-1]
    travelled = moving.pose.pose.position.x - start.pose.pose.position.x
    elapsed = stamp_seconds(moving.header.stamp) - stamp_seconds(start.header.stamp)
    assert elapsed == pytest.approx(5.0, abs=0.2)
    assert travelled == pytest.approx(0.3 * elapsed, abs=0.12), (travelled, elapsed)
    assert abs(stopped.twist.twist.linear.x) < 0.02
    assert still.pose.pose.position.x - stopped.pose.pose.position.x < 0.005
    odom = obs.messages['/odom'][-1].pose.pose.position.x
    assert odom == pytest.approx(still.pose.pose.position.x, abs=0.05), 'encoder odometry agrees on a grippy floor'


def test_wall_stops_the_base_while_wheels_turn_and_odometry_drifts(observer):
    obs = fresh(observer)
    obs.watch('/sim/ground_truth', Odometry, RELIABLE)
    obs.watch('/odom', Odometry, RELIABLE)
    obs.watch('/joint_states', JointState, RELIABLE)
    # The command watchdog is not under test: a long timeout keeps a loaded machine's gaps between this process's
    # commands from stopping the wheels (at RTF 2 a 0.25 s wall gap is the default 0.5 s of sim time).
    with headless_sim('close_wall.yaml', real_time_factor=1.0, command_timeout=5.0):
        obs.spin_until(lambda: obs.messages['/sim/ground_truth'], 30)
        drive(obs, 0.3, 6.0)
    truth = obs.messages['/sim/ground_truth'][-1]
    second_before = next(m for m in reversed(obs.messages['/sim/ground_truth'])
                         if stamp_seconds(truth.header.stamp) - stamp_seconds(m.header.stamp) >= 1.0)
    odom = obs.messages['/odom'][-1]
    # The chassis front (x + 0.15) stops at the wall face (0.75) and stays there (it rocks, but goes nowhere).
    assert truth.pose.pose.position.x < 0.75 - 0.15 + 0.02
    assert abs(truth.pose.pose.position.x - second_before.pose.pose.position.x) < 0.01
    joints = obs.messages['/joint_states'][-1]
    wheel_speeds = [v for n, v in zip(joints.name, joints.velocity) if n.endswith('wheel_joint')]
    assert len(wheel_speeds) == 4 and min(wheel_speeds) > 0.5, 'the wheels keep turning against the wall'
    assert odom.pose.pose.position.x > truth.pose.pose.position.x + 0.3, 'odometry believes it moved on'


def test_nan_commands_are_rejected(observer):
    obs = fresh(observer)
    obs.watch('/sim/ground_truth', Odometry, RELIABLE)
    with headless_sim('wall_ahead.yaml') as sim:
        obs.spin_until(lambda: obs.messages['/sim/ground_truth'], 30)
        start = obs.messages['/sim/ground_truth'][-1].pose.pose.position.x
        drive(obs, float('nan'), 2.0)
        end = obs.messages['/sim/ground_truth'][-1].pose.pose.position.x
        obs.spin_for(0.3)
        log = sim.output()
    assert abs(end - start) < 0.005
    assert 'rejected non-finite cmd_vel' in log


def test_pause_step_reset_and_set_pose(observer):
    obs = fresh(observer)
    obs.watch('/clock', Clock, RELIABLE)
    obs.watch('/sim/status', SimStatus, RELIABLE)
    obs.watch('/sim/ground_truth', Odometry, RELIABLE)
    with headless_sim('wall_ahead.yaml', real_time_factor=1.0):
        obs.spin_until(lambda: obs.messages['/clock'], 30)
        refused = obs.call(Step, '/sim/step', Step.Request(steps=10))
        assert not refused.success and 'paused' in refused.message
        assert obs.call(Pause, '/sim/pause', Pause.Request(paused=True)).paused
        obs.spin_for(0.3)
        before = stamp_seconds(obs.messages['/clock'][-1].clock)
        obs.spin_for(0.5)
        assert stamp_seconds(obs.messages['/clock'][-1].clock) == before, 'paused: time stands still'
        stepped = obs.call(Step, '/sim/step', Step.Request(steps=100))
        assert stepped.success
        assert stamp_seconds(stepped.sim_time) == pytest.approx(before + 0.2, abs=1e-9)
        obs.spin_until(lambda: stamp_seconds(obs.messages['/clock'][-1].clock) >= before + 0.2 - 1e-9, 5)
        assert stamp_seconds(obs.messages['/clock'][-1].clock) == pytest.approx(before + 0.2, abs=1e-9)
        assert obs.messages['/sim/status'][-1].paused

        request = SetEntityPose.Request(entity='rover')
        request.pose.position.x, request.pose.position.y = 0.5, -0.25
        request.pose.orientation.w = 1.0
        assert obs.call(SetEntityPose, '/sim/set_entity_pose', request).success
        step(obs, 10)
        obs.spin_until(lambda: abs(obs.messages['/sim/ground_truth'][-1].pose.pose.position.x - 0.5) < 0.01, 5)
        assert obs.messages['/sim/ground_truth'][-1].pose.pose.position.y == pytest.approx(-0.25, abs=0.01)
        missing = obs.call(SetEntityPose, '/sim/set_entity_pose', SetEntityPose.Request(entity='unicorn'))
        assert not missing.success and 'unicorn' in missing.message

        clock_before_reset = stamp_seconds(obs.messages['/clock'][-1].clock)
        # One range of seeds: what seed:= refuses (above 2^63-1), the service refuses too, resetting nothing.
        refused = obs.call(Reset, '/sim/reset', Reset.Request(use_seed=True, seed=2**64 - 1))
        assert not refused.success and 'expected an integer from 0 to 9223372036854775807' in refused.message
        assert refused.seed == obs.messages['/sim/status'][-1].seed
        reset = obs.call(Reset, '/sim/reset', Reset.Request(use_seed=True, seed=7))
        assert reset.success and reset.seed == 7
        step(obs, 10)
        obs.spin_until(lambda: abs(obs.messages['/sim/ground_truth'][-1].pose.pose.position.x) < 0.01, 5)
        assert obs.messages['/sim/ground_truth'][-1].pose.pose.position.y == pytest.approx(0.0, abs=0.01)
        obs.spin_for(0.6)
        status = obs.messages['/sim/status'][-1]
        assert status.step_count == 10 and status.seed == 7
    clock = [stamp_seconds(m.clock) for m in obs.messages['/clock']]
    assert all(b > a for a, b in zip(clock, clock[1:])), 'reset keeps /clock monotonic'
    assert clock[-1] > clock_before_reset


def test_twist_stamped_and_arm_trajectory(observer):
    from geometry_msgs.msg import TwistStamped
    from trajectory_msgs.msg import JointTrajectory, JointTrajectoryPoint

    obs = Observer('stamped_test')  # its own participant: /cmd_vel has another type here
    obs.watch('/sim/ground_truth', Odometry, RELIABLE)
    obs.watch('/joint_states', JointState, RELIABLE)
    with NodeProcess('robotsim_sim', 'sim_node', {'world': str(WORLDS / 'wall_ahead.yaml'), 'cameras': False,
                                                  'cmd_vel_stamped': True, 'real_time_factor': 2.0}):
        obs.spin_until(lambda: obs.messages['/sim/ground_truth'] and obs.messages['/joint_states'], 30)
        trajectory = JointTrajectory(joint_names=['arm_shoulder_joint', 'arm_elbow_joint', 'arm_left_finger_joint'])
        for seconds, positions in ((1, [0.3, -0.5, 0.01]), (2, [0.6, -1.0, 0.015])):
            point = JointTrajectoryPoint(positions=positions)
            point.time_from_start.sec = seconds
            trajectory.points.append(point)
        arm = obs.node.create_publisher(JointTrajectory, '/arm_controller/joint_trajectory', 10)
        assert obs.spin_until(lambda: arm.get_subscription_count() > 0, 10)
        # The publisher sees the node's reader before that reader has matched the publisher; a sample sent
        # in between arrives only after the late match (once, in CI, past the midway sample): let it settle.
        obs.spin_for(0.5)
        arm.publish(trajectory)
        start_x = obs.messages['/sim/ground_truth'][-1].pose.pose.position.x
        stamped = obs.node.create_publisher(TwistStamped, '/cmd_vel', 10)
        end = sim_now(obs) + 3.0
        while sim_now(obs) < end:
            message = TwistStamped()
            message.twist.linear.x = 0.2
            stamped.publish(message)
            obs.spin_for(0.05)

        def shoulder(state: JointState) -> float:
            return state.position[list(state.name).index('arm_shoulder_joint')]

        # The trajectory starts when the node takes it, which a late DDS match can delay: wait for its end.
        obs.spin_until(lambda: shoulder(obs.messages['/joint_states'][-1]) > 0.58, 60)
        final = dict(zip(obs.messages['/joint_states'][-1].name, obs.messages['/joint_states'][-1].position))
    obs.close()
    assert obs.messages['/sim/ground_truth'][-1].pose.pose.position.x - start_x > 0.3, 'TwistStamped drives the base'
    # Interpolated, not jumped: from the first move to the last point takes the trajectory's two seconds.
    samples = [(stamp_seconds(state.header.stamp), shoulder(state)) for state in obs.messages['/joint_states']]
    started = next((t for t, value in samples if value > 0.02), None)
    arrived = next((t for t, value in samples if value > 0.55), None)
    assert started is not None and arrived is not None, f'the arm never followed the trajectory: {samples[-5:]}'
    assert 1.3 < arrived - started < 2.5, f'shoulder from 0.02 to 0.55 in {arrived - started:.2f} s of sim time'
    halfway = min(samples, key=lambda sample: abs(sample[0] - (started + 0.5)))[1]
    assert 0.1 < halfway < 0.3, 'half a second in, on the way to the first point (0.3 at 1 s)'
    assert final['arm_shoulder_joint'] == pytest.approx(0.6, abs=0.03)
    assert final['arm_elbow_joint'] == pytest.approx(-1.0, abs=0.03)
    assert final['arm_left_finger_joint'] == pytest.approx(0.015, abs=0.003)
    assert final['arm_right_finger_joint'] == pytest.approx(final['arm_left_finger_joint'], abs=0.003)


def test_point_cloud_segmentation_labels_and_qos_from_configuration(observer, tmp_path):
    import json

    from sensor_msgs.msg import PointCloud2
    from std_msgs.msg import String

    from rostest_helpers import LATCHED

    data = yaml.safe_load((CONFIG / 'rover.yaml').read_text())
    lidar = next(s for s in data['sensors'] if s['type'] == 'lidar')
    lidar.update(channels=16, samples=512, vertical_fov=0.5, qos={'reliability': 'reliable', 'depth': 10})
    next(s for s in data['sensors'] if s['type'] == 'camera')['images'] = ['rgb', 'segmentation']
    robot = tmp_path / 'rover_3d.yaml'
    robot.write_text(yaml.safe_dump(data))
    obs = Observer('cloud_test')  # fresh node: these topics have other types than in earlier tests
    try:
        obs.watch('/points', PointCloud2, RELIABLE)  # a reliable reader only matches a reliable writer
        obs.watch('/camera/segmentation/image_raw', Image, SENSOR)
        obs.watch('/camera/segmentation/labels', String, LATCHED)
        with NodeProcess('robotsim_sim', 'sim_node', {'robot': str(robot), 'world': str(WORLDS / 'box_ahead.yaml'),
                                                      'real_time_factor': 2.0}):
            assert obs.spin_until(lambda: obs.messages['/points'] and obs.messages['/camera/segmentation/image_raw']
                                  and obs.messages['/camera/segmentation/labels'], 40)
            infos = obs.node.get_publishers_info_by_topic('/points')
    finally:
        obs.close()
    assert infos[0].qos_profile.reliability == ReliabilityPolicy.RELIABLE
    cloud = obs.messages['/points'][-1]
    assert cloud.header.frame_id == 'laser' and [f.name for f in cloud.fields] == ['x', 'y', 'z']
    points = np.frombuffer(bytes(cloud.data), dtype=np.float32).reshape(-1, 3)
    assert len(points) == cloud.width and len(points) > 1000
    labels = {name: int(label) for label, name in json.loads(obs.messages['/camera/segmentation/labels'][0].data).items()}
    image = obs.messages['/camera/segmentation/image_raw'][-1]
    assert image.encoding == '32SC1'
    ids = np.frombuffer(bytes(image.data), dtype=np.int32).reshape(image.height, image.width)
    assert (ids == labels['cube']).any() and (ids == labels['world']).any()


def test_pacing_never_outruns_the_requested_factor(observer):
    """At real_time_factor 1 the simulation keeps to real time over a run of about 6 s, judged from the node's own
    windows (each status: the sim time it reached and the factor measured since the previous one): their sim
    seconds over their wall seconds. One 0.5 s window alone is not a measure on a loaded machine: a status timer
    that fires 0.2 s late makes its window look slow and the next one fast (0.83, then 1.32, seen in a full run)
    while the simulation kept its pace; over the run such a delay is at most a few percent. A node that did not
    pace runs several times faster than real time here."""
    obs = fresh(observer)
    obs.watch('/sim/status', SimStatus, RELIABLE)
    with NodeProcess('robotsim_sim', 'sim_node', {'cameras': False, 'real_time_factor': 1.0}):
        assert obs.spin_until(lambda: len(obs.messages['/sim/status']) >= 14, 60)
    statuses = obs.messages['/sim/status'][1:]
    sim = [s.sim_time.sec + s.sim_time.nanosec * 1e-9 for s in statuses]
    windows = [(after - before, status.real_time_factor)
               for before, after, status in zip(sim, sim[1:], statuses[1:])]
    assert all(step > 0 and rtf > 0 for step, rtf in windows), windows
    overall = sum(step for step, _ in windows) / sum(step / rtf for step, rtf in windows)
    assert 0 < overall <= 1.05, (overall, windows)
    assert obs.messages['/sim/status'][-1].target_real_time_factor == 1.0


@pytest.mark.parametrize('environment, expected', [
    ({'MUJOCO_GL': 'bogus'}, "MUJOCO_GL='bogus': expected one of egl, osmesa"),
    ({'MUJOCO_GL': 'egl', '__EGL_VENDOR_LIBRARY_FILENAMES': '/nonexistent/egl_vendor.json'},
     'MUJOCO_GL=egl unavailable'),
])
def test_gl_backend_errors_and_fallback(environment, expected, monkeypatch):
    """A bad MUJOCO_GL stops the node with a clear line; a machine without working EGL falls
    back to OSMesa and still renders."""
    for key, value in environment.items():
        monkeypatch.setenv(key, value)
    with NodeProcess('robotsim_sim', 'sim_node', {'duration': 0.2, 'real_time_factor': 0.0}) as sim:
        code = sim.process.wait(timeout=60)
        log = sim.output()
    assert expected in log and 'Traceback' not in log
    if environment['MUJOCO_GL'] == 'bogus':
        assert code == 2
    else:
        assert code == 0 and 'using MUJOCO_GL=osmesa' in log and 'simulated 0.200 s' in log
