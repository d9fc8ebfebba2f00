"""What a robot YAML file may say (``config/robots/*.yaml``), one dataclass per section.

Units are SI (REP 103): metres, kilograms, seconds, radians, hertz. Every field documents
itself below; :func:`robotsim_core.config_schema.parse_spec` enforces types and ranges.

Bounds (beyond the config-wide ones of :mod:`robotsim_core.config_schema`: every number finite and
within +-1e6, every positive number >= 1e-6):

* sizes (lengths, radii, thicknesses) >= :data:`MIN_SIZE` (1 mm): MuJoCo needs a moving body's
  inertia above its resolution, and contacts of thinner shapes are not resolved at a 2 ms step;
* masses from :data:`MIN_MASS` (1 g) to :data:`MAX_MASS` (10 t);
* sensor rates from :data:`MIN_SENSOR_RATE` (0.1 Hz) to 100 Hz (lidar), 120 Hz (camera), 1 kHz (IMU),
  and never above the world's physics rate (checked when the scene is built);
* lidar: at most :data:`MAX_LIDAR_SAMPLES` beams per channel, :data:`MAX_LIDAR_CHANNELS` channels and
  :data:`MAX_LIDAR_RAYS` rays per scan (an Ouster OS1-128 at 2048 x 128);
* camera images at most :data:`MAX_IMAGE_SIDE` px a side: one offscreen buffer (4x multisampled),
  sized to the largest camera, serves every camera; software GL (llvmpipe) refuses sides above
  16384 px and a 4096 x 4096 buffer already takes about half a GiB;
* names (robot, arms, joints, links, wheels, sensors) are ROS name tokens: they become frame ids,
  topic names and MuJoCo names.
"""

from __future__ import annotations

import math
from dataclasses import MISSING, dataclass
from typing import Literal

from ..config_schema import spec_field
from ..errors import DescriptionError

Vec3 = tuple[float, float, float]
RGBA = tuple[float, float, float, float]

MIN_SIZE = 1e-3
MIN_MASS = 1e-3
MAX_MASS = 1e4
MIN_SENSOR_RATE = 0.1
MAX_LIDAR_SAMPLES = 8192
MAX_LIDAR_CHANNELS = 128
MAX_LIDAR_RAYS = 2048 * 128
MAX_IMAGE_SIDE = 4096
MAX_WHEELS = 20
NAME = (r'[A-Za-z][A-Za-z0-9_]*', 'a name of letters, digits and _ starting with a letter')
NAME_OR_EMPTY = (r'([A-Za-z][A-Za-z0-9_]*)?', "'' or a name of letters, digits and _ starting with a letter")


def size_field(default=MISSING, **rules):
    """A length that must be at least :data:`MIN_SIZE`."""
    return spec_field(default, at_least=MIN_SIZE, **rules)


def mass_field(default=MISSING):
    return spec_field(default, at_least=MIN_MASS, at_most=MAX_MASS)


def name_field(default=MISSING):
    return spec_field(default, pattern=NAME)


def colour_field(default):
    """RGBA, each component 0..1."""
    return spec_field(default, non_negative=True, at_most=1.0)


@dataclass
class PoseSpec:
    xyz: Vec3 = (0.0, 0.0, 0.0)
    """Translation in the parent frame (m)."""
    rpy: Vec3 = (0.0, 0.0, 0.0)
    """Fixed-axis roll, pitch, yaw (rad), as in URDF."""


@dataclass
class BaseSpec:
    size: Vec3 = size_field()
    """Chassis box full extents: length (x), width (y), height (z) in m."""
    mass: float = mass_field()
    """Chassis mass without wheels, arm or sensors (kg)."""
    ground_clearance: float = spec_field(0.02, non_negative=True)
    """Height of the chassis box's underside above the ground (m)."""
    color: RGBA = colour_field((0.25, 0.3, 0.35, 1.0))
    """RGBA of the chassis in URDF/MuJoCo visuals."""


