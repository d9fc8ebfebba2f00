"""The robot model every output is generated from: a kinematic tree plus the roles of its parts.

Both the YAML generator (:mod:`.build`) and the URDF importer (:mod:`.urdf_import`) produce a
:class:`RobotModel`; :mod:`robotsim_core.description.urdf` and :mod:`robotsim_core.description.mjcf` only ever read one.
That is what keeps the URDF and the MuJoCo model from disagreeing.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from typing import Literal

from ..geometry import Pose

JointType = Literal['fixed', 'revolute', 'continuous', 'prismatic']
MOVING_JOINT_TYPES = ('revolute', 'continuous', 'prismatic')


@dataclass(frozen=True)
class Geometry:
    """A collision or visual shape in its link's frame (URDF semantics: box size is full extents,
    cylinder axis is local z, mesh ``filename`` is an absolute path once resolved)."""

    kind: Literal['box', 'cylinder', 'sphere', 'mesh']
    size: tuple[float, ...] = ()
    filename: str = ''
    scale: tuple[float, float, float] = (1.0, 1.0, 1.0)
    # The file MuJoCo reads when ``filename`` is in a format it cannot (a cached STL conversion).
    mujoco_file: str = ''


@dataclass(frozen=True)
class Shape:
    origin: Pose
    geometry: Geometry
    rgba: tuple[float, float, float, float] | None = None


@dataclass(frozen=True)
class Inertial:
    origin: Pose
    mass: float
    # ixx, ixy, ixz, iyy, iyz, izz about the inertial origin, in the inertial frame
    inertia: tuple[float, float, float, float, float, float]


@dataclass
class Link:
    name: str
    inertial: Inertial | None = None
    visuals: list[Shape] = field(default_factory=list)
    collisions: list[Shape] = field(default_factory=list)


# Defaults of the motion limits a URDF cannot express (robots that do not give them in their YAML
# spec, every imported URDF): full speed in 0.5 s, full acceleration in 0.1 s. Gentle on the hobby
# servos of the shipped rover; for the Panda (4.35 rad/s^2, 43.5 rad/s^3) below Franka's published
# joint limits (7.5-20 rad/s^2, 7500 rad/s^3).
DEFAULT_ACCELERATION_PER_VELOCITY = 2.0
"""Default acceleration limit as a multiple of the velocity limit (1/s)."""
DEFAULT_JERK_PER_ACCELERATION = 10.0
"""Default jerk limit as a multiple of the acceleration limit (1/s)."""


@dataclass(frozen=True)
class JointLimit:
    lower: float = 0.0
    """Lower position limit (rad or m; URDF ``<limit lower>``)."""
    upper: float = 0.0
    """Upper position limit (rad or m; URDF ``<limit upper>``)."""
    effort: float = 0.0
    """Actuator force/torque limit (N or N m; URDF ``<limit effort>``)."""
    velocity: float = 0.0
    """Velocity limit (rad/s or m/s; URDF ``<limit velocity>``); 0: none given."""
    acceleration: float | None = None
    """Acceleration limit (rad/s^2 or m/s^2) for time parameterisation; not part of URDF (never
    written to it). None: :attr:`max_acceleration` derives it from the velocity limit."""
    jerk: float | None = None
    """Jerk limit (rad/s^3 or m/s^3) for time parameterisation; not part of URDF. None:
    :attr:`max_jerk` derives it from the acceleration limit."""

    @property
    def max_acceleration(self) -> float:
        """The acceleration limit in force: the given one, else
        :data:`DEFAULT_ACCELERATION_PER_VELOCITY` x velocity (0 when there is no velocity limit)."""
        return self.acceleration if self.acceleration is not None else DEFAULT_ACCELERATION_PER_VELOCITY * self.velocity

    @property
    def max_jerk(self) -> float:
        """The jerk limit in force: the given one, else :data:`DEFAULT_JERK_PER_ACCELERATION` x
        :attr:`max_acceleration`."""
        return self.jerk if self.jerk is not None else DEFAULT_JERK_PER_ACCELERATION * self.max_acceleration


@dataclass(frozen=True)
class Mimic:
    joint: str
    multiplier: float = 1.0
    offset: float = 0.0


@dataclass
class Joint:
    name: str
    type: JointType
    parent: str
    child: str
    origin: Pose = Pose()
    axis: tuple[float, float, float] = (1.0, 0.0, 0.0)
    limit: JointLimit | None = None
    mimic: Mimic | None = None


@dataclass
class KinematicTree:
    """Links joined by joints into a tree rooted at one link (checked by :meth:`validate`)."""

    name: str
    links: dict[str, Link] = field(default_factory=dict)
    joints: dict[str, Joint] = field(default_factory=dict)

    def add_link(self, link: Link) -> Link:
        self.links[link.name] = link
        return link

    def add_joint(self, joint: Joint) -> Joint:
        self.joints[joint.name] = joint
        return joint

    def parent_joint(self, link: str) -> Joint | None:
        for joint in self.joints.values():
            if joint.child == link:
                return joint
        return None

    def child_joints(self, link: str) -> list[Joint]:
        return [joint for joint in self.joints.values() if joint.parent == link]

    def root(self) -> str:
        children = {joint.child for joint in self.joints.values()}
        roots = [name for name in self.links if name not in children]
        return roots[0]

    def moving_joints(self) -> list[Joint]:
        return [joint for joint in self.joints.values() if joint.type in MOVING_JOINT_TYPES]

    def validate(self, source: str) -> None:
        """Raise :class:`DescriptionError` unless this is a single tree of known links."""
        from ..errors import DescriptionError

        parents: dict[str, str] = {}
        for joint in self.joints.values():
            for end in ('parent', 'child'):
                if getattr(joint, end) not in self.links:
                    raise DescriptionError(source, f'joint[{joint.name}].{end}',
                                           f'expected an existing link, got {getattr(joint, end)!r}')
            if joint.child in parents:
                raise DescriptionError(
                    source, f'joint[{joint.name}]',
                    f'link {joint.child!r} already has parent joint {parents[joint.child]!r}: '
                    'a robot must be a tree (kinematic loops are not supported)')
            parents[joint.child] = joint.name
            if joint.mimic is not None and joint.mimic.joint not in self.joints:
                raise DescriptionError(source, f'joint[{joint.name}].mimic.joint',
                                       f'expected an existing joint, got {joint.mimic.joint!r}')
        roots = [name for name in self.links if name not in parents]
        if len(roots) != 1:
            detail = 'a link closes a kinematic loop' if not roots else f'unconnected roots {roots}'
            raise DescriptionError(source, 'links', f'expected exactly one root link, found {len(roots)} ({detail})')
        # Every link must be reachable from the root; unreachable ones sit on a cycle.
        reachable, frontier = {roots[0]}, [roots[0]]
        while frontier:
            for joint in self.child_joints(frontier.pop()):
                if joint.child not in reachable:
                    reachable.add(joint.child)
                    frontier.append(joint.child)
        cyclic = sorted(set(self.links) - reachable)
        if cyclic:
            raise DescriptionError(source, 'links',
                                   f'links {cyclic} form a kinematic loop: a robot must be a tree')

    def depth_first(self) -> list[str]:
        """Link names, parents before children, children in joint declaration order."""
        order, stack = [], [self.root()]
        while stack:
            link = stack.pop()
            order.append(link)
            stack.extend(reversed([joint.child for joint in self.child_joints(link)]))
        return order


@dataclass(frozen=True)
class WheelRole:
    """A wheel of the base: which joint spins it and where it sits."""

    name: str
    joint: str
    link: str
    side: Literal['left', 'right', 'centre']
    radius: float
    width: float
    driven: bool
    steer_joint: str | None = None
    position: tuple[float, float, float] = (0.0, 0.0, 0.0)  # axle centre in base_link


@dataclass(frozen=True)
class DriveRole:
    type: Literal['differential', 'ackermann']
    wheels: tuple[WheelRole, ...]
    wheelbase: float
    track: float
    max_linear_speed: float
    max_linear_acceleration: float
    max_yaw_rate: float
    max_steering_angle: float
    wheel_max_torque: float
    wheel_no_load_speed: float     # rad/s at full duty without load (sets the back-EMF damping)
    wheel_armature: float          # kg m^2 reflected rotor inertia
    # Skid-steer calibration (ros2_control diff_drive_controller's name): the track both the
    # odometry and the inverse kinematics use is track * multiplier; 1 for Ackermann drives.
    wheel_separation_multiplier: float = 1.0

    @cached_property
    def driven_wheels(self) -> tuple[WheelRole, ...]:
        return tuple(wheel for wheel in self.wheels if wheel.driven)

    @property
    def effective_track(self) -> float:
        """Track of the ideal differential drive that turns like this base (m): wider than the
        wheels' track on a skid-steer base, whose tyres scrub sideways in a turn."""
        return self.track * self.wheel_separation_multiplier

    @property
    def max_yaw_acceleration(self) -> float:
        """Yaw acceleration (rad/s^2) at which the base's velocity limiter (robotsim_core.drive) slews its yaw
        rate: the one that accelerates the outer wheel at :attr:`max_linear_acceleration`."""
        return self.max_linear_acceleration / max(self.effective_track / 2, 1e-6)


