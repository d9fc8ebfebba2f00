"""The bare-machine launcher driving real nodes: `make sim`'s script end to end (live summary, run
report), stop on Ctrl-C, stop when a required node dies, a two-robot world, and recording."""

import math
import os
import re
import signal
import subprocess
import time

import numpy as np
import pytest
import yaml
from nav_msgs.msg import Odometry
from PIL import Image as PilImage
from rosbags.highlevel import AnyReader
from sensor_msgs.msg import Image, LaserScan

from bag_readers import foxglove_counts
from rostest_helpers import (RELIABLE, SENSOR, WORKSPACE, CpuHog, Launch, Observer, assert_recorded_everything_published,
                             published_counts, wait_until_publishing)
from robotsim_msgs.srv import Pause


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:  # a zombie is dead for our purpose
        return open(f'/proc/{pid}/stat').read().split()[2] != 'Z'
    except FileNotFoundError:
        return False


def test_make_sim_script_runs_the_demo_and_writes_the_report(tmp_path):
    report = tmp_path / 'report.png'
    run = Launch([str(WORKSPACE / 'scripts' / 'run-sim.sh')],
                 {'DURATION': '20', 'REPORT': str(report), 'ROS_DOMAIN_ID': os.environ['ROS_DOMAIN_ID']})
    try:
        assert run.finish(timeout=180) == 0, run.text
    finally:
        run.stop()
    text = run.text
    for tag in ('[robotsim_sim]', '[robot_state_publisher]', '[motor_bridge]', '[robotsim_monitor]'):
        assert any(line.startswith(tag) for line in run.lines), f'no {tag} output:\n{text}'
    assert 'firmware in the loop' in text and 'connected to' in text
    summaries = [line for line in run.lines if line.startswith('[robotsim_monitor] sim time')]
    assert summaries and 'RTF' in summaries[-1] and '/scan' in summaries[-1] and '/odom' in summaries[-1], text
    assert 'required node robotsim_sim exited with status 0' in text
    written = run.wait_for(r'run report written to .*\((.*)\)', 5).group(1)
    counts = dict(re.findall(r'(\d+) (ground-truth poses|odometry poses|commands|wheel samples)', written)[i][::-1]
                  for i in range(4))
    assert int(counts['ground-truth poses']) > 500 and int(counts['odometry poses']) > 500, written
    assert int(counts['commands']) > 50 and int(counts['wheel samples']) > 500, written  # the wanderer drove
    assert 'last scan yes' in written and 'camera frame yes' in written, written
    image = np.asarray(PilImage.open(report).convert('RGB'))
    assert image.shape[:2] == (900, 1440) and image.std() > 10  # a figure, not a blank canvas


def test_ctrl_c_stops_every_node_and_a_dead_required_node_stops_the_launch(tmp_path):
    report = tmp_path / 'report.png'
    run = Launch(['robotsim', 'launch', 'sim', 'cameras:=false', 'firmware:=false', 'demo:=true', f'report:={report}'])
    try:
        pids = {label: run.pid_of(label) for label in ('robotsim_sim', 'robot_state_publisher', 'wander',
                                                       'robotsim_monitor')}
        wait_until_publishing('/odom', Odometry)
        run.process.send_signal(signal.SIGINT)
        assert run.finish(timeout=40) == 0, run.text
        assert not any(alive(pid) for pid in pids.values()), run.text
        assert 'SIGINT: stopping 4 nodes' in run.text and report.is_file(), run.text  # the report on Ctrl-C too
    finally:
        run.stop()

    run = Launch(['robotsim', 'launch', 'sim', 'cameras:=false', 'firmware:=true'])
    try:
        sim, bridge = run.pid_of('robotsim_sim'), run.pid_of('motor_bridge')
        wait_until_publishing('/odom', Odometry)
        os.kill(sim, signal.SIGKILL)
        code = run.finish(timeout=40)
        assert code != 0, run.text
        assert 'required node robotsim_sim exited with status -9: shutting down' in run.text
        assert not alive(bridge)
    finally:
        run.stop()


def contract_check(namespace: str) -> subprocess.CompletedProcess:
    return subprocess.run(['robotsim', 'contract', 'check', '--duration', '5', '--namespace', namespace,
                           '--frame-prefix', f'{namespace}/'], capture_output=True, text=True, timeout=120)


