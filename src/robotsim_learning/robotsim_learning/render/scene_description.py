"""Recording + robot and world descriptions -> the scene description the Blender side builds (ROS-free).

Geometry is what the simulator's camera draws: the world and robot are composed into a MuJoCo model by the
simulator's own scene builder (:class:`robotsim_sim.compiled_scene.CompiledScene`, what a
:class:`~robotsim_sim.simulation.Simulation` starts from, without its controllers, sensors or firmware), and
every geom MuJoCo's scene update puts in front of a camera (all geom groups, as
:class:`robotsim_sensors.camera.CameraRenderer` shows them) becomes one Blender object with its shape, size,
colour and segmentation label (the simulator's entity ids, from the same code that labels its segmentation
images). Surface patterns (a world ``texture``: the floor's chequer, patterned walls, boxes and cylinders) are the
image the glTF and USD exports carry (robotsim_core.viewer.gltf.texture_image) in the surface's two colours.

Animation: for each rendered frame (a recorded ``CameraInfo`` stamp), the robot's root link is put
at its recorded true pose (``/sim/ground_truth``, interpolated to the frame's stamp) and its joints at
the recorded positions (``/joint_states``, interpolated likewise); MuJoCo's forward kinematics then
gives every geom's world pose and the camera's optical frame. The Blender camera sits at the optical
frame turned half a turn about its x axis (ROS optical: z forward, y down; Blender: looks along -z,
y up). Free world bodies (boxes with a mass) are not in a recording: they stay at their initial pose
(said once on stderr).

Domain variety (``variety``): colour jitter, roughness, metallic, procedural textures and lighting
drawn from ``numpy.random.default_rng(SeedSequence([seed, VARIETY_STREAM]))`` in geom order, so a
re-render with the same seed draws the same values; they are written into the description (and so
into ``render.json``), never drawn on the Blender side.
"""

from __future__ import annotations

import colorsys
import json
import math
import sys
from dataclasses import dataclass
from pathlib import Path

import mujoco
import numpy as np

from robotsim_core.description.world_geometry import heightfield_samples, heightfield_triangles
from robotsim_core.viewer.gltf import srgb_to_linear, texture_image

from .recording import Recording, RecordingError, interpolate_pose, interpolate_series

VARIETY_STREAM = 0x62707931
"""Second entry of the variety stream's SeedSequence: the renderer's own stream of an episode's seed."""
GEOM_TYPES = {int(mujoco.mjtGeom.mjGEOM_PLANE): 'plane', int(mujoco.mjtGeom.mjGEOM_SPHERE): 'sphere',
              int(mujoco.mjtGeom.mjGEOM_CAPSULE): 'capsule', int(mujoco.mjtGeom.mjGEOM_ELLIPSOID): 'ellipsoid',
              int(mujoco.mjtGeom.mjGEOM_CYLINDER): 'cylinder', int(mujoco.mjtGeom.mjGEOM_BOX): 'box',
              int(mujoco.mjtGeom.mjGEOM_MESH): 'mesh', int(mujoco.mjtGeom.mjGEOM_HFIELD): 'mesh'}
WORLD_TEXTURES = ('plain', 'noise', 'wave', 'checker', 'brick')
FLOOR_TEXTURES = ('checker', 'noise', 'brick')


@dataclass
class SceneDescription:
    document: dict            # JSON: camera, geoms, lights, labels, frames' stamps, variety
    arrays: dict              # NPZ: per-frame poses, mesh vertices and faces


def _opticalto_blender(quaternion: np.ndarray) -> np.ndarray:
    """Orientation of a Blender camera at an optical frame: q_optical * (half turn about x)."""
    out = np.empty(4)
    mujoco.mju_mulQuat(out, quaternion, np.array([0.0, 1.0, 0.0, 0.0]))
    return out


