"""World YAML + robot models -> one MuJoCo model, ROS-free.

Geom groups: 0 world, 1 visual-only robot geoms, 2.. one per robot (its collision geoms), so a
robot's lidar can include everything but its own body (self-filter) and still see other robots.
With a namespace, every robot name is prefixed ``<namespace>/`` (bodies, joints, actuators...).
"""

from __future__ import annotations

import math
import os
import sys
import warnings
import xml.etree.ElementTree as ET
from dataclasses import dataclass

import mujoco
import numpy as np

from robotsim_core.description.load import parse_world, resolve_world_path  # noqa: F401 (re-exported)
from robotsim_core.description.model import RobotModel
from robotsim_core.description.world_geometry import (TERRAIN_BASE, EntityMesh, heightfield_samples, load_entity_mesh,
                                                      mass_properties)
from robotsim_core.description.world_spec import (ENTITY_KINDS, HeightfieldSpec, MeshEntitySpec, SpawnSpec, TextureSpec,
                                                  WorldSpec)
from robotsim_core.errors import DescriptionError
from robotsim_core.geometry import rpy_to_quat
from robotsim_core.viewer.gltf import PATTERN_TEXELS
from robotsim_core.description.mjcf import free_joint_name, robot_to_mjcf
from robotsim_core.sensor_kinds import sensor_kind


WORLD_GROUP = 0
HIDDEN_COLLISION_GROUP = 1
"""Group of the world's invisible contact shapes (a mesh entity's convex parts): not ray-cast (lidar sees the
mesh itself, in WORLD_GROUP) and, fully transparent, not rendered."""
FIRST_ROBOT_GROUP = 2

MAX_ROBOTS = 4  # MuJoCo has 6 geom groups usable by ray casts: 0 world, 1 visual, 2-5 robots


@dataclass
class RobotPlacement:
    model: RobotModel
    namespace: str = ''          # '' for a single robot; 'robot1' prefixes names 'robot1/...'
    spawn: SpawnSpec | None = None

    @property
    def prefix(self) -> str:
        return f'{self.namespace}/' if self.namespace else ''


def load_world(path: str) -> WorldSpec:
    """A world file, checked (robotsim_core.description.load.parse_world) and its MJCF include compiled."""
    world = parse_world(path)
    if world.include is not None:
        _check_include(world.include, path)
    return world


def mujoco_message(error: Exception) -> str:
    """MuJoCo's error text on one line (it puts the offending element on a line of its own)."""
    return ' '.join(str(error).split())


def _check_include(include: str, world_path: str) -> None:
    """The included MJCF must be a file MuJoCo compiles on its own (errors then name that file)."""
    if os.path.isdir(include):
        raise DescriptionError(world_path, 'include', f'expected an MJCF file, {include} is a directory')
    if not os.path.isfile(include):
        raise DescriptionError(world_path, 'include', f'MJCF file not found: {include}')
    try:
        root = ET.parse(include).getroot()
    except (ET.ParseError, UnicodeDecodeError) as error:
        raise DescriptionError(world_path, 'include', f'expected an MJCF (XML) file, {include} is not XML: '
                                                      f'{mujoco_message(error)}') from None
    if root.tag != 'mujoco':
        raise DescriptionError(world_path, 'include', f'expected an MJCF file with a <mujoco> root, '
                                                      f'{include} has <{root.tag}>')
    try:
        mujoco.MjModel.from_xml_path(include)
    except ValueError as error:
        raise DescriptionError(world_path, 'include', f'expected an MJCF file MuJoCo compiles, {include}: '
                                                      f'{mujoco_message(error)}') from None


_UNPREFIXED_ATTACH = 'Attaching a spec with an empty prefix'
"""MuJoCo's warning for a robot attached without a name prefix (a single robot keeps its names):
the names are unique in a validated scene (_check_robots_fit_world), so it is dropped."""


def _mujoco_warning_to_stderr(text: str) -> None:
    """MuJoCo's default warning handler prints to stdout and appends to MUJOCO_LOG.TXT in whatever
    directory the process runs in; instabilities are reported by the simulation itself
    (``Simulation.take_instabilities``)."""
    if not text.startswith(_UNPREFIXED_ATTACH):
        print(f'mujoco: warning: {text.strip()}', file=sys.stderr, flush=True)


