"""The drivers of a bringup (`driver:=wander|expert|policy`): the expert drives the rover to a goal given
at start and to one sent on /goal_pose and refuses a goal in a frame it cannot place; the expert is never
part of a real-mode bringup, the policy is (the node of the robot)."""

import subprocess
from pathlib import Path

import numpy as np
import pytest
from geometry_msgs.msg import PoseStamped
from nav_msgs.msg import Odometry

from robotsim.bringup import graph_for
from robotsim_core.errors import DescriptionError
from rostest_helpers import RELIABLE, Launch, Observer


def _position(observer) -> np.ndarray:
    pose = observer.messages['/sim/ground_truth'][-1].pose.pose.position
    return np.array([pose.x, pose.y])


def test_the_expert_drives_to_the_start_goal_then_to_a_goal_pose():
    run = Launch(['robotsim', 'launch', 'sim', 'driver:=expert', 'goal:=2.3,1.7', 'cameras:=false',
                  'firmware:=false'])
    observer = Observer('expert_test')
    try:
        observer.watch('/sim/ground_truth', Odometry, RELIABLE)
        run.wait_for(r'\[expert\].*goal reached', timeout=240)
        observer.spin_for(2.0)  # take in what was queued while waiting: the last message is the current pose
        assert np.linalg.norm(_position(observer) - [2.3, 1.7]) < 0.25, _position(observer)
        goals = observer.node.create_publisher(PoseStamped, '/goal_pose', RELIABLE)
        wrong = PoseStamped()
        wrong.header.frame_id = 'base_link'
        wrong.pose.position.x = 1.0
        goal = PoseStamped()
        goal.header.frame_id = 'odom'
        goal.pose.position.x, goal.pose.position.y = -2.3, -0.9
        observer.spin_for(1.0)
        goals.publish(wrong)
        run.wait_for(r"goal_pose refused: expected frame_id 'odom' or 'world', got 'base_link'", timeout=60)
        outside = PoseStamped()
        outside.header.frame_id = 'odom'
        outside.pose.position.x, outside.pose.position.y = 5.0, 5.0  # beyond the room's walls
        goals.publish(outside)
        run.wait_for(r'WARN.*\[expert\].*no collision-free path to the goal \(5\.00, 5\.00\) in world: standing still',
                     timeout=60)
        goals.publish(goal)
        run.wait_for(r'\[expert\].*goal \(-2\.30, -0\.90\) in odom', timeout=60)
        observer.messages['/sim/ground_truth'].clear()
        assert observer.spin_until(lambda: len(observer.messages['/sim/ground_truth']) > 0
                                   and np.linalg.norm(_position(observer) - [-2.3, -0.9]) < 0.25, 240), \
            _position(observer)
    finally:
        observer.close()
        run.stop()
    assert run.finish() == 0, run.text


@pytest.mark.parametrize('arguments,expected', [
    (['driver:=expert', 'use_sim:=false'], 'driver: expert reads the simulator'),
    (['driver:=teleop'], "driver: expected one of '', 'wander', 'expert'"),
    (['driver:=expert', 'goal:=1'], "goal: expected 'x,y'"),
    (['driver:=expert', 'demo:=true'], 'demo: demo:=true is driver:=wander'),
    (['driver:=policy'], "policy: driver:=policy needs an ONNX policy file, got ''"),
    (['driver:=policy', 'policy:=/nonexistent/p.onnx'], "got '/nonexistent/p.onnx' (not found)"),
])
def test_bad_driver_arguments_are_one_line(arguments, expected):
    result = subprocess.run(['robotsim', 'launch', 'robot', *arguments], capture_output=True, text=True, timeout=60)
    assert result.returncode == 2 and expected in result.stderr and len(result.stderr.strip().splitlines()) == 1, \
        result.stderr


def test_demo_is_the_wanderer_and_the_expert_gets_the_fleet_spawn():
    assert [n.executable for n in graph_for('sim', {'demo': 'true'})] == \
        [n.executable for n in graph_for('sim', {'driver': 'wander'})]
    experts = [n for n in graph_for('sim', {'fleet': 'two_rovers', 'driver': 'expert'}) if n.executable == 'expert']
    assert [n.namespace for n in experts] == ['robot1', 'robot2']
    assert all(len(n.parameters['spawn']) == 3 for n in experts)
    assert experts[0].parameters['spawn'] != experts[1].parameters['spawn']


def test_the_policy_drives_in_both_worlds_with_its_file(tmp_path):
    fake = tmp_path / 'p.onnx'
    fake.write_bytes(b'no ONNX model')
    with pytest.raises(DescriptionError, match=r'policy: .*p\.onnx: not a readable ONNX model'):
        graph_for('sim', {'driver': 'policy', 'policy': str(fake)})  # checked before any node starts
    policy = Path(__file__).resolve().parents[1] / 'config' / 'policies' / 'rover_goal_reaching.onnx'
    for mode, arguments in (('sim', {}), ('real', {}), ('robot', {'use_sim': 'false'})):
        nodes = graph_for(mode, {**arguments, 'driver': 'policy', 'policy': str(policy), 'goal': '1,0'})
        driver = nodes[-1]
        assert (driver.package, driver.executable, driver.required) == ('robotsim_learning', 'policy', True)
        assert driver.parameters['policy'] == str(policy) and driver.parameters['goal'] == [1.0, 0.0]
        assert driver.parameters['use_sim_time'] == (mode == 'sim')
        assert driver.parameters['seed'] == 0  # the bringup's seed:=, a sampling policy's draws
    assert graph_for('sim', {'driver': 'policy', 'policy': str(policy), 'seed': '7'})[-1].parameters['seed'] == 7
