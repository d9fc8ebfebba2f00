"""Load the project's launch files with the real ROS 2 ``launch`` / ``launch_ros`` libraries and list
the nodes they would start, without starting them.

The launch description is produced by launch's own Python launch-file loader; the declared
arguments and the given ``name:=value`` pairs go into a real LaunchContext; the OpaqueFunction runs
as ``ros2 launch`` runs it; each resulting ``launch_ros`` Node performs its substitutions, and its
package, executable, node name, namespace, remappings and the params file launch_ros wrote are read
back. The libraries come from set-up's optional wheel folder (ROBOTSIM_ROS2_WHEELS); without them
the tests that use this module skip.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

import pytest
import yaml

launch = pytest.importorskip('launch', reason='the ROS 2 launch wheels are not installed '
                             '(set-up with ROBOTSIM_ROS2_WHEELS=DIR, see the README)')
launch_ros = pytest.importorskip('launch_ros', reason='launch_ros is not installed')

from launch.actions import DeclareLaunchArgument, LogInfo, OpaqueFunction  # noqa: E402
from launch.launch_description_sources import get_launch_description_from_python_launch_file  # noqa: E402
from launch.utilities import perform_substitutions  # noqa: E402
from launch_ros.actions import Node  # noqa: E402


@dataclass
class LoadedNode:
    package: str
    executable: str
    name: str
    namespace: str
    parameters: dict
    remappings: list
    arguments: list
    label: str = ''
    command: list = field(default_factory=list)  # ExecuteProcess instead of a Node


def _text(context, substitutions) -> str | None:
    try:
        return perform_substitutions(context, substitutions)
    except Exception:  # a LocalSubstitution filled in only when the process starts (__node, __ns)
        return None


def _loaded_node(node: Node, context) -> LoadedNode:
    node._perform_substitutions(context)  # what Node.execute does before starting the process
    command = [_text(context, part) for part in node.cmd]
    parameters, arguments = {}, []
    for flag, value in zip(command, command[1:]):
        if flag == '--params-file':
            # launch_ros dumps list values as Python tuples (!!python/tuple, which rcl's parser reads
            # as a plain sequence): load them with the full loader and compare as lists.
            for section in yaml.full_load(Path(value).read_text()).values():
                parameters.update({key: list(item) if isinstance(item, tuple) else item
                                   for key, item in section['ros__parameters'].items()})
            os.unlink(value)
    ros_args = command.index('--ros-args')
    arguments = [a for a in command[1:ros_args] if a is not None]
    namespace = node.expanded_node_namespace
    namespace = '' if namespace == Node.UNSPECIFIED_NODE_NAMESPACE else namespace.strip('/')
    return LoadedNode(node.node_package, node.node_executable, node.node_name.rsplit('/', 1)[-1], namespace,
                      parameters,
                      [tuple(r) for r in node.expanded_remapping_rules or []], arguments,
                      label=_text(context, node.name) or '')


def load_launch_file(path: str, arguments: dict[str, str]) -> tuple[list[str], list]:
    """(declared argument names, nodes and notes) of a launch file given ``name:=value`` arguments.

    Raises whatever the launch file raises (e.g. robotsim's LaunchSetupError) as ``ros2 launch`` would
    report it."""
    description = get_launch_description_from_python_launch_file(path)
    context = launch.LaunchContext()
    context.launch_configurations.update(arguments)
    declared, loaded = [], []
    for entity in description.entities:
        if isinstance(entity, DeclareLaunchArgument):
            declared.append(entity.name)
            entity.visit(context)  # applies the default where no value was given
        elif isinstance(entity, OpaqueFunction):
            for action in entity.visit(context) or []:
                if isinstance(action, Node):
                    loaded.append(_loaded_node(action, context))
                elif isinstance(action, LogInfo):  # an optional node that is not installed (rviz2 here)
                    loaded.append(LoadedNode('', '', '(skipped)', '', {}, [], [],
                                             command=[_text(context, action.msg)]))
                else:  # ExecuteProcess: `ros2 bag record` on a full install
                    loaded.append(LoadedNode('', '', '', '', {}, [], [], label=_text(context, action.name) or '',
                                             command=[_text(context, part) for part in action.cmd]))
    return declared, loaded


def fake_driver_prefix(root: Path, packages: list[tuple[str, str]]) -> str:
    """An install prefix holding ament-indexed packages with a stand-in executable each, so the real
    mode's launch file can be loaded on a machine without the robot's driver packages."""
    index = root / 'share' / 'ament_index' / 'resource_index' / 'packages'
    index.mkdir(parents=True, exist_ok=True)
    for package, executable in packages:
        (index / package).write_text('')
        exe = root / 'lib' / package / executable
        exe.parent.mkdir(parents=True, exist_ok=True)
        exe.write_text('#!/bin/sh\nexit 0\n')
        exe.chmod(0o755)
    return str(root)
