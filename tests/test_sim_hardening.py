"""Bad requests to the simulator are refused with one clear message and the simulator keeps
running; instabilities, clamping and rejections are reported; Ctrl-C is a clean stop (issue 9,
items 7, 10, 11, 14 (set_gains), 16)."""

import math
import os
import re
import signal
import struct
import subprocess
import sys

import numpy as np
import pytest
from geometry_msgs.msg import Twist
from nav_msgs.msg import Odometry
from rcl_interfaces.msg import Log
from rosgraph_msgs.msg import Clock
from sensor_msgs.msg import JointState
from trajectory_msgs.msg import JointTrajectory, JointTrajectoryPoint

from robotsim_firmware import protocol
from robotsim_firmware.host_library import HostFirmware
from robotsim_firmware.in_the_loop import FAULTS
from robotsim_msgs.msg import SimStatus
from robotsim_msgs.srv import InjectFault, Pause, SetEntityPose, Step
from rostest_helpers import RELIABLE, WORKSPACE, NodeProcess, Observer, stamp_seconds

WORLDS = WORKSPACE / 'tests' / 'data' / 'worlds'
ABSURD = (math.nan, math.inf, -math.inf, 1e300)


@pytest.fixture
def observer():
    obs = Observer('hardening_test')
    yield obs
    obs.close()


def sim_node(**params) -> NodeProcess:
    return NodeProcess('robotsim_sim', 'sim_node', {'world': str(WORLDS / 'wall_ahead.yaml'), 'cameras': False,
                                                   'real_time_factor': 1.0, **params})


def clock_now(obs: Observer) -> float:
    return stamp_seconds(obs.messages['/clock'][-1].clock)


def assert_still_running(obs: Observer, sim: NodeProcess) -> None:
    """The simulator survived: its process is there and /clock keeps advancing."""
    obs.watch('/clock', Clock, RELIABLE)
    assert obs.spin_until(lambda: obs.messages['/clock'], 30), 'no /clock'
    before = clock_now(obs)
    assert obs.spin_until(lambda: clock_now(obs) > before + 0.2, 30), 'the simulator stopped publishing /clock'
    assert sim.process.poll() is None, sim.output()


def test_inject_fault_refuses_non_finite_and_absurd_values(observer, tmp_path):
    obs = observer
    # With the power board, so that the bus faults are there to be refused too.
    with sim_node(firmware=True, power_board=True, serial_link=str(tmp_path / 'ttyMCU')) as sim:
        assert_still_running(obs, sim)
        for fault in FAULTS:
            for value in ABSURD:
                response = obs.call(InjectFault, '/sim/inject_fault',
                                    InjectFault.Request(fault=fault, channel=0, value=value))
                assert not response.success, (fault, value)
                if fault.startswith('radio_'):  # one robot: no fleet radio, whatever the value
                    assert response.message.startswith(f'{fault}: this robot has no fleet radio'), response.message
                    continue
                assert response.message.startswith(f'{fault}: value ') and 'expected' in response.message, \
                    response.message
        ranges = {fault: obs.call(InjectFault, '/sim/inject_fault',
                                  InjectFault.Request(fault=fault, value=math.nan)).message
                  for fault in FAULTS if not fault.startswith('radio_')}
        assert 'expected a whole number from 1 to 8192' in ranges['encoder_noise']
        assert 'expected a whole number from 2 to 1000000' in ranges['link_drop']
        assert 'expected a whole number from 2 to 1000000' in ranges['bus_drop']
        assert 'expected 0 (mcu_reset takes no value)' in ranges['mcu_reset']
        # In range, the same faults still work.
        for fault, value in (('encoder_noise', 100.0), ('link_drop', 4.0), ('clear', 0.0)):
            response = obs.call(InjectFault, '/sim/inject_fault', InjectFault.Request(fault=fault, value=value))
            assert response.success, response.message
        assert_still_running(obs, sim)
        log = sim.output()
    assert 'Traceback' not in log
    assert 'refused sim/inject_fault: encoder_noise: value nan' in log


def pose_request(entity: str, x=0.0, y=0.0, z=0.0, quaternion=(1.0, 0.0, 0.0, 0.0)) -> SetEntityPose.Request:
    request = SetEntityPose.Request(entity=entity)
    position, orientation = request.pose.position, request.pose.orientation
    position.x, position.y, position.z = x, y, z
    orientation.w, orientation.x, orientation.y, orientation.z = quaternion
    return request


