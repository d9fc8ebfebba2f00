"""Scenario randomisation (ROS-free): a spec (``config/randomization/*.yaml``) applied to a base
world and robot by :class:`Randomizer` gives, per episode index, a world YAML, a robot YAML, the
spawn and goal poses, and every value it drew.

Every draw comes from ``numpy.random.default_rng(SeedSequence([seed, index]))``, so an episode
depends on (seed, episode index) only: the same pair gives byte-identical YAML in any process.
Drawn numbers are rounded to :data:`DECIMALS` places before use, so the recorded values are
exactly the ones in the YAML.

Ranges are ``[low, high]`` (uniform; ``low == high`` fixes a value). A spec that cannot be met (no
room for the obstacles, no reachable goal) is refused at load time where it can be seen then, and
otherwise names the episode and the key to relax.
"""

from __future__ import annotations

import copy
import hashlib
import math
import os
from collections import deque
from dataclasses import asdict, dataclass, field
from typing import Literal

import numpy as np
import yaml

from robotsim_core.config_schema import load_yaml, parse_spec, spec_field
from robotsim_core.description.load import resolve_robot_path
from robotsim_core.errors import DescriptionError

DECIMALS = 4
"""Drawn values are rounded to this many decimals (0.1 mm, 0.1 mrad)."""
GRID = 0.05
"""Cell size (m) of the occupancy grid on which the goal's reachability is checked."""
MAX_ATTEMPTS = 200
"""Draws of a layout before an episode is declared impossible under the spec."""

Range = tuple[float, float]


def _check_range(value: Range, source: str, path: str, low: float | None = None, high: float | None = None) -> None:
    if value[0] > value[1]:
        raise DescriptionError(source, path, f'expected [low, high] with low <= high, got {list(value)}')
    if low is not None and value[0] < low:
        raise DescriptionError(source, path, f'expected values >= {low:g}, got {list(value)}')
    if high is not None and value[1] > high:
        raise DescriptionError(source, path, f'expected values <= {high:g}, got {list(value)}')


@dataclass
class ObstacleRandomization:
    count: tuple[int, int] = (2, 5)
    """How many obstacles (boxes and cylinders) to place, [low, high] inclusive."""
    size: Range = (0.2, 0.5)
    """Footprint side of a box / diameter of a cylinder (m)."""
    height: Range = (0.3, 0.6)
    """Height (m); keep it above the lidar plane so a 2D lidar sees every obstacle."""
    cylinder_fraction: float = spec_field(0.4, non_negative=True, at_most=1.0)
    """Probability that an obstacle is a cylinder rather than a box."""
    clearance: float = spec_field(0.45, non_negative=True)
    """Free distance (m) kept around the spawn and the goal centres, and between obstacles."""

    def check(self, source: str, path: str) -> None:
        _check_range(self.count, source, f'{path}.count', 0, 50)
        _check_range(self.size, source, f'{path}.size', 0.01)
        _check_range(self.height, source, f'{path}.height', 0.01)


@dataclass
class TextureRandomization:
    """A surface pattern drawn per episode (per obstacle for objects): one of ``patterns`` (evenly), its tile and
    contrast from their ranges (the world's ``texture`` keys: :class:`robotsim_core.description.world_spec.TextureSpec`)."""

    patterns: list[Literal['flat', 'checker', 'grid', 'speckle']] = spec_field(default_factory=lambda: ['checker'],
                                                                                non_empty=True)
    """Patterns to draw from: ``flat``, ``checker``, ``grid``, ``speckle``."""
    tile: Range = (0.5, 0.5)
    """Side of one square of the pattern (m), [low, high]."""
    contrast: Range = (0.2, 0.2)
    """How much darker the second colour is (0 the same, 1 black), [low, high]."""

    def check(self, source: str, path: str) -> None:
        _check_range(self.tile, source, f'{path}.tile', 0.01, 100.0)
        _check_range(self.contrast, source, f'{path}.contrast', 0.0, 1.0)


