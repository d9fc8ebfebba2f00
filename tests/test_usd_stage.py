"""`robotsim view BAG --usd run.usdc`: a recording as a time-sampled USD stage, read back by the real USD
library (pxr, usd-core): the robot's links at three times where the bag's ground truth and joint states put
them (within 1e-6 m), the world's shapes, the camera, Z up in metres, and a file that stays whole when moved."""

from __future__ import annotations

import shutil
import subprocess
import sys

import numpy as np
import pytest

from robotsim_core.description import load_robot
from robotsim_core.description.kinematics import forward_kinematics
from rostest_helpers import WORKSPACE

pxr = pytest.importorskip('pxr', reason='usd-core is in requirements/bare.txt')
from pxr import Sdf, Usd, UsdGeom  # noqa: E402


def robotsim(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, '-m', 'robotsim.cli', *args], capture_output=True, text=True, timeout=600)


@pytest.fixture(scope='module')
def episode(tmp_path_factory):
    """One dataset episode (fast path, the wanderer in a randomised room, no cameras: quick)."""
    dataset = tmp_path_factory.mktemp('usd') / 'corpus'
    completed = robotsim('dataset', 'generate', '--randomization',
                         str(WORKSPACE / 'config' / 'randomization' / 'room_obstacles.yaml'), '--episodes', '1',
                         '--workers', '1', '--seed', '16', '--out', str(dataset), '--no-cameras', '--no-progress')
    assert completed.returncode == 0, completed.stderr
    return dataset / 'episode_000000'


def bag_samples(episode):
    """Ground truth (stamp s, 4x4, frame) and joint states (stamp s, {name: position}) read with rosbags."""
    from rosbags.highlevel import AnyReader
    truth, joints = [], []
    with AnyReader([episode]) as reader:
        start = reader.start_time * 1e-9
        wanted = [c for c in reader.connections if c.topic in ('/sim/ground_truth', '/joint_states')]
        for connection, _, raw in reader.messages(connections=wanted):
            message = reader.deserialize(raw, connection.msgtype)
            stamp = message.header.stamp.sec + message.header.stamp.nanosec * 1e-9 - start
            if connection.topic == '/sim/ground_truth':
                p, q = message.pose.pose.position, message.pose.pose.orientation
                rotation = np.empty(9)
                import mujoco
                mujoco.mju_quat2Mat(rotation, np.array([q.w, q.x, q.y, q.z]))
                pose = np.eye(4)
                pose[:3, :3], pose[:3, 3] = rotation.reshape(3, 3), (p.x, p.y, p.z)
                truth.append((stamp, pose, message.child_frame_id))
            else:
                joints.append((stamp, dict(zip(message.name, message.position))))
    return truth, joints


def usd_pose(stage, link: str, time_code: float) -> np.ndarray:
    matrix = UsdGeom.Xformable(stage.GetPrimAtPath(f'/World/robot/{link}')).ComputeLocalToWorldTransform(time_code)
    return np.array(matrix).T  # USD row vectors -> column-vector 4x4


def test_usd_stage_of_an_episode_holds_the_bags_poses_and_stays_whole_when_moved(episode, tmp_path):
    out = tmp_path / 'run' / 'run.usdc'
    completed = robotsim('view', str(episode), '--usd', str(out))
    assert completed.returncode == 0, completed.stderr
    assert completed.stdout.startswith(f'wrote {out} (') and 'robot rover (' in completed.stdout, completed.stdout
    moved = tmp_path / 'elsewhere' / 'run.usdc'
    moved.parent.mkdir()
    shutil.move(str(out), moved)
    stage = Usd.Stage.Open(str(moved))
    assert UsdGeom.GetStageUpAxis(stage) == UsdGeom.Tokens.z and UsdGeom.GetStageMetersPerUnit(stage) == 1.0
    assert stage.GetTimeCodesPerSecond() == 1000.0
    assert not Sdf.Layer.FindOrOpen(str(moved)).GetCompositionAssetDependencies()  # nothing outside the file

    model = load_robot(str(episode / 'robot.yaml'))
    truth, joints = bag_samples(episode)
    assert len(truth) > 100
    names = sorted({name for _, positions in joints for name in positions})
    stamps = np.array([t for t, _ in joints])
    arm_tip = model.tree.joints[model.arms[0].joints[-1]].child  # the arm's last link
    wheel = model.drive.wheels[0].link
    worst = 0.0
    for stamp, pose, frame in (truth[3], truth[len(truth) // 2], truth[-1]):
        code = round(stamp * 1000.0, 6)
        # The base where the ground truth says, at that time code exactly.
        base = usd_pose(stage, frame, code)
        worst = max(worst, float(np.abs(base[:3, 3] - pose[:3, 3]).max()))
        assert np.allclose(base[:3, :3], pose[:3, :3], atol=1e-9)
        # Every other link: the base pose times forward kinematics of the joint states interpolated at that stamp.
        positions = {name: float(np.interp(stamp, stamps, [p.get(name, np.nan) for _, p in joints]))
                     for name in names}
        fk = forward_kinematics(model.tree, {**model.initial_positions, **positions})
        for link in (wheel, arm_tip):
            expected = pose @ np.linalg.inv(fk[frame]) @ fk[link]
            drawn = usd_pose(stage, link, code)
            worst = max(worst, float(np.abs(drawn[:3, 3] - expected[:3, 3]).max()))
            assert np.allclose(drawn[:3, :3], expected[:3, :3], atol=1e-9), link
    assert worst < 1e-6, worst
    # The world's shapes and the robot's visuals are meshes in the file; the camera looks out of its optical frame.
    meshes = [prim for prim in stage.Traverse() if prim.IsA(UsdGeom.Mesh)]
    assert any(str(p.GetPath()).startswith('/World/world/wall_') for p in meshes)
    assert any(str(p.GetPath()).startswith('/World/robot/') for p in meshes)
    assert all(len(UsdGeom.Mesh(p).GetPointsAttr().Get()) > 0 for p in meshes)
    cameras = [prim for prim in stage.Traverse() if prim.IsA(UsdGeom.Camera)]
    assert len(cameras) == 1 and str(cameras[0].GetPath()).endswith('optical_frame/camera')


def test_bad_usd_arguments_are_one_line(episode, tmp_path):
    completed = robotsim('view', str(episode), '--usd', str(tmp_path / 'run.obj'))
    assert completed.returncode == 2 and completed.stderr.strip().splitlines() == [
        f'robotsim: error: view: --usd {tmp_path / "run.obj"}: expected a file ending in .usdc, .usda or .usd'], \
        completed.stderr
    completed = robotsim('view', str(tmp_path / 'no_bag'), '--usd', str(tmp_path / 'run.usdc'))
    assert completed.returncode == 2 and len(completed.stderr.strip().splitlines()) == 1, completed.stderr
    assert 'no such bag' in completed.stderr
