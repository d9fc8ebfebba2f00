"""The layer line, checked by module: ROS adapters live in a ``ros/`` folder of their package
(``robotsim_core/ros/``, ``robotsim_sim/ros/``, ...), everything else is ROS-free.

A ROS-free module imports no ROS client library, launch library or interface package, not even
inside a function, and imports no ROS adapter at module level (a command-line entry point may load
one lazily inside the command that needs it, so ``robotsim --help`` works without ROS). A second
test imports every ROS-free module with those packages made unimportable, so a transitive import
through a third module is caught as well."""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

WORKSPACE = Path(__file__).resolve().parents[1]
PACKAGES = ('robotsim_core', 'robotsim_sensors', 'robotsim_firmware', 'robotsim_sim', 'robotsim_learning', 'robotsim')
ROS_LIBRARIES = {'rclpy', 'launch', 'launch_ros', 'launch_testing', 'rosbag2_py', 'tf2_ros', 'message_filters',
                 'rosidl_runtime_py', 'ros2cli'}
RUNS_IN_BLENDER = {'robotsim_learning.render.blender_side'}
"""Imported by Blender's own Python (bpy), never here: ROS-free, but only importable there."""
NOT_ROS = {'robotsim_interfaces'}  # none today; a ROS-free package whose name ends like an interface package


def is_ros_package(name: str) -> bool:
    """rclpy, launch and friends, and every interface package (``*_msgs``, ``*_interfaces``, ``*_srvs``)."""
    root = name.split('.')[0]
    return root in ROS_LIBRARIES or (root not in NOT_ROS and root.endswith(('_msgs', '_interfaces', '_srvs')))


def python_modules() -> list[tuple[str, Path]]:
    """(dotted module name, file) of every module of the workspace's Python packages (vendored code aside)."""
    modules = []
    for package in PACKAGES:
        root = WORKSPACE / 'src' / package
        for path in sorted((root / package).rglob('*.py')):
            relative = path.relative_to(root).with_suffix('')
            if 'vendor' in relative.parts:
                continue
            parts = relative.parts[:-1] if relative.name == '__init__' else relative.parts
            modules.append(('.'.join(parts), path))
    return modules


def is_adapter(module: str) -> bool:
    return 'ros' in module.split('.')[1:]


def imports(path: Path, module: str) -> list[tuple[str, bool]]:
    """(absolute module imported, at module level?) of every import statement in ``path``."""
    tree = ast.parse(path.read_text())
    top_level = {id(node) for node in tree.body}
    for node in tree.body:  # imports under a module-level if/try still run at import time
        if isinstance(node, (ast.If, ast.Try)):
            top_level |= {id(child) for child in ast.walk(node)}
    package = module.split('.') if path.name == '__init__.py' else module.split('.')[:-1]
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(alias.name, id(node) in top_level) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = '.'.join(package[:len(package) - node.level + 1]) if node.level else ''
            target = '.'.join(part for part in (base, node.module or '') if part)
            found.append((target, id(node) in top_level))
            # `from . import x` / `from .ros import x`: the names may be modules themselves
            found += [(f'{target}.{alias.name}', id(node) in top_level) for alias in node.names]
    return found


def test_ros_free_modules_import_no_ros():
    modules = python_modules()
    adapters = {name for name, _ in modules if is_adapter(name)}
    ros_free = [(name, path) for name, path in modules if not is_adapter(name)]
    assert len(ros_free) > 80 and len(adapters) > 10, (len(ros_free), len(adapters))
    problems = []
    for name, path in ros_free:
        for target, top_level in imports(path, name):
            if is_ros_package(target):
                problems.append(f'{path.relative_to(WORKSPACE)} imports {target} (a ROS package)')
            elif top_level and (target in adapters or any(target.startswith(a + '.') for a in adapters)):
                problems.append(f'{path.relative_to(WORKSPACE)} imports the ROS adapter {target} at module level')
    assert not problems, '\n'.join(problems)


def test_every_ros_free_module_imports_with_ros_unavailable():
    """Import each ROS-free module in a process where rclpy, launch and every interface package
    raise ImportError: what a machine without ROS sees."""
    names = [name for name, _ in python_modules() if not is_adapter(name) and name not in RUNS_IN_BLENDER]
    script = f'''
import importlib, importlib.abc, json, sys
LIBRARIES = {sorted(ROS_LIBRARIES)!r}
class NoRos(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        root = name.split('.')[0]
        if root in LIBRARIES or root.endswith(('_msgs', '_interfaces', '_srvs')):
            raise ImportError(f'{{name}} is a ROS package (blocked by the layering test)')
        return None
sys.meta_path.insert(0, NoRos())
failed = {{}}
for name in json.loads(sys.argv[1]):
    try:
        importlib.import_module(name)
    except ImportError as error:
        failed[name] = str(error)
print(json.dumps(failed))
'''
    completed = subprocess.run([sys.executable, '-c', script, json.dumps(names)], capture_output=True, text=True,
                               timeout=600)
    assert completed.returncode == 0, completed.stderr[-3000:]
    failed = json.loads(completed.stdout.strip().splitlines()[-1])
    assert not failed, '\n'.join(f'{name}: {error}' for name, error in failed.items())


