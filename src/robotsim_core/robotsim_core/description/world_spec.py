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


def _check_entity_mass(mass: float, source: str, path: str) -> None:
    if 0 < mass < MIN_MASS:
        raise DescriptionError(source, f'{path}.mass', f'expected 0 (fixed) or a mass >= {MIN_MASS:g} kg, got {mass!r}')


@dataclass
class FloorSpec:
    size: tuple[float, float] = size_field((20.0, 20.0))
    """Floor extent x, y (m), centred on the origin."""
    friction: float = spec_field(1.0, positive=True)
    """Sliding friction coefficient of the floor (the effective value is the larger of floor and tyre)."""
    rgba: RGBA = colour_field((0.55, 0.55, 0.5, 1.0))
    """Floor colour."""


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

    def check(self, source: str, path: str) -> None:
        _check_entity_mass(self.mass, source, path)


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
    include: str | None = None
    """An MJCF file (relative to this YAML) whose worldbody is added to the world."""
    spawn: SpawnSpec = spec_field(default_factory=SpawnSpec)
    """Where the (first) robot starts."""
    source: str = field(default='', init=False, compare=False)
    """The file this world was read from (set by the loader; for messages)."""

    def check(self, source: str, path: str) -> None:
        self.source = source
        first_index: dict[str, str] = {}
        for kind in ('boxes', 'cylinders'):
            for index, entity in enumerate(getattr(self, kind)):
                where = f'{kind}[{index}].name'
                if RESERVED_NAME.fullmatch(entity.name):
                    raise DescriptionError(source, where, f'expected a name other than {entity.name!r} (reserved: '
                                                          'floor, world and wall_<n> name the static world)')
                if entity.name in first_index:
                    raise DescriptionError(source, where, f'expected a unique entity name, {entity.name!r} is '
                                                          f'also {first_index[entity.name]}')
                first_index[entity.name] = where
