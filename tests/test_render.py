"""``robotsim render``: Blender re-renders of a recording, pixel-aligned with the simulator's camera.

A fixed scene (the rover, walls, boxes yawed and pitched, a cylinder, a mesh rock and a patch of heightfield
terrain raised on its 5 cm base, so that its rim is an edge the line art can draw) is simulated for 0.6 s with
the base driving and the arm moving, its camera mounted behind and above the base looking down over
the arm, recording RGB, depth and segmentation (no noise) into a bag with the simulator's own
message code. Blender (bpy, installed on first use into its own environment, then cached) re-renders
it through the real command line, and its passes are compared with the recorded ones:

- depth within 1 cm of the simulator's on >= 99 % of the pixels where both hit, every frame;
- segmentation IoU >= 0.97 for every entity the simulator shows on >= 30 pixels, every frame;
- intrinsics: Blender's camera, read back through its own projection, equals the recorded K;
- line art: >= 95 % of the segmentation's edge pixels (entity id differs from a 4-neighbour) have a
  line pixel within 1 px, and >= 95 % of line pixels lie within 1 px of an edge of the simulator's
  per-geom segmentation (entity edges plus outlines between parts of one entity: wall over floor,
  arm over base).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import trimesh
import yaml
from rclpy.serialization import deserialize_message, serialize_message
from sensor_msgs.msg import JointState

from robotsim_core.description import load_robot
from robotsim_learning.bag_writer import BagWriter
from robotsim_learning.render import environment
from robotsim_learning.render.compare import depth_agreement, dilate, edges, lineart_agreement, segmentation_iou
from robotsim_learning.render.recording import interpolate_pose, read_images, read_recording
from robotsim_learning.render.scene_description import build_description, draw_variety
from robotsim_sim.ros.robot_messages import RobotMessages
from robotsim_sim.scene import RobotPlacement, load_world
from robotsim_sim.simulation import SimOptions, Simulation

WORKSPACE = Path(__file__).resolve().parents[1]
WIDTH, HEIGHT = 80, 60
DURATION = 0.6
RENDER_TIMEOUT = 900  # hang guard only: the first run installs bpy (a 375 MB download)

WORLD = {
    'name': 'render_test', 'timestep': 0.002,
    'floor': {'size': [8, 8], 'rgba': [0.5, 0.5, 0.45, 1]},
    'light': {'direction': [0.3, 0.2, -1.0], 'ambient': 0.35, 'diffuse': 0.7},
    'walls': [{'start': [2.6, -2.0], 'end': [2.6, 2.0], 'height': 0.6, 'rgba': [0.8, 0.78, 0.72, 1]},
              {'start': [-1.0, 1.6], 'end': [2.6, 1.6], 'height': 0.6, 'rgba': [0.7, 0.75, 0.8, 1]}],
    'boxes': [{'name': 'crate', 'position': [1.3, 0.45, 0.2], 'size': [0.4, 0.4, 0.4], 'yaw': 0.5,
               'rgba': [0.7, 0.35, 0.2, 1]},
              {'name': 'ramp', 'position': [1.5, -0.55, 0.08], 'size': [0.6, 0.4, 0.05], 'pitch': 0.25,
               'rgba': [0.3, 0.6, 0.3, 1]},
              {'name': 'block', 'position': [0.8, 0.0, 0.05], 'size': [0.1, 0.3, 0.1], 'yaw': -0.3,
               'rgba': [0.9, 0.8, 0.1, 1]}],
    'cylinders': [{'name': 'pillar', 'position': [2.0, 0.0, 0.35], 'radius': 0.15, 'height': 0.7,
                   'rgba': [0.2, 0.45, 0.7, 1]}],
    'meshes': [{'name': 'rock', 'file': 'rock.stl', 'position': [1.0, -0.3, 0.0], 'rpy': [0.0, 0.0, 0.7],
                'collision': 'hull', 'rgba': [0.55, 0.5, 0.45, 1]}],
    'heightfields': [{'name': 'bumps', 'heights': [[0.0, 0.03, 0.0, 0.05], [0.02, 0.06, 0.01, 0.0],
                                                   [0.0, 0.04, 0.08, 0.02]],
                      'size': [0.5, 0.4], 'position': [0.55, 0.45, 0.05], 'rgba': [0.45, 0.55, 0.35, 1]}],
    'spawn': {'xyz': [0.0, 0.0, 0.0], 'yaw': 0.0},
}


def _robot_yaml() -> dict:
    robot = yaml.safe_load((WORKSPACE / 'config' / 'robots' / 'rover.yaml').read_text())
    camera = next(s for s in robot['sensors'] if s['type'] == 'camera')
    # Behind and above the base, pitched down over the arm: the robot's own parts are in view.
    camera.update({'pose': {'xyz': [-0.3, 0.0, 0.3], 'rpy': [0.0, 0.5, 0.0]}, 'rate': 10, 'width': WIDTH,
                   'height': HEIGHT, 'vertical_fov': 1.0, 'images': ['rgb', 'depth', 'segmentation'],
                   'rgb_noise_stddev': 0.0, 'depth_noise_stddev': 0.0})
    return robot


@pytest.fixture(scope='module')
def recording(tmp_path_factory):
    """The bag of the fixed scene, its world and robot files, and the simulator's per-geom
    segmentation of every camera frame (geom ids, for the line-art check)."""
    folder = tmp_path_factory.mktemp('render_recording')
    world_path, robot_path = folder / 'world.yaml', folder / 'robot.yaml'
    world_path.write_text(yaml.safe_dump(WORLD))
    rock = trimesh.creation.icosphere(subdivisions=2, radius=1.0)
    rock.vertices *= (0.16, 0.12, 0.1)  # an ellipsoid resting on the floor
    rock.vertices[:, 2] += 0.1
    rock.export(folder / 'rock.stl')
    robot_path.write_text(yaml.safe_dump(_robot_yaml()))
    bag_path = folder / 'bag'
    world, robot = load_world(str(world_path)), load_robot(str(robot_path))
    sim = Simulation(world, [RobotPlacement(robot)], SimOptions(seed=0, odom_rate=50.0, joint_state_rate=50.0))
    messages, bag = open_bag(sim, bag_path)
    camera_id = sim.model.camera('camera').id
    geom_ids = {}
    try:
        sim.command_base(0, 0.25, 0.6)
        sim.command_arm(0, ['arm_base_joint', 'arm_shoulder_joint', 'arm_elbow_joint'],
                        [(0.3, (0.4, -0.3, 0.6)), (0.6, (-0.3, 0.2, 0.9))])
        while sim.time_ns <= round(DURATION * 1e9):
            for event in sim.step():
                if event.channel == 'camera':
                    _, _, geoms = sim.renderer.render(sim.data, camera_id, WIDTH, HEIGHT, False, False, True)
                    geom_ids[event.reading.stamp] = geoms
                write_event(bag, messages, event)
            sim.command_base(0, 0.25, 0.6)  # before the command timeout
    finally:
        bag.close()
        sim.close()  # its renderer too
    geom_names = [sim.model.geom(index).name for index in range(sim.model.ngeom)]
    return {'bag': bag_path, 'world': world_path, 'robot': robot_path, 'geom_ids': geom_ids, 'labels': sim.labels,
            'geom_names': geom_names}


def open_bag(sim, path):
    """(the robot's message builder, a bag at ``path`` with its topics and latched messages written)."""
    messages = RobotMessages(sim.robots[0], '', True, sim.labels)
    bag = BagWriter(str(path))
    for topic in messages.topics:
        if topic.name != 'sim/status':
            bag.add_topic(f'/{topic.name}', topic.type)
    for name, message in messages.latched():
        bag.write(f'/{name}', 0, serialize_message(message))
    return messages, bag


def write_event(bag, messages, event) -> None:
    """One simulator event's messages into the bag (joint states as two publishers send them)."""
    for name, message in messages.build(event.channel, event.reading, event.reading.stamp):
        data = message if type(message) is bytes else serialize_message(message)  # bytes: serialized already
        if name == 'joint_states':
            for part in _two_publishers(data):
                bag.write('/joint_states', event.reading.stamp, part)
            continue
        bag.write(f'/{name}', event.reading.stamp, data)


def _two_publishers(data: bytes) -> list[bytes]:
    """One /joint_states message as two publishers send it on a robot with firmware in the loop: the wheels
    (the motor bridge) and the arm (the simulator), each a subset, the wheels first."""
    message = deserialize_message(data, JointState)
    parts = []
    for wheels in (True, False):
        keep = [i for i, name in enumerate(message.name) if ('wheel' in name) == wheels]
        parts.append(serialize_message(JointState(
            header=message.header, name=[message.name[i] for i in keep],
            position=[message.position[i] for i in keep], velocity=[message.velocity[i] for i in keep],
            effort=[message.effort[i] for i in keep])))
    return parts


def robotsim(*args: str, env: dict | None = None, timeout: float = RENDER_TIMEOUT) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, '-m', 'robotsim.cli', *args], capture_output=True, text=True,
                          timeout=timeout, env={**os.environ, **(env or {})})


