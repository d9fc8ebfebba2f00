"""Datasets against the ROS graph: the fast path's messages equal a recording of the real bringup
(`robotsim launch sim record:=true`) driven in lockstep with the same commands, and that recording
(the path a real robot's bags take) exports to LeRobot like a generated dataset."""

from __future__ import annotations

from pathlib import Path

import pytest
from geometry_msgs.msg import Twist
from rosbags.rosbag2 import Reader
from rosbags.typesys import Stores, get_typestore

from robotsim_learning.bag_writer import canonical_cdr
from robotsim_learning.ros.episode import run_episode
from robotsim_learning.randomization import Randomizer, load_randomization
from robotsim_msgs.srv import Step
from rostest_helpers import Launch, Observer
from test_dataset import SMALL_COURSE, check_lerobot, robotsim

TYPESTORE = get_typestore(Stores.ROS2_KILTED)
STEP_NS = 2_000_000
EPISODE_SECONDS = 3.0
RELIABLE_TOPICS = ('/joint_states', '/odom', '/sim/ground_truth', '/tf')
BEST_EFFORT_TOPICS = ('/scan', '/imu/data', '/camera/image_raw', '/camera/camera_info', '/camera/depth/image_raw',
                      '/camera/depth/camera_info')


def messages_by_stamp(bag: Path) -> dict[str, dict[int, bytes]]:
    """topic -> header stamp -> the message's bytes with CDR padding zeroed (rclpy's serializer leaves
    padding bytes as found in memory, so wire bytes of equal messages may differ only there). /tf
    keeps only the simulator's odom -> base_footprint (the state publisher adds its own)."""
    out: dict[str, dict[int, bytes]] = {}
    with Reader(bag) as reader:
        for connection, _, data in reader.messages():
            topic = connection.topic
            if topic not in RELIABLE_TOPICS + BEST_EFFORT_TOPICS:
                continue
            message = TYPESTORE.deserialize_cdr(data, connection.msgtype)
            header = message.transforms[0].header if topic == '/tf' else message.header
            if topic == '/tf' and header.frame_id != 'odom':
                continue
            stamp = header.stamp.sec * 1_000_000_000 + header.stamp.nanosec
            out.setdefault(topic, {})[stamp] = canonical_cdr(TYPESTORE, connection.msgtype, data)
    return out


def commands_of(bag: Path) -> list[tuple[int, float, float]]:
    with Reader(bag) as reader:
        connections = [c for c in reader.connections if c.topic == '/cmd_vel']
        return [(timestamp, float(m.linear.x), float(m.angular.z))
                for c, timestamp, data in reader.messages(connections=connections)
                for m in [TYPESTORE.deserialize_cdr(data, c.msgtype)]]


def test_fast_path_messages_equal_a_recording_of_the_ros_graph_which_exports(tmp_path):
    pyarrow = pytest.importorskip('pyarrow')
    import pyarrow.parquet as pq
    from PIL import Image

    fast = tmp_path / 'fast'
    result = run_episode(Randomizer(load_randomization(str(SMALL_COURSE)), 5), 0, str(fast), 'wander',
                         duration=EPISODE_SECONDS)
    commands = commands_of(fast)
    end_ns = round(result.duration * 1e9)
    assert len(commands) >= 10 and any(linear > 0 for _, linear, _ in commands)

    # The same world, robot and seed through the bringup, held paused; the test steps it and sends
    # each command at the sim time the fast path's driver sent it.
    recorded = tmp_path / 'recorded'
    run = Launch(['robotsim', 'launch', 'sim', f'robot:={fast / "robot.yaml"}', f'world:={fast / "world.yaml"}',
                  f'seed:={result.sim_seed}', 'record:=true', 'paused:=true', 'firmware:=false', f'bag:={recorded}'])
    obs = Observer('lockstep')
    try:
        publisher = obs.node.create_publisher(Twist, '/cmd_vel', 10)
        obs.watch('/cmd_vel', Twist)
        run.wait_for(r'\[robotsim_recorder\].*subscribed to all \d+ topics', 90)
        # The simulator, the watcher and the recorder (it records a command topic once something publishes it).
        assert obs.spin_until(lambda: publisher.get_subscription_count() >= 3, 60), run.text
        obs.spin_for(1.0)  # the recorder's subscriptions known to every publisher (as it waits itself)
        now = 0
        for sent, (stamp, linear, angular) in enumerate(commands):
            if stamp > now:
                response = obs.call(Step, '/sim/step', Step.Request(steps=(stamp - now) // STEP_NS), timeout=60)
                assert response.success, response.message
                now = stamp
            command = Twist()
            command.linear.x, command.angular.z = linear, angular
            publisher.publish(command)
            # Delivered (to the watcher; the simulator's subscription is served before its /sim/step
            # service, so it applies the command before the next step).
            assert obs.spin_until(lambda: len(obs.messages['/cmd_vel']) > sent, 30)
            obs.spin_for(0.05)
        assert obs.call(Step, '/sim/step', Step.Request(steps=(end_ns - now) // STEP_NS), timeout=60).success
        obs.spin_for(2.0)  # the recorder receives the last messages
    finally:
        obs.close()
        run.stop()
    assert (recorded / 'metadata.yaml').is_file(), run.text

    expected, got = messages_by_stamp(fast), messages_by_stamp(recorded)
    for topic in RELIABLE_TOPICS + BEST_EFFORT_TOPICS:
        theirs = {stamp: data for stamp, data in got.get(topic, {}).items() if stamp <= end_ns}
        ours = expected[topic]
        assert theirs and ours, f'{topic}: nothing to compare (recorded {len(theirs)}, fast path {len(ours)})'
        differing = [stamp for stamp, data in theirs.items() if ours.get(stamp) != data]
        assert not differing, f'{topic}: {len(differing)} of {len(theirs)} recorded messages differ from the fast ' \
                              f'path (first at {differing[0] * 1e-9:.3f} s)'
        if topic in RELIABLE_TOPICS:
            assert set(theirs) == set(ours), f'{topic}: recorded {len(theirs)}, fast path {len(ours)}'
        else:  # best effort: the recording may drop some, never alter one
            assert len(theirs) >= len(ours) // 2, f'{topic}: only {len(theirs)} of {len(ours)} recorded'

    # The recording holds the commands, as sent; it exports like a generated episode (no /goal_pose; the
    # action from /cmd_vel).
    assert [(linear, angular) for _, linear, angular in commands_of(recorded)] == \
        [(linear, angular) for _, linear, angular in commands]
    lerobot = tmp_path / 'lerobot'
    exported = robotsim('dataset', 'export', str(recorded), '--rate', '10', '--out', str(lerobot), check=True)
    assert 'action from /cmd_vel' in exported.stdout, exported.stdout
    check_lerobot(lerobot, pyarrow, pq, Image, expected_episodes=1, camera=(48, 64, 3), has_goal=False)
