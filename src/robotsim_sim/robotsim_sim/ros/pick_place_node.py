"""The ``pick_place`` node (``make sim DEMO=pick``, ``driver:=pick``): picks the world's cube and places it in
the world's bin once, through the arm's and gripper's actions (:class:`~.arm_commander.ArmCommander` and its
:class:`~.arm_commander.ActionExecutor`), logs every step and exits 0 when the cube was placed, 1 when not,
2 when it cannot start."""

from __future__ import annotations

import math
import sys

import numpy as np
from rclpy.node import Node

from robotsim_core.errors import DescriptionError
from robotsim_core.ros.common import ParameterError, checked_parameter, run_node
from robotsim_msgs.srv import SetEntityPose

from ..pick_place import PickAndPlace, PickPlaceOptions, PickSetupError, PickWorld, sample_placements
from .arm_commander import STATE_TIMEOUT, ArmCommander, spin_in_background, stop_background, wait_for


class PickPlaceNode(Node):
    """Picks the world's cube and places it in its bin once, through the actions (module docstring);
    the cube's pose from ``/sim/get_entity_pose``, so the end says 'placed in the bin' or fails
    'not_in_bin' as the core does."""

    def __init__(self):
        super().__init__('pick_place')
        robot = checked_parameter(self, 'robot', 'rover')
        world = checked_parameter(self, 'world', 'pick')
        fleet = checked_parameter(self, 'fleet', '')
        seed = checked_parameter(self, 'seed', 0, minimum=0)
        self.placement_seed = checked_parameter(self, 'placement_seed', -1, minimum=-1)
        self.options = PickPlaceOptions(cube=checked_parameter(self, 'cube', 'cube'))
        self.commander = ArmCommander(self, world, robot, self.get_namespace().strip('/'), fleet, seed)
        self.task = PickWorld.from_world(self.commander.world, self.options)
        self.set_pose = self.create_client(SetEntityPose, '/sim/set_entity_pose',
                                           callback_group=self.commander.executor.group)
        self.exit_code = 1

    def run_once(self) -> int:
        log = self.get_logger()
        executor, planner, task = self.commander.executor, self.commander.planner, self.task
        problem = executor.wait_until_ready()
        if problem:
            log.error(problem)
            return 2
        executor.update_scene(planner)
        size = task.cube.size
        if self.placement_seed >= 0:
            x, y, yaw = sample_placements(planner, task, 1, self.placement_seed)[0]
            request = SetEntityPose.Request(entity=task.cube.name)
            request.pose.position.x, request.pose.position.y, request.pose.position.z = x, y, size[2] / 2
            request.pose.orientation.z, request.pose.orientation.w = math.sin(yaw / 2), math.cos(yaw / 2)
            if not self.set_pose.wait_for_service(timeout_sec=STATE_TIMEOUT):
                log.error('no /sim/set_entity_pose service to place the cube with')
                return 2
            answer = self.set_pose.call_async(request)
            if not wait_for(answer, STATE_TIMEOUT) or not answer.result().success:
                log.error(f'could not place the cube: {answer.result().message if answer.result() else "no answer"}')
                return 2
            log.info(f'cube placed at ({x:.3f}, {y:.3f}) m, yaw {math.degrees(yaw):.0f} deg (placement seed '
                     f'{self.placement_seed})')
            executor.wait(0.5)
        else:
            x, y, yaw = task.cube.position[0], task.cube.position[1], task.cube.yaw
            log.info(f'cube where world {self.commander.world.name} puts it: ({x:.3f}, {y:.3f}) m')
        cube = np.eye(4)
        cube[:3, :3] = [[math.cos(yaw), -math.sin(yaw), 0], [math.sin(yaw), math.cos(yaw), 0], [0, 0, 1]]
        cube[:3, 3] = (x, y, size[2] / 2)
        result = PickAndPlace(planner, task, self.options, on_log=log.info).run(executor, cube_pose=cube)
        if result.success:
            where = ('placed in the bin at (' + ', '.join(f'{v:.3f}' for v in result.cube_end) + ') m'
                     if result.cube_end else 'released over the bin (where the cube ended is not observable)')
            log.info(f'pick and place done: {where}; {result.motion_time:.1f} s of motion, planning '
                     f'{result.planning_time:.2f} s')
            return 0
        log.error(f'pick and place failed ({result.code}) in stage {result.stage}: {result.reason}')
        return 1


def pick_place_main(args=None) -> int:
    exit_code = [1]

    def run(node: PickPlaceNode) -> None:
        executor, thread = spin_in_background(node)
        try:
            exit_code[0] = node.run_once()
        finally:
            stop_background(executor, thread)

    status = run_node('pick_place', PickPlaceNode, (ParameterError, DescriptionError, PickSetupError, ValueError),
                      args, run=run)
    return status or exit_code[0]


if __name__ == '__main__':
    sys.exit(pick_place_main())