def compile_scene(spec: mujoco.MjSpec, world: WorldSpec, robots: list['RobotPlacement']) -> mujoco.MjModel:
    """The MuJoCo model of a scene from :func:`build_scene`. Validation of the world and robot files
    should leave nothing for MuJoCo to refuse; if it still does (e.g. a name in an included MJCF
    file), say so on one line."""
    try:
        with warnings.catch_warnings():
            warnings.filterwarnings('ignore', message=_UNPREFIXED_ATTACH)
            return spec.compile()
    except ValueError as error:
        raise _refused(world, robots, error) from None


def _refused(world: WorldSpec, robots: list['RobotPlacement'], error: ValueError) -> DescriptionError:
    names = ', '.join(placement.model.source for placement in robots)
    return DescriptionError(world.source or world.name, 'include' if world.include else '(scene)',
                            f'expected a world and robots ({names}) that MuJoCo compiles together: '
                            f'{mujoco_message(error)}')


def _num(v: float) -> str:
    return repr(float(v))


def _vec(values) -> str:
    return ' '.join(_num(v) for v in values)


def _yaw_pitch_quat(yaw: float, pitch: float = 0.0) -> tuple[float, float, float, float]:
    cy, sy, cp, sp = math.cos(yaw / 2), math.sin(yaw / 2), math.cos(pitch / 2), math.sin(pitch / 2)
    return (cy * cp, -sy * sp, cy * sp, sy * cp)  # q_yaw * q_pitch


def world_element(world: WorldSpec, offscreen_size: tuple[int, int], near: float, far: float) -> ET.Element:
    root = ET.Element('mujoco', model=world.name)
    ET.SubElement(root, 'compiler', angle='radian', autolimits='true', inertiafromgeom='false')
    option = ET.SubElement(root, 'option', timestep=_num(world.timestep), integrator='implicitfast')
    if world.contact.cone != 'pyramidal':  # MuJoCo's defaults are left out: other worlds' MJCF is unchanged
        option.set('cone', world.contact.cone)
    if world.contact.impratio != 1.0:
        option.set('impratio', _num(world.contact.impratio))
    visual = ET.SubElement(root, 'visual')
    ET.SubElement(visual, 'global', offwidth=str(offscreen_size[0]), offheight=str(offscreen_size[1]))
    # Clip planes are fractions of the model extent; scene.py sets extent explicitly so they are metres.
    ET.SubElement(visual, 'map', znear=_num(near), zfar=_num(far))
    ET.SubElement(visual, 'headlight', ambient=_vec([world.light.ambient] * 3), diffuse='0 0 0', specular='0 0 0')
    ET.SubElement(visual, 'quality', shadowsize='1024' if world.light.shadows else '0')
    ET.SubElement(root, 'statistic', extent='1', center='0 0 0')
    asset = ET.SubElement(root, 'asset')
    floor_texture = world.floor.texture
    # On a plane with texuniform MuJoCo draws one repeat of the texture every 2 / texrepeat metres (measured:
    # tests/test_world_textures.py): a chequer's or speckle's repeat is 2 x 2 tiles, a grid's one tile.
    size, per_tile = _texture_layout(floor_texture)
    ET.SubElement(asset, 'texture', name='floor_grid', type='2d', width=size, height=size,
                  **_texture_pattern(floor_texture, world.floor.rgba[:3]))
    ET.SubElement(asset, 'material', name='floor_material', texture='floor_grid',
                  texrepeat=_vec([per_tile / floor_texture.tile] * 2), texuniform='true',
                  reflectance='0.2' if world.light.reflections else '0')
    body = ET.SubElement(root, 'worldbody')
    ET.SubElement(body, 'light', name='sun', directional='true', dir=_vec(world.light.direction), pos='0 0 5',
                  diffuse=_vec([world.light.diffuse] * 3), castshadow='true' if world.light.shadows else 'false')
    ET.SubElement(body, 'geom', name='floor', type='plane', size=_vec((world.floor.size[0] / 2, world.floor.size[1] / 2, 0.1)),
                  material='floor_material', friction=_vec((world.floor.friction, 0.005, 0.0001)), group=str(WORLD_GROUP))
    for index, wall in enumerate(world.walls):
        (x0, y0), (x1, y1) = wall.start, wall.end
        length = math.hypot(x1 - x0, y1 - y0)
        ET.SubElement(body, 'geom', name=f'wall_{index}', type='box', group=str(WORLD_GROUP),
                      **_surface(asset, f'wall_{index}', wall.rgba, wall.texture, (length, wall.height)),
                      size=_vec((length / 2 + wall.thickness / 2, wall.thickness / 2, wall.height / 2)),
                      pos=_vec(((x0 + x1) / 2, (y0 + y1) / 2, wall.height / 2)),
                      quat=_vec(_yaw_pitch_quat(math.atan2(y1 - y0, x1 - x0))))
    for box in world.boxes:
        _add_entity(body, box.name, box.position, _yaw_pitch_quat(box.yaw, box.pitch), box.mass,
                    _surface(asset, box.name, box.rgba, box.texture, box.size),
                    {'type': 'box', 'size': _vec([s / 2 for s in box.size])},
                    _box_inertia(box.mass, box.size))
    for cylinder in world.cylinders:
        _add_entity(body, cylinder.name, cylinder.position, (1.0, 0.0, 0.0, 0.0), cylinder.mass,
                    _surface(asset, cylinder.name, cylinder.rgba, cylinder.texture,
                             (2 * cylinder.radius, cylinder.height)),
                    {'type': 'cylinder', 'size': _vec((cylinder.radius, cylinder.height / 2))},
                    _cylinder_inertia(cylinder.mass, cylinder.radius, cylinder.height))
    for sphere in world.spheres:
        inertia = 0.4 * sphere.mass * sphere.radius ** 2
        _add_entity(body, sphere.name, sphere.position, (1.0, 0.0, 0.0, 0.0), sphere.mass, {'rgba': _vec(sphere.rgba)},
                    {'type': 'sphere', 'size': _num(sphere.radius)}, (inertia, inertia, inertia))
    for index, entity in enumerate(world.meshes):
        _add_mesh_entity(asset, body, entity, load_entity_mesh(entity, world.source or world.name, f'meshes[{index}]'))
    for index, terrain in enumerate(world.heightfields):
        _add_heightfield(asset, body, terrain, heightfield_samples(terrain, f'heightfields[{index}]'))
    if world.include:
        included = ET.parse(world.include).getroot()
        include_dir = os.path.dirname(world.include)
        for element in included.iter():
            # Asset files are relative to the included file, not to the simulator's working directory.
            if 'file' in element.attrib and not os.path.isabs(element.get('file')):
                element.set('file', os.path.join(include_dir, element.get('file')))
        for section in included:
            target = root.find(section.tag)
            if target is None:
                target = ET.SubElement(root, section.tag)
            for child in section:
                target.append(child)
    return root


