"""The generated robots follow REP 103/105 and the issue's wheel rules; the URDF importer handles
a URDF robotsim did not write; the installed `robotsim describe` writes both files."""

import math
import os
import shutil
import subprocess

import mujoco
import numpy as np
import pytest
import yaml

from robotsim_core.description import load_robot
from robotsim_core.description.kinematics import forward_kinematics
from robotsim_core.description.mjcf import robot_to_mjcf
from robotsim_core.description.urdf import tree_to_urdf, urdf_to_tree
from rostest_helpers import WORKSPACE

CONFIG = WORKSPACE / 'config' / 'robots'
EXTERNAL = WORKSPACE / 'tests' / 'data' / 'external_robot'


def write_robot(tmp_path, data) -> str:
    path = tmp_path / f'{data["name"]}.yaml'
    path.write_text(yaml.safe_dump(data))
    return str(path)


def test_rover_frames_follow_rep_103_and_105():
    model = load_robot(str(CONFIG / 'rover.yaml'))
    tree = model.tree
    assert tree.root() == 'base_footprint'
    assert tree.joints['base_joint'].child == 'base_link'
    assert {'laser', 'imu_link', 'camera_link', 'camera_color_optical_frame'} <= set(tree.links)
    wheel_joints = [w.joint for w in model.drive.wheels]
    assert len(wheel_joints) == 4 and all(tree.joints[j].type == 'continuous' for j in wheel_joints)
    assert all(tree.joints[j].axis == (0.0, 1.0, 0.0) for j in wheel_joints)
    poses = forward_kinematics(tree, {})
    # Wheels touch the ground: the footprint is on the ground plane under base_link.
    for wheel in model.drive.wheels:
        assert poses[wheel.link][2, 3] == pytest.approx(wheel.radius)
    # Left wheels have y > 0 (REP 103: y left).
    assert all((poses[w.link][1, 3] > 0) == (w.side == 'left') for w in model.drive.wheels)
    optical = poses['camera_color_optical_frame'][:3, :3]
    np.testing.assert_allclose(optical[:, 2], [1, 0, 0], atol=1e-12)   # z forward
    np.testing.assert_allclose(optical[:, 0], [0, -1, 0], atol=1e-12)  # x right
    np.testing.assert_allclose(optical[:, 1], [0, 0, -1], atol=1e-12)  # y down
    assert model.drive.track == pytest.approx(0.23)
    assert model.drive.wheelbase == pytest.approx(0.30 - 2 * 0.045)
    arm = model.arms[0]
    assert len(arm.joints) == 4 and len(arm.gripper_joints) == 2
    assert tree.joints[arm.gripper_joints[1]].mimic.joint == arm.gripper_joints[0]


def test_racer_is_ackermann_with_inner_wheel_room():
    model = load_robot(str(CONFIG / 'racer.yaml'))
    steered = [w for w in model.drive.wheels if w.steer_joint]
    assert {w.side for w in steered} == {'left', 'right'}
    assert not any(w.driven for w in steered) and all(w.driven for w in model.drive.wheels if not w.steer_joint)
    assert model.drive.wheelbase == pytest.approx(0.30)
    limit = model.tree.joints[steered[0].steer_joint].limit
    # The inner wheel of the tightest turn needs more than the centre angle.
    radius = 0.30 / math.tan(0.45)
    assert limit.upper == pytest.approx(math.atan2(0.30, radius - model.drive.track / 2))
    assert limit.upper > 0.45


