"""What a world YAML file may say (``config/worlds/*.yaml``). SI units, z up.

Bounds beyond the config-wide ones (numbers finite, within +-1e6): sizes >= 1 mm and masses up to
10 t as for robots (:mod:`robotsim_core.description.spec`), colours 0..1, a physics step from
0.1 ms to 50 ms, entity names unique ROS name tokens other than the reserved ``floor``, ``world``
and ``wall_<n>`` (the floor and walls carry those names; ``world`` is the segmentation label of
everything static).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from typing import Literal

from robotsim_core.config_schema import spec_field
from robotsim_core.description.spec import MAX_MASS, MIN_MASS, RGBA, colour_field, name_field, size_field
from robotsim_core.errors import DescriptionError

Vec3 = tuple[float, float, float]
MIN_TIMESTEP = 1e-4
MAX_TIMESTEP = 0.05
MIN_WALL_LENGTH = 1e-3
RESERVED_NAME = re.compile(r'floor|world|wall_[0-9]+')
MESH_SUFFIXES = ('.obj', '.stl', '.ply', '.off', '.glb', '.gltf', '.dae')
"""Mesh files a world may name (read by trimesh; Collada through pycollada)."""
MAX_MESH_FACES = 200_000
"""Triangles of one mesh entity at most (MuJoCo's own STL bound)."""
MAX_CONVEX_PARTS = 64
"""Convex parts of one mesh entity's collision shape at most."""
MAX_HEIGHTFIELD_SAMPLES = 1024
"""Samples along either side of a heightfield at most (an image is refused beyond)."""
HEIGHTFIELD_IMAGE_SUFFIXES = ('.png', '.jpg', '.jpeg', '.pgm', '.tif', '.tiff')
"""Images a heightfield may be read from (grey levels; colour images are converted to luminance)."""


def _check_entity_mass(mass: float, source: str, path: str) -> None:
    if 0 < mass < MIN_MASS:
        raise DescriptionError(source, f'{path}.mass', f'expected 0 (fixed) or a mass >= {MIN_MASS:g} kg, got {mass!r}')


TEXTURE_PATTERNS = ('flat', 'checker', 'grid', 'speckle')
"""Surface patterns a floor, wall, box or cylinder may carry (MuJoCo's built-in textures; the glTF export draws
the same pattern into an image)."""


@dataclass
class TextureSpec:
    """A surface pattern in two colours: the surface's ``rgba`` and that colour darkened by ``contrast``. On the
    floor ``tile`` is metric (world-aligned tiles); on a wall, box or cylinder the pattern repeats
    ``max(1, round(longest side / (2 tile)))`` times across each face, so tiles are about ``tile`` metres."""

    pattern: Literal['flat', 'checker', 'grid', 'speckle'] = 'flat'
    """``flat`` (one colour), ``checker`` (alternating squares), ``grid`` (lines on the tile edges) or
    ``speckle`` (random dots, 30 % of texels; the same dots every run)."""
    tile: float = spec_field(0.5, at_least=0.01, at_most=100.0)
    """Side of one square of the pattern (m)."""
    contrast: float = spec_field(0.2, non_negative=True, at_most=1.0)
    """How much darker the second colour is: 0 the same colour, 1 black."""


def floor_texture() -> TextureSpec:
    return TextureSpec('checker', 0.5, 0.2)


@dataclass
class FloorSpec:
    size: tuple[float, float] = size_field((20.0, 20.0))
    """Floor extent x, y (m), centred on the origin."""
    friction: float = spec_field(1.0, positive=True)
    """Sliding friction coefficient of the floor (the effective value is the larger of floor and tyre)."""
    rgba: RGBA = colour_field((0.55, 0.55, 0.5, 1.0))
    """Floor colour."""
    texture: TextureSpec = spec_field(default_factory=floor_texture)
    """Floor pattern (by default a checker of 0.5 m squares, the second colour 20 % darker)."""


@dataclass
class WallSpec:
    start: tuple[float, float] = spec_field()
    """(x, y) of one end of the wall's centre line (m)."""
    end: tuple[float, float] = spec_field()
    """(x, y) of the other end (m)."""
    height: float = size_field(0.5)
    """Wall height (m)."""
    thickness: float = size_field(0.1)
    """Wall thickness (m)."""
    rgba: RGBA = colour_field((0.8, 0.78, 0.72, 1.0))
    """Colour."""
    texture: TextureSpec = spec_field(default_factory=TextureSpec)
    """Surface pattern (by default flat: the colour alone)."""

    def check(self, source: str, path: str) -> None:
        if math.dist(self.start, self.end) < MIN_WALL_LENGTH:
            raise DescriptionError(source, f'{path}.end', f'expected an end at least {MIN_WALL_LENGTH * 1000:g} mm '
                                   f'from start {list(self.start)}, got {list(self.end)}')


@dataclass
class BoxSpec:
    name: str = name_field()
    """Entity name (SetEntityPose, segmentation labels)."""
    position: Vec3 = spec_field()
    """Centre (m)."""
    size: Vec3 = size_field()
    """Full extents (m)."""
    yaw: float = 0.0
    """Rotation about z (rad)."""
    pitch: float = 0.0
    """Rotation about y (rad): a tilted box is a ramp or kerb."""
    mass: float = spec_field(0.0, non_negative=True, at_most=MAX_MASS)
    """0: fixed to the world; > 0: a free body of this mass (kg, at least 1 g)."""
    rgba: RGBA = colour_field((0.7, 0.35, 0.2, 1.0))
    """Colour."""
    texture: TextureSpec = spec_field(default_factory=TextureSpec)
    """Surface pattern (by default flat: the colour alone)."""

    def check(self, source: str, path: str) -> None:
        _check_entity_mass(self.mass, source, path)


@dataclass
class CylinderSpec:
    name: str = name_field()
    """Entity name."""
    position: Vec3 = spec_field()
    """Centre (m)."""
    radius: float = size_field()
    """Radius (m)."""
    height: float = size_field()
    """Height (m)."""
    mass: float = spec_field(0.0, non_negative=True, at_most=MAX_MASS)
    """0: fixed; > 0: free body (kg, at least 1 g)."""
    rgba: RGBA = colour_field((0.2, 0.45, 0.7, 1.0))
    """Colour."""
    texture: TextureSpec = spec_field(default_factory=TextureSpec)
    """Surface pattern (by default flat: the colour alone)."""

    def check(self, source: str, path: str) -> None:
        _check_entity_mass(self.mass, source, path)


@dataclass
class SphereSpec:
    name: str = name_field()
    """Entity name."""
    position: Vec3 = spec_field()
    """Centre (m)."""
    radius: float = size_field()
    """Radius (m)."""
    mass: float = spec_field(0.0, non_negative=True, at_most=MAX_MASS)
    """0: fixed; > 0: free body (kg, at least 1 g): a ball that rolls."""
    rgba: RGBA = colour_field((0.8, 0.3, 0.3, 1.0))
    """Colour."""

    def check(self, source: str, path: str) -> None:
        _check_entity_mass(self.mass, source, path)


@dataclass
class MeshEntitySpec:
    """An obstacle, prop or free body made of a mesh file. Sensors (lidar, depth, segmentation) see the mesh
    itself; contact uses its convex decomposition (CoACD, cached by content) or its convex hull."""

    name: str = name_field()
    """Entity name (SetEntityPose, segmentation labels)."""
    file: str = spec_field()
    """Mesh file, relative to the world YAML: OBJ, STL, PLY, OFF, glTF/GLB or Collada (DAE), in metres after
    ``scale``; at most 200,000 triangles."""
    position: Vec3 = spec_field()
    """Where the mesh file's origin goes (m)."""
    rpy: Vec3 = (0.0, 0.0, 0.0)
    """Fixed-axis roll, pitch, yaw of the mesh (rad), as in URDF."""
    scale: Vec3 = spec_field((1.0, 1.0, 1.0), positive=True)
    """Scale of the file's coordinates along x, y, z (e.g. 0.001 for a file in millimetres)."""
    mass: float = spec_field(0.0, non_negative=True, at_most=MAX_MASS)
    """0: fixed to the world; > 0: a free body of this mass (kg, at least 1 g), its inertia from the mesh's
    volume (its convex hull's when the mesh is not closed)."""
    collision: Literal['decomposition', 'hull', 'none'] = 'decomposition'
    """Contact shape: ``decomposition`` (convex parts by CoACD: concave shapes such as an arch or a shelf keep
    their openings), ``hull`` (one convex hull: cheaper, fills the concavities), ``none`` (seen, not touched;
    a fixed entity only)."""
    max_convex_parts: int = spec_field(16, at_least=1, at_most=MAX_CONVEX_PARTS)
    """Upper bound on the convex parts of ``decomposition``."""
    concavity: float = spec_field(0.05, at_least=0.01, at_most=1.0)
    """CoACD's concavity threshold: how far (relative to the mesh's size) a part may stray from the mesh;
    lower is finer and slower."""
    rgba: RGBA = colour_field((0.62, 0.6, 0.58, 1.0))
    """Colour."""

    def check(self, source: str, path: str) -> None:
        _check_entity_mass(self.mass, source, path)
        if not self.file.lower().endswith(MESH_SUFFIXES):
            raise DescriptionError(source, f'{path}.file', f'expected a mesh file ({", ".join(MESH_SUFFIXES)}), '
                                                           f'got {self.file!r}')
        if self.mass > 0 and self.collision == 'none':
            raise DescriptionError(source, f'{path}.collision', 'expected decomposition or hull for a free body '
                                                                f'(mass {self.mass:g} kg): without a contact shape it '
                                                                'would fall through the floor')


@dataclass
class HeightfieldSpec:
    """Terrain: a grid of heights over a rectangle, from an image (grey levels) or from a list of rows in
    metres. Between samples the surface is two triangles a cell, as MuJoCo collides and ray-casts it."""

    name: str = name_field()
    """Entity name (segmentation label)."""
    size: tuple[float, float] = size_field()
    """Extent along x and y (m)."""
    position: Vec3 = (0.0, 0.0, 0.0)
    """Centre of the rectangle; z is the height of the lowest sample (m)."""
    image: str | None = None
    """Greyscale image relative to the world YAML (PNG, JPEG, PGM, TIFF; colour is converted to luminance):
    black is the lowest sample, white ``height`` above it; the image's top row is the +y edge and its left
    column the -x edge (a map seen from above, x to the right). 2 to 1024 pixels a side."""
    height: float | None = spec_field(None, at_least=1e-3, at_most=100.0)
    """With ``image``: metres from black to white."""
    heights: list[list[float]] | None = None
    """Instead of ``image``: rows of heights (m) above ``position``'s z, first row the +y edge, each row from
    -x to +x; 2 to 256 rows of 2 to 256 equal-length rows."""
    friction: float = spec_field(1.0, positive=True)
    """Sliding friction coefficient."""
    rgba: RGBA = colour_field((0.5, 0.55, 0.42, 1.0))
    """Colour."""
    source: str = field(default='', init=False, compare=False)
    """The world file (set by the check; the image is relative to it)."""

    def check(self, source: str, path: str) -> None:
        self.source = source
        if (self.image is None) == (self.heights is None):
            raise DescriptionError(source, path, 'expected exactly one of image (a greyscale file) and heights '
                                                 '(rows of metres)')
        if self.image is not None:
            if self.height is None:
                raise DescriptionError(source, f'{path}.height', 'expected the height (m) of white above black '
                                                                 'with image')
            if not self.image.lower().endswith(HEIGHTFIELD_IMAGE_SUFFIXES):
                raise DescriptionError(source, f'{path}.image', f'expected an image '
                                                                f'({", ".join(HEIGHTFIELD_IMAGE_SUFFIXES)}), '
                                                                f'got {self.image!r}')
            return
        if self.height is not None:
            raise DescriptionError(source, f'{path}.height', 'expected no height with heights (they are in metres '
                                                             'already); height scales an image')
        rows = self.heights
        if len(rows) < 2 or any(len(row) != len(rows[0]) for row in rows) or len(rows[0]) < 2:
            raise DescriptionError(source, f'{path}.heights', 'expected at least 2 rows of the same length, at least '
                                                              f'2 each; got rows of {sorted({len(r) for r in rows})}')
        if max(map(max, rows)) - min(map(min, rows)) < 1e-3:
            raise DescriptionError(source, f'{path}.heights', 'expected heights that vary by at least 1 mm (a flat '
                                                              'terrain is a box or the floor)')


@dataclass
class LightSpec:
    direction: Vec3 = (0.3, 0.2, -1.0)
    """Direction of the main directional light (any non-zero length)."""
    ambient: float = spec_field(0.35, non_negative=True, at_most=1.0)
    """Ambient intensity 0..1."""
    diffuse: float = spec_field(0.7, non_negative=True, at_most=1.0)
    """Diffuse intensity 0..1."""
    shadows: bool = False
    """Cast shadows (costly on a CPU renderer)."""
    reflections: bool = False
    """Render floor reflections (costly on a CPU renderer)."""

    def check(self, source: str, path: str) -> None:
        if math.hypot(*self.direction) < 1e-6:
            raise DescriptionError(source, f'{path}.direction',
                                   f'expected a non-zero direction vector, got {list(self.direction)}')


@dataclass
class ContactSpec:
    """How MuJoCo solves contact friction in this world (its global options); the defaults are MuJoCo's."""

    cone: Literal['pyramidal', 'elliptic'] = 'pyramidal'
    """Friction cone: pyramidal (MuJoCo's default) or elliptic. Elliptic cones with an impratio above 1
    are what MuJoCo recommends for grasping: an object held between two fingers does not creep out."""
    impratio: float = spec_field(1.0, at_least=1.0, at_most=1000.0)
    """Ratio of the frictional to the normal constraint impedance: above 1 friction is stiffer than
    the contact's normal force (less slip under a sustained sideways load), at some solver cost."""


@dataclass
class SpawnSpec:
    xyz: Vec3 = (0.0, 0.0, 0.0)
    """Position of the robot's base_footprint (m)."""
    yaw: float = 0.0
    """Heading (rad)."""


ENTITY_KINDS = ('boxes', 'cylinders', 'spheres', 'meshes', 'heightfields')
"""The world's lists of named things (one namespace of names)."""


@dataclass
class WorldSpec:
    name: str = spec_field()
    """World name."""
    timestep: float = spec_field(0.002, at_least=MIN_TIMESTEP, at_most=MAX_TIMESTEP)
    """Physics step (s), 0.1 ms to 50 ms (sim time counts whole nanoseconds per step)."""
    floor: FloorSpec = spec_field(default_factory=FloorSpec)
    """Ground plane."""
    light: LightSpec = spec_field(default_factory=LightSpec)
    """Lighting and costly render effects."""
    contact: ContactSpec = spec_field(default_factory=ContactSpec)
    """Contact friction solver options (for grasping: elliptic cones, impratio 10)."""
    walls: list[WallSpec] = spec_field(default_factory=list)
    """Static walls."""
    boxes: list[BoxSpec] = spec_field(default_factory=list)
    """Boxes, ramps and kerbs."""
    cylinders: list[CylinderSpec] = spec_field(default_factory=list)
    """Cylinders (pillars, bins)."""
    spheres: list[SphereSpec] = spec_field(default_factory=list)
    """Spheres (balls)."""
    meshes: list[MeshEntitySpec] = spec_field(default_factory=list)
    """Mesh entities (rocks, furniture, arches): fixed or free."""
    heightfields: list[HeightfieldSpec] = spec_field(default_factory=list)
    """Terrain patches (rough floors, hills), fixed."""
    include: str | None = None
    """An MJCF file (relative to this YAML) whose worldbody is added to the world."""
    spawn: SpawnSpec = spec_field(default_factory=SpawnSpec)
    """Where the (first) robot starts."""
    source: str = field(default='', init=False, compare=False)
    """The file this world was read from (set by the loader; for messages)."""

    def check(self, source: str, path: str) -> None:
        self.source = source
        first_index: dict[str, str] = {}
        for kind in ENTITY_KINDS:
            for index, entity in enumerate(getattr(self, kind)):
                where = f'{kind}[{index}].name'
                if RESERVED_NAME.fullmatch(entity.name):
                    raise DescriptionError(source, where, f'expected a name other than {entity.name!r} (reserved: '
                                                          'floor, world and wall_<n> name the static world)')
                if entity.name in first_index:
                    raise DescriptionError(source, where, f'expected a unique entity name, {entity.name!r} is '
                                                          f'also {first_index[entity.name]}')
                first_index[entity.name] = where
