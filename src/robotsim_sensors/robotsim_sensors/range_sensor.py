"""Sensor kind ``range``: a single-distance ranger (ultrasonic or time-of-flight) with a field of view.

Like sensor_msgs/Range drivers report: the distance to the nearest thing inside a cone. The cone
is cast as a few rays (one on the axis, rings around it out to the half angle) with MuJoCo's
``mj_multiRay``, ignoring the robot carrying the sensor; the reading is the nearest hit plus noise.
REP 117: nothing within ``max_range`` is +Inf, closer than ``min_range`` is -Inf.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal

import mujoco
import numpy as np

from robotsim_core.config_schema import spec_field
from robotsim_core.contract import TopicSpec, sensor_qos
from robotsim_core.description.spec import MIN_SENSOR_RATE, PoseSpec, TopicQosSpec, name_field
from robotsim_core.errors import DescriptionError
from robotsim_core.sensor_kinds import SensorContext, SensorFrames, SensorKind


@dataclass
class RangeSpec(SensorFrames):
    type: Literal['range'] = spec_field()
    """Single-distance ranger (sensor_msgs/Range on ``<name>/range``)."""
    name: str = name_field('range')
    """Sensor name; frame ``<name>_link``, topic ``<name>/range``."""
    parent: str = 'base_link'
    """Link the sensor is mounted on."""
    pose: PoseSpec = spec_field(default_factory=PoseSpec)
    """Sensor frame in the parent link; it looks along its +x axis (REP 103)."""
    radiation: Literal['ultrasound', 'infrared'] = 'ultrasound'
    """What it emits: Range.radiation_type ULTRASOUND or INFRARED (time-of-flight rangers are infrared)."""
    field_of_view: float = spec_field(0.26, positive=True, at_most=math.pi / 2)
    """Full cone angle (rad); an HC-SR04 ultrasonic sensor has about 15 deg (0.26 rad), a VL53L1X ToF 27 deg."""
    min_range: float = spec_field(0.02, positive=True)
    """Closest measurable distance (m); nearer is reported as -Inf (REP 117)."""
    max_range: float = spec_field(4.0, positive=True)
    """Farthest measurable distance (m); no echo within it is +Inf (REP 117)."""
    rate: float = spec_field(20.0, at_least=MIN_SENSOR_RATE, at_most=100.0)
    """Measurement rate (Hz)."""
    rings: int = spec_field(2, at_least=0, at_most=8)
    """Rings of rays around the axis ray that sample the cone (0: the axis ray alone)."""
    rays_per_ring: int = spec_field(8, at_least=3, at_most=64)
    """Rays on each ring."""
    noise_stddev: float = spec_field(0.005, non_negative=True)
    """Gaussian range noise (m)."""
    qos: TopicQosSpec | None = None
    """QoS override for this sensor's topic (default: SensorDataQoS)."""

    def check(self, source: str, path: str) -> None:
        if self.min_range >= self.max_range:
            raise DescriptionError(source, f'{path}.min_range',
                                   f'expected min_range < max_range, got {self.min_range} >= {self.max_range}')


@dataclass
class RangeReading:
    stamp: int
    range: float              # metres; +Inf no echo within max_range, -Inf nearer than min_range (REP 117)
    field_of_view: float
    min_range: float
    max_range: float
    radiation: str


def cone_directions(spec: RangeSpec) -> np.ndarray:
    """Unit ray directions in the sensor frame: the axis, then ``rings`` rings out to the half angle."""
    directions = [(1.0, 0.0, 0.0)]
    for ring in range(1, spec.rings + 1):
        tilt = spec.field_of_view / 2 * ring / spec.rings
        for index in range(spec.rays_per_ring):
            around = 2 * math.pi * index / spec.rays_per_ring
            directions.append((math.cos(tilt), math.sin(tilt) * math.cos(around), math.sin(tilt) * math.sin(around)))
    return np.array(directions)


class RangeSensor:
    def __init__(self, model: mujoco.MjModel, site_name: str, spec: RangeSpec, own_group: int):
        self.model, self.spec = model, spec
        self.site_id = model.site(site_name).id
        self.local_directions = cone_directions(spec)
        self.count = len(self.local_directions)
        self.geomgroup = np.ones(6, dtype=np.uint8)
        self.geomgroup[1] = 0          # visual-only geoms are not solid
        self.geomgroup[own_group] = 0  # the robot carrying it does not echo
        self._geomid = np.zeros(self.count, dtype=np.int32)
        self._dist = np.zeros(self.count, dtype=np.float64)

    def measure(self, data: mujoco.MjData, rng: np.random.Generator, stamp: int) -> RangeReading:
        spec = self.spec
        directions = self.local_directions @ data.site_xmat[self.site_id].reshape(3, 3).T
        mujoco.mj_multiRay(self.model, data, data.site_xpos[self.site_id], directions.reshape(-1), self.geomgroup, 1,
                           -1, self._geomid, self._dist, None, self.count, spec.max_range * 1.5)
        hits = self._dist[self._geomid >= 0]
        # One noise draw per measurement, echo or not, so the stream does not depend on the scene.
        noise = rng.normal(0.0, spec.noise_stddev) if spec.noise_stddev > 0 else 0.0
        distance = math.inf
        if len(hits):
            distance = float(hits.min()) + noise
            if distance > spec.max_range:
                distance = math.inf
            elif distance < spec.min_range:
                distance = -math.inf
        return RangeReading(stamp, distance, spec.field_of_view, spec.min_range, spec.max_range, spec.radiation)


def topics(role, model) -> list[TopicSpec]:
    return [TopicSpec(f'{role.name}/range', 'sensor_msgs/msg/Range', role.frame, sensor_qos(role.spec), role.spec.rate,
                      role.name)]


def make(context: SensorContext) -> RangeSensor:
    return RangeSensor(context.model, context.name(context.role.frame), context.role.spec, context.collision_group)


KIND = SensorKind('range', RangeSpec, topics, make, marker_size=0.02)
