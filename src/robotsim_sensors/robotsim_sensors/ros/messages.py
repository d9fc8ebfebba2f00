"""Readings -> ROS messages (the only module of robotsim_sensors that imports ROS).

No sensor_msgs_py: arrays are packed with numpy and handed over as ``array.array`` (the fast
path of the generated message setters). Stamps are integer nanoseconds of sim time.
"""

from __future__ import annotations

import array
import functools

import numpy as np
from builtin_interfaces.msg import Time
from sensor_msgs.msg import CameraInfo, Image, Imu, LaserScan, PointCloud2, PointField

from robotsim_core.ros.wire import FixedLayout

from ..camera import CameraSpec, intrinsics
from ..readings import CameraReading, ImuReading, ScanReading

def laser_scan(reading: ScanReading, frame_id: str, stamp: Time) -> LaserScan:
    msg = LaserScan()
    msg.header.stamp, msg.header.frame_id = stamp, frame_id
    msg.angle_min = reading.angle_min
    msg.angle_max = reading.angle_min + reading.angle_increment * (len(reading.ranges) - 1)
    msg.angle_increment = reading.angle_increment
    # All beams are cast at the same physics instant.
    msg.time_increment = 0.0
    msg.scan_time = reading.scan_time
    msg.range_min, msg.range_max = reading.range_min, reading.range_max
    msg.ranges = array.array('f', reading.ranges.astype(np.float32).tobytes())
    return msg


_XYZ_FIELDS = [PointField(name=name, offset=4 * i, datatype=PointField.FLOAT32, count=1)
               for i, name in enumerate('xyz')]


def point_cloud(reading: ScanReading, frame_id: str, stamp: Time) -> PointCloud2:
    points = np.ascontiguousarray(reading.points, dtype=np.float32)
    msg = PointCloud2()
    msg.header.stamp, msg.header.frame_id = stamp, frame_id
    msg.height, msg.width = 1, len(points)
    msg.fields = _XYZ_FIELDS
    msg.is_bigendian = False
    msg.point_step, msg.row_step = 12, 12 * len(points)
    msg.is_dense = True
    msg.data = array.array('B', points.tobytes())
    return msg


def image(pixels: np.ndarray, encoding: str, frame_id: str, stamp: Time) -> Image:
    pixels = np.ascontiguousarray(pixels)
    msg = Image()
    msg.header.stamp, msg.header.frame_id = stamp, frame_id
    msg.height, msg.width = pixels.shape[:2]
    msg.encoding = encoding
    msg.is_bigendian = 0
    msg.step = pixels.strides[0]
    msg.data = array.array('B', pixels.tobytes())
    return msg


def camera_images(reading: CameraReading, frame_id: str, stamp: Time) -> dict[str, Image]:
    """Images keyed by the spec's image names: rgb8, 32FC1 depth in metres (REP 118), 32SC1 labels."""
    out = {}
    if reading.rgb is not None:
        out['rgb'] = image(reading.rgb, 'rgb8', frame_id, stamp)
    if reading.depth is not None:
        out['depth'] = image(reading.depth.astype(np.float32), '32FC1', frame_id, stamp)
    if reading.segmentation is not None:
        out['segmentation'] = image(reading.segmentation.astype(np.int32), '32SC1', frame_id, stamp)
    return out


def camera_info(spec: CameraSpec, frame_id: str) -> CameraInfo:
    """The camera model the images follow: square pixels, principal point at the image centre,
    plumb_bob with the camera's ``distortion`` (zero for a pinhole camera; the images are distorted to
    match), R identity, P = [K | 0] (a monocular camera). The stamp is filled per capture."""
    fx, fy, cx, cy = intrinsics(spec)
    msg = CameraInfo()
    msg.header.frame_id = frame_id
    msg.width, msg.height = spec.width, spec.height
    msg.distortion_model = 'plumb_bob'
    msg.d = [float(coefficient) for coefficient in spec.distortion]  # k1 k2 p1 p2 k3, OpenCV's order
    msg.k = [fx, 0.0, cx, 0.0, fy, cy, 0.0, 0.0, 1.0]
    msg.r = [1.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 1.0]
    msg.p = [fx, 0.0, cx, 0.0, 0.0, fy, cy, 0.0, 0.0, 0.0, 1.0, 0.0]
    return msg


class ImuEncoder:
    """sensor_msgs/Imu of one frame, serialized (robotsim_core.ros.wire; 100 Hz or more per robot):
    orientation (x, y, z, w), angular velocity (rad/s) and linear acceleration (m/s², gravity
    included, REP 145), each with its covariance (variance x identity, row-major)."""

    def __init__(self, frame_id: str):
        prototype = Imu()
        prototype.header.frame_id = frame_id
        self.layout = FixedLayout(prototype, ['header.stamp', 'orientation', 'orientation_covariance',
                                              'angular_velocity', 'angular_velocity_covariance',
                                              'linear_acceleration', 'linear_acceleration_covariance'])

    def encode(self, reading: ImuReading, stamp: Time) -> bytes:
        w, x, y, z = reading.orientation.tolist()
        return self.layout.encode(
            stamp.sec, stamp.nanosec, x, y, z, w, *_diagonal_covariance(reading.orientation_variance),
            *reading.angular_velocity.tolist(), *_diagonal_covariance(reading.angular_velocity_variance),
            *reading.linear_acceleration.tolist(), *_diagonal_covariance(reading.linear_acceleration_variance))


@functools.lru_cache(maxsize=None)
def _diagonal_covariance(variance: float) -> tuple[float, ...]:
    """variance * I (3x3, row-major)."""
    return (variance, 0.0, 0.0, 0.0, variance, 0.0, 0.0, 0.0, variance)
