"""Arm motions through ROS on a running simulator: `robotsim arm reach` (plans on the simulator's
world, executes through arm_controller/follow_joint_trajectory, prints one line, exit status) and the
arm_commander node's arm_commander/reach service (robotsim_msgs/srv/ArmReach). The simulator and the
nodes run in their own processes; wall-clock timeouts only guard against hangs."""

from __future__ import annotations

import math
import subprocess

import numpy as np
import pytest
from sensor_msgs.msg import JointState

from robotsim_core.arm.chain import ArmChain
from robotsim_core.description import load_robot
from robotsim_msgs.srv import ArmReach
from rostest_helpers import RELIABLE, WORKSPACE, NodeProcess, Observer

PICK_WORLD = WORKSPACE / 'config' / 'worlds' / 'pick.yaml'
ARM = ('arm_base_joint', 'arm_shoulder_joint', 'arm_elbow_joint', 'arm_wrist_joint')
IN_FRONT = (0.20, -0.08, 0.02)   # base_link frame: in front of the rover, 65 mm above the floor


def reach(*arguments: str, timeout: float = 240) -> subprocess.CompletedProcess:
    return subprocess.run(['robotsim', 'arm', 'reach', *arguments], capture_output=True, text=True, timeout=timeout)


@pytest.fixture(scope='module')
def simulator():
    node = NodeProcess('robotsim_sim', 'sim_node', {'world': str(PICK_WORLD), 'cameras': False})
    observer = Observer('arm_reach_test')
    observer.watch('/joint_states', JointState, RELIABLE)
    try:
        assert observer.spin_until(lambda: observer.messages['/joint_states'], 90), node.output()
        yield node, observer
    finally:
        observer.close()
        node.stop()


def tool_position(observer: Observer) -> np.ndarray:
    """The tool point (base_link frame) by forward kinematics of the latest joint state."""
    count = len(observer.messages['/joint_states'])
    observer.spin_for(1.5)  # drain what queued while the test waited (the last state is then current)
    assert len(observer.messages['/joint_states']) > count + 5
    state = observer.messages['/joint_states'][-1]
    positions = dict(zip(state.name, state.position))
    return ArmChain(load_robot('rover')).forward([positions[name] for name in ARM])[:3, 3]


def test_reach_moves_the_tool_to_the_target_through_the_action(simulator):
    node, observer = simulator
    completed = reach(*(str(v) for v in IN_FRONT), str(-math.pi / 2))
    assert completed.returncode == 0, (completed.stdout, completed.stderr, node.output()[-2000:])
    assert completed.stdout.startswith('reached: tool to (0.200, -0.080, 0.020) m in base_link at pitch -90 deg: ')
    # The arm is there (within the sag of its position servos under gravity).
    assert np.linalg.norm(tool_position(observer) - IN_FRONT) < 0.006
    assert 'arm_controller/follow_joint_trajectory: goal succeeded' in node.output()


@pytest.mark.parametrize('arguments, code, words', [
    (('0.6', '0', '0.1'), 'unreachable', 'no pitch reaches it'),
    (('0.2', '-0.08', '-0.03', str(-math.pi / 2)), 'target_in_collision', 'touches floor'),
])
def test_reach_refuses_what_it_cannot_do_with_one_line_and_status_1(simulator, arguments, code, words):
    node, observer = simulator
    before = tool_position(observer)
    completed = reach(*arguments)
    assert completed.returncode == 1, (completed.stdout, completed.stderr)
    lines = completed.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f'{code}: ') and words in lines[0], completed.stderr
    assert completed.stdout == ''
    assert np.linalg.norm(tool_position(observer) - before) < 0.002  # nothing moved


def test_reach_plan_only_plans_without_moving(simulator):
    node, observer = simulator
    before = tool_position(observer)
    completed = reach('0.2', '0.14', '0.06', '--plan-only')  # over the bin
    assert completed.returncode == 0, completed.stderr
    assert completed.stdout.startswith('planned tool to (0.200, 0.140, 0.060) m in base_link at pitch -90 deg: ')
    assert np.linalg.norm(tool_position(observer) - before) < 0.002


def test_reach_bad_input_is_one_line_and_status_2():
    completed = reach('0.2', 'nan', '0.1', timeout=60)
    assert completed.returncode == 2
    assert completed.stderr.strip() == 'robotsim arm reach: y: expected a finite number'
    completed = reach('0.2', '0', '0.1', '--arm', 'nope', '--world', 'pick', '--timeout', '2', timeout=120)
    assert completed.returncode == 2
    assert completed.stderr.strip() == "robotsim arm reach: arm: expected one of ['arm'] (arms of rover), got 'nope'"


def test_the_reach_service_answers_with_a_plan_or_a_code(simulator):
    node, observer = simulator
    commander = NodeProcess('robotsim_sim', 'arm_commander', {'world': str(PICK_WORLD), 'use_sim_time': True})
    try:
        over_bin = (0.20, 0.14, 0.06)
        assert np.linalg.norm(tool_position(observer) - over_bin) > 0.05  # a motion to plan
        request = ArmReach.Request(plan_only=True)
        request.position.x, request.position.y, request.position.z = over_bin
        request.pitch = math.nan
        answer = observer.call(ArmReach, '/arm_commander/reach', request, timeout=180, resend_every=30,
                              context=commander.output)
        assert answer.success and answer.code == '', (answer.message, commander.output())
        assert list(answer.joint_names) == list(ARM) and len(answer.goal_positions) == 4
        assert answer.pitch == pytest.approx(-math.pi / 2) and answer.duration > 0
        tool = ArmChain(load_robot('rover')).forward(list(answer.goal_positions))[:3, 3]
        assert np.linalg.norm(tool - over_bin) < 1e-4
        request.position.x = 0.6
        answer = observer.call(ArmReach, '/arm_commander/reach', request, timeout=180, resend_every=30,
                              context=commander.output)
        assert not answer.success and answer.code == 'unreachable'
        assert 'no pitch reaches it' in answer.message and list(answer.goal_positions) == []
    finally:
        assert commander.stop() == 0, commander.output()
