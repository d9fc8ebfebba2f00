"""Firmware link and motor bridge under attack: stale pty links, late connections, loaded machines,
bad parameters. Real simulator, real compiled firmware, real ptys, real rclpy processes."""

import bisect
import math
import os
import random
import signal
import subprocess
import termios
import time

import pytest
from diagnostic_msgs.msg import DiagnosticArray
from geometry_msgs.msg import Twist
from nav_msgs.msg import Odometry
from rosgraph_msgs.msg import Clock
from sensor_msgs.msg import JointState
from tf2_msgs.msg import TFMessage

from robotsim_firmware import protocol
from robotsim_firmware.mcu_clock import McuClock
from robotsim_firmware.virtual_serial import DEVICE_FIFO_BYTES, PtyLink, owner_path
from rostest_helpers import (RELIABLE, WORKSPACE, CpuHog, NodeProcess, Observer, executable, stamp_seconds,
                             yaw_of)

WORLD = str(WORKSPACE / 'tests' / 'data' / 'worlds' / 'wall_ahead.yaml')
WHEELS = {'front_left_wheel_joint', 'front_right_wheel_joint', 'rear_left_wheel_joint', 'rear_right_wheel_joint'}


@pytest.fixture
def link(tmp_path) -> str:
    return str(tmp_path / 'ttyMCU')


def simulator(link: str, **params) -> NodeProcess:
    return NodeProcess('robotsim_sim', 'sim_node', {'world': WORLD, 'cameras': False, 'firmware': True,
                                                    'serial_link': link, 'real_time_factor': 1.0, **params})


def bridge(link: str) -> NodeProcess:
    return NodeProcess('robotsim_firmware', 'motor_bridge', {'device': link, 'use_sim_time': True,
                                                             'reconnect_period': 0.2})


def observer() -> Observer:
    obs = Observer('fw_hardening')
    for topic, kind in (('/sim/ground_truth', Odometry), ('/odom', Odometry), ('/joint_states', JointState),
                        ('/tf', TFMessage), ('/diagnostics', DiagnosticArray), ('/clock', Clock)):
        obs.watch(topic, kind, RELIABLE)
    return obs


def diagnostics(obs) -> dict:
    status = obs.messages['/diagnostics'][-1].status[0]
    return {'level': status.level, 'message': status.message, **{kv.key: kv.value for kv in status.values}}


def sim_now(obs) -> float:
    return stamp_seconds(obs.messages['/sim/ground_truth'][-1].header.stamp)


def drive(obs, profile: list[tuple[float, float]]) -> None:
    """Command (speed, sim seconds) segments on /cmd_vel, paced by the simulator's clock."""
    publisher = obs.node.create_publisher(Twist, '/cmd_vel', 10)
    for speed, seconds in profile:
        message = Twist()
        message.linear.x = speed
        end = sim_now(obs) + seconds
        deadline = time.monotonic() + 60 + 10 * seconds
        while sim_now(obs) < end and time.monotonic() < deadline:
            publisher.publish(message)
            obs.spin_for(0.05)
        assert sim_now(obs) >= end, 'the simulator stopped publishing ground truth'


def wait_for_odometry(obs, timeout: float = 90) -> None:
    assert obs.spin_until(lambda: obs.messages['/odom'] and obs.messages['/sim/ground_truth'], timeout), \
        'the bridge never published odometry'


# ---------------------------------------------------------------- 8: stale pty links