TEXTURE_KEYS = ('floor_texture', 'wall_texture', 'object_texture')
PATTERN_STREAM = 1
"""Third word of the seed of the patterns' own random stream (scenario seed, index, this)."""
"""The optional pattern keys of ``appearance``; absent, a spec draws (and hashes) as it did before they existed."""


@dataclass
class AppearanceRandomization:
    floor_rgb: tuple[Range, Range, Range] = ((0.3, 0.7), (0.3, 0.7), (0.3, 0.7))
    """Floor colour, per channel [low, high] in 0..1."""
    wall_rgb: tuple[Range, Range, Range] = ((0.5, 0.9), (0.5, 0.9), (0.5, 0.9))
    """Colour of every wall (one draw per episode)."""
    object_rgb: tuple[Range, Range, Range] = ((0.1, 0.9), (0.1, 0.9), (0.1, 0.9))
    """Colour of each obstacle (one draw per obstacle)."""
    floor_texture: TextureRandomization | None = None
    """Floor pattern; absent: the base world's floor pattern (the room's: a checker of 0.5 m squares, 20 % darker)."""
    wall_texture: TextureRandomization | None = None
    """Pattern of every wall (one draw per episode); absent: the base world's walls (flat)."""
    object_texture: TextureRandomization | None = None
    """Pattern of each drawn obstacle (one draw per obstacle); absent: flat."""

    def check(self, source: str, path: str) -> None:
        for key in ('floor_rgb', 'wall_rgb', 'object_rgb'):
            for channel, value in enumerate(getattr(self, key)):
                _check_range(value, source, f'{path}.{key}[{channel}]', 0.0, 1.0)


@dataclass
class LightRandomization:
    azimuth: Range = (-math.pi, math.pi)
    """Direction of the main light about z (rad)."""
    elevation: Range = (0.8, 1.4)
    """Angle of the light below the horizon (rad; pi/2 = straight down)."""
    diffuse: Range = (0.4, 0.9)
    """Diffuse intensity, 0..1."""
    ambient: Range = (0.2, 0.5)
    """Ambient intensity, 0..1."""

    def check(self, source: str, path: str) -> None:
        _check_range(self.elevation, source, f'{path}.elevation', 0.05, math.pi / 2)
        _check_range(self.diffuse, source, f'{path}.diffuse', 0.0, 1.0)
        _check_range(self.ambient, source, f'{path}.ambient', 0.0, 1.0)
        _check_range(self.azimuth, source, f'{path}.azimuth')


@dataclass
class RobotRandomization:
    mass_scale: Range = (0.9, 1.1)
    """Factor on the base mass."""
    wheel_torque_scale: Range = (0.8, 1.2)
    """Factor on drive.wheel_max_torque (the motors' stall torque)."""
    wheel_radius_scale: Range = (0.97, 1.03)
    """Factor on the wheel radius (a count-style ``wheels:`` section)."""

    def check(self, source: str, path: str) -> None:
        for key in ('mass_scale', 'wheel_torque_scale', 'wheel_radius_scale'):
            _check_range(getattr(self, key), source, f'{path}.{key}', 0.1, 10.0)


@dataclass
class NoiseRandomization:
    lidar_stddev: Range = (0.005, 0.02)
    """Lidar range noise (m), every lidar."""
    imu_scale: Range = (0.5, 2.0)
    """Factor on every IMU noise and bias spread of the robot description."""
    camera_rgb_stddev: Range = (0.0, 3.0)
    """Pixel noise on 0-255 intensities, every camera."""
    camera_depth_stddev: Range = (0.0, 0.005)
    """Depth noise (m), every camera."""

    def check(self, source: str, path: str) -> None:
        for key in ('lidar_stddev', 'imu_scale', 'camera_rgb_stddev', 'camera_depth_stddev'):
            _check_range(getattr(self, key), source, f'{path}.{key}', 0.0)


