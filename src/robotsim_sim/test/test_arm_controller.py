"""The arm's trajectory follower and the FollowJointTrajectory / GripperCommand goal logic, ROS-free
(robotsim_sim.controllers, robotsim_sim.arm_controller): spline interpolation as
joint_trajectory_controller does it, goal checks with their result codes and reasons, tolerances,
cancel and preemption, and the gripper's stall on a real object, all in a real MuJoCo simulation."""

import math

import numpy as np
import pytest

from robotsim_core.arm.timing import joint_limits_from_model, time_parameterize
from robotsim_core.description import load_robot
from robotsim_sim.arm_controller import (ArmGoal, GoalStatus, GripperConfig, JointTolerance, Rejection, ResultCode,
                                         StateTolerance, TrajectoryConstraints, check_trajectory, resolve_tolerances)
from robotsim_sim.controllers import TrajectoryFollower, TrajectoryPoint
from robotsim_sim.scene import RobotPlacement, load_world
from robotsim_sim.simulation import SimOptions, Simulation
from rostest_helpers import WORKSPACE

PEG_WORLD = WORKSPACE / 'tests' / 'data' / 'worlds' / 'arm_peg.yaml'
ARM = ['arm_base_joint', 'arm_shoulder_joint', 'arm_elbow_joint', 'arm_wrist_joint']
AT_PEG = [0.0, 0.5, 0.0, 0.0]
"""Arm joints at which the open fingers straddle the peg of arm_peg.yaml."""


def test_controller_logic_is_ros_free():
    """The follower, the goal logic and the simulation import no ROS package (the node converts messages)."""
    import ast

    from test_layering import is_ros_package

    package = WORKSPACE / 'src' / 'robotsim_sim' / 'robotsim_sim'
    for name in ('controllers.py', 'arm_controller.py', 'simulation.py'):
        tree = ast.parse((package / name).read_text())
        imported = {alias.name for node in ast.walk(tree) if isinstance(node, ast.Import) for alias in node.names}
        imported |= {node.module or '' for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)}
        ros = {module for module in imported if is_ros_package(module)}  # control_msgs, action_msgs, rclpy, ...
        assert not ros, f'{name} imports {sorted(ros)}'


# ---------------------------------------------------------------------------- the follower
def test_positions_only_are_joined_by_straight_lines_from_the_current_state():
    follower = TrajectoryFollower(['a', 'b'])
    follower.load(['a', 'b'], [TrajectoryPoint(1.0, (1.0, -1.0)), TrajectoryPoint(3.0, (2.0, -1.0))],
                  start=10.0, now=10.0, positions=[0.0, 0.0], velocities=[0.5, 0.0])
    middle = follower.sample(10.5)
    # Linear to the first point, though the joints move at 0.5 rad/s now: JTC's linear segments ignore velocity.
    assert middle.positions == pytest.approx([0.5, -0.5])
    assert middle.velocities == pytest.approx([1.0, -1.0]) and middle.accelerations == pytest.approx([0.0, 0.0])
    assert middle.index == 0 and middle.moving
    later = follower.sample(12.0)
    assert later.positions == pytest.approx([1.5, -1.0]) and later.velocities == pytest.approx([0.5, 0.0])
    assert later.index == 0, 'the segment from point 0 to point 1'
    end = follower.sample(20.0)
    assert end.positions == pytest.approx([2.0, -1.0]) and not end.velocities.any() and not end.moving
    assert end.index == 1


