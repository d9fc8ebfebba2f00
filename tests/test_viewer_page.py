"""`robotsim view BAG --out run.html`: the offline replay page, opened in a real headless Chromium.

For a `record:=true` recording of the ROS graph and for a dataset episode: no console errors, no request
leaves the file, and the robot's base read back from the drawn three.js scene at three bag timestamps
equals the bag's ground truth within 1 cm. A bag without TF or robot description gets a page that says so.
Screenshots are saved in each test's tmp folder (and were looked at when this was written)."""

from __future__ import annotations

import hashlib
import json
import math
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import transforms3d.quaternions as t3q
import yaml
from rosbags.highlevel import AnyReader

from browser_helpers import READY_TIMEOUT_MS, VIEWPORT, PageLog, chromium, open_viewer
from robotsim_core.description import load_robot
from robotsim_core.description.kinematics import forward_kinematics
from robotsim_core.viewer.page import ENTRY_MODULES, VENDOR, import_map, vendor_record
from rostest_helpers import Launch

WORKSPACE = Path(__file__).resolve().parents[1]
POSE_TOLERANCE = 0.01  # m: the bound


def view(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, '-m', 'robotsim.cli', 'view', *args], capture_output=True,
                          text=True, timeout=300)


def truth_samples(bag: Path) -> tuple[float, list[tuple[float, np.ndarray]]]:
    """(bag start s, [(stamp s, 4x4 world <- base)]) from /sim/ground_truth."""
    samples = []
    with AnyReader([bag]) as reader:
        start = reader.start_time * 1e-9
        connections = [c for c in reader.connections if c.topic == '/sim/ground_truth']
        for connection, _, raw in reader.messages(connections=connections):
            message = reader.deserialize(raw, connection.msgtype)
            p, q = message.pose.pose.position, message.pose.pose.orientation
            pose = np.eye(4)
            pose[:3, :3] = t3q.quat2mat((q.w, q.x, q.y, q.z))
            pose[:3, 3] = (p.x, p.y, p.z)
            samples.append((message.header.stamp.sec + message.header.stamp.nanosec * 1e-9, pose))
    return start, samples


def joint_samples(bag: Path) -> list[tuple[float, dict[str, float]]]:
    rows = []
    with AnyReader([bag]) as reader:
        connections = [c for c in reader.connections if c.topic == '/joint_states']
        for connection, _, raw in reader.messages(connections=connections):
            message = reader.deserialize(raw, connection.msgtype)
            rows.append((message.header.stamp.sec + message.header.stamp.nanosec * 1e-9,
                         dict(zip(message.name, (float(p) for p in message.position)))))
    return rows


def drawn_matrix(pose: dict) -> np.ndarray:
    matrix = np.eye(4)
    matrix[:3, :3] = t3q.quat2mat((pose['qw'], pose['qx'], pose['qy'], pose['qz']))
    matrix[:3, 3] = (pose['x'], pose['y'], pose['z'])
    return matrix


def rotation_angle(a: np.ndarray, b: np.ndarray) -> float:
    return float(np.arccos(np.clip((np.trace(a[:3, :3].T @ b[:3, :3]) - 1) / 2, -1.0, 1.0)))


def assert_base_follows_truth(page, bag: Path) -> list[float]:
    """The drawn base at three ground-truth stamps (a quarter, half and three quarters in) equals the bag's
    ground truth within 1 cm; returns the distances."""
    start, samples = truth_samples(bag)
    assert len(samples) > 20
    first, last = samples[0][1], samples[-1][1]
    assert np.linalg.norm(last[:3, 3] - first[:3, 3]) > 0.1, 'the robot hardly moved: the comparison would be weak'
    distances = []
    for fraction in (0.25, 0.5, 0.75):
        stamp, truth = samples[int(fraction * (len(samples) - 1))]
        drawn = page.evaluate(f'robotsimViewer.poseAt({stamp - start!r})')
        matrix = drawn_matrix(drawn)
        distance = float(np.linalg.norm(matrix[:3, 3] - truth[:3, 3]))
        assert distance < POSE_TOLERANCE, f'at t={stamp - start:.3f} s the drawn base is {distance:.4f} m off'
        assert rotation_angle(matrix, truth) < 0.01
        distances.append(distance)
    return distances


def assert_offline(log) -> None:
    outside = [url for url in log.requests if not url.startswith(('file:', 'data:', 'blob:'))]
    assert not outside, f'the page asked the network for {outside}'