def _box_inertia(mass, size):
    x, y, z = size
    return (mass * (y * y + z * z) / 12, mass * (x * x + z * z) / 12, mass * (x * x + y * y) / 12)


def _cylinder_inertia(mass, radius, height):
    side = mass * (3 * radius * radius + height * height) / 12
    return (side, side, mass * radius * radius / 2)


def _texture_layout(texture: TextureSpec) -> tuple[str, int]:
    """(texels across MuJoCo's texture, its repeats per 2 tiles). A checker: 256 texels, its 2 x 2 squares one
    repeat. A grid: MuJoCo's edge mark darkens a texture's border texels, so a repeat of one tile, 16 texels, draws
    a line a texel either side of every repeat's edge. A speckle: 16 texels a repeat of 2 tiles. Lines and dots
    tile / 8 wide, as the exports' images (robotsim_core.viewer.gltf.texture_image)."""
    if texture.pattern == 'checker':
        return '256', 1
    return str(PATTERN_TEXELS), 2 if texture.pattern == 'grid' else 1


def _texture_pattern(texture: TextureSpec, rgb) -> dict[str, str]:
    """MuJoCo's built-in texture attributes drawing ``texture`` in ``rgb`` and its darker second colour."""
    dark = _vec([c * (1 - texture.contrast) for c in rgb])
    if texture.pattern == 'checker':
        return {'builtin': 'checker', 'rgb1': _vec(rgb), 'rgb2': dark}
    marks = {'grid': {'mark': 'edge'}, 'speckle': {'mark': 'random', 'random': '0.3'}}.get(texture.pattern, {})
    return {'builtin': 'flat', 'rgb1': _vec(rgb), 'rgb2': _vec(rgb), **({'markrgb': dark, **marks} if marks else {})}


