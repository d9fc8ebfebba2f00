"""Skid-steer odometry calibration (ROS-free): fit ``drive.wheel_separation_multiplier``.

A skid-steer base (``rover``: four fixed wheels) scrubs its tyres sideways in every turn, so it
turns much slower than an ideal differential drive with the same wheel speeds would: encoder
odometry with the geometric track overestimates every turn (about 2.2x on ``rover``). Real bases
calibrate an *effective* track; ros2_control's diff_drive_controller calls the ratio
``wheel_separation_multiplier`` and uses the effective track both for odometry and for turning
``cmd_vel`` into wheel speeds, so a commanded yaw rate is also the one the base turns. robotsim does
the same (:mod:`robotsim_core.drive`); this module measures the multiplier from

- **ground truth in simulation**: ``robotsim odometry calibrate --robot R`` drives the manoeuvres
  below in the headless simulation core (:mod:`robotsim_sim.odometry_trials`) and fits the
  multiplier at which odometry yaw equals ground-truth yaw;
- **the IMU's gyro on the robot**: record a bag of ``/imu/data`` and ``/joint_states`` while
  driving turns (in place both ways, and arcs; a few full turns in all, on the floor the robot will
  use), then ``robotsim odometry calibrate --robot R --from-bag BAG``: the gyro's yaw rate,
  rotated from the IMU's mount into ``base_link`` by the robot description, is regressed against
  the encoders' yaw rate (gyro bias fitted too), and the multiplier printed goes into
  ``drive.wheel_separation_multiplier`` of the robot's YAML.

The multiplier depends on the floor and the tyres (and a little on the turn rate and radius): it
is an average over the manoeuvres, each of which this module reports with its remaining error.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

import numpy as np

from .description.model import RobotModel
from .drive import forward_kinematics
from .errors import DescriptionError


@dataclass(frozen=True)
class Manoeuvre:
    """A constant command held for ``settle`` s (acceleration) plus ``duration`` s (measured)."""

    linear: float       # m/s
    angular: float      # rad/s
    duration: float = 8.0
    settle: float = 1.0

    @property
    def label(self) -> str:
        kind = 'turn in place' if self.linear == 0 else 'arc'
        return f'{kind} v={self.linear:+.2f} m/s w={self.angular:+.2f} rad/s'


# What the fit averages over: turns in place both ways at the rates a driver uses, and arcs of
# 0.25-1.7 m radius (straight driving needs no yaw calibration).
CALIBRATION_MANOEUVRES = (
    Manoeuvre(0.0, 0.5), Manoeuvre(0.0, -0.5), Manoeuvre(0.0, 1.0), Manoeuvre(0.0, -1.0),
    Manoeuvre(0.0, 1.5), Manoeuvre(0.0, -1.5),
    Manoeuvre(0.3, 0.5), Manoeuvre(0.3, -0.5), Manoeuvre(0.5, 0.3), Manoeuvre(0.5, -0.3),
    Manoeuvre(0.2, 0.8), Manoeuvre(0.2, -0.8),
)


@dataclass(frozen=True)
class YawComparison:
    """Yaw turned over one measured stretch: by the encoders with the wheels' own track (what the
    odometry reports with a multiplier of 1) and by the truth (ground truth or gyro)."""

    label: str
    encoder_yaw: float   # rad, geometric track
    true_yaw: float      # rad
    path_length: float = 0.0       # m the base really travelled (0 when unknown)
    position_drift: float = 0.0    # m between odometry and truth at the end, both from the start pose

    def odometry_yaw(self, multiplier: float) -> float:
        return self.encoder_yaw / multiplier

    def yaw_error(self, multiplier: float) -> float:
        """Relative yaw error of the odometry with ``multiplier`` ((odom - true) / true)."""
        return (self.odometry_yaw(multiplier) - self.true_yaw) / self.true_yaw


def fit_multiplier(comparisons: list[YawComparison]) -> float:
    """The multiplier m that makes the odometry's relative yaw errors smallest in the least-squares
    sense, each stretch counting alike (a long fast turn in place must not outweigh a wide arc):
    with r = encoder yaw / true yaw, minimise sum (r / m - 1)^2, so 1 / m = sum r / sum r^2."""
    ratios = np.array([c.encoder_yaw / c.true_yaw for c in comparisons])
    if np.any(ratios <= 0):
        raise ValueError('encoder and true yaw turn opposite ways: check the wheel joint signs and the IMU mount')
    return float(ratios @ ratios / ratios.sum())


def encoder_turn(model: RobotModel, travel: dict[str, float]) -> float:
    """Yaw (rad) the wheels' rolled distances mean with the geometric track (multiplier 1)."""
    geometric = replace(model.drive, wheel_separation_multiplier=1.0)
    return forward_kinematics(geometric, travel)[1]


def require_differential(model: RobotModel) -> None:
    if model.drive is None or model.drive.type != 'differential':
        kind = model.drive.type if model.drive else 'no'
        raise DescriptionError(model.source, 'drive.type',
                               f'odometry calibration fits the effective track of a differential (skid-steer) '
                               f'base; {model.name} has {kind} drive, whose odometry takes turns from the '
                               'steering angles')


# ---------------------------------------------------------------------------- the robot: IMU gyro
@dataclass(frozen=True)
class GyroFit:
    multiplier: float
    gyro_bias: float          # rad/s about base_link z
    encoder_turned: float     # rad of |encoder yaw| (geometric track) in the bag
    windows: int
    rms_residual: float       # rad per window


