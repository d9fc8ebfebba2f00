"""The policy node as deployed: a policy trained and exported here drives the simulated rover through
contract topics only; it stops the robot when its scan stops arriving and refuses policy files that do
not fit the robot, each with one line."""

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from geometry_msgs.msg import PoseStamped, Twist
from sensor_msgs.msg import LaserScan

from robotsim_core.description import load_robot
from robotsim_learning.observation import observation, spec_for_robot
from rostest_helpers import RELIABLE, SENSOR, WORKSPACE, Launch, Observer, executable

pytest.importorskip('jax', reason='training needs requirements/train.txt (Python 3.11+)')
from robotsim_learning.policy_model import TrainConfig, export_onnx, train  # noqa: E402

LEARNING = WORKSPACE / 'src' / 'robotsim_learning' / 'robotsim_learning'


@pytest.fixture(scope='module')
def rover_policy(tmp_path_factory) -> Path:
    """A tiny policy for the rover's observation (scan + camera), trained to drive toward the goal."""
    spec = spec_for_robot(load_robot('rover'))
    rng = np.random.default_rng(0)
    rows, actions = [], []
    for _ in range(400):
        goal = rng.uniform(0.5, 3.0), rng.uniform(-1.0, 1.0)
        rgb = rng.integers(0, 256, (spec.image_height, spec.image_width, 3), dtype=np.uint8)
        rows.append(observation(spec, rng.uniform(0.3, 12.0, spec.scan_samples), rgb, (0.0, 0.0), goal))
        actions.append([0.25, 0.8 * np.arctan2(goal[1], goal[0])])
    policy = train(np.array(rows), np.array(actions), spec, (0.4, 1.5), TrainConfig(hidden=(16,), epochs=20))
    path = tmp_path_factory.mktemp('policy') / 'rover.onnx'
    export_onnx(policy, str(path))
    return path


def policy_command(policy: Path, *extra: str) -> list[str]:
    return [executable('robotsim_learning', 'policy'), '--ros-args', '-p', f'policy:={policy}',
            '-p', 'use_sim_time:=true', *extra]


def drive_toward_a_goal(observer: Observer, node: Launch) -> None:
    """Publish a goal 2 m ahead until the node has it (discovery takes a moment) and commands the robot forward."""
    goals = observer.node.create_publisher(PoseStamped, '/goal_pose', RELIABLE)
    goal = PoseStamped()
    goal.header.frame_id = 'odom'
    goal.pose.position.x, goal.pose.position.y = 2.0, 0.5
    moving = lambda: any(m.linear.x > 0.05 for m in observer.messages['/cmd_vel'][-5:])  # noqa: E731
    for _ in range(60):
        goals.publish(goal)
        if observer.spin_until(moving, 2.0):
            break
    assert moving(), node.text


def test_the_policy_node_drives_from_contract_topics_and_stops_when_the_scan_stops(rover_policy):
    sim = Launch(['robotsim', 'launch', 'sim', 'firmware:=false'])
    # The policy reads its scan through a relay the test controls, so the scan can stop while sim time runs on.
    node = Launch(policy_command(rover_policy, '-r', 'scan:=relayed_scan'))
    observer = Observer('policy_test')
    try:
        relay = observer.node.create_publisher(LaserScan, '/relayed_scan', SENSOR)
        relaying = [True]
        observer.node.create_subscription(LaserScan, '/scan', lambda m: relaying[0] and relay.publish(m), SENSOR)
        observer.watch('/cmd_vel', Twist, RELIABLE)
        node.wait_for(r'policy .* inputs\) on CPUExecutionProvider', timeout=120)
        drive_toward_a_goal(observer, node)
        relaying[0] = False
        node.wait_for(r'stopping the robot: scan is stale', timeout=60)
        observer.spin_for(1.0)  # commands sent before the stop may still be on their way
        observer.messages['/cmd_vel'].clear()
        assert observer.spin_until(lambda: len(observer.messages['/cmd_vel']) >= 5, 30)
        assert all(m.linear.x == 0.0 and m.angular.z == 0.0 for m in observer.messages['/cmd_vel'])
        # Only contract topics and the goal: nothing of the simulator.
        subscribed = dict(observer.of_node('get_subscriber_names_and_types_by_node', 'policy'))
        assert subscribed and not any(name.startswith('/sim') for name in subscribed), subscribed
        assert set(subscribed) <= {'/relayed_scan', '/camera/image_raw', '/odom', '/goal_pose', '/clock',
                                   '/parameter_events'}, subscribed
        # At exit it says how its ticks went (what an evaluation reads): decisions while the scan came, stale
        # ticks after it stopped.
        node.stop()
        report = node.wait_for(r'policy: ticks (\d+): decided (\d+), stale input (\d+), waiting for inputs (\d+), '
                               r'standing still (\d+)', 30)
        ticks, decided, stale, waiting, still = map(int, report.groups())
        assert decided > 0 and stale >= 5 and ticks == decided + stale + waiting + still, report.group(0)
    finally:
        observer.close()
        node.stop()
        sim.stop()


