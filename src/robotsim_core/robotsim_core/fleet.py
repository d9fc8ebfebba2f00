"""Fleets: the robots of one world, each in its own ROS namespace, declared before the world starts.

A fleet YAML (``config/fleets/<name>.yaml``) lists robots with a namespace and a spawn pose. The
namespace puts every topic of that robot under ``/<namespace>/`` and prefixes its frame ids
``<namespace>/``; ``/clock`` and the world stay shared. A single robot without a namespace is the
one-entry fleet ``[{robot: rover, namespace: ''}]``.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass

from .config_schema import load_yaml, parse_spec, spec_field
from .errors import DescriptionError

MAX_ROBOTS = 4  # the lidar self-filter gives each robot its own MuJoCo geom group (2..5)
_NAMESPACE = re.compile(r'^[A-Za-z][A-Za-z0-9_]*$')


@dataclass
class FleetRobotSpec:
    robot: str
    """Robot name in config/robots, or a robot YAML path."""
    namespace: str = ''
    """ROS namespace of the robot's topics and prefix of its frame ids ('' only for a lone robot)."""
    xyz: tuple[float, float, float] | None = None
    """Spawn position of base_footprint in the world (m); None: the world's spawn point."""
    yaw: float = 0.0
    """Spawn heading (rad)."""

    @property
    def frame_prefix(self) -> str:
        return f'{self.namespace}/' if self.namespace else ''


@dataclass
class FleetSpec:
    robots: list[FleetRobotSpec] = spec_field(non_empty=True)
    """The robots, in order; the first one is robot 0 of the simulation."""

    def check(self, source: str, path: str) -> None:
        if len(self.robots) > MAX_ROBOTS:
            raise DescriptionError(source, 'robots', f'expected at most {MAX_ROBOTS} robots, got {len(self.robots)}')
        seen = set()
        for index, entry in enumerate(self.robots):
            where = f'robots[{index}].namespace'
            if len(self.robots) > 1 and not entry.namespace:
                raise DescriptionError(source, where, 'expected a namespace: every robot of a fleet needs its own')
            if entry.namespace and not _NAMESPACE.match(entry.namespace):
                raise DescriptionError(source, where, f'expected a ROS name ([A-Za-z][A-Za-z0-9_]*), '
                                                      f'got {entry.namespace!r}')
            if entry.namespace in seen:
                raise DescriptionError(source, where, f'namespace {entry.namespace!r} is used twice')
            seen.add(entry.namespace)


def fleet_config_dir() -> str:
    from .description.load import robot_config_dir
    return os.path.join(os.path.dirname(robot_config_dir()), 'fleets')


def load_fleet(name_or_path: str) -> FleetSpec:
    """A fleet YAML path, or a fleet name looked up as ``config/fleets/<name>.yaml``."""
    path = name_or_path
    if not (os.path.exists(path) or path.endswith(('.yaml', '.yml'))):
        path = os.path.join(fleet_config_dir(), f'{name_or_path}.yaml')
    return parse_spec(FleetSpec, load_yaml(path), path)


def single_robot(robot: str, namespace: str = '') -> FleetSpec:
    fleet = FleetSpec([FleetRobotSpec(robot, namespace.strip('/'))])
    fleet.check('namespace argument', '')
    return fleet