def test_set_entity_pose_refuses_absurd_poses_and_names(observer):
    obs = observer
    obs.watch('/sim/ground_truth', Odometry, RELIABLE)
    with sim_node() as sim:
        assert_still_running(obs, sim)
        refusals = {
            'x = 1e300': (pose_request('rover', x=1e300), r'pose\.position: \(1e\+300, 0, 0\) is outside the world: '
                                                          r'expected x in \[-6, 6\], y in \[-6, 6\], z in \[0, 12\] m'),
            'NaN y': (pose_request('toy_box', y=math.nan, z=0.05), r'pose\.position: .*nan.* is outside the world'),
            'z below the floor': (pose_request('rover', z=-3.0), r'z in \[0, 12\]'),
            'Inf quaternion': (pose_request('rover', quaternion=(math.inf, 0, 0, 0)), r'pose\.orientation: .*expected a finite'),
            'zero quaternion': (pose_request('rover', quaternion=(0, 0, 0, 0)), r'pose\.orientation: .*norm near 1'),
            'empty name': (pose_request(''), r'entity: empty name; expected one of rover, toy_box'),
            'unknown name': (pose_request('unicorn'), r"entity: no entity 'unicorn'; expected one of rover, toy_box"),
        }
        for case, (request, pattern) in refusals.items():
            response = obs.call(SetEntityPose, '/sim/set_entity_pose', request)
            assert not response.success, case
            assert re.search(pattern, response.message), (case, response.message)
        obs.spin_for(0.5)
        position = obs.messages['/sim/ground_truth'][-1].pose.pose.position
        assert abs(position.x) < 0.01 and abs(position.y) < 0.01, 'no refused request moved the robot'
        assert_still_running(obs, sim)
        moved = obs.call(SetEntityPose, '/sim/set_entity_pose', pose_request('rover', x=0.5, y=-0.25))
        assert moved.success, moved.message
        assert obs.spin_until(lambda: abs(obs.messages['/sim/ground_truth'][-1].pose.pose.position.x - 0.5) < 0.01, 10)


UNSTABLE_MJCF = """<mujoco><worldbody>
  <!-- Floats (gravity compensated, no contacts). Its flap hangs on a hinge about z, 5 cm beside the
       flap's centre of mass, with a spring far too stiff for the time step. Upright, the flap's
       weight acts along the hinge axis and through the body's centre: every torque is exactly zero
       and nothing turns (tested for 60 s). Tilted, the weight turns the flap against the spring
       and the explicit integration of that spring diverges within a few steps. -->
  <body name="spinner" pos="1.0 -2.0 0.5" gravcomp="1">
    <freejoint name="spinner_freejoint"/>
    <inertial pos="0 0 0" mass="1" diaginertia="0.002 0.002 0.002"/>
    <geom type="box" size="0.05 0.05 0.05" contype="0" conaffinity="0"/>
    <body name="flap">
      <joint name="flap_hinge" type="hinge" pos="-0.05 0 0" axis="0 0 1" stiffness="1e12"/>
      <inertial pos="0 0 0.06" mass="1e-6" diaginertia="1e-10 1e-10 1e-10"/>
      <geom type="box" size="0.01 0.01 0.01" pos="0 0 0.06" contype="0" conaffinity="0"/>
    </body>
  </body>
</worldbody></mujoco>
"""


def test_physics_instability_is_reported_with_its_sim_time(observer, tmp_path):
    (tmp_path / 'unstable.xml').write_text(UNSTABLE_MJCF)
    (tmp_path / 'spinner.yaml').write_text('name: spinner_world\ninclude: unstable.xml\n')
    obs = observer
    obs.watch('/rosout', Log, RELIABLE)
    with sim_node(world=str(tmp_path / 'spinner.yaml')) as sim:
        assert_still_running(obs, sim)
        obs.spin_for(1.0)
        assert not [m for m in obs.messages['/rosout'] if 'physics unstable' in m.msg], 'stable until disturbed'
        requested_at = clock_now(obs)
        tilted = (math.cos(0.6), math.sin(0.6), 0.0, 0.0)
        assert obs.call(SetEntityPose, '/sim/set_entity_pose', pose_request('spinner', 1.0, -2.0, 0.5, tilted)).success

        def report():
            return next((m for m in obs.messages['/rosout'] if 'physics unstable' in m.msg), None)
        assert obs.spin_until(lambda: report() is not None, 30), sim.output()
        answered_by = clock_now(obs)
        assert_still_running(obs, sim)
    message = report()
    assert message.level == Log.ERROR and message.name == 'robotsim_sim'
    match = re.search(r'physics unstable at sim time ([0-9.]+) s: NaN, Inf or huge acceleration '
                      r'\(degree of freedom \d+, spinner\); MuJoCo reset every body to its initial pose', message.msg)
    assert match, message.msg
    assert requested_at - 0.002 <= float(match.group(1)) <= answered_by + 0.5, (requested_at, match.group(1))


