"""Lens distortion (issue 14, item 5): a camera's plumb_bob coefficients distort its images, and
CameraInfo carries them.

Known 3D points (small spheres) are rendered by a real MuJoCo camera with strong barrel distortion
and found in the RGB image where OpenCV's plumb_bob projection (cv2.projectPoints) puts them, within
0.5 px (in the nearest-neighbour segmentation within 0.75 px); the same measurement on the
undistorted camera against the pinhole projection guards the measurement itself."""

import math
import subprocess
import sys
from pathlib import Path

import cv2
import mujoco
import numpy as np
import pytest
import yaml
from sensor_msgs.msg import CameraInfo, Image

from robotsim_sensors.camera import CameraSpec
from robotsim_msgs.srv import Step
from robotsim_sensors.ros import messages as ros_messages
from robotsim_sensors.camera import Camera, CameraRenderer, intrinsics
from rostest_helpers import SENSOR, NodeProcess, Observer

WIDTH, HEIGHT, FOVY = 320, 240, 0.9
COEFFICIENTS = (-0.25, 0.08, 0.001, -0.0005, 0.0)  # k1 k2 p1 p2 k3: strong barrel, a little tangential
TOLERANCE_PX = 0.5
MARKER_DIAMETER_PX = 10.0  # big enough for a sub-pixel centroid, small enough that perspective bias is ~0.02 px
CAMERA_POSITION = np.array([0.1, -0.2, 1.0])
WALL_DISTANCE = 6.0
CONFIG = Path(__file__).resolve().parents[1] / 'config' / 'robots'
WORLDS = Path(__file__).parent / 'data' / 'worlds'


def camera_spec(distortion=(0.0,) * 5, **extra) -> CameraSpec:
    return CameraSpec(type='camera', width=WIDTH, height=HEIGHT, vertical_fov=FOVY, near=0.05, far=40.0,
                      images=['rgb', 'depth', 'segmentation'], distortion=tuple(distortion), **extra)


def optical_axes(pitch: float, roll: float) -> np.ndarray:
    """World <- optical frame rotation (columns: x right, y down, z forward; REP 103) of a camera
    looking along +x, pitched down by ``pitch`` and rolled by ``roll`` about its view direction."""
    forward = np.array([math.cos(pitch), 0.0, -math.sin(pitch)])
    right = np.array([0.0, -1.0, 0.0])
    down = np.cross(forward, right)
    c, s = math.cos(roll), math.sin(roll)
    right, down = c * right + s * down, -s * right + c * down
    return np.column_stack([right, down, forward])


