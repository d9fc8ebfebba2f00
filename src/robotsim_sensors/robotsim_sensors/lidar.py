"""Sensor kind ``lidar``: ray-cast lidar on MuJoCo's batched ``mj_multiRay`` (one call per scan).

Beams start at the sensor site and ignore the geom group of the robot carrying the sensor
(self-filter: a beam passes through its own robot and reports what lies behind). Ranges are
radial distances along each beam. LaserScan beams are ordered counter-clockwise about +z from
``angle_min``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal

import mujoco
import numpy as np

from robotsim_core.config_schema import spec_field
from robotsim_core.contract import TopicSpec, sensor_qos
from robotsim_core.description.spec import (MAX_LIDAR_CHANNELS, MAX_LIDAR_RAYS, MAX_LIDAR_SAMPLES, MIN_SENSOR_RATE,
                                            PoseSpec, TopicQosSpec, name_field)
from robotsim_core.errors import DescriptionError
from robotsim_core.sensor_kinds import SensorContext, SensorFrames, SensorKind

from .readings import ScanReading


@dataclass
class LidarSpec(SensorFrames):
    type: Literal['lidar'] = spec_field()
    """Ray-cast lidar: one channel publishes LaserScan, more publish PointCloud2."""
    name: str = name_field('laser')
    """Sensor name; also its frame_id."""
    parent: str = 'base_link'
    """Link the sensor is mounted on."""
    pose: PoseSpec = spec_field(default_factory=PoseSpec)
    """Sensor frame in the parent link (REP 103: x forward, z up)."""
    rate: float = spec_field(10.0, at_least=MIN_SENSOR_RATE, at_most=100.0)
    """Scan rate (Hz)."""
    samples: int = spec_field(360, at_least=1, at_most=MAX_LIDAR_SAMPLES)
    """Beams per revolution/channel."""
    horizontal_fov: float = spec_field(2 * math.pi, positive=True, at_most=2 * math.pi)
    """Horizontal field of view (rad), centred on +x."""
    channels: int = spec_field(1, at_least=1, at_most=MAX_LIDAR_CHANNELS)
    """Vertical channels."""
    vertical_fov: float = spec_field(0.0, non_negative=True, at_most=math.pi)
    """Vertical field of view (rad), centred on the horizon; 0 for a single plane."""
    range_min: float = spec_field(0.12, positive=True)
    """Minimum valid range (m)."""
    range_max: float = spec_field(12.0, positive=True)
    """Maximum valid range (m); beyond is +Inf (REP 117)."""
    noise_stddev: float = spec_field(0.01, non_negative=True)
    """Gaussian range noise (m)."""
    qos: TopicQosSpec | None = None
    """QoS override for this sensor's topics (default: SensorDataQoS)."""

    def check(self, source: str, path: str) -> None:
        if self.range_min >= self.range_max:
            raise DescriptionError(source, f'{path}.range_min',
                                   f'expected range_min < range_max, got {self.range_min} >= {self.range_max}')
        if self.channels > 1 and self.vertical_fov <= 0:
            raise DescriptionError(source, f'{path}.vertical_fov', 'expected a number > 0 when channels > 1')
        if self.samples * self.channels > MAX_LIDAR_RAYS:
            raise DescriptionError(source, f'{path}.samples', f'expected samples x channels <= {MAX_LIDAR_RAYS} rays '
                                   f'per scan, got {self.samples} x {self.channels}')

    @property
    def frame(self) -> str:
        return self.name


def beam_angles(spec: LidarSpec) -> tuple[np.ndarray, np.ndarray]:
    """Horizontal angles (counter-clockwise, from angle_min) and vertical channel angles (rad)."""
    full_circle = spec.horizontal_fov >= 2 * math.pi - 1e-9
    # A full circle must not repeat its first beam at +pi; a partial fan includes both ends.
    increment = spec.horizontal_fov / (spec.samples if full_circle or spec.samples == 1 else spec.samples - 1)
    horizontal = -spec.horizontal_fov / 2 + increment * np.arange(spec.samples)
    if spec.channels == 1:
        vertical = np.zeros(1)
    else:
        vertical = np.linspace(-spec.vertical_fov / 2, spec.vertical_fov / 2, spec.channels)
    return horizontal, vertical


class Lidar:
    def __init__(self, model: mujoco.MjModel, site_name: str, spec: LidarSpec, own_group: int):
        self.model = model
        self.spec = spec
        self.site_id = model.site(site_name).id
        horizontal, vertical = beam_angles(spec)
        self.angle_min = float(horizontal[0])
        self.angle_increment = float(horizontal[1] - horizontal[0]) if len(horizontal) > 1 else 0.0
        self.vertical = vertical
        # Unit beam directions in the sensor frame, channel-major: (channels * samples, 3).
        v, h = np.meshgrid(vertical, horizontal, indexing='ij')
        self.local_directions = np.stack([np.cos(v) * np.cos(h), np.cos(v) * np.sin(h), np.sin(v)], -1).reshape(-1, 3)
        self.count = len(self.local_directions)
        self.geomgroup = np.ones(6, dtype=np.uint8)
        self.geomgroup[1] = 0          # visual-only geoms are not solid
        self.geomgroup[own_group] = 0  # self-filter
        self._geomid = np.zeros(self.count, dtype=np.int32)
        self._dist = np.zeros(self.count, dtype=np.float64)

    def measure(self, data: mujoco.MjData, rng: np.random.Generator, stamp: int) -> ScanReading:
        rotation = data.site_xmat[self.site_id].reshape(3, 3)
        directions = self.local_directions @ rotation.T
        mujoco.mj_multiRay(self.model, data, data.site_xpos[self.site_id], directions.reshape(-1),
                           self.geomgroup, 1, -1, self._geomid, self._dist, None, self.count, self.spec.range_max * 1.5)
        ranges = self._dist.copy()
        hit = self._geomid >= 0
        if self.spec.noise_stddev > 0:
            ranges[hit] += rng.normal(0.0, self.spec.noise_stddev, int(hit.sum()))
        out = np.full(self.count, np.inf)
        out[hit] = ranges[hit]
        out[hit & (ranges > self.spec.range_max)] = np.inf
        out[hit & (ranges < self.spec.range_min)] = -np.inf  # REP 117: too close to measure
        points = None
        if self.spec.channels > 1:
            finite = np.isfinite(out)
            points = (self.local_directions[finite] * out[finite, None]).astype(np.float32)
        return ScanReading(stamp=stamp, ranges=out.astype(np.float32), angle_min=self.angle_min,
                           angle_increment=self.angle_increment, scan_time=1.0 / self.spec.rate,
                           range_min=self.spec.range_min, range_max=self.spec.range_max,
                           channels=self.spec.channels, vertical_angles=self.vertical, points=points)


def topics(role, model) -> list[TopicSpec]:
    """One channel: LaserScan on ``scan``; more: PointCloud2 on ``points``; under ``<name>/`` when the
    robot has several lidars."""
    spec = role.spec
    kind = 'sensor_msgs/msg/LaserScan' if spec.channels == 1 else 'sensor_msgs/msg/PointCloud2'
    name = 'scan' if spec.channels == 1 else 'points'
    if sum(1 for sensor in model.sensors if sensor.type == 'lidar') > 1:
        name = f'{role.name}/{name}'
    return [TopicSpec(name, kind, role.frame, sensor_qos(spec), spec.rate, role.name)]


def make(context: SensorContext) -> Lidar:
    return Lidar(context.model, context.name(context.role.frame), context.role.spec, context.collision_group)


KIND = SensorKind('lidar', LidarSpec, topics, make)