@dataclass
class PoseRandomization:
    wall_margin: float = spec_field(0.45, non_negative=True)
    """Distance (m) of the spawn and goal centres from the room's walls."""
    yaw: Range = (-math.pi, math.pi)
    """Spawn heading (rad)."""
    goal_min_distance: float = spec_field(1.0, non_negative=True)
    """Straight-line distance (m) the goal keeps from the spawn."""
    robot_radius: float = spec_field(0.22, positive=True)
    """Radius (m) of the disc the robot sweeps: obstacles inflated by it must leave a path."""

    def check(self, source: str, path: str) -> None:
        _check_range(self.yaw, source, f'{path}.yaw')


@dataclass
class PruneSpec:
    """What makes an episode useless (applied with ``robotsim dataset generate --prune``)."""
    min_travel: float = spec_field(0.05, non_negative=True)
    """The robot's ground-truth path must be at least this long (m): else it never moved."""
    min_image_stddev: float = spec_field(2.0, non_negative=True)
    """Some RGB frame must have a pixel standard deviation (0-255) of at least this: else the camera saw
    nothing but a flat colour (a featureless camera)."""


@dataclass
class RandomizationSpec:
    base_world: str = spec_field()
    """World YAML path or name in config/worlds; its walls and floor size are kept."""
    robot: str = 'rover'
    """Robot YAML path or name in config/robots (a generated robot: not a URDF overlay)."""
    keep_base_obstacles: bool = False
    """Keep the base world's boxes and cylinders as well as the drawn obstacles."""
    episode_duration: float = spec_field(20.0, positive=True, at_most=3600.0)
    """Timeout: sim seconds before an episode ends as 'timeout'."""
    goal_tolerance: float = spec_field(0.3, positive=True)
    """The episode succeeds when the robot's centre is this close to the goal (m)."""
    floor_friction: Range = (0.7, 1.2)
    """Floor sliding friction."""
    obstacles: ObstacleRandomization = spec_field(default_factory=ObstacleRandomization)
    """Obstacle count, sizes and placement."""
    appearance: AppearanceRandomization = spec_field(default_factory=AppearanceRandomization)
    """Colours and patterns of floor, walls and objects."""
    light: LightRandomization = spec_field(default_factory=LightRandomization)
    """Main light direction and intensities."""
    robot_parameters: RobotRandomization = spec_field(default_factory=RobotRandomization)
    """Robot parameters within ranges."""
    sensor_noise: NoiseRandomization = spec_field(default_factory=NoiseRandomization)
    """Sensor noise levels."""
    poses: PoseRandomization = spec_field(default_factory=PoseRandomization)
    """Spawn and goal poses."""
    prune: PruneSpec = spec_field(default_factory=PruneSpec)
    """Rules of --prune."""
    source: str = field(default='', init=False, compare=False)

    def check(self, source: str, path: str) -> None:
        self.source = source
        _check_range(self.floor_friction, source, f'{path}floor_friction', 0.001, 10.0)


def load_randomization(path: str) -> RandomizationSpec:
    """Parse and check a randomisation spec, its base world and robot (one line on any problem)."""
    spec = parse_spec(RandomizationSpec, load_yaml(path), path)
    Randomizer(spec, 0).check_bases()
    return spec


def spec_content(spec: RandomizationSpec) -> dict:
    """The spec as plain data (what a dataset manifest records): ``source`` (where the file is) left out, and the
    optional pattern keys when absent."""
    content = asdict(spec)
    content.pop('source', None)
    for key in TEXTURE_KEYS:
        if content['appearance'][key] is None:
            del content['appearance'][key]
    return content