@pytest.fixture(scope='module')
def cycles_render(recording, tmp_path_factory):
    out = tmp_path_factory.mktemp('render_cycles')
    completed = robotsim('render', str(recording['bag']), '--world', str(recording['world']), '--robot',
                         str(recording['robot']), '--out', str(out), '--samples', '4', '--every', '2', '--compare')
    assert completed.returncode == 0, completed.stderr
    return out, json.loads((out / 'render.json').read_text()), completed.stderr


# ---------------------------------------------------------------- without Blender


def test_the_recording_holds_what_the_renderer_reads(recording):
    read = read_recording(recording['bag'], 'camera')
    assert len(read.frame_stamps) == round(DURATION * 10) + 1
    assert read.labels == recording['labels']
    assert (read.intrinsics.width, read.intrinsics.height) == (WIDTH, HEIGHT)
    # /joint_states came from two publishers (wheels, arm), merged by joint name.
    assert any('wheel' in name for name in read.joints.names) and any('arm' in name for name in read.joints.names)
    seen = np.unique(np.concatenate([g.ravel() for g in recording['geom_ids'].values()]))
    assert len(seen) >= 8
    assert {'rock', 'bumps'} <= {recording['geom_names'][g] for g in seen if g >= 0}  # Blender draws them too


def test_the_scene_camera_is_the_simulators_camera(recording):
    """The Blender camera pose (from the recorded ground truth and joint states through the
    description's kinematics) equals MuJoCo's camera at each frame: position and axes."""
    read = read_recording(recording['bag'], 'camera')
    world, robot = load_world(str(recording['world'])), load_robot(str(recording['robot']))
    description = build_description(read, world, robot, read.frame_stamps, None, warn=lambda text: None)
    sim = Simulation(world, [RobotPlacement(robot)], SimOptions(seed=0, odom_rate=50.0, joint_state_rate=50.0))
    import mujoco
    camera = sim.model.camera('camera').id
    sim.command_base(0, 0.25, 0.6)
    sim.command_arm(0, ['arm_base_joint', 'arm_shoulder_joint', 'arm_elbow_joint'],
                    [(0.3, (0.4, -0.3, 0.6)), (0.6, (-0.3, 0.2, 0.9))])
    checked = 0
    while sim.time_ns <= round(DURATION * 1e9):
        for event in sim.step():
            if event.channel == 'camera':
                index = int(np.searchsorted(read.frame_stamps, event.reading.stamp))
                expected = np.empty(4)
                mujoco.mju_mat2Quat(expected, sim.data.cam_xmat[camera])
                got = description.arrays['camera_quaternions'][index]
                assert np.allclose(description.arrays['camera_positions'][index], sim.data.cam_xpos[camera], atol=1e-9)
                assert min(np.abs(got - expected).max(), np.abs(got + expected).max()) < 1e-9
                checked += 1
        sim.command_base(0, 0.25, 0.6)
    sim.close()  # its renderer too
    assert checked == len(read.frame_stamps)


