"""Rigid transforms in the URDF conventions (REP 103): metres, radians, fixed-axis roll-pitch-yaw.

Quaternions are (w, x, y, z) as in MuJoCo and transforms3d; ROS messages use (x, y, z, w),
converted at the message boundary only.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import transforms3d.euler as t3e
import transforms3d.quaternions as t3q


@dataclass(frozen=True)
class Pose:
    """A frame placement: translation ``xyz`` (m) then rotation ``rpy`` (rad, URDF fixed axes)."""

    xyz: tuple[float, float, float] = (0.0, 0.0, 0.0)
    rpy: tuple[float, float, float] = (0.0, 0.0, 0.0)

    def matrix(self) -> np.ndarray:
        """4x4 homogeneous transform parent <- child."""
        return homogeneous(rpy_to_matrix(self.rpy), self.xyz)

    def is_identity(self) -> bool:
        return not any(self.xyz) and not any(self.rpy)


def rpy_to_matrix(rpy) -> np.ndarray:
    """URDF rpy: R = Rz(yaw) @ Ry(pitch) @ Rx(roll) (static x-y-z axes)."""
    roll, pitch, yaw = rpy
    return t3e.euler2mat(roll, pitch, yaw, 'sxyz')


def matrix_to_rpy(rotation: np.ndarray) -> tuple[float, float, float]:
    return tuple(float(a) for a in t3e.mat2euler(rotation, 'sxyz'))


def rpy_to_quat(rpy) -> np.ndarray:
    """Unit quaternion (w, x, y, z) for a URDF rpy triple."""
    return t3q.mat2quat(rpy_to_matrix(rpy))


def quat_to_yaw(w: float, x: float, y: float, z: float) -> float:
    """Heading (rotation about z, rad) of a unit quaternion, REP 103."""
    return math.atan2(2 * (w * z + x * y), 1 - 2 * (y * y + z * z))


def homogeneous(rotation: np.ndarray, translation) -> np.ndarray:
    transform = np.eye(4)
    transform[:3, :3] = rotation
    transform[:3, 3] = translation
    return transform


def axis_angle_matrix(axis, angle: float) -> np.ndarray:
    """Rotation by ``angle`` about unit ``axis`` (Rodrigues)."""
    axis = np.asarray(axis, dtype=float)
    axis = axis / np.linalg.norm(axis)
    x, y, z = axis
    c, s = np.cos(angle), np.sin(angle)
    k = np.array([[0, -z, y], [z, 0, -x], [-y, x, 0]])
    return np.eye(3) + s * k + (1 - c) * (k @ k)


def rotation_angle_between(r_a: np.ndarray, r_b: np.ndarray) -> float:
    """Geodesic angle (rad) between two rotation matrices; robust near zero."""
    delta = r_a.T @ r_b
    # sin-based form stays accurate for tiny angles where arccos((tr-1)/2) loses digits.
    skew = np.array([delta[2, 1] - delta[1, 2], delta[0, 2] - delta[2, 0], delta[1, 0] - delta[0, 1]])
    return float(np.arctan2(np.linalg.norm(skew) / 2.0, (np.trace(delta) - 1.0) / 2.0))


def box_inertia(mass: float, size) -> tuple[float, float, float]:
    """Principal moments of a solid box with full extents ``size`` (x, y, z)."""
    x, y, z = size
    return (mass * (y * y + z * z) / 12.0, mass * (x * x + z * z) / 12.0, mass * (x * x + y * y) / 12.0)


def cylinder_inertia(mass: float, radius: float, length: float) -> tuple[float, float, float]:
    """Principal moments of a solid cylinder whose axis is local z."""
    side = mass * (3 * radius * radius + length * length) / 12.0
    return (side, side, mass * radius * radius / 2.0)


def sphere_inertia(mass: float, radius: float) -> tuple[float, float, float]:
    moment = 2.0 * mass * radius * radius / 5.0
    return (moment, moment, moment)
