#!/usr/bin/env python3
"""Write tests/data/humble_api.json: the Python API and the interface definitions of ROS 2 Humble that robotsim's
nodes and launch files may use, read from the upstream sources' ``humble`` branches (no Humble install needed).

    python scripts/humble_api_snapshot.py MIRRORS_DIR

MIRRORS_DIR holds git clones (bare or not) named OWNER+REPO/repo, e.g. ros2+rclpy/repo: ros2/rclpy, ros2/launch,
ros2/launch_ros, ros2/common_interfaces, ros2/rcl_interfaces, ros-controls/control_msgs. For every Python module of
rclpy, launch and launch_ros: its top-level names, and per class its methods (with their parameters), class-level
names and base classes. For every message, service and action of the interface packages: its fields and constants.
tests/test_humble_api.py checks what the nodes use against it.
"""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

PYTHON_PACKAGES = {'ros2/rclpy': ['rclpy/rclpy'], 'ros2/launch': ['launch/launch'],
                   'ros2/launch_ros': ['launch_ros/launch_ros']}
INTERFACE_PACKAGES = {
    'ros2/common_interfaces': ['sensor_msgs', 'geometry_msgs', 'nav_msgs', 'std_msgs', 'diagnostic_msgs',
                               'trajectory_msgs', 'std_srvs'],
    'ros2/rcl_interfaces': ['builtin_interfaces', 'rcl_interfaces', 'rosgraph_msgs'],
    'ros-controls/control_msgs': ['control_msgs'],
}
BRANCH = 'humble'
OUTPUT = Path(__file__).resolve().parents[1] / 'tests' / 'data' / 'humble_api.json'


def git(repo: Path, *args: str) -> str:
    return subprocess.run(['git', '-C', str(repo), *args], check=True, capture_output=True, text=True).stdout


def parameters(function: ast.FunctionDef | ast.AsyncFunctionDef) -> dict:
    a = function.args
    return {'names': [p.arg for p in a.posonlyargs + a.args + a.kwonlyargs],
            'varargs': a.vararg is not None, 'varkw': a.kwarg is not None}


def module_api(source: str) -> dict:
    tree = ast.parse(source)
    names, classes = set(), {}
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            names.add(node.name)
        elif isinstance(node, ast.ClassDef):
            names.add(node.name)
            methods, attributes = {}, set()
            for item in node.body:
                if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    methods[item.name] = parameters(item)
                elif isinstance(item, ast.Assign):
                    attributes.update(t.id for t in item.targets if isinstance(t, ast.Name))
                elif isinstance(item, ast.AnnAssign) and isinstance(item.target, ast.Name):
                    attributes.add(item.target.id)
            classes[node.name] = {'methods': methods, 'attributes': sorted(attributes),
                                  'bases': [ast.unparse(b) for b in node.bases]}
        elif isinstance(node, ast.Assign):
            names.update(t.id for t in node.targets if isinstance(t, ast.Name))
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            names.add(node.target.id)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names.update((alias.asname or alias.name).split('.')[0] for alias in node.names)
        elif isinstance(node, ast.Try):  # (conditional imports of optional dependencies)
            for inner in node.body:
                if isinstance(inner, (ast.Import, ast.ImportFrom)):
                    names.update((alias.asname or alias.name).split('.')[0] for alias in inner.names)
    return {'names': sorted(names), 'classes': classes}


def interface_fields(text: str) -> dict:
    fields, constants = [], []
    for line in text.splitlines():
        line = line.split('#', 1)[0].strip()
        if not line:
            continue
        words = line.split()
        if len(words) < 2:
            continue
        if '=' in words[1] or (len(words) > 2 and words[2].startswith('=')):
            constants.append(words[1].split('=', 1)[0])
        else:
            fields.append(words[1])
    return {'fields': fields, 'constants': constants}


def main(mirrors: Path) -> int:
    snapshot = {'branch': BRANCH, 'sources': {}, 'modules': {}, 'interfaces': {}}
    for repository in sorted({*PYTHON_PACKAGES, *INTERFACE_PACKAGES}):
        repo = mirrors / repository.replace('/', '+') / 'repo'
        commit = git(repo, 'rev-parse', BRANCH).strip()
        snapshot['sources'][repository] = commit
        files = git(repo, 'ls-tree', '-r', '--name-only', commit).splitlines()
        for root in PYTHON_PACKAGES.get(repository, []):
            package_parent = root.rsplit('/', 1)[0]
            for path in files:
                if path.startswith(root + '/') and path.endswith('.py'):
                    dotted = path[len(package_parent) + 1:-3].replace('/', '.').removesuffix('.__init__')
                    snapshot['modules'][dotted] = module_api(git(repo, 'show', f'{commit}:{path}'))
        for package in INTERFACE_PACKAGES.get(repository, []):
            for path in files:
                parts = path.split('/')
                if len(parts) >= 3 and parts[-3] == package and parts[-2] in ('msg', 'srv', 'action'):
                    name, kind = parts[-1].rsplit('.', 1)
                    if kind != parts[-2]:
                        continue
                    text = git(repo, 'show', f'{commit}:{path}')
                    sections = [interface_fields(s) for s in text.split('\n---')]
                    snapshot['interfaces'][f'{package}/{kind}/{name}'] = sections
    OUTPUT.write_text(json.dumps(snapshot, indent=1, sort_keys=True) + '\n')
    print(f'{OUTPUT}: {len(snapshot["modules"])} modules, {len(snapshot["interfaces"])} interfaces')
    return 0


if __name__ == '__main__':
    if len(sys.argv) != 2:
        print(__doc__, file=sys.stderr)
        sys.exit(2)
    sys.exit(main(Path(sys.argv[1])))