def test_a_stale_link_to_an_unrelated_terminal_is_never_touched(link):
    """A simulator killed with SIGKILL leaves its link and owner file; the kernel hands its
    /dev/pts/N to someone's terminal. The bridge must not write to it, read it or change its mode."""
    killed = simulator(link)
    try:
        assert _wait(lambda: os.path.islink(link), 60), killed.output()
        killed.process.send_signal(signal.SIGKILL)
        killed.process.wait()
    finally:
        killed.stop()
    assert os.path.islink(link) and os.path.exists(owner_path(link)), 'SIGKILL leaves the link behind'
    terminal, user_side = os.openpty()  # a user's terminal (cooked: echo, line editing)
    os.set_blocking(terminal, False)
    # The kernel reuses the lowest free pts number: point the stale link at the user's terminal as
    # that reuse would (whichever number this machine gave it).
    os.unlink(link)
    os.symlink(os.ttyname(user_side), link)
    modes_before = termios.tcgetattr(user_side)
    obs = observer()
    motor_bridge = bridge(link)
    try:
        assert obs.spin_until(lambda: obs.messages['/diagnostics'] and 'stale link' in diagnostics(obs)['message'],
                              60), motor_bridge.output()
        obs.spin_for(2.0)  # ten reconnect attempts
        assert termios.tcgetattr(user_side) == modes_before, 'the bridge changed the terminal'
        assert _unread(terminal) == b'', 'the bridge wrote into the terminal'
        # The next simulator replaces the stale link atomically; the bridge finds the real MCU.
        sim = simulator(link)
        try:
            wait_for_odometry(obs)
            assert os.readlink(link) != os.ttyname(user_side)
            # A second simulator on the same link is refused with one line.
            second = subprocess.run([executable('robotsim_sim', 'sim_node'), '--ros-args', '-p', f'world:={WORLD}',
                                     '-p', 'cameras:=false', '-p', 'firmware:=true', '-p', f'serial_link:={link}'],
                                    capture_output=True, text=True, timeout=120)
        finally:
            sim.stop()
        assert second.returncode == 2, second.stderr
        assert 'Traceback' not in second.stderr and f'serial link {link} is in use by a running simulator' in second.stderr
        assert not os.path.lexists(link) and not os.path.exists(owner_path(link)), 'the simulator cleans up on exit'
    finally:
        motor_bridge.stop()
        obs.close()
    assert termios.tcgetattr(user_side) == modes_before and _unread(terminal) == b''
    assert 'a stale link? not opening it' in motor_bridge.output()
    os.close(terminal)
    os.close(user_side)


def _wait(condition, timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.05)
    return condition()


def _unread(fd: int) -> bytes:
    try:
        return os.read(fd, 4096)
    except BlockingIOError:
        return b''


# ---------------------------------------------------------------- 12: a bridge that connects late

def test_a_late_bridge_publishes_current_telemetry(link):
    obs = observer()
    sim = simulator(link)
    motor_bridge = None
    try:
        assert obs.spin_until(lambda: obs.messages['/sim/ground_truth'] and sim_now(obs) >= 20.0, 120), \
            'the simulator did not reach 20 s of sim time'
        motor_bridge = bridge(link)
        wait_for_odometry(obs)
        first = obs.messages['/odom'][0]
        # The newest ground truth the observer has when the first /odom arrives: the current sim time.
        age = sim_now(obs) - stamp_seconds(first.header.stamp)
        assert abs(age) < 0.1, f'first /odom is {age:.3f} s old'
        # And its content is current: a drive now shows on /odom at the stamps the wheels moved.
        drive(obs, [(0.4, 1.5), (0.0, 0.5)])
        obs.spin_for(1.0)
        truth = _series(obs.messages['/sim/ground_truth'])
        odom = [(stamp_seconds(m.header.stamp), m.pose.pose.position.x) for m in obs.messages['/odom']]
        moved = [(t, x - odom[0][1]) for t, x in odom]
        assert moved[-1][1] > 0.4, moved[-1]
        for t, x in moved[::5]:
            assert x == pytest.approx(_interpolate(truth, t) - _interpolate(truth, odom[0][0]), abs=0.03), t
        state = diagnostics(obs)
    finally:
        if motor_bridge:
            motor_bridge.stop()
        sim.stop()
        obs.close()
    assert int(state['crc_errors']) == 0, state


def test_the_device_fifo_keeps_the_newest_whole_frames(tmp_path):
    """The pty link itself, ROS-free: a host that reads, stalls, flushes and rejoins at random
    (seeded) never sees a corrupted frame, and after any stall gets recent frames, not a backlog."""
    rng = random.Random(20240611)
    link = PtyLink(str(tmp_path / 'tty'))
    host = None
    try:
        parser, received, counter, stall_until, stalls = None, [], 0, 0, 0
        errors = 0
        for tick in range(20_000):  # 40 s of 2 ms ticks
            frames = b''
            if tick % 5 == 0:  # 100 Hz telemetry-sized frames, each numbered
                counter += 1
                frames = protocol.encode_frame(bytes([protocol.TELEMETRY, counter & 0xFF]) + counter.to_bytes(4, 'little')
                                               + bytes(52))
            link.transfer(frames, 0.002)
            if host is not None and tick == stall_until and tick:
                # The host resumes reading: what waits for it is the device's last burst into the
                # kernel and its small FIFO, the newest frames last; never seconds of backlog.
                backlog = _unread_all(host)
                link.transfer(b'', 0.0)  # the device sends its FIFO as soon as the host reads
                backlog += _unread_all(host)
                assert len(backlog) <= 2 * DEVICE_FIFO_BYTES, len(backlog)
                numbers = [int.from_bytes(p[2:6], 'little') for p in parser.feed(backlog)]
                assert numbers and numbers[-1] >= counter - 1, (counter, numbers)
                received += numbers
                stalls += 1
            if host is None or rng.random() < 0.0005:  # (re)connect, as the bridge does
                if host is not None:
                    errors += parser.errors
                    os.close(host)
                host = os.open(link.device, os.O_RDWR | os.O_NOCTTY | os.O_NONBLOCK)
                termios.tcflush(host, termios.TCIOFLUSH)
                parser = protocol.FrameParser(synchronised=False)
                stall_until = tick
            if tick >= stall_until:
                if rng.random() < 0.004:
                    stall_until = tick + rng.randint(50, 3000)  # the host does not read for up to 6 s
                    continue
                data = _unread(host) if rng.random() < 0.8 else _read_some(host, rng.randint(1, 80))
                for payload in parser.feed(data):
                    received.append(int.from_bytes(payload[2:6], 'little'))
        errors += parser.errors
    finally:
        if host is not None:
            os.close(host)
        link.close()
    assert errors == 0, 'a frame was corrupted on the link'
    assert received == sorted(set(received)), 'frames arrive once each, in order'
    assert stalls >= 5 and link.unread_frames_dropped > 100 and len(received) > 500