@pytest.fixture(scope='module')
def recording(tmp_path_factory) -> Path:
    """8 s of `robotsim launch sim record:=true demo:=true` (the wanderer drives the rover in the room)."""
    bag = tmp_path_factory.mktemp('recording') / 'bag'
    run = Launch(['robotsim', 'launch', 'sim', 'record:=true', f'bag:={bag}', 'demo:=true', 'duration:=8'])
    try:
        assert run.finish(timeout=300) == 0, run.text
    finally:
        run.stop()
    return bag


def test_vendored_three_matches_its_record():
    record = vendor_record()
    assert record['package'] == 'three' and record['version']
    for relative, digest in record['sha256'].items():
        assert hashlib.sha256((VENDOR / relative).read_bytes()).hexdigest() == digest, relative
    assert (VENDOR / 'LICENSE').read_text().startswith('The MIT License')
    imports = import_map()['imports']
    assert set(ENTRY_MODULES) <= set(imports)
    assert all(url.startswith('data:text/javascript;base64,') for url in imports.values())


def test_replay_of_a_recording(recording, tmp_path):
    page_file = tmp_path / 'run.html'
    completed = view(str(recording), '--out', str(page_file))  # the world comes from the bag (/sim/scenario)
    assert completed.returncode == 0, completed.stderr
    title = re.search(r'<title>(.*?)</title>', page_file.read_text())
    assert title and title[1] == 'bag: rover in room', (title, completed.stdout, completed.stderr)  # the world, drawn
    assert 'base from /sim/ground_truth' in completed.stdout and 'robot rover from /robot_description' in completed.stdout
    with chromium() as browser:
        page, log = open_viewer(browser, page_file.as_uri())
        state = page.evaluate('({notes: robotsimViewer.notes, errors: robotsimViewer.errors, '
                              'links: robotsimViewer.linkNames()})')
        assert state['errors'] == [] and state['notes'] == [], state
        assert set(load_robot('rover').tree.links) <= set(state['links'])
        distances = assert_base_follows_truth(page, recording)
        print(f'drawn base vs ground truth: {", ".join(f"{d * 1000:.2f} mm" for d in distances)}')
        page.evaluate('robotsimViewer.seek(6.0)')
        assert page.evaluate('robotsimViewer.visiblePoints()') > 100  # the lidar scan as points
        assert page.get_attribute('#camera', 'src').startswith('data:image/jpeg;base64,')
        assert 'sim time 6.00 s' in page.inner_text('#clock')
        page.screenshot(path=str(tmp_path / 'replay_recording.png'))
        assert log.errors == [], log.errors
        assert_offline(log)


@pytest.fixture(scope='module')
def episode(tmp_path_factory) -> Path:
    """One 20 s dataset episode (fast path, the wanderer, cameras on)."""
    dataset = tmp_path_factory.mktemp('dataset') / 'corpus'
    generated = subprocess.run(['robotsim', 'dataset', 'generate', '--randomization',
                                str(WORKSPACE / 'config' / 'randomization' / 'room_obstacles.yaml'), '--episodes', '1',
                                '--workers', '1', '--seed', '16', '--out', str(dataset)],
                               capture_output=True, text=True, timeout=600)
    assert generated.returncode == 0, generated.stderr
    return dataset / 'episode_000000'