@pytest.fixture(scope='module')
def chained_policy(tmp_path_factory) -> Path:
    """A tiny chained policy for the rover: a perception model (untrained) and a control stage that sees its
    abstraction, the odometry and the goal (no scan), trained to drive toward the goal."""
    import dataclasses

    from robotsim_learning.perception import CLASSES, PerceptionNet, export_onnx as export_perception
    from robotsim_core.output_files import file_sha256
    from robotsim_learning.policy_runtime import PerceptionStage, perception_path
    folder = tmp_path_factory.mktemp('chained')
    path = folder / 'chained.onnx'
    rng = np.random.default_rng(3)
    sizes = [3, 4, 4, 4, 4]
    layers = [(rng.normal(0, 0.3, (3, 3, a, b)).astype(np.float32), np.zeros(b, np.float32))
              for a, b in zip(sizes, sizes[1:])]
    # Its last layer paints every pixel floor, whatever the image: the control stage sees on the simulator's frames the
    # abstraction it was trained on (the test is of the chain, not of what perception gets right).
    layers.append((np.zeros((1, 1, 4, len(CLASSES)), np.float32), np.array([1.0, 0.0, 0.0], np.float32)))
    export_perception(PerceptionNet(layers, np.full(3, 0.5, np.float32), np.full(3, 0.2, np.float32), factor=4),
                      perception_path(str(path)))
    stage = PerceptionStage(perception_path(str(path)))
    spec = dataclasses.replace(spec_for_robot(load_robot('rover'), 0, image=True),
                               perception=file_sha256(perception_path(str(path))), perception_classes=CLASSES)
    rows, actions = [], []
    for _ in range(300):
        goal = rng.uniform(0.5, 3.0), rng.uniform(-1.0, 1.0)
        rgb = rng.integers(0, 256, (spec.image_height, spec.image_width, 3), dtype=np.uint8)
        rows.append(observation(spec, None, rgb, (0.0, 0.0), goal, stage))
        actions.append([0.25, 0.8 * np.arctan2(goal[1], goal[0])])
    policy = train(np.array(rows), np.array(actions), spec, (0.4, 1.5), TrainConfig(hidden=(16,), epochs=20))
    export_onnx(policy, str(path))
    return path


