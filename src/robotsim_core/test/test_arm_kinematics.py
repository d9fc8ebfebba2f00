"""Arm kinematics and inverse kinematics (robotsim_core.arm, issue 13): the chain's forward kinematics and
geometric Jacobian against finite differences, the robot tree's own forward kinematics and Pinocchio on
the URDF our description generates; IK on seeded random reachable targets (re-checked by the tree's
forward kinematics), unreachable and malformed targets answered with a reason, same seed -> same
solution; the benchmark script's rows, summary and --check."""

from __future__ import annotations

import csv
import json
import math

import numpy as np
import pytest

from robotsim_core.arm.chain import ArmChain
from robotsim_core.arm.ik import (ORIENTATION_TOLERANCE, POSITION_TOLERANCE, IkOptions, PoseTarget,
                                  PositionPitchTarget, PositionTarget, solve_arm_ik, solve_ik)
from robotsim_core.description import load_robot
from robotsim_core.geometry import rotation_angle_between
from robotsim_core.description.kinematics import forward_kinematics
from robotsim_core.description.urdf import tree_to_urdf
from rostest_helpers import WORKSPACE
from test_robot_import import needs_example_robots

ARMS = ['rover', pytest.param('ur5', marks=needs_example_robots), pytest.param('panda', marks=needs_example_robots)]
_CHAINS: dict[str, tuple] = {}


def chain_of(robot: str) -> tuple:
    """(model, chain) of the robot's first arm, built once per test session."""
    if robot not in _CHAINS:
        model = load_robot(robot)
        _CHAINS[robot] = model, ArmChain(model)
    return _CHAINS[robot]


def tree_tool_pose(model, chain: ArmChain, positions) -> np.ndarray:
    """The tool pose by the robot tree's forward kinematics (robotsim_core.description.kinematics)."""
    poses = forward_kinematics(model.tree, chain.tree_positions(positions))
    return np.linalg.inv(poses[chain.root]) @ poses[chain.tool.link] @ chain.tool.offset


def reachable_target(chain: ArmChain, rng: np.random.Generator):
    pose = chain.forward(chain.random_positions(rng))
    if chain.dof >= 6:
        return PoseTarget(pose)
    return PositionPitchTarget(tuple(pose[:3, 3]), chain.tool_pitch(pose))


# ------------------------------------------------------------------ chain: frames and kinematics
def test_tool_frames_are_where_a_user_expects_them():
    """Rover: the gripper centre, midway between the closed fingers and halfway along them, z along the
    fingers; UR5: tool0 (the ROS-Industrial flange frame); Panda: its TCP link."""
    model, rover = chain_of('rover')
    assert rover.tool.link == 'arm_wrist_link'
    poses = forward_kinematics(model.tree, {})
    fingers = []
    for side in ('left', 'right'):
        link = f'arm_{side}_finger_link'
        shape = model.tree.links[link].collisions[0]
        fingers.append((np.linalg.inv(poses[rover.root]) @ poses[link] @ shape.origin.matrix())[:3, 3])
        assert shape.geometry.kind == 'box'
    tool = np.linalg.inv(poses[rover.root]) @ poses['arm_wrist_link'] @ rover.tool.offset
    np.testing.assert_allclose(tool[:3, 3], np.mean(fingers, axis=0), atol=1e-12)
    np.testing.assert_allclose(rover.forward(np.zeros(4))[:3, 3], tool[:3, 3], atol=1e-12)
    # At zero the rover's arm stands straight up: the tool axis points up, pitch +90 deg.
    np.testing.assert_allclose(rover.forward(np.zeros(4))[:3, 2], [0, 0, 1], atol=1e-12)
    assert rover.tool_pitch(rover.forward(np.zeros(4))) == pytest.approx(math.pi / 2)
    assert rover.root == 'base_link' and rover.dof == 4
    assert 0.25 < rover.reach < 0.27  # shoulder to gripper centre: 0.10 + 0.10 + 0.04 + 0.02 m