def test_step_is_bounded_and_status_keeps_coming_during_a_long_step(observer):
    obs = observer
    obs.watch('/sim/status', SimStatus, RELIABLE)
    with sim_node(start_paused=True) as sim:
        assert obs.spin_until(lambda: obs.messages['/sim/status'], 30)
        huge = obs.call(Step, '/sim/step', Step.Request(steps=4294967295))
        assert not huge.success
        assert huge.message.startswith('steps: 4294967295 is too many: expected at most 30000 (60 s of sim time'), \
            huge.message
        assert not obs.call(Step, '/sim/step', Step.Request(steps=30001)).success
        before = huge.step_count
        obs.messages['/sim/status'].clear()
        longest = obs.call(Step, '/sim/step', Step.Request(steps=30000), timeout=300)
        assert longest.success and longest.step_count == before + 30000, longest.message
        obs.spin_for(1.0)
        during = [m.step_count for m in obs.messages['/sim/status'] if before < m.step_count < longest.step_count]
        # 60 s of sim time take well over the 0.5 s status period of wall time on any machine here
        # (the core alone runs about 40x real time): status came while the step was running.
        assert during, [m.step_count for m in obs.messages['/sim/status']]
        assert obs.call(Pause, '/sim/pause', Pause.Request(paused=False)).success
        assert_still_running(obs, sim)


