"""Worlds beyond primitives: mesh entities (a concave mesh with a CoACD contact shape, a free mesh body) and
heightfield terrain, seen by the lidar and the depth camera where an independent ray caster says they are,
cast against the triangles of the glTF export (what the replay page, the USD stage and the Blender render
draw), and refused with one line when a file cannot be used."""

from __future__ import annotations

import math
import xml.etree.ElementTree as ET

import mujoco
import numpy as np
import pytest
import trimesh
from PIL import Image

from robotsim_core.description.world_geometry import convex_parts
from robotsim_core.errors import DescriptionError
from robotsim_core.viewer.gltf import Z_UP_TO_Y_UP, build_scene
from robotsim_sensors.camera import Camera, CameraRenderer, CameraSpec, intrinsics
from robotsim_sensors.lidar import Lidar, LidarSpec
from robotsim_sim.compiled_scene import segmentation_labels
from robotsim_sim.scene import load_world, world_element

LIDAR_AT = (-1.0, -0.4, 0.35)
CAMERA_AT = (-3.5, 2.5, 2.5)


def l_shape() -> trimesh.Trimesh:
    """A closed concave L prism (2 x 2 x 0.8 m with a 1 x 1 m notch), one watertight solid."""
    outline = [(0, 0), (2, 0), (2, 1), (1, 1), (1, 2), (0, 2)]
    count = len(outline)
    vertices = [(x, y, 0.0) for x, y in outline] + [(x, y, 0.8) for x, y in outline]
    # Fan triangulation from the re-entrant corner (1, 1) covers the L exactly.
    corner = 3
    fan = [(corner, (corner + k) % count, (corner + k + 1) % count) for k in range(1, count - 1)]
    faces = [(c, b, a) for a, b, c in fan] + [(a + count, b + count, c + count) for a, b, c in fan]
    for i in range(count):
        j = (i + 1) % count
        faces += [(i, j, j + count), (i, j + count, i + count)]
    mesh = trimesh.Trimesh(vertices, faces, process=True)
    assert mesh.is_watertight and mesh.volume > 0
    return mesh


@pytest.fixture(scope='module')
def world_file(tmp_path_factory):
    folder = tmp_path_factory.mktemp('meshworld')
    l_shape().export(folder / 'ell.obj')
    trimesh.creation.icosphere(subdivisions=2, radius=0.15).export(folder / 'ball.stl')
    x = np.linspace(0.0, 1.0, 24)
    hills = np.outer(0.5 + 0.5 * np.sin(6 * x), 0.5 + 0.5 * np.cos(5 * x))
    Image.fromarray((255 * hills).astype(np.uint8)).save(folder / 'hills.png')
    (folder / 'world.yaml').write_text(
        'name: meshworld\n'
        'floor: {size: [16, 16]}\n'
        'meshes:\n'
        '  - {name: ell, file: ell.obj, position: [1.5, 0.6, 0.0], rpy: [0, 0, 0.4], max_convex_parts: 8}\n'
        '  - {name: ball, file: ball.stl, position: [-3.0, 2.0, 0.6], mass: 0.4, collision: hull}\n'
        'heightfields:\n'
        '  - {name: hills, image: hills.png, height: 0.45, size: [3.0, 2.5], position: [0.8, -2.6, 0.0]}\n'
        '  - {name: kerb, heights: [[0.0, 0.12, 0.12, 0.0], [0.0, 0.12, 0.12, 0.0]], size: [1.2, 0.8],\n'
        '     position: [-2.5, -1.5, 0.0]}\n')
    return folder / 'world.yaml'