@needs_example_robots
def test_imported_arms_end_at_their_tool_links():
    _, ur5 = chain_of('ur5')
    _, panda = chain_of('panda')
    assert (ur5.root, ur5.tool.link, ur5.dof) == ('base_link', 'tool0', 6)
    assert (panda.root, panda.tool.link, panda.dof) == ('panda_link0', 'panda_hand_tcp', 7)


def test_tool_pitch_follows_the_documented_convention():
    """Pitch is the tool axis's angle above horizontal, in the arm's vertical plane, facing away from the
    base yaw axis: leaning the shoulder forward by a lowers it by a, whatever the yaw."""
    _, rover = chain_of('rover')
    for yaw in (0.0, 1.2, -2.5):
        assert rover.tool_pitch(rover.forward([yaw, 1.0, 0.0, 0.0])) == pytest.approx(math.pi / 2 - 1.0, abs=1e-12)
        # Leaning forward 1.0 then folding 1.5 + 1.0 more: 0.36 rad past straight down, back towards the base.
        assert rover.tool_pitch(rover.forward([yaw, 1.0, 1.5, 1.0])) == pytest.approx(math.pi / 2 - 3.5, abs=1e-12)
        # Leaning back, the tool still leans away from the base: pitch measured from the outward side.
        assert rover.tool_pitch(rover.forward([yaw, -0.5, 0.0, 0.0])) == pytest.approx(math.pi / 2 - 0.5, abs=1e-12)


@pytest.mark.parametrize('robot', ARMS)
def test_forward_kinematics_equals_the_tree_forward_kinematics(robot):
    model, chain = chain_of(robot)
    rng = np.random.default_rng(1)
    for _ in range(30):
        q = chain.random_positions(rng)
        np.testing.assert_allclose(chain.forward(q), tree_tool_pose(model, chain, q), atol=1e-12)


def _finite_difference_jacobian(chain: ArmChain, q: np.ndarray, step: float = 1e-6) -> np.ndarray:
    columns = []
    for index in range(chain.dof):
        delta = np.zeros(chain.dof)
        delta[index] = step
        plus, minus = chain.forward(q + delta), chain.forward(q - delta)
        linear = (plus[:3, 3] - minus[:3, 3]) / (2 * step)
        turn = plus[:3, :3] @ minus[:3, :3].T   # a rotation of ~2e-6 rad: its skew part is axis * angle
        angular = np.array([turn[2, 1] - turn[1, 2], turn[0, 2] - turn[2, 0], turn[1, 0] - turn[0, 1]]) / 2
        columns.append(np.concatenate((linear, angular / (2 * step))))
    return np.array(columns).T


@pytest.mark.parametrize('robot', ARMS)
def test_jacobian_matches_finite_differences(robot):
    _, chain = chain_of(robot)
    rng = np.random.default_rng(2)
    for _ in range(30):
        q = chain.random_positions(rng)
        pose, jacobian = chain.forward_with_jacobian(q)
        np.testing.assert_allclose(pose, chain.forward(q), atol=1e-15)
        assert jacobian.shape == (6, chain.dof)
        np.testing.assert_allclose(jacobian, _finite_difference_jacobian(chain, q), atol=2e-8)


