"""The ROS 2 launch consumer of :func:`robotsim_core.bringup.node_graph` (full ROS install).

``launch/sim.launch.py``, ``real.launch.py`` and ``robot.launch.py`` are one line each: they call
:func:`generate_launch_description` with their mode. Arguments are declared from
:func:`robotsim_core.bringup.launch_arguments`; at launch time an OpaqueFunction reads them, builds
the graph and turns each node into a ``launch_ros`` Node (or, for the recorder, ``ros2 bag
record``). A required node's exit shuts the launch down, like the bare-machine launcher does.
"""

from __future__ import annotations

from .bringup import NodeSpec, graph_for, launch_arguments


def node_kwargs(spec: NodeSpec) -> dict:
    """Keyword arguments of ``launch_ros.actions.Node`` for one node of the graph."""
    kwargs = {'package': spec.package, 'executable': spec.executable, 'name': spec.name,
              'parameters': [dict(spec.parameters)], 'remappings': list(spec.remappings), 'output': 'screen'}
    if spec.namespace:
        kwargs['namespace'] = spec.namespace
    if spec.arguments:
        kwargs['arguments'] = list(spec.arguments)
    return kwargs


def _installed(package: str) -> bool:
    from ament_index_python.packages import PackageNotFoundError, get_package_prefix
    try:
        get_package_prefix(package)
        return True
    except PackageNotFoundError:
        return False


def launch_action(spec: NodeSpec):
    from launch.actions import ExecuteProcess, Shutdown
    from launch_ros.actions import Node

    on_exit = [Shutdown(reason=f'required node {spec.label} exited')] if spec.required else None
    if spec.full_install_command:
        return ExecuteProcess(cmd=list(spec.full_install_command), name=spec.name, output='screen', on_exit=on_exit)
    return Node(**node_kwargs(spec), on_exit=on_exit)


def _actions(context, mode: str):
    from launch.actions import LogInfo
    from launch.substitutions import LaunchConfiguration

    names = [name for name, _, _ in launch_arguments() if not (mode != 'robot' and name == 'use_sim')]
    arguments = {name: LaunchConfiguration(name).perform(context) for name in names}
    actions = []
    for spec in graph_for(mode, arguments):
        if spec.optional and not _installed(spec.package):
            actions.append(LogInfo(msg=f'{spec.package} is not installed: {spec.label} not started'))
            continue
        actions.append(launch_action(spec))
    return actions


def generate_launch_description(mode: str):
    """mode: 'sim' (sim.launch.py), 'real' (real.launch.py) or 'robot' (robot.launch.py, use_sim:=...)."""
    from launch import LaunchDescription
    from launch.actions import DeclareLaunchArgument, OpaqueFunction

    declared = [DeclareLaunchArgument(name, default_value=default, description=doc)
                for name, default, doc in launch_arguments() if not (mode != 'robot' and name == 'use_sim')]
    return LaunchDescription([*declared, OpaqueFunction(function=_actions, kwargs={'mode': mode})])
