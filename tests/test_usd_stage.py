"""`robotsim view BAG --usd run.usdc`: a recording as a time-sampled USD stage, read back by the real USD
library (pxr, usd-core): the robot's links at three times where the bag's ground truth and joint states put
them (within 1e-6 m), the world's shapes, the camera, Z up in metres, and a file that stays whole when moved.
Materials: the chequered floor's pattern as a texture in a .usdz package, read back by pxr and imported by
Blender (its USD importer, in the cached bpy environment of ``robotsim render``), and the plain surfaces'
colours."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys

import numpy as np
import pytest

from robotsim_core.description import load_robot
from robotsim_core.description.kinematics import forward_kinematics
from robotsim_core.viewer.gltf import srgb_to_linear
from rostest_helpers import WORKSPACE

pxr = pytest.importorskip('pxr', reason='usd-core is in requirements/bare.txt')
from pxr import Ar, Sdf, Usd, UsdGeom, UsdShade  # noqa: E402


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
    # The floor's pattern beside the stage, by a relative path that resolves there.
    textures = out.parent / 'run.usdc.textures'
    assert f'in {textures})' in completed.stdout and len(list(textures.glob('pattern_*.png'))) >= 1, completed.stdout
    in_place = Usd.Stage.Open(str(out))
    source = bound_surface(in_place, '/World/world/floor/shape').GetInput('diffuseColor').GetConnectedSource()[0]
    assert UsdShade.Shader(source.GetPrim()).GetInput('file').Get().resolvedPath.startswith(str(textures))
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
        f'robotsim: error: view: --usd {tmp_path / "run.obj"}: expected a file ending in .usdc, .usda, .usd or .usdz'], \
        completed.stderr
    completed = robotsim('view', str(tmp_path / 'no_bag'), '--usd', str(tmp_path / 'run.usdc'))
    assert completed.returncode == 2 and len(completed.stderr.strip().splitlines()) == 1, completed.stderr
    assert 'no such bag' in completed.stderr


def bound_surface(stage, path: str):
    """The UsdPreviewSurface of the material bound to the prim at ``path``."""
    material, _ = UsdShade.MaterialBindingAPI(stage.GetPrimAtPath(path)).ComputeBoundMaterial()
    assert material, f'no material bound to {path}'
    return material.ComputeSurfaceSource()[0]


def test_a_usdz_package_carries_the_floor_pattern_and_every_colour(episode, tmp_path):
    import io
    import json

    from PIL import Image

    from robotsim_sim.scene import load_world
    world = load_world(str(episode / 'world.yaml'))
    texture = world.floor.texture
    assert texture.pattern == 'checker' and 0 < texture.contrast < 1  # the default floor
    out = tmp_path / 'run.usdz'
    completed = robotsim('view', str(episode), '--usd', str(out))
    assert completed.returncode == 0, completed.stderr
    assert re.search(r'\d+ pattern textures? in the package\)', completed.stdout), completed.stdout
    moved = tmp_path / 'elsewhere' / 'run.usdz'
    moved.parent.mkdir()
    shutil.move(str(out), moved)
    stage = Usd.Stage.Open(str(moved))

    floor = '/World/world/floor/shape'
    surface = bound_surface(stage, floor)
    source, output, _ = surface.GetInput('diffuseColor').GetConnectedSource()
    assert output == 'rgb' and UsdShade.Shader(source.GetPrim()).GetIdAttr().Get() == 'UsdUVTexture'
    asset = UsdShade.Shader(source.GetPrim()).GetInput('file').Get()
    assert asset.resolvedPath.startswith(str(moved) + '['), asset  # inside the package
    data = Ar.GetResolver().OpenAsset(Ar.ResolvedPath(asset.resolvedPath)).GetBuffer()
    pixels = np.asarray(Image.open(io.BytesIO(bytes(data))).convert('RGB'), dtype=float)
    levels = np.unique(pixels.reshape(-1, 3), axis=0)
    assert len(levels) == 2, levels  # the chequer's two: the floor's colour and a darker one
    dark, light = sorted(levels, key=lambda c: c.sum())
    # In display values, as MuJoCo shows them: the floor's colour and its second colour, `contrast` darker.
    assert UsdShade.Shader(source.GetPrim()).GetInput('sourceColorSpace').Get() == 'sRGB'
    assert np.allclose(light, np.asarray(world.floor.rgba[:3]) * 255, atol=1.0)
    assert np.allclose(dark, light * (1 - texture.contrast), atol=1.5)
    # Texture coordinates: one repeat (2 x 2 tiles) every 2 tile metres on the floor's top face.
    mesh = UsdGeom.Mesh(stage.GetPrimAtPath(floor))
    points, st = np.array(mesh.GetPointsAttr().Get()), np.array(UsdGeom.PrimvarsAPI(mesh).GetPrimvar('st').Get())
    indices = np.array(mesh.GetFaceVertexIndicesAttr().Get()).reshape(-1, 3)
    top = indices[np.isclose(points[indices, 2], points[:, 2].max()).all(axis=1)].reshape(-1)  # the top face's corners
    half_x, half_y = world.floor.size[0] / 2, world.floor.size[1] / 2
    assert np.allclose(points[top, :2].min(axis=0), (-half_x, -half_y)) and \
        np.allclose(points[top, :2].max(axis=0), (half_x, half_y))  # the floor where the simulator has it
    # (laid from the floor's corner at (-x, +y), as MuJoCo lays a plane's texture)
    expected = (points[top, :2] - (-half_x, half_y)) / (2 * texture.tile)
    assert len(top) >= 6 and np.allclose(st[top], expected, atol=1e-5)
    # A plain surface: its colour (in 8 bits, as the glTF export's) in scene-linear terms, no texture.
    wall = bound_surface(stage, '/World/world/wall_0/shape')
    assert not wall.GetInput('diffuseColor').HasConnectedSource()
    wall_linear = [srgb_to_linear(c) for c in world.walls[0].rgba[:3]]
    assert np.allclose(wall.GetInput('diffuseColor').Get(), wall_linear, atol=0.005)

    # Blender's USD importer: the floor's base colour comes from the pattern image through the st coordinates.
    from robotsim_learning.render import environment
    python = environment.ensure_environment(install=True)
    script = tmp_path / 'blender_import.py'
    script.write_text(BLENDER_IMPORT)
    completed = subprocess.run([str(python), str(script), str(moved)], capture_output=True, text=True, timeout=600,
                               env=environment.child_environment())
    lines = [line for line in completed.stdout.splitlines() if line.startswith('RESULT ')]
    assert completed.returncode == 0 and lines, completed.stdout[-2000:] + completed.stderr[-2000:]
    imported = json.loads(lines[-1][len('RESULT '):])
    assert imported['floor_base_colour_from'] == 'TEX_IMAGE' and imported['floor_uv'] == ['st'], imported
    assert imported['floor_image_size'] == [64, 64] and imported['floor_image_colour_space'] == 'sRGB', imported
    red = sorted(imported['floor_image_red_levels'])
    assert len(red) == 2 and red[0] / red[1] == pytest.approx(1 - texture.contrast, abs=0.01), red
    assert np.allclose(imported['wall_base_colour'][:3], wall_linear, atol=0.005), imported


BLENDER_IMPORT = """
import json, sys
import bpy
bpy.ops.wm.read_factory_settings(use_empty=True)
assert bpy.ops.wm.usd_import(filepath=sys.argv[-1]) == {'FINISHED'}

def mesh_under(name):
    for obj in bpy.data.objects:
        parent = obj.parent
        if obj.type == 'MESH' and parent is not None and parent.name == name:
            return obj
    raise SystemExit(f'no mesh under {name}')

def principled(obj):
    return next(n for n in obj.active_material.node_tree.nodes if n.type == 'BSDF_PRINCIPLED')

floor, wall = mesh_under('floor'), mesh_under('wall_0')
link = principled(floor).inputs['Base Color'].links[0]
image = link.from_node.image
print('RESULT ' + json.dumps({
    'floor_base_colour_from': link.from_node.type, 'floor_uv': [layer.name for layer in floor.data.uv_layers],
    'floor_image_size': list(image.size), 'floor_image_colour_space': image.colorspace_settings.name,
    'floor_image_red_levels': sorted({round(v, 4) for v in list(image.pixels)[0::4]}),
    'wall_base_colour': list(principled(wall).inputs['Base Color'].default_value)}))
"""
