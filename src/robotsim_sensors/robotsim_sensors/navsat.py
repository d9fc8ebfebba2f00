"""Sensor kind ``navsat``: a satellite navigation receiver (GPS/GNSS) reporting sensor_msgs/NavSatFix.

The simulated world frame is taken as a local ENU frame (x east, y north, z up: REP 103's
geographic convention) whose origin sits at the sensor's ``datum`` (latitude, longitude, WGS84
ellipsoidal altitude). Each fix converts the antenna's world position exactly (ENU -> ECEF ->
geodetic on the WGS84 ellipsoid, no flat-earth approximation), after Gaussian noise in metres:
``horizontal_noise_stddev`` east and north, ``vertical_noise_stddev`` up. The message's
position_covariance is that noise's diagonal (ENU, m^2), COVARIANCE_TYPE_DIAGONAL_KNOWN, as
receiver drivers such as nmea_navsat_driver fill it from the reported accuracy.
"""

from __future__ import annotations

import functools
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

WGS84_A = 6378137.0                       # semi-major axis (m)
WGS84_F = 1 / 298.257223563               # flattening
WGS84_E2 = WGS84_F * (2 - WGS84_F)        # first eccentricity squared


@dataclass
class NavSatSpec(SensorFrames):
    type: Literal['navsat'] = spec_field()
    """Satellite navigation receiver (sensor_msgs/NavSatFix on ``<name>/fix``)."""
    name: str = name_field('gps')
    """Sensor name; frame ``<name>_link`` (the antenna), topic ``<name>/fix``."""
    parent: str = 'base_link'
    """Link the antenna is mounted on."""
    pose: PoseSpec = spec_field(default_factory=PoseSpec)
    """Antenna position in the parent link."""
    datum: tuple[float, float, float] = (48.8584, 2.2945, 35.0)
    """Latitude (deg), longitude (deg) and WGS84 ellipsoidal altitude (m) of the world origin."""
    rate: float = spec_field(10.0, at_least=MIN_SENSOR_RATE, at_most=100.0)
    """Fix rate (Hz); receivers give 1-20."""
    horizontal_noise_stddev: float = spec_field(0.5, non_negative=True)
    """Position noise east and north (m, 1 sigma): ~2 m for a plain receiver, ~0.02 m with RTK."""
    vertical_noise_stddev: float = spec_field(1.0, non_negative=True)
    """Position noise up (m, 1 sigma)."""
    qos: TopicQosSpec | None = None
    """QoS override for this sensor's topic (default: SensorDataQoS)."""

    def check(self, source: str, path: str) -> None:
        latitude, longitude, _ = self.datum
        if not -90.0 < latitude < 90.0:
            raise DescriptionError(source, f'{path}.datum', f'expected a latitude strictly between -90 and 90 deg, '
                                   f'got {latitude}')
        if not -180.0 <= longitude <= 180.0:
            raise DescriptionError(source, f'{path}.datum', f'expected a longitude from -180 to 180 deg, got {longitude}')


@dataclass
class NavSatReading:
    stamp: int
    latitude: float           # deg
    longitude: float          # deg
    altitude: float           # m above the WGS84 ellipsoid
    position_covariance: tuple[float, ...]  # 3x3 row-major, ENU, m^2


def geodetic_to_ecef(latitude: float, longitude: float, altitude: float) -> np.ndarray:
    lat, lon = math.radians(latitude), math.radians(longitude)
    n = WGS84_A / math.sqrt(1 - WGS84_E2 * math.sin(lat) ** 2)
    return np.array([(n + altitude) * math.cos(lat) * math.cos(lon), (n + altitude) * math.cos(lat) * math.sin(lon),
                     (n * (1 - WGS84_E2) + altitude) * math.sin(lat)])


def ecef_to_geodetic(ecef: np.ndarray) -> tuple[float, float, float]:
    """(latitude deg, longitude deg, altitude m); iterated to below a micrometre (converges in a few steps)."""
    x, y, z = (float(v) for v in ecef)
    lon = math.atan2(y, x)
    p = math.hypot(x, y)
    lat = math.atan2(z, p * (1 - WGS84_E2))
    altitude = 0.0
    for _ in range(10):
        n = WGS84_A / math.sqrt(1 - WGS84_E2 * math.sin(lat) ** 2)
        altitude = p / math.cos(lat) - n
        updated = math.atan2(z, p * (1 - WGS84_E2 * n / (n + altitude)))
        if abs(updated - lat) < 1e-13:
            lat = updated
            break
        lat = updated
    return math.degrees(lat), math.degrees(lon), altitude


@functools.lru_cache(maxsize=16)
def _enu_frame(datum: tuple[float, float, float]) -> tuple[np.ndarray, np.ndarray]:
    """(the datum in ECEF, the rows east, north, up in ECEF): once per datum, not per fix."""
    lat, lon = math.radians(datum[0]), math.radians(datum[1])
    axes = np.array([[-math.sin(lon), math.cos(lon), 0.0],
                     [-math.sin(lat) * math.cos(lon), -math.sin(lat) * math.sin(lon), math.cos(lat)],
                     [math.cos(lat) * math.cos(lon), math.cos(lat) * math.sin(lon), math.sin(lat)]])
    return geodetic_to_ecef(*datum), axes


def enu_to_geodetic(enu: np.ndarray, datum: tuple[float, float, float]) -> tuple[float, float, float]:
    """A point east/north/up (m) of ``datum`` -> (latitude deg, longitude deg, altitude m)."""
    origin, axes = _enu_frame(tuple(datum))
    return ecef_to_geodetic(origin + enu[0] * axes[0] + enu[1] * axes[1] + enu[2] * axes[2])


class NavSat:
    def __init__(self, model: mujoco.MjModel, site_name: str, spec: NavSatSpec):
        self.spec = spec
        self.site_id = model.site(site_name).id
        h, v = spec.horizontal_noise_stddev ** 2, spec.vertical_noise_stddev ** 2
        self.covariance = (h, 0.0, 0.0, 0.0, h, 0.0, 0.0, 0.0, v)

    def measure(self, data: mujoco.MjData, rng: np.random.Generator, stamp: int) -> NavSatReading:
        spec = self.spec
        noise = rng.standard_normal(3) * (spec.horizontal_noise_stddev, spec.horizontal_noise_stddev,
                                          spec.vertical_noise_stddev)
        latitude, longitude, altitude = enu_to_geodetic(data.site_xpos[self.site_id] + noise, spec.datum)
        return NavSatReading(stamp, latitude, longitude, altitude, self.covariance)


def topics(role, model) -> list[TopicSpec]:
    return [TopicSpec(f'{role.name}/fix', 'sensor_msgs/msg/NavSatFix', role.frame, sensor_qos(role.spec),
                      role.spec.rate, role.name)]


def make(context: SensorContext) -> NavSat:
    return NavSat(context.model, context.name(context.role.frame), context.role.spec)


KIND = SensorKind('navsat', NavSatSpec, topics, make, marker_size=0.04)
