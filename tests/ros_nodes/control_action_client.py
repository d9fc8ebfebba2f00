"""The other process: sends a FollowJointTrajectory goal and a GripperCommand goal to
control_action_server.py, collects feedback and results, and prints one JSON report (including the
type hash the graph advertises for the trajectory action's feedback topic)."""

import json
import sys
import time

import rclpy
from builtin_interfaces.msg import Duration
from control_msgs.action import FollowJointTrajectory, GripperCommand
from control_msgs.msg import JointTolerance
from rclpy.action import ActionClient
from trajectory_msgs.msg import JointTrajectoryPoint

FEEDBACK_TOPIC = '/arm_controller/follow_joint_trajectory/_action/feedback'


def wait(node, future, what: str, timeout: float = 30.0):
    rclpy.spin_until_future_complete(node, future, timeout_sec=timeout)
    if not future.done() or future.result() is None:
        raise RuntimeError(f'{what}: no answer within {timeout} s')
    return future.result()


def run_goal(node, client, goal, feedback: list) -> object:
    if not client.wait_for_server(timeout_sec=30.0):
        raise RuntimeError(f'action server {client._action_name} not available')
    handle = wait(node, client.send_goal_async(goal, feedback_callback=lambda msg: feedback.append(msg.feedback)),
                  'send goal')
    if not handle.accepted:
        raise RuntimeError('goal rejected')
    return wait(node, handle.get_result_async(), 'result')


def main() -> int:
    rclpy.init()
    node = rclpy.create_node('control_action_client')
    report = {}

    trajectory_client = ActionClient(node, FollowJointTrajectory, 'arm_controller/follow_joint_trajectory')
    goal = FollowJointTrajectory.Goal()
    goal.trajectory.joint_names = ['arm_base_joint', 'arm_shoulder_joint']
    goal.trajectory.points = [
        JointTrajectoryPoint(positions=[0.1, 0.2], velocities=[0.0, 0.0], time_from_start=Duration(sec=1)),
        JointTrajectoryPoint(positions=[0.3, -0.4], velocities=[0.0, 0.0], time_from_start=Duration(sec=2)),
        JointTrajectoryPoint(positions=[0.5, 0.6], velocities=[0.0, 0.0], time_from_start=Duration(sec=3)),
    ]
    goal.path_tolerance = [JointTolerance(name='arm_base_joint', position=0.05)]
    goal.goal_time_tolerance = Duration(sec=2)
    feedback = []
    wrapped = run_goal(node, trajectory_client, goal, feedback)
    report['trajectory_status'] = wrapped.status
    report['trajectory_error_code'] = wrapped.result.error_code
    report['trajectory_error_string'] = wrapped.result.error_string
    # Feedback travels on a topic and may trail the result: give it a moment.
    deadline = time.monotonic() + 10
    while len(feedback) < 3 and time.monotonic() < deadline:
        rclpy.spin_once(node, timeout_sec=0.05)
    report['feedback_indices'] = [message.index for message in feedback]
    report['feedback_desired'] = [list(message.desired.positions) for message in feedback]
    infos = node.get_publishers_info_by_topic(FEEDBACK_TOPIC)
    report['feedback_type'] = infos[0].topic_type if infos else None
    report['feedback_type_hash'] = str(infos[0].topic_type_hash) if infos else None

    gripper_client = ActionClient(node, GripperCommand, 'gripper_controller/gripper_cmd')
    grip = GripperCommand.Goal()
    grip.command.position, grip.command.max_effort = 0.015, 4.0
    wrapped = run_goal(node, gripper_client, grip, [])
    report['gripper_status'] = wrapped.status
    report['gripper_result'] = [wrapped.result.position, wrapped.result.effort, wrapped.result.reached_goal]
    print(json.dumps(report))
    node.destroy_node()
    rclpy.shutdown()
    return 0


if __name__ == '__main__':
    sys.exit(main())