def test_replay_of_a_dataset_episode(episode, tmp_path):
    page_file = tmp_path / 'episode.html'
    completed = view(str(episode), '--out', str(page_file))
    assert completed.returncode == 0, completed.stderr
    assert 'from ' + str(episode / 'robot.yaml') in completed.stdout and 'world room' in completed.stdout
    model = load_robot(str(episode / 'robot.yaml'))
    with chromium() as browser:
        page, log = open_viewer(browser, page_file.as_uri())
        assert page.evaluate('robotsimViewer.errors') == []
        assert_base_follows_truth(page, episode)
        # The floor's checker (the world's floor texture) decoded by three.js and repeated; the walls are flat.
        assert page.evaluate("robotsimViewer.textureOf('floor')") == {'width': 64, 'height': 64, 'wrapS': True,
                                                                         'wrapT': True}
        assert page.evaluate("robotsimViewer.textureOf('wall_0')") is None
        # Dataset bags carry no joint TF: the wheels turn by the description's joints from /joint_states.
        start, truth = truth_samples(episode)
        rows = joint_samples(episode)
        stamp, positions = rows[len(rows) // 2]
        base = min(truth, key=lambda sample: abs(sample[0] - stamp))[1]
        fk = forward_kinematics(model.tree, positions)
        wheel = model.drive.wheels[0].link
        drawn = drawn_matrix(page.evaluate(f'robotsimViewer.nodePose({wheel!r}, {stamp - start!r})'))
        expected = base @ fk[wheel]
        assert np.linalg.norm(drawn[:3, 3] - expected[:3, 3]) < 1e-3
        assert rotation_angle(drawn, expected) < 0.02, 'the wheel is not turned as /joint_states says'
        spin = abs(positions[model.tree.parent_joint(wheel).name])
        assert spin > 0.5, 'the wheel hardly turned: the check would be weak'
        page.screenshot(path=str(tmp_path / 'replay_episode.png'))
        assert log.errors == [], log.errors
        assert_offline(log)


def write_odometry_only_bag(path: Path) -> list[tuple[float, float, float]]:
    """A real robot's minimal bag: /odom only (no TF, no description, no ground truth); returns (t, x, y)."""
    from rosbags.rosbag2 import StoragePlugin, Writer
    from rosbags.typesys import Stores, get_typestore

    store = get_typestore(Stores.ROS2_KILTED)
    Odometry = store.types['nav_msgs/msg/Odometry']
    Header, Time = store.types['std_msgs/msg/Header'], store.types['builtin_interfaces/msg/Time']
    Pose, PoseCov = store.types['geometry_msgs/msg/Pose'], store.types['geometry_msgs/msg/PoseWithCovariance']
    Point, Quaternion = store.types['geometry_msgs/msg/Point'], store.types['geometry_msgs/msg/Quaternion']
    Twist, TwistCov = store.types['geometry_msgs/msg/Twist'], store.types['geometry_msgs/msg/TwistWithCovariance']
    Vector3 = store.types['geometry_msgs/msg/Vector3']
    zero = Vector3(x=0.0, y=0.0, z=0.0)
    samples = []
    with Writer(path, version=9, storage_plugin=StoragePlugin.MCAP) as writer:
        connection = writer.add_connection('/odom', Odometry.__msgtype__, typestore=store)
        for i in range(100):
            t = 1_700_000_000 + i * 0.05  # wall-clock stamps, as a real robot's
            x, y, yaw = 0.02 * i, 0.5 * math.sin(0.05 * i), 0.3
            sec, nanosec = int(t), round((t - int(t)) * 1e9)
            message = Odometry(
                header=Header(stamp=Time(sec=sec, nanosec=nanosec), frame_id='odom'), child_frame_id='base_link',
                pose=PoseCov(pose=Pose(position=Point(x=x, y=y, z=0.0),
                                       orientation=Quaternion(x=0.0, y=0.0, z=math.sin(yaw / 2), w=math.cos(yaw / 2))),
                             covariance=np.zeros(36)),
                twist=TwistCov(twist=Twist(linear=zero, angular=zero), covariance=np.zeros(36)))
            writer.write(connection, sec * 1_000_000_000 + nanosec, store.serialize_cdr(message, Odometry.__msgtype__))
            samples.append((i * 0.05, x, y))
    return samples


def test_a_bag_without_tf_or_description_says_what_is_missing(tmp_path):
    bag = tmp_path / 'odom_only'
    samples = write_odometry_only_bag(bag)
    page_file = tmp_path / 'odom_only.html'
    completed = view(str(bag), '--out', str(page_file))
    assert completed.returncode == 0, completed.stderr
    assert 'robot none' in completed.stdout
    with chromium() as browser:
        page, log = open_viewer(browser, page_file.as_uri())
        notes = page.inner_text('#notes')
        for expected in ('no TF in this bag', 'no robot description', 'no /sim/ground_truth',
                         'no world description', 'no /scan', 'no camera image'):
            assert expected in notes, f'{expected!r} not said on the page:\n{notes}'
        for t, x, y in (samples[20], samples[50], samples[80]):
            drawn = page.evaluate(f'robotsimViewer.poseAt({t!r})')
            assert math.hypot(drawn['x'] - x, drawn['y'] - y) < POSE_TOLERANCE, (t, drawn, x, y)
            assert drawn['yaw'] == pytest.approx(0.3, abs=1e-3)
        page.screenshot(path=str(tmp_path / 'odom_only.png'))
        assert log.errors == [], log.errors
        assert_offline(log)


def test_bad_input_is_one_line(tmp_path):
    (tmp_path / 'file.txt').write_text('not a folder')
    for args, expected in (([str(tmp_path / 'nope'), '--out', str(tmp_path / 'x.html')], 'no such bag'),
                           ([str(tmp_path), '--out', str(tmp_path)], '--out: expected a file to write, got the folder'),
                           ([str(tmp_path), '--out', str(tmp_path / 'file.txt' / 'x.html')],
                            '--out: cannot create the folder'),
                           ([str(tmp_path), '--out', str(tmp_path / 'x.html')], 'not a readable rosbag2 bag'),
                           ([str(tmp_path)], 'expected --out FILE.html'),
                           (['--live', str(tmp_path)], 'give no BAG and no --out')):
        completed = view(*args)
        assert completed.returncode == 2, (args, completed.stdout, completed.stderr)
        lines = completed.stderr.strip().splitlines()
        assert len(lines) == 1 and expected in lines[0], (args, completed.stderr)
    assert not (tmp_path / 'x.html').exists()


RIHS01 = re.compile(r'RIHS01_[0-9a-f]{64}')


@pytest.mark.parametrize('which', ['recording', 'episode'])
def test_bags_open_in_foxglove_and_ros2_bag(which, request):
    """Every MCAP channel carries its ros2msg schema (read with the `mcap` library, as Foxglove reads a file),
    and metadata.yaml has what rosbag2 (version 9) writes, agreeing with the MCAP file."""
    mcap_reader = pytest.importorskip('mcap.reader', reason='test-only dependency: ROBOTSIM_TEST_DEPS=1 scripts/setup.sh')
    bag = request.getfixturevalue(which)
    metadata = yaml.safe_load((bag / 'metadata.yaml').read_text())['rosbag2_bagfile_information']
    files = metadata['relative_file_paths']
    assert len(files) == 1 and (bag / files[0]).is_file()
    with open(bag / files[0], 'rb') as stream:
        reader = mcap_reader.make_reader(stream)
        assert reader.get_header().profile == 'ros2'
        summary = reader.get_summary()
        counts = summary.statistics.channel_message_counts
        channels = {channel.topic: channel for channel in summary.channels.values()}
        for channel in summary.channels.values():
            schema = summary.schemas.get(channel.schema_id)
            assert schema is not None, f'{channel.topic}: no schema'
            assert (channel.message_encoding, schema.encoding) == ('cdr', 'ros2msg'), channel.topic
            assert re.fullmatch(r'[a-z_0-9]+/msg/[A-Za-z0-9]+', schema.name) and schema.data.strip(), channel.topic
            assert 'offered_qos_profiles' in channel.metadata, channel.topic
        stored = {record.name: record.metadata for record in reader.iter_metadata()}
    assert 'rosbag2' in stored and 'serialized_metadata' in stored['rosbag2']
    for key in ('version', 'storage_identifier', 'duration', 'starting_time', 'message_count',
                'topics_with_message_count', 'compression_format', 'compression_mode', 'relative_file_paths',
                'files', 'custom_data', 'ros_distro'):
        assert key in metadata, f'metadata.yaml has no {key}'
    assert metadata['version'] == 9 and metadata['storage_identifier'] == 'mcap'
    assert set(metadata['duration']) == {'nanoseconds'} and set(metadata['starting_time']) == {'nanoseconds_since_epoch'}
    assert metadata['message_count'] == summary.statistics.message_count
    listed = {entry['topic_metadata']['name']: entry for entry in metadata['topics_with_message_count']}
    assert set(listed) == set(channels)
    for topic, entry in listed.items():
        topic_metadata = entry['topic_metadata']
        channel = channels[topic]
        assert topic_metadata['type'] == summary.schemas[channel.schema_id].name
        assert topic_metadata['serialization_format'] == 'cdr'
        assert RIHS01.fullmatch(topic_metadata['type_description_hash']), topic
        assert isinstance(topic_metadata['offered_qos_profiles'], list) and topic_metadata['offered_qos_profiles']
        assert entry['message_count'] == counts[channel.id], topic
    assert metadata['files'][0]['path'] == files[0] and metadata['files'][0]['message_count'] == metadata['message_count']


def test_render_of_a_default_recording_needs_no_world_or_robot(recording, tmp_path):
    """`robotsim render BAG` on a default recording (firmware in the loop: /joint_states from the simulator and
    the motor bridge): the world and robot come from the bag's /sim/scenario, the joints merged by name."""
    out = tmp_path / 'render'
    completed = subprocess.run(['robotsim', 'render', str(recording), '--out', str(out), '--engine', 'workbench',
                                '--passes', 'rgb', '--every', '30', '--limit', '2'],
                               capture_output=True, text=True, timeout=900)
    assert completed.returncode == 0, completed.stderr
    document = json.loads((out / 'render.json').read_text())
    assert len(document['frames']) == 2
    assert Path(document['world']).name == 'room.yaml' and Path(document['robot']).name == 'rover.yaml'
    assert "held at their initial position" not in completed.stderr, completed.stderr  # every joint was recorded


def test_render_of_a_dataset_episode(episode, tmp_path):
    """`robotsim render EPISODE`: the episode's world.yaml and robot.yaml beside its bag (its /sim/scenario
    holds the same files)."""
    from robotsim_sim.scenario import read_scenario

    scenario = read_scenario(episode)
    assert scenario['world']['path'] == 'world.yaml' and scenario['world']['text'] == (episode / 'world.yaml').read_text()
    manifest = json.loads((episode.parent / 'dataset.json').read_text())['episodes'][0]
    assert scenario['randomization']['drawn'] == manifest['drawn'] and scenario['seed'] == manifest['sim_seed']
    out = tmp_path / 'render'
    completed = subprocess.run(['robotsim', 'render', str(episode), '--out', str(out), '--engine', 'workbench',
                                '--passes', 'rgb', '--every', '100', '--limit', '2'],
                               capture_output=True, text=True, timeout=900)
    assert completed.returncode == 0, completed.stderr
    assert len(json.loads((out / 'render.json').read_text())['frames']) == 2


def test_the_replay_page_inline_in_a_jupyter_notebook(episode, tmp_path):
    """A real Jupyter kernel (nbclient + ipykernel) runs ``replay(BAG)`` in a cell; the cell's HTML output, placed
    in a page as a notebook front end shows it, draws the run offline: the base follows the ground truth."""
    import nbformat
    from nbclient import NotebookClient

    notebook = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(
        f'from robotsim_learning.notebook import replay\nreplay({str(episode)!r}, height=600)')])
    NotebookClient(notebook, timeout=600, kernel_name='python3').execute()
    (result,) = [output for output in notebook.cells[0].outputs if output.output_type == 'execute_result']
    assert result.data['text/plain'].startswith('<robotsim replay: ') and 'world room' in result.data['text/plain']
    host = tmp_path / 'notebook.html'
    host.write_text('<!doctype html><html><head><meta charset="utf-8"><title>notebook</title></head><body>'
                    f'<div class="jp-OutputArea-output">{result.data["text/html"]}</div></body></html>',
                    encoding='utf-8')
    with chromium() as browser:
        page = browser.new_page(viewport=VIEWPORT)
        log = PageLog()
        page.on('console', lambda message: log.console.append((message.type, message.text)))
        page.on('pageerror', lambda error: log.console.append(('pageerror', str(error))))
        page.on('request', lambda request: log.requests.append(request.url))
        page.goto(host.as_uri())
        (frame,) = [frame for frame in page.frames if frame != page.main_frame]
        frame.wait_for_function('window.robotsimViewer && (window.robotsimViewer.ready || '
                                'window.robotsimViewer.errors.length > 0)', timeout=READY_TIMEOUT_MS)
        assert frame.evaluate('robotsimViewer.errors') == []
        assert_base_follows_truth(frame, episode)
        page.screenshot(path=str(tmp_path / 'notebook.png'))
        assert log.errors == [], log.errors
        assert_offline(log)


