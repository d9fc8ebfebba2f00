"""Sensor kind ``force_torque``: a six-axis force-torque sensor between a link and the link it hangs from (a wrist
sensor between an arm's flange and its tool), as ros2_control's force_torque_sensor_broadcaster publishes it.

MuJoCo's ``force`` and ``torque`` sensors at a site on the measured link give the interaction wrench between that
link (with everything it carries: tool, gripper, a held payload) and its parent. The reading is the wrench that
load exerts on the sensor, in the sensor's frame: a payload hanging still pulls along gravity with its weight. Noise
is white per sample plus a constant offset drawn per episode (a real sensor's zero drifts; tare it at rest).
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from dataclasses import dataclass
from typing import Literal

import mujoco
import numpy as np

from robotsim_core.config_schema import spec_field
from robotsim_core.contract import TopicSpec, sensor_qos
from robotsim_core.description.spec import MIN_SENSOR_RATE, PoseSpec, TopicQosSpec, name_field
from robotsim_core.sensor_kinds import SensorContext, SensorFrames, SensorKind

from .readings import WrenchReading


@dataclass
class ForceTorqueSpec(SensorFrames):
    type: Literal['force_torque'] = spec_field()
    """Six-axis force-torque sensor (geometry_msgs/WrenchStamped on ``<name>/wrench``)."""
    parent: str = spec_field()
    """The measured link: the sensor reads the wrench between it (with all it carries) and the link it hangs from
    (for a wrist sensor, the arm's last link, which carries the gripper)."""
    name: str = name_field('ft_sensor')
    """Sensor name; frame ``<name>_link``, topic ``<name>/wrench``."""
    pose: PoseSpec = spec_field(default_factory=PoseSpec)
    """Sensor frame in the measured link: the wrench is expressed about its origin, along its axes."""
    rate: float = spec_field(100.0, at_least=MIN_SENSOR_RATE, at_most=1000.0)
    """Sample rate (Hz)."""
    force_noise_stddev: float = spec_field(0.05, non_negative=True)
    """Force white noise per sample (N); an ATI Mini45 class sensor resolves about 0.06 N."""
    torque_noise_stddev: float = spec_field(0.002, non_negative=True)
    """Torque white noise per sample (N m)."""
    force_bias_stddev: float = spec_field(0.1, non_negative=True)
    """Spread of the constant force offset drawn per episode (N)."""
    torque_bias_stddev: float = spec_field(0.005, non_negative=True)
    """Spread of the constant torque offset drawn per episode (N m)."""
    qos: TopicQosSpec | None = None
    """QoS override for this sensor's topic (default: SensorDataQoS)."""


def site_name(name: str) -> str:
    """The site (on the measured link's body) the MuJoCo sensors read at."""
    return f'{name}_measured'


def mujoco_sensors(name: str) -> dict[str, str]:
    """MuJoCo sensor element -> its name, for the sensor called ``name`` (the one place they are named)."""
    return {'force': f'{name}_force', 'torque': f'{name}_torque'}


def add_mjcf(root: ET.Element, body: ET.Element, role) -> None:
    """A site on the measured link's body at the sensor frame's pose (the frame's own body is a massless child
    welded to it, which carries nothing), and the force and torque sensors at that site."""
    measured = next(element for element in root.iter('body') if body in list(element))
    ET.SubElement(measured, 'site', name=site_name(role.name), size='0.004',
                  pos=body.get('pos', '0 0 0'), quat=body.get('quat', '1 0 0 0'))
    sensors = root.find('sensor')
    if sensors is None:
        sensors = ET.SubElement(root, 'sensor')
    names = mujoco_sensors(role.name)
    ET.SubElement(sensors, 'force', name=names['force'], site=site_name(role.name))
    ET.SubElement(sensors, 'torque', name=names['torque'], site=site_name(role.name))


class ForceTorque:
    """The placed sensor: reads MuJoCo's force and torque sensors, adds the episode's offset and the noise."""

    def __init__(self, model: mujoco.MjModel, prefix: str, spec: ForceTorqueSpec):
        self.spec = spec
        names = mujoco_sensors(spec.name)
        self.force = int(model.sensor_adr[model.sensor(prefix + names['force']).id])
        self.torque = int(model.sensor_adr[model.sensor(prefix + names['torque']).id])
        self.force_bias = np.zeros(3)
        self.torque_bias = np.zeros(3)

    def on_reset(self, rng: np.random.Generator) -> None:
        self.force_bias = rng.normal(0.0, self.spec.force_bias_stddev, 3)
        self.torque_bias = rng.normal(0.0, self.spec.torque_bias_stddev, 3)

    def measure(self, data: mujoco.MjData, rng: np.random.Generator, stamp: int) -> WrenchReading:
        s = self.spec
        # MuJoCo gives the force the parent exerts on the measured link's subtree; the load on the sensor is its
        # opposite (a hanging payload pulls along gravity).
        force = -data.sensordata[self.force:self.force + 3] + self.force_bias + rng.normal(0.0, s.force_noise_stddev, 3)
        torque = (-data.sensordata[self.torque:self.torque + 3] + self.torque_bias
                  + rng.normal(0.0, s.torque_noise_stddev, 3))
        return WrenchReading(stamp, force, torque)


def topics(role, model) -> list[TopicSpec]:
    return [TopicSpec(f'{role.name}/wrench', 'geometry_msgs/msg/WrenchStamped', role.frame, sensor_qos(role.spec),
                      role.spec.rate, role.name)]


def make(context: SensorContext) -> ForceTorque:
    return ForceTorque(context.model, context.prefix, context.role.spec)


KIND = SensorKind('force_torque', ForceTorqueSpec, topics, make, add_mjcf, marker_size=0.012, marker_collides=False)
