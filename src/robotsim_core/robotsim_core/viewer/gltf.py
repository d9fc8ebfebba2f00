"""The robot description and the world as glTF 2.0 (binary ``.glb``), written with ``trimesh``.

Layout of the node tree (what the replay page and ``robotsim describe --gltf`` rely on):

- ``ros_world`` (:data:`ROOT_NODE`): the ROS ``world`` frame. glTF is +Y up and ROS (REP 103) +Z up, so
  this one node carries the rotation -90 deg about x (ROS x, y, z -> glTF x, -z, y); everything below it
  is in ROS coordinates, metres.
- ``world_static`` (:data:`WORLD_NODE`, only with a world): ``floor``, ``wall_<n>`` and each box,
  cylinder, sphere, mesh entity and heightfield under its entity name (a heightfield as the closed solid of
  robotsim_core.description.world_geometry, the triangles MuJoCo collides with and ray-casts).
- the robot's root link, placed at the spawn pose (free base) or its mount (fixed base), then one node
  per URDF link named exactly like the link, each child link's local transform being its joint's origin
  times the joint's motion at the given positions (default: the model's initial positions), so composing
  the nodes from ``ros_world`` down is forward kinematics.
- each visual shape a child node ``<link>/visual_<i>`` (its origin) holding the mesh, coloured by the
  URDF material (grey when it gives none).

World entities with a mass move in the simulation; here they stand at their start pose. A world's MJCF
``include`` is not drawn.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

import numpy as np

from ..description.model import RobotModel, Shape
from ..geometry import homogeneous, rpy_to_matrix
from ..description.kinematics import joint_motion, resolve_mimics
from ..description.world_geometry import heightfield_samples, heightfield_triangles, load_entity_mesh

ROOT_NODE = 'ros_world'
"""The node that turns ROS +Z up into glTF +Y up; its children are in ROS coordinates."""
WORLD_NODE = 'world_static'
"""Parent node of the world's floor, walls and entities."""
SCENE_BASE = 'gltf_scene'
"""trimesh's base frame: the glTF scene itself, not a node."""
DEFAULT_RGBA = (0.7, 0.7, 0.7, 1.0)
"""Colour of a visual whose URDF gives no material."""
FLOOR_THICKNESS = 0.01
"""The floor is drawn as a slab this thick (m) whose top face is z = 0."""
CYLINDER_SECTIONS = 32
"""Facets around a cylinder."""
SPHERE_SUBDIVISIONS = 2
"""Icosphere subdivisions of a sphere (320 faces)."""

Z_UP_TO_Y_UP = np.array([[1.0, 0.0, 0.0, 0.0],
                         [0.0, 0.0, 1.0, 0.0],
                         [0.0, -1.0, 0.0, 0.0],
                         [0.0, 0.0, 0.0, 1.0]])
"""glTF <- ROS: a rotation of -90 deg about x (ROS +z becomes glTF +y, ROS +y becomes glTF -z)."""


def _trimesh():
    import trimesh  # imported here: a second or so, only paid by commands that write glTF
    return trimesh


def _material(rgba) -> object:
    trimesh = _trimesh()
    colour = [float(min(1.0, max(0.0, c))) for c in rgba]
    material = trimesh.visual.material.PBRMaterial(baseColorFactor=[round(255 * c) for c in colour],
                                                   metallicFactor=0.0, roughnessFactor=0.8,
                                                   alphaMode='BLEND' if colour[3] < 1.0 else 'OPAQUE')
    material.display_rgba = tuple(colour)   # the unrounded colour for the glTF's linear factor (scene_glb)
    return trimesh.visual.TextureVisuals(material=material)


TEXTURE_PIXELS = 64
"""Side of the image (pixels) a patterned surface's texture is drawn into: one image covers 2 x 2 tiles."""
SPECKLE_FRACTION = 0.3
"""Share of dark texels in a ``speckle`` texture (as MuJoCo's ``random`` mark draws it in the simulator)."""


