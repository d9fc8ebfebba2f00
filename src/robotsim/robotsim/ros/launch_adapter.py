"""The ROS 2 launch consumer of :func:`robotsim.bringup.node_graph` (``ros2 launch``).

``launch/sim.launch.py``, ``real.launch.py`` and ``robot.launch.py`` are one line each: they call
:func:`generate_launch_description` with their mode. Arguments are declared from
:func:`robotsim.bringup.launch_arguments`; at launch time an OpaqueFunction reads them, builds
the graph and turns each node into a ``launch_ros`` Node. It behaves like the bare-machine launcher
(:mod:`robotsim.launcher`) where plain ``ros2 launch`` would not:

* an undeclared (e.g. misspelled) argument is an error, not silently ignored;
* every node's executable is looked up before anything starts, and all missing ones are named at
  once (``ros2 launch`` would start the first nodes, then abort on the first missing package);
* a required node's exit shuts the launch down, and a *failed* required node (non-zero status)
  makes ``ros2 launch`` exit non-zero (it knows only 0 and 1);
* output lines are labelled with the node's namespace and name (``[robot1/motor_bridge-3]``), not
  its executable, so the robots of a fleet can be told apart;
* an argument given twice (``seed:=1 seed:=2``) is an error, not the last one silently winning;
* every node dies with ``ros2 launch``, also when it is SIGKILLed (which runs no shutdown): each node
  process starts under ``setpriv --pdeathsig TERM`` (util-linux), so the kernel sends it SIGTERM (a
  normal stop: a recorder closes its bag) when the launch process is gone.

Errors are raised as :class:`LaunchSetupError`, which ``ros2 launch`` prints as one line
("Caught exception in launch ...: <message>") before exiting with status 1.
"""

from __future__ import annotations

import os
import shutil
import sys

from ..bringup import NodeSpec, graph_for, launch_arguments

DIE_WITH_LAUNCH = ['setpriv', '--pdeathsig', 'TERM', '--']
"""The command prefix of every node: SIGTERM to it when its parent (``ros2 launch``) dies."""


def _prefix() -> str | None:
    return ' '.join(DIE_WITH_LAUNCH) if shutil.which(DIE_WITH_LAUNCH[0]) else None


class LaunchSetupError(RuntimeError):
    """The launch cannot start as asked (bad argument, node not installed, required node failed)."""


def declared_arguments(mode: str) -> list[tuple[str, str, str]]:
    """(name, default, description) of the arguments ``<mode>.launch.py`` declares."""
    return [argument for argument in launch_arguments() if not (mode != 'robot' and argument[0] == 'use_sim')]


def node_kwargs(spec: NodeSpec) -> dict:
    """Keyword arguments of ``launch_ros.actions.Node`` for one node of the graph."""
    kwargs = {'package': spec.package, 'executable': spec.executable, 'name': spec.name,
              'parameters': [dict(spec.parameters)], 'remappings': list(spec.remappings), 'output': 'screen',
              'exec_name': spec.label}  # the output label; launch appends -<n>
    if spec.namespace:
        kwargs['namespace'] = spec.namespace
    if spec.arguments:
        kwargs['arguments'] = list(spec.arguments)
    if _prefix():
        kwargs['prefix'] = _prefix()
    return kwargs


def _package_prefix(package: str) -> str | None:
    from ament_index_python.packages import PackageNotFoundError, get_package_prefix
    try:
        return get_package_prefix(package)
    except PackageNotFoundError:
        return None


def installed_executable(spec: NodeSpec) -> bool:
    """Whether ``ros2 launch`` would find the node's executable (``<prefix>/lib/<package>/<exe>``)."""
    prefix = _package_prefix(spec.package)
    path = os.path.join(prefix, 'lib', spec.package, spec.executable) if prefix else ''
    return bool(prefix) and os.path.isfile(path) and os.access(path, os.X_OK)


def rosbag2_installed() -> bool:
    """``ros2 bag record`` is available (a full ROS install with rosbag2)."""
    return _package_prefix('ros2bag') is not None


def _on_required_exit(spec: NodeSpec):
    from launch.actions import Shutdown

    def handler(event, context):
        if event.returncode != 0 and not context.is_shutdown:
            raise LaunchSetupError(f'required node {spec.label} exited with status {event.returncode}')
        return [Shutdown(reason=f'required node {spec.label} exited')]
    return handler


def launch_action(spec: NodeSpec):
    from launch.actions import ExecuteProcess
    from launch_ros.actions import Node

    on_exit = _on_required_exit(spec) if spec.required else None
    if spec.full_install_command and rosbag2_installed():
        command = (DIE_WITH_LAUNCH if _prefix() else []) + list(spec.full_install_command)
        return ExecuteProcess(cmd=command, name=spec.label, output='screen', on_exit=on_exit)
    return Node(**node_kwargs(spec), on_exit=on_exit)


def _actions(context, mode: str):
    from launch.actions import LogInfo
    from launch.substitutions import LaunchConfiguration

    names = [name for name, _, _ in declared_arguments(mode)]
    unknown = sorted(set(context.launch_configurations) - set(names))
    if unknown:
        raise LaunchSetupError(f'{mode}.launch.py: unknown launch argument(s) {", ".join(unknown)}; '
                               f'expected one of: {", ".join(names)}')
    given = [word.split(':=', 1)[0] for word in sys.argv if ':=' in word and word.split(':=', 1)[0] in names]
    twice = sorted({name for name in given if given.count(name) > 1})
    if twice:  # launch keeps the last value; the bare launcher refuses: so does this
        raise LaunchSetupError(f'{mode}.launch.py: argument(s) {", ".join(twice)} given twice; expected each once')
    arguments = {name: LaunchConfiguration(name).perform(context) for name in names}
    actions, missing = [], []
    for spec in graph_for(mode, arguments, source=f'{mode}.launch.py'):
        if spec.full_install_command and rosbag2_installed():
            actions.append(launch_action(spec))
        elif not installed_executable(spec):
            if spec.optional:
                actions.append(LogInfo(msg=f'{spec.package} is not installed: {spec.label} not started'))
            else:
                missing.append(f'{spec.package}/{spec.executable} (node {spec.label})')
        else:
            actions.append(launch_action(spec))
    if missing:
        raise LaunchSetupError(f'not installed (nothing was started): {", ".join(missing)}')
    return actions


def generate_launch_description(mode: str):
    """mode: 'sim' (sim.launch.py), 'real' (real.launch.py) or 'robot' (robot.launch.py, use_sim:=...)."""
    from launch import LaunchDescription
    from launch.actions import DeclareLaunchArgument, OpaqueFunction

    declared = [DeclareLaunchArgument(name, default_value=default, description=doc)
                for name, default, doc in declared_arguments(mode)]
    return LaunchDescription([*declared, OpaqueFunction(function=_actions, kwargs={'mode': mode})])
