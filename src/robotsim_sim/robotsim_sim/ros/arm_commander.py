"""Arm motions and pick and place through ROS: plan with the ROS-free core, execute through the
controllers' actions, the way MoveIt drives ros2_control.

* :class:`ActionExecutor` runs motions through ``arm_controller/follow_joint_trajectory``
  (control_msgs/action/FollowJointTrajectory: positions, velocities and accelerations of the
  jerk-limited trajectory) and the gripper through ``gripper_controller/gripper_cmd``
  (control_msgs/action/GripperCommand), and reads the robot's state from ``joint_states`` and
  ``sim/ground_truth`` (the base pose; on a real robot it would come from localisation) and free
  objects' poses from the simulator's ``/sim/get_entity_pose`` service. It is the
  :class:`~.pick_place.Executor` of the ROS side.
* :class:`ArmCommander` plans a reach (:class:`~.arm_motion.ArmMotionPlanner`: inverse kinematics,
  MuJoCo collision checks against the world file the simulator runs, RRT-Connect, ruckig) and executes
  it; the ``arm_commander`` node serves it as ``arm_commander/reach`` (robotsim_msgs/srv/ArmReach) and
  `robotsim arm reach` calls it from the command line.
* The ``pick_place`` node (``make sim DEMO=pick``; :mod:`.pick_place_node`) runs
  :class:`~.pick_place.PickAndPlace` through these actions once; `robotsim arm reach` is :mod:`.arm_reach`.

Free objects' poses (the cube) come from the simulator's ground truth, ``/sim/get_entity_pose``
(robotsim_msgs/srv/GetEntityPose), the way a Gazebo user reads them with get_entity_state: there is
no perception here. With them the ROS side runs the same checks as the core (the cube rose with the
gripper, stayed in it on the way, lies in the bin at the end: 'not_in_bin' otherwise). Against a
simulator without that service (or on a real robot) the poses are not observable: the pick node
then works from where it put the cube and can only say that the gripper held something until it
opened over the bin.
"""

from __future__ import annotations

import math
import threading
import time
from dataclasses import dataclass

import mujoco
import numpy as np
from builtin_interfaces.msg import Duration
from control_msgs.action import FollowJointTrajectory, GripperCommand
from nav_msgs.msg import Odometry
from rclpy.action import ActionClient
from rclpy.callback_groups import ReentrantCallbackGroup
from rclpy.executors import MultiThreadedExecutor, SingleThreadedExecutor
from rclpy.node import Node
from sensor_msgs.msg import JointState
from trajectory_msgs.msg import JointTrajectoryPoint

from robotsim_core.arm.timing import TimedTrajectory
from robotsim_core.contract import RELIABLE_QOS
from robotsim_core.description import load_robot
from robotsim_core.errors import DescriptionError
from robotsim_core.fleet import load_fleet, single_robot
from robotsim_core.ros.common import (ParameterError, checked_parameter, qos_profile, run_node,
                                      signals_stop_the_context_only)
from robotsim_msgs.srv import ArmReach, GetEntityPose

from ..arm_motion import ArmMotionPlanner, MotionPlan
from ..scene import RobotPlacement, load_world, resolve_world_path
from robotsim_core.description.world_spec import SpawnSpec

POINT_SPACING = 0.05
"""Seconds between the trajectory points sent in a goal (the planner samples at 0.01 s; the
controller interpolates between points with their velocities and accelerations)."""
RESULT_TIMEOUT = 60.0
"""Wall-clock seconds beyond a motion's own duration to wait for its result (a hang guard: a
simulation slower than real time takes longer)."""
STATE_TIMEOUT = 20.0
"""Wall-clock seconds to wait for the first joint states and the action servers."""
ENTITY_SERVICE = '/sim/get_entity_pose'
"""The simulator's ground truth of free objects' poses (robotsim_msgs/srv/GetEntityPose)."""
ENTITY_SERVICE_TIMEOUT = 5.0
"""Wall-clock seconds to wait once for that service; without it, poses are not observable (a real robot)."""