def bag_series(bag: Path, topic: str, value) -> list[tuple[float, np.ndarray]]:
    """(seconds since the bag's start, value(message)) of every message on ``topic``; a message without a header
    is placed at its bag time (as /cmd_vel's Twist)."""
    rows = []
    with AnyReader([bag]) as reader:
        start = reader.start_time * 1e-9
        connections = [c for c in reader.connections if c.topic == topic]
        for connection, bag_time, raw in reader.messages(connections=connections):
            message = reader.deserialize(raw, connection.msgtype)
            header = getattr(message, 'header', None)
            t = header.stamp.sec + header.stamp.nanosec * 1e-9 if header is not None else bag_time * 1e-9
            rows.append((t - start, np.asarray(value(message), dtype=float)))
    return rows


def drawn_vector(arrow: dict) -> np.ndarray:
    return np.asarray(arrow['direction']) * arrow['length'] / arrow['scale']


def test_velocities_are_drawn_as_arrows_at_the_base(episode, tmp_path):
    """The commanded (/cmd_vel) and actual (/odom twist) velocities of a dataset episode drawn as arrows on the
    base, equal to the bag's vectors, and each hidden by its legend checkbox."""
    page_file = tmp_path / 'episode.html'
    assert view(str(episode), '--out', str(page_file)).returncode == 0
    commands = bag_series(episode, '/cmd_vel', lambda m: (m.linear.x, m.linear.y, m.linear.z))
    actual = bag_series(episode, '/odom', lambda m: (m.twist.twist.linear.x, m.twist.twist.linear.y,
                                                     m.twist.twist.linear.z))
    assert max(np.linalg.norm(v) for _, v in commands) > 0.1, 'the episode hardly moved: the check would be weak'
    with chromium() as browser:
        page, log = open_viewer(browser, page_file.as_uri())
        for name, rows, tolerance in (('commanded velocity', commands, 1e-4), ('actual velocity', actual, 0.02)):
            for fraction in (0.25, 0.5, 0.75):
                t, expected = rows[int(fraction * (len(rows) - 1))]
                arrow = page.evaluate(f'robotsimViewer.arrowAt({name!r}, {t!r})')
                assert arrow['parent'] in ('base_footprint', 'base_link'), arrow
                if np.linalg.norm(expected) > 0.02:
                    assert arrow['visible']
                    assert np.linalg.norm(drawn_vector(arrow) - expected) < tolerance + 0.01 * np.linalg.norm(expected), \
                        (name, t, arrow, expected)
            assert page.evaluate(f'robotsimViewer.setArrowShown({name!r}, false)') is False
            assert page.evaluate(f'robotsimViewer.arrowAt({name!r}, {rows[len(rows) // 2][0]!r})')['visible'] is False
        assert page.locator('#legend').inner_text().count('1 m = ') == 2
        page.screenshot(path=str(tmp_path / 'arrows_hidden.png'))
        assert log.errors == [], log.errors