@dataclass
class WheelCountSpec:
    """Wheels given as a count: even counts are left/right pairs over count/2 axles; an odd count
    adds an unpowered centre caster on the front axle."""

    count: int = spec_field(at_least=3, at_most=MAX_WHEELS)
    """Number of wheels including the caster (>= 3: two wheels alone cannot stand)."""
    radius: float = size_field()
    """Wheel radius (m)."""
    width: float = size_field()
    """Tyre width (m)."""
    mass: float = mass_field(0.2)
    """Mass of one wheel (kg)."""
    track: float | None = size_field(None)
    """Distance between left and right wheel centres (m); default chassis width + wheel width."""
    axle_positions: list[float] | None = None
    """x of each axle in base_link, front first (m); default spread over the chassis length."""
    driven: Literal['all', 'front', 'rear'] = 'all'
    """Which axles are powered."""
    steered: Literal['none', 'front'] = 'none'
    """Which axle steers (Ackermann robots need 'front')."""
    caster_radius: float | None = size_field(None)
    """Radius of the ball caster added for odd counts (m); default half the wheel radius."""
    friction: float = spec_field(1.0, positive=True)
    """Tyre-ground sliding friction coefficient."""

    def check(self, source: str, path: str) -> None:
        axles = self.count // 2
        if self.axle_positions is not None and len(self.axle_positions) != axles:
            raise DescriptionError(source, f'{path}.axle_positions',
                                   f'expected {axles} positions (one per axle for count {self.count}), '
                                   f'got {len(self.axle_positions)}')
        if self.axle_positions is not None and self.axle_positions != sorted(self.axle_positions, reverse=True):
            raise DescriptionError(source, f'{path}.axle_positions', 'expected axles ordered front (largest x) first')


@dataclass
class WheelSpec:
    """One wheel of an explicit wheel list; its side comes from the sign of its lateral offset."""

    position: tuple[float, float] = spec_field()
    """(x, y) of the wheel centre in base_link (m); y > 0 is left, y < 0 right, y = 0 a caster."""
    radius: float = size_field()
    """Wheel radius (m)."""
    width: float = size_field()
    """Tyre width (m); a passive wheel on the centre line is modelled as a ball caster."""
    name: str | None = name_field(None)
    """Link/joint name stem; default ``<side>_wheel_<index>``."""
    mass: float = mass_field(0.2)
    """Mass (kg)."""
    driven: bool = True
    """Powered by a motor."""
    steered: bool = False
    """Turned by a steering joint about z (Ackermann)."""
    friction: float = spec_field(1.0, positive=True)
    """Tyre-ground sliding friction coefficient."""


@dataclass
class DriveSpec:
    type: Literal['differential', 'ackermann'] = spec_field()
    """Kinematics of the base: differential (skid) steering or Ackermann steering."""
    max_linear_speed: float = spec_field(1.0, positive=True)
    """Forward speed limit (m/s)."""
    max_linear_acceleration: float = spec_field(1.0, positive=True)
    """Acceleration limit (m/s^2)."""
    max_yaw_rate: float = spec_field(2.0, positive=True)
    """Yaw rate limit (rad/s)."""
    max_steering_angle: float = spec_field(0.5, positive=True, at_most=math.pi / 2)
    """Largest steering angle of the virtual centre wheel (rad); Ackermann only."""
    wheel_max_torque: float = spec_field(2.0, positive=True)
    """Stall torque of one wheel gear motor at full duty (N m)."""
    wheel_no_load_speed: float | None = spec_field(None, positive=True)
    """Wheel speed of an unloaded motor at full duty (rad/s); default 1.5 x the top speed's wheel speed."""
    wheel_armature: float = spec_field(0.002, positive=True)
    """Rotor inertia reflected through the gearbox (kg m^2): what a gear motor adds to the wheel."""
    wheel_separation_multiplier: float = spec_field(1.0, positive=True, at_most=10.0)
    """Differential only: effective track / wheel track, used by the odometry and the inverse
    kinematics (ros2_control diff_drive_controller's parameter of that name). A skid-steer base
    scrubs its tyres sideways in a turn, so it turns slower than its wheel speeds say: > 1.
    Measure it with ``robotsim odometry calibrate``."""

    def check(self, source: str, path: str) -> None:
        if self.type != 'differential' and self.wheel_separation_multiplier != 1.0:
            raise DescriptionError(source, f'{path}.wheel_separation_multiplier',
                                   f'expected no multiplier for an {self.type} drive (its odometry takes the '
                                   'turn from the steering angles, not the track)')