def _surface(asset, name: str, rgba, texture: TextureSpec, extents) -> dict[str, str]:
    """The geom attributes colouring a wall, box or cylinder: its ``rgba`` alone when flat, else a material whose
    colour is ``rgba`` over a white-and-grey texture of the pattern (so the material carries the colour, as the
    Blender scene reads it), repeated about ``max(extents) / (2 tile)`` times across each face."""
    if texture.pattern == 'flat':
        return {'rgba': _vec(rgba)}
    repeat = max(1, round(max(extents) / (2 * texture.tile)))
    size, per_repeat = _texture_layout(texture)
    ET.SubElement(asset, 'texture', name=_asset_name(name, 'texture'), type='2d', width=size, height=size,
                  **_texture_pattern(texture, (1.0, 1.0, 1.0)))
    ET.SubElement(asset, 'material', name=_asset_name(name, 'material'), texture=_asset_name(name, 'texture'),
                  texrepeat=_vec((repeat * per_repeat,) * 2), rgba=_vec(rgba))
    return {'material': _asset_name(name, 'material')}


def _add_entity(parent, name, position, quat, mass, colour: dict[str, str], shape, inertia):
    attributes = {'group': str(WORLD_GROUP), **colour, **shape}
    if mass > 0:
        entity = ET.SubElement(parent, 'body', name=name, pos=_vec(position), quat=_vec(quat))
        ET.SubElement(entity, 'freejoint', name=free_joint_name(name))
        ET.SubElement(entity, 'inertial', pos='0 0 0', mass=_num(mass), diaginertia=_vec(inertia))
        ET.SubElement(entity, 'geom', name=name, **attributes)
    else:
        ET.SubElement(parent, 'geom', name=name, pos=_vec(position), quat=_vec(quat), **attributes)


def _asset_name(entity: str, what: str) -> str:
    return f'robotsim_world/{entity}/{what}'  # apart from robot assets (a single robot keeps its own names)


def _numbers(values: np.ndarray) -> str:
    return ' '.join(repr(float(v)) for v in np.ravel(values))


def _add_mesh_entity(asset, parent, entity: MeshEntitySpec, mesh: EntityMesh) -> None:
    """A mesh entity as a body of its own (fixed, or free with its mesh's inertia): the mesh itself in the
    world group, not colliding (what sensors see), and its convex parts hidden (what collides)."""
    ET.SubElement(asset, 'mesh', name=_asset_name(entity.name, 'visual'), vertex=_numbers(mesh.vertices),
                  face=' '.join(str(int(v)) for v in mesh.faces.ravel()), inertia='shell')
    holder = ET.SubElement(parent, 'body', name=entity.name, pos=_vec(entity.position), quat=_vec(rpy_to_quat(entity.rpy)))
    if entity.mass > 0:
        centre, inertia = mass_properties(mesh, entity.mass)
        ET.SubElement(holder, 'freejoint', name=free_joint_name(entity.name))
        ET.SubElement(holder, 'inertial', pos=_vec(centre), mass=_num(entity.mass),
                      fullinertia=_vec((inertia[0, 0], inertia[1, 1], inertia[2, 2],
                                        inertia[0, 1], inertia[0, 2], inertia[1, 2])))
    ET.SubElement(holder, 'geom', name=entity.name, type='mesh', mesh=_asset_name(entity.name, 'visual'),
                  group=str(WORLD_GROUP), contype='0', conaffinity='0', rgba=_vec(entity.rgba))
    for index, (vertices, faces) in enumerate(mesh.parts):
        part = _asset_name(entity.name, f'part{index}')
        ET.SubElement(asset, 'mesh', name=part, vertex=_numbers(vertices), face=' '.join(str(int(v)) for v in faces.ravel()))
        ET.SubElement(holder, 'geom', type='mesh', mesh=part, group=str(HIDDEN_COLLISION_GROUP), rgba='0 0 0 0')


def _add_heightfield(asset, parent, terrain: HeightfieldSpec, samples: np.ndarray) -> None:
    """A heightfield as a static geom: MuJoCo scales its normalised samples by their range."""
    rise = float(samples.max())
    rows, columns = samples.shape
    ET.SubElement(asset, 'hfield', name=_asset_name(terrain.name, 'terrain'), nrow=str(rows), ncol=str(columns),
                  size=_vec((terrain.size[0] / 2, terrain.size[1] / 2, rise, TERRAIN_BASE)),
                  elevation=_numbers(np.flipud(samples) / rise))  # MJCF's first row is the +y edge
    ET.SubElement(parent, 'geom', name=terrain.name, type='hfield', hfield=_asset_name(terrain.name, 'terrain'),
                  pos=_vec(terrain.position), group=str(WORLD_GROUP), rgba=_vec(terrain.rgba),
                  friction=_vec((terrain.friction, 0.005, 0.0001)))


