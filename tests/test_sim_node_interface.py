"""The simulator node's interface table (robotsim_sim.node_interface) is what a running node offers: every
parameter with its default, every service and action server and every command subscription, nothing more
(the reference page docs/reference/sim_node.md is written from that table)."""

from __future__ import annotations

from rcl_interfaces.srv import GetParameters, ListParameters

from robotsim_sim.node_interface import (SIM_NODE_ACTIONS, SIM_NODE_PARAMETERS, SIM_NODE_SERVICES,
                                         SIM_NODE_SUBSCRIPTIONS)
from rostest_helpers import NodeProcess, Observer

NODE = 'robotsim_sim'


def test_a_running_simulator_node_offers_exactly_its_table():
    given = {'cameras': False, 'start_paused': True}
    sim = NodeProcess('robotsim_sim', 'sim_node', given)
    observer = Observer('interface_test')
    try:
        listed = observer.call(ListParameters, f'/{NODE}/list_parameters', ListParameters.Request(), timeout=120)
        names = set(listed.result.names) - {'use_sim_time', 'start_type_description_service'}
        assert names == {p.name for p in SIM_NODE_PARAMETERS}, names ^ {p.name for p in SIM_NODE_PARAMETERS}
        values = observer.call(GetParameters, f'/{NODE}/get_parameters',
                               GetParameters.Request(names=[p.name for p in SIM_NODE_PARAMETERS])).values
        for parameter, value in zip(SIM_NODE_PARAMETERS, values):
            got = {1: value.bool_value, 2: value.integer_value, 3: value.double_value, 4: value.string_value}[value.type]
            assert got == given.get(parameter.name, parameter.default), (parameter.name, got, parameter.default)
        services_of = 'get_service_names_and_types_by_node'
        assert observer.spin_until(lambda: any(name == '/sim/pause' for name, _ in observer.of_node(services_of, NODE)), 60)
        offered = {name: types[0] for name, types in observer.of_node(services_of, NODE)}
        own = {name for name in offered if name.startswith(f'/{NODE}/')}  # parameter services of every node
        actions = {name.split('/_action/')[0] for name in offered if '/_action/' in name}
        services = set(offered) - own - {name for name in offered if '/_action/' in name}
        assert services == {f'/{s.name}' for s in SIM_NODE_SERVICES}, services
        for service in SIM_NODE_SERVICES:
            assert offered[f'/{service.name}'] == service.type, service
        assert actions == {f'/{a.name}' for a in SIM_NODE_ACTIONS}, actions  # the rover has an arm and a gripper
        subscribed = dict(observer.of_node('get_subscriber_names_and_types_by_node', NODE))
        commands = {name for name in subscribed if name not in ('/clock', '/parameter_events')}
        assert commands == {f'/{s.name}' for s in SIM_NODE_SUBSCRIPTIONS}, commands
        for subscription in SIM_NODE_SUBSCRIPTIONS:
            assert subscribed[f'/{subscription.name}'] == [subscription.type], subscription
    finally:
        observer.close()
        sim.stop()
