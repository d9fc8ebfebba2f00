"""A simulator node's arm and gripper as ros2_control's controllers offer them, per robot namespace: the
``arm_controller/joint_trajectory`` topic, the ``arm_controller/follow_joint_trajectory`` action
(control_msgs/action/FollowJointTrajectory) with feedback, the ``gripper_controller/gripper_cmd`` action
(control_msgs/action/GripperCommand) and ``arm_controller/controller_state``.

:class:`ArmActions` bridges them to the simulation's goals (robotsim_sim.arm_goals): it hands goals over,
waits for their outcomes without blocking the physics loop, and owns the table of goals in flight. Its servers,
subscriptions and publishers are the node's (destroyed with it).
"""

from __future__ import annotations

from control_msgs.action import FollowJointTrajectory, GripperCommand
from control_msgs.msg import JointTrajectoryControllerState
from rclpy.action import ActionServer, CancelResponse, GoalResponse
from rclpy.task import Future
from trajectory_msgs.msg import JointTrajectory, JointTrajectoryPoint

from robotsim_core.ros.common import stamp_msg

from ..arm_controller import ArmGoal, ArmOutcome, GoalStatus, GripperOutcome, JointTolerance
from ..controllers import TrajectoryPoint


class ArmActions:
    """Every robot's arm and gripper actions and topics of one simulator node (see the module docstring)."""

    def __init__(self, node, feedback_rate: float, state_rate: float):
        self.node = node
        """The simulator node: its simulation, clock offset, ports, logger and rejection throttle are used."""
        self.feedback_rate = feedback_rate
        """Hz (sim time) of FollowJointTrajectory feedback (ros2_control's action_monitor_rate)."""
        self.state_rate = state_rate
        """Hz (sim time) of arm_controller/controller_state (0: never)."""
        self.goals: dict[bytes, tuple[object, object, Future]] = {}
        """Goals handed to the simulation, by goal id: (goal handle, its robot's ports, the Future its outcome
        completes). The handle itself is the simulation's token for the goal."""
        self.next_feedback_ns = 0
        self.next_state_ns = 0

    def serve(self, ports) -> None:
        """Offer one robot's arm_controller/joint_trajectory topic, its FollowJointTrajectory and GripperCommand
        actions and its controller_state topic (those its description has), in its namespace."""
        self.node.create_subscription(JointTrajectory, ports.topic('arm_controller/joint_trajectory'),
                                      lambda msg: self.on_trajectory(ports, msg), 10)
        robot = self.node.sim.robots[ports.index]
        # rclpy awaits an execute callback only if it is a coroutine function (a lambda returning a
        # coroutine is not one): these wrappers are.
        async def execute_arm_goal(handle):
            return await self.execute_arm_goal(ports, handle)

        async def execute_gripper_goal(handle):
            return await self.execute_gripper_goal(ports, handle)
        if robot.arm_controller is not None:
            ActionServer(self.node, FollowJointTrajectory, ports.topic('arm_controller/follow_joint_trajectory'),
                         execute_callback=execute_arm_goal,
                         goal_callback=lambda request: GoalResponse.ACCEPT,
                         cancel_callback=lambda handle: self.cancel_goal(ports, handle, 'arm'))
            ports.controller_state = self.node.create_publisher(
                JointTrajectoryControllerState, ports.topic('arm_controller/controller_state'), 10)
        if robot.gripper_controller is not None:
            ActionServer(self.node, GripperCommand, ports.topic('gripper_controller/gripper_cmd'),
                         execute_callback=execute_gripper_goal,
                         goal_callback=lambda request: GoalResponse.ACCEPT,
                         cancel_callback=lambda handle: self.cancel_goal(ports, handle, 'gripper'))

    def after_step(self) -> None:
        """After a physics step: complete the goals that ended, and send feedback and controller state when due
        (at their rates in sim time)."""
        if self.node.sim.goals.outcomes:
            self.dispatch_outcomes()
        sim_ns = self.node.sim.time_ns
        if self.goals and sim_ns >= self.next_feedback_ns:
            self.next_feedback_ns = sim_ns + round(1e9 / self.feedback_rate)
            self.publish_arm_feedback()
        if self.state_rate > 0 and sim_ns >= self.next_state_ns:
            self.next_state_ns = sim_ns + round(1e9 / self.state_rate)
            self.publish_controller_state()

    def restart(self) -> None:
        """The simulation was reset: goals it ended are completed, feedback and state start again."""
        self.next_feedback_ns = self.next_state_ns = 0
        self.dispatch_outcomes()

    def on_trajectory(self, ports, msg: JointTrajectory) -> None:
        points = [TrajectoryPoint(duration_seconds(p.time_from_start), tuple(p.positions), tuple(p.velocities),
                                  tuple(p.accelerations)) for p in msg.points]
        start = None
        if msg.header.stamp.sec or msg.header.stamp.nanosec:
            start = (msg.header.stamp.sec * 1_000_000_000 + msg.header.stamp.nanosec - self.node.time_offset_ns) * 1e-9
        joints = [n.removeprefix(ports.frame_prefix) for n in msg.joint_names]
        error = self.node.sim.command_arm(ports.index, joints, points, start)
        self.dispatch_outcomes()  # the trajectory preempts a running arm (gripper) goal
        if error:
            self.node.rejected_commands += 1
            self.node.warn_rejection(f'trajectory: {error}', f'rejected arm trajectory: {error}')
            return
        for joint, requested, limit in self.node.sim.robots[ports.index].newly_clamped:
            self.node.get_logger().warning(f'arm trajectory: {ports.frame_prefix}{joint} target {requested:g} is beyond '
                                           f'its limit; clamped to {limit:g} (warned once per joint)')

    def track_goal(self, ports, handle) -> Future:
        future = Future()
        self.goals[goal_key(handle)] = (handle, ports, future)
        return future

    async def execute_arm_goal(self, ports, handle):
        """FollowJointTrajectory: hand the goal to the simulation, wait (without blocking) for its outcome."""
        future = self.track_goal(ports, handle)
        if handle.is_cancel_requested:  # cancelled before it started
            self.goals.pop(goal_key(handle), None)
            self.finish_goal(handle, GoalStatus.CANCELED)
            return FollowJointTrajectory.Result(error_string='canceled before it started')
        goal = arm_goal(handle.request, ports.frame_prefix, self.node.time_offset_ns)
        self.node.sim.send_arm_goal(ports.index, goal, handle)
        self.dispatch_outcomes()
        outcome = await future
        self.finish_goal(handle, outcome.status)
        return FollowJointTrajectory.Result(error_code=int(outcome.code), error_string=outcome.error_string)

    async def execute_gripper_goal(self, ports, handle):
        """GripperCommand: as :meth:`execute_arm_goal`."""
        future = self.track_goal(ports, handle)
        command = handle.request.command
        if handle.is_cancel_requested:
            self.goals.pop(goal_key(handle), None)
            self.finish_goal(handle, GoalStatus.CANCELED)
            return GripperCommand.Result()
        self.node.sim.send_gripper_goal(ports.index, handle, command.position, command.max_effort)
        self.dispatch_outcomes()
        outcome = await future
        self.finish_goal(handle, outcome.status)
        return GripperCommand.Result(position=outcome.position, effort=outcome.effort, stalled=outcome.stalled,
                                     reached_goal=outcome.reached_goal)

    def cancel_goal(self, ports, handle, kind: str):
        """A client cancels: the arm (fingers) hold where they are, the goal ends CANCELED."""
        if kind == 'arm':
            self.node.sim.cancel_arm_goal(ports.index, handle)
        else:
            self.node.sim.cancel_gripper_goal(ports.index, handle)
        self.dispatch_outcomes()
        return CancelResponse.ACCEPT

    @staticmethod
    def finish_goal(handle, status: GoalStatus) -> None:
        if not handle.is_active:
            return
        if status is GoalStatus.SUCCEEDED:
            handle.succeed()
        elif status is GoalStatus.CANCELED and handle.is_cancel_requested:
            handle.canceled()
        else:
            handle.abort()

    def dispatch_outcomes(self) -> None:
        """Goals the simulation ended: log them and complete their execute callbacks."""
        for outcome in self.node.sim.take_controller_outcomes():
            tracked = self.goals.pop(goal_key(outcome.token), None)
            if tracked is None:
                continue
            _, ports, future = tracked
            if isinstance(outcome, ArmOutcome):
                name = ports.topic('arm_controller/follow_joint_trajectory')
                if outcome.status is GoalStatus.SUCCEEDED:
                    self.node.get_logger().info(f'{name}: goal succeeded')
                else:
                    self.node.warn_rejection(f'{name} {outcome.status.value} {outcome.code.name}',
                                        f'{name}: goal {outcome.status.value}, {outcome.code.name}: {outcome.error_string}')
            elif isinstance(outcome, GripperOutcome):
                name = ports.topic('gripper_controller/gripper_cmd')
                what = ('reached' if outcome.reached_goal else 'stalled' if outcome.stalled else outcome.status.value)
                line = f'{name}: goal {outcome.status.value} ({what}) at {outcome.position:.4g} m'
                if outcome.status is GoalStatus.ABORTED and not outcome.stalled:
                    self.node.warn_rejection(f'{name} {outcome.reason[:40]}', f'{line}: {outcome.reason}')
                else:
                    self.node.get_logger().info(line + (f': {outcome.reason}' if outcome.reason else ''))
            if not future.done():
                future.set_result(outcome)

    def publish_arm_feedback(self) -> None:
        stamp = stamp_msg(self.node.total_time_ns())
        for handle, ports, _ in list(self.goals.values()):
            controller = self.node.sim.robots[ports.index].arm_controller
            if controller is None or controller.active_token is not handle or not handle.is_active:
                continue
            state = self.node.sim.arm_state(ports.index)
            feedback = FollowJointTrajectory.Feedback()
            feedback.header.stamp = stamp
            feedback.joint_names = list(state.joint_names)
            feedback.desired = trajectory_point(state.desired, state.time_from_start)
            feedback.actual = trajectory_point(state.actual, state.time_from_start)
            feedback.error = trajectory_point(state.error, state.time_from_start)
            if hasattr(feedback, 'index'):  # control_msgs 5 (Jazzy and later); Humble's feedback has no index
                feedback.index = max(state.index, 0)
            handle.publish_feedback(feedback)

    def publish_controller_state(self) -> None:
        """arm_controller/controller_state (only while someone listens: building it costs every physics loop)."""
        stamp = None
        for ports in self.node.ports:
            if ports.controller_state is None or not ports.controller_state.get_subscription_count():
                continue
            stamp = stamp or stamp_msg(self.node.total_time_ns())
            state = self.node.sim.arm_state(ports.index)
            robot = self.node.sim.robots[ports.index]
            message = JointTrajectoryControllerState()
            message.header.stamp = stamp
            message.joint_names = list(state.joint_names)
            message.reference = trajectory_point(state.desired, state.time_from_start)
            message.feedback = trajectory_point(state.actual, state.time_from_start)
            message.error = trajectory_point(state.error, state.time_from_start)
            message.output = JointTrajectoryPoint(positions=[float(v) for v in self.node.sim.data.ctrl[robot.arm_actuator_ids]])
            if hasattr(message, 'speed_scaling_factor'):  # control_msgs 5 (Jazzy and later)
                message.speed_scaling_factor = 1.0
            if hasattr(message, 'desired'):  # control_msgs 4 (Humble) also has its older names, which its tools read
                message.desired, message.actual = message.reference, message.feedback
            ports.controller_state.publish(message)


