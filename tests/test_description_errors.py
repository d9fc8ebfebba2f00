"""Bad robot descriptions: the CLI prints one line naming the file, the key path and what was
expected, and exits with status 2 without a traceback."""

import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

CONFIG = Path(__file__).resolve().parents[1] / 'config' / 'robots'
EXTERNAL = Path(__file__).parent / 'data' / 'external_robot'


def rover():
    return yaml.safe_load((CONFIG / 'rover.yaml').read_text())


def racer():
    return yaml.safe_load((CONFIG / 'racer.yaml').read_text())


def describe(path: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, '-m', 'robotsim_core.cli', 'describe', str(path)],
                          capture_output=True, text=True, timeout=60)


def assert_clean_error(completed, path: Path, key_path: str, expected: str):
    assert completed.returncode == 2, completed
    assert 'Traceback' not in completed.stderr
    lines = completed.stderr.strip().splitlines()
    assert len(lines) == 1, completed.stderr
    assert str(path) in lines[0]
    assert f': {key_path}: ' in lines[0], lines[0]
    assert expected in lines[0], lines[0]


def mutate(robot_factory, change):
    data = robot_factory()
    change(data)
    return data


YAML_CASES = {
    'unknown top-level key': (rover, lambda d: d.update(colour='red'), 'colour', 'unknown key; expected one of'),
    'unknown nested key': (rover, lambda d: d['base'].update(colour='red'), 'base.colour', 'unknown key'),
    'wrong type': (rover, lambda d: d['base'].update(mass='heavy'), 'base.mass', "expected a number, got 'heavy'"),
    'negative size': (rover, lambda d: d['base'].update(size=[0.3, -0.2, 0.08]), 'base.size[1]',
                      'expected a number > 0, got -0.2'),
    'zero wheel radius': (rover, lambda d: d['wheels'].update(radius=0), 'wheels.radius', 'expected a number > 0, got 0'),
    'joint limits reversed': (rover, lambda d: d['arms'][0]['joints'][1].update(lower=1.0, upper=-1.0),
                              'arms[0].joints[1].lower', 'expected lower <= upper'),
    'ackermann without steerable axle': (racer, lambda d: d['wheels'].update(steered='none'), 'wheels.steered',
                                         'an Ackermann drive needs a steerable axle'),
    'sensor on missing link': (rover, lambda d: d['sensors'][0].update(parent='mast_link'), 'sensors[0].parent',
                               "expected an existing link (one of base_footprint, base_link"),
    'missing required key': (rover, lambda d: d['base'].pop('mass'), 'base.mass', 'missing required key'),
    'wrong sensor type': (rover, lambda d: d['sensors'][0].update(type='sonar'), 'sensors[0].type',
                          "expected one of 'lidar', 'camera', 'imu'"),
    'too few wheels': (rover, lambda d: d['wheels'].update(count=2), 'wheels.count', 'expected an integer >= 3, got 2'),
    'wheels wrong shape': (rover, lambda d: d.update(wheels=4), 'wheels', 'expected a mapping or a list'),
}


@pytest.mark.parametrize('case', sorted(YAML_CASES))
def test_bad_robot_yaml(case, tmp_path):
    factory, change, key_path, expected = YAML_CASES[case]
    path = tmp_path / 'robot.yaml'
    path.write_text(yaml.safe_dump(mutate(factory, change)))
    assert_clean_error(describe(path), path, key_path, expected)


def test_malformed_yaml(tmp_path):
    path = tmp_path / 'robot.yaml'
    path.write_text('name: rover\nbase: {size: [0.3, 0.2\n')
    completed = describe(path)
    assert completed.returncode == 2 and 'Traceback' not in completed.stderr
    assert str(path) in completed.stderr and 'expected valid YAML' in completed.stderr


def test_missing_file(tmp_path):
    path = tmp_path / 'nope.yaml'
    completed = describe(path)
    assert completed.returncode == 2 and 'Traceback' not in completed.stderr
    assert f'{path}: file not found' in completed.stderr


def copy_external(tmp_path: Path) -> Path:
    target = tmp_path / 'external_robot'
    shutil.copytree(EXTERNAL, target)
    return target


LOOPS = {
    # A second parent for arm_3 closes a loop mast -> arm_1 -> arm_2 -> arm_3 <- mast.
    'second parent': ('<parent link="mast"/><child link="arm_3"/>', 'joint[extra_joint]',
                      "link 'arm_3' already has parent joint 'arm_3_joint': a robot must be a tree"),
    # base_link gets a parent too: no root remains.
    'no root': ('<parent link="arm_3"/><child link="base_link"/>', 'links',
                'expected exactly one root link, found 0 (a link closes a kinematic loop)'),
}


@pytest.mark.parametrize('case', sorted(LOOPS))
def test_urdf_with_kinematic_loop(tmp_path, case):
    ends, key_path, expected = LOOPS[case]
    robot = copy_external(tmp_path)
    urdf = robot / 'urdf' / 'trike.urdf'
    urdf.write_text(urdf.read_text().replace('</robot>', f'''
  <joint name="extra_joint" type="fixed">{ends}</joint>
</robot>'''))
    assert_clean_error(describe(robot / 'trike_overlay.yaml'), urdf, key_path, expected)


def test_urdf_with_missing_mesh(tmp_path):
    robot = copy_external(tmp_path)
    (robot / 'meshes' / 'mast.stl').unlink()
    assert_clean_error(describe(robot / 'trike_overlay.yaml'), robot / 'urdf' / 'trike.urdf',
                       'link[mast].visual[0].mesh.filename', "mesh file not found: '../meshes/mast.stl'")


def test_overlay_names_missing_wheel_joint(tmp_path):
    robot = copy_external(tmp_path)
    overlay = robot / 'trike_overlay.yaml'
    overlay.write_text(overlay.read_text().replace('wheel_r_joint', 'wheel_rr_joint'))
    assert_clean_error(describe(overlay), overlay, 'wheels[1].joint',
                       "expected a continuous or revolute joint of the URDF, got 'wheel_rr_joint'")