@dataclass(frozen=True)
class LinkContact:
    """Contact parameters of one link's collision geoms (None: MuJoCo's default)."""

    friction: float | None = None      # sliding coefficient; 0 = frictionless
    stiffness: float | None = None     # N/m (Gazebo kp)
    damping: float | None = None       # N s/m (Gazebo kd)
    self_collide: bool = True


@dataclass(frozen=True)
class ArmRole:
    name: str
    joints: tuple[str, ...]
    gripper_joints: tuple[str, ...] = ()


@dataclass(frozen=True)
class LegsRole:
    """The legs of a floating-base robot: joints driven by joint-level PD servos (torque motors), the feet it stands on
    and the poses it stands and lies in (robotsim_sim.joint_servos drives them)."""

    joints: tuple[str, ...]
    """Servoed joints, in the order of a command's array."""
    feet: tuple[str, ...]
    """Links that touch the ground when standing."""
    kp: float
    """Default position gain (N m/rad)."""
    kd: float
    """Default velocity gain (N m s/rad)."""
    armature: float
    """Reflected rotor inertia per joint motor (kg m^2)."""
    stance: tuple[float, ...]
    """Standing angle per joint (rad), in ``joints`` order."""
    crouch: tuple[float, ...]
    """Starting (lying) angle per joint (rad), in ``joints`` order."""