@pytest.fixture(scope='module')
def bumper_bag(tmp_path_factory) -> tuple[Path, Path]:
    """3 s of the racer with a contact sensor carrying a box into a crate, recorded with the simulator's own message
    code (ground truth, odometry, TF, contacts); returns (bag, robot file)."""
    from rclpy.serialization import serialize_message

    from robotsim_learning.bag_writer import BagWriter
    from robotsim_sim.ros.robot_messages import RobotMessages
    from robotsim_sim.scene import RobotPlacement, load_world
    from robotsim_sim.simulation import SimOptions, Simulation

    folder = tmp_path_factory.mktemp('bumper')
    robot = yaml.safe_load((WORKSPACE / 'config' / 'robots' / 'racer.yaml').read_text())
    # A contact sensor on the chassis and a force-torque sensor on a rear wheel (the wheel's load on its axle).
    robot['sensors'] = [{'type': 'contact', 'name': 'bumper', 'parent': 'base_link', 'rate': 20},
                        {'type': 'force_torque', 'name': 'axle', 'parent': 'rear_left_wheel_link', 'rate': 20}]
    (folder / 'robot.yaml').write_text(yaml.safe_dump(robot))
    (folder / 'world.yaml').write_text(yaml.safe_dump({
        'name': 'bumper_view', 'floor': {'size': [6, 6]},
        'boxes': [{'name': 'load', 'position': [0.0, 0.0, 0.4], 'size': [0.12, 0.12, 0.1], 'mass': 1.5},
                  {'name': 'crate', 'position': [0.9, 0.0, 0.25], 'size': [0.3, 1.0, 0.5]}]}))
    sim = Simulation(load_world(str(folder / 'world.yaml')), [RobotPlacement(load_robot(str(folder / 'robot.yaml')))],
                     SimOptions(seed=0, cameras=False))
    messages = RobotMessages(sim.robots[0], '', True, sim.labels)
    bag = BagWriter(str(folder / 'bag'))
    for topic in messages.topics:
        if topic.name != 'sim/status':
            bag.add_topic(f'/{topic.name}', topic.type)
    try:
        for name, message in messages.latched():
            bag.write(f'/{name}', 0, serialize_message(message))
        while sim.time_ns < 3_000_000_000:
            if sim.time_ns > 1_000_000_000:
                sim.command_base(0, 0.4, 0.0)
            for event in sim.step():
                for name, message in messages.build(event.channel, event.reading, event.reading.stamp):
                    bag.write(f'/{name}', event.reading.stamp,
                              message if type(message) is bytes else serialize_message(message))
    finally:
        bag.close()
        sim.close()
    return folder / 'bag', folder / 'robot.yaml'


