"""The arm's and gripper's goals of every robot of a simulation: trajectories on the
``arm_controller/joint_trajectory`` topic, FollowJointTrajectory and GripperCommand goals, checked against the
measured state after each physics step, preempted by each other and by a reset; their outcomes queue here until
the simulator node (or a test) takes them.

:class:`ArmGoals` owns the outcome queue; it reads and writes the simulation's MuJoCo model and data and the
robots' followers and controllers, which it is given, on the simulation's clock.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import TYPE_CHECKING

import mujoco

from .arm_controller import (ArmGoal, ArmOutcome, CheckedTrajectory, ControllerState, GoalStatus, GripperOutcome,
                             Rejection, ResultCode, check_trajectory)
from .controllers import TrajectoryPoint

if TYPE_CHECKING:
    from .robot_assembly import RobotInstance


def _columns(checked: CheckedTrajectory, joints: list[str]) -> CheckedTrajectory | None:
    """The part of a checked trajectory that names ``joints`` (None: it names none of them)."""
    columns = [index for index, name in enumerate(checked.joint_names) if name in joints]
    if not columns:
        return None

    def pick(values):
        return tuple(values[index] for index in columns) if len(values) else ()
    return CheckedTrajectory([checked.joint_names[index] for index in columns],
                             [TrajectoryPoint(p.time_from_start, pick(p.positions), pick(p.velocities),
                                              pick(p.accelerations)) for p in checked.points])


class ArmGoals:
    """Goals of every robot's arm and gripper (see the module docstring)."""

    def __init__(self, model: mujoco.MjModel, data: mujoco.MjData, robots: list, clock: Callable[[], float]):
        self.model, self.data, self.robots, self.clock = model, data, robots, clock
        self.outcomes: list[ArmOutcome | GripperOutcome] = []
        """Goals that ended and were not taken yet, in the order they ended."""
        self.running = False
        """Whether any goal runs (then :meth:`update` is due after each physics step)."""

    def command(self, robot: int, joint_names, points, start_time: float | None = None) -> str | None:
        """A trajectory for the arm and/or gripper joints (the ``arm_controller/joint_trajectory`` topic):
        ``points`` are :class:`~.controllers.TrajectoryPoint` or ``(time_from_start, positions)`` pairs.

        The topic's rules: any subset of the arm and gripper joints (the others keep their
        trajectory, or hold), points may share a time, positions beyond a joint's limits are clamped
        onto it (:attr:`RobotInstance.newly_clamped` names joints clamped for the first time), a
        start time in the past counts as now. It replaces the running arm (gripper) goal, which
        ends with INVALID_GOAL. Returns why a trajectory is refused (nothing changes then)."""
        r = self.robots[robot]
        r.newly_clamped = []
        converted = []
        for point in points:
            if not isinstance(point, TrajectoryPoint):
                time, positions = point
                point = TrajectoryPoint(time, tuple(positions))
            converted.append(point)
        checked = check_trajectory(list(joint_names), converted, r.arm.joints + r.gripper.joints, r.joint_limits,
                                   allow_partial=True, beyond_limits='clamp', strictly_increasing=False,
                                   field_prefix='')
        if isinstance(checked, Rejection):
            return checked.message
        for joint, requested, limited in checked.clamped:
            if joint not in r.clamped_ever:
                r.clamped_ever.add(joint)
                r.newly_clamped.append((joint, requested, limited))
        start = self.clock() if start_time is None or start_time <= 0 else max(start_time, self.clock())
        for follower, qpos, dofs in ((r.arm, r.arm_qpos, r.arm_dofs), (r.gripper, r.gripper_qpos, r.gripper_dofs)):
            part = _columns(checked, follower.joints)
            if part is None:
                continue
            if follower is r.arm and r.arm_controller is not None:
                self.outcomes += r.arm_controller.preempt(
                    f'preempted by a trajectory on arm_controller/joint_trajectory at {self.clock():.6g} s sim time',
                    self.clock())
            elif follower is r.gripper and r.gripper_controller is not None:
                position, _, effort = self.gripper_reading(r)
                self.outcomes += r.gripper_controller.preempt(
                    f'preempted by a trajectory on arm_controller/joint_trajectory at {self.clock():.6g} s sim time',
                    position, effort)
            follower.load(part.joint_names, part.points, start, self.clock(), self.data.qpos[qpos], self.data.qvel[dofs])
        self.running = self._any_goal_running()
        return None

    def send_arm(self, robot: int, goal: ArmGoal, token) -> None:
        """Start a FollowJointTrajectory goal (``token``: the caller's handle of it). Its outcome, and
        that of a goal it preempts, arrive in :meth:`take_controller_outcomes` (at once for a refused goal)."""
        r = self.robots[robot]
        if r.arm_controller is None:
            self.outcomes.append(ArmOutcome(token, GoalStatus.ABORTED, ResultCode.INVALID_JOINTS,
                                                       f'robot {r.model.name} has no arm'))
            return
        self.outcomes += r.arm_controller.start(goal, token, self.clock(), self.data.qpos[r.arm_qpos],
                                                           self.data.qvel[r.arm_dofs])
        self.running = self._any_goal_running()

    def cancel_arm(self, robot: int, token) -> bool:
        """Cancel the running arm goal ``token``: the arm holds where it is. False: not the running goal."""
        r = self.robots[robot]
        if r.arm_controller is None:
            return False
        outcomes = r.arm_controller.cancel(token, self.clock(), self.data.qpos[r.arm_qpos])
        self.outcomes += outcomes
        self.running = self._any_goal_running()
        return bool(outcomes)

    def send_gripper(self, robot: int, token, position: float, max_effort: float) -> None:
        """Start a GripperCommand goal: the driven finger to ``position`` (m, travel from closed) with at
        most ``max_effort`` N (0: the description's limit). Outcomes as for :meth:`send_arm`."""
        r = self.robots[robot]
        controller = r.gripper_controller
        if controller is None:
            self.outcomes.append(GripperOutcome(token, GoalStatus.ABORTED, math.nan, 0.0, False, False,
                                                           f'robot {r.model.name} has no gripper'))
            return
        position_now, _, effort = self.gripper_reading(r)
        self.outcomes += controller.start(token, position, max_effort, self.clock(), position_now, effort,
                                                     self.data.qpos[r.gripper_qpos], self.data.qvel[r.gripper_dofs])
        self._apply_gripper_effort(r)
        self.running = self._any_goal_running()

    def cancel_gripper(self, robot: int, token) -> bool:
        r = self.robots[robot]
        if r.gripper_controller is None:
            return False
        position, _, effort = self.gripper_reading(r)
        outcomes = r.gripper_controller.cancel(token, self.clock(), position, effort, self.data.qpos[r.gripper_qpos])
        self.outcomes += outcomes
        self.running = self._any_goal_running()
        return bool(outcomes)

    def take_outcomes(self) -> list[ArmOutcome | GripperOutcome]:
        """Goals that ended since the last call, in the order they ended."""
        taken, self.outcomes = self.outcomes, []
        return taken

    def arm_state(self, robot: int) -> ControllerState | None:
        """The arm controller's desired, actual and error state now (None: no arm)."""
        r = self.robots[robot]
        if r.arm_controller is None:
            return None
        return r.arm_controller.state(self.clock(), self.data.qpos[r.arm_qpos], self.data.qvel[r.arm_dofs],
                                      self.data.qacc[r.arm_dofs])

    def gripper_reading(self, r: RobotInstance) -> tuple[float, float, float]:
        """(position m, velocity m/s, servo force N) of the driven finger."""
        controller = r.gripper_controller
        column = r.gripper.joints.index(controller.joint)
        actuator = r.arm_actuators[controller.joint]
        return (float(self.data.qpos[r.gripper_qpos[column]]), float(self.data.qvel[r.gripper_dofs[column]]),
                float(self.data.actuator_force[actuator]))

    def _apply_gripper_effort(self, r: RobotInstance) -> None:
        limit = r.gripper_controller.effort_limit_in_force
        self.model.actuator_forcerange[r.arm_actuators[r.gripper_controller.joint]] = (-limit, limit)

    def _any_goal_running(self) -> bool:
        return any((r.arm_controller is not None and r.arm_controller.active is not None)
                   or (r.gripper_controller is not None and r.gripper_controller.active is not None)
                   for r in self.robots)

    def update(self) -> None:
        """After a physics step: check every running goal against the measured state."""
        now = self.clock()
        for r in self.robots:
            if r.arm_controller is not None and r.arm_controller.active is not None:
                self.outcomes += r.arm_controller.update(
                    now, self.data.qpos[r.arm_qpos], self.data.qvel[r.arm_dofs], self.data.qacc[r.arm_dofs])
            if r.gripper_controller is not None and r.gripper_controller.active is not None:
                self.outcomes += r.gripper_controller.update(now, *self.gripper_reading(r))
        self.running = self._any_goal_running()

    def end_at_reset(self, r: RobotInstance) -> None:
        """A reset puts the robot back at its start: running goals end (INVALID_GOAL), servos at full force."""
        reason = 'the simulation was reset: the robot is back at its initial pose'
        if r.arm_controller is not None:
            self.outcomes += r.arm_controller.preempt(reason, self.clock())
        if r.gripper_controller is not None:
            position, _, effort = self.gripper_reading(r)
            self.outcomes += r.gripper_controller.preempt(reason, position, effort)
            r.gripper_controller.effort_limit_in_force = r.gripper_controller.effort_limit
            self._apply_gripper_effort(r)
        self.running = False