def srgb_to_linear(value: float) -> float:
    """A colour component as MuJoCo shows it (a display value, sRGB) in the scene-linear terms of a renderer's
    material (USD's ``diffuseColor``, Blender's base colour)."""
    return value / 12.92 if value <= 0.04045 else ((value + 0.055) / 1.055) ** 2.4


PATTERN_TEXELS = 16
"""Texels across MuJoCo's texture of a grid (one tile) or a speckle (2 tiles; robotsim_sim.scene): a grid line is a
texel either side of a tile's edge, tile / 8 wide in all; a speckle dot a texel, tile / 8."""


def texture_image(pattern: str, contrast: float) -> np.ndarray:
    """A (64, 64) grey image of one repeat (2 x 2 tiles) of a surface pattern: 255 for the surface's colour and
    ``255 (1 - contrast)`` for its darker one (the glTF base colour multiplies it, as MuJoCo's material colour
    multiplies its texture). As MuJoCo draws it: squares of a tile; lines on every tile edge, tile / 8 wide; dots
    tile / 8 wide on 30 % of a 16 x 16 grid of texels (their places from a fixed seed, the same image every time;
    MuJoCo draws its own random places at the same share)."""
    n, dark = TEXTURE_PIXELS, round(255 * (1 - contrast))
    image = np.full((n, n), 255, dtype=np.uint8)
    texel = n // PATTERN_TEXELS
    if pattern == 'checker':
        rows, columns = np.indices((n, n)) // (n // 2)
        image[(rows + columns) % 2 == 1] = dark
    elif pattern == 'grid':
        for edge in (0, n // 2):  # the line is centred on the tile's edge (the image wraps at 0)
            lines = np.arange(edge - texel // 2, edge + texel // 2) % n
            image[lines, :] = dark
            image[:, lines] = dark
    elif pattern == 'speckle':
        dots = np.random.default_rng(0).random((PATTERN_TEXELS, PATTERN_TEXELS)) < SPECKLE_FRACTION
        image[np.kron(dots, np.ones((texel, texel), dtype=bool))] = dark
    return image


def _surface_uv(mesh, tile: float, origin=(0.0, 0.0, 0.0)):
    """``mesh`` with every triangle's own corners and texture coordinates projected onto the plane of its dominant
    axis in the mesh's frame, one texture repeat (2 x 2 tiles) every ``2 tile`` metres from ``origin``."""
    trimesh = _trimesh()
    corners = mesh.vertices[mesh.faces].reshape(-1, 3)
    dominant = np.repeat(np.argmax(np.abs(mesh.face_normals), axis=1), 3)
    axes = np.array([[1, 2], [0, 2], [0, 1]])[dominant]
    uv = np.take_along_axis(corners - np.asarray(origin, dtype=float), axes, axis=1) / (2 * tile)
    return trimesh.Trimesh(corners, np.arange(len(corners)).reshape(-1, 3), process=False), uv


def _textured(mesh, rgba, texture, origin=(0.0, 0.0, 0.0)):
    """``mesh`` coloured by ``rgba`` and, unless flat, the pattern of a world ``TextureSpec`` as a texture image
    (repeating from ``origin`` in the mesh's frame)."""
    if texture is None or texture.pattern == 'flat':
        mesh.visual = _material(rgba)
        return mesh
    from PIL import Image
    trimesh = _trimesh()
    mesh, uv = _surface_uv(mesh, texture.tile, origin)
    material = _material(rgba).material
    material.baseColorTexture = Image.fromarray(texture_image(texture.pattern, texture.contrast)).convert('RGB')
    mesh.visual = trimesh.visual.TextureVisuals(uv=uv, material=material)
    return mesh


def _shape_mesh(shape: Shape, mesh_cache: dict):
    """The shape's triangles in the shape's own frame, coloured."""
    trimesh = _trimesh()
    geometry = shape.geometry
    if geometry.kind == 'box':
        mesh = trimesh.creation.box(extents=geometry.size)
    elif geometry.kind == 'cylinder':
        mesh = trimesh.creation.cylinder(radius=geometry.size[0], height=geometry.size[1], sections=CYLINDER_SECTIONS)
    elif geometry.kind == 'sphere':
        mesh = trimesh.creation.icosphere(subdivisions=SPHERE_SUBDIVISIONS, radius=geometry.size[0])
    else:
        # The cached STL conversion when there is one (Collada parses far slower), else the file as named.
        path = geometry.mujoco_file or geometry.filename
        if path not in mesh_cache:
            mesh_cache[path] = trimesh.load(path, force='mesh', process=False)
        mesh = mesh_cache[path].copy()
        if geometry.scale != (1.0, 1.0, 1.0):
            mesh.apply_scale(geometry.scale)
    mesh.visual = _material(shape.rgba or DEFAULT_RGBA)
    return mesh


def link_transforms(model: RobotModel, positions: Mapping[str, float] | None = None) -> dict[str, np.ndarray]:
    """Local transform (4x4, parent link <- link) of every non-root link at ``positions`` (joint name ->
    rad or m; missing joints at the model's initial position, else 0; mimic joints follow their leader)."""
    tree = model.tree
    start = dict(model.initial_positions)
    start.update(positions or {})
    resolved = resolve_mimics(tree, start)
    return {joint.child: joint.origin.matrix() @ joint_motion(joint, resolved.get(joint.name, 0.0))
            for joint in tree.joints.values()}


def robot_placement(model: RobotModel, spawn_xyz=(0.0, 0.0, 0.0), spawn_yaw: float = 0.0) -> np.ndarray:
    """World <- root link: the spawn pose for a free base; for a fixed base its mount in the spawn frame."""
    spawn = homogeneous(rpy_to_matrix((0.0, 0.0, spawn_yaw)), spawn_xyz)
    return spawn @ model.mount.matrix() if model.fixed_base else spawn


def add_robot(scene, model: RobotModel, placement: np.ndarray, positions: Mapping[str, float] | None = None,
              parent: str = ROOT_NODE) -> None:
    """Add the robot's link nodes (named like the links) and visual meshes under ``parent``."""
    tree = model.tree
    local = link_transforms(model, positions)
    mesh_cache: dict = {}
    for link_name in tree.depth_first():
        joint = tree.parent_joint(link_name)
        scene.graph.update(frame_from=joint.parent if joint else parent, frame_to=link_name,
                           matrix=local[link_name] if joint else placement)
        for index, shape in enumerate(tree.links[link_name].visuals):
            node = f'{link_name}/visual_{index}'
            scene.add_geometry(_shape_mesh(shape, mesh_cache), node_name=node, geom_name=node,
                               parent_node_name=link_name, transform=shape.origin.matrix())


def _yaw_pitch(yaw: float, pitch: float = 0.0) -> np.ndarray:
    return rpy_to_matrix((0.0, pitch, yaw))  # Rz(yaw) @ Ry(pitch), as the simulator places boxes


def add_world(scene, world, parent: str = ROOT_NODE) -> None:
    """Add the world's floor, walls, boxes, cylinders, spheres, mesh entities and heightfields (a ``WorldSpec``)."""
    trimesh = _trimesh()
    scene.graph.update(frame_from=parent, frame_to=WORLD_NODE, matrix=np.eye(4))

    def add(name: str, mesh, rgba, transform: np.ndarray, texture=None, origin=(0.0, 0.0, 0.0)) -> None:
        mesh = _textured(mesh, rgba, texture, origin)
        scene.add_geometry(mesh, node_name=name, geom_name=name, parent_node_name=WORLD_NODE, transform=transform)

    floor_x, floor_y = world.floor.size
    add('floor', trimesh.creation.box(extents=(floor_x, floor_y, FLOOR_THICKNESS)), world.floor.rgba,
        homogeneous(np.eye(3), (0.0, 0.0, -FLOOR_THICKNESS / 2)), world.floor.texture,
        (-floor_x / 2, floor_y / 2, 0.0))  # MuJoCo lays the floor's pattern from its corner at (-x, +y)
    for index, wall in enumerate(world.walls):
        (x0, y0), (x1, y1) = wall.start, wall.end
        length = math.hypot(x1 - x0, y1 - y0) + wall.thickness  # the simulator's walls overlap at corners
        add(f'wall_{index}', trimesh.creation.box(extents=(length, wall.thickness, wall.height)), wall.rgba,
            homogeneous(_yaw_pitch(math.atan2(y1 - y0, x1 - x0)), ((x0 + x1) / 2, (y0 + y1) / 2, wall.height / 2)),
            wall.texture)
    for box in world.boxes:
        add(box.name, trimesh.creation.box(extents=box.size), box.rgba,
            homogeneous(_yaw_pitch(box.yaw, box.pitch), box.position), box.texture)
    for cylinder in world.cylinders:
        add(cylinder.name, trimesh.creation.cylinder(radius=cylinder.radius, height=cylinder.height,
                                                     sections=CYLINDER_SECTIONS),
            cylinder.rgba, homogeneous(np.eye(3), cylinder.position), cylinder.texture)
    for sphere in world.spheres:
        add(sphere.name, trimesh.creation.icosphere(subdivisions=SPHERE_SUBDIVISIONS, radius=sphere.radius), sphere.rgba,
            homogeneous(np.eye(3), sphere.position))
    source = world.source or world.name
    for index, entity in enumerate(world.meshes):
        mesh = load_entity_mesh(entity, source, f'meshes[{index}]', contact=False)
        add(entity.name, trimesh.Trimesh(mesh.vertices, mesh.faces, process=False), entity.rgba,
            homogeneous(rpy_to_matrix(entity.rpy), entity.position))
    for index, terrain in enumerate(world.heightfields):
        vertices, faces = heightfield_triangles(terrain, heightfield_samples(terrain, f'heightfields[{index}]'))
        add(terrain.name, trimesh.Trimesh(vertices, faces, process=False), terrain.rgba, np.eye(4))


def build_scene(model: RobotModel | None = None, world=None, positions: Mapping[str, float] | None = None):
    """A ``trimesh.Scene`` of the robot (at the world's spawn pose when a world is given) and/or the world."""
    trimesh = _trimesh()
    # trimesh's default base frame is called 'world', which a URDF root link may be called too (UR5).
    scene = trimesh.Scene(base_frame=SCENE_BASE)
    scene.graph.update(frame_from=scene.graph.base_frame, frame_to=ROOT_NODE, matrix=Z_UP_TO_Y_UP)
    if world is not None:
        add_world(scene, world)
    if model is not None:
        spawn = world.spawn if world is not None else None
        placement = robot_placement(model, spawn.xyz if spawn else (0.0, 0.0, 0.0), spawn.yaw if spawn else 0.0)
        add_robot(scene, model, placement, positions)
    return scene


def scene_glb(scene) -> bytes:
    """Binary glTF (.glb) bytes of a scene from :func:`build_scene`. Its materials hold MuJoCo's colours (display
    values, as the USD stage reads them); glTF's ``baseColorFactor`` is linear, so each is written as
    :func:`srgb_to_linear` of them (8 bits; alpha as is), and a viewer shows the colour MuJoCo shows."""
    materials = {id(m): m for m in (getattr(getattr(g, 'visual', None), 'material', None)
                                    for g in scene.geometry.values()) if hasattr(m, 'baseColorFactor')}
    display = {key: np.array(m.baseColorFactor, dtype=np.uint8) for key, m in materials.items()
               if m.baseColorFactor is not None}
    try:
        for key, colour in display.items():
            exact = getattr(materials[key], 'display_rgba', None) or tuple(colour / 255.0)
            materials[key].baseColorFactor = [round(255 * srgb_to_linear(c)) for c in exact[:3]] + [int(colour[3])]
        return scene.export(file_type='glb')
    finally:
        for key, colour in display.items():
            materials[key].baseColorFactor = colour


def write_glb(path: str, model: RobotModel | None = None, world=None,
              positions: Mapping[str, float] | None = None) -> int:
    """Write the robot and/or world to ``path`` as .glb; returns the number of bytes written."""
    data = scene_glb(build_scene(model, world, positions))
    with open(path, 'wb') as stream:
        stream.write(data)
    return len(data)