@pytest.mark.parametrize('count, expect_caster', [(3, True), (4, False), (5, True), (6, False)])
def test_wheel_counts(tmp_path, count, expect_caster):
    data = yaml.safe_load((CONFIG / 'rover.yaml').read_text())
    data.update(name=f'rover{count}', arms=[], sensors=[])
    data['wheels']['count'] = count
    model = load_robot(write_robot(tmp_path, data))
    sided = [w for w in model.drive.wheels if w.side != 'centre']
    casters = [w for w in model.drive.wheels if w.side == 'centre']
    assert len(sided) == 2 * (count // 2)
    assert len(casters) == (1 if expect_caster else 0)
    if casters:
        caster = casters[0]
        assert not caster.driven
        assert model.tree.joints[caster.joint].type == 'fixed'
        front_x = max(w.position[0] for w in model.drive.wheels)
        assert caster.position[0] == pytest.approx(front_x)  # on the front axle
        assert forward_kinematics(model.tree, {})[caster.link][2, 3] == pytest.approx(caster.radius)
    mujoco.MjModel.from_xml_string(robot_to_mjcf(model))


def test_explicit_wheel_list_sides_from_lateral_offset(tmp_path):
    data = yaml.safe_load((CONFIG / 'rover.yaml').read_text())
    data.update(name='listed', arms=[], sensors=[])
    data['wheels'] = [
        {'position': [0.1, 0.12], 'radius': 0.05, 'width': 0.03},
        {'position': [0.1, -0.12], 'radius': 0.05, 'width': 0.03},
        {'position': [-0.1, 0.0], 'radius': 0.02, 'width': 0.02, 'driven': False},
    ]
    model = load_robot(write_robot(tmp_path, data))
    assert [w.side for w in model.drive.wheels] == ['left', 'right', 'centre']
    assert model.drive.track == pytest.approx(0.24)


def test_external_urdf_import(tmp_path):
    model = load_robot(str(EXTERNAL / 'trike_overlay.yaml'))
    assert model.name == 'trike' and model.footprint_link == 'base_link'
    assert [w.side for w in model.drive.wheels] == ['left', 'right']
    assert model.drive.wheels[0].radius == pytest.approx(0.08)
    assert model.drive.track == pytest.approx(0.44)
    meshes = [s.geometry.filename for link in model.tree.links.values() for s in link.visuals
              if s.geometry.kind == 'mesh']
    assert sorted(os.path.basename(m) for m in meshes) == ['chassis.stl', 'mast.stl']
    assert all(os.path.isabs(m) and os.path.isfile(m) for m in meshes)
    mj_model = mujoco.MjModel.from_xml_string(robot_to_mjcf(model))
    assert mj_model.nmesh == 2
    assert {'laser', 'arm_camera_optical_frame', 'imu_link'} <= set(model.tree.links)


def test_package_uri_resolved_from_parent_folder(tmp_path):
    """Without package_paths, package://external_robot resolves to the folder holding package.xml."""
    robot = tmp_path / 'external_robot'
    shutil.copytree(EXTERNAL, robot)
    overlay = robot / 'trike_overlay.yaml'
    overlay.write_text(overlay.read_text().replace('package_paths: {external_robot: .}\n', ''))
    model = load_robot(str(overlay))
    chassis = model.tree.links['base_link'].visuals[0].geometry.filename
    assert chassis == str(robot / 'meshes' / 'chassis.stl')


def test_urdf_round_trip_is_exact():
    model = load_robot(str(CONFIG / 'rover.yaml'))
    text = tree_to_urdf(model.tree)
    again = urdf_to_tree(text, 'rover.urdf')
    assert tree_to_urdf(again) == text


def test_installed_cli_writes_both_files(tmp_path):
    urdf, mjcf = tmp_path / 'out' / 'rover.urdf', tmp_path / 'out' / 'rover.xml'
    completed = subprocess.run(['robotsim', 'describe', 'rover', '--urdf', str(urdf), '--mjcf', str(mjcf)],
                               capture_output=True, text=True, timeout=60)
    assert completed.returncode == 0, completed.stderr
    assert 'links 16' in completed.stdout and 'mass 3.500 kg (MuJoCo: 3.500 kg)' in completed.stdout
    assert 'sensor camera: camera in camera_color_optical_frame' in completed.stdout
    assert urdf_to_tree(urdf.read_text(), str(urdf)).root() == 'base_footprint'
    assert mujoco.MjModel.from_xml_path(str(mjcf)).ncam == 1