def test_adapters_are_told_apart_by_path():
    """The rule the tests above rely on, shown on known modules: the simulation is ROS-free, the node is not."""
    modules = dict(python_modules())
    assert 'robotsim_sim.simulation' in modules and not is_adapter('robotsim_sim.simulation')
    assert 'robotsim_sim.ros.sim_node' in modules and is_adapter('robotsim_sim.ros.sim_node')
    assert is_ros_package('sensor_msgs.msg') and is_ros_package('rclpy.node') and is_ros_package('launch_ros')
    assert not is_ros_package('robotsim_core.contract') and not is_ros_package('mujoco')


def test_every_import_of_a_workspace_module_resolves():
    """Every import of one of our modules, lazy ones inside functions included, names a module that exists
    in the source tree: a module moved or renamed leaves no import behind that only a stale build or
    install directory would still satisfy."""
    modules = python_modules()
    known = {name for name, _ in modules}
    problems = []
    for name, path in modules:
        package = name.split('.') if path.name == '__init__.py' else name.split('.')[:-1]
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = '.'.join(package[:len(package) - node.level + 1]) if node.level else ''
                targets = ['.'.join(part for part in (base, node.module or '') if part)]
            else:
                continue
            problems += [f'{path.relative_to(WORKSPACE)}:{node.lineno} imports {target}: no such module here'
                         for target in targets if target.split('.')[0] in PACKAGES and target not in known]
    assert not problems, '\n'.join(problems)


def test_imports_run_downward_only():
    """A module imports only its own package and the packages below it, lazy imports included: core at the
    bottom, the bringup (``robotsim``: the CLI, the node graph, the launchers) on top, nothing importing it."""
    problems = []
    for name, path in python_modules():
        own = PACKAGES.index(name.split('.')[0])
        for target, _ in imports(path, name):
            root = target.split('.')[0]
            if root in PACKAGES and PACKAGES.index(root) > own:
                problems.append(f'{path.relative_to(WORKSPACE)} imports {target}, a package above {PACKAGES[own]}')
    assert not problems, '\n'.join(problems)
    # The check sees an upward import: the bringup's own modules import every package below them.
    assert any(target.startswith('robotsim_learning') for name, path in python_modules() if name == 'robotsim.bringup'
               for target, _ in imports(path, name))


def import_graph(unit=lambda module: module) -> dict[str, set[str]]:
    """Which workspace module (or unit of modules, ``unit(module)``) imports which, lazy imports included;
    ``from package import name`` counts as an import of the module ``package.name`` when there is one."""
    modules = dict(python_modules())
    graph: dict[str, set[str]] = {unit(name): set() for name in modules}
    for name, path in modules.items():
        for target, _ in imports(path, name):
            while target and target not in modules:
                target = target.rpartition('.')[0]
            if target and unit(target) != unit(name):
                graph[unit(name)].add(unit(target))
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The import cycles of ``graph``: its strongly connected components of more than one node (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        for other in sorted(graph.get(node, ())):
            if other not in index:
                visit(other)
                low[node] = min(low[node], low[other])
            elif other in stack:
                low[node] = min(low[node], index[other])
        if low[node] == index[node]:
            component = []
            while True:
                other = stack.pop()
                component.append(other)
                if other == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))
    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def _subpackage(module: str) -> str:
    """A module's unit: its subpackage (robotsim_core.description, robotsim_core.arm, ...) or itself."""
    parts = module.split('.')
    return module if len(parts) <= 2 or not (WORKSPACE / 'src' / parts[0] / parts[0] / parts[1]).is_dir() \
        else '.'.join(parts[:2])


def test_no_import_cycles_between_modules_or_subpackages():
    """No module imports itself through others, and no subpackage does either: ``robotsim_core.description``
    (the robot and world description, its URDF and MJCF writers and its kinematics) imports only leaf modules."""
    assert not cycles(import_graph()), cycles(import_graph())
    by_unit = import_graph(_subpackage)
    assert not cycles(by_unit), cycles(by_unit)
    assert by_unit['robotsim_core.description'] <= {'robotsim_core.errors', 'robotsim_core.geometry',
                                                    'robotsim_core.config_schema', 'robotsim_core.sensor_kinds'}, \
        by_unit['robotsim_core.description']
    # The check sees a cycle when there is one.
    assert cycles({'a': {'b'}, 'b': {'c'}, 'c': {'a'}, 'd': {'a'}}) == [['a', 'b', 'c']]
