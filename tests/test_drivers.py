"""One driver table (robotsim_core.drivers), read by every consumer of a driver name: each name it lists is
accepted by the launchers, the episode loop, the evaluator and the LeRobot export exactly where the table
says, and refused elsewhere in one line."""

from __future__ import annotations

import argparse

import pytest

from robotsim.bringup import config_from_arguments, graph_for
from robotsim_core.drivers import DRIVERS, bringup_drivers, episode_drivers, evaluated_drivers, goal_drivers
from robotsim_core.errors import DescriptionError
from test_layering import WORKSPACE

POLICY = WORKSPACE / 'config' / 'policies' / 'rover_goal_reaching.onnx'


def _arguments(name: str) -> dict[str, str]:
    return {'driver': name, **({'policy': str(POLICY)} if DRIVERS[name].argument == 'policy' else {}),
            **({'world': 'pick'} if name == 'pick' else {}), **({'robot': 'go1'} if DRIVERS[name].legs else {})}


@pytest.mark.parametrize('name', sorted(DRIVERS))
def test_the_launchers_start_the_tables_node_or_refuse_the_name(name):
    info = DRIVERS[name]
    if info.node is None:
        with pytest.raises(DescriptionError, match="driver: expected one of ''"):
            config_from_arguments({'driver': name})
        return
    nodes = graph_for('sim', _arguments(name))
    driving = [node for node in nodes if (node.package, node.executable) == info.node]
    assert len(driving) == 1 and driving[0].required == info.required, nodes
    if info.goal:
        assert any('goal' in node.parameters for node in graph_for('sim', {**_arguments(name), 'goal': '1,2'}))
    else:
        with pytest.raises(DescriptionError, match='goal'):
            config_from_arguments({**_arguments(name), 'goal': '1,2'})
    if info.sim_only:
        with pytest.raises(DescriptionError, match=f'{name} .*: sim only'):
            graph_for('real', _arguments(name))
    # A driver of a legged robot drives no wheeled one, and the other way round: one line naming driver.
    other = {**_arguments(name), 'robot': 'rover' if info.legs else 'go1'}
    if name != 'pick':
        with pytest.raises(DescriptionError, match=f'driver: {name} cannot drive|policy: .* no .*lidar'):
            graph_for('sim', other)


def test_one_class_per_driver_runs_in_the_episode_loop_and_the_node():
    """The table names one ROS-free class per driver of the base; the episode loop builds it with make_driver,
    the generic driver node with the same call, and every bringup driver of the base is that node."""
    from robotsim_learning.driving import Driver, make_driver

    for name in episode_drivers():
        driver = make_driver(f'{name}:{POLICY}' if DRIVERS[name].argument == 'policy' else name)
        assert isinstance(driver, Driver) and driver.name == name and driver.rate > 0 and driver.inputs
        assert driver.privileged == bool(DRIVERS[name].sim_only), name
    with pytest.raises(ValueError, match="--driver: unknown driver 'pick'"):
        make_driver('pick')
    with pytest.raises(ValueError, match='--driver policy: expected policy:FILE'):
        make_driver('policy')
    with pytest.raises(ValueError, match="--driver wander: takes no argument"):
        make_driver('wander:x')
    setup = (WORKSPACE / 'src' / 'robotsim_learning' / 'setup.py').read_text()
    for name, info in DRIVERS.items():
        if info.node is not None and info.implementation:
            assert f"'{info.node[1]} = robotsim_learning.ros.driver_node:{name}'" in setup, name


def test_the_evaluator_and_the_export_read_the_table():
    from robotsim_learning import evaluation_cli
    from robotsim_learning.lerobot_export import GOAL_TASK, WANDER_TASK, task_of

    parser = argparse.ArgumentParser(exit_on_error=False)
    evaluation_cli.add_arguments(parser)
    for name in DRIVERS:
        if name in evaluated_drivers():
            assert parser.parse_args(['--driver', name, '--seed', '1']).driver == name
        else:
            with pytest.raises((argparse.ArgumentError, SystemExit)):
                parser.parse_args(['--driver', name, '--seed', '1'])
    for name in episode_drivers():
        assert task_of(name) == (GOAL_TASK if DRIVERS[name].goal else WANDER_TASK)
        assert task_of(f'{name}:policy.onnx') == task_of(name)
    assert task_of('somebody') is None
    assert set(goal_drivers()) <= set(bringup_drivers()) and '' in bringup_drivers()
