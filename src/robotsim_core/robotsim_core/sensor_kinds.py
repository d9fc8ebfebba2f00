"""Sensor kinds are plugins: one module per kind (lidar, camera, imu, range, navsat, ...) holds its
YAML spec, the MuJoCo elements it needs, its sensor model and the contract topics it offers.

The core knows no kind by name. A kind registers itself under the Python entry-point group
``robotsim.sensor_kinds`` (robotsim_sensors' setup.py lists the built-in ones, one row each), the
way webots_ros2 loads one device plugin per sensor; a package of your own can add a kind the same
way. The description parser, the MJCF builder, the topic contract and the simulation look kinds up
here by the YAML ``type``. The ROS side has its own table (robotsim_sensors.ros.converters: a
reading -> its messages), so a new kind is one core module, one converter and a row in each table.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from collections.abc import Callable
from dataclasses import dataclass
from importlib.metadata import entry_points
from typing import Any, Protocol

ENTRY_POINT_GROUP = 'robotsim.sensor_kinds'


class SensorFrames:
    """Base of every kind's spec: the frames of a sensor mounted on a link. By default one,
    ``<name>_link``, the sensor's body and the frame its data are in; a kind overrides ``frame``
    (a lidar's data frame is its name) or both (a camera's images are in an optical frame under its body)."""

    @property
    def frame(self) -> str:
        """The frame_id of its messages."""
        return f'{self.name}_link'

    @property
    def body_frame(self) -> str:
        """The link fixed to its mount (the frame's parent when they differ)."""
        return self.frame


class SensorModel(Protocol):
    """A placed sensor in a compiled simulation: turns the physics state into a reading."""

    def measure(self, data, rng, stamp: int) -> Any:
        """The reading at sim time ``stamp`` (ns) from ``data`` (state brought to that time); noise
        from ``rng``, the sensor's own seeded stream."""


@dataclass
class SensorContext:
    """What a kind's :attr:`SensorKind.make` gets to place one sensor in a compiled scene."""

    model: Any                 # mujoco.MjModel of the whole scene
    prefix: str                # the robot's name prefix in the scene (multi-robot), '' for one robot
    role: Any                  # the robot's SensorRole (name, type, frame, mount link, spec)
    collision_group: int       # MuJoCo geom group of this robot's own collision geoms
    renderer: Any = None       # the simulation's camera renderer (None: cameras are off)
    geom_labels: Any = None    # model geom id -> segmentation label (entity) id

    def name(self, local: str) -> str:
        """A MuJoCo element name of this robot (the scene prefixes every robot's names)."""
        return f'{self.prefix}{local}'


@dataclass(frozen=True)
class SensorKind:
    name: str
    """The YAML ``type`` of this kind's sensors."""
    spec: type
    """Its YAML spec: a dataclass with a docstring per field and ``type: Literal[name]``."""
    topics: Callable[[Any, Any], list]
    """(sensor role, robot model) -> the contract's TopicSpecs this sensor publishes on."""
    make: Callable[[SensorContext], SensorModel | None]
    """Places the sensor in a compiled scene; None when it produces nothing there (a camera with
    rendering off). An ``on_reset(rng)`` method, if the model has one, runs at every reset."""
    add_mjcf: Callable[[ET.Element, ET.Element, Any], None] | None = None
    """(the <mujoco> root, the <body> of the sensor's frame, sensor role) -> adds the MuJoCo elements
    the model reads beyond the frame's site (which every sensor gets)."""
    renders: bool = False
    """Whether its model draws with the simulation's camera renderer (offscreen GL: cameras)."""
    marker_size: float = 0.03
    """Edge of the cube drawn at the sensor's mount (m)."""
    marker_collides: bool = True
    """Whether that cube is a collision shape too (False for parts inside the chassis, like an IMU)."""


_kinds: dict[str, SensorKind] | None = None


def sensor_kinds() -> dict[str, SensorKind]:
    """Every installed kind by YAML ``type`` (loaded once, sorted by name)."""
    global _kinds
    if _kinds is None:
        found = {}
        for point in entry_points(group=ENTRY_POINT_GROUP):
            kind = point.load()
            if not isinstance(kind, SensorKind) or kind.name != point.name:
                raise TypeError(f'entry point {point.name} = {point.value} of group {ENTRY_POINT_GROUP}: expected a '
                                f'SensorKind named {point.name!r}')
            found[point.name] = kind
        _kinds = dict(sorted(found.items()))  # the same order however the metadata lists them
    return _kinds


def sensor_kind(name: str) -> SensorKind:
    kinds = sensor_kinds()
    if name not in kinds:
        installed = ', '.join(kinds) or f'none (is robotsim_sensors installed? it registers them under {ENTRY_POINT_GROUP})'
        raise KeyError(f'no sensor kind {name!r}; installed kinds: {installed}')
    return kinds[name]
