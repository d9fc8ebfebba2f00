"""Sensor readings: plain data stamped with the sim time at which they were taken (integer
nanoseconds, counted from the physics step so stamps never drift or repeat)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass
class ScanReading:
    stamp: int
    ranges: np.ndarray            # float32, radial metres; +Inf no return / too far, -Inf too close (REP 117)
    angle_min: float
    angle_increment: float
    scan_time: float
    range_min: float
    range_max: float
    channels: int = 1
    vertical_angles: np.ndarray | None = None   # per channel (rad), for multi-channel lidars
    points: np.ndarray | None = None            # (N, 3) float32 in the sensor frame, finite returns only


@dataclass
class CameraReading:
    stamp: int
    rgb: np.ndarray | None         # (H, W, 3) uint8, row 0 = top of the image
    depth: np.ndarray | None       # (H, W) float32 metres along the optical axis; +Inf nothing hit (REP 118)
    segmentation: np.ndarray | None  # (H, W) int32 entity ids; -1 background


@dataclass
class ImuReading:
    stamp: int
    orientation: np.ndarray        # (w, x, y, z) of the IMU frame in the world (ENU) frame
    angular_velocity: np.ndarray   # rad/s in the IMU frame
    linear_acceleration: np.ndarray  # specific force m/s^2 in the IMU frame (+g on z at rest)
    orientation_variance: float
    angular_velocity_variance: float
    linear_acceleration_variance: float


@dataclass
class WrenchReading:
    stamp: int
    force: np.ndarray              # N, the load on the sensor in its frame
    torque: np.ndarray             # N m, about the sensor frame's origin
