"""Entry point: a robot file path -> :class:`RobotModel`."""

from __future__ import annotations

import os

from ..config_schema import load_yaml, parse_spec
from ..errors import DescriptionError
from .build import build_robot
from .model import RobotModel
from .spec import RobotSpec, UrdfOverlaySpec
from .urdf_import import import_urdf


def robot_config_dir() -> str:
    """``config/robots`` of the installed robotsim package, else of the source workspace."""
    try:
        from ament_index_python.packages import get_package_share_directory
        return os.path.join(get_package_share_directory('robotsim'), 'config', 'robots')
    except Exception:  # no ament index or robotsim not built: fall back to the source tree
        pass
    here = os.path.dirname(os.path.abspath(__file__))
    candidate = os.path.normpath(os.path.join(here, '..', '..', '..', '..', 'config', 'robots'))
    return candidate if os.path.isdir(candidate) else ''


def share_path(*parts: str) -> str:
    """A file under the robotsim share directory (installed) or the source workspace."""
    return os.path.join(os.path.dirname(os.path.dirname(robot_config_dir())), *parts)


def resolve_robot_path(name_or_path: str) -> str:
    """A path, or a robot name looked up as ``config/robots/<name>.yaml``."""
    if os.path.exists(name_or_path) or name_or_path.endswith(('.yaml', '.yml')):
        return name_or_path
    return os.path.join(robot_config_dir(), f'{name_or_path}.yaml')


def resolve_world_path(name_or_path: str) -> str:
    """A path, or a world name looked up as ``config/worlds/<name>.yaml`` next to the robots."""
    if os.path.exists(name_or_path) or name_or_path.endswith(('.yaml', '.yml')):
        return name_or_path
    return os.path.join(os.path.dirname(robot_config_dir()), 'worlds', f'{name_or_path}.yaml')


def parse_world(path: str):
    """A world YAML file -> its checked ``WorldSpec`` (``include``, mesh files and terrain images made
    absolute, not yet read: robotsim_core.description.world_geometry reads them, and the simulator's
    robotsim_sim.scene.load_world also has MuJoCo check the included MJCF)."""
    from .world_spec import WorldSpec
    world = parse_spec(WorldSpec, load_yaml(path), path)
    here = os.path.dirname(os.path.abspath(path))
    if world.include is not None:
        world.include = os.path.normpath(os.path.join(here, world.include))
    for mesh in world.meshes:
        mesh.file = os.path.normpath(os.path.join(here, mesh.file))
    for terrain in world.heightfields:
        if terrain.image is not None:
            terrain.image = os.path.normpath(os.path.join(here, terrain.image))
    return world


def load_robot(name_or_path: str, strict: bool = False) -> RobotModel:
    """Load a robot YAML (generated robot) or URDF overlay YAML (has a ``urdf`` key); ``strict``
    refuses URDF inertials that need repair, as the overlay's ``strict: true`` does."""
    path = resolve_robot_path(name_or_path)
    if path.lower().endswith(('.urdf', '.xacro')) or _looks_like_xml(path):
        raise DescriptionError(path, '', 'this is a URDF, expected a robot YAML or an overlay YAML naming the URDF: '
                                         f'write one with `robotsim import {path} --out overlay.yaml`')
    data = load_yaml(path)
    if isinstance(data, dict) and 'urdf' in data:
        spec = parse_spec(UrdfOverlaySpec, data, path)
        spec.strict = spec.strict or strict
        return import_urdf(spec, path)
    return build_robot(parse_spec(RobotSpec, data, path), path)


def _looks_like_xml(path: str) -> bool:
    try:
        with open(path, 'rb') as stream:
            start = stream.read(256).lstrip()
    except OSError:
        return False  # load_yaml reports the missing file
    return start.startswith(b'<')