def spec_hash(spec: RandomizationSpec) -> str:
    """sha256 of the spec's content (not its file's bytes: comments and key order do not count, nor where the file
    is, so the same spec has the same hash on every machine and in every install)."""
    return hashlib.sha256(yaml.safe_dump(spec_content(spec), sort_keys=True).encode()).hexdigest()


@dataclass
class Scenario:
    """One episode's world, robot and task."""
    index: int
    world_yaml: str
    robot_yaml: str
    spawn: tuple[float, float, float]     # x, y, yaw in the world
    goal: tuple[float, float, float]      # x, y, yaw in the world
    drawn: dict                           # every drawn value, by name (as in the YAML)
    sim_seed: int                         # the simulation's noise seed

    def write(self, folder: str) -> tuple[str, str]:
        """Write ``world.yaml`` and ``robot.yaml`` into ``folder``; their paths."""
        paths = os.path.join(folder, 'world.yaml'), os.path.join(folder, 'robot.yaml')
        for path, text in zip(paths, (self.world_yaml, self.robot_yaml)):
            with open(path, 'w', encoding='utf-8') as stream:
                stream.write(text)
        return paths


def _round(value: float) -> float:
    return round(float(value), DECIMALS)


class _Draws:
    """A seeded generator that records every value it hands out."""

    def __init__(self, rng: np.random.Generator):
        self.rng, self.values = rng, {}

    def uniform(self, name: str, bounds: Range) -> float:
        value = _round(self.rng.uniform(bounds[0], bounds[1]) if bounds[1] > bounds[0] else bounds[0])
        self.values[name] = value
        return value

    def integer(self, name: str, bounds: tuple[int, int]) -> int:
        value = int(self.rng.integers(bounds[0], bounds[1] + 1))
        self.values[name] = value
        return value

    def texture(self, name: str, spec: TextureRandomization) -> dict:
        """A world ``texture`` mapping drawn from ``spec``."""
        index = int(self.rng.integers(len(spec.patterns))) if len(spec.patterns) > 1 else 0
        self.values[f'{name}.pattern'] = spec.patterns[index]
        return {'pattern': spec.patterns[index], 'tile': self.uniform(f'{name}.tile', spec.tile),
                'contrast': self.uniform(f'{name}.contrast', spec.contrast)}

    def rgb(self, name: str, bounds) -> list[float]:
        colour = [_round(self.rng.uniform(*channel) if channel[1] > channel[0] else channel[0]) for channel in bounds]
        self.values[name] = colour
        return colour + [1.0]


