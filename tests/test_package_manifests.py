"""Every package.xml declares what its package's code imports, so rosdep and colcon on a full ROS
install resolve and order the workspace (on the bare machine requirements/ installs everything).

Python libraries with a rosdep key are declared under that key; those without one (pip-only: MuJoCo,
ruckig, JAX, ...) are pinned in requirements/ instead, which the test checks too."""

from __future__ import annotations

import re
import sys
import xml.etree.ElementTree as ET

from test_layering import PACKAGES, WORKSPACE, imports, python_modules

ROSDEP_KEYS = {
    'numpy': 'python3-numpy', 'yaml': 'python3-yaml', 'transforms3d': 'python3-transforms3d',
    'matplotlib': 'python3-matplotlib', 'PIL': 'python3-pil', 'OpenGL': 'python3-opengl', 'cv2': 'python3-opencv',
    'tqdm': 'python3-tqdm', 'websockets': 'python3-websockets', 'trimesh': 'python3-trimesh',
    'scipy': 'python3-scipy',
}
"""Import name -> rosdep key of libraries rosdep resolves to a system package."""
PIP_ONLY = {
    'mujoco': 'mujoco', 'ruckig': 'ruckig', 'rosbags': 'rosbags', 'jax': 'jax', 'optax': 'optax', 'onnx': 'onnx',
    'onnxruntime': 'onnxruntime', 'ray': 'ray', 'pyarrow': 'pyarrow', 'foxglove': 'foxglove-sdk', 'mcap': 'mcap',
    'pxr': 'usd-core', 'coacd': 'coacd',
}
"""Import name -> PyPI distribution of libraries without a rosdep key: pinned in requirements/ (bare.txt; train.txt
for training and inference; test.txt for Ray, an optional engine its users already have)."""
RENDER_ONLY = {'bpy': 'bpy', 'bmesh': 'bpy', 'mathutils': 'bpy', 'OpenImageIO': 'bpy'}
"""Blender's modules: its own environment (requirements/render.txt), run as a subprocess."""
LEROBOT_ONLY = {'lerobot': 'lerobot', 'torch': 'torch'}
"""The LeRobot reader's modules: its own environment (requirements/lerobot.txt), run as a subprocess."""


def declared(package: str) -> set[str]:
    root = ET.parse(WORKSPACE / 'src' / package / 'package.xml').getroot()
    return {element.text.strip() for tag in ('depend', 'exec_depend', 'build_export_depend')
            for element in root.iter(tag)}


def pinned(requirements: str) -> set[str]:
    names = set()
    for line in (WORKSPACE / 'requirements' / requirements).read_text().splitlines():
        match = re.match(r'([A-Za-z0-9_.\-]+)==', line.strip())
        if match:
            names.add(match.group(1).lower().replace('_', '-'))
    return names


def imported_roots(package: str) -> set[str]:
    own = {name: path for name, path in python_modules() if name.split('.')[0] == package}
    roots = set()
    for name, path in own.items():
        for target, _ in imports(path, name):
            root = target.split('.')[0]
            if root and root != package and root not in sys.stdlib_module_names:
                roots.add(root)
    return roots


def test_every_import_is_declared():
    pip = pinned('bare.txt') | pinned('train.txt') | pinned('test.txt')
    render = pinned('render.txt')
    lerobot = pinned('lerobot.txt')
    problems = []
    for package in PACKAGES:
        have = declared(package)
        for root in sorted(imported_roots(package)):
            if root in RENDER_ONLY:
                if RENDER_ONLY[root] not in render:
                    problems.append(f'{package}: imports {root}; expected {RENDER_ONLY[root]} pinned in requirements/render.txt')
            elif root in LEROBOT_ONLY:
                if LEROBOT_ONLY[root] not in lerobot:
                    problems.append(f'{package}: imports {root}; expected {LEROBOT_ONLY[root]} pinned in '
                                    'requirements/lerobot.txt')
            elif root in PIP_ONLY:
                if PIP_ONLY[root] not in pip:
                    problems.append(f'{package}: imports {root}; expected {PIP_ONLY[root]} pinned in requirements/')
            else:
                key = ROSDEP_KEYS.get(root, root)
                if key not in have:
                    problems.append(f'{package}/package.xml: its code imports {root}; expected <exec_depend>{key}'
                                    f'</exec_depend>')
    assert not problems, '\n'.join(problems)


def test_the_check_sees_imports():
    """Guards the test above: known imports are found where they are."""
    assert {'mujoco', 'numpy', 'robotsim_core'} <= imported_roots('robotsim_sim')
    assert 'rclpy' in imported_roots('robotsim_firmware')


def test_each_packages_tests_are_what_colcon_test_runs_with_pytest():
    """A package with a test/ folder asks for pytest (``extras_require['test']``, which colcon's Python
    test step looks for; without it colcon runs unittest and finds nothing) and declares
    python3-pytest as a test dependency; its conftest loads the workspace's shared test environment;
    the README's test command collects it."""
    runner = (WORKSPACE / 'scripts' / 'run-tests.sh').read_text()
    assert 'set -- tests src/*/test' in runner
    folders = sorted(path for path in (WORKSPACE / 'src').glob('*/test') if path.is_dir())
    assert {f.parent.name for f in folders} >= {'robotsim_core', 'robotsim_sim', 'robotsim_firmware', 'robotsim_learning'}
    for folder in folders:
        package = folder.parent
        assert list(folder.glob('test_*.py')), f'{folder}: no test module'
        assert "extras_require={'test': ['pytest']}" in (package / 'setup.py').read_text(), f'{package}/setup.py'
        manifest = ET.parse(package / 'package.xml').getroot()
        assert 'python3-pytest' in [e.text for e in manifest.findall('test_depend')], f'{package}/package.xml'
        assert 'from workspace_setup import *' in (folder / 'conftest.py').read_text(), f'{folder}/conftest.py'
        names = {path.name for path in folder.glob('test_*.py')}
        clashes = names & {path.name for path in (WORKSPACE / 'tests').glob('test_*.py')}
        assert not clashes, f'{folder}: test modules named like ones in tests/ (pytest imports them by name): {clashes}'