def _unread_all(fd: int) -> bytes:
    chunks = []
    while chunk := _unread(fd):
        chunks.append(chunk)
    return b''.join(chunks)


def _read_some(fd: int, count: int) -> bytes:
    try:
        return os.read(fd, count)
    except BlockingIOError:
        return b''


# ---------------------------------------------------------------- 19: stamps, under load

def test_odometry_stamps_match_ground_truth_on_a_loaded_machine(link):
    """/odom at stamp t shows the pose ground truth has at t. The mapping's bound makes a stamp never late
    whatever the load (a late stamp fails at once); how early it can be is the fastest host frame's delay
    through the link, which a machine loaded past the CPU hog (a CI machine running two suites at once: 17 ms
    once) can stretch for a whole run: that part gets a second run before it fails."""
    for attempt in (1, 2):
        lag = _odometry_lag_on_a_loaded_machine(link)
        assert lag >= -2, f'/odom at stamp t shows the pose ground truth had at t{lag:+d} ms: a late stamp'
        if lag <= 5:
            return
        print(f'/odom stamps {lag} ms early on run {attempt}: every host frame was delayed that long')
    assert lag <= 5, f'/odom at stamp t shows the pose ground truth has at t{lag:+d} ms (twice)'


def _odometry_lag_on_a_loaded_machine(link) -> int:
    obs = observer()
    with CpuHog(300):
        sim = simulator(link)
        motor_bridge = bridge(link)
        try:
            wait_for_odometry(obs)
            drive(obs, [(0.0, 1.0), (0.5, 1.2), (0.0, 0.8), (-0.5, 1.2), (0.0, 0.8)])
            obs.spin_for(1.0)
        finally:
            motor_bridge.stop()
            sim.stop()
            obs.close()
    odom = [m for m in obs.messages['/odom']]
    wheel_states = [m for m in obs.messages['/joint_states'] if set(m.name) == WHEELS]
    bridge_tf = [t for m in obs.messages['/tf'] for t in m.transforms if t.child_frame_id == 'base_footprint']
    for name, stamps in (('/odom', [m.header.stamp for m in odom]), ('/joint_states', [m.header.stamp for m in wheel_states]),
                         ('/tf', [t.header.stamp for t in bridge_tf])):
        times = [s.sec * 1_000_000_000 + s.nanosec for s in stamps]
        assert len(times) > 100, name
        assert all(b > a for a, b in zip(times, times[1:])), f'{name}: a repeated or decreasing stamp'
    lag, residual = _odometry_lag(odom, obs.messages['/sim/ground_truth'])
    print(f'/odom lag {lag:+d} ms; rms residual {residual[lag] * 1e3:.2f} mm there, '
          f'{residual[-40] * 1e3:.2f} / {residual[40] * 1e3:.2f} mm at -40 / +40 ms')
    # The fit must be able to see a lag: 40 ms either way fits clearly worse than the best.
    assert min(residual[-40], residual[40]) > 2 * residual[lag], residual
    return lag


def _series(truth_messages) -> list[tuple[float, float]]:
    """(stamp, distance along the initial heading) of the ground truth."""
    first = truth_messages[0].pose.pose
    heading = yaw_of(first.orientation)
    x0, y0 = first.position.x, first.position.y
    return [(stamp_seconds(m.header.stamp),
             (m.pose.pose.position.x - x0) * math.cos(heading) + (m.pose.pose.position.y - y0) * math.sin(heading))
            for m in truth_messages]