@dataclass
class LinkShapeSpec:
    length: float = size_field()
    """Extent along ``direction`` (m); the next joint sits at the far end by default."""
    thickness: float = size_field(0.04)
    """Diameter of a cylinder / side of a square box (m)."""
    shape: Literal['cylinder', 'box'] = 'cylinder'
    """Collision and visual shape."""
    direction: Vec3 = (0.0, 0.0, 1.0)
    """Unit direction, in the link frame, in which the link extends."""
    mass: float = mass_field(0.1)
    """Mass (kg)."""

    def check(self, source: str, path: str) -> None:
        if abs(math.sqrt(sum(v * v for v in self.direction)) - 1.0) > 1e-6:
            raise DescriptionError(source, f'{path}.direction', f'expected a unit vector, got {list(self.direction)}')


@dataclass
class ArmJointSpec:
    name: str = name_field()
    """Joint name as published in /joint_states."""
    lower: float = spec_field()
    """Lower position limit (rad or m)."""
    upper: float = spec_field()
    """Upper position limit (rad or m)."""
    link: LinkShapeSpec = spec_field()
    """The link this joint moves."""
    type: Literal['revolute', 'prismatic'] = 'revolute'
    """Joint type."""
    axis: Vec3 = (0.0, 0.0, 1.0)
    """Unit axis in the joint frame."""
    effort: float = spec_field(5.0, positive=True)
    """Actuator force/torque limit (N or N m)."""
    velocity: float = spec_field(2.0, positive=True)
    """Velocity limit (rad/s or m/s)."""
    acceleration: float | None = spec_field(None, positive=True)
    """Acceleration limit (rad/s^2 or m/s^2) of planned arm motions; default 2 x velocity per second
    (full speed in 0.5 s, :data:`.model.DEFAULT_ACCELERATION_PER_VELOCITY`). Not written to the URDF
    (it has no such field)."""
    jerk: float | None = spec_field(None, positive=True)
    """Jerk limit (rad/s^3 or m/s^3) of planned arm motions; default 10 x the acceleration limit per
    second (full acceleration in 0.1 s, :data:`.model.DEFAULT_JERK_PER_ACCELERATION`). Not in the URDF."""
    origin: PoseSpec | None = None
    """Joint frame in the previous link's frame; default: the previous link's tip (the mount for the first)."""
    link_name: str | None = name_field(None)
    """Name of the moved link; default ``<joint name without _joint>_link``."""

    def check(self, source: str, path: str) -> None:
        if self.lower > self.upper:
            raise DescriptionError(source, f'{path}.lower',
                                   f'expected lower <= upper, got lower={self.lower} > upper={self.upper}')
        if abs(math.sqrt(sum(v * v for v in self.axis)) - 1.0) > 1e-6:
            raise DescriptionError(source, f'{path}.axis', f'expected a unit vector, got {list(self.axis)}')


@dataclass
class GripperSpec:
    stroke: float = size_field(0.02)
    """Travel of each finger from closed (m)."""
    finger_length: float = size_field(0.04)
    """Finger length along the last link's direction (m)."""
    finger_thickness: float = size_field(0.01)
    """Finger box side (m)."""
    finger_mass: float = mass_field(0.02)
    """Mass of one finger (kg)."""
    effort: float = spec_field(10.0, positive=True)
    """Grip force limit per finger (N)."""


@dataclass
class ArmSpec:
    name: str = name_field()
    """Arm name; names the gripper's fingers and the arm's controller."""
    joints: list[ArmJointSpec] = spec_field(non_empty=True)
    """Serial chain from the mount outwards."""
    parent: str = 'base_link'
    """Link the arm is mounted on."""
    mount: PoseSpec = spec_field(default_factory=PoseSpec)
    """First joint frame in the parent link's frame."""
    gripper: GripperSpec | None = None
    """Optional parallel gripper at the tip of the last link."""


@dataclass
class TopicQosSpec:
    """QoS of a sensor's topics when the default (SensorDataQoS: best effort, depth 5) does not
    match what the real driver uses."""

    reliability: Literal['best_effort', 'reliable'] = 'best_effort'
    """Delivery guarantee."""
    durability: Literal['volatile', 'transient_local'] = 'volatile'
    """Whether late subscribers get the last messages."""
    depth: int = spec_field(5, at_least=1, at_most=1000)
    """History depth."""