@pytest.fixture(scope='module')
def scene(world_file):
    world = load_world(str(world_file))
    root = world_element(world, (96, 72), 0.05, 40.0)
    body = root.find('worldbody')
    ET.SubElement(body, 'site', name='lidar', pos=' '.join(map(str, LIDAR_AT)))
    forward = np.array([3.6, -3.4, -2.4])
    forward /= np.linalg.norm(forward)
    right = np.cross(forward, [0.0, 0.0, 1.0])
    right /= np.linalg.norm(right)
    up = np.cross(right, forward)
    ET.SubElement(body, 'camera', name='eye', pos=' '.join(map(str, CAMERA_AT)), fovy=str(math.degrees(1.2)),
                  xyaxes=' '.join(repr(float(v)) for v in np.concatenate([right, up])))
    model = mujoco.MjModel.from_xml_string(ET.tostring(root, encoding='unicode'))
    data = mujoco.MjData(model)
    mujoco.mj_forward(model, data)
    return world, model, data


def export_triangles(world) -> np.ndarray:
    """(n, 3, 3) triangles of the glTF export's world in ROS coordinates (z up)."""
    dumped = build_scene(world=world).to_mesh()
    dumped.apply_transform(np.linalg.inv(Z_UP_TO_Y_UP))
    return dumped.vertices[dumped.faces]


def first_hits(origin: np.ndarray, directions: np.ndarray, triangles: np.ndarray) -> np.ndarray:
    """Möller-Trumbore: the smallest t > 0 with origin + t * direction on a triangle, +inf for none."""
    a, b, c = triangles[:, 0], triangles[:, 1], triangles[:, 2]
    edge1, edge2 = b - a, c - a
    out = np.full(len(directions), np.inf)
    s = origin - a  # one origin: these do not depend on the ray
    q = np.cross(s, edge1)
    for start in range(0, len(directions), 256):
        d = directions[start:start + 256]
        p = np.cross(d[:, None, :], edge2[None])
        det = np.einsum('rtk,tk->rt', p, edge1)
        with np.errstate(divide='ignore', invalid='ignore', over='ignore'):
            inverse = 1.0 / det
            u = np.einsum('rtk,tk->rt', p, s) * inverse
            v = (d @ q.T) * inverse
            t = (edge2 * q).sum(-1)[None] * inverse
            hit = (np.abs(det) > 1e-12) & (u >= -1e-9) & (v >= -1e-9) & (u + v <= 1 + 1e-9) & (t > 1e-9)
        out[start:start + 256] = np.where(hit, t, np.inf).min(axis=1)
    return out


def test_the_lidar_sees_mesh_and_terrain_where_the_exported_triangles_are(scene):
    world, model, data = scene
    spec = LidarSpec(type='lidar', samples=240, channels=12, vertical_fov=0.7, range_min=0.05, range_max=15.0,
                     noise_stddev=0.0)
    lidar = Lidar(model, 'lidar', spec, own_group=5)
    reading = lidar.measure(data, np.random.default_rng(0), 0)
    expected = first_hits(np.array(LIDAR_AT), lidar.local_directions, export_triangles(world))
    expected[expected > spec.range_max] = np.inf
    geoms = lidar._geomid
    names = {model.geom(int(g)).name for g in geoms if g >= 0}
    assert {'ell', 'hills', 'kerb', 'ball', 'floor'} <= names  # every kind of thing is in view
    both = np.isfinite(expected) & np.isfinite(reading.ranges)
    assert np.array_equal(np.isfinite(expected), np.isfinite(reading.ranges))
    error = np.abs(reading.ranges[both] - expected[both])
    for name in ('ell', 'hills', 'kerb'):
        beams = both & (geoms == model.geom(name).id)
        assert beams.sum() > 20, name
        assert np.abs(reading.ranges[beams] - expected[beams]).max() < 1e-4, name
    assert error.max() < 1e-4


