"""Forward kinematics of a :class:`KinematicTree` (URDF semantics), in plain numpy."""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from .model import Joint, KinematicTree
from ..geometry import axis_angle_matrix, homogeneous


def joint_motion(joint: Joint, position: float) -> np.ndarray:
    """Transform joint frame <- child frame for ``position`` (rad or m)."""
    if joint.type in ('revolute', 'continuous'):
        return homogeneous(axis_angle_matrix(joint.axis, position), (0.0, 0.0, 0.0))
    if joint.type == 'prismatic':
        axis = np.asarray(joint.axis, dtype=float)
        return homogeneous(np.eye(3), axis / np.linalg.norm(axis) * position)
    return np.eye(4)


def resolve_mimics(tree: KinematicTree, positions: Mapping[str, float]) -> dict[str, float]:
    """Positions of every moving joint; mimic joints follow their leader."""
    resolved = {joint.name: float(positions.get(joint.name, 0.0)) for joint in tree.moving_joints()}
    for joint in tree.moving_joints():
        if joint.mimic is not None:
            leader = resolved[joint.mimic.joint]
            resolved[joint.name] = joint.mimic.multiplier * leader + joint.mimic.offset
    return resolved


def forward_kinematics(tree: KinematicTree, positions: Mapping[str, float]) -> dict[str, np.ndarray]:
    """4x4 pose of every link in the root link's frame."""
    resolved = resolve_mimics(tree, positions)
    poses = {tree.root(): np.eye(4)}
    for link in tree.depth_first():
        for joint in tree.child_joints(link):
            poses[joint.child] = poses[link] @ joint.origin.matrix() @ joint_motion(joint, resolved.get(joint.name, 0.0))
    return poses