class SensorSpec:
    """A ``sensors`` entry: its ``type`` names an installed sensor kind, whose spec dataclass parses it
    (robotsim_core.sensor_kinds; the built-in kinds' specs live in robotsim_sensors: LidarSpec, CameraSpec,
    ImuSpec, RangeSpec, NavSatSpec)."""

    @staticmethod
    def __parse_config__(value, source: str, path: str):
        from ..config_schema import parse_tagged
        from ..sensor_kinds import sensor_kinds
        return parse_tagged([kind.spec for kind in sensor_kinds().values()], value, source, path)


@dataclass
class RobotSpec:
    """A robot generated entirely from YAML."""

    name: str = name_field()
    """Robot name (URDF robot name, MuJoCo model name)."""
    base: BaseSpec = spec_field()
    """The chassis."""
    wheels: WheelCountSpec | list[WheelSpec] = spec_field()
    """Wheels as a count (mapping) or an explicit list of placements."""
    drive: DriveSpec = spec_field()
    """Drive kinematics and limits."""
    arms: list[ArmSpec] = spec_field(default_factory=list)
    """Serial arms."""
    sensors: list[SensorSpec] = spec_field(default_factory=list)
    """Sensors with mounts, rates and noise."""


@dataclass
class OverlayWheelSpec:
    joint: str = spec_field()
    """URDF joint that spins the wheel (continuous or revolute)."""
    driven: bool = True
    """Powered by a motor."""
    steer_joint: str | None = None
    """URDF joint (about z) that steers this wheel, if any."""
    radius: float | None = size_field(None)
    """Wheel radius (m); default from the wheel link's cylinder or sphere collision."""


@dataclass
class OverlayArmSpec:
    name: str = name_field()
    """Arm name."""
    joints: list[str] = spec_field(non_empty=True)
    """URDF joints of the arm, base to tip."""
    gripper_joints: list[str] = spec_field(default_factory=list)
    """URDF joints of the gripper fingers."""


@dataclass
class OverlayLegsSpec:
    """A floating-base robot that stands on its legs (a quadruped, a humanoid): every joint listed is driven by a
    joint-level PD servo with a torque limit, as a legged robot's motor drivers are (q, dq, kp, kd, feed-forward
    torque per joint). The base floats: nothing holds it up but the feet."""

    joints: list[str] = spec_field(non_empty=True)
    """URDF joints driven by the servos, in the order of a command's array (a ``Float64MultiArray``'s ``data``)."""
    feet: list[str] = spec_field(non_empty=True)
    """Links that touch the ground when the robot stands (their contacts are reported as foot contacts)."""
    kp: float = spec_field(20.0, positive=True, at_most=10000.0)
    """Default position gain (N m/rad) of a position command (a low-level command carries its own)."""
    kd: float = spec_field(0.5, non_negative=True, at_most=1000.0)
    """Default velocity gain (N m s/rad)."""
    armature: float = spec_field(0.01, non_negative=True, at_most=10.0)
    """Reflected rotor inertia of each geared joint motor (kg m^2)."""
    stance: dict[str, float] = spec_field(default_factory=dict)
    """Standing joint angles (rad) by joint; joints not given stand at 0."""
    crouch: dict[str, float] = spec_field(default_factory=dict)
    """Joint angles (rad) the robot starts in, lying on the floor; default the stance."""

    def check(self, source: str, path: str) -> None:
        for key in ('stance', 'crouch'):
            for joint, value in getattr(self, key).items():
                if joint not in self.joints:
                    raise DescriptionError(source, _join_key(path, f'{key}.{joint}'),
                                           f'expected one of legs.joints {self.joints}, got {joint!r}')
                if not isinstance(value, (int, float)) or isinstance(value, bool) or not math.isfinite(value):
                    raise DescriptionError(source, _join_key(path, f'{key}.{joint}'),
                                           f'expected a finite angle (rad), got {value!r}')
        if len(set(self.joints)) != len(self.joints):
            raise DescriptionError(source, _join_key(path, 'joints'), 'expected every joint once')


@dataclass
class OverlayDriveSpec(DriveSpec):
    wheel_max_torque: float | None = spec_field(None, positive=True)
    """Stall torque of one wheel motor (N m); default the wheel joint's URDF ``<limit effort>``
    (2 N m when the URDF gives none)."""


