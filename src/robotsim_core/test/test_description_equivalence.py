"""One source of truth: every URDF link pose, computed by forward kinematics from the generated
URDF *text*, equals the pose of the MuJoCo body (and sensor site) of the same name in the
generated MJCF, for random joint configurations (seeded), within 1e-9 m and 1e-9 rad."""


import mujoco
import numpy as np
import pytest

from robotsim_core.description import load_robot
from robotsim_core.geometry import rotation_angle_between
from robotsim_core.description.kinematics import forward_kinematics, resolve_mimics
from robotsim_core.description.mjcf import robot_to_mjcf
from robotsim_core.description.urdf import tree_to_urdf, urdf_to_tree
from rostest_helpers import WORKSPACE

DATA = WORKSPACE / 'tests' / 'data'
CONFIG = WORKSPACE / 'config' / 'robots'
ROBOTS = {
    'rover': CONFIG / 'rover.yaml',
    'racer': CONFIG / 'racer.yaml',
    'external_urdf': DATA / 'external_robot' / 'trike_overlay.yaml',
}
TOLERANCE = 1e-9


def random_configuration(tree, rng):
    positions = {}
    for joint in tree.moving_joints():
        if joint.type == 'continuous' or joint.limit is None:
            positions[joint.name] = rng.uniform(-4 * np.pi, 4 * np.pi)  # continuous joints do not wrap
        else:
            positions[joint.name] = rng.uniform(joint.limit.lower, joint.limit.upper)
    return resolve_mimics(tree, positions)


@pytest.mark.parametrize('robot', sorted(ROBOTS))
def test_urdf_link_poses_equal_mujoco_body_poses(robot, tmp_path):
    model = load_robot(str(ROBOTS[robot]))
    urdf_text = tree_to_urdf(model.tree)
    urdf_tree = urdf_to_tree(urdf_text, f'{robot}.urdf', base_dir=str(tmp_path))  # from the text, not the object
    mj_model = mujoco.MjModel.from_xml_string(robot_to_mjcf(model))
    mj_data = mujoco.MjData(mj_model)

    # Every URDF link is a MuJoCo body; every moving URDF joint is a MuJoCo joint of the same type.
    body_names = {mj_model.body(i).name for i in range(mj_model.nbody)}
    assert set(urdf_tree.links) <= body_names
    for joint in urdf_tree.moving_joints():
        mj_joint = mj_model.joint(joint.name)
        expected = mujoco.mjtJoint.mjJNT_SLIDE if joint.type == 'prismatic' else mujoco.mjtJoint.mjJNT_HINGE
        assert mj_joint.type[0] == expected

    rng = np.random.default_rng(20261129)
    root = urdf_tree.root()
    checked = 0
    for _ in range(25):
        positions = random_configuration(urdf_tree, rng)
        # Put the floating root somewhere arbitrary too; FK below is expressed relative to it.
        root_position = rng.uniform(-2, 2, 3)
        root_quat = rng.normal(size=4)
        root_quat /= np.linalg.norm(root_quat)
        free = mj_model.joint(f'{root}_freejoint')
        mj_data.qpos[free.qposadr[0]:free.qposadr[0] + 7] = np.concatenate([root_position, root_quat])
        for name, value in positions.items():
            mj_data.qpos[mj_model.joint(name).qposadr[0]] = value
        mujoco.mj_kinematics(mj_model, mj_data)

        world_root = np.eye(4)
        world_root[:3, :3] = mj_data.xmat[mj_model.body(root).id].reshape(3, 3)
        world_root[:3, 3] = mj_data.xpos[mj_model.body(root).id]
        for link, pose in forward_kinematics(urdf_tree, positions).items():
            expected = world_root @ pose
            body = mj_model.body(link).id
            position_error = np.linalg.norm(mj_data.xpos[body] - expected[:3, 3])
            angle_error = rotation_angle_between(mj_data.xmat[body].reshape(3, 3), expected[:3, :3])
            assert position_error < TOLERANCE, (link, position_error)
            assert angle_error < TOLERANCE, (link, angle_error)
            checked += 1
        for sensor in model.sensors:
            site = mj_model.site(sensor.frame).id
            expected = world_root @ forward_kinematics(urdf_tree, positions)[sensor.frame]
            assert np.linalg.norm(mj_data.site_xpos[site] - expected[:3, 3]) < TOLERANCE
            assert rotation_angle_between(mj_data.site_xmat[site].reshape(3, 3), expected[:3, :3]) < TOLERANCE
    assert checked == 25 * len(urdf_tree.links)


@pytest.mark.parametrize('robot', sorted(ROBOTS))
def test_mass_and_inertia_agree(robot):
    model = load_robot(str(ROBOTS[robot]))
    mj_model = mujoco.MjModel.from_xml_string(robot_to_mjcf(model))
    urdf_mass = sum(link.inertial.mass for link in model.tree.links.values() if link.inertial)
    assert mj_model.body_subtreemass[mj_model.body(model.tree.root()).id] == pytest.approx(urdf_mass, abs=1e-12)
    # Imported robots lump links on fixed joints into their moving ancestor (description/inertia.py).
    inertials = model.body_inertials if model.body_inertials is not None else {
        name: link.inertial for name, link in model.tree.links.items()}
    for name, inertial in inertials.items():
        if inertial is None:
            continue
        body = mj_model.body(name).id
        assert mj_model.body_mass[body] == pytest.approx(inertial.mass, abs=1e-12)
        ixx, ixy, ixz, iyy, iyz, izz = inertial.inertia
        # The trace of the inertia tensor is invariant under rotation.
        assert mj_model.body_inertia[body].sum() == pytest.approx(ixx + iyy + izz, rel=1e-9)


def test_camera_looks_down_the_optical_axis():
    """The MuJoCo camera's viewing direction (-z) is the optical frame's +z (REP 103 optical)."""
    model = load_robot(str(ROBOTS['rover']))
    mj_model = mujoco.MjModel.from_xml_string(robot_to_mjcf(model))
    mj_data = mujoco.MjData(mj_model)
    mujoco.mj_kinematics(mj_model, mj_data)
    mujoco.mj_camlight(mj_model, mj_data)
    camera = mj_model.camera('camera').id
    optical = mj_model.body('camera_color_optical_frame').id
    view_direction = -mj_data.cam_xmat[camera].reshape(3, 3)[:, 2]
    optical_z = mj_data.xmat[optical].reshape(3, 3)[:, 2]
    np.testing.assert_allclose(view_direction, optical_z, atol=1e-12)
    # Mounted looking forward: the optical axis is the robot's +x, image "down" (+y) is world -z.
    np.testing.assert_allclose(optical_z, [1, 0, 0], atol=1e-12)
    np.testing.assert_allclose(mj_data.xmat[optical].reshape(3, 3)[:, 1], [0, 0, -1], atol=1e-12)
    assert mj_model.cam_fovy[camera] == pytest.approx(np.degrees(0.9))