def test_interpolated_pose_between_ground_truth_samples(recording):
    read = read_recording(recording['bag'], 'camera')
    middle = (read.truth_stamps[10] + read.truth_stamps[11]) // 2
    position, quaternion = interpolate_pose(read, int(middle))
    assert np.allclose(position, (read.truth_positions[10] + read.truth_positions[11]) / 2)
    assert abs(np.linalg.norm(quaternion) - 1) < 1e-12
    exact_position, _ = interpolate_pose(read, int(read.truth_stamps[7]))
    assert np.array_equal(exact_position, read.truth_positions[7])


def test_variety_is_drawn_from_the_seed_only(recording):
    read = read_recording(recording['bag'], 'camera')
    world, robot = load_world(str(recording['world'])), load_robot(str(recording['robot']))
    stamps = read.frame_stamps[:1]
    first = build_description(read, world, robot, stamps, 42, warn=lambda text: None).document['variety']
    again = build_description(read, world, robot, stamps, 42, warn=lambda text: None).document['variety']
    other = build_description(read, world, robot, stamps, 43, warn=lambda text: None).document['variety']
    assert first == again
    assert first['materials'] != other['materials'] and first['lighting'] != other['lighting']
    assert draw_variety(7, [], {'direction': [0, 0, -1]}) == draw_variety(7, [], {'direction': [0, 0, -1]})