def test_contact_and_wrench_forces_are_drawn_as_arrows(bumper_bag, tmp_path):
    bag, robot = bumper_bag
    page_file = tmp_path / 'bumper.html'
    completed = view(str(bag), '--out', str(page_file), '--robot', str(robot))
    assert completed.returncode == 0, completed.stderr

    def total(message):
        forces = [w.body_1_wrench.force for c in message.contacts for w in c.wrenches]
        points = [p for c in message.contacts for p in c.positions]
        return [*(sum(getattr(f, a) for f in forces) for a in 'xyz'),
                *((sum(getattr(p, a) for p in points) / len(points)) if points else 0.0 for a in 'xyz')]
    rows = bag_series(bag, '/bumper/contacts', total)
    carrying = [(t, v) for t, v in rows if 0.5 < t < 1.0]
    pushing = [(t, v) for t, v in rows if v[0] < -1.0]
    assert carrying and pushing, 'the run neither carried the box nor pushed the crate: the check would be weak'
    with chromium() as browser:
        page, log = open_viewer(browser, page_file.as_uri())
        for t, expected in (carrying[-1], pushing[-1]):
            arrow = page.evaluate(f"robotsimViewer.arrowAt('/bumper/contacts', {t!r})")
            assert arrow['visible'] and arrow['parent'] == 'bumper_link', arrow
            assert np.allclose(drawn_vector(arrow), expected[:3], atol=1e-3), (arrow, expected)
            assert np.allclose(arrow['origin'], expected[3:], atol=1e-4), (arrow, expected)  # the mean contact point
        # The force-torque sensor's force (WrenchStamped) at its frame.
        wrenches = bag_series(bag, '/axle/wrench', lambda m: (m.wrench.force.x, m.wrench.force.y, m.wrench.force.z))
        t, expected = wrenches[len(wrenches) // 2]
        arrow = page.evaluate(f"robotsimViewer.arrowAt('/axle/wrench', {t!r})")
        assert arrow['visible'] and arrow['parent'] == 'axle_link', arrow
        assert np.linalg.norm(expected) > 1.0 and np.allclose(drawn_vector(arrow), expected, atol=1e-3), (arrow, expected)
        page.evaluate(f"robotsimViewer.seek({pushing[-1][0]!r})")
        page.screenshot(path=str(tmp_path / 'bumper.png'))
        assert log.errors == [], log.errors
    # The same arrow in the USD stage, read back with pxr: the vector, the shaft from the contact point.
    from pxr import Usd
    stage_file = tmp_path / 'bumper.usda'
    completed = view(str(bag), '--usd', str(stage_file), '--robot', str(robot))
    assert completed.returncode == 0 and '3 vectors' in completed.stdout, completed
    stage = Usd.Stage.Open(str(stage_file))
    arrow = stage.GetPrimAtPath('/World/robot/bumper_link/vectors/_bumper_contacts')
    assert arrow.IsValid() and arrow.GetAttribute('robotsim:unit').Get() == 'N'
    scale = arrow.GetAttribute('robotsim:scale').Get()
    shaft = stage.GetPrimAtPath('/World/robot/bumper_link/vectors/_bumper_contacts/shaft').GetAttribute('points')
    for t, expected in (carrying[-1], pushing[-1]):
        code = round(t * 1000.0, 6)
        assert np.allclose(arrow.GetAttribute('robotsim:vector').Get(code), expected[:3], atol=1e-3)
        start, tip = (np.array(p) for p in shaft.Get(code))
        assert np.allclose(start, expected[3:], atol=1e-4) and np.allclose(tip - start, expected[:3] * scale, atol=1e-3)