def marker_positions(world_from_optical: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """World positions of a 6 x 5 grid of points whose pinhole images span the frame, at seeded depths."""
    fx, fy, cx, cy = intrinsics(camera_spec())
    points = []
    for v in np.linspace(22, HEIGHT - 23, 5):
        for u in np.linspace(22, WIDTH - 23, 6):
            depth = rng.uniform(1.5, 3.0)
            optical = depth * np.array([(u - cx) / fx, (v - cy) / fy, 1.0])
            points.append(CAMERA_POSITION + world_from_optical @ optical)
    return np.array(points)


def build_scene(markers: np.ndarray, world_from_optical: np.ndarray):
    """Red emissive spheres in front of a blue wall that fills the whole pinhole view; returns
    (model, data, renderer). Red on blue: the red channel is the marker alone, lit or not."""
    fx = intrinsics(camera_spec())[0]
    right, down, forward = world_from_optical.T
    spheres = ''.join(
        f'<geom name="marker{i}" type="sphere" material="marker" pos="{" ".join(f"{c:.17g}" for c in p)}" '
        f'size="{MARKER_DIAMETER_PX / 2 * float((p - CAMERA_POSITION) @ forward) / fx:.17g}"/>'
        for i, p in enumerate(markers))
    wall = CAMERA_POSITION + WALL_DISTANCE * forward
    xyaxes = lambda a, b: ' '.join(f'{c:.17g}' for c in np.concatenate([a, b]))  # noqa: E731
    # MuJoCo's camera frame: x right, y up, z backwards.
    xml = (f'<mujoco><visual><global offwidth="{WIDTH}" offheight="{HEIGHT}"/><map znear="0.05" zfar="50"/></visual>'
           '<statistic extent="1" center="0 0 0"/>'
           '<asset><material name="marker" rgba="1 0 0 1" emission="1" specular="0"/>'
           '<material name="wall" rgba="0 0 1 1" specular="0"/></asset><worldbody>'
           f'<geom name="wall" type="box" size="9 9 0.05" material="wall" pos="{" ".join(map(str, wall))}" '
           f'xyaxes="{xyaxes(right, down)}"/>{spheres}'
           f'<camera name="lens" pos="{" ".join(map(str, CAMERA_POSITION))}" fovy="{math.degrees(FOVY):.17g}" '
           f'xyaxes="{xyaxes(right, -down)}"/></worldbody></mujoco>')
    model = mujoco.MjModel.from_xml_string(xml)
    data = mujoco.MjData(model)
    mujoco.mj_forward(model, data)
    return model, data, CameraRenderer(model)


@pytest.fixture(scope='module')
def scene():
    world_from_optical = optical_axes(pitch=0.2, roll=0.3)
    markers = marker_positions(world_from_optical, np.random.default_rng(14))
    model, data, renderer = build_scene(markers, world_from_optical)
    yield model, data, renderer, markers
    renderer.close()


def capture(scene, spec: CameraSpec, seed: int = 0):
    model, data, renderer, _ = scene
    geom_ids = np.arange(model.ngeom, dtype=np.int32)  # label = geom id: the markers stay apart
    camera = Camera(renderer, 'lens', spec, geom_ids)
    return camera, camera.measure(data, np.random.default_rng(seed), 0)


def projections(scene, distortion) -> np.ndarray:
    """Where OpenCV's plumb_bob model puts the markers' centres, from MuJoCo's camera pose (N x 2 px)."""
    model, data, _, markers = scene
    camera = model.camera('lens').id
    world_from_optical = data.cam_xmat[camera].reshape(3, 3) @ np.diag([1.0, -1.0, -1.0])  # y up, z back -> REP 103
    optical_from_world = world_from_optical.T
    rotation, _ = cv2.Rodrigues(optical_from_world)
    translation = -optical_from_world @ data.cam_xpos[camera]
    fx, fy, cx, cy = intrinsics(camera_spec())
    matrix = np.array([[fx, 0.0, cx], [0.0, fy, cy], [0.0, 0.0, 1.0]])
    points, _ = cv2.projectPoints(markers, rotation, translation, matrix, np.array(distortion, dtype=float))
    return points.reshape(-1, 2)


def marker_centroids(model, reading) -> tuple[np.ndarray, np.ndarray]:
    """(segmentation centroids, red-channel centroids) of every marker, N x 2 px each (pixel centres
    at integer coordinates, as in K)."""
    rows, columns = np.mgrid[0:HEIGHT, 0:WIDTH]
    red = reading.rgb[..., 0].astype(float)
    by_label, by_colour = [], []
    for i in range(model.ngeom - 1):
        mask = reading.segmentation == model.geom(f'marker{i}').id
        assert 40 < mask.sum() < 200, f'marker {i}: {mask.sum()} pixels'
        by_label.append((columns[mask].mean(), rows[mask].mean()))
        # The red channel around the blob: bilinear interpolation spreads a marker's edge over one pixel.
        top, bottom = rows[mask].min() - 2, rows[mask].max() + 3
        left, right = columns[mask].min() - 2, columns[mask].max() + 3
        weights = red[top:bottom, left:right]
        by_colour.append(((weights * columns[top:bottom, left:right]).sum() / weights.sum(),
                          (weights * rows[top:bottom, left:right]).sum() / weights.sum()))
    return np.array(by_label), np.array(by_colour)


def test_pinhole_camera_images_are_the_render_byte_for_byte(scene):
    # Zero coefficients skip the remap altogether: the images are the renderer's, unchanged.
    model, data, renderer, _ = scene
    camera, reading = capture(scene, camera_spec())
    assert camera.lens is None
    rgb, depth_buffer, segmentation = renderer.render(data, model.camera('lens').id, WIDTH, HEIGHT, True, True, True)
    assert reading.rgb.tobytes() == rgb.tobytes()
    assert reading.depth.tobytes() == renderer.linear_depth(depth_buffer, 40.0).tobytes()
    assert reading.segmentation.tobytes() == segmentation.astype(np.int32).tobytes()


def test_undistorted_markers_sit_at_their_pinhole_projections(scene):
    # Guards the measurement: the same centroids on the pinhole camera match the pinhole projection.
    model = scene[0]
    _, reading = capture(scene, camera_spec())
    assert (reading.segmentation >= 0).all(), 'the wall must fill the pinhole view'
    expected = projections(scene, (0.0,) * 5)
    by_label, by_colour = marker_centroids(model, reading)
    for measured in (by_label, by_colour):
        errors = np.linalg.norm(measured - expected, axis=1)
        assert errors.max() < TOLERANCE_PX, errors


def test_distorted_markers_sit_where_plumb_bob_projects_them(scene):
    model = scene[0]
    _, reading = capture(scene, camera_spec(COEFFICIENTS))
    expected = projections(scene, COEFFICIENTS)
    # The test can fail: the distortion moves the outer markers by far more than the tolerance.
    shift = np.linalg.norm(expected - projections(scene, (0.0,) * 5), axis=1)
    assert shift.max() > 20 * TOLERANCE_PX, shift
    by_label, by_colour = marker_centroids(model, reading)
    # RGB is interpolated: its markers sit where the model says (0.16 px at most when written).
    errors = np.linalg.norm(by_colour - expected, axis=1)
    assert errors.max() < TOLERANCE_PX, errors
    # Segmentation takes each pixel from the nearest render pixel, up to half a pixel from where it
    # looks by design (no label is ever blended), on top of the blob's own quantisation (0.19 px at most
    # on the pinhole camera): 0.59 px at most when written.
    errors = np.linalg.norm(by_label - expected, axis=1)
    assert errors.max() < TOLERANCE_PX + 0.25, errors


def test_distorted_depth_comes_from_the_surface_seen_and_is_never_blended(scene):
    model, data, _, markers = scene
    _, reading = capture(scene, camera_spec(COEFFICIENTS))
    camera = model.camera('lens').id
    forward = -data.cam_xmat[camera].reshape(3, 3)[:, 2]
    for i, centre in enumerate(markers):
        geom = model.geom(f'marker{i}').id
        centre_depth, radius = float((centre - data.cam_xpos[camera]) @ forward), float(model.geom_size[geom][0])
        depths = reading.depth[reading.segmentation == geom]
        # Every pixel labelled with the sphere has a depth on the sphere (a blend with the wall 6 m behind
        # or with a no-return +Inf would fall outside).
        assert (depths >= centre_depth - radius - 1e-3).all() and (depths <= centre_depth + radius + 1e-3).all(), i
    wall = reading.segmentation == model.geom('wall').id
    assert (reading.depth[wall] > WALL_DISTANCE - 0.1).all()


def test_pixels_without_a_source_are_black_no_return_and_unlabelled(scene):
    # Barrel distortion draws the frame's edges from beyond the render's field of view.
    camera, reading = capture(scene, camera_spec(COEFFICIENTS, rgb_noise_stddev=5.0, depth_noise_stddev=0.01))
    no_source = camera.lens.no_source
    assert no_source[0, 0] and no_source[-1, -1] and no_source[0, -1] and no_source[-1, 0]
    assert not no_source[HEIGHT // 2, WIDTH // 2]
    assert 0.05 < no_source.mean() < 0.3, no_source.mean()
    # The wall fills the pinhole view: exactly the pixels without a source see nothing.
    assert np.array_equal(reading.segmentation == -1, no_source)
    assert np.array_equal(~np.isfinite(reading.depth), no_source) and (reading.depth[no_source] > 0).all()
    assert (reading.rgb[no_source] == 0).all(), 'no noise on pixels that no light reached'
    assert reading.rgb[~no_source][:, 2].mean() > 20, 'the wall is seen where there is a source'


def test_camera_info_carries_the_coefficients():
    fx, fy, cx, cy = intrinsics(camera_spec())
    info = ros_messages.camera_info(camera_spec(COEFFICIENTS), 'lens_optical_frame')
    assert info.distortion_model == 'plumb_bob'
    assert list(info.d) == list(COEFFICIENTS)
    assert list(info.k) == [fx, 0.0, cx, 0.0, fy, cy, 0.0, 0.0, 1.0]
    assert list(info.r) == [1.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 1.0]
    assert list(info.p) == [fx, 0.0, cx, 0.0, 0.0, fy, cy, 0.0, 0.0, 0.0, 1.0, 0.0]
    assert list(ros_messages.camera_info(camera_spec(), 'lens_optical_frame').d) == [0.0] * 5


def describe(path: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, '-m', 'robotsim.cli', 'describe', str(path)],
                          capture_output=True, text=True, timeout=60)


@pytest.mark.parametrize('value, key, expected', [
    ([-0.25, 'strong', 0.0, 0.0, 0.0], 'distortion[1]', "expected a number, got 'strong'"),
    ([-0.25, 0.08, 0.0, 0.0], 'distortion', 'expected a list of 5 numbers, got [-0.25, 0.08, 0.0, 0.0]'),
    ('plumb_bob', 'distortion', "expected a list of 5 numbers, got 'plumb_bob'"),
    ([-0.25, 0.08, 0.0, 0.0, float('nan')], 'distortion[4]', 'expected a finite number'),
])
def test_a_bad_distortion_is_one_line_naming_file_and_key(tmp_path, value, key, expected):
    robot = yaml.safe_load((CONFIG / 'rover.yaml').read_text())
    index = next(i for i, sensor in enumerate(robot['sensors']) if sensor['type'] == 'camera')
    robot['sensors'][index]['distortion'] = value
    path = tmp_path / 'rover_bad_lens.yaml'
    path.write_text(yaml.safe_dump(robot))
    completed = describe(path)
    assert completed.returncode == 2, completed
    assert 'Traceback' not in completed.stderr
    lines = completed.stderr.strip().splitlines()
    assert len(lines) == 1, completed.stderr
    assert str(path) in lines[0] and f': sensors[{index}].{key}: ' in lines[0], lines[0]
    assert expected in lines[0], lines[0]


def test_the_simulator_publishes_the_coefficients_and_distorted_images(tmp_path):
    # The shipped rover with the lens in its YAML, through the node onto the wire.
    robot = yaml.safe_load((CONFIG / 'rover.yaml').read_text())
    camera = next(sensor for sensor in robot['sensors'] if sensor['type'] == 'camera')
    camera['distortion'] = list(COEFFICIENTS)
    camera['depth_noise_stddev'] = 0.0
    path = tmp_path / 'rover_lens.yaml'
    path.write_text(yaml.safe_dump(robot))
    observer = Observer('lens_test')
    try:
        observer.watch('/camera/camera_info', CameraInfo, SENSOR)
        observer.watch('/camera/depth/image_raw', Image, SENSOR)
        with NodeProcess('robotsim_sim', 'sim_node', {'robot': str(path), 'world': str(WORLDS / 'box_ahead.yaml'),
                                                      'start_paused': True}) as node:
            assert observer.spin_until(lambda: observer.node.count_publishers('/camera/depth/image_raw') > 0, 60), \
                node.output()
            observer.spin_for(0.5)
            assert observer.call(Step, '/sim/step', Step.Request(steps=50)).success
            assert observer.spin_until(lambda: observer.messages['/camera/depth/image_raw']
                                       and observer.messages['/camera/camera_info'], 60), node.output()
    finally:
        observer.close()
    info = observer.messages['/camera/camera_info'][-1]
    assert info.distortion_model == 'plumb_bob' and list(info.d) == list(COEFFICIENTS)
    image = observer.messages['/camera/depth/image_raw'][-1]
    depth = np.frombuffer(bytes(image.data), dtype=np.float32).reshape(image.height, image.width)
    # The floor fills the bottom rows of the pinhole frame; in the distorted frame the last rows come
    # from below the rendered field of view (no source: +Inf), the floor from a few rows up.
    assert np.isfinite(depth[-15, image.width // 2])
    assert depth[-1, 0] == np.inf and depth[-1, image.width // 2] == np.inf and depth[-1, -1] == np.inf
