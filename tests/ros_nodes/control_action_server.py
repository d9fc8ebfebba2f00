"""A real rclpy process serving control_msgs actions built from the compat package:
FollowJointTrajectory on arm_controller/follow_joint_trajectory and GripperCommand on
gripper_controller/gripper_cmd. It answers from the goal it received (so the client can check the
round trip field by field) and prints one JSON line per goal. Stops on SIGINT (or after 120 s)."""

import json
import sys
import time

import rclpy
from control_msgs.action import FollowJointTrajectory, GripperCommand
from rclpy.action import ActionServer
from rclpy.executors import ExternalShutdownException


def main() -> int:
    rclpy.init()
    node = rclpy.create_node('control_action_server')

    def follow(goal_handle):
        goal = goal_handle.request
        points = goal.trajectory.points
        for index, point in enumerate(points):
            feedback = FollowJointTrajectory.Feedback()
            feedback.joint_names = list(goal.trajectory.joint_names)
            feedback.desired = point
            feedback.actual.positions = list(point.positions)
            feedback.error.positions = [0.0] * len(point.positions)
            feedback.index = index  # the field control_msgs 6.3 added (Kilted)
            goal_handle.publish_feedback(feedback)
            time.sleep(0.05)
        print(json.dumps({'goal': 'follow_joint_trajectory', 'joints': list(goal.trajectory.joint_names),
                          'points': len(points),
                          'path_tolerance': [t.name for t in goal.path_tolerance],
                          'goal_time_tolerance': goal.goal_time_tolerance.sec}), flush=True)
        goal_handle.succeed()
        result = FollowJointTrajectory.Result()
        result.error_code = FollowJointTrajectory.Result.SUCCESSFUL
        result.error_string = f'followed {len(points)} points'
        return result

    def grip(goal_handle):
        command = goal_handle.request.command
        print(json.dumps({'goal': 'gripper_cmd', 'position': command.position, 'max_effort': command.max_effort}),
              flush=True)
        goal_handle.succeed()
        return GripperCommand.Result(position=command.position, effort=command.max_effort / 2,
                                     stalled=False, reached_goal=True)

    ActionServer(node, FollowJointTrajectory, 'arm_controller/follow_joint_trajectory', follow)
    ActionServer(node, GripperCommand, 'gripper_controller/gripper_cmd', grip)
    deadline = time.monotonic() + 120
    try:
        while rclpy.ok() and time.monotonic() < deadline:
            rclpy.spin_once(node, timeout_sec=0.1)
    except (KeyboardInterrupt, ExternalShutdownException):
        pass
    node.destroy_node()
    rclpy.try_shutdown()
    return 0


if __name__ == '__main__':
    sys.exit(main())