@pytest.mark.parametrize('robot', ARMS)
def test_forward_kinematics_and_jacobian_equal_pinocchio(robot):
    """Pinocchio on the URDF our description generates: tool pose and tool-point Jacobian in the chain's
    root frame, 50 seeded random configurations, within 1e-9."""
    pin = pytest.importorskip('pinocchio', reason='test-only dependency: ROBOTSIM_TEST_DEPS=1 scripts/setup.sh')
    model, chain = chain_of(robot)
    oracle = pin.buildModelFromXML(tree_to_urdf(model.tree))
    data = oracle.createData()
    root, tool_link = oracle.getFrameId(chain.root), oracle.getFrameId(chain.tool.link)
    assert root < len(oracle.frames) and tool_link < len(oracle.frames)
    rng = np.random.default_rng(3)
    for _ in range(50):
        q_arm = chain.random_positions(rng)
        q = pin.neutral(oracle)
        columns = []
        for name, value in zip(chain.joint_names, q_arm):
            joint = oracle.joints[oracle.getJointId(name)]
            if joint.nq == 2:  # continuous: (cos, sin)
                q[joint.idx_q:joint.idx_q + 2] = (math.cos(value), math.sin(value))
            else:
                q[joint.idx_q] = value
            columns.append(joint.idx_v)
        pin.computeJointJacobians(oracle, data, q)
        pin.updateFramePlacements(oracle, data)
        world_root = data.oMf[root].homogeneous
        world_tool = data.oMf[tool_link].homogeneous @ chain.tool.offset
        pose = np.linalg.inv(world_root) @ world_tool
        np.testing.assert_allclose(chain.forward(q_arm), pose, atol=1e-9)
        link_jacobian = pin.getFrameJacobian(oracle, data, tool_link, pin.ReferenceFrame.LOCAL_WORLD_ALIGNED)
        lever = world_tool[:3, 3] - data.oMf[tool_link].translation
        skew = np.array([[0, -lever[2], lever[1]], [lever[2], 0, -lever[0]], [-lever[1], lever[0], 0]])
        linear = link_jacobian[:3] - skew @ link_jacobian[3:]   # velocity of the tool point, not the link origin
        to_root = world_root[:3, :3].T
        expected = np.vstack((to_root @ linear, to_root @ link_jacobian[3:]))[:, columns]
        np.testing.assert_allclose(chain.jacobian(q_arm), expected, atol=1e-9)


# ------------------------------------------------------------------ inverse kinematics
@pytest.mark.parametrize('robot', ARMS)
def test_ik_solves_seeded_random_reachable_targets(robot):
    """50 targets per arm, all solved, each solution within the limits and - by the tree's forward
    kinematics, not the solver's chain - within 0.1 mm / 0.1 deg of its target."""
    model, chain = chain_of(robot)
    rng = np.random.default_rng(4)
    for index in range(50):
        target = reachable_target(chain, rng)
        result = solve_ik(chain, target, seed=index)
        assert result.success, (index, result.reason)
        assert result.reason == '' and result.joint_names == chain.joint_names
        q = np.array(result.positions)
        assert np.all(q >= chain.lower) and np.all(q <= chain.upper)
        pose = tree_tool_pose(model, chain, q)
        if isinstance(target, PoseTarget):
            assert np.linalg.norm(pose[:3, 3] - target.pose[:3, 3]) <= POSITION_TOLERANCE
            assert rotation_angle_between(pose[:3, :3], target.pose[:3, :3]) <= ORIENTATION_TOLERANCE
        else:
            assert np.linalg.norm(pose[:3, 3] - target.position) <= POSITION_TOLERANCE
            assert abs(math.remainder(chain.tool_pitch(pose) - target.pitch, math.tau)) <= ORIENTATION_TOLERANCE
        assert result.position_error <= POSITION_TOLERANCE and result.orientation_error <= ORIENTATION_TOLERANCE


def test_ik_position_task_and_initial_guess():
    """A position-only target from the current configuration converges without a restart; a solution
    found from a given start stays on that start's side (the rover's base yaw near the start)."""
    model, rover = chain_of('rover')
    start = np.array([0.3, 0.4, 0.6, 0.2])
    goal = rover.forward(start + [0.05, 0.05, -0.05, 0.05])
    result = solve_ik(rover, PositionTarget(tuple(goal[:3, 3])), initial=start)
    assert result.success and result.restarts == 0, result
    assert abs(result.positions[0] - 0.35) < 1e-3  # the yaw that puts the arm's plane through the goal
    assert np.linalg.norm(tree_tool_pose(model, rover, result.positions)[:3, 3] - goal[:3, 3]) <= POSITION_TOLERANCE


