"""`robotsim view --live` beside a running simulation: the live page in a real headless Chromium, the
Foxglove WebSocket protocol read by a plain WebSocket client, a port in use, and `view:=true`.

The page's drawn base at three of its stamps equals the ground truth this test received itself from the
ROS graph within 1 cm; a Foxglove client gets /scan as CDR with its ros2msg schema and decodes it."""

from __future__ import annotations

import json
import re
import socket
import struct
import subprocess
import sys

import numpy as np
import pytest
import transforms3d.quaternions as t3q
from nav_msgs.msg import Odometry

from browser_helpers import chromium, open_viewer
from robotsim.bringup import graph_for
from rostest_helpers import RELIABLE, Launch, Observer, stamp_seconds
from test_viewer_page import POSE_TOLERANCE, drawn_matrix, rotation_angle


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(('127.0.0.1', 0))
        return probe.getsockname()[1]


def truth_matrix(message) -> np.ndarray:
    p, q = message.pose.pose.position, message.pose.pose.orientation
    matrix = np.eye(4)
    matrix[:3, :3] = t3q.quat2mat((q.w, q.x, q.y, q.z))
    matrix[:3, 3] = (p.x, p.y, p.z)
    return matrix


@pytest.fixture(scope='module')
def live(tmp_path_factory):
    """The room with the wanderer driving (sim time 0..300 s at real time), and the live view."""
    port, foxglove_port = free_port(), free_port()
    sim = Launch(['robotsim', 'launch', 'sim', 'demo:=true', 'duration:=300'])
    viewer = Launch([sys.executable, '-m', 'robotsim.cli', 'view', '--live', '--port', str(port),
                     '--foxglove-port', str(foxglove_port)])
    try:
        viewer.wait_for(rf'open http://127\.0\.0\.1:{port}/ in a browser; Foxglove: ws://127\.0\.0\.1:{foxglove_port}',
                        120)
        yield {'port': port, 'foxglove_port': foxglove_port, 'viewer': viewer}
    finally:
        viewer.stop()
        sim.stop()


