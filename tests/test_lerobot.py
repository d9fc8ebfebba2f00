"""The LeRobot export as the real LeRobot reads it: lerobot 0.4.4's ``LeRobotDataset`` (format v3.0), in its
own cached environment (installed on first use, about 6 GB with PyTorch; `make lerobot-setup`), opens the
exported dataset offline, iterates every frame, and what it returns is the bags' data:

- every sampled frame's scan, odometry state and camera image equal one message of the bag each (exactly:
  float32 ranges, PNG pixels), taken within the export's skew limit of one another, and its action is a
  command the bag holds; the frames of an episode are the frame indices at the declared rate (no gaps);
- a bag whose scan stops for a while (frames rejected for skew) becomes two gap-free episodes, which
  LeRobot loads too;
- the task text is the driver's: expert episodes drive to a goal, wander episodes have none.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from rosbags.highlevel import AnyReader

from bag_readers import foxglove_counts
from robotsim_learning.bag_writer import BagWriter
from robotsim_learning.lerobot_export import GOAL_TASK, WANDER_TASK
from robotsim_learning.lerobot_reader import LEROBOT_VERSION, read_with_lerobot

WORKSPACE = Path(__file__).resolve().parents[1]
COURSE = WORKSPACE / 'tests' / 'data' / 'datasets' / 'small_course.yaml'
RATE = 10


def robotsim(*args: str) -> subprocess.CompletedProcess:
    completed = subprocess.run([sys.executable, '-m', 'robotsim.cli', *args], capture_output=True, text=True,
                               timeout=900)
    assert completed.returncode == 0, f'robotsim {" ".join(args)}: {completed.stdout}{completed.stderr}'
    return completed


@pytest.fixture(scope='module')
def expert_export(tmp_path_factory):
    folder = tmp_path_factory.mktemp('lerobot')
    robotsim('dataset', 'generate', '--randomization', str(COURSE), '--episodes', '2', '--seed', '7', '--driver',
             'expert', '--out', str(folder / 'dataset'), '--no-progress')
    exported = robotsim('dataset', 'export', str(folder / 'dataset'), '--format', 'lerobot', '--rate', str(RATE),
                        '--out', str(folder / 'lerobot'))
    read = read_with_lerobot(folder / 'lerobot', folder / 'read')
    return folder, exported.stdout, read, np.load(folder / 'read' / 'samples.npz')


def bag_streams(bag: Path) -> dict[str, list]:
    """(stamp ns, value) per stream as the export maps them (scan: inf -> range_max; state: x, y, yaw, v, w)."""
    streams = {'scan': [], 'state': [], 'image': [], 'command': []}
    with AnyReader([bag]) as reader:
        wanted = {'/scan', '/odom', '/camera/image_raw', '/cmd_vel'}
        for connection, timestamp, raw in reader.messages(connections=[c for c in reader.connections
                                                                       if c.topic in wanted]):
            message = reader.deserialize(raw, connection.msgtype)
            if connection.topic == '/cmd_vel':
                streams['command'].append((timestamp, np.array([message.linear.x, message.angular.z], np.float32)))
                continue
            stamp = message.header.stamp.sec * 1_000_000_000 + message.header.stamp.nanosec
            if connection.topic == '/scan':
                ranges = np.asarray(message.ranges, dtype=np.float32)
                streams['scan'].append((stamp, np.where(np.isposinf(ranges), np.float32(message.range_max), ranges)))
            elif connection.topic == '/odom':
                p, q = message.pose.pose.position, message.pose.pose.orientation
                yaw = np.arctan2(2 * (q.w * q.z + q.x * q.y), 1 - 2 * (q.y * q.y + q.z * q.z))
                twist = message.twist.twist
                streams['state'].append((stamp, np.array([p.x, p.y, yaw, twist.linear.x, twist.angular.z],
                                                         np.float32)))
            else:
                pixels = np.frombuffer(bytes(message.data), np.uint8).reshape(message.height, message.width, 3)
                streams['image'].append((stamp, pixels))
    return streams


def matching_stamp(stream: list, value: np.ndarray) -> int:
    stamps = [stamp for stamp, candidate in stream if np.array_equal(candidate, value)]
    assert stamps, 'LeRobot returned a value that no message of the bag holds'
    return stamps[0]


def test_lerobot_loads_every_frame_and_returns_the_bags_data(expert_export):
    folder, stdout, read, samples = expert_export
    info = json.loads((folder / 'lerobot' / 'meta' / 'info.json').read_text())
    assert read['lerobot'] == LEROBOT_VERSION and read['frames'] == info['total_frames'] > 0
    assert read['episodes'] == info['total_episodes'] >= 2 and read['fps'] == RATE
    assert read['camera_keys'] == ['observation.images.camera']
    assert read['batch_shapes']['observation.images.camera'] == [4, 3, 48, 64]
    assert set(read['tasks'].values()) == {GOAL_TASK}  # expert episodes drive to a goal
    columns = {key[len('column:'):]: samples[key] for key in samples.files if key.startswith('column:')}
    episode, frame = columns['episode_index'][:, 0].astype(int), columns['frame_index'][:, 0].astype(int)
    for index in np.unique(episode):  # no gaps: each episode's timestamps are its frame indices at the rate
        rows = episode == index
        assert np.array_equal(frame[rows], np.arange(rows.sum()))
        assert np.allclose(columns['timestamp'][rows, 0], frame[rows] / RATE, atol=1e-6)
    manifest = json.loads((folder / 'dataset' / 'dataset.json').read_text())
    bags = [folder / 'dataset' / e['bag'] for e in manifest['episodes']]
    assert 'split' in stdout and '0 frames rejected' in stdout, stdout  # one LeRobot episode per bag here
    for sampled in read['sampled_images']:
        streams = bag_streams(bags[episode[sampled]])
        scan_stamp = matching_stamp(streams['scan'], columns['observation.scan'][sampled].astype(np.float32))
        state_stamp = matching_stamp(streams['state'], columns['observation.state'][sampled].astype(np.float32))
        image = samples[f'image:observation.images.camera@{sampled}']
        pixels = np.round(image.transpose(1, 2, 0) * 255).astype(np.uint8)
        image_stamp = matching_stamp(streams['image'], pixels)
        limit = 2 * 0.5 / RATE * 1e9  # each within the default skew (half a period) of the frame's instant
        assert max(scan_stamp, state_stamp, image_stamp) - min(scan_stamp, state_stamp, image_stamp) <= limit
        action = columns['action'][sampled].astype(np.float32)
        assert any(np.array_equal(action, command) for _, command in streams['command']) or not action.any()


def test_rejected_frames_split_the_episode_and_lerobot_loads_both(expert_export, tmp_path):
    """A bag whose /scan stops for a second: the frames of that second are rejected, and the bag becomes
    two episodes without gaps instead of one with a hole."""
    folder = expert_export[0]
    manifest = json.loads((folder / 'dataset' / 'dataset.json').read_text())
    source = folder / 'dataset' / manifest['episodes'][0]['bag']
    holed = tmp_path / 'holed'
    writer = BagWriter(str(holed), flush_period=float('inf'), describe_while_writing=False)
    with AnyReader([source]) as reader:
        for connection in reader.connections:
            writer.add_topic(connection.topic, connection.msgtype)
        for connection, timestamp, raw in reader.messages():
            if connection.topic == '/scan' and 1.5e9 <= timestamp < 2.5e9:
                continue  # the lidar went quiet for a second
            writer.write(connection.topic, timestamp, bytes(raw))
    writer.close()
    foxglove_counts(holed)  # a bag Foxglove's reader opens, CRCs and all
    exported = robotsim('dataset', 'export', str(holed), '--format', 'lerobot', '--rate', str(RATE), '--out',
                        str(tmp_path / 'lerobot'))
    assert '1 split where frames were rejected' in exported.stdout, exported.stdout
    read = read_with_lerobot(tmp_path / 'lerobot', tmp_path / 'read')
    assert read['episodes'] == 2
    frame = np.load(tmp_path / 'read' / 'samples.npz')['column:frame_index'][:, 0]
    assert list(frame).count(0) == 2  # two episodes, each from frame 0 on
    assert set(read['tasks'].values()) == {GOAL_TASK}  # a bag with a goal


def test_a_wander_dataset_has_no_goal_task(tmp_path):
    robotsim('dataset', 'generate', '--randomization', str(COURSE), '--episodes', '1', '--seed', '3',
             '--out', str(tmp_path / 'dataset'), '--no-progress')
    robotsim('dataset', 'export', str(tmp_path / 'dataset'), '--format', 'lerobot', '--rate', str(RATE),
             '--out', str(tmp_path / 'lerobot'))
    read = read_with_lerobot(tmp_path / 'lerobot', tmp_path / 'read')
    assert set(read['tasks'].values()) == {WANDER_TASK}