def test_comparison_measures():
    ids = np.zeros((6, 8), dtype=np.int32)
    ids[2:4, 3:6] = 5
    edge = edges(ids)
    assert edge[2, 3] and edge[1, 3] and not edge[0, 0] and not edge[5, 7]
    assert lineart_agreement(edge.astype(float), ids) == {'line_pixels': int(edge.sum()),
                                                           'edge_pixels': int(edge.sum()),
                                                           'edge_recall': 1.0, 'line_precision': 1.0}
    assert lineart_agreement(np.zeros((6, 8)), ids)['edge_recall'] == 0.0
    assert dilate(np.eye(3, dtype=bool), 1).all()
    depth = np.full((2, 2), 2.0, dtype=np.float32)
    other = depth + np.array([[0.0, 0.005], [0.02, np.inf]], dtype=np.float32)
    result = depth_agreement(depth, other)
    assert result['both_hit'] == 3 and result['within_tolerance'] == pytest.approx(2 / 3)
    assert result['one_hit_only'] == 0.25
    assert segmentation_iou(ids, ids) == {0: 1.0, 5: 1.0}


def test_bad_input_is_one_line(recording, tmp_path):
    cases = [
        (['render', str(recording['bag']), '--out', str(tmp_path / 'a')],
         'no /sim/scenario in the bag and no world.yaml beside it'),
        (['render', str(recording['bag']), '--world', str(recording['world']), '--robot', str(recording['robot']),
          '--out', str(tmp_path / 'b'), '--passes', 'rgb,normals'], '--passes: expected'),
        (['render', str(recording['bag']), '--world', str(recording['world']), '--robot', str(recording['robot']),
          '--out', str(tmp_path / 'c'), '--camera', 'front'], '--camera front'),
        (['render', str(tmp_path / 'nothing'), '--out', str(tmp_path / 'd')], 'expected a rosbag2 bag folder'),
    ]
    for arguments, expected in cases:
        completed = robotsim(*arguments, timeout=120)
        assert completed.returncode == 2, completed.stderr
        lines = completed.stderr.strip().splitlines()
        assert len(lines) == 1 and expected in lines[0], completed.stderr


def test_missing_blender_names_the_install_command(recording, tmp_path):
    completed = robotsim('render', str(recording['bag']), '--world', str(recording['world']), '--robot',
                         str(recording['robot']), '--out', str(tmp_path / 'out'), '--no-install',
                         env={'ROBOTSIM_BPY_ENV': str(tmp_path / 'no-bpy-here')}, timeout=120)
    assert completed.returncode == 2
    lines = completed.stderr.strip().splitlines()
    assert len(lines) == 1 and environment.SETUP_COMMAND in lines[0], completed.stderr


# ---------------------------------------------------------------- with Blender (installed on first use)


def test_cycles_depth_matches_the_simulator(cycles_render):
    _, document, _ = cycles_render
    frames = document['comparison']['frames']
    assert len(frames) == 4
    for frame in frames:
        assert frame['depth']['both_hit'] > 0.9 * WIDTH * HEIGHT
        assert frame['depth']['within_tolerance'] >= 0.99, frame
        assert frame['depth']['one_hit_only'] <= 0.01, frame


