"""The robot and the world as glTF 2.0: `robotsim describe ROBOT --gltf out.glb [--world W]`.

Round trip: the .glb is read back with pygltflib (an independent glTF reader, test-only) and every link
node's transform, composed from the root down with the +Y-up root undone, equals forward kinematics of
the description within 1e-6 m at seeded random joint positions."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest
from pygltflib import GLTF2

from robotsim_core.description import load_robot
from robotsim_core.geometry import homogeneous, rpy_to_matrix
from robotsim_core.description.kinematics import forward_kinematics
from robotsim_core.viewer.gltf import (ROOT_NODE, WORLD_NODE, Z_UP_TO_Y_UP, build_scene, robot_placement, scene_glb,
                                      srgb_to_linear)
from robotsim_sim.scene import load_world, resolve_world_path
from test_robot_import import EXAMPLE_ROBOTS


def _node_matrix(node) -> np.ndarray:
    if node.matrix:
        return np.array(node.matrix, dtype=float).reshape(4, 4).T  # glTF matrices are column-major
    transform = np.eye(4)
    if node.rotation:
        x, y, z, w = node.rotation
        import transforms3d.quaternions as t3q
        transform[:3, :3] = t3q.quat2mat((w, x, y, z))
    if node.translation:
        transform[:3, 3] = node.translation
    if node.scale:
        transform[:3, :3] = transform[:3, :3] @ np.diag(node.scale)
    return transform


def world_poses(gltf: GLTF2) -> dict[str, np.ndarray]:
    """Pose of every named node in the glTF scene's frame (composed from the scene's root nodes)."""
    poses: dict[str, np.ndarray] = {}

    def visit(index: int, parent: np.ndarray) -> None:
        node = gltf.nodes[index]
        pose = parent @ _node_matrix(node)
        assert node.name not in poses, f'node name {node.name!r} appears twice'
        poses[node.name] = pose
        for child in node.children or []:
            visit(child, pose)

    for root in gltf.scenes[gltf.scene or 0].nodes:
        visit(root, np.eye(4))
    return poses


def read_glb(data: bytes, tmp_path, name='scene.glb') -> GLTF2:
    path = tmp_path / name
    path.write_bytes(data)
    return GLTF2().load_binary(str(path))


@pytest.mark.parametrize('robot', ['rover', 'racer', 'ur5'])
def test_link_nodes_equal_forward_kinematics(robot, tmp_path):
    if robot == 'ur5' and not EXAMPLE_ROBOTS.is_dir():
        pytest.skip('the UR5 (root link named world, meshes) comes from example-robot-data: ROBOTSIM_TEST_DEPS=1 '
                    'scripts/setup.sh')
    model = load_robot(robot)
    rng = np.random.default_rng(16)
    for trial in range(3):
        positions = {}
        for joint in model.tree.moving_joints():
            low, high = ((joint.limit.lower, joint.limit.upper) if joint.type != 'continuous' and joint.limit
                         else (-np.pi, np.pi))
            positions[joint.name] = float(rng.uniform(low, high))
        gltf = read_glb(scene_glb(build_scene(model, positions=positions)), tmp_path)
        assert gltf.asset.version == '2.0'
        poses = world_poses(gltf)
        # Undo the +Y-up root: everything below it is in ROS coordinates.
        to_ros = np.linalg.inv(Z_UP_TO_Y_UP)
        assert np.allclose(poses[ROOT_NODE], Z_UP_TO_Y_UP)
        expected = forward_kinematics(model.tree, {**model.initial_positions, **positions})
        placement = robot_placement(model)
        assert set(model.tree.links) <= set(poses), 'a link has no node of its name'
        worst = 0.0
        for link, fk in expected.items():
            got = to_ros @ poses[link]
            want = placement @ fk
            worst = max(worst, float(np.abs(got[:3, 3] - want[:3, 3]).max()))
            assert np.allclose(got[:3, :3], want[:3, :3], atol=1e-9), f'{robot} link {link}: orientation'
        assert worst < 1e-6, f'{robot}: a link node is {worst} m from forward kinematics'
        # One mesh node per URDF visual, under its link.
        for link_name, link in model.tree.links.items():
            for index in range(len(link.visuals)):
                node = next(n for n in gltf.nodes if n.name == f'{link_name}/visual_{index}')
                assert node.mesh is not None


def test_world_entities_and_colours(tmp_path):
    world = load_world(resolve_world_path('room'))
    model = load_robot('rover')
    gltf = read_glb(scene_glb(build_scene(model, world)), tmp_path)
    poses = world_poses(gltf)
    to_ros = np.linalg.inv(Z_UP_TO_Y_UP)
    names = {node.name for node in gltf.nodes}
    assert {WORLD_NODE, 'floor', 'crate', 'shelf', 'kerb', 'toy_box', 'pillar'} <= names
    assert {f'wall_{i}' for i in range(len(world.walls))} <= names
    crate = next(box for box in world.boxes if box.name == 'crate')
    pose = to_ros @ poses['crate']
    assert np.allclose(pose[:3, 3], crate.position, atol=1e-9)
    assert np.allclose(pose[:3, :3], rpy_to_matrix((0, 0, crate.yaw)), atol=1e-9)
    # The crate's material is its colour; the pillar's top is at its height (mesh bounds from the accessor).
    crate_node = next(n for n in gltf.nodes if n.name == 'crate')
    material = gltf.materials[gltf.meshes[crate_node.mesh].primitives[0].material]
    # (glTF's baseColorFactor is linear: MuJoCo's display colour through the sRGB curve, in 8 bits)
    assert np.allclose(material.pbrMetallicRoughness.baseColorFactor,
                       [*(srgb_to_linear(c) for c in crate.rgba[:3]), crate.rgba[3]], atol=0.6 / 255)
    pillar = next(n for n in gltf.nodes if n.name == 'pillar')
    accessor = gltf.accessors[gltf.meshes[pillar.mesh].primitives[0].attributes.POSITION]
    height = next(c for c in world.cylinders if c.name == 'pillar').height
    assert accessor.max[2] - accessor.min[2] == pytest.approx(height, abs=1e-6)
    # In a world the free-base robot stands at the world's spawn pose.
    spawn = homogeneous(rpy_to_matrix((0, 0, world.spawn.yaw)), world.spawn.xyz)
    assert np.allclose(to_ros @ poses[model.tree.root()], spawn, atol=1e-9)
    # glTF is +Y up: the top of the pillar has the largest glTF y of its vertices' world positions.
    assert poses['pillar'][1, 3] == pytest.approx(world.cylinders[0].position[2], abs=1e-9)


def test_describe_writes_gltf(tmp_path):
    out = tmp_path / 'sub' / 'rover.glb'
    completed = subprocess.run([sys.executable, '-m', 'robotsim.cli', 'describe', 'rover', '--gltf', str(out),
                                '--world', 'room'], capture_output=True, text=True, timeout=120)
    assert completed.returncode == 0, completed.stderr
    assert f'wrote glTF {out} (in world room)' in completed.stdout
    gltf = GLTF2().load_binary(str(out))
    names = {node.name for node in gltf.nodes}
    assert {'base_footprint', 'base_link', 'laser', 'camera_color_optical_frame', 'floor', 'pillar'} <= names


def test_describe_world_without_gltf_is_one_line(tmp_path):
    completed = subprocess.run([sys.executable, '-m', 'robotsim.cli', 'describe', 'rover', '--world', 'room'],
                               capture_output=True, text=True, timeout=120)
    assert completed.returncode == 2
    assert completed.stderr.strip() == ('robotsim: error: command line: --world: expected --gltf OUT.glb too '
                                        '(the world is drawn in the glTF)')
    missing = subprocess.run([sys.executable, '-m', 'robotsim.cli', 'describe', 'rover', '--gltf',
                              str(tmp_path / 'x.glb'), '--world', str(tmp_path / 'nope.yaml')],
                             capture_output=True, text=True, timeout=120)
    assert missing.returncode == 2 and len(missing.stderr.strip().splitlines()) == 1, missing.stderr
    assert 'nope.yaml' in missing.stderr and not (tmp_path / 'x.glb').exists()