def test_velocities_give_cubic_and_accelerations_quintic_segments():
    """At both ends of a segment the samples match the points' positions, velocities (and
    accelerations); inside, the polynomial is the unique cubic (quintic) through those conditions."""
    def boundary_solution(degree, duration, start, end):
        rows, values = [], []
        for order, (time, conditions) in ((0, (0.0, start)), (1, (duration, end))):
            del order
            for derivative, value in enumerate(conditions):
                rows.append([math.factorial(k) / math.factorial(k - derivative) * time ** (k - derivative)
                             if k >= derivative else 0.0 for k in range(degree + 1)])
                values.append(value)
        return np.linalg.solve(np.array(rows), np.array(values))

    for degree, point in ((3, TrajectoryPoint(2.0, (1.0,), (0.3,))), (5, TrajectoryPoint(2.0, (1.0,), (0.3,), (-0.4,)))):
        follower = TrajectoryFollower(['a'])
        # A first point at time 0 where the joint is: the segment that matters runs from it to the second.
        first = TrajectoryPoint(0.0, (0.0,), (0.1,), (0.2,) if degree == 5 else ())
        follower.load(['a'], [first, point], start=0.0, now=0.0, positions=[0.0], velocities=[0.1])
        start_conditions = (0.0, 0.1, 0.2)[:(degree + 1) // 2]
        end_conditions = (1.0, 0.3, -0.4)[:(degree + 1) // 2]
        coefficients = boundary_solution(degree, 2.0, start_conditions, end_conditions)
        for time in (0.0, 0.37, 1.0, 1.9, 1.999999):
            state = follower.sample(time)
            expected = sum(c * time ** k for k, c in enumerate(coefficients))
            slope = sum(k * c * time ** (k - 1) for k, c in enumerate(coefficients) if k)
            assert state.positions[0] == pytest.approx(expected, abs=1e-9), (degree, time)
            assert state.velocities[0] == pytest.approx(slope, abs=1e-9), (degree, time)
        assert follower.sample(1e-9).velocities[0] == pytest.approx(0.1, abs=1e-6)
        if degree == 5:
            assert follower.sample(1e-9).accelerations[0] == pytest.approx(0.2, abs=1e-6)
            assert follower.sample(2.0 - 1e-9).accelerations[0] == pytest.approx(-0.4, abs=1e-5)


def test_mixed_points_and_unnamed_joints():
    follower = TrajectoryFollower(['a', 'b'])
    # The first point gives velocities, the second not: that segment is linear (both ends must give them).
    follower.load(['a'], [TrajectoryPoint(1.0, (1.0,), (0.0,)), TrajectoryPoint(2.0, (3.0,))],
                  start=0.0, now=0.0, positions=[0.0, 0.7], velocities=[0.0, 0.0])
    state = follower.sample(1.5)
    assert state.positions == pytest.approx([2.0, 0.7]) and state.velocities == pytest.approx([2.0, 0.0])
    follower.hold([0.1, 0.2])
    assert follower.sample(5.0).positions == pytest.approx([0.1, 0.2]) and follower.sample(5.0).index == -1
    follower.reset()
    assert follower.sample(5.0) is None


# ---------------------------------------------------------------------------- goal checks
LIMITS = {'arm_base_joint': (-2.9, 2.9), 'arm_shoulder_joint': (-1.57, 1.57), 'arm_elbow_joint': (-2.5, 2.5),
          'arm_wrist_joint': (-1.8, 1.8)}


def check(names, points, **options):
    options.setdefault('allow_partial', False)
    return check_trajectory(names, points, ARM, LIMITS, **options)


@pytest.mark.parametrize('names, points, code, phrase', [
    (['arm_base_joint', 'unicorn_joint'], [TrajectoryPoint(1, (0, 0))], ResultCode.INVALID_JOINTS,
     "trajectory.joint_names: unknown joints ['unicorn_joint']"),
    (['arm_base_joint'], [TrajectoryPoint(1, (0,))], ResultCode.INVALID_JOINTS,
     "missing ['arm_shoulder_joint', 'arm_elbow_joint', 'arm_wrist_joint']"),
    (ARM[:3] + ['arm_base_joint'], [TrajectoryPoint(1, (0, 0, 0, 0))], ResultCode.INVALID_JOINTS,
     "['arm_base_joint'] named more than once"),
    ([], [TrajectoryPoint(1, ())], ResultCode.INVALID_JOINTS, 'trajectory.joint_names: empty'),
    (ARM, [], ResultCode.INVALID_GOAL, 'trajectory.points: trajectory has no points'),
    (ARM, [TrajectoryPoint(i * 0.01, (0, 0, 0, 0)) for i in range(100_001)], ResultCode.INVALID_GOAL,
     'trajectory.points: 100001 points; expected at most 100000'),
    (ARM, [TrajectoryPoint(1, (0, 0, 0))], ResultCode.INVALID_GOAL,
     'trajectory.points[0].positions: every point needs one finite position per joint (4'),
    (ARM, [TrajectoryPoint(1, (0, math.nan, 0, 0))], ResultCode.INVALID_GOAL, 'points[0].positions'),
    (ARM, [TrajectoryPoint(1, (0, 0, 0, 0), (1, 2))], ResultCode.INVALID_GOAL,
     'trajectory.points[0].velocities: expected none or one finite value per joint (4)'),
    (ARM, [TrajectoryPoint(1, (0, 0, 0, 0), (), (0, 0, 0, 0))], ResultCode.INVALID_GOAL, 'given without velocities'),
    (ARM, [TrajectoryPoint(1, (0, 0, 0, 0)), TrajectoryPoint(1, (0.1, 0, 0, 0))], ResultCode.INVALID_GOAL,
     'trajectory.points[1].time_from_start: 1 s after point 0 at 1 s; time_from_start must increase strictly'),
    (ARM, [TrajectoryPoint(-1, (0, 0, 0, 0))], ResultCode.INVALID_GOAL, 'expected a time >= 0 s'),
    (ARM, [TrajectoryPoint(1, (0, 0, 0, 0)), TrajectoryPoint(2, (0, 2.0, 0, 0))], ResultCode.INVALID_GOAL,
     "trajectory.points[1].positions[1]: 2 is beyond the limits [-1.57, 1.57] of joint 'arm_shoulder_joint'"),
])
def test_bad_trajectories_are_refused_with_code_and_reason(names, points, code, phrase):
    result = check(names, points)
    assert isinstance(result, Rejection) and result.code == code
    assert phrase in result.message, result.message
    assert '\n' not in result.message


def test_topic_rules_clamp_allow_subsets_and_equal_times():
    result = check(['arm_shoulder_joint'], [TrajectoryPoint(1, (2.0,)), TrajectoryPoint(1, (0.5,))],
                   allow_partial=True, beyond_limits='clamp', strictly_increasing=False)
    assert not isinstance(result, Rejection)
    assert result.points[0].positions == (1.57,) and result.clamped == [('arm_shoulder_joint', 2.0, 1.57)]


def test_tolerances_follow_the_joint_tolerance_rules():
    constraints = TrajectoryConstraints(trajectory=0.05, goal=0.01, stopped_velocity_tolerance=0.02, goal_time=1.5)
    goal = ArmGoal(ARM, [], path_tolerance=[JointTolerance('arm_elbow_joint', position=0.2, velocity=-1),
                                            JointTolerance('arm_base_joint', position=-1)],
                   goal_tolerance=[JointTolerance('arm_wrist_joint', velocity=0.5)], goal_time_tolerance=0.0)
    path, final, goal_time = resolve_tolerances(goal, ARM, constraints)
    assert path == [StateTolerance(0.0), StateTolerance(0.05), StateTolerance(0.2), StateTolerance(0.05)]
    assert final[3] == StateTolerance(0.01, 0.5) and final[0] == StateTolerance(0.01, 0.02)
    assert goal_time == 1.5
    for bad, phrase in ((ArmGoal(ARM, [], path_tolerance=[JointTolerance('x', 0.1)]),
                         "path_tolerance[0].name: unknown joint 'x'"),
                        (ArmGoal(ARM, [], goal_tolerance=[JointTolerance('arm_base_joint', -2.0)]),
                         "goal_tolerance[0].position: -2.0 for joint 'arm_base_joint'; expected a tolerance > 0, 0"),
                        (ArmGoal(ARM, [], goal_time_tolerance=-0.5), 'goal_time_tolerance: expected a duration >= 0 s')):
        rejection = resolve_tolerances(bad, ARM, constraints)
        assert isinstance(rejection, Rejection) and rejection.code == ResultCode.INVALID_GOAL
        assert phrase in rejection.message, rejection.message


# ---------------------------------------------------------------------------- in the simulation
def rover(**options) -> Simulation:
    return Simulation(load_world(str(PEG_WORLD)), [RobotPlacement(load_robot('rover'))],
                      SimOptions(cameras=False, **options))


def arm_positions(sim: Simulation) -> np.ndarray:
    return sim.data.qpos[sim.robots[0].arm_qpos].copy()


def timed_goal(sim: Simulation, target, **fields) -> tuple[ArmGoal, float]:
    """A jerk-limited trajectory from the measured arm positions to ``target`` as a goal, and its duration."""
    robot = sim.robots[0]
    limits = joint_limits_from_model(robot.model, ARM)
    timed = time_parameterize([np.clip(arm_positions(sim), [j.lower for j in limits], [j.upper for j in limits]),
                               target], limits, 0.01)
    points = [TrajectoryPoint(float(t), tuple(p), tuple(v), tuple(a)) for t, p, v, a in
              zip(timed.time_from_start, timed.positions, timed.velocities, timed.accelerations)]
    return ArmGoal(ARM, points, **fields), timed.duration


def run_until(sim: Simulation, token, seconds: float, on_step=None):
    """Step until ``token``'s goal ends (its outcome) or ``seconds`` of sim time pass (None)."""
    for _ in range(round(seconds / sim.model.opt.timestep)):
        sim.step()
        if on_step is not None:
            on_step()
        for outcome in sim.take_controller_outcomes():
            if outcome.token == token:
                return outcome
    return None


def run(sim: Simulation, seconds: float) -> None:
    for _ in range(round(seconds / sim.model.opt.timestep)):
        sim.step()


def test_timed_trajectory_succeeds_and_is_tracked_within_5_mrad():
    sim = rover()
    run(sim, 0.2)
    goal, duration = timed_goal(sim, [-0.8, 0.4, -0.6, 0.3])
    sim.send_arm_goal(0, goal, 'move')
    worst = []

    def track():
        state = sim.arm_state(0)
        if state.time_from_start <= duration:
            worst.append(float(np.max(np.abs(state.error[0]))))
    outcome = run_until(sim, 'move', duration + 2.0, track)
    assert outcome.status is GoalStatus.SUCCEEDED and outcome.code == ResultCode.SUCCESSFUL, outcome
    assert len(worst) > duration / sim.model.opt.timestep * 0.9
    assert max(worst) <= 0.005, max(worst)
    assert arm_positions(sim) == pytest.approx([-0.8, 0.4, -0.6, 0.3], abs=0.01)


def test_path_tolerance_violation_holds_the_arm_where_it_is():
    sim = rover()
    run(sim, 0.2)
    # Positions only: a straight line whose velocity jumps at the start; the servo cannot follow
    # that within 1 mrad.
    goal = ArmGoal(ARM, [TrajectoryPoint(1.5, (-1.5, 0.0, 0.0, 0.0))],
                   path_tolerance=[JointTolerance('arm_base_joint', position=0.001)])
    sim.send_arm_goal(0, goal, 'fast')
    outcome = run_until(sim, 'fast', 3.0)
    assert outcome.status is GoalStatus.ABORTED and outcome.code == ResultCode.PATH_TOLERANCE_VIOLATED
    assert "joint 'arm_base_joint' position error" in outcome.error_string and 'exceeds 0.001' in outcome.error_string
    stopped = arm_positions(sim)
    run(sim, 1.0)
    assert np.max(np.abs(arm_positions(sim) - stopped)) < 0.005, 'holds where the violation happened'
    assert arm_positions(sim)[0] > -0.5, 'far from the goal'


def test_unreachable_goal_tolerance_ends_after_the_goal_time():
    sim = rover()
    run(sim, 0.2)
    goal, duration = timed_goal(sim, [-0.5, 0.2, 0.0, 0.0], goal_time_tolerance=0.3,
                                goal_tolerance=[JointTolerance(name, position=1e-12) for name in ARM])
    started = sim.time
    sim.send_arm_goal(0, goal, 'exact')
    outcome = run_until(sim, 'exact', duration + 2.0)
    assert outcome.code == ResultCode.GOAL_TOLERANCE_VIOLATED and outcome.status is GoalStatus.ABORTED
    assert sim.time - started == pytest.approx(duration + 0.3, abs=0.01)
    assert 'goal time tolerance 0.3 s' in outcome.error_string


def test_cancel_preemption_and_bad_goals_while_a_goal_runs():
    sim = rover()
    run(sim, 0.2)
    first, _ = timed_goal(sim, [-2.5, 0.0, 0.0, 0.0])
    sim.send_arm_goal(0, first, 'first')
    run(sim, 0.5)
    # A bad goal is refused at once and leaves the running one alone.
    sim.send_arm_goal(0, ArmGoal(['unicorn_joint'], [TrajectoryPoint(1, (0,))]), 'bad')
    assert [(o.token, o.code) for o in sim.take_controller_outcomes()] == [('bad', ResultCode.INVALID_JOINTS)]
    assert sim.robots[0].arm_controller.active_token == 'first'
    old = ArmGoal(ARM, [TrajectoryPoint(1.0, (0.0, 0.0, 0.0, 0.0))], start_time=sim.time - 5.0)
    sim.send_arm_goal(0, old, 'old')
    [outcome] = sim.take_controller_outcomes()
    assert outcome.code == ResultCode.OLD_HEADER_TIMESTAMP and 'trajectory.header.stamp' in outcome.error_string
    # A good goal preempts the running one. It gives velocities, so its first segment is a cubic from
    # the arm's current position and velocity (a rest-to-rest profile from a moving arm would not be).
    second = ArmGoal(ARM, [TrajectoryPoint(3.0, (-2.5, 0.3, 0.0, 0.0), (0.0, 0.0, 0.0, 0.0))])
    sim.send_arm_goal(0, second, 'second')
    [preempted] = sim.take_controller_outcomes()
    assert preempted.token == 'first' and preempted.status is GoalStatus.ABORTED
    assert preempted.code == ResultCode.INVALID_GOAL and 'preempted by a new goal' in preempted.error_string
    run(sim, 0.4)
    moving = arm_positions(sim)
    assert sim.cancel_arm_goal(0, 'second')
    [canceled] = sim.take_controller_outcomes()
    assert canceled.status is GoalStatus.CANCELED and canceled.code == ResultCode.SUCCESSFUL
    at_cancel = arm_positions(sim)
    run(sim, 1.0)
    assert np.max(np.abs(arm_positions(sim) - at_cancel)) < 0.05, 'stops near where it was'
    assert arm_positions(sim)[0] > -2.0 and np.max(np.abs(at_cancel - moving)) < 1e-12
    assert not sim.cancel_arm_goal(0, 'second'), 'a goal that ended cannot be cancelled again'


def test_topic_trajectory_and_reset_end_the_running_goal():
    sim = rover()
    goal, _ = timed_goal(sim, [-1.0, 0.0, 0.0, 0.0])
    sim.send_arm_goal(0, goal, 'goal')
    run(sim, 0.2)
    assert sim.command_arm(0, ['arm_base_joint'], [(1.0, [0.3])]) is None
    [outcome] = sim.take_controller_outcomes()
    assert outcome.code == ResultCode.INVALID_GOAL and 'arm_controller/joint_trajectory' in outcome.error_string
    sim.send_arm_goal(0, goal, 'again')
    sim.reset()
    [outcome] = sim.take_controller_outcomes()
    assert outcome.token == 'again' and 'reset' in outcome.error_string


def reach_peg_with_open_fingers(sim: Simulation) -> None:
    sim.send_gripper_goal(0, 'open', 0.02, 0.0)
    opened = run_until(sim, 'open', 2.0)
    assert opened.status is GoalStatus.SUCCEEDED and opened.reached_goal and not opened.stalled
    assert opened.position == pytest.approx(0.02, abs=GripperConfig.goal_tolerance)
    goal, duration = timed_goal(sim, AT_PEG)
    sim.send_arm_goal(0, goal, 'reach')
    assert run_until(sim, 'reach', duration + 2.0).code == ResultCode.SUCCESSFUL


@pytest.mark.parametrize('allow_stalling', [True, False])
def test_gripper_stalls_on_the_peg(allow_stalling):
    sim = rover(gripper=GripperConfig(allow_stalling=allow_stalling))
    run(sim, 0.2)
    reach_peg_with_open_fingers(sim)
    started = sim.time
    sim.send_gripper_goal(0, 'close', 0.0, 0.0)
    outcome = run_until(sim, 'close', 5.0)
    assert outcome.stalled and not outcome.reached_goal
    assert outcome.status is (GoalStatus.SUCCEEDED if allow_stalling else GoalStatus.ABORTED)
    # The peg is 2 cm across: each finger stops about 1 cm from closed, squeezing it.
    assert outcome.position == pytest.approx(0.01, abs=0.0015)
    assert 0.3 < outcome.effort <= 5.0
    assert sim.time - started > GripperConfig.stall_timeout
    run(sim, 0.5)
    finger = sim.data.qpos[sim.robots[0].gripper_qpos[0]]
    assert finger == pytest.approx(outcome.position, abs=0.001), 'keeps squeezing'


def test_gripper_max_effort_bad_commands_and_cancel():
    sim = rover()
    run(sim, 0.2)
    reach_peg_with_open_fingers(sim)
    sim.send_gripper_goal(0, 'gentle', 0.0, 0.2)
    gentle = run_until(sim, 'gentle', 5.0)
    assert gentle.stalled and gentle.effort <= 0.2 + 1e-9
    for token, position, effort, phrase in (('nan', math.nan, 0.0, 'command.position: expected a finite'),
                                            ('negative', 0.01, -1.0, 'command.max_effort: expected a force >= 0 N')):
        sim.send_gripper_goal(0, token, position, effort)
        [refused] = sim.take_controller_outcomes()
        assert refused.status is GoalStatus.ABORTED and phrase in refused.reason
    sim.send_gripper_goal(0, 'wide', 0.5, 0.0)  # beyond the travel: moves to the end of it, says so
    wide = run_until(sim, 'wide', 2.0)
    assert wide.reached_goal and 'beyond the finger travel [0, 0.02] m' in wide.reason
    sim.send_gripper_goal(0, 'cancel me', 0.0, 0.0)
    run(sim, 0.01)
    assert sim.cancel_gripper_goal(0, 'cancel me')
    [canceled] = sim.take_controller_outcomes()
    assert canceled.status is GoalStatus.CANCELED
    held = sim.data.qpos[sim.robots[0].gripper_qpos[0]]
    run(sim, 0.5)
    assert sim.data.qpos[sim.robots[0].gripper_qpos[0]] == pytest.approx(held, abs=0.002)