def test_cycles_segmentation_matches_the_simulator(cycles_render, recording):
    out, document, _ = cycles_render
    assert json.loads((out / 'labels.json').read_text()) == {str(k): v for k, v in recording['labels'].items()}
    stamps = {frame['stamp_ns'] for frame in document['frames']}
    simulator = read_images(recording['bag'], '/camera/segmentation/image_raw', stamps)
    seen = set()
    for frame, row in zip(document['frames'], document['comparison']['frames']):
        counts = dict(zip(*np.unique(simulator[frame['stamp_ns']], return_counts=True)))
        for label, iou in row['segmentation_iou'].items():
            if counts.get(int(label), 0) >= 30:
                seen.add(recording['labels'].get(int(label), 'background'))
                assert iou >= 0.97, (frame['index'], label, row['segmentation_iou'])
    assert {'rover', 'world', 'crate', 'pillar', 'block', 'ramp'} <= seen


def test_intrinsics_are_identical(cycles_render, recording):
    _, document, _ = cycles_render
    read = read_recording(recording['bag'], 'camera')
    for name in ('fx', 'fy', 'cx', 'cy'):
        assert document['camera'][name] == getattr(read.intrinsics, name)
        assert abs(document['intrinsics_read_back'][name] - getattr(read.intrinsics, name)) <= 1e-4


def test_lineart_lies_on_the_segmentation_edges(cycles_render, recording):
    out, document, _ = cycles_render
    from robotsim_learning.render.cli import read_grey
    stamps = {frame['stamp_ns'] for frame in document['frames']}
    simulator = read_images(recording['bag'], '/camera/segmentation/image_raw', stamps)
    for frame in document['frames']:
        coverage = read_grey(out / frame['lineart']) / 255.0
        entity_ids = simulator[frame['stamp_ns']]
        result = lineart_agreement(coverage, entity_ids, recording['geom_ids'][frame['stamp_ns']])
        assert result['line_pixels'] > 0.5 * result['edge_pixels'], result
        assert result['edge_recall'] >= 0.95, (frame['index'], result)
        assert result['line_precision'] >= 0.95, (frame['index'], result)


def test_rgb_and_progress(cycles_render):
    out, document, stderr = cycles_render
    from PIL import Image
    for frame in document['frames']:
        with Image.open(out / frame['rgb']) as image:
            assert image.size == (WIDTH, HEIGHT) and image.mode == 'RGB'
            assert np.asarray(image).std() > 10  # a scene, not a blank frame
    assert 'frame 4/4' in stderr and 'ETA' in stderr
    assert document['bpy'].startswith(environment.BPY_VERSION)


@pytest.mark.parametrize('engine', ['workbench', 'eevee'])
def test_other_engines_render_rgb(engine, recording, cycles_render, tmp_path):
    """One frame of RGB per rasterising engine (they need OpenGL: EGL on llvmpipe here), with the
    seeded domain variety on: the same seed gives the same description."""
    completed = robotsim('render', str(recording['bag']), '--world', str(recording['world']), '--robot',
                         str(recording['robot']), '--out', str(tmp_path), '--engine', engine, '--passes', 'rgb',
                         '--samples', '1', '--limit', '1', '--variety', '--seed', '5')
    assert completed.returncode == 0, completed.stderr
    document = json.loads((tmp_path / 'render.json').read_text())
    assert document['engine'] == engine and document['variety']['seed'] == 5
    from PIL import Image
    with Image.open(tmp_path / document['frames'][0]['rgb']) as image:
        assert image.size == (WIDTH, HEIGHT) and np.asarray(image).std() > 10