def test_rejections_are_throttled_per_reason_and_clamping_is_warned_once(observer):
    obs = observer
    obs.watch('/joint_states', JointState, RELIABLE)
    with sim_node() as sim:
        assert_still_running(obs, sim)
        twist = obs.node.create_publisher(Twist, '/cmd_vel', 10)
        arm = obs.node.create_publisher(JointTrajectory, '/arm_controller/joint_trajectory', 10)
        assert obs.spin_until(lambda: arm.get_subscription_count() > 0 and twist.get_subscription_count() > 0, 10)

        def trajectory(joints, *points):
            message = JointTrajectory(joint_names=joints)
            for seconds, positions in points:
                point = JointTrajectoryPoint(positions=positions)
                point.time_from_start.sec = seconds
                message.points.append(point)
            return message

        bad_trajectories = [trajectory(['unicorn_joint'], (1, [0.1])),
                            trajectory(['arm_shoulder_joint'], (1, [math.nan])),
                            trajectory(['arm_shoulder_joint'], (2, [0.1]), (1, [0.2])),
                            trajectory(['arm_shoulder_joint'])]
        nan_twist = Twist()
        nan_twist.linear.x = math.nan
        # A flood of one bad input (NaN commands) with every other kind of rejection inside the
        # same throttle window: each kind must still leave a line.
        for round_ in range(10):
            twist.publish(nan_twist)
            if round_ % 2 == 0:
                arm.publish(bad_trajectories[round_ // 2 % len(bad_trajectories)])
            obs.spin_for(0.05)
        beyond = trajectory(['arm_shoulder_joint', 'arm_elbow_joint'], (1, [3.0, -1.0]))
        arm.publish(beyond)
        obs.spin_for(0.2)
        arm.publish(beyond)  # clamped again: no second warning for the same joint

        def shoulder():
            state = obs.messages['/joint_states'][-1]
            return dict(zip(state.name, state.position))['arm_shoulder_joint']
        assert obs.spin_until(lambda: abs(shoulder() - 1.57) < 0.03, 30), shoulder()
        obs.spin_for(0.5)
        assert shoulder() <= 1.57 + 0.01, 'held at the limit, not beyond'
        log = sim.output()
    for reason in ('rejected non-finite cmd_vel', "unknown joints ['unicorn_joint']",
                   'every point needs one finite position per joint', 'time_from_start must not decrease',
                   'trajectory has no points'):
        assert reason in log, f'no warning for {reason!r}:\n{log}'
    assert log.count('rejected non-finite cmd_vel') < 10, 'the flood is throttled'
    clamped = [line for line in log.splitlines() if 'beyond its limit' in line]
    assert len(clamped) == 1 and 'arm_shoulder_joint target 3 is beyond its limit; clamped to 1.57' in clamped[0], \
        clamped


def started_like_a_background_job(**params) -> NodeProcess:
    """The simulator started as `sim_node &` from a script: SIGINT starts out ignored, so only
    rclpy's handler sees Ctrl-C (it shuts the context down; no KeyboardInterrupt follows)."""
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)  # inherited through exec
    try:
        return sim_node(**params)
    finally:
        signal.signal(signal.SIGINT, previous)


def test_ctrl_c_of_a_standalone_sim_node_exits_cleanly(observer):
    """As fast as possible with cameras, the loop is rendering or publishing most of the time
    when SIGINT shuts the context down; publishing after that raised RCLError (exit 1 with a
    traceback: every time for a background job, now and then from a terminal, where the
    KeyboardInterrupt usually comes first). Ctrl-C while starting (GL probe, imports, world
    build) printed a KeyboardInterrupt traceback."""
    obs = observer
    for attempt, start in enumerate([sim_node] * 2 + [started_like_a_background_job] * 3):  # running
        sim = start(real_time_factor=0.0, cameras=True)
        assert obs.spin_until(lambda: 'robot rover in world' in sim.output(), 60), sim.output()
        obs.spin_for(1.0 + 0.5 * attempt)
        status = sim.stop()
        log = sim.output()
        assert status == 0 and 'Traceback' not in log and 'RCLError' not in log, f'attempt {attempt}:\n{log}'
        assert re.search(r'simulated [1-9][0-9.]* s', log), log  # it was running; the exit report was written
    for delay in (0.3, 1.0, 2.0):  # starting: whichever phase the signal lands in
        sim = sim_node(real_time_factor=0.0, cameras=True)
        obs.spin_for(delay)
        status = sim.stop()
        log = sim.output()
        assert status == 0 and 'Traceback' not in log, f'Ctrl-C {delay} s after start:\n{log}'


SECOND_CTRL_C = """
import os, signal, sys, time
from rclpy.node import Node
from robotsim_core.ros.common import run_node

def spin(node):
    os.kill(os.getpid(), signal.SIGINT)   # Ctrl-C while the node spins
    time.sleep(30)

def finish(node):                         # closing a bag, writing a report ...
    os.kill(os.getpid(), signal.SIGINT)   # ... when the second Ctrl-C arrives
    time.sleep(0.5)
    print('finished', flush=True)

sys.exit(run_node('probe', lambda: Node('second_ctrl_c_probe'), (), run=spin, finish=finish))
"""


def test_a_second_ctrl_c_does_not_cut_a_nodes_cleanup_short():
    """A terminal's Ctrl-C reaches every process of a launch, and ros2 launch forwards it to each node too: every
    node gets SIGINT twice. The second one, landing in the cleanup, used to raise KeyboardInterrupt out of it (a
    traceback, exit status -2, ros2 launch's "process has died"); every robotsim executable's run_node now finishes
    its cleanup and exits 0."""
    result = subprocess.run([sys.executable, '-c', SECOND_CTRL_C], capture_output=True, text=True, timeout=60,
                            env={**os.environ, 'ROS_AUTOMATIC_DISCOVERY_RANGE': 'LOCALHOST'})
    assert result.returncode == 0 and 'Traceback' not in result.stderr, result.stderr
    assert result.stdout.strip() == 'finished', result.stdout


def test_set_gains_refuses_non_finite_and_negative_gains():
    for bad in (math.nan, math.inf, -0.1, 1e300):
        with pytest.raises(ValueError, match=r'gain kd: expected a finite number from 0 to 10000, got'):
            protocol.set_gains(1, 0.3, 3.0, bad, 0.05, 300)
    # The firmware ignores such a frame from any host: the same run with and without the bad
    # frames drives the motors identically (NaN gains used to make the duty NaN).
    good, attacked = HostFirmware(), HostFirmware()
    for mcu in (good, attacked):
        mcu.receive(protocol.encode_frame(protocol.hello(0)))
        mcu.receive(protocol.encode_frame(protocol.set_gains(1, 0.3, 3.0, 0.0, 0.05, 300)))
        mcu.advance(2_000_000)
    for sequence, gains in enumerate(((math.nan, 3.0, 0.0, 0.05), (0.3, math.inf, 0.0, 0.05),
                                      (0.3, 3.0, -1.0, 0.05), (0.3, 3.0, 0.0, 1e30)), start=2):
        attacked.receive(protocol.encode_frame(bytes([protocol.SET_GAINS, sequence]) + struct.pack('<4fH', *gains, 300)))
    for mcu in (good, attacked):
        mcu.receive(protocol.encode_frame(protocol.set_velocity(9, [5.0, -5.0, 2.0, 0.0])))
        for tick in range(50):
            mcu.plant.encoder[0] = tick * 20
            mcu.advance(2_000_000)
    duties = [np.array([mcu.plant.duty[i] for i in range(4)]) for mcu in (good, attacked)]
    assert np.all(np.isfinite(duties[1])) and np.abs(duties[0]).max() > 0.1
    np.testing.assert_array_equal(duties[0], duties[1])