@dataclass
class ContactSpec:
    """Contact of one link's collision shapes, overriding what its URDF ``<gazebo reference>`` tag says."""

    friction: float | None = spec_field(None, non_negative=True)
    """Sliding friction coefficient; 0 makes the link slide freely (a passive caster)."""
    stiffness: float | None = spec_field(None, positive=True)
    """Contact stiffness (N/m), Gazebo's ``kp``."""
    damping: float | None = spec_field(None, non_negative=True)
    """Contact damping (N s/m), Gazebo's ``kd``."""
    self_collide: bool | None = None
    """Whether the link collides with the robot's other links (Gazebo's ``selfCollide``); default true."""


@dataclass
class UrdfOverlaySpec:
    """An existing URDF plus what it cannot say: the way Gazebo's ``<gazebo>`` tags extend one.

    With ``drive`` and ``wheels`` the robot is a mobile base (its root link floats); without them
    it is a fixed-base robot whose root link is welded to the world at ``mount``."""

    urdf: str = spec_field()
    """Path of the URDF, relative to this overlay file, or ``package://NAME/...``."""
    drive: OverlayDriveSpec | None = None
    """Drive kinematics and limits (mobile bases; give ``wheels`` too)."""
    wheels: list[OverlayWheelSpec] = spec_field(default_factory=list)
    """The base's wheels by joint (mobile bases; give ``drive`` too)."""
    legs: OverlayLegsSpec | None = None
    """A robot that stands on its legs (no drive, no wheels): a floating base and joint PD servos."""
    mount: PoseSpec | None = None
    """Fixed-base robots: pose of the root link in the robot's spawn frame (e.g. on a table); default
    the spawn pose itself. Legged robots: where the root starts above the spawn pose (lying in its crouch)."""
    name: str | None = name_field(None)
    """Robot name; default the URDF's."""
    base_link: str = 'base_link'
    """Chassis link (mobile bases) or the arm's base link (fixed base)."""
    package_paths: dict[str, str] = spec_field(default_factory=dict)
    """``package://NAME`` -> directory (relative to this file) for meshes."""
    arms: list[OverlayArmSpec] = spec_field(default_factory=list)
    """Arms by joint name."""
    held_joints: list[str] = spec_field(default_factory=list)
    """Joints that are no arm (a torso lift, a head's pan and tilt): each held at its initial position by a position
    servo, as a robot's own controller holds them when nobody commands them."""
    sensors: list[SensorSpec] = spec_field(default_factory=list)
    """Sensors to mount; frames are added to the URDF as fixed links."""
    contacts: dict[str, ContactSpec] = spec_field(default_factory=dict)
    """Per-link contact overrides by link name (friction, stiffness, damping, self_collide)."""
    srdf: str | None = None
    """MoveIt SRDF (relative to this file, or ``package://``) whose ``<disable_collisions>`` pairs never collide."""
    self_collision: bool = True
    """Links of the robot collide with each other (adjacent links and the exclusions never do)."""
    gravity_compensation: bool = True
    """Arm joints' position servos cancel gravity on the links they carry, as real arm controllers do."""
    strict: bool = False
    """Refuse a URDF whose inertials need repair instead of repairing them with a warning."""

    def check(self, source: str, path: str) -> None:
        if (self.drive is None) != (not self.wheels):
            given, missing = ('drive', 'wheels') if self.drive is not None else ('wheels', 'drive')
            raise DescriptionError(source, _join_key(path, missing),
                                   f'expected {missing} with {given} (a mobile base), or neither (a fixed-base robot)')
        if self.mount is not None and self.drive is not None:
            raise DescriptionError(source, _join_key(path, 'mount'),
                                   'expected no mount on a mobile base (it spawns on the floor); mount is for fixed-base robots')
        if self.legs is not None and self.drive is not None:
            raise DescriptionError(source, _join_key(path, 'legs'),
                                   'expected legs or a drive with wheels, not both (a legged robot has no wheel drive)')

    @property
    def fixed_base(self) -> bool:
        return self.drive is None and self.legs is None


def _join_key(path: str, key: str) -> str:
    return f'{path}.{key}' if path else key