def test_ik_is_deterministic_for_a_seed():
    """Targets that need random restarts: the same seed gives the same solution (same restarts, same
    iterations); other seeds take other restart paths."""
    _, rover = chain_of('rover')
    rng = np.random.default_rng(5)
    checked = 0
    for index in range(200):
        target = reachable_target(rover, rng)
        first = solve_ik(rover, target, seed=index)
        if not first.success or first.restarts == 0:
            continue
        assert solve_ik(rover, target, seed=index) == first
        others = [solve_ik(rover, target, seed=index + offset) for offset in range(1, 6)]
        assert any((other.positions, other.iterations) != (first.positions, first.iterations) for other in others)
        checked += 1
        if checked == 3:
            break
    assert checked == 3, 'expected some targets needing restarts among 200'


def test_ik_unreachable_targets_give_a_reason():
    _, rover = chain_of('rover')
    shoulder = rover.reach_centre
    # Beyond the arm's length.
    far = PositionPitchTarget(tuple(shoulder + [0.62, 0.0, 0.0]), 0.0)
    result = solve_ik(rover, far)
    assert not result.success and result.positions == ()
    assert result.reason == 'unreachable: target 0.620 m from the shoulder (arm_shoulder_joint), reach 0.260 m'
    # Within the arm's length, but the wrist would have to be farther than the upper arm and forearm reach.
    tilted = PositionPitchTarget(tuple(shoulder + [0.0, 0.0, -0.22]), math.pi / 2)
    result = solve_ik(rover, tilted)
    assert not result.success
    assert result.reason.startswith('unreachable at pitch 90.0 deg: the last joint would be 0.280 m from the shoulder')
    # Geometrically within reach, but only with the shoulder past its +-1.57 rad limit: no solution after
    # every restart, and the best attempt's errors are reported.
    below = PositionPitchTarget(tuple(shoulder + [0.01, 0.0, -0.25]), -math.pi / 2)
    result = solve_ik(rover, below, seed=0, options=IkOptions(max_restarts=10))
    assert not result.success and result.restarts == 10
    assert result.reason.startswith('no solution within 0.1 mm / 0.1 deg after 10 restarts: best position error')
    assert result.position_error > POSITION_TOLERANCE and result.iterations > 10


@pytest.mark.parametrize('make_target, expected', [
    (lambda: PositionPitchTarget((math.nan, 0.0, 0.3), 0.0), 'target.position: expected 3 finite numbers (m)'),
    (lambda: PositionPitchTarget((0.1, 0.0), 0.0), 'target.position: expected 3 finite numbers (m)'),
    (lambda: PositionPitchTarget((0.1, 0.0, 0.2), math.inf), 'target.pitch: expected a finite angle (rad)'),
    (lambda: PositionTarget(('a', 0.0, 0.2)), 'target.position: expected 3 numbers (m)'),
    (lambda: PoseTarget(np.eye(4)), 'target: a pose task needs 6 joints, arm \'arm\' of rover has 4'),
    (lambda: (0.1, 0.0, 0.2),
     'target: expected a PoseTarget, PositionPitchTarget, PositionAxisTarget or PositionTarget, got tuple'),
])
def test_ik_bad_targets_give_a_reason(make_target, expected):
    _, rover = chain_of('rover')
    result = solve_ik(rover, make_target())
    assert not result.success and result.positions == () and result.reason.startswith(expected), result.reason


@needs_example_robots
def test_ik_bad_pose_and_arguments_give_a_reason():
    _, ur5 = chain_of('ur5')
    skewed = np.eye(4)
    skewed[0, 1] = 0.5
    assert solve_ik(ur5, PoseTarget(skewed)).reason.startswith('target.pose: expected a rigid transform')
    nan_pose = np.eye(4)
    nan_pose[0, 3] = math.nan
    assert 'non-finite' in solve_ik(ur5, PoseTarget(nan_pose)).reason
    assert solve_ik(ur5, PoseTarget(np.eye(3))).reason.startswith('target.pose: expected a finite 4x4 rigid transform')
    reachable = PoseTarget(ur5.forward(np.full(6, 0.3)))
    assert solve_ik(ur5, reachable, initial=[0.0] * 5).reason.startswith('initial: expected 6 finite joint positions')
    assert solve_ik(ur5, reachable, seed=1.5).reason == 'seed: expected an integer, got 1.5'