class Randomizer:
    """``Randomizer(spec, seed).scenario(index)``: the episode's world, robot and task."""

    def __init__(self, spec: RandomizationSpec, seed: int):
        from robotsim_sim.scene import load_world, resolve_world_path  # the world schema lives with the simulator
        self.spec, self.seed = spec, int(seed)
        self.world_path = self._existing('base_world', 'world', resolve_world_path)
        self.base_world = load_world(self.world_path)
        self.robot_path = self._existing('robot', 'robot', resolve_robot_path)
        self.robot_data = load_yaml(self.robot_path)
        self.bounds = self._room_bounds()

    def _existing(self, key: str, kind: str, resolve) -> str:
        """The file the spec's ``key`` (a path or a name in config/<kind>s) names; else one line naming the spec
        file, the key, the name and the names there are."""
        name = getattr(self.spec, key)
        path = resolve(self._beside_spec(name))
        if os.path.isfile(path):
            return path
        folder = os.path.dirname(path)
        bare = not any(separator in name for separator in ('/', os.sep)) and not name.endswith(('.yaml', '.yml'))
        expected = f'a {kind} YAML path (relative to the spec file, or absolute)'
        if bare:
            try:
                names = sorted(entry[:-5] for entry in os.listdir(folder) if entry.endswith('.yaml'))
            except OSError:
                names = []
            expected += f' or a {kind} name in {folder}' + (f': one of {", ".join(names)}' if names else '')
        problem = 'is not a file' if os.path.exists(path) else 'file not found'
        if self.spec.source and not os.path.isabs(path):  # looked for beside the spec first: show that place
            path = os.path.join(os.path.dirname(os.path.abspath(self.spec.source)), path)
        raise DescriptionError(self.spec.source or 'randomisation spec', key,
                               f'{name!r}: {problem} ({path}); expected {expected}')

    def _beside_spec(self, name: str) -> str:
        """A relative path is relative to the spec file (as a world's include is to the world)."""
        if self.spec.source and not os.path.isabs(name):
            candidate = os.path.join(os.path.dirname(os.path.abspath(self.spec.source)), name)
            if os.path.isfile(candidate):
                return candidate
        return name

    def check_bases(self) -> None:
        """Refuse, on one line, what no episode could satisfy."""
        if isinstance(self.robot_data, dict) and 'urdf' in self.robot_data:
            raise DescriptionError(self.spec.source, 'robot', f'{self.robot_path} is a URDF overlay: robot parameter '
                                   'randomisation needs a generated robot YAML (config/robots/rover.yaml style)')
        from robotsim_core.description import load_robot
        load_robot(self.robot_path)
        (x0, y0), (x1, y1) = self.bounds
        if x1 - x0 < 1e-3 or y1 - y0 < 1e-3:
            raise DescriptionError(self.spec.source, 'poses.wall_margin', f'expected a margin that leaves room inside '
                                   f'the walls of {self.world_path}, got {self.spec.poses.wall_margin:g} m')
        diagonal = math.hypot(x1 - x0, y1 - y0)
        if self.spec.poses.goal_min_distance >= diagonal:
            raise DescriptionError(self.spec.source, 'poses.goal_min_distance', f'expected less than the usable room '
                                   f'diagonal {diagonal:.2f} m of {self.world_path}, got {self.spec.poses.goal_min_distance:g}')

    def _room_bounds(self) -> tuple[tuple[float, float], tuple[float, float]]:
        """The rectangle where spawn and goal centres may lie: inside the walls' bounding box (the
        floor when there are no walls), less the wall margin."""
        world, margin = self.base_world, self.spec.poses.wall_margin
        if world.walls:
            xs = [v for w in world.walls for v in (w.start[0], w.end[0])]
            ys = [v for w in world.walls for v in (w.start[1], w.end[1])]
            inset = max(w.thickness for w in world.walls) / 2 + margin
            return (min(xs) + inset, min(ys) + inset), (max(xs) - inset, max(ys) - inset)
        half_x, half_y = world.floor.size[0] / 2, world.floor.size[1] / 2
        return (-half_x + margin, -half_y + margin), (half_x - margin, half_y - margin)

    # ------------------------------------------------------------------ scenario
    def scenario(self, index: int) -> Scenario:
        rng = np.random.default_rng(np.random.SeedSequence([self.seed, int(index)]))
        draws = _Draws(rng)
        sim_seed = int(rng.integers(0, 2**63 - 1))
        spawn, goal, obstacles = self._layout(draws, index)
        world = self._world(draws, spawn, obstacles)
        robot = self._robot(draws)
        self._patterns(world, obstacles, index, draws.values)
        return Scenario(index, _dump(world), _dump(robot),
                        spawn, goal, draws.values, sim_seed)

    def _patterns(self, world: dict, obstacles: list[dict], index: int, values: dict) -> None:
        """The surface patterns ``appearance`` asks for, from a stream of their own (so a spec that adds patterns
        draws the same layout, colours, robot and noise as the one without), into ``world`` and ``values``."""
        appearance = self.spec.appearance
        if not any(getattr(appearance, key) for key in TEXTURE_KEYS):
            return
        draws = _Draws(np.random.default_rng(np.random.SeedSequence([self.seed, int(index), PATTERN_STREAM])))
        if appearance.floor_texture:
            world['floor']['texture'] = draws.texture('floor.texture', appearance.floor_texture)
        if appearance.wall_texture:
            texture = draws.texture('walls.texture', appearance.wall_texture)
            world['walls'] = [{**wall, 'texture': texture} for wall in world['walls']]
        if appearance.object_texture:
            for k, obstacle in enumerate(obstacles):  # the same dicts as in world['boxes'] and world['cylinders']
                obstacle['texture'] = draws.texture(f'obstacles[{k}].texture', appearance.object_texture)
        values.update(draws.values)

    def _layout(self, draws: _Draws, index: int):
        spec, poses = self.spec, self.spec.poses
        (x0, y0), (x1, y1) = self.bounds
        base = self._base_obstacles() if spec.keep_base_obstacles else []
        for _ in range(MAX_ATTEMPTS):
            trial = _Draws(draws.rng)
            spawn = (trial.uniform('spawn.x', (x0, x1)), trial.uniform('spawn.y', (y0, y1)),
                     trial.uniform('spawn.yaw', poses.yaw))
            goal = (trial.uniform('goal.x', (x0, x1)), trial.uniform('goal.y', (y0, y1)),
                    trial.uniform('goal.yaw', (-math.pi, math.pi)))
            if math.dist(spawn[:2], goal[:2]) < poses.goal_min_distance:
                continue
            if any(_obstacle_distance(o, p) < poses.robot_radius for o in base for p in (spawn, goal)):
                continue
            obstacles = self._obstacles(trial, spawn, goal, base)
            if obstacles is None:
                continue
            if not self._reachable(spawn, goal, base + obstacles):
                continue
            draws.values.update(trial.values)
            return spawn, goal, obstacles
        raise DescriptionError(self.spec.source, 'obstacles', f'episode {index}: no layout with the goal reachable in '
                               f'{MAX_ATTEMPTS} draws; expected fewer/smaller obstacles, a smaller clearance or '
                               'goal_min_distance')

    def _obstacles(self, trial: _Draws, spawn, goal, base) -> list[dict] | None:
        spec = self.spec.obstacles
        (x0, y0), (x1, y1) = self.bounds
        count = trial.integer('obstacles.count', spec.count)
        placed: list[dict] = []
        for k in range(count):
            for _ in range(50):
                for key in [key for key in trial.values if key.startswith(f'obstacles[{k}].')]:
                    del trial.values[key]  # a rejected placement's values are not this episode's
                size = trial.uniform(f'obstacles[{k}].size', spec.size)
                height = trial.uniform(f'obstacles[{k}].height', spec.height)
                cylinder = bool(trial.rng.random() < spec.cylinder_fraction)
                trial.values[f'obstacles[{k}].kind'] = 'cylinder' if cylinder else 'box'
                x, y = trial.uniform(f'obstacles[{k}].x', (x0, x1)), trial.uniform(f'obstacles[{k}].y', (y0, y1))
                yaw = 0.0 if cylinder else trial.uniform(f'obstacles[{k}].yaw', (-math.pi / 2, math.pi / 2))
                rgba = trial.rgb(f'obstacles[{k}].rgb', self.spec.appearance.object_rgb)
                name = f'obstacle_{k}'
                entity = ({'name': name, 'position': [x, y, _round(height / 2)], 'radius': _round(size / 2),
                           'height': height, 'rgba': rgba} if cylinder else
                          {'name': name, 'position': [x, y, _round(height / 2)], 'size': [size, size, height],
                           'yaw': yaw, 'rgba': rgba})
                keep_clear = spec.clearance + (size * math.sqrt(0.5) if not cylinder else size / 2)
                if any(math.dist((x, y), p[:2]) < keep_clear for p in (spawn, goal)):
                    continue
                if any(_obstacle_distance(other, (x, y)) < keep_clear for other in placed + base):
                    continue
                placed.append(entity)
                break
            else:
                return None
        return placed

    def _base_obstacles(self) -> list[dict]:
        world = self.base_world
        return ([{'name': b.name, 'position': list(b.position), 'size': list(b.size), 'yaw': b.yaw} for b in world.boxes
                 if b.position[2] + b.size[2] / 2 > 0.03]  # a kerb the robot drives over is no obstacle
                + [{'name': c.name, 'position': list(c.position), 'radius': c.radius} for c in world.cylinders])

    def _reachable(self, spawn, goal, obstacles) -> bool:
        """Breadth-first search over a grid of the room, obstacles inflated by the robot radius."""
        (x0, y0), (x1, y1) = self.bounds
        nx, ny = int((x1 - x0) / GRID) + 1, int((y1 - y0) / GRID) + 1
        xs, ys = np.meshgrid(x0 + GRID * np.arange(nx), y0 + GRID * np.arange(ny), indexing='ij')
        free = np.ones((nx, ny), dtype=bool)
        radius = self.spec.poses.robot_radius
        for obstacle in obstacles:
            free &= _obstacle_distance_grid(obstacle, xs, ys) >= radius
        def cell(p):
            return (min(nx - 1, max(0, round((p[0] - x0) / GRID))), min(ny - 1, max(0, round((p[1] - y0) / GRID))))
        start, target = cell(spawn), cell(goal)
        if not free[start] or not free[target]:
            return False
        seen = np.zeros_like(free)
        seen[start] = True
        queue = deque([start])
        while queue:
            i, j = queue.popleft()
            if (i, j) == target:
                return True
            for di, dj in ((1, 0), (-1, 0), (0, 1), (0, -1)):
                a, b = i + di, j + dj
                if 0 <= a < nx and 0 <= b < ny and free[a, b] and not seen[a, b]:
                    seen[a, b] = True
                    queue.append((a, b))
        return False

    def _world(self, draws: _Draws, spawn, obstacles) -> dict:
        spec = self.spec
        world = _plain(load_yaml(self.world_path))
        world['name'] = f'{self.base_world.name}_random'
        world.pop('include', None) if self.base_world.include is None else world.update(include=self.base_world.include)
        floor = dict(world.get('floor') or {})
        floor['friction'] = draws.uniform('floor.friction', spec.floor_friction)
        floor['rgba'] = draws.rgb('floor.rgb', spec.appearance.floor_rgb)
        world['floor'] = floor
        wall_rgba = draws.rgb('walls.rgb', spec.appearance.wall_rgb)
        world['walls'] = [{**wall, 'rgba': wall_rgba} for wall in world.get('walls') or []]
        azimuth = draws.uniform('light.azimuth', spec.light.azimuth)
        elevation = draws.uniform('light.elevation', spec.light.elevation)
        light = dict(world.get('light') or {})
        light['direction'] = [_round(math.cos(azimuth) * math.cos(elevation)),
                              _round(math.sin(azimuth) * math.cos(elevation)), _round(-math.sin(elevation))]
        light['diffuse'] = draws.uniform('light.diffuse', spec.light.diffuse)
        light['ambient'] = draws.uniform('light.ambient', spec.light.ambient)
        world['light'] = light
        boxes = world.get('boxes') or [] if spec.keep_base_obstacles else []
        cylinders = world.get('cylinders') or [] if spec.keep_base_obstacles else []
        world['boxes'] = boxes + [o for o in obstacles if 'size' in o]
        world['cylinders'] = cylinders + [o for o in obstacles if 'radius' in o]
        world['spawn'] = {'xyz': [spawn[0], spawn[1], 0.0], 'yaw': spawn[2]}
        return world

    def _robot(self, draws: _Draws) -> dict:
        spec, robot = self.spec, copy.deepcopy(_plain(self.robot_data))
        params, noise = spec.robot_parameters, spec.sensor_noise
        base = robot.setdefault('base', {})
        from robotsim_core.description.spec import BaseSpec, DriveSpec, WheelCountSpec
        from robotsim_sensors.imu import ImuSpec

        def scaled(section: dict, key: str, schema, name: str, bounds: Range) -> None:
            current = section.get(key, _dataclass_default(schema, key))
            if isinstance(current, (int, float)):
                section[key] = _round(current * draws.uniform(name, bounds))
        scaled(base, 'mass', BaseSpec, 'robot.mass_scale', params.mass_scale)
        if isinstance(robot.get('wheels'), dict):
            scaled(robot['wheels'], 'radius', WheelCountSpec, 'robot.wheel_radius_scale', params.wheel_radius_scale)
        if isinstance(robot.get('drive'), dict):
            scaled(robot['drive'], 'wheel_max_torque', DriveSpec, 'robot.wheel_torque_scale', params.wheel_torque_scale)
        for sensor in robot.get('sensors') or []:
            name = sensor.get('name', sensor.get('type'))
            if sensor.get('type') == 'lidar':
                sensor['noise_stddev'] = draws.uniform(f'sensors.{name}.noise_stddev', noise.lidar_stddev)
            elif sensor.get('type') == 'camera':
                sensor['rgb_noise_stddev'] = draws.uniform(f'sensors.{name}.rgb_noise_stddev', noise.camera_rgb_stddev)
                sensor['depth_noise_stddev'] = draws.uniform(f'sensors.{name}.depth_noise_stddev', noise.camera_depth_stddev)
            elif sensor.get('type') == 'imu':
                scale = draws.uniform(f'sensors.{name}.noise_scale', noise.imu_scale)
                for key in ('gyro_noise_stddev', 'gyro_bias_stddev', 'accel_noise_stddev', 'accel_bias_stddev',
                            'orientation_noise_stddev'):
                    sensor[key] = _round(sensor.get(key, _dataclass_default(ImuSpec, key)) * scale)
        return robot