def imu_to_base_rotation(model: RobotModel, imu_frame: str) -> np.ndarray:
    """3x3 rotation of the IMU frame in base_link, from the description's fixed joints."""
    from .description.kinematics import forward_kinematics as link_poses

    poses = link_poses(model.tree, {})
    if imu_frame not in poses:
        raise DescriptionError(model.source, 'sensors', f'expected a link {imu_frame!r} (the IMU frame in the bag)')
    base = poses[model.base_link]
    return (np.linalg.inv(base) @ poses[imu_frame])[:3, :3]


def fit_from_rates(model: RobotModel, joint_samples: tuple[np.ndarray, dict[str, np.ndarray]],
                   gyro_samples: tuple[np.ndarray, np.ndarray], window: float = 0.5,
                   min_turn: float = 2 * math.pi) -> GyroFit:
    """Fit the multiplier from wheel positions and base-frame gyro z, each (stamps s, values).

    Over consecutive windows the gyro's integrated yaw is regressed on the encoders' yaw:
    gyro = encoder / m + bias * window. Stationary windows pin the bias; turning ones the slope."""
    require_differential(model)
    joint_times, positions = joint_samples
    gyro_times, gyro_z = gyro_samples
    start, end = max(joint_times[0], gyro_times[0]), min(joint_times[-1], gyro_times[-1])
    edges = np.arange(start, end, window)
    if len(edges) < 3:
        raise ValueError(f'the wheel and IMU samples overlap for {max(end - start, 0):.1f} s; '
                         f'expected at least {3 * window:.1f} s')
    drive = model.drive
    at_edges = {w.joint: np.interp(edges, joint_times, positions[w.joint]) * w.radius for w in drive.driven_wheels}
    encoder_yaw = np.array([encoder_turn(model, {joint: travel[k + 1] - travel[k] for joint, travel in at_edges.items()})
                            for k in range(len(edges) - 1)])
    # Trapezoidal integral of the gyro between the edges (samples interpolated onto the edges).
    dense = np.union1d(gyro_times[(gyro_times > start) & (gyro_times < edges[-1])], edges)
    integral = np.concatenate([[0.0], np.cumsum(np.diff(dense) * 0.5 * (np.interp(dense[1:], gyro_times, gyro_z)
                                                                           + np.interp(dense[:-1], gyro_times, gyro_z)))])
    gyro_yaw = np.diff(np.interp(edges, dense, integral))
    turned = float(np.abs(encoder_yaw).sum())
    if turned < min_turn:
        raise ValueError(f'the wheels turned the base only {turned:.2f} rad in the recording; expected at least '
                         f'{min_turn:.2f} rad of turns (in place both ways and arcs)')
    design = np.column_stack([encoder_yaw, np.diff(edges)])
    (slope, bias), *_ = np.linalg.lstsq(design, gyro_yaw, rcond=None)
    if slope <= 0:
        raise ValueError('gyro and encoders turn opposite ways: check the wheel joint signs and the IMU mount')
    residual = gyro_yaw - design @ np.array([slope, bias])
    return GyroFit(float(1.0 / slope), float(bias), turned, len(encoder_yaw), float(np.sqrt(np.mean(residual ** 2))))


def read_bag(bag: str, model: RobotModel, imu_topic: str = '/imu/data', joint_states_topic: str = '/joint_states'):
    """(joint samples, gyro samples in base_link) from a rosbag2 folder (MCAP or SQLite), by header stamps."""
    try:
        from rosbags.highlevel import AnyReader
    except ImportError:
        raise ValueError('reading a bag needs the rosbags package (pip install rosbags)') from None
    from pathlib import Path

    wheels = [w.joint for w in model.drive.driven_wheels]
    joint_times, joint_rows, gyro_times, gyro_rows = [], [], [], []
    rotation, imu_frame = None, None
    try:
        reader = AnyReader([Path(bag)])
        reader.open()
    except Exception as error:  # rosbags raises its own types for missing or unreadable bags
        raise ValueError(f'{bag}: not a readable rosbag2 bag ({error})') from None
    try:
        topics = {c.topic for c in reader.connections}
        for topic in (imu_topic, joint_states_topic):
            if topic not in topics:
                raise ValueError(f'{bag}: no topic {topic} (topics: {", ".join(sorted(topics))})')
        connections = [c for c in reader.connections if c.topic in (imu_topic, joint_states_topic)]
        for connection, _, raw in reader.messages(connections=connections):
            msg = reader.deserialize(raw, connection.msgtype)
            stamp = msg.header.stamp.sec + msg.header.stamp.nanosec * 1e-9
            if connection.topic == imu_topic:
                frame = msg.header.frame_id.split('/')[-1]  # a fleet prefixes frames with the namespace
                if rotation is None or frame != imu_frame:
                    rotation, imu_frame = imu_to_base_rotation(model, frame), frame
                omega = rotation @ np.array([msg.angular_velocity.x, msg.angular_velocity.y, msg.angular_velocity.z])
                gyro_times.append(stamp)
                gyro_rows.append(omega[2])
            else:
                names = [name.split('/')[-1] for name in msg.name]
                if all(w in names for w in wheels):
                    joint_times.append(stamp)
                    joint_rows.append([msg.position[names.index(w)] for w in wheels])
    finally:
        reader.close()
    if len(joint_times) < 2 or len(gyro_times) < 2:
        raise ValueError(f'{bag}: expected {joint_states_topic} with the wheel joints {wheels} and {imu_topic}; '
                         f'found {len(joint_times)} and {len(gyro_times)} messages')
    joint_order, gyro_order = np.argsort(joint_times, kind='stable'), np.argsort(gyro_times, kind='stable')
    joint_array = np.asarray(joint_rows)[joint_order]
    return ((np.asarray(joint_times)[joint_order], {w: joint_array[:, i] for i, w in enumerate(wheels)}),
            (np.asarray(gyro_times)[gyro_order], np.asarray(gyro_rows)[gyro_order]))