def drawn_geoms(model: mujoco.MjModel, data: mujoco.MjData) -> list[int]:
    """The geoms MuJoCo's scene update hands the camera renderer, every geom group visible (as
    robotsim's CameraRenderer sets it), in model order. Decorations (sensor sites, 5 mm spheres
    inside the robot's parts) are not entities and are left out."""
    option = mujoco.MjvOption()
    option.geomgroup[:] = 1
    scene = mujoco.MjvScene(model, maxgeom=max(1000, 4 * model.ngeom))
    camera = mujoco.MjvCamera()
    mujoco.mj_forward(model, data)
    mujoco.mjv_updateScene(model, data, option, None, camera, mujoco.mjtCatBit.mjCAT_ALL, scene)
    ids = {int(scene.geoms[i].objid) for i in range(scene.ngeom) if scene.geoms[i].objtype == mujoco.mjtObj.mjOBJ_GEOM}
    return sorted(ids)


def build_description(recording: Recording, world, robot, stamps: np.ndarray, variety_seed: int | None,
                      warn=None) -> SceneDescription:
    """The scene of ``recording``'s camera at ``stamps`` (ns) in ``world`` with ``robot``."""
    from robotsim_sim.compiled_scene import CompiledScene
    from robotsim_sim.scene import RobotPlacement

    warn = warn or (lambda text: print(f'robotsim render: warning: {text}', file=sys.stderr))
    scene = CompiledScene.compile(world, [RobotPlacement(robot)])  # only the scene: no controllers, sensors, firmware
    model, data = scene.model, mujoco.MjData(scene.model)
    binding = scene.bindings[0]
    joint_names = [joint.name for joint in robot.tree.moving_joints()]
    joint_qpos = [binding.qpos[name] for name in joint_names]
    sensor = next((s for s in robot.sensors if s.type == 'camera' and s.name == recording.camera), None)
    if sensor is None:
        cameras = [s.name for s in robot.sensors if s.type == 'camera']
        raise RecordingError(f'--camera {recording.camera}: robot {robot.name} ({robot.source}) has no camera of '
                             f'that name; expected one of {", ".join(cameras) or "(none)"}')
    optical = recording.intrinsics.frame_id
    body = mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_BODY, optical)
    if body < 0:
        raise RecordingError(f'{recording.bag}: /{recording.camera}/camera_info: header.frame_id {optical!r} is '
                             f'not a link of robot {robot.name}; expected {sensor.frame}')
    if recording.labels is not None and recording.labels != scene.labels:
        raise RecordingError(f'{recording.bag}: /{recording.camera}/segmentation/labels {recording.labels} differ '
                             f'from the labels of this world and robot {scene.labels}: expected the '
                             'world and robot the recording was made with (--world, --robot)')
    geoms = drawn_geoms(model, data)
    free_bodies = {model.body(model.jnt_bodyid[j]).name: int(model.jnt_qposadr[j]) for j in range(model.njnt)
                   if model.jnt_type[j] == mujoco.mjtJoint.mjJNT_FREE
                   and model.body_rootid[model.jnt_bodyid[j]] != binding.root_body}
    moved = {name: address for name, address in free_bodies.items() if name in recording.entities}
    unrecorded = sorted(set(free_bodies) - set(moved))
    if unrecorded:
        warn(f'free bodies {", ".join(unrecorded)} are not in the recording (/sim/entities): drawn at their '
             'initial pose')
    recorded = set(recording.joints.names)
    joints = [(qpos, name) for name, qpos in zip(joint_names, joint_qpos) if name in recorded]
    missing = [name for name in joint_names if name not in recorded]
    if missing:
        warn(f'/joint_states has no {", ".join(missing)}: held at their initial position')
    positions = np.zeros((len(stamps), len(geoms), 3))
    quaternions = np.zeros((len(stamps), len(geoms), 4))
    camera_positions = np.zeros((len(stamps), 3))
    camera_quaternions = np.zeros((len(stamps), 4))
    for index, stamp in enumerate(stamps):
        data.qpos[:] = model.qpos0
        if binding.root_qpos >= 0:
            position, quaternion = interpolate_pose(recording, int(stamp))
            data.qpos[binding.root_qpos:binding.root_qpos + 3] = position
            data.qpos[binding.root_qpos + 3:binding.root_qpos + 7] = quaternion
        for name, address in moved.items():  # the world's free bodies where the simulator had them
            position, quaternion = interpolate_series(*recording.entities[name], int(stamp))
            data.qpos[address:address + 3] = position
            data.qpos[address + 3:address + 7] = quaternion
        values = recording.joints.at(int(stamp), [name for _, name in joints]) if joints else ()
        for (qpos, _), value in zip(joints, values):
            data.qpos[qpos] = value
        mujoco.mj_kinematics(model, data)
        positions[index] = data.geom_xpos[geoms]
        for slot, geom in enumerate(geoms):
            mujoco.mju_mat2Quat(quaternions[index, slot], data.geom_xmat[geom])
        camera_positions[index] = data.xpos[body]
        camera_quaternions[index] = _opticalto_blender(data.xquat[body])
    arrays = {'stamps': np.asarray(stamps, dtype=np.int64), 'geom_positions': positions,
              'geom_quaternions': quaternions, 'camera_positions': camera_positions,
              'camera_quaternions': camera_quaternions}
    geom_entries = []
    patterns = _patterns(world)
    for geom in geoms:
        kind = GEOM_TYPES.get(int(model.geom_type[geom]))
        name = model.geom(geom).name or f'{model.body(model.geom_bodyid[geom]).name}_geom{geom}'
        if kind is None:
            warn(f'geom {name}: MuJoCo type {int(model.geom_type[geom])} is not drawn in Blender (SDF geoms '
                 'are not supported)')
            continue
        rgba = model.geom_rgba[geom]
        if name == 'floor':
            rgba = world.floor.rgba  # MuJoCo draws it with a checker texture of this colour
        elif model.geom_matid[geom] >= 0:
            rgba = model.mat_rgba[model.geom_matid[geom]]
        entry = {'slot': geoms.index(geom), 'geom': int(geom), 'name': name, 'type': kind,
                 'size': [float(v) for v in model.geom_size[geom]],
                 'rgba': [float(v) for v in rgba], 'label': int(scene.geom_labels[geom]),
                 'robot': bool(model.body_rootid[model.geom_bodyid[geom]] == binding.root_body)}
        if kind == 'mesh' and int(model.geom_type[geom]) == mujoco.mjtGeom.mjGEOM_HFIELD:
            index, terrain = next((i, t) for i, t in enumerate(world.heightfields) if t.name == name)
            vertices, faces = heightfield_triangles(terrain, heightfield_samples(terrain, f'heightfields[{index}]'))
            arrays[f'terrain{geom}_vertices'] = vertices - np.asarray(terrain.position)  # in the geom's frame
            arrays[f'terrain{geom}_faces'] = faces
            entry['mesh'] = f'terrain{geom}'
        elif kind == 'mesh':
            mesh = int(model.geom_dataid[geom])
            start, count = model.mesh_vertadr[mesh], model.mesh_vertnum[mesh]
            face_start, face_count = model.mesh_faceadr[mesh], model.mesh_facenum[mesh]
            arrays[f'mesh{mesh}_vertices'] = model.mesh_vert[start:start + count].astype(np.float64)
            arrays[f'mesh{mesh}_faces'] = model.mesh_face[face_start:face_start + face_count].astype(np.int32)
            entry['mesh'] = f'mesh{mesh}'
        entry['colour'] = [srgb_to_linear(c) for c in entry['rgba'][:3]]
        if name in patterns:
            texture, extents = patterns[name]
            key = f'pattern_{texture.pattern}_{texture.contrast:g}'
            arrays[key] = texture_image(texture.pattern, texture.contrast)
            # robotsim_sim.scene: the surface's colour and a second one `contrast` darker (in MuJoCo's colour
            # space, before the conversion to linear); on the floor one repeat (2 x 2 tiles) every 2 tile metres,
            # world-aligned; on a wall, box or cylinder `repeat` repeats across each face.
            entry['pattern'] = {
                'image': key, 'contrast': texture.contrast,
                'colours': [entry['colour'], [srgb_to_linear(c * (1 - texture.contrast)) for c in entry['rgba'][:3]]],
                'mapping': 'world' if extents is None else 'faces',
                'repeat': 1.0 / (2 * texture.tile) if extents is None else
                max(1, round(max(extents) / (2 * texture.tile)))}
        geom_entries.append(entry)
    light = world.light
    direction = np.asarray(light.direction, dtype=float)
    document = {
        'format': 'robotsim-render-scene', 'version': 1,
        'camera': {**recording.intrinsics.as_dict(), 'name': recording.camera, 'near': sensor.spec.near,
                   'far': sensor.spec.far},
        'geoms': geom_entries,
        'labels': {str(k): v for k, v in sorted(scene.labels.items())},
        'light': {'direction': list(direction / np.linalg.norm(direction)), 'diffuse': light.diffuse,
                  'ambient': light.ambient, 'shadows': light.shadows},
        'frames': len(stamps),
        'variety': None,
    }
    if variety_seed is not None:
        document['variety'] = draw_variety(variety_seed, geom_entries, document['light'])
    return SceneDescription(document, arrays)


