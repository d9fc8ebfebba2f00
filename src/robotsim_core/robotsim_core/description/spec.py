"""What a robot YAML file may say (``config/robots/*.yaml``), one dataclass per section.

Units are SI (REP 103): metres, kilograms, seconds, radians, hertz. Every field documents
itself below; :func:`robotsim_core.config_schema.parse_spec` enforces types and ranges.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal

from ..config_schema import spec_field
from ..errors import DescriptionError

Vec3 = tuple[float, float, float]


@dataclass
class PoseSpec:
    xyz: Vec3 = (0.0, 0.0, 0.0)
    """Translation in the parent frame (m)."""
    rpy: Vec3 = (0.0, 0.0, 0.0)
    """Fixed-axis roll, pitch, yaw (rad), as in URDF."""


@dataclass
class BaseSpec:
    size: Vec3 = spec_field(positive=True)
    """Chassis box full extents: length (x), width (y), height (z) in m."""
    mass: float = spec_field(positive=True)
    """Chassis mass without wheels, arm or sensors (kg)."""
    ground_clearance: float = spec_field(0.02, non_negative=True)
    """Height of the chassis box's underside above the ground (m)."""
    color: tuple[float, float, float, float] = (0.25, 0.3, 0.35, 1.0)
    """RGBA of the chassis in URDF/MuJoCo visuals."""


@dataclass
class WheelCountSpec:
    """Wheels given as a count: even counts are left/right pairs over count/2 axles; an odd count
    adds an unpowered centre caster on the front axle."""

    count: int = spec_field(at_least=3)
    """Number of wheels including the caster (>= 3: two wheels alone cannot stand)."""
    radius: float = spec_field(positive=True)
    """Wheel radius (m)."""
    width: float = spec_field(positive=True)
    """Tyre width (m)."""
    mass: float = spec_field(0.2, positive=True)
    """Mass of one wheel (kg)."""
    track: float | None = spec_field(None, positive=True)
    """Distance between left and right wheel centres (m); default chassis width + wheel width."""
    axle_positions: list[float] | None = None
    """x of each axle in base_link, front first (m); default spread over the chassis length."""
    driven: Literal['all', 'front', 'rear'] = 'all'
    """Which axles are powered."""
    steered: Literal['none', 'front'] = 'none'
    """Which axle steers (Ackermann robots need 'front')."""
    caster_radius: float | None = spec_field(None, positive=True)
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
    radius: float = spec_field(positive=True)
    """Wheel radius (m)."""
    width: float = spec_field(positive=True)
    """Tyre width (m); a passive wheel on the centre line is modelled as a ball caster."""
    name: str | None = None
    """Link/joint name stem; default ``<side>_wheel_<index>``."""
    mass: float = spec_field(0.2, positive=True)
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


@dataclass
class LinkShapeSpec:
    length: float = spec_field(positive=True)
    """Extent along ``direction`` (m); the next joint sits at the far end by default."""
    thickness: float = spec_field(0.04, positive=True)
    """Diameter of a cylinder / side of a square box (m)."""
    shape: Literal['cylinder', 'box'] = 'cylinder'
    """Collision and visual shape."""
    direction: Vec3 = (0.0, 0.0, 1.0)
    """Unit direction, in the link frame, in which the link extends."""
    mass: float = spec_field(0.1, positive=True)
    """Mass (kg)."""

    def check(self, source: str, path: str) -> None:
        if abs(math.sqrt(sum(v * v for v in self.direction)) - 1.0) > 1e-6:
            raise DescriptionError(source, f'{path}.direction', f'expected a unit vector, got {list(self.direction)}')


@dataclass
class ArmJointSpec:
    name: str = spec_field()
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
    origin: PoseSpec | None = None
    """Joint frame in the previous link's frame; default: the previous link's tip (the mount for the first)."""
    link_name: str | None = None
    """Name of the moved link; default ``<joint name without _joint>_link``."""

    def check(self, source: str, path: str) -> None:
        if self.lower > self.upper:
            raise DescriptionError(source, f'{path}.lower',
                                   f'expected lower <= upper, got lower={self.lower} > upper={self.upper}')
        if abs(math.sqrt(sum(v * v for v in self.axis)) - 1.0) > 1e-6:
            raise DescriptionError(source, f'{path}.axis', f'expected a unit vector, got {list(self.axis)}')


@dataclass
class GripperSpec:
    stroke: float = spec_field(0.02, positive=True)
    """Travel of each finger from closed (m)."""
    finger_length: float = spec_field(0.04, positive=True)
    """Finger length along the last link's direction (m)."""
    finger_thickness: float = spec_field(0.01, positive=True)
    """Finger box side (m)."""
    finger_mass: float = spec_field(0.02, positive=True)
    """Mass of one finger (kg)."""
    effort: float = spec_field(10.0, positive=True)
    """Grip force limit per finger (N)."""


@dataclass
class ArmSpec:
    name: str = spec_field()
    """Arm name; prefixes nothing, but names the arm's controller."""
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
    depth: int = spec_field(5, at_least=1)
    """History depth."""


