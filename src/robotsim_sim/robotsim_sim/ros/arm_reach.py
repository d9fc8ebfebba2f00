"""``robotsim arm reach X Y Z [PITCH]``: plan a reach on the running simulator's world with
:class:`~.arm_commander.ArmCommander` and execute it through the arm's FollowJointTrajectory action."""

from __future__ import annotations

import math
import sys

import rclpy
from rclpy.executors import SingleThreadedExecutor
from rclpy.node import Node
from rclpy.parameter import Parameter

from robotsim_core.errors import DescriptionError

from .arm_commander import ArmCommander, spin_in_background, stop_background


def _simulator_parameters(node: Node, simulator: str, timeout: float) -> dict:
    """The running simulator node's ``world``, ``robot`` and ``fleet`` parameters."""
    from rclpy.parameter import parameter_value_to_python

    from robotsim_core.ros.distro import parameter_client
    client = parameter_client(node, simulator)
    if not client.wait_for_services(timeout_sec=timeout):
        raise LookupError(f'no simulator node {simulator} answers within {timeout:g} s (is it running, on '
                          'this ROS_DOMAIN_ID?); give --world and --robot to plan without asking it')
    names = ['world', 'robot', 'fleet']
    future = client.get_parameters(names)
    executor = SingleThreadedExecutor()  # spun here, before the node's other entities exist
    executor.add_node(node)
    executor.spin_until_future_complete(future, timeout_sec=timeout)
    executor.remove_node(node)
    executor.shutdown()
    if not future.done() or future.result() is None:
        raise LookupError(f'the simulator node {simulator} did not return its parameters within {timeout:g} s')
    return {name: parameter_value_to_python(value) for name, value in zip(names, future.result().values)}


def reach_command(args) -> int:
    """`robotsim arm reach X Y Z [PITCH]`: plan on the running simulator's world, execute through
    its FollowJointTrajectory action, print one line; 0 reached (or planned, --plan-only), 1 not, 2
    bad input or no simulator."""
    pitch = None if args.pitch is None else float(args.pitch)
    position = (args.x, args.y, args.z)
    bad = [name for name, value in zip('xyz', position) if not math.isfinite(value)]
    if bad or (pitch is not None and not math.isfinite(pitch)):
        print(f'robotsim arm reach: {bad[0] if bad else "PITCH"}: expected a finite number', file=sys.stderr)
        return 2
    rclpy.init(args=None)
    node = Node('robotsim_arm_reach', namespace=args.namespace or None,
                parameter_overrides=[Parameter('use_sim_time', value=True)])
    executor = thread = None
    try:
        settings = {'world': args.world, 'robot': args.robot, 'fleet': ''}
        if not args.world:
            try:
                settings.update(_simulator_parameters(node, args.simulator, args.timeout))
            except LookupError as error:
                print(f'robotsim arm reach: {error}', file=sys.stderr)
                return 2
            if args.robot:
                settings['robot'] = args.robot
        try:
            commander = ArmCommander(node, settings['world'], settings['robot'] or 'rover', args.namespace,
                                     settings['fleet'] or '', args.seed, args.arm or None)
        except (DescriptionError, ValueError) as error:
            print(f'robotsim arm reach: {error}', file=sys.stderr)
            return 2
        # Spun only once every entity exists: creating one under a spinning executor races with it.
        executor, thread = spin_in_background(node)
        problem = commander.executor.wait_until_ready(args.timeout)
        if problem:
            print(f'robotsim arm reach: {problem}', file=sys.stderr)
            return 2
        outcome = commander.reach(position, pitch, args.plan_only)
        if outcome.success:
            print(outcome.message)
            return 0
        print(f'{outcome.code}: {outcome.message}', file=sys.stderr)
        return 1
    finally:
        if executor is not None:
            stop_background(executor, thread)
        node.destroy_node()
        rclpy.try_shutdown()