def test_the_chained_policy_node_drives_from_the_camera_and_stops_when_the_image_stops(chained_policy):
    """Perception -> control in the policy node: it reads /camera/image_raw (no scan), drives, reports each stage's
    inference time on /diagnostics, and stops the robot when the image stops."""
    from diagnostic_msgs.msg import DiagnosticArray
    from sensor_msgs.msg import Image
    sim = Launch(['robotsim', 'launch', 'sim', 'firmware:=false'])
    node = Launch(policy_command(chained_policy, '-p', 'shield:=false', '-r', 'camera/image_raw:=relayed_image'))
    observer = Observer('chained_test')
    try:
        relay = observer.node.create_publisher(Image, '/relayed_image', SENSOR)
        relaying = [True]
        observer.node.create_subscription(Image, '/camera/image_raw', lambda m: relaying[0] and relay.publish(m),
                                          SENSOR)
        observer.watch('/cmd_vel', Twist, RELIABLE)
        observer.watch('/diagnostics', DiagnosticArray, RELIABLE)
        node.wait_for(r'policy .* inputs\) on CPUExecutionProvider', timeout=120)
        drive_toward_a_goal(observer, node)

        def stage_times() -> dict:
            values = {}
            for array in observer.messages['/diagnostics']:
                for status in array.status:
                    if status.name.startswith('policy'):
                        values.update({kv.key: kv.value for kv in status.values})
            return values
        assert observer.spin_until(lambda: 'perception_ms_p50' in stage_times(), 30), stage_times()
        times = stage_times()
        assert float(times['perception_ms_p50']) > 0 and float(times['control_ms_p99']) > 0, times
        relaying[0] = False
        node.wait_for(r'stopping the robot: camera image is stale', timeout=60)
        observer.spin_for(1.0)
        observer.messages['/cmd_vel'].clear()
        assert observer.spin_until(lambda: len(observer.messages['/cmd_vel']) >= 5, 30)
        assert all(m.linear.x == 0.0 and m.angular.z == 0.0 for m in observer.messages['/cmd_vel'])
        subscribed = dict(observer.of_node('get_subscriber_names_and_types_by_node', 'policy'))
        assert '/relayed_image' in subscribed and '/scan' not in subscribed, subscribed
    finally:
        observer.close()
        node.stop()
        sim.stop()


def test_a_chained_policy_refuses_a_missing_or_other_perception_model(chained_policy, tmp_path):
    """The control stage was trained on one perception model's abstraction: the node refuses to start without it
    or with another one, with one line."""
    import shutil

    from robotsim_learning.policy_runtime import perception_path
    copy = tmp_path / 'copy.onnx'
    shutil.copyfile(chained_policy, copy)
    for problem, expected in (('missing', 'perception model not found'), ('other', 'not the perception model')):
        if problem == 'other':
            data = bytearray(Path(perception_path(str(chained_policy))).read_bytes())
            data[-1] ^= 1
            Path(perception_path(str(copy))).write_bytes(bytes(data))
        completed = subprocess.run([executable('robotsim_learning', 'policy'), '--ros-args', '-p', f'policy:={copy}',
                                    '-p', 'shield:=false'], capture_output=True, text=True, timeout=120)
        assert completed.returncode == 2, completed
        lines = completed.stderr.strip().splitlines()
        assert len(lines) == 1 and expected in lines[0], completed.stderr


def test_the_policy_driver_imports_nothing_of_the_simulator(rover_policy):
    """The node runs on the robot: building its policy driver loads no module of the simulator or the expert."""
    script = f"""
import sys
from robotsim_learning.ros import driver_node
from robotsim_learning.driving import DriveContext, make_driver
driver = make_driver('policy:{rover_policy}', robot='rover')
driver.reset(DriveContext(lambda: None))
print(sorted(m for m in sys.modules if m.startswith('robotsim_sim') or m.endswith('.expert')))
"""
    completed = subprocess.run([sys.executable, '-c', script], capture_output=True, text=True, timeout=120)
    assert completed.returncode == 0, completed.stderr
    assert completed.stdout.strip() == '[]', completed.stdout


@pytest.mark.parametrize('setup,expected', [
    (lambda tmp, policy: ('-p', f'policy:={tmp / "missing.onnx"}'), 'policy file not found'),
    (lambda tmp, policy: ('-p', f'policy:={policy}', '-p', 'robot:=racer'), 'has no 1-channel lidar'),
    (lambda tmp, policy: ('-p', 'policy:=""'), "parameter 'policy': expected the path"),
    (lambda tmp, policy: ('-p', f'policy:={policy}', '-p', 'seed:=-1'), "parameter 'seed': expected a whole number >= 0"),
], ids=['missing file', 'robot without lidar', 'no policy given', 'negative seed'])
def test_policy_files_that_do_not_fit_are_refused_at_start(setup, expected, tmp_path, rover_policy):
    arguments = [executable('robotsim_learning', 'policy'), '--ros-args', *setup(tmp_path, rover_policy)]
    completed = subprocess.run(arguments, capture_output=True, text=True, timeout=120)
    assert completed.returncode == 2, completed
    lines = completed.stderr.strip().splitlines()
    assert len(lines) == 1 and expected in lines[0], completed.stderr
