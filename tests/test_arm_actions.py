"""The simulator's ros2_control interfaces over a real rclpy graph: the simulator node in its own
process, an rclpy ActionClient here. FollowJointTrajectory on arm_controller/follow_joint_trajectory
(success with the tracking error in the feedback, preemption, cancel mid-motion, a path tolerance
violation, bad goals answered with a code and a reason) and GripperCommand on
gripper_controller/gripper_cmd (open, then close on a peg: stalled). Times are sim times from the
messages; wall-clock timeouts only guard against hangs."""

from __future__ import annotations

import re

import numpy as np
import pytest
from builtin_interfaces.msg import Duration
from control_msgs.action import FollowJointTrajectory, GripperCommand
from control_msgs.msg import JointTolerance, JointTrajectoryControllerState
from rclpy.action import ActionClient
from sensor_msgs.msg import JointState
from trajectory_msgs.msg import JointTrajectoryPoint

from robotsim_core.arm.timing import JointMotionLimits, joint_limits_from_model, time_parameterize
from robotsim_core.description import load_robot
from robotsim_msgs.srv import Step
from rostest_helpers import RELIABLE, WORKSPACE, NodeProcess, Observer, stamp_seconds

PEG_WORLD = WORKSPACE / 'tests' / 'data' / 'worlds' / 'arm_peg.yaml'
ARM = ['arm_base_joint', 'arm_shoulder_joint', 'arm_elbow_joint', 'arm_wrist_joint']
AT_PEG = [0.0, 0.5, 0.0, 0.0]
SUCCEEDED, CANCELED, ABORTED = 4, 5, 6   # action_msgs/GoalStatus
Result = FollowJointTrajectory.Result


