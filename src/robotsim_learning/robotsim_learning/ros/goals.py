"""A goal_pose as the learning nodes take it: checked, and refused with one warning line naming why."""

from __future__ import annotations

from geometry_msgs.msg import PoseStamped
from rclpy.node import Node

from ..observation import goal_problem


def accepted_goal(node: Node, message: PoseStamped, frame_prefix: str,
                  other_frames: tuple[str, ...] = ()) -> tuple[float, float] | None:
    """The goal's (x, y) when it can be used (see :func:`goal_problem`); else None, with a warning logged."""
    point = (message.pose.position.x, message.pose.position.y)
    problem = goal_problem(message.header.frame_id, point, frame_prefix, other_frames)
    if problem:
        node.get_logger().warning(f'goal_pose refused: {problem}')
        return None
    return point
