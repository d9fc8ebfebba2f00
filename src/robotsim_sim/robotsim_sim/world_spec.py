"""What a world YAML file may say (``config/worlds/*.yaml``). SI units, z up."""

from __future__ import annotations

from dataclasses import dataclass

from robotsim_core.config_schema import spec_field

Vec3 = tuple[float, float, float]


@dataclass
class FloorSpec:
    size: tuple[float, float] = (20.0, 20.0)
    """Floor extent x, y (m), centred on the origin."""
    friction: float = spec_field(1.0, positive=True)
    """Sliding friction coefficient of the floor (the effective value is the larger of floor and tyre)."""
    rgba: tuple[float, float, float, float] = (0.55, 0.55, 0.5, 1.0)
    """Floor colour."""


@dataclass
class WallSpec:
    start: tuple[float, float] = spec_field()
    """(x, y) of one end of the wall's centre line (m)."""
    end: tuple[float, float] = spec_field()
    """(x, y) of the other end (m)."""
    height: float = spec_field(0.5, positive=True)
    """Wall height (m)."""
    thickness: float = spec_field(0.1, positive=True)
    """Wall thickness (m)."""
    rgba: tuple[float, float, float, float] = (0.8, 0.78, 0.72, 1.0)
    """Colour."""


@dataclass
class BoxSpec:
    name: str = spec_field()
    """Entity name (SetEntityPose, segmentation labels)."""
    position: Vec3 = spec_field()
    """Centre (m)."""
    size: Vec3 = spec_field(positive=True)
    """Full extents (m)."""
    yaw: float = 0.0
    """Rotation about z (rad)."""
    pitch: float = 0.0
    """Rotation about y (rad): a tilted box is a ramp or kerb."""
    mass: float = spec_field(0.0, non_negative=True)
    """0: fixed to the world; > 0: a free body of this mass (kg)."""
    rgba: tuple[float, float, float, float] = (0.7, 0.35, 0.2, 1.0)
    """Colour."""


@dataclass
class CylinderSpec:
    name: str = spec_field()
    """Entity name."""
    position: Vec3 = spec_field()
    """Centre (m)."""
    radius: float = spec_field(positive=True)
    """Radius (m)."""
    height: float = spec_field(positive=True)
    """Height (m)."""
    mass: float = spec_field(0.0, non_negative=True)
    """0: fixed; > 0: free body (kg)."""
    rgba: tuple[float, float, float, float] = (0.2, 0.45, 0.7, 1.0)
    """Colour."""


@dataclass
class LightSpec:
    direction: Vec3 = (0.3, 0.2, -1.0)
    """Direction of the main directional light."""
    ambient: float = spec_field(0.35, non_negative=True, at_most=1.0)
    """Ambient intensity 0..1."""
    diffuse: float = spec_field(0.7, non_negative=True, at_most=1.0)
    """Diffuse intensity 0..1."""
    shadows: bool = False
    """Cast shadows (costly on a CPU renderer)."""
    reflections: bool = False
    """Render floor reflections (costly on a CPU renderer)."""


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
    timestep: float = spec_field(0.002, positive=True, at_most=0.05)
    """Physics step (s)."""
    floor: FloorSpec = spec_field(default_factory=FloorSpec)
    """Ground plane."""
    light: LightSpec = spec_field(default_factory=LightSpec)
    """Lighting and costly render effects."""
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