def test_live_page_follows_the_simulation(live, tmp_path):
    observer = Observer('live_view_truth')
    try:
        observer.watch('/sim/ground_truth', Odometry, RELIABLE)
        with chromium() as browser:
            page, log = open_viewer(browser, f'http://127.0.0.1:{live["port"]}/')
            # Hang guard only: wait until the page holds a few seconds of the run.
            deadline_ms = 180_000
            page.wait_for_function('robotsimViewer.duration > 0 && window.robotsimViewer.linkNames().length > 0',
                                   timeout=deadline_ms)
            observer.spin_for(6.0)
            page.wait_for_function('document.getElementById("status").textContent.includes("/scan")',
                                   timeout=deadline_ms)
            truth = {round(stamp_seconds(m.header.stamp), 6): m for m in observer.messages['/sim/ground_truth']}
            stamps = page.evaluate('robotsimViewer.baseTimes()')
            common = sorted(set(round(s, 6) for s in stamps) & set(truth))
            assert len(common) >= 3, f'the page and the test share {len(common)} ground-truth stamps'
            moved = np.linalg.norm(truth_matrix(truth[common[-1]])[:3, 3] - truth_matrix(truth[common[0]])[:3, 3])
            for stamp in (common[0], common[len(common) // 2], common[-1]):
                drawn = drawn_matrix(page.evaluate(f'robotsimViewer.poseAt({stamp!r})'))
                expected = truth_matrix(truth[stamp])
                assert np.linalg.norm(drawn[:3, 3] - expected[:3, 3]) < POSE_TOLERANCE, stamp
                assert rotation_angle(drawn, expected) < 0.01
            status = page.inner_text('#status')
            assert re.search(r'sim time +[\d.]+ s +RTF [\d.]+', status), status
            assert re.search(r'/scan +[\d.]+ Hz', status) and re.search(r'/camera/image_raw +[\d.]+ Hz', status)
            page.wait_for_function('robotsimViewer.visiblePoints() > 100', timeout=deadline_ms)
            received = page.evaluate('robotsimViewer.live.samples')  # the counters bench/bench_viewer.py reads
            assert received.get('base', 0) >= len(common) and received.get('scan', 0) > 0, received
            page.wait_for_function('document.getElementById("camera").src.startsWith("data:image/jpeg")',
                                   timeout=deadline_ms)
            page.screenshot(path=str(tmp_path / 'live.png'))
            print(f'live page: {len(common)} shared stamps, the robot moved {moved:.2f} m between them')
            assert log.errors == [], log.errors
            outside = [url for url in log.requests
                       if not url.startswith((f'http://127.0.0.1:{live["port"]}/', f'ws://127.0.0.1:{live["port"]}/',
                                              'data:', 'blob:'))]
            assert not outside, outside
    finally:
        observer.close()


def test_foxglove_client_gets_ros_messages(live):
    from rosbags.typesys import Stores, get_typestore
    from websockets.sync.client import connect

    store = get_typestore(Stores.ROS2_KILTED)
    with connect(f'ws://127.0.0.1:{live["foxglove_port"]}', subprotocols=['foxglove.sdk.v1'],
                 open_timeout=30) as client:
        channels = {}
        while '/scan' not in channels:
            message = client.recv(timeout=60)
            if isinstance(message, str):
                body = json.loads(message)
                if body.get('op') == 'advertise':
                    channels.update({c['topic']: c for c in body['channels']})
        for topic, schema in (('/scan', 'sensor_msgs/msg/LaserScan'), ('/tf', 'tf2_msgs/msg/TFMessage'),
                              ('/sim/ground_truth', 'nav_msgs/msg/Odometry')):
            if topic not in channels:
                continue
            channel = channels[topic]
            assert (channel['encoding'], channel['schemaName'], channel['schemaEncoding']) == ('cdr', schema, 'ros2msg')
            assert channel['schema'].strip()
        scan = channels['/scan']
        client.send(json.dumps({'op': 'subscribe', 'subscriptions': [{'id': 7, 'channelId': scan['id']}]}))
        while True:
            message = client.recv(timeout=60)
            if isinstance(message, bytes) and message[0] == 1:  # opcode 1: message data
                subscription, _log_time = struct.unpack_from('<IQ', message, 1)
                assert subscription == 7
                decoded = store.deserialize_cdr(message[13:], 'sensor_msgs/msg/LaserScan')
                assert len(decoded.ranges) == 360 and decoded.header.frame_id == 'laser'
                break


def test_port_in_use_is_one_line(live):
    for args in (['--port', str(live['port']), '--foxglove-port', '0'],
                 ['--port', str(free_port()), '--foxglove-port', str(live['foxglove_port'])]):
        completed = subprocess.run([sys.executable, '-m', 'robotsim.cli', 'view', '--live', *args],
                                   capture_output=True, text=True, timeout=120)
        assert completed.returncode == 2, (completed.stdout, completed.stderr)
        lines = completed.stderr.strip().splitlines()
        assert len(lines) == 1 and 'is in use' in lines[0] and lines[0].startswith('robotsim: error:'), completed.stderr
        # It names the option and the launch argument (both exist: test_view_launch_argument_adds_the_viewer).
        taken = '--port (view_port:=)' if args[1] == str(live['port']) else '--foxglove-port (foxglove_port:=)'
        assert taken in lines[0], lines[0]


def test_view_launch_argument_adds_the_viewer():
    nodes = {(n.package, n.executable): n for n in graph_for('sim', {'view': 'true', 'namespace': 'r1'})}
    viewer = nodes[('robotsim_learning', 'viewer')]
    assert viewer.parameters == {'robot': 'rover', 'world': 'room', 'robot_namespace': 'r1', 'port': 8080,
                                 'foxglove_port': 8765, 'use_sim_time': True}
    assert not viewer.required
    ports = {(n.package, n.executable): n for n in graph_for('sim', {'view': 'true', 'view_port': '9080',
                                                                      'foxglove_port': '0'})}
    assert {k: ports[('robotsim_learning', 'viewer')].parameters[k] for k in ('port', 'foxglove_port')} == \
        {'port': 9080, 'foxglove_port': 0}
    assert ('robotsim_learning', 'viewer') not in {(n.package, n.executable) for n in graph_for('sim', {})}
    real = {(n.package, n.executable): n for n in graph_for('real', {'view': 'true'})}
    assert real[('robotsim_learning', 'viewer')].parameters['world'] == ''


def test_foxglove_layout_names_contract_topics_and_frames():
    """config/foxglove/robotsim.json (Foxglove's 'import layout'): every topic it shows is one the rover offers
    (or /goal_pose, which the drivers read), every frame is a frame of the rover, every panel is placed."""
    from robotsim_core.contract import robot_contract
    from robotsim_core.description import load_robot
    from rostest_helpers import WORKSPACE

    layout = json.loads((WORKSPACE / 'config' / 'foxglove' / 'robotsim.json').read_text())
    model = load_robot('rover')
    offered = {f'/{topic.name}' for topic in robot_contract(model).topics} | {'/goal_pose'}
    named = set()
    three_d = layout['configById']['3D!robotsim']
    named |= set(three_d['topics'])
    named |= {layer['topic'] for layer in three_d['layers'].values() if 'topic' in layer}
    named.add(three_d['publish']['poseTopic'])
    named.add(layout['configById']['Image!camera']['imageMode']['imageTopic'])
    named |= {path['value'].split('.')[0] for path in layout['configById']['Plot!speed']['paths']}
    named.add(layout['configById']['RawMessages!joints']['topicPath'])
    assert named <= offered, named - offered
    frames = set(model.tree.links) | {'odom'}
    assert three_d['followTf'] in frames
    assert {layer['frameId'] for layer in three_d['layers'].values() if 'frameId' in layer} <= frames

    def panels(node):
        return {node} if isinstance(node, str) else panels(node['first']) | panels(node['second'])

    assert panels(layout['layout']) == set(layout['configById'])


def test_header_stamp_is_read_from_the_serialized_bytes():
    """The viewer reads the stamps of images, IMU and camera info without deserialising them (it counts their
    rates and thins the camera by them): the stamp of real serialized messages, None for bytes that are no CDR."""
    from rclpy.serialization import serialize_message
    from sensor_msgs.msg import CameraInfo, Image, Imu

    from robotsim_learning.ros.viewer_node import HEADER_FIRST, header_stamp

    for message_type in (Image, Imu, CameraInfo):
        message = message_type()
        message.header.stamp.sec, message.header.stamp.nanosec = 1234, 567_000_000
        message.header.frame_id = 'camera_optical'
        assert f'sensor_msgs/msg/{message_type.__name__}' in HEADER_FIRST
        assert header_stamp(serialize_message(message)) == pytest.approx(1234.567, abs=1e-9)
    assert header_stamp(b'\x00\x01\x00') is None
    assert header_stamp(b'\x7f' * 16) is None


def test_a_viewer_that_cannot_start_is_named_in_the_launchers_summary():
    """view:=true with view_port:= a port in use: the viewer says which launch argument to change, the bringup
    runs on without it (not a required node), and the launcher's last line names it."""
    with socket.socket() as taken:
        taken.bind(('127.0.0.1', 0))
        taken.listen()
        port = taken.getsockname()[1]
        run = Launch(['robotsim', 'launch', 'sim', 'view:=true', f'view_port:={port}', 'foxglove_port:=0',
                      'cameras:=false', 'firmware:=false', 'duration:=2'])
        try:
            assert run.finish(timeout=300) == 0, run.text
        finally:
            run.stop()
    assert f'port {port} on 127.0.0.1 is in use' in run.text and '(view_port:=)' in run.text, run.text
    summary = [line for line in run.text.splitlines() if 'nodes that failed while the bringup ran' in line]
    assert summary == ['[robotsim] nodes that failed while the bringup ran: robotsim_viewer (status 2)'], run.text