def robot_placements(robot: str, namespace: str, fleet: str) -> tuple[list[RobotPlacement], int]:
    """The robots of the simulation (as the simulator node builds them) and the index of ours."""
    spec = load_fleet(fleet) if fleet else single_robot(robot, namespace)
    placements = [RobotPlacement(load_robot(entry.robot), entry.namespace,
                                 SpawnSpec(entry.xyz, entry.yaw) if entry.xyz is not None else None)
                  for entry in spec.robots]
    names = [entry.namespace for entry in spec.robots]
    wanted = namespace.strip('/')
    if wanted not in names:
        raise DescriptionError(fleet or robot, 'namespace', f'expected one of the fleet\'s namespaces '
                                                            f'{names}, got {namespace!r}')
    return placements, names.index(wanted)


def _duration(seconds: float) -> Duration:
    nanoseconds = round(seconds * 1e9)
    return Duration(sec=nanoseconds // 1_000_000_000, nanosec=nanoseconds % 1_000_000_000)


def wait_for(future, timeout: float) -> bool:
    """Wait (in this thread, while an executor spins in another) until ``future`` is done."""
    done = threading.Event()
    future.add_done_callback(lambda _: done.set())
    return done.wait(timeout)


class ActionExecutor:
    """Runs arm trajectories and gripper commands through the controllers' actions (see the module
    docstring); implements :class:`~.pick_place.Executor`. The node must be spun by a
    multi-threaded executor in another thread while these methods wait."""

    def __init__(self, node: Node, planner: ArmMotionPlanner, free_entities: tuple[str, ...] = ()):
        self.node, self.planner = node, planner
        self.free_entities = tuple(free_entities)
        """The world's free bodies: their poses go into the planning scene at each update."""
        self.group = ReentrantCallbackGroup()
        self.arm_action = ActionClient(node, FollowJointTrajectory, 'arm_controller/follow_joint_trajectory',
                                       callback_group=self.group)
        self.gripper_action = ActionClient(node, GripperCommand, 'gripper_controller/gripper_cmd',
                                           callback_group=self.group)
        self._joints: dict[str, float] = {}
        self._base: tuple[float, float, float, float] | None = None
        self._lock = threading.Lock()
        self._have_joints = threading.Event()
        qos = qos_profile(RELIABLE_QOS)
        node.create_subscription(JointState, 'joint_states', self._on_joint_states, qos, callback_group=self.group)
        node.create_subscription(Odometry, 'sim/ground_truth', self._on_ground_truth, qos, callback_group=self.group)
        self.entity_client = node.create_client(GetEntityPose, ENTITY_SERVICE, callback_group=self.group)
        self._entity_service: bool | None = None  # None: not asked yet
        self._entity_refusals: set[str] = set()
        self.last_error_code = 0
        self.last_error_string = ''

    # ------------------------------------------------------------------ state
    def _on_joint_states(self, message: JointState) -> None:
        prefix = self.planner.placement.prefix
        with self._lock:
            for name, position in zip(message.name, message.position):
                self._joints[name[len(prefix):] if prefix and name.startswith(prefix) else name] = float(position)
        wanted = set(self.planner.joint_names) | set(self.planner.gripper_joints)
        if wanted <= set(self._joints):
            self._have_joints.set()

    def _on_ground_truth(self, message: Odometry) -> None:
        pose = message.pose.pose
        q = pose.orientation
        yaw = math.atan2(2 * (q.w * q.z + q.x * q.y), 1 - 2 * (q.y * q.y + q.z * q.z))
        with self._lock:
            self._base = (pose.position.x, pose.position.y, pose.position.z, yaw)

    def wait_until_ready(self, timeout: float = STATE_TIMEOUT) -> str:
        """'' once joint states have arrived and both action servers answer; else why not."""
        if not self._have_joints.wait(timeout):
            return (f'no joint states of {", ".join(self.planner.joint_names)} on '
                    f'{self.node.resolve_topic_name("joint_states")} within {timeout:g} s (is the simulator running?)')
        for client, name in ((self.arm_action, 'arm_controller/follow_joint_trajectory'),
                             (self.gripper_action, 'gripper_controller/gripper_cmd')):
            if not client.wait_for_server(timeout_sec=timeout):
                return f'no action server on {self.node.resolve_topic_name(name)} within {timeout:g} s'
        return ''

    def joint_positions(self) -> dict[str, float]:
        with self._lock:
            return dict(self._joints)

    def base_pose(self) -> tuple[float, float, float, float] | None:
        with self._lock:
            return self._base

    def update_scene(self, planner: ArmMotionPlanner) -> None:
        planner.set_robot_state(self.joint_positions(), self.base_pose())
        for name in self.free_entities:
            pose = self.entity_pose(name)
            if pose is not None:
                quaternion = np.empty(4)
                mujoco.mju_mat2Quat(quaternion, np.ascontiguousarray(pose[:3, :3]).reshape(9))
                planner.set_entity_pose(name, pose[:3, 3], quaternion)

    def entity_pose(self, name: str) -> np.ndarray | None:
        """The simulator's ground truth of a free entity (4x4, world) through ``/sim/get_entity_pose``;
        None when the simulator does not serve it or refuses the name (each said once in the log)."""
        log = self.node.get_logger()
        if self._entity_service is None:
            self._entity_service = self.entity_client.wait_for_service(timeout_sec=ENTITY_SERVICE_TIMEOUT)
            if not self._entity_service:
                log.warning(f'no {ENTITY_SERVICE} service within {ENTITY_SERVICE_TIMEOUT:g} s: free objects\' poses '
                            'are not observable (where the cube ends up cannot be checked)')
        if not self._entity_service:
            return None
        answer = self.entity_client.call_async(GetEntityPose.Request(entity=name))
        if not wait_for(answer, STATE_TIMEOUT) or answer.result() is None:
            log.warning(f'{ENTITY_SERVICE} did not answer for {name!r} within {STATE_TIMEOUT:g} s')
            return None
        response = answer.result()
        if not response.success:
            if response.message not in self._entity_refusals:
                self._entity_refusals.add(response.message)
                log.warning(f'{ENTITY_SERVICE} refused {name!r}: {response.message}')
            return None
        p, q = response.pose.pose.position, response.pose.pose.orientation
        rotation = np.empty(9)
        mujoco.mju_quat2Mat(rotation, np.array([q.w, q.x, q.y, q.z], dtype=float))
        pose = np.eye(4)
        pose[:3, :3] = rotation.reshape(3, 3)
        pose[:3, 3] = (p.x, p.y, p.z)
        return pose

    # ------------------------------------------------------------------ motion
    def send_trajectory(self, trajectory: TimedTrajectory) -> tuple[int, str]:
        """(FollowJointTrajectory error_code, error_string or why there is no result)."""
        goal = FollowJointTrajectory.Goal()
        goal.trajectory.joint_names = list(trajectory.joint_names)
        step = max(1, round(POINT_SPACING / trajectory.dt))
        keep = sorted(set(range(0, len(trajectory.time_from_start), step)) | set(trajectory.waypoint_indices))
        for index in keep:
            if index == 0:
                continue  # the start is where the arm is: JTC inserts the current state itself
            point = JointTrajectoryPoint()
            point.positions = [float(v) for v in trajectory.positions[index]]
            point.velocities = [float(v) for v in trajectory.velocities[index]]
            point.accelerations = [float(v) for v in trajectory.accelerations[index]]
            point.time_from_start = _duration(float(trajectory.time_from_start[index]))
            goal.trajectory.points.append(point)
        if not goal.trajectory.points:
            return 0, ''  # already there
        sent = self.arm_action.send_goal_async(goal)
        if not wait_for(sent, STATE_TIMEOUT) or sent.result() is None:
            return -1, 'the FollowJointTrajectory server did not answer the goal'
        handle = sent.result()
        if not handle.accepted:
            return -1, 'the FollowJointTrajectory server rejected the goal'
        result = handle.get_result_async()
        if not wait_for(result, trajectory.duration + RESULT_TIMEOUT):
            handle.cancel_goal_async()
            return -1, f'no FollowJointTrajectory result within {trajectory.duration + RESULT_TIMEOUT:g} s (cancelled)'
        answer = result.result().result
        return int(answer.error_code), str(answer.error_string)

    def follow(self, trajectory: TimedTrajectory, gripper: float) -> str:
        code, text = self.send_trajectory(trajectory)
        self.last_error_code, self.last_error_string = code, text
        if code != 0:
            return f'FollowJointTrajectory error_code {code}' + (f': {text}' if text else '')
        return ''

    def grip(self, position: float) -> tuple[float, str]:
        goal = GripperCommand.Goal()
        goal.command.position = float(position)
        goal.command.max_effort = 0.0  # the description's force limit
        sent = self.gripper_action.send_goal_async(goal)
        if not wait_for(sent, STATE_TIMEOUT) or sent.result() is None or not sent.result().accepted:
            return math.nan, 'the GripperCommand server did not accept the goal'
        result = sent.result().get_result_async()
        if not wait_for(result, RESULT_TIMEOUT):
            return math.nan, f'no GripperCommand result within {RESULT_TIMEOUT:g} s'
        answer = result.result()
        if answer.status not in (4,):  # action_msgs/GoalStatus SUCCEEDED
            return float(answer.result.position), f'GripperCommand ended with status {answer.status}'
        return float(answer.result.position), ''

    def wait(self, seconds: float) -> None:
        """Let ``seconds`` of the node's clock (sim time under use_sim_time) pass."""
        clock = self.node.get_clock()
        end = clock.now().nanoseconds + round(seconds * 1e9)
        deadline = time.monotonic() + seconds + RESULT_TIMEOUT
        while clock.now().nanoseconds < end and time.monotonic() < deadline:
            time.sleep(0.01)


@dataclass
class ReachOutcome:
    """What a reach request did (the fields of the ArmReach response)."""

    success: bool
    code: str
    message: str
    plan: MotionPlan | None = None
    execution_error_code: int = 0


class ArmCommander:
    """Plans reaches on the simulator's world and executes them through the arm's action."""

    def __init__(self, node: Node, world: str, robot: str, namespace: str = '', fleet: str = '', seed: int = 0,
                 arm: str | None = None):
        """``arm``: the arm's name in the robot description (default: the one with the most joints)."""
        placements, index = robot_placements(robot, namespace, fleet)
        self.world = load_world(resolve_world_path(world))
        self.planner = ArmMotionPlanner(self.world, placements, index, arm or None, seed=seed)
        free = tuple(entity.name for entity in [*self.world.boxes, *self.world.cylinders] if entity.mass > 0)
        self.executor = ActionExecutor(node, self.planner, free)
        self.lock = threading.Lock()  # one motion at a time

    def reach(self, position, pitch: float | None, plan_only: bool = False) -> ReachOutcome:
        with self.lock:
            problem = self.executor.wait_until_ready()
            if problem:
                return ReachOutcome(False, 'execution_failed', problem)
            self.executor.update_scene(self.planner)
            joints = self.executor.joint_positions()
            current = [joints[name] for name in self.planner.joint_names]
            plan = self.planner.reach(position, pitch, current)
            if not plan.success:
                return ReachOutcome(False, plan.code, plan.reason, plan)
            where = ', '.join(f'{v:.3f}' for v in position)
            summary = (f'tool to ({where}) m in {self.planner.chain.root} at pitch {math.degrees(plan.pitch):.0f} deg: '
                       f'{len(plan.path)} waypoints, {plan.duration:.2f} s, planned in {1000 * plan.planning_time:.0f} ms')
            if plan_only:
                return ReachOutcome(True, '', f'planned {summary}', plan)
            code, text = self.executor.send_trajectory(plan.trajectory)
            if code != 0:
                return ReachOutcome(False, 'execution_failed', f'FollowJointTrajectory error_code {code}'
                                    + (f': {text}' if text else ''), plan, code)
            return ReachOutcome(True, '', f'reached: {summary}', plan, code)


def fill_response(response: ArmReach.Response, outcome: ReachOutcome) -> ArmReach.Response:
    response.success, response.code, response.message = outcome.success, outcome.code, outcome.message
    plan = outcome.plan
    response.joint_names = list(plan.joint_names) if plan is not None else []
    response.goal_positions = [float(v) for v in plan.goal] if plan is not None and plan.goal is not None else []
    response.pitch = float(plan.pitch) if plan is not None else math.nan
    response.duration = float(plan.duration) if plan is not None else 0.0
    response.planning_time = float(plan.planning_time) if plan is not None else 0.0
    response.execution_error_code = int(outcome.execution_error_code)
    return response


def spin_in_background(node: Node) -> tuple[SingleThreadedExecutor, threading.Thread]:
    """Callbacks in a thread of their own while the calling thread plans and waits for results."""
    executor = SingleThreadedExecutor()
    executor.add_node(node)
    thread = threading.Thread(target=executor.spin, daemon=True)
    thread.start()
    return executor, thread


def stop_background(executor: SingleThreadedExecutor, thread: threading.Thread) -> None:
    """Stop the spinning executor and wait for its thread: destroying the node under a thread that
    still waits on it aborts the process."""
    executor.shutdown(timeout_sec=5)
    thread.join(timeout=10)


# ---------------------------------------------------------------------------- arm_commander node
class ArmCommanderNode(Node):
    """Serves ``arm_commander/reach`` (robotsim_msgs/srv/ArmReach) for other nodes."""

    def __init__(self):
        super().__init__('arm_commander')
        robot = checked_parameter(self, 'robot', 'rover')
        world = checked_parameter(self, 'world', 'room')
        fleet = checked_parameter(self, 'fleet', '')
        seed = checked_parameter(self, 'seed', 0, minimum=0)
        arm = checked_parameter(self, 'arm', '')  # '': the robot's arm with the most joints
        self.commander = ArmCommander(self, world, robot, self.get_namespace().strip('/'), fleet, seed, arm)
        self.create_service(ArmReach, 'arm_commander/reach', self.on_reach, callback_group=self.commander.executor.group)
        self.get_logger().info(f'serving {self.resolve_service_name("arm_commander/reach")} for '
                               f'{self.commander.planner.chain.describe()} in world {self.commander.world.name}')

    def on_reach(self, request: ArmReach.Request, response: ArmReach.Response) -> ArmReach.Response:
        position = (request.position.x, request.position.y, request.position.z)
        pitch = None if math.isnan(request.pitch) else float(request.pitch)
        outcome = self.commander.reach(position, pitch, request.plan_only)
        self.get_logger().info(('' if outcome.success else f'{outcome.code}: ') + outcome.message)
        return fill_response(response, outcome)


def _spin_multithreaded(node: Node) -> None:
    executor = MultiThreadedExecutor(num_threads=4)
    executor.add_node(node)
    with signals_stop_the_context_only():
        try:
            executor.spin()
        finally:
            executor.shutdown()


def commander_main(args=None) -> int:
    return run_node('arm_commander', ArmCommanderNode, (ParameterError, DescriptionError, ValueError), args,
                    run=_spin_multithreaded)