def test_off_centre_and_non_square_intrinsics_are_kept(recording, cycles_render, tmp_path):
    """Blender's camera for any pinhole K (principal point off centre, fx != fy, both ways round),
    read back through Blender's own projection matrix."""
    from robotsim_learning.render.scene_description import write_description
    read = read_recording(recording['bag'], 'camera')
    world, robot = load_world(str(recording['world'])), load_robot(str(recording['robot']))
    description = build_description(read, world, robot, read.frame_stamps[:1], None, warn=lambda text: None)
    python = environment.ensure_environment(install=True)
    for index, k in enumerate([{'fx': 70.25, 'fy': 61.5, 'cx': 43.75, 'cy': 27.125},
                               {'fx': 50.0, 'fy': 58.0, 'cx': 36.0, 'cy': 31.5}]):
        description.document['camera'].update(k)
        folder = tmp_path / str(index)
        scene, arrays = write_description(description, folder)
        request = folder / 'request.json'
        request.write_text(json.dumps({'scene': str(scene), 'arrays': str(arrays), 'out': str(folder),
                                       'engine': 'cycles', 'samples': 1, 'passes': [], 'intrinsics_only': True}))
        environment.run_blender(python, request, folder / 'blender.log')
        read_back = json.loads((folder / 'blender.json').read_text())['intrinsics']
        for name, value in k.items():
            assert abs(read_back[name] - value) <= 1e-4, (name, read_back, k)


PATTERN_WORLD = {
    'name': 'render_patterns', 'timestep': 0.002,
    # (its size no multiple of a repeat: the pattern starts at its corner, not at the origin)
    'floor': {'size': [6.3, 6.1], 'rgba': [0.55, 0.5, 0.45, 1], 'texture': {'pattern': 'checker', 'tile': 0.25,
                                                                               'contrast': 0.4}},
    'light': {'direction': [0.0, 0.0, -1.0], 'ambient': 0.4, 'diffuse': 0.6},
    'boxes': [{'name': 'tiled_box', 'position': [1.3, 0.3, 0.2], 'size': [0.4, 0.4, 0.4], 'yaw': 0.0,
               'rgba': [0.3, 0.5, 0.7, 1], 'texture': {'pattern': 'checker', 'tile': 0.2, 'contrast': 0.5}},
              {'name': 'gridded_box', 'position': [1.2, 1.7, 0.3], 'size': [0.6, 0.6, 0.6], 'yaw': 0.0,
               'rgba': [0.8, 0.75, 0.3, 1], 'texture': {'pattern': 'grid', 'tile': 0.3, 'contrast': 0.6}}],
    'cylinders': [{'name': 'tiled_pillar', 'position': [1.3, -0.9, 0.3], 'radius': 0.3, 'height': 0.6,
                   'rgba': [0.7, 0.4, 0.3, 1], 'texture': {'pattern': 'checker', 'tile': 0.3, 'contrast': 0.5}}],
    'spawn': {'xyz': [0.0, 0.0, 0.0], 'yaw': 0.0},
}