def goal_key(handle) -> bytes:
    """A goal's id as a dict key (rclpy's goal handles are not hashable)."""
    return bytes(handle.goal_id.uuid)


def duration_seconds(duration) -> float:
    return duration.sec + duration.nanosec * 1e-9


def trajectory_point(values, time_from_start: float) -> JointTrajectoryPoint:
    """(positions, velocities, accelerations) arrays -> a JointTrajectoryPoint."""
    positions, velocities, accelerations = values
    point = JointTrajectoryPoint(positions=[float(v) for v in positions], velocities=[float(v) for v in velocities],
                                 accelerations=[float(v) for v in accelerations])
    nanoseconds = max(round(time_from_start * 1e9), 0)
    point.time_from_start.sec, point.time_from_start.nanosec = divmod(nanoseconds, 1_000_000_000)
    return point


def arm_goal(request, frame_prefix: str, time_offset_ns: int) -> ArmGoal:
    """A FollowJointTrajectory goal message -> :class:`ArmGoal` (joint names with or without the
    robot's frame prefix; the header stamp from ROS time to the episode's sim time)."""
    def name(value: str) -> str:
        return value.removeprefix(frame_prefix) if frame_prefix else value
    trajectory = request.trajectory
    stamp_ns = trajectory.header.stamp.sec * 1_000_000_000 + trajectory.header.stamp.nanosec
    unsupported = ''
    if request.multi_dof_trajectory.joint_names or request.multi_dof_trajectory.points:
        unsupported = 'multi_dof_trajectory: not supported; expected it empty (arm_controller has no multi-DOF joints)'
    elif request.component_path_tolerance or request.component_goal_tolerance:
        unsupported = ('component_path_tolerance / component_goal_tolerance: not supported; expected them empty '
                       '(use path_tolerance and goal_tolerance)')

    def tolerances(entries):
        return [JointTolerance(name(t.name), t.position, t.velocity, t.acceleration) for t in entries]
    return ArmGoal(
        joint_names=[name(n) for n in trajectory.joint_names],
        points=[TrajectoryPoint(duration_seconds(p.time_from_start), tuple(p.positions), tuple(p.velocities),
                                tuple(p.accelerations)) for p in trajectory.points],
        start_time=None if stamp_ns == 0 else (stamp_ns - time_offset_ns) * 1e-9,
        path_tolerance=tolerances(request.path_tolerance), goal_tolerance=tolerances(request.goal_tolerance),
        goal_time_tolerance=duration_seconds(request.goal_time_tolerance), unsupported=unsupported)