def test_depth_and_segmentation_see_mesh_and_terrain_where_the_exported_triangles_are(scene):
    world, model, data = scene
    spec = CameraSpec(type='camera', width=96, height=72, vertical_fov=1.2, near=0.05, far=40.0,
                      images=['depth', 'segmentation'])
    geom_labels, labels = segmentation_labels(model, [], [])
    renderer = CameraRenderer(model)
    try:
        reading = Camera(renderer, 'eye', spec, geom_labels).measure(data, np.random.default_rng(0), 0)
    finally:
        renderer.close()
    fx, fy, cx, cy = intrinsics(spec)
    v, u = np.mgrid[0:spec.height, 0:spec.width].astype(float)
    camera = model.camera('eye').id
    rotation = data.cam_xmat[camera].reshape(3, 3)
    rays = np.stack([(u - cx) / fx, -(v - cy) / fy, -np.ones_like(u)], -1).reshape(-1, 3) @ rotation.T
    expected = first_hits(data.cam_xpos[camera].copy(), rays, export_triangles(world)).reshape(u.shape)
    depth = reading.depth.astype(float)
    seen = {labels[int(k)] for k in np.unique(reading.segmentation) if k >= 0}
    assert {'ell', 'hills', 'kerb'} <= seen
    both = np.isfinite(depth) & np.isfinite(expected)
    assert both.mean() > 0.5 and (np.isfinite(depth) == np.isfinite(expected)).mean() > 0.99
    error = np.abs(depth - expected)[both]
    # Silhouette pixels may fall either side of an edge: all but a few agree to a millimetre.
    assert np.median(error) < 1e-3 and (error < 5e-3).mean() > 0.98, np.sort(error)[-10:]
    for name in ('ell', 'hills'):
        label = next(key for key, value in labels.items() if value == name)
        mask = (reading.segmentation == label) & both
        assert mask.sum() > 50
        assert np.median(np.abs(depth - expected)[mask]) < 1e-3, name


def test_the_concave_mesh_keeps_its_notch_and_a_free_mesh_lands(scene, world_file):
    world, model, data = scene
    # A ray straight down into the L's notch meets the floor, not the mesh: the visual mesh is not its hull.
    notch = np.array([1.5, 1.5, 0.0])
    turn = np.array([[math.cos(0.4), -math.sin(0.4), 0.0], [math.sin(0.4), math.cos(0.4), 0.0], [0.0, 0.0, 1.0]])
    top = np.array([1.5, 0.6, 0.0]) + turn @ notch + [0.0, 0.0, 2.0]
    found = np.zeros(1, np.int32)
    distance = mujoco.mj_ray(model, data, top, np.array([0.0, 0.0, -1.0]), np.array([1, 0, 0, 0, 0, 0], np.uint8),
                             1, -1, found)
    assert model.geom(int(found[0])).name == 'floor' and distance == pytest.approx(2.0)
    # ...and the contact parts leave it open too: a small free box dropped there reaches the floor.
    parts = [g for g in range(model.ngeom) if model.geom_bodyid[g] == model.body('ell').id and model.geom_group[g] == 1]
    assert 2 <= len(parts) <= 8 and all(model.geom_rgba[g][3] == 0 for g in parts)
    dynamic = mujoco.MjData(model)
    for _ in range(1500):
        mujoco.mj_step(model, dynamic)
    ball = dynamic.body('ball').xpos
    assert ball[2] == pytest.approx(0.15, abs=0.01) and np.hypot(*(ball[:2] - [-3.0, 2.0])) < 0.05


def test_the_decomposition_is_cached_by_content_and_repeatable(tmp_path, monkeypatch):
    mesh = l_shape()
    monkeypatch.setenv('ROBOTSIM_CACHE', str(tmp_path / 'cache'))
    first = convex_parts(mesh.vertices, mesh.faces, 6, 0.05)
    stored = list((tmp_path / 'cache' / 'convex').glob('*.npz'))
    assert len(stored) == 1
    again = convex_parts(mesh.vertices, mesh.faces, 6, 0.05)  # from the cache
    assert len(first) == len(again) and all(np.array_equal(a[0], b[0]) for a, b in zip(first, again))
    monkeypatch.setenv('ROBOTSIM_CACHE', str(tmp_path / 'other'))
    fresh = convex_parts(mesh.vertices, mesh.faces, 6, 0.05)  # computed again: the same parts (fixed seed)
    assert all(np.array_equal(a[0], b[0]) and np.array_equal(a[1], b[1]) for a, b in zip(first, fresh))
    # The parts cover the L and leave its notch: their union's volume is the L's, not its hull's (4 m x 0.8).
    volume = sum(trimesh.Trimesh(v, f).convex_hull.volume for v, f in first)
    assert volume == pytest.approx(3 * 0.8, rel=0.05)