@dataclass
class LidarSpec:
    type: Literal['lidar'] = spec_field()
    """Ray-cast lidar: one channel publishes LaserScan, more publish PointCloud2."""
    name: str = 'laser'
    """Sensor name; also its frame_id."""
    parent: str = 'base_link'
    """Link the sensor is mounted on."""
    pose: PoseSpec = spec_field(default_factory=PoseSpec)
    """Sensor frame in the parent link (REP 103: x forward, z up)."""
    rate: float = spec_field(10.0, positive=True)
    """Scan rate (Hz)."""
    samples: int = spec_field(360, at_least=1)
    """Beams per revolution/channel."""
    horizontal_fov: float = spec_field(2 * math.pi, positive=True, at_most=2 * math.pi)
    """Horizontal field of view (rad), centred on +x."""
    channels: int = spec_field(1, at_least=1)
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

    @property
    def frame(self) -> str:
        return self.name


@dataclass
class CameraSpec:
    type: Literal['camera'] = spec_field()
    """Offscreen-rendered camera."""
    name: str = 'camera'
    """Sensor name; frames are ``<name>_link`` and ``<name>_optical_frame``, topics ``/<name>/...``."""
    parent: str = 'base_link'
    """Link the camera body is mounted on."""
    pose: PoseSpec = spec_field(default_factory=PoseSpec)
    """``<name>_link`` in the parent link (REP 103 body frame: x along the view direction)."""
    rate: float = spec_field(15.0, positive=True)
    """Capture rate (Hz)."""
    width: int = spec_field(320, at_least=1)
    """Image width (px)."""
    height: int = spec_field(240, at_least=1)
    """Image height (px)."""
    vertical_fov: float = spec_field(1.0, positive=True, at_most=math.pi - 1e-3)
    """Vertical field of view (rad)."""
    near: float = spec_field(0.05, positive=True)
    """Near clip (m)."""
    far: float = spec_field(10.0, positive=True)
    """Far clip (m); depth beyond is +Inf (REP 118)."""
    images: list[Literal['rgb', 'depth', 'segmentation']] = spec_field(default_factory=lambda: ['rgb'], non_empty=True)
    """Images produced by each capture."""
    rgb_noise_stddev: float = spec_field(0.0, non_negative=True)
    """Gaussian pixel noise on 0-255 intensities."""
    depth_noise_stddev: float = spec_field(0.0, non_negative=True)
    """Gaussian depth noise (m)."""
    qos: TopicQosSpec | None = None
    """QoS override for this sensor's topics (default: SensorDataQoS)."""

    def check(self, source: str, path: str) -> None:
        if self.near >= self.far:
            raise DescriptionError(source, f'{path}.near', f'expected near < far, got {self.near} >= {self.far}')

    @property
    def frame(self) -> str:
        return f'{self.name}_optical_frame'

    @property
    def body_frame(self) -> str:
        return f'{self.name}_link'


@dataclass
class ImuSpec:
    type: Literal['imu'] = spec_field()
    """Inertial measurement unit (REP 145)."""
    name: str = 'imu'
    """Sensor name; frame ``<name>_link``."""
    parent: str = 'base_link'
    """Link the IMU is mounted on."""
    pose: PoseSpec = spec_field(default_factory=PoseSpec)
    """IMU frame in the parent link."""
    rate: float = spec_field(100.0, positive=True)
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

    @property
    def frame(self) -> str:
        return f'{self.name}_link'


SensorSpec = LidarSpec | CameraSpec | ImuSpec


@dataclass
class RobotSpec:
    """A robot generated entirely from YAML."""

    name: str = spec_field()
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
    radius: float | None = spec_field(None, positive=True)
    """Wheel radius (m); default from the wheel link's cylinder or sphere collision."""


@dataclass
class OverlayArmSpec:
    name: str = spec_field()
    """Arm name."""
    joints: list[str] = spec_field(non_empty=True)
    """URDF joints of the arm, base to tip."""
    gripper_joints: list[str] = spec_field(default_factory=list)
    """URDF joints of the gripper fingers."""


@dataclass
class UrdfOverlaySpec:
    """An existing URDF plus what it cannot say: the way Gazebo's ``<gazebo>`` tags extend one."""

    urdf: str = spec_field()
    """Path of the URDF, relative to this overlay file."""
    drive: DriveSpec = spec_field()
    """Drive kinematics and limits."""
    wheels: list[OverlayWheelSpec] = spec_field(non_empty=True)
    """The base's wheels by joint."""
    name: str | None = None
    """Robot name; default the URDF's."""
    base_link: str = 'base_link'
    """Chassis link."""
    package_paths: dict[str, str] = spec_field(default_factory=dict)
    """``package://NAME`` -> directory (relative to this file) for meshes."""
    arms: list[OverlayArmSpec] = spec_field(default_factory=list)
    """Arms by joint name."""
    sensors: list[SensorSpec] = spec_field(default_factory=list)
    """Sensors to mount; frames are added to the URDF as fixed links."""