def _interpolate(series, t: float) -> float:
    times = [s[0] for s in series]
    i = min(max(bisect.bisect_left(times, t), 1), len(series) - 1)
    (t0, v0), (t1, v1) = series[i - 1], series[i]
    return v0 + (v1 - v0) * (t - t0) / (t1 - t0) if t1 > t0 else v1


def _odometry_lag(odom_messages, truth_messages, span_ms: int = 60) -> tuple[int, dict[int, float]]:
    """The shift (ms) that best explains /odom at stamp t as ground truth at t + shift, allowing the
    odometry a scale error (wheel slip); returns it and the rms residual of every shift tried."""
    truth = _series(truth_messages)
    odom = [(stamp_seconds(m.header.stamp), m.pose.pose.position.x) for m in odom_messages]
    start, end = truth[0][0] + span_ms * 1e-3, truth[-1][0] - span_ms * 1e-3
    odom = [(t, x) for t, x in odom if start <= t <= end]
    t_ref, x_ref = odom[0]
    residual = {}
    for shift in range(-span_ms, span_ms + 1):
        g = [_interpolate(truth, t + shift * 1e-3) - _interpolate(truth, t_ref + shift * 1e-3) for t, _ in odom]
        o = [x - x_ref for _, x in odom]
        scale = sum(a * b for a, b in zip(o, g)) / max(sum(b * b for b in g), 1e-12)
        residual[shift] = math.sqrt(sum((a - scale * b) ** 2 for a, b in zip(o, g)) / len(o))
    return min(residual, key=residual.get), residual


def test_the_clock_mapping_holds_when_the_host_clock_lags():
    """ROS-free: the host clock (a /clock subscriber) lags the true time by 0-80 ms at random and
    frames take 0-5 ms each way; the mapped stamps stay within 1 ms of the truth, never late."""
    rng = random.Random(19)
    true_offset_ns = 7_250_000_000  # host time minus MCU time
    clock = McuClock()
    errors = []
    sequence = 0
    for step in range(3000):  # 30 s of 100 Hz telemetry, a setpoint every other frame
        mcu_us = 1_000_000 + step * 10_000
        host_true = lambda us: us * 1000 + true_offset_ns  # noqa: E731
        if step % 2 == 0:
            sequence = (sequence + 1) & 0xFF
            send_mcu_us = mcu_us - rng.randint(1000, 9000)
            lag = rng.choice([0, rng.randint(0, 80_000_000)])
            clock.sent(sequence, protocol.SET_VELOCITY, host_true(send_mcu_us) - lag)
            rx_us = send_mcu_us + rng.randint(0, 5000)
        telemetry = protocol.Telemetry(mcu_us // 1000, (0,) * 4, (0.0,) * 4, (0.0,) * 4, 0, 0, 0, 0,
                                       mcu_us % 2**32, min(rx_us, mcu_us) % 2**32, sequence, protocol.SET_VELOCITY)
        stamp = clock.on_telemetry(telemetry)
        if step > 100:
            errors.append(stamp - host_true(mcu_us))
    assert max(errors) <= 0 and min(errors) > -1_000_000, (min(errors), max(errors))


# ---------------------------------------------------------------- 14: bridge parameters

@pytest.mark.parametrize('argument, expected', [
    ('watchdog_ms:=70000', "parameter 'watchdog_ms': expected a whole number from 1 to 65535, got 70000"),
    ('watchdog_ms:=0', "parameter 'watchdog_ms': expected a whole number from 1 to 65535, got 0"),
    ('baud:=12345', "parameter 'baud': expected a serial rate"),
    ('command_timeout:=.nan', "parameter 'command_timeout': expected a finite number from 0.001 to 3600"),
    ('telemetry_timeout:=-1.0', "parameter 'telemetry_timeout': expected a finite number from 0.01 to 3600"),
    ('reconnect_period:=0', "parameter 'reconnect_period': expected a finite number from 0.01 to 3600"),
    ('cmd_vel_stamped:=5', "parameter 'cmd_vel_stamped': expected true or false, got 5"),
    ("device:=''", "parameter 'device': expected a device path"),
])
def test_every_bridge_parameter_is_checked_at_start(argument, expected):
    result = subprocess.run([executable('robotsim_firmware', 'motor_bridge'), '--ros-args', '-p', argument],
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 2, result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and expected in lines[0], result.stderr
