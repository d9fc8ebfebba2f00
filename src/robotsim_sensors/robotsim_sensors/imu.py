"""Sensor kind ``imu``: MuJoCo's gyro, accelerometer and framequat sensors plus seeded noise and bias (REP 145).

MuJoCo's accelerometer measures specific force (it reads +g on z at rest), which is what a real
IMU reports. The orientation is the IMU frame in the world (ENU, z up) frame.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from dataclasses import dataclass
from typing import Literal

import mujoco
import numpy as np
import transforms3d.quaternions as t3q

from robotsim_core.config_schema import spec_field
from robotsim_core.contract import TopicSpec, sensor_qos
from robotsim_core.description.spec import MIN_SENSOR_RATE, PoseSpec, TopicQosSpec, name_field
from robotsim_core.sensor_kinds import SensorContext, SensorFrames, SensorKind

from .readings import ImuReading


@dataclass
class ImuSpec(SensorFrames):
    type: Literal['imu'] = spec_field()
    """Inertial measurement unit (REP 145)."""
    name: str = name_field('imu')
    """Sensor name; frame ``<name>_link``."""
    parent: str = 'base_link'
    """Link the IMU is mounted on."""
    pose: PoseSpec = spec_field(default_factory=PoseSpec)
    """IMU frame in the parent link."""
    rate: float = spec_field(100.0, at_least=MIN_SENSOR_RATE, at_most=1000.0)
    """Sample rate (Hz)."""
    gyro_noise_stddev: float = spec_field(0.002, non_negative=True)
    """Angular velocity white noise (rad/s)."""
    gyro_bias_stddev: float = spec_field(0.001, non_negative=True)
    """Per-episode constant gyro bias spread (rad/s)."""
    accel_noise_stddev: float = spec_field(0.02, non_negative=True)
    """Specific force white noise (m/s^2)."""
    accel_bias_stddev: float = spec_field(0.01, non_negative=True)
    """Per-episode constant accelerometer bias spread (m/s^2)."""
    orientation_noise_stddev: float = spec_field(0.002, non_negative=True)
    """Orientation noise (rad)."""
    qos: TopicQosSpec | None = None
    """QoS override for this sensor's topics (default: SensorDataQoS)."""


def mujoco_sensors(name: str) -> dict[str, str]:
    """MuJoCo sensor element -> its name, for the IMU called ``name`` (the one place they are named)."""
    return {'gyro': f'{name}_gyro', 'accelerometer': f'{name}_accelerometer', 'framequat': f'{name}_orientation'}


def add_mjcf(root: ET.Element, body: ET.Element, role) -> None:
    sensors = root.find('sensor')
    if sensors is None:
        sensors = ET.SubElement(root, 'sensor')
    names = mujoco_sensors(role.name)
    ET.SubElement(sensors, 'gyro', name=names['gyro'], site=role.frame)
    ET.SubElement(sensors, 'accelerometer', name=names['accelerometer'], site=role.frame)
    ET.SubElement(sensors, 'framequat', name=names['framequat'], objtype='site', objname=role.frame)


class Imu:
    def __init__(self, model: mujoco.MjModel, prefix: str, spec: ImuSpec):
        self.spec = spec
        names = mujoco_sensors(spec.name)

        def address(element: str) -> int:
            return int(model.sensor_adr[model.sensor(prefix + names[element]).id])

        self.gyro, self.accel, self.quat = address('gyro'), address('accelerometer'), address('framequat')
        self.gyro_bias = np.zeros(3)
        self.accel_bias = np.zeros(3)

    def on_reset(self, rng: np.random.Generator) -> None:
        """Per-episode constant biases (called at every reset, from the sensor's own stream)."""
        self.gyro_bias = rng.normal(0.0, self.spec.gyro_bias_stddev, 3)
        self.accel_bias = rng.normal(0.0, self.spec.accel_bias_stddev, 3)

    def measure(self, data: mujoco.MjData, rng: np.random.Generator, stamp: int) -> ImuReading:
        s = self.spec
        gyro = data.sensordata[self.gyro:self.gyro + 3] + self.gyro_bias + rng.normal(0.0, s.gyro_noise_stddev, 3)
        accel = data.sensordata[self.accel:self.accel + 3] + self.accel_bias + rng.normal(0.0, s.accel_noise_stddev, 3)
        quat = np.array(data.sensordata[self.quat:self.quat + 4])
        if s.orientation_noise_stddev > 0:
            tilt = rng.normal(0.0, s.orientation_noise_stddev, 3)
            angle = float(np.linalg.norm(tilt))
            if angle > 0:
                quat = t3q.qmult(quat, t3q.axangle2quat(tilt / angle, angle))
        return ImuReading(stamp, quat / np.linalg.norm(quat), gyro, accel,
                          s.orientation_noise_stddev ** 2, (s.gyro_noise_stddev ** 2 + s.gyro_bias_stddev ** 2),
                          (s.accel_noise_stddev ** 2 + s.accel_bias_stddev ** 2))


def topics(role, model) -> list[TopicSpec]:
    """``imu/data`` (imu_filter_madgwick's and most drivers' name) for the IMU named imu, else ``<name>/data``."""
    name = 'imu/data' if role.name == 'imu' else f'{role.name}/data'
    return [TopicSpec(name, 'sensor_msgs/msg/Imu', role.frame, sensor_qos(role.spec), role.spec.rate, role.name)]


def make(context: SensorContext) -> Imu:
    return Imu(context.model, context.prefix, context.role.spec)


KIND = SensorKind('imu', ImuSpec, topics, make, add_mjcf, marker_size=0.015, marker_collides=False)