def duration(seconds: float) -> Duration:
    nanoseconds = round(seconds * 1e9)
    return Duration(sec=nanoseconds // 1_000_000_000, nanosec=nanoseconds % 1_000_000_000)


class ArmClient:
    """An Observer with the two action clients and /joint_states recorded (their stamps tell the sim
    time: /clock at 250 Hz would only make a loaded test process fall behind the simulator)."""

    def __init__(self, name: str, namespace: str = ''):
        prefix = f'/{namespace}' if namespace else ''
        self.obs = Observer(name)
        self.states = f'{prefix}/joint_states'
        self.obs.watch(self.states, JointState, RELIABLE)
        self.trajectory = ActionClient(self.obs.node, FollowJointTrajectory, f'{prefix}/arm_controller/follow_joint_trajectory')
        self.gripper = ActionClient(self.obs.node, GripperCommand, f'{prefix}/gripper_controller/gripper_cmd')
        self.feedback: list = []

    def close(self):
        self.trajectory.destroy()
        self.gripper.destroy()
        self.obs.close()

    def wait_for_servers(self, paused: bool = False):
        assert self.trajectory.wait_for_server(timeout_sec=60) and self.gripper.wait_for_server(timeout_sec=60)
        if paused:
            self.step(0.1)
        assert self.obs.spin_until(lambda: self.obs.messages[self.states], 60)
        # One simulator on this test's ROS domain: another one (a parallel run that drew the same
        # domain) would answer goals and publish joint states too.
        assert self.obs.node.count_publishers(self.states) == 1, 'another simulator shares this ROS domain'

    def arm(self) -> np.ndarray:
        state = self.obs.messages[self.states][-1]
        positions = dict(zip(state.name, state.position))
        return np.array([positions[name] for name in ARM])

    def now(self) -> float:
        return stamp_seconds(self.obs.messages[self.states][-1].header.stamp)

    def wait_for_state_after(self, sim_time: float, hang_guard: float = 120) -> None:
        """Spin until a joint state stamped ``sim_time`` or later has arrived (an event's time in sim
        seconds: whatever this process still has queued, the state it then reads is from after it)."""
        assert self.obs.spin_until(lambda: self.obs.messages[self.states] and self.now() >= sim_time, hang_guard)

    def step(self, seconds: float) -> float:
        """A paused simulator: run ``seconds`` of sim time (/sim/step), then take in the joint states of
        that time. Returns the sim time reached."""
        response = self.obs.call(Step, '/sim/step', Step.Request(steps=round(seconds / 0.002)), timeout=120)
        assert response.success, response.message
        reached = stamp_seconds(response.sim_time)
        self.wait_for_state_after(reached)
        return reached

    def spin_sim_seconds(self, seconds: float, hang_guard: float = 120) -> None:
        assert self.obs.spin_until(lambda: self.obs.messages[self.states], 30)
        end = self.now() + seconds
        assert self.obs.spin_until(lambda: self.now() >= end, hang_guard)

    def send(self, client, goal, feedback: bool = False):
        future = client.send_goal_async(goal, feedback_callback=(lambda m: self.feedback.append(m.feedback))
                                        if feedback else None)
        self.obs.executor.spin_until_future_complete(future, timeout_sec=30)
        handle = future.result()
        assert handle is not None and handle.accepted, 'the simulator accepts every goal (a bad one ends with a reason)'
        return handle

    def result(self, handle, hang_guard: float = 120):
        future = handle.get_result_async()
        self.obs.executor.spin_until_future_complete(future, timeout_sec=hang_guard)
        assert future.done(), 'no result'
        return future.result()

    def follow(self, goal, hang_guard: float = 120):
        return self.result(self.send(self.trajectory, goal, feedback=True), hang_guard)

    def grip(self, position: float, max_effort: float = 0.0):
        goal = GripperCommand.Goal()
        goal.command.position, goal.command.max_effort = position, max_effort
        return self.result(self.send(self.gripper, goal))


@pytest.fixture
def client():
    arm = ArmClient('arm_actions')
    yield arm
    arm.close()


def simulator(**params) -> NodeProcess:
    return NodeProcess('robotsim_sim', 'sim_node', {'world': str(PEG_WORLD), 'cameras': False,
                                                    'real_time_factor': 2.0, **params})


def timed_goal(start, target, velocity_scale: float = 1.0) -> FollowJointTrajectory.Goal:
    """A jerk-limited trajectory (positions, velocities, accelerations every 10 ms) as a goal."""
    limits = joint_limits_from_model(load_robot('rover'), ARM)
    if velocity_scale != 1.0:
        limits = [JointMotionLimits(j.name, j.lower, j.upper, j.velocity * velocity_scale, j.acceleration * velocity_scale,
                                    j.jerk) for j in limits]
    start = np.clip(start, [j.lower for j in limits], [j.upper for j in limits])
    timed = time_parameterize([start, target], limits, 0.01)
    goal = FollowJointTrajectory.Goal()
    goal.trajectory.joint_names = list(ARM)
    goal.trajectory.points = [JointTrajectoryPoint(positions=list(p), velocities=list(v), accelerations=list(a),
                                                   time_from_start=duration(t))
                              for t, p, v, a in zip(timed.time_from_start, timed.positions, timed.velocities,
                                                    timed.accelerations)]
    return goal


def test_trajectory_goal_succeeds_with_its_tracking_error_in_the_feedback(client):
    client.obs.watch('/arm_controller/controller_state', JointTrajectoryControllerState, RELIABLE)
    target = [-0.8, 0.4, -0.6, 0.3]
    with simulator():
        client.wait_for_servers()
        goal = timed_goal(client.arm(), target)
        wrapped = client.follow(goal)
        # Feedback came while the goal ran: a state 0.5 s after the last one is from after the goal's end.
        client.wait_for_state_after(stamp_seconds(client.feedback[-1].header.stamp) + 0.5)
        final = client.arm()
        assert client.obs.spin_until(lambda: client.obs.messages['/arm_controller/controller_state'], 30)
    assert wrapped.status == SUCCEEDED, wrapped.result.error_string
    assert (wrapped.result.error_code, wrapped.result.error_string) == (Result.SUCCESSFUL, 'Goal successfully reached!')
    assert final == pytest.approx(target, abs=0.01)
    feedback = client.feedback
    assert len(feedback) >= 5, 'feedback at the action monitor rate (20 Hz of sim time) while it ran'
    assert all(list(f.joint_names) == ARM for f in feedback)
    indices = [f.index for f in feedback]
    assert indices == sorted(indices) and 0 < indices[-1] < len(goal.trajectory.points)
    stamps = [stamp_seconds(f.header.stamp) for f in feedback]
    assert stamps == sorted(stamps)
    for f in feedback:
        assert np.array(f.error.positions) == pytest.approx(np.array(f.desired.positions) - np.array(f.actual.positions),
                                                            abs=1e-12)
        assert len(f.desired.velocities) == len(f.actual.velocities) == len(f.error.accelerations) == 4
    worst = max(float(np.max(np.abs(f.error.positions))) for f in feedback)
    assert worst <= 0.005, f'tracking error {worst} rad reported in the feedback'
    moving = [f for f in feedback if np.max(np.abs(f.desired.velocities)) > 0.5]
    assert moving, 'some feedback came while the arm moved fast'
    state = client.obs.messages['/arm_controller/controller_state'][-1]
    assert list(state.joint_names) == ARM and len(state.output.positions) == 4


def test_preemption_then_cancel_mid_motion(client):
    """In step mode (the simulator paused between /sim/step calls), so every goal, preemption and
    cancel lands at a known sim time however slow this process is."""
    with simulator(start_paused=True):
        client.wait_for_servers(paused=True)
        slow = timed_goal(client.arm(), [-2.5, 0.0, 0.0, 0.0], velocity_scale=0.1)
        first = client.send(client.trajectory, slow)
        client.step(1.5)
        # The second goal gives velocities: its first segment is a cubic from the arm's current motion
        # (it keeps turning the base, slowing down, and lifts the shoulder).
        second_goal = FollowJointTrajectory.Goal()
        second_goal.trajectory.joint_names = list(ARM)
        second_goal.trajectory.points = [JointTrajectoryPoint(positions=[-2.5, 0.6, 0.0, 0.0], velocities=[0.0] * 4,
                                                              time_from_start=duration(12.0))]
        second = client.send(client.trajectory, second_goal)
        preempted = client.result(first)
        client.step(1.0)
        cancel = second.cancel_goal_async()
        client.obs.executor.spin_until_future_complete(cancel, timeout_sec=30)
        assert cancel.result() is not None and len(cancel.result().goals_canceling) == 1
        canceled = client.result(second)
        client.step(1.0)
        states = [(stamp_seconds(s.header.stamp), dict(zip(s.name, s.position))) for s in client.obs.messages[client.states]]
    assert preempted.status == ABORTED and preempted.result.error_code == Result.INVALID_GOAL
    started = re.search(r'preempted by a new goal at ([\d.]+) s sim time', preempted.result.error_string)
    assert started, preempted.result.error_string
    assert canceled.status == CANCELED, canceled.result.error_string
    stopped = re.search(r'canceled at ([\d.]+) s sim time', canceled.result.error_string)
    assert stopped, canceled.result.error_string
    second_started, stopped_at = float(started.group(1)), float(stopped.group(1))
    assert stopped_at == pytest.approx(second_started + 1.0, abs=1e-6), 'cancelled 1 s of sim time into the second goal'
    assert states[-1][0] == pytest.approx(stopped_at + 1.0, abs=0.021)

    def at(time):
        return min(states, key=lambda item: abs(item[0] - time))[1]
    assert at(second_started)['arm_base_joint'] < -0.1, 'the first goal moved the arm'
    assert at(stopped_at)['arm_base_joint'] < at(second_started)['arm_base_joint'] - 0.05, \
        'the second goal moved it on'
    for joint in ('arm_base_joint', 'arm_shoulder_joint'):
        assert abs(states[-1][1][joint] - at(stopped_at)[joint]) < 0.01, f'{joint} stops where it was'
    assert states[-1][1]['arm_base_joint'] > -2.0 and states[-1][1]['arm_shoulder_joint'] < 0.3, \
        'stopped well short of the second goal'


def test_path_tolerance_violation_holds_the_arm(client):
    with simulator():
        client.wait_for_servers()
        goal = FollowJointTrajectory.Goal()
        goal.trajectory.joint_names = list(ARM)
        # Positions only: a straight line whose velocity jumps at the start, a servo cannot follow that within 1 mrad.
        goal.trajectory.points = [JointTrajectoryPoint(positions=[-1.5, 0.0, 0.0, 0.0], time_from_start=duration(1.5))]
        goal.path_tolerance = [JointTolerance(name='arm_base_joint', position=0.001)]
        wrapped = client.follow(goal)
        violated_at = float(re.search(r'path tolerance violated at ([\d.]+) s sim time',
                                      wrapped.result.error_string).group(1))
        client.wait_for_state_after(violated_at + 1.0)
        states = [(stamp_seconds(s.header.stamp), dict(zip(s.name, s.position))) for s in client.obs.messages[client.states]]
    assert wrapped.status == ABORTED and wrapped.result.error_code == Result.PATH_TOLERANCE_VIOLATED
    assert "joint 'arm_base_joint' position error" in wrapped.result.error_string
    stopped = min(states, key=lambda item: abs(item[0] - violated_at - 0.1))[1]
    final = states[-1][1]
    assert all(abs(final[joint] - stopped[joint]) < 0.005 for joint in ARM), 'holds its position'
    assert final['arm_base_joint'] > -0.5, 'well short of the goal'


def test_bad_goals_end_with_a_code_and_a_reason_and_the_simulator_keeps_running():
    arm = ArmClient('arm_bad_goals', namespace='rover1')
    try:
        with simulator(namespace='rover1') as sim:
            arm.wait_for_servers()

            def goal(names, *points, stamp: float = 0.0):
                message = FollowJointTrajectory.Goal()
                message.trajectory.joint_names = names
                message.trajectory.header.stamp.sec = int(stamp)
                for seconds, positions in points:
                    message.trajectory.points.append(JointTrajectoryPoint(positions=positions,
                                                                          time_from_start=duration(seconds)))
                return message
            multi_dof = goal(ARM, (1.0, [0.0] * 4))
            multi_dof.multi_dof_trajectory.joint_names = ['base']
            arm.spin_sim_seconds(3.0)
            cases = {
                'unknown joint': goal(ARM[:3] + ['unicorn_joint'], (1.0, [0.0] * 4)),
                'missing joint': goal(ARM[:3], (1.0, [0.0] * 3)),
                'beyond limits': goal(ARM, (1.0, [0.0, 2.0, 0.0, 0.0])),
                'times going back': goal(ARM, (2.0, [0.0] * 4), (1.0, [0.1] + [0.0] * 3)),
                'no points': goal(ARM),
                'multi-DOF': multi_dof,
                'ended in the past': goal(ARM, (1.0, [0.0] * 4), stamp=1.0),
            }
            results = {name: arm.follow(message) for name, message in cases.items()}
            grip = arm.grip(float('nan'))
            clock_before = arm.now()
            arm.spin_sim_seconds(0.5)
            running = sim.process.poll() is None and arm.now() > clock_before
            log = sim.output()
    finally:
        arm.close()
    expected = {
        'unknown joint': (Result.INVALID_JOINTS, "unknown joints ['unicorn_joint']"),
        'missing joint': (Result.INVALID_JOINTS, "missing ['arm_wrist_joint']"),
        'beyond limits': (Result.INVALID_GOAL, "trajectory.points[0].positions[1]: 2 is beyond the limits [-1.57, 1.57] "
                                               "of joint 'arm_shoulder_joint'"),
        'times going back': (Result.INVALID_GOAL, 'time_from_start must increase strictly'),
        'no points': (Result.INVALID_GOAL, 'trajectory has no points'),
        'multi-DOF': (Result.INVALID_GOAL, 'multi_dof_trajectory: not supported'),
        'ended in the past': (Result.OLD_HEADER_TIMESTAMP, 'trajectory.header.stamp: the trajectory ends at 2 s sim time'),
    }
    for name, (code, phrase) in expected.items():
        wrapped = results[name]
        assert wrapped.status == ABORTED and wrapped.result.error_code == code, (name, wrapped.result.error_string)
        assert phrase in wrapped.result.error_string, (name, wrapped.result.error_string)
    assert grip.status == ABORTED and not grip.result.reached_goal
    assert running, 'the simulator kept running'
    assert 'command.position: expected a finite finger position' in log
    assert 'Traceback' not in log, log


def test_gripper_opens_then_stalls_on_the_peg(client):
    with simulator():
        client.wait_for_servers()
        opened = client.grip(0.02)
        reached = client.follow(timed_goal(client.arm(), AT_PEG))
        closed = client.grip(0.0)
        client.spin_sim_seconds(0.5)
        finger = dict(zip(client.obs.messages[client.states][-1].name,
                          client.obs.messages[client.states][-1].position))['arm_left_finger_joint']
    assert opened.status == SUCCEEDED and opened.result.reached_goal and not opened.result.stalled
    assert opened.result.position == pytest.approx(0.02, abs=0.001)
    assert reached.status == SUCCEEDED, reached.result.error_string
    # The fingers stop on the 2 cm peg, 1 cm each from closed: a grasp.
    assert closed.status == SUCCEEDED and closed.result.stalled and not closed.result.reached_goal
    assert closed.result.position == pytest.approx(0.01, abs=0.0015)
    assert 0.3 < closed.result.effort <= 5.0
    assert finger == pytest.approx(closed.result.position, abs=0.001), 'keeps squeezing the peg'


def test_bad_controller_parameters_stop_the_simulator_with_one_line():
    import subprocess

    from rostest_helpers import executable

    completed = subprocess.run([executable('robotsim_sim', 'sim_node'), '--ros-args', '-p', 'cameras:=false',
                                '-p', 'arm_controller.constraints.goal:=-0.1'], capture_output=True, text=True, timeout=120)
    assert completed.returncode == 2, completed.stderr
    assert ("robotsim_sim: error: parameter 'arm_controller.constraints.goal': expected a finite number >= 0, got -0.1"
            in completed.stderr), completed.stderr
    assert 'Traceback' not in completed.stderr