@dataclass(frozen=True)
class SensorRole:
    """A sensor and the frame its data is expressed in; ``spec`` is its YAML spec object."""

    name: str
    type: str                  # its kind (robotsim_core.sensor_kinds): 'lidar', 'camera', 'imu', 'range', ...
    frame: str                 # frame_id of the messages (optical frame for cameras)
    mount_link: str            # the link the sensor body is rigidly mounted on
    spec: object


@dataclass
class RobotModel:
    name: str
    source: str
    tree: KinematicTree
    base_link: str
    footprint_link: str
    drive: DriveRole | None
    arms: list[ArmRole] = field(default_factory=list)
    sensors: list[SensorRole] = field(default_factory=list)
    # Sliding friction per link for ground contact; 0 means frictionless (ball casters).
    link_friction: dict[str, float] = field(default_factory=dict)
    # Imported robots (see description/urdf_import.py); generated robots keep the defaults.
    fixed_base: bool = False               # root welded to the world at ``mount`` (no free joint)
    mount: Pose = Pose()                   # root link in the spawn frame (fixed base)
    # MuJoCo inertial per link after lumping fixed-joint links into their moving ancestor and
    # repairing invalid tensors; None: every link's own URDF inertial as is.
    body_inertials: dict[str, Inertial | None] | None = None
    contacts: dict[str, LinkContact] = field(default_factory=dict)
    collision_excludes: list[tuple[str, str]] = field(default_factory=list)   # link pairs that never collide
    exclusion_counts: dict[str, int] = field(default_factory=dict)            # reason -> pairs excluded
    warnings: list[str] = field(default_factory=list)                         # repairs, one line each
    gravity_compensation: bool = False     # arm servos cancel gravity on the links they carry
    initial_positions: dict[str, float] = field(default_factory=dict)  # joint -> start position (default 0)
    legs: LegsRole | None = None           # a floating base standing on joint-servoed legs (no drive)
    held_joints: tuple[str, ...] = ()      # no arm: each held at its initial position by a position servo

    def default_arm(self) -> ArmRole:
        """The arm a command means when it names none: the one with the most joints (the first of those on a tie), so
        a trivial chain an import found first (a torso lift, a head) is not the arm that IK and planning use."""
        if not self.arms:
            raise ValueError(f'{self.name}: the robot has no arm')
        return max(self.arms, key=lambda arm: len(arm.joints))

    def body_name(self, link: str) -> str:
        """MuJoCo body of a link: its own name, except a URDF root link called ``world`` (MuJoCo's
        world body has that name), which becomes ``<robot>_world``."""
        return f'{self.name}_world' if link == 'world' and link == self.tree.root() else link

    def summary(self) -> dict:
        tree = self.tree
        return {
            'robot': self.name,
            'links': len(tree.links),
            'joints': len(tree.joints),
            'moving_joints': len(tree.moving_joints()),
            'mass_kg': round(sum(link.inertial.mass for link in tree.links.values() if link.inertial), 6),
            'drive': self.drive.type if self.drive else None,
            'fixed_base': self.fixed_base,
            'legs': (f'{len(self.legs.joints)} servoed joints, feet {", ".join(self.legs.feet)}' if self.legs else None),
            'wheels': len(self.drive.wheels) if self.drive else 0,
            'wheelbase_m': round(self.drive.wheelbase, 6) if self.drive else None,
            'track_m': round(self.drive.track, 6) if self.drive else None,
            'arms': [f'{arm.name} ({len(arm.joints)} joints{", gripper" if arm.gripper_joints else ""})'
                     for arm in self.arms],
            'held_joints': list(self.held_joints),
            'sensors': [f'{sensor.name}: {sensor.type} in {sensor.frame}' for sensor in self.sensors],
        }