def _dataclass_default(cls, key):
    """A spec field's default (None when it has none)."""
    import dataclasses
    value = next((f.default for f in dataclasses.fields(cls) if f.name == key), None)
    return None if value is dataclasses.MISSING else value


class _NoAliasDumper(yaml.SafeDumper):
    """Writes a value shared by several keys (the walls' colour) in full each time: no YAML anchors."""

    def ignore_aliases(self, data):
        return True


def _dump(document: dict) -> str:
    return yaml.dump(document, Dumper=_NoAliasDumper, sort_keys=False, default_flow_style=None, width=120)


def _plain(data):
    """A YAML document as plain lists/dicts (tuples -> lists) for a deterministic dump."""
    if isinstance(data, dict):
        return {key: _plain(value) for key, value in data.items()}
    if isinstance(data, (list, tuple)):
        return [_plain(value) for value in data]
    return data


def _obstacle_distance(obstacle: dict, point) -> float:
    """Distance from a point to an obstacle's footprint (0 inside)."""
    return float(_obstacle_distance_grid(obstacle, np.array(point[0], dtype=float), np.array(point[1], dtype=float)))


def _obstacle_distance_grid(obstacle: dict, xs: np.ndarray, ys: np.ndarray) -> np.ndarray:
    cx, cy = obstacle['position'][0], obstacle['position'][1]
    if 'radius' in obstacle:
        return np.maximum(np.hypot(xs - cx, ys - cy) - obstacle['radius'], 0.0)
    yaw = obstacle.get('yaw', 0.0)
    dx, dy = xs - cx, ys - cy
    local_x = math.cos(yaw) * dx + math.sin(yaw) * dy
    local_y = -math.sin(yaw) * dx + math.cos(yaw) * dy
    outside_x = np.maximum(np.abs(local_x) - obstacle['size'][0] / 2, 0.0)
    outside_y = np.maximum(np.abs(local_y) - obstacle['size'][1] / 2, 0.0)
    return np.hypot(outside_x, outside_y)