def _patterns(world) -> dict:
    """{geom name: (the world's TextureSpec, the extents MuJoCo repeats it by; None: the floor's metric tiles)} of
    every patterned surface (robotsim_sim.scene names and sizes them so)."""
    found = {'floor': (world.floor.texture, None)}
    for index, wall in enumerate(world.walls):
        (x0, y0), (x1, y1) = wall.start, wall.end
        found[f'wall_{index}'] = (wall.texture, (math.hypot(x1 - x0, y1 - y0), wall.height))
    for box in world.boxes:
        found[box.name] = (box.texture, tuple(box.size))
    for cylinder in world.cylinders:
        found[cylinder.name] = (cylinder.texture, (2 * cylinder.radius, cylinder.height))
    return {name: value for name, value in found.items() if value[0] is not None and value[0].pattern != 'flat'}


def draw_variety(seed: int, geoms: list[dict], light: dict) -> dict:
    """Materials and lighting drawn from ``seed`` (reproducible: one stream, fixed order)."""
    rng = np.random.default_rng(np.random.SeedSequence([int(seed), VARIETY_STREAM]))

    def r(value: float) -> float:
        return round(float(value), 4)

    materials = {}
    for geom in geoms:
        hue, saturation, value = colorsys.rgb_to_hsv(*geom['rgba'][:3])
        hue = (hue + rng.uniform(-0.04, 0.04)) % 1.0
        saturation = min(1.0, saturation * rng.uniform(0.75, 1.25))
        value = min(1.0, value * rng.uniform(0.75, 1.2))
        textures = FLOOR_TEXTURES if geom['name'] == 'floor' else ('plain',) if geom['robot'] else WORLD_TEXTURES
        texture = textures[int(rng.integers(len(textures)))]
        materials[geom['name']] = {
            'colour': [r(srgb_to_linear(c)) for c in colorsys.hsv_to_rgb(hue, saturation, value)],
            'second_colour_scale': r(rng.uniform(0.55, 0.9)),
            'roughness': r(rng.uniform(0.25, 0.95)),
            'metallic': r(rng.uniform(0.4, 0.9) if rng.random() < 0.15 else 0.0),
            'texture': texture,
            'texture_scale': r(rng.uniform(2.0, 12.0)),
        }
    azimuth = math.atan2(-light['direction'][1], -light['direction'][0]) + rng.uniform(-0.6, 0.6)
    elevation = min(1.45, max(0.35, math.asin(min(1.0, -light['direction'][2])) + rng.uniform(-0.3, 0.3)))
    lighting = {
        'sun_direction': [r(-math.cos(elevation) * math.cos(azimuth)), r(-math.cos(elevation) * math.sin(azimuth)),
                          r(-math.sin(elevation))],
        'sun_strength_scale': r(rng.uniform(0.7, 1.4)),
        'sun_temperature': r(rng.uniform(3500.0, 7500.0)),       # K: warm lamp to overcast daylight
        'sun_angle': r(rng.uniform(0.01, 0.2)),                  # rad: soft or hard shadows
        'ambient_scale': r(rng.uniform(0.6, 1.4)),
    }
    return {'seed': int(seed), 'materials': materials, 'lighting': lighting}


def write_description(description: SceneDescription, folder: Path) -> tuple[Path, Path]:
    folder.mkdir(parents=True, exist_ok=True)
    document_path, arrays_path = folder / 'scene.json', folder / 'scene.npz'
    document_path.write_text(json.dumps(description.document, indent=1) + '\n')
    np.savez(arrays_path, **description.arrays)
    return document_path, arrays_path