def test_unknown_arm_root_or_tool_give_a_reason():
    rover = load_robot('rover')
    target = PositionPitchTarget((0.15, 0.0, 0.25), 0.0)
    assert solve_arm_ik(rover, target).success, solve_arm_ik(rover, target).reason
    cases = [(dict(arm='leg'), "rover: arm: expected one of ['arm'], got 'leg'"),
             (dict(root='mast'), "rover: arm 'arm': root: expected a link of the robot, got 'mast'"),
             (dict(root='arm_elbow_link'), "rover: arm 'arm': joints ['arm_base_joint', 'arm_shoulder_joint', "
                                           "'arm_elbow_joint'] are not between root 'arm_elbow_link'"),
             (dict(root='laser'), "rover: arm 'arm': root: link 'laser' is not above the tool link 'arm_wrist_link'"),
             (dict(tool='gripper'), "rover: tool: expected a link of the robot, got 'gripper'")]
    for arguments, expected in cases:
        result = solve_arm_ik(rover, target, **arguments)
        assert not result.success and result.reason.startswith(expected), (arguments, result.reason)


# ------------------------------------------------------------------ benchmark script
@needs_example_robots
def test_benchmark_writes_rows_and_summary_and_check_catches_a_difference(tmp_path):
    from workspace_setup import run_python
    script = WORKSPACE / 'bench' / 'bench_arm.py'
    first, second = tmp_path / 'first', tmp_path / 'second'
    run_python(script, '--ik-targets', '4', '--seed', '7', '--sections', 'ik', '--out', str(first), timeout=120)
    with open(first / 'ik.csv', newline='') as stream:
        rows = list(csv.DictReader(stream))
    arms = ('rover', 'ur5', 'panda', 'xarm7', 'ur10')
    assert [(row['arm'], row['target']) for row in rows] == [(arm, str(i)) for arm in arms for i in range(4)]
    assert {'success', 'position_error_m', 'orientation_error_rad', 'iterations', 'restarts', 'time_s'} <= set(rows[0])
    summary = json.loads((first / 'summary.json').read_text())
    assert {key: summary['settings'][key] for key in ('ik_targets', 'seed', 'arms', 'sections')} == \
        {'ik_targets': 4, 'seed': 7, 'arms': list(arms), 'sections': ['ik']}
    for arm in arms:
        entry = summary['ik'][arm]
        assert entry['targets'] == 4 and entry['successes'] == sum(int(r['success']) for r in rows if r['arm'] == arm)
        low, high = entry['wilson95']
        assert 0 <= low <= entry['success_rate'] <= high <= 1
    assert '| rover' in (first / 'summary.md').read_text()
    # --check repeats the run with the stored settings: every row equal, exit 0.
    run_python(script, '--out', str(second), '--check', str(first), timeout=120)
    # A row that differs (another solution) makes --check fail.
    assert rows[5]['arm'] == 'ur5' and rows[5]['success'] == '1', rows[5]
    rows[5]['solution'] = ' '.join(str(float(v) + 0.01) for v in rows[5]['solution'].split())
    with open(first / 'ik.csv', 'w', newline='') as stream:
        writer = csv.DictWriter(stream, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    failed = run_python(script, '--out', str(second), '--check', str(first), timeout=120, check=False)
    assert failed.returncode == 1, failed
    assert "ik {'arm': 'ur5', 'target': '1'}: solution was" in failed.stderr


def test_benchmark_refuses_bad_arguments(tmp_path):
    from workspace_setup import run_python
    script = WORKSPACE / 'bench' / 'bench_arm.py'
    completed = run_python(script, '--out', str(tmp_path), '--sections', 'ik,dance', check=False)
    assert completed.returncode == 2 and 'Traceback' not in completed.stderr
    message = completed.stderr.strip()
    assert message.startswith("bench_arm: --sections: expected names from ['ik'") and message.endswith("got ['dance']")
    completed = run_python(script, '--out', str(tmp_path), '--check', str(tmp_path / 'none'), check=False)
    assert completed.returncode == 2 and completed.stderr.startswith('bench_arm: --check: expected a previous run')