@pytest.mark.parametrize('entry, key, says', [
    ("meshes: [{name: m, file: missing.obj, position: [0, 0, 0]}]", 'meshes[0].file', 'mesh file not found'),
    ("meshes: [{name: m, file: notes.txt, position: [0, 0, 0]}]", 'meshes[0].file', 'expected a mesh file'),
    ("meshes: [{name: m, file: flat.obj, position: [0, 0, 0]}]", 'meshes[0].file', 'expected a solid'),
    ("meshes: [{name: m, file: ell.obj, position: [0, 0, 0], mass: 2, collision: none}]", 'meshes[0].collision',
     'free body'),
    ("heightfields: [{name: t, size: [1, 1]}]", 'heightfields[0]', 'exactly one of image'),
    ("heightfields: [{name: t, size: [1, 1], image: hills.png}]", 'heightfields[0].height', 'white above black'),
    ("heightfields: [{name: t, size: [1, 1], image: flat.png, height: 1}]", 'heightfields[0].image', 'vary'),
    ("heightfields: [{name: t, size: [1, 1], image: missing.png, height: 1}]", 'heightfields[0].image',
     'not found'),
    ("heightfields: [{name: t, size: [1, 1], heights: [[0, 1], [0]]}]", 'heightfields[0].heights', 'same length'),
    ("heightfields: [{name: t, size: [1, 1], heights: [[0, 1], [0, 1]], height: 2}]", 'heightfields[0].height',
     'metres already'),
    ("boxes: [{name: t, position: [0, 0, 0], size: [1, 1, 1]}]\nheightfields: [{name: t, size: [1, 1], "
     "heights: [[0, 1], [0, 1]]}]", 'heightfields[0].name', 'unique entity name'),
])
def test_bad_mesh_and_terrain_entries_get_one_line(tmp_path, entry, key, says):
    l_shape().export(tmp_path / 'ell.obj')
    (tmp_path / 'notes.txt').write_text('not a mesh')
    trimesh.Trimesh([[0, 0, 0], [1, 0, 0], [0, 1, 0]], [[0, 1, 2]]).export(tmp_path / 'flat.obj')
    Image.fromarray(np.full((4, 4), 128, np.uint8)).save(tmp_path / 'flat.png')
    Image.fromarray(np.arange(16, dtype=np.uint8).reshape(4, 4) * 16).save(tmp_path / 'hills.png')
    path = tmp_path / 'world.yaml'
    path.write_text(f'name: bad\n{entry}\n')
    with pytest.raises(DescriptionError) as caught:
        world_element(load_world(str(path)), (64, 64), 0.05, 40.0)
    message = str(caught.value)
    assert str(path) in message and key in message and says in message and '\n' not in message, message


def test_the_shipped_yard_world_runs_with_the_rover():
    from robotsim_core.description import load_robot
    from robotsim_sim.scene import RobotPlacement, resolve_world_path
    from robotsim_sim.simulation import SimOptions, Simulation

    sim = Simulation(load_world(resolve_world_path('yard')), [RobotPlacement(load_robot('rover'))],
                     SimOptions(seed=0, cameras=False))
    try:
        start = sim.data.body('pebble').xpos.copy()
        while sim.time_ns < 1_000_000_000:
            sim.command_base(0, 0.2, 0.0)
            sim.step()
        assert {'arch', 'rock', 'pebble', 'rough_ground'} <= set(sim.labels.values())
        assert np.abs(sim.data.body('pebble').xpos - start).max() < 0.01  # resting on the floor
        assert sim.take_instabilities() == []
    finally:
        sim.close()
