"""Sensor kind ``contact``: a bumper or touch sensor on a link, published as Gazebo's contact sensor is through
``ros_gz_bridge`` (``ros_gz_interfaces/msg/Contacts`` on ``<name>/contacts``), so a node written against Gazebo
reads it unchanged.

Each reading lists what touches the link's collision shapes at that instant, one entry per other body: a free
world entity or another robot's link by its MuJoCo body name (``crate``, ``robot2/base_link``), a static
shape of the world by its own name (``wall_0``, a fixed box's name, ``floor``), another link of the same
robot by its link name. For each contact point of that body: its position, and the contact normal pointing
from the other body into the sensed link, in the sensor frame (``<name>_link``: the link with the sensor's
pose); the penetration depth (m, positive when the shapes overlap); and the wrench on the sensed link (force
in N, torque in N m about the sensor frame's origin), with its opposite on the other body. Contacts whose
normal forces sum to less than ``force_threshold`` are left out, as a real bumper's switch needs a push.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

import mujoco
import numpy as np

from robotsim_core.config_schema import spec_field
from robotsim_core.contract import TopicSpec, sensor_qos
from robotsim_core.description.spec import MIN_SENSOR_RATE, PoseSpec, TopicQosSpec, name_field
from robotsim_core.sensor_kinds import SensorContext, SensorFrames, SensorKind

MAX_CONTACT_POINTS = 256
"""Contact points one reading holds at most (the deepest first beyond)."""


@dataclass
class ContactSpec(SensorFrames):
    type: Literal['contact'] = spec_field()
    """Contact (bumper) sensor: ros_gz_interfaces/Contacts on ``<name>/contacts``."""
    parent: str = spec_field()
    """The sensed link: every contact of its collision shapes is reported."""
    name: str = name_field('bumper')
    """Sensor name; frame ``<name>_link``, topic ``<name>/contacts``."""
    pose: PoseSpec = spec_field(default_factory=PoseSpec)
    """Sensor frame in the sensed link: positions, normals and wrenches are expressed in it."""
    rate: float = spec_field(50.0, at_least=MIN_SENSOR_RATE, at_most=1000.0)
    """Readings per second (Hz); one is published even when nothing touches (an empty list)."""
    force_threshold: float = spec_field(0.0, non_negative=True, at_most=1e6)
    """Least sum of normal forces (N) for a touching body to be reported (0: any contact)."""
    qos: TopicQosSpec | None = None
    """QoS override for this sensor's topic (default: SensorDataQoS)."""


@dataclass
class Touch:
    """The contact points of one other body with the sensed link."""

    other: str
    """What touches (see the module docstring)."""
    other_id: int
    """MuJoCo body id of the other body (0: a static shape of the world)."""
    positions: np.ndarray
    """(n, 3) contact points in the sensor frame (m)."""
    normals: np.ndarray
    """(n, 3) unit normals from the other body into the sensed link, in the sensor frame."""
    depths: np.ndarray
    """(n,) penetration depths (m)."""
    forces: np.ndarray
    """(n, 3) force on the sensed link at each point, in the sensor frame (N)."""
    torques: np.ndarray
    """(n, 3) torque of that force about the sensor frame's origin (N m)."""


@dataclass
class ContactReading:
    stamp: int
    link: str
    """The sensed link's MuJoCo body name."""
    link_id: int
    touches: list[Touch] = field(default_factory=list)


class Contact:
    """The placed sensor: reads the contacts of the sensed link's body from MuJoCo's contact list."""

    def __init__(self, model: mujoco.MjModel, prefix: str, spec: ContactSpec, site: str):
        self.model, self.spec = model, spec
        self.body = model.body(prefix + spec.parent).id
        self.link = model.body(self.body).name
        self.site = model.site(site).id
        self.prefix = prefix
        self._wrench = np.zeros(6)

    def _other_name(self, geom: int) -> tuple[str, int]:
        body = int(self.model.geom_bodyid[geom])
        if body == 0:
            return self.model.geom(geom).name or f'world_geom_{geom}', 0
        name = self.model.body(body).name
        if self.prefix and name.startswith(self.prefix):
            name = name[len(self.prefix):]  # another link of this robot: its link name
        return name, body

    def measure(self, data: mujoco.MjData, rng: np.random.Generator, stamp: int) -> ContactReading:
        rotation = data.site_xmat[self.site].reshape(3, 3)
        origin = data.site_xpos[self.site]
        grouped: dict[tuple[str, int], list] = {}
        count = 0
        for index in range(data.ncon):
            contact = data.contact[index]
            first, second = int(self.model.geom_bodyid[contact.geom1]), int(self.model.geom_bodyid[contact.geom2])
            if self.body not in (first, second) or first == second:
                continue
            if count >= MAX_CONTACT_POINTS:
                break
            count += 1
            # MuJoCo's contact frame: its first row is the normal, from geom1 towards geom2; the force is the one
            # geom1 exerts on geom2. On the sensed link it keeps its sign when the link is geom2.
            sign = 1.0 if second == self.body else -1.0
            other = contact.geom1 if sign > 0 else contact.geom2
            mujoco.mj_contactForce(self.model, data, index, self._wrench)
            frame = contact.frame.reshape(3, 3)
            force = sign * (frame.T @ self._wrench[:3])
            point = contact.pos - origin
            torque = np.cross(point, force) + sign * (frame.T @ self._wrench[3:])
            grouped.setdefault(self._other_name(other), []).append(
                (point @ rotation, sign * frame[0] @ rotation, -float(contact.dist), force @ rotation,
                 torque @ rotation, float(self._wrench[0])))
        touches = []
        for (name, body), points in sorted(grouped.items()):
            if sum(p[5] for p in points) < self.spec.force_threshold:
                continue
            touches.append(Touch(name, body, *(np.array([p[i] for p in points], dtype=float) for i in range(5))))
        return ContactReading(stamp, self.link, self.body, touches)


def topics(role, model) -> list[TopicSpec]:
    return [TopicSpec(f'{role.name}/contacts', 'ros_gz_interfaces/msg/Contacts', role.frame, sensor_qos(role.spec),
                      role.spec.rate, role.name)]


def make(context: SensorContext) -> Contact:
    return Contact(context.model, context.prefix, context.role.spec, context.name(context.role.frame))


KIND = SensorKind('contact', ContactSpec, topics, make, marker_size=0.01, marker_collides=False)