def _two_classes(image: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """Dark (False) or light (True) for each pixel of ``mask``: luminance above the midpoint of its 5th and 95th
    percentiles there."""
    luminance = image.astype(float) @ np.array([0.299, 0.587, 0.114])
    low, high = np.percentile(luminance[mask], [5, 95])
    return luminance > (low + high) / 2


PATTERN_VIEWS = {
    'down': ({'xyz': [1.1, 0.1, 1.2], 'rpy': [0.0, 1.5, 0.0]}, ('floor', 'tiled_box')),
    'minus_x': ({'xyz': [0.45, 0.3, 0.15], 'rpy': [0.0, 0.0, 0.0]}, ('tiled_box',)),
    'plus_x': ({'xyz': [2.15, 0.3, 0.15], 'rpy': [0.0, 0.0, 3.1416]}, ('tiled_box',)),
    'minus_y': ({'xyz': [1.3, -0.45, 0.15], 'rpy': [0.0, 0.0, 1.5708]}, ('tiled_box',)),
    'plus_y': ({'xyz': [1.3, 1.05, 0.15], 'rpy': [0.0, 0.0, -1.5708]}, ('tiled_box',)),
    'cylinder_side': ({'xyz': [0.5, -0.9, 0.25], 'rpy': [0.0, 0.3, 0.0]}, ('tiled_pillar',)),
    'cylinder_top': ({'xyz': [1.3, -0.9, 1.4], 'rpy': [0.0, 1.5, 0.0]}, ('tiled_pillar',)),
    'grid_side': ({'xyz': [0.3, 1.7, 0.3], 'rpy': [0.0, 0.0, 0.0]}, ('gridded_box',)),
    'grid_top': ({'xyz': [1.2, 1.7, 1.5], 'rpy': [0.0, 1.5, 0.0]}, ('gridded_box',)),
}
"""Camera poses on the base (at the origin, facing +x) and the surfaces each must show: the box from above and
from each side, the cylinder from its -x side and above, the gridded box from its -x side and above."""


def surface_pattern_agreement(tmp_path, pose: dict) -> dict:
    """{surface: (share of light pixels, agreement, pixels compared)} of one frame of the camera at ``pose`` on the
    base, simulator against EEVEE."""
    world_path, robot_path, bag_path = tmp_path / 'world.yaml', tmp_path / 'robot.yaml', tmp_path / 'bag'
    world_path.write_text(yaml.safe_dump(PATTERN_WORLD))
    robot = _robot_yaml()
    camera = next(s for s in robot['sensors'] if s['type'] == 'camera')
    camera.update({'pose': pose, 'images': ['rgb', 'segmentation']})
    robot_path.write_text(yaml.safe_dump(robot))
    world, model = load_world(str(world_path)), load_robot(str(robot_path))
    sim = Simulation(world, [RobotPlacement(model)], SimOptions(seed=0))
    messages, bag = open_bag(sim, bag_path)
    try:
        while sim.time_ns <= 150_000_000:
            for event in sim.step():
                write_event(bag, messages, event)
    finally:
        bag.close()
        sim.close()
    labels = {name: label for label, name in sim.labels.items()}
    out = tmp_path / 'render'
    completed = robotsim('render', str(bag_path), '--world', str(world_path), '--robot', str(robot_path), '--out',
                         str(out), '--engine', 'eevee', '--passes', 'rgb', '--samples', '1', '--limit', '1')
    assert completed.returncode == 0, completed.stderr
    document = json.loads((out / 'render.json').read_text())
    frame = document['frames'][0]
    from PIL import Image
    with Image.open(out / frame['rgb']) as image:
        blender = np.asarray(image.convert('RGB'))
    stamp = {frame['stamp_ns']}
    simulator = read_images(bag_path, '/camera/image_raw', stamp)[frame['stamp_ns']]
    segmentation = read_images(bag_path, '/camera/segmentation/image_raw', stamp)[frame['stamp_ns']]
    found = {}
    for surface in ('floor', 'tiled_box', 'tiled_pillar', 'gridded_box'):
        label = labels['world' if surface == 'floor' else surface]
        mask = segmentation == label
        if mask.sum() < 150:
            continue
        expected, drawn = _two_classes(simulator, mask), _two_classes(blender, mask)
        if surface.startswith('gridded'):  # lines 2-3 pixels wide: every pixel off the silhouette's edge counts
            inner = mask & ~dilate(edges(mask.astype(np.int32)), 1)
        else:  # away from the squares' edges
            inner = mask & ~dilate(edges(expected.astype(np.int32)), 1)
        found[surface] = (float(expected[inner].mean()), float((expected[inner] == drawn[inner]).mean()),
                          int(inner.sum()))
    return found


@pytest.mark.parametrize('view', sorted(PATTERN_VIEWS))
def test_surface_patterns_are_the_simulators(tmp_path, view):
    """A camera looking down at a chequered floor and a chequered box, and at two of the box's sides (world
    ``texture``s): EEVEE (noise-free) draws the same squares where the simulator does. Pixels are classed dark or
    light in each image by its own luminance; away from the simulator's square edges the classes agree on >= 95 %
    of each surface's pixels (a pattern of another size or phase agrees on about half or none); on the gridded box,
    whose lines are 2-3 pixels wide, on >= 90 % of all its pixels."""
    pose, surfaces = PATTERN_VIEWS[view]
    found = surface_pattern_agreement(tmp_path, pose)
    for surface in surfaces:
        assert surface in found, (view, surface, found)
        share, agreement, pixels = found[surface]
        gridded = surface.startswith('gridded')
        low, high = (0.4, 0.97) if gridded else (0.2, 0.8)
        assert low <= share <= high, (view, surface, found)  # both levels in view
        assert agreement >= (0.9 if gridded else 0.95), (view, surface, found)