def _check_robots_fit_world(world: WorldSpec, robots: list[RobotPlacement]) -> None:
    """What neither file can check alone: names shared by an entity and a robot, sensors faster
    than the physics (one reading per step at most)."""
    robot_names = {}
    for placement in robots:
        model = placement.model
        for name in [model.name, placement.namespace] + ([] if placement.namespace else list(model.tree.links)):
            robot_names.setdefault(name, model)
    for kind in ENTITY_KINDS:
        for index, entity in enumerate(getattr(world, kind)):
            if entity.name in robot_names:
                model = robot_names[entity.name]
                raise DescriptionError(world.source or world.name, f'{kind}[{index}].name',
                                       f'expected a name other than {entity.name!r}, which names robot {model.name} '
                                       f'or one of its links ({model.source})')
    physics_rate = 1.0 / world.timestep
    for placement in robots:
        for index, sensor in enumerate(placement.model.sensors):
            if sensor.spec.rate > physics_rate * (1 + 1e-9):
                raise DescriptionError(placement.model.source, f'sensors[{index}].rate',
                                       f'expected at most {physics_rate:g} Hz, the physics rate of world {world.name} '
                                       f'(timestep {world.timestep:g} s): one reading per step at most; '
                                       f'got {sensor.spec.rate:g}')


def build_scene(world: WorldSpec, robots: list[RobotPlacement]) -> mujoco.MjSpec:
    """The world with every robot placed at its spawn pose, as a MuJoCo model spec (compile it with
    :func:`compile_scene`). Each robot's MJCF is attached under its name prefix by MuJoCo's
    model-editing API, which renames every element of it (bodies, joints, actuators, sensors,
    assets, exclusions) and appends it in the order MJCF sections would merge."""
    if not 1 <= len(robots) <= MAX_ROBOTS:
        raise ValueError(f'expected 1 to {MAX_ROBOTS} robots, got {len(robots)}')
    _check_robots_fit_world(world, robots)
    mujoco.set_mju_user_warning(_mujoco_warning_to_stderr)  # for attaching and compiling, and the simulation after
    # One offscreen buffer and depth range serve every rendering sensor (cameras): sized to the largest.
    cameras = [s.spec for r in robots for s in r.model.sensors if sensor_kind(s.type).renders]
    size = (max([c.width for c in cameras], default=64), max([c.height for c in cameras], default=64))
    near = min([c.near for c in cameras], default=0.05)
    far = max([c.far for c in cameras], default=50.0)
    try:  # an included MJCF file may clash with the world (a second 'floor')
        scene = mujoco.MjSpec.from_string(ET.tostring(world_element(world, size, near, far), encoding='unicode'))
    except ValueError as error:
        raise _refused(world, robots, error) from None
    for index, placement in enumerate(robots):
        robot = mujoco.MjSpec.from_string(robot_to_mjcf(placement.model, world.timestep, FIRST_ROBOT_GROUP + index))
        spawn = placement.spawn or world.spawn
        robot_root = robot.worldbody.first_body()
        if placement.model.fixed_base:
            # Welded to the world: the mount pose (e.g. on a table) is given in the spawn frame.
            mount = placement.model.mount
            offset = np.array(mount.xyz, dtype=float)
            rotated = [math.cos(spawn.yaw) * offset[0] - math.sin(spawn.yaw) * offset[1],
                       math.sin(spawn.yaw) * offset[0] + math.cos(spawn.yaw) * offset[1], offset[2]]
            robot_root.pos = np.asarray(spawn.xyz, dtype=float) + rotated
            mount_quat = np.empty(4)
            mujoco.mju_mulQuat(mount_quat, np.asarray(_yaw_pitch_quat(spawn.yaw), dtype=float), rpy_to_quat(mount.rpy))
            robot_root.quat = mount_quat
        else:
            # Drop the robot 1 mm so that tyres start in light contact rather than interpenetrating; a legged robot's
            # root starts at its mount height (lying in its crouch, feet and belly on the floor).
            robot_root.pos = (spawn.xyz[0], spawn.xyz[1], spawn.xyz[2] + 0.001 + placement.model.mount.xyz[2])
            robot_root.quat = _yaw_pitch_quat(spawn.yaw)
        scene.attach(robot, prefix=placement.prefix, frame=scene.worldbody.add_frame())
    return scene
