"""Load the project's launch files and list the nodes they would start, without ``launch``.

The PyPI wheels do not ship ``launch`` / ``launch_ros``, so a minimal recording stand-in of the
API subset the launch files use (LaunchDescription, DeclareLaunchArgument, OpaqueFunction,
LaunchConfiguration, LogInfo, ExecuteProcess, Shutdown, launch_ros Node) is installed for the
duration of the load. The launch file code itself (argument declarations, the OpaqueFunction,
robotsim_core.launch_adapter) runs for real; only the launch framework is stood in for. Loading
with the real ``launch`` package is not exercised on these machines (see the README).
"""

from __future__ import annotations

import runpy
import sys
import types
from dataclasses import dataclass, field


@dataclass
class LoadedNode:
    package: str
    executable: str
    name: str
    namespace: str
    parameters: dict
    remappings: list
    arguments: list
    shuts_down_on_exit: bool
    command: list = field(default_factory=list)  # ExecuteProcess instead of a Node


def _standin_modules() -> dict[str, types.ModuleType]:
    launch = types.ModuleType('launch')
    actions = types.ModuleType('launch.actions')
    substitutions = types.ModuleType('launch.substitutions')
    launch_ros = types.ModuleType('launch_ros')
    ros_actions = types.ModuleType('launch_ros.actions')

    class LaunchDescription:
        def __init__(self, entities):
            self.entities = list(entities)

    class DeclareLaunchArgument:
        def __init__(self, name, default_value=None, description=''):
            self.name, self.default_value, self.description = name, default_value, description

    class OpaqueFunction:
        def __init__(self, function, kwargs=None):
            self.function, self.kwargs = function, kwargs or {}

    class LaunchConfiguration:
        def __init__(self, name):
            self.name = name

        def perform(self, context):
            return context.launch_configurations[self.name]

    class Shutdown:
        def __init__(self, reason=''):
            self.reason = reason

    class LogInfo:
        def __init__(self, msg=''):
            self.msg = msg

    class ExecuteProcess:
        def __init__(self, cmd, name=None, output=None, on_exit=None):
            self.cmd, self.name, self.on_exit = cmd, name, on_exit

    class Node:
        def __init__(self, package, executable, name=None, namespace='', parameters=(), remappings=(),
                     arguments=(), output=None, on_exit=None):
            self.kwargs = dict(package=package, executable=executable, name=name, namespace=namespace,
                               parameters=list(parameters), remappings=list(remappings), arguments=list(arguments))
            self.on_exit = on_exit

    launch.LaunchDescription = LaunchDescription
    actions.DeclareLaunchArgument, actions.OpaqueFunction = DeclareLaunchArgument, OpaqueFunction
    actions.Shutdown, actions.LogInfo, actions.ExecuteProcess = Shutdown, LogInfo, ExecuteProcess
    substitutions.LaunchConfiguration = LaunchConfiguration
    ros_actions.Node = Node
    launch.actions, launch.substitutions, launch_ros.actions = actions, substitutions, ros_actions
    return {'launch': launch, 'launch.actions': actions, 'launch.substitutions': substitutions,
            'launch_ros': launch_ros, 'launch_ros.actions': ros_actions}


class _Context:
    def __init__(self, configurations):
        self.launch_configurations = configurations


def load_launch_file(path: str, arguments: dict[str, str]) -> tuple[list[str], list[LoadedNode]]:
    """(declared argument names, nodes) of a launch file given ``name:=value`` arguments."""
    saved = {name: sys.modules.get(name) for name in _standin_modules()}
    sys.modules.update(_standin_modules())
    try:
        description = runpy.run_path(path)['generate_launch_description']()
        declared = [e for e in description.entities if type(e).__name__ == 'DeclareLaunchArgument']
        names = [d.name for d in declared]
        unknown = set(arguments) - set(names)
        if unknown:
            raise ValueError(f'{path}: undeclared launch arguments {sorted(unknown)}')
        configurations = {d.name: d.default_value for d in declared} | arguments
        nodes = []
        for entity in description.entities:
            if type(entity).__name__ != 'OpaqueFunction':
                continue
            for action in entity.function(_Context(configurations), **entity.kwargs):
                kind = type(action).__name__
                if kind == 'Node':
                    k = action.kwargs
                    parameters = {}
                    for item in k['parameters']:
                        parameters.update(item)
                    nodes.append(LoadedNode(k['package'], k['executable'], k['name'], k['namespace'] or '',
                                            parameters, [tuple(r) for r in k['remappings']], k['arguments'],
                                            bool(action.on_exit)))
                elif kind == 'LogInfo':  # an optional node that is not installed (rviz2 here)
                    nodes.append(LoadedNode('', '', '(skipped)', '', {}, [], [], False, [action.msg]))
                elif kind == 'ExecuteProcess':
                    nodes.append(LoadedNode('', '', action.name, '', {}, [], [], bool(action.on_exit), list(action.cmd)))
        return names, nodes
    finally:
        for name, module in saved.items():
            if module is None:
                sys.modules.pop(name, None)
            else:
                sys.modules[name] = module