def facing_rovers_geometry(spacing: float) -> tuple[float, tuple[float, float]]:
    """Two rovers ``spacing`` m apart facing each other: the range from one's lidar straight ahead to
    the other's arm base cylinder, and the depths (along the optical axis) from one's camera to the
    front of the other's camera housing and to the front of its chassis."""
    spec = yaml.safe_load((WORKSPACE / 'config' / 'robots' / 'rover.yaml').read_text())
    sensors = {sensor['type']: sensor for sensor in spec['sensors']}
    lidar_x, camera_x = sensors['lidar']['pose']['xyz'][0], sensors['camera']['pose']['xyz'][0]
    arm = spec['arms'][0]
    arm_front = arm['mount']['xyz'][0] + arm['joints'][0]['link']['thickness'] / 2
    housing_half = 0.03 / 2  # the sensor marker box of robotsim_core.description.build
    chassis_front = spec['base']['size'][0] / 2
    return (spacing - arm_front - lidar_x,
            (spacing - camera_x - housing_half - camera_x, spacing - chassis_front - camera_x))


def test_two_robots_in_one_world(tmp_path):
    run = Launch(['robotsim', 'launch', 'sim', 'fleet:=two_rovers'])
    try:
        wait_until_publishing('/robot1/odom', Odometry)
        wait_until_publishing('/robot2/odom', Odometry)
        for namespace in ('robot1', 'robot2'):
            result = contract_check(namespace)
            assert result.returncode == 0, (namespace, result.stdout, result.stderr)
            assert 'FAIL' not in result.stdout and '18 of 18 checks pass' in result.stdout, result.stdout

        obs = Observer('two_robots')
        try:
            for ns in ('robot1', 'robot2'):
                obs.watch(f'/{ns}/scan', LaserScan, SENSOR)
                obs.watch(f'/{ns}/camera/depth/image_raw', Image, SENSOR)
                obs.watch(f'/{ns}/sim/ground_truth', Odometry, RELIABLE)
            scans_needed = 10
            assert obs.spin_until(lambda: all(len(obs.messages[t]) >= (scans_needed if t.endswith('/scan') else 3)
                                              for t in obs.watched), 90)
            # They face each other 2 m apart (without the other robot the wall behind it is 4 m away) and
            # stand still (the firmware holds the wheels), so what each sees follows from the geometry:
            # its lidar's straight-ahead beam ends on the other's arm base cylinder, its camera's centre
            # pixel on the other's camera housing (or the chassis front just behind it).
            ahead_expected, depth_surfaces = facing_rovers_geometry(2.0)
            for ns in ('robot1', 'robot2'):
                # Lidar noise is 0.01 m (1 sigma) per beam; which scans arrive depends on the machine's
                # load, so average enough of them to make the tolerance 4 sigma of the mean.
                scans = obs.messages[f'/{ns}/scan'][-scans_needed:]
                beam = round(-scans[0].angle_min / scans[0].angle_increment)
                ahead = float(np.mean([scan.ranges[beam] for scan in scans]))
                assert abs(ahead - ahead_expected) <= 4 * 0.01 / math.sqrt(scans_needed), (ns, ahead, ahead_expected)
                depth = obs.messages[f'/{ns}/camera/depth/image_raw'][-1]
                pixels = np.frombuffer(bytes(depth.data), np.float32).reshape(depth.height, depth.width)
                centre = pixels[depth.height // 2, depth.width // 2]
                assert min(abs(centre - surface) for surface in depth_surfaces) <= 0.005, (ns, centre, depth_surfaces)
                assert scans[-1].header.frame_id == f'{ns}/laser' and depth.header.frame_id.startswith(f'{ns}/')

            def yaw(ns):
                q = obs.messages[f'/{ns}/sim/ground_truth'][-1].pose.pose.orientation
                return math.atan2(2 * (q.w * q.z + q.x * q.y), 1 - 2 * (q.y * q.y + q.z * q.z))

            start = {ns: yaw(ns) for ns in ('robot1', 'robot2')}
            from geometry_msgs.msg import Twist
            publisher = obs.node.create_publisher(Twist, '/robot1/cmd_vel', 10)
            turn = Twist()
            turn.angular.z = 1.0

            def turned():
                return {ns: abs(math.remainder(yaw(ns) - start[ns], math.tau)) for ns in start}

            deadline = time.monotonic() + 60.0  # wall time: a loaded machine runs slower than real time
            while time.monotonic() < deadline and turned()['robot1'] < 0.5:
                publisher.publish(turn)
                obs.spin_for(0.1)
            assert turned()['robot1'] >= 0.5 and turned()['robot2'] < 0.02, turned()  # driven independently

            # The fleet radio between the robots' base controllers: cut robot2's link, and robot1's firmware reports
            # robot2 (radio node 1) silent through its motor bridge; /diagnostics names the cut link.
            from diagnostic_msgs.msg import DiagnosticArray
            from robotsim_msgs.srv import InjectFault
            obs.watch('/diagnostics', DiagnosticArray, RELIABLE)

            def radio(message_part):
                return any(status.name == 'fleet radio' and message_part in status.message
                           for array in obs.messages['/diagnostics'] for status in array.status)

            assert obs.spin_until(lambda: radio('ok'), 30), 'no fleet radio on /diagnostics'
            response = obs.call(InjectFault, '/robot2/sim/inject_fault', InjectFault.Request(fault='radio_down'))
            assert response.success, response.message
            run.wait_for(r'robot1.*a robot of the fleet went silent on the radio \(radio node 1\)', 60)
            assert obs.spin_until(lambda: radio('robot2 link down'), 30)
        finally:
            obs.close()
    finally:
        run.stop()


@pytest.mark.flaky(reruns=1)  # seen once in a loaded full run: the recorder lost 258 of 2401 /clock messages
def test_recording_holds_every_published_message(tmp_path):
    """The default bringup (firmware in the loop: the simulator and the motor bridge both publish
    /joint_states) with the wandering driver recorded on a loaded machine (one core kept busy): per topic, the bag holds every
    message the simulator published, /clock's hundreds a second included, and every command the driver sent
    (/cmd_vel: the actions beside the observations), and Foxglove's reader decodes the same messages as rosbags."""
    bag = tmp_path / 'bag'
    run = Launch(['robotsim', 'launch', 'sim', 'record:=true', f'bag:={bag}', 'paused:=true', 'duration:=8',
                  'driver:=wander'])
    try:
        run.wait_for(r'\[robotsim_recorder\].*subscribed to all \d+ topics', 90)
        run.wait_for(r'\[robotsim_recorder\].*recording the command topic /cmd_vel \(geometry_msgs/msg/Twist\)', 60)
        time.sleep(1.0)  # let the last subscriptions match their publishers
        obs = Observer('recording_start')
        try:
            response = obs.call(Pause, '/sim/pause', Pause.Request(paused=False), timeout=20)
            assert response.success
        finally:
            obs.close()
        with CpuHog(300):
            assert run.finish(timeout=240) == 0, run.text
    finally:
        run.stop()
    published = published_counts(run)
    with AnyReader([bag]) as reader:
        recorded = {c.topic: (c.msgtype, c.msgcount) for c in reader.connections}
        assert reader.connections and all(c.msgcount > 0 for c in reader.connections)
    assert recorded['/scan'][0] == 'sensor_msgs/msg/LaserScan' and recorded['/odom'][0] == 'nav_msgs/msg/Odometry'
    assert recorded['/sim/status'][0] == 'robotsim_msgs/msg/SimStatus'
    assert foxglove_counts(bag) == {topic: count for topic, (_, count) in recorded.items()}
    assert_recorded_everything_published({topic: count for topic, (_, count) in recorded.items()}, published)
    assert published['/clock'] >= 8 * 250
    assert recorded['/tf_static'][1] == 1 and recorded['/robot_description'][1] == 1
    ticks = int(run.wait_for(r'\[wander\].*wander: ticks (\d+):', 10).group(1))  # one command each
    assert recorded['/cmd_vel'] == ('geometry_msgs/msg/Twist', ticks) and ticks >= 8 * 10 * 0.9, (recorded, ticks)
    assert published['/camera/image_raw'] >= 110 and published['/scan'] >= 75  # 8 s at 15 Hz and 10 Hz
