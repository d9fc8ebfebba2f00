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
    return subprocess.run([sys.executable, '-m', 'robotsim.cli', 'describe', str(path)],
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
                      'expected a number >= 0.001, got -0.2'),
    'zero wheel radius': (rover, lambda d: d['wheels'].update(radius=0), 'wheels.radius', 'expected a number >= 0.001, got 0'),
    'joint limits reversed': (rover, lambda d: d['arms'][0]['joints'][1].update(lower=1.0, upper=-1.0),
                              'arms[0].joints[1].lower', 'expected lower <= upper'),
    'ackermann without steerable axle': (racer, lambda d: d['wheels'].update(steered='none'), 'wheels.steered',
                                         'an Ackermann drive needs a steerable axle'),
    'sensor on missing link': (rover, lambda d: d['sensors'][0].update(parent='mast_link'), 'sensors[0].parent',
                               "expected an existing link (one of base_footprint, base_link"),
    'missing required key': (rover, lambda d: d['base'].pop('mass'), 'base.mass', 'missing required key'),
    'wrong sensor type': (rover, lambda d: d['sensors'][0].update(type='sonar'), 'sensors[0].type',
                          "expected one of 'camera', 'contact', 'force_torque', 'imu', 'lidar', 'navsat', 'range'"),
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


URDF_NUMBERS = {
    'nan mass': ('<mass value="4.0"/>', '<mass value="nan"/>', 'link[base_link].inertial.mass',
                 "expected finite numbers, got 'nan'"),
    'negative mass': ('<mass value="4.0"/>', '<mass value="-2"/>', 'link[base_link].inertial.mass',
                      'expected a mass from 0 to 100000 kg, got -2'),
    'mass of a ship': ('<mass value="4.0"/>', '<mass value="1e30"/>', 'link[base_link].inertial.mass',
                       'expected a mass from 0 to 100000 kg, got 1e+30'),
    'inertia of a planet': ('ixx="0.02"', 'ixx="1e30"', 'link[base_link].inertial.inertia.ixx',
                            "expected a value within +-100000 kg m^2, got '1e30'"),
    'nan inertia': ('ixx="0.02"', 'ixx="nan"', 'link[base_link].inertial.inertia.ixx',
                    "expected finite numbers, got 'nan'"),
    'origin a kilometre away': ('<origin xyz="-0.1 0.22 0.0"/>', '<origin xyz="-0.1 2200 0.0"/>',
                                'joint[wheel_l_joint].origin.xyz', "expected offsets within +-1000 m, got '-0.1 2200 0.0'"),
    'nan axis': ('<axis xyz="0 0.6 0.8"/>', '<axis xyz="0 nan 0.8"/>', 'joint[arm_1_joint].axis.xyz',
                 "expected finite numbers, got '0 nan 0.8'"),
    'zero axis': ('<axis xyz="0 0.6 0.8"/>', '<axis xyz="0 0 0"/>', 'joint[arm_1_joint].axis.xyz',
                  'expected a direction (a non-zero vector), got (0.0, 0.0, 0.0)'),
    'nan limit': ('lower="-1.5" upper="1.5" effort="5"', 'lower="nan" upper="1.5" effort="5"',
                  'joint[arm_1_joint].limit.lower', "expected finite numbers, got 'nan'"),
    'negative effort': ('lower="-1.5" upper="1.5" effort="5"', 'lower="-1.5" upper="1.5" effort="-5"',
                        'joint[arm_1_joint].limit.effort', 'expected a value >= 0, got -5'),
    'flat box': ('<box size="0.5 0.4 0.1"/>', '<box size="0.5 0 0.1"/>', 'link[base_link].collision[0].box.size',
                 "expected sizes > 0 and <= 1000 m, got '0.5 0 0.1'"),
    'inf origin': ('<origin xyz="0.01 0 0.02" rpy="0.1 0 0.2"/>', '<origin xyz="0.01 inf 0.02" rpy="0.1 0 0.2"/>',
                   'link[base_link].inertial.origin.xyz', "expected finite numbers, got '0.01 inf 0.02'"),
    'huge mesh scale': ('scale="0.5 0.4 0.1"', 'scale="1e12 0.4 0.1"', 'link[base_link].visual[0].mesh.scale',
                        "expected factors of magnitude 1e-06 to 1000, got '1e12 0.4 0.1'"),
}


@pytest.mark.parametrize('case', sorted(URDF_NUMBERS))
def test_urdf_numbers_that_are_no_measure_are_refused_naming_link_and_attribute(tmp_path, case):
    original, replacement, key_path, expected = URDF_NUMBERS[case]
    robot = copy_external(tmp_path)
    urdf = robot / 'urdf' / 'trike.urdf'
    text = urdf.read_text()
    assert original in text
    urdf.write_text(text.replace(original, replacement, 1))
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


# ----------------------------------------------------------------------------- files that are not YAML
def assert_clean_file_error(completed, path: Path, expected: str):
    """A refusal about the file as a whole: ``<file>: <what>`` (or ``<file>: <where>: <what>``)."""
    assert completed.returncode == 2, completed
    assert 'Traceback' not in completed.stderr
    lines = completed.stderr.strip().splitlines()
    assert len(lines) == 1, completed.stderr
    assert lines[0].startswith(f'robotsim: error: {path}: '), lines[0]
    assert expected in lines[0], lines[0]


def test_robot_argument_is_a_directory(tmp_path):
    assert_clean_file_error(describe(tmp_path), tmp_path, 'expected a YAML file, got a directory')


@pytest.mark.parametrize('content, expected', [
    (b'\x7fELF\x02\x01\x01\x00' + bytes(range(128, 256)), 'byte 8: expected UTF-8 YAML text, got binary data'),
    (b'name: rover\x00\x01\x02', 'byte 11: expected YAML text, found a control character or binary data'),
], ids=['not utf-8', 'control characters'])
def test_robot_argument_is_a_binary_file(tmp_path, content, expected):
    path = tmp_path / 'robot.yaml'
    path.write_bytes(content)
    assert_clean_file_error(describe(path), path, expected)


def test_duplicate_yaml_key_names_the_key_and_both_lines(tmp_path):
    path = tmp_path / 'robot.yaml'
    text = (CONFIG / 'rover.yaml').read_text()
    path.write_text(text.replace('  mass: 2.5\n', '  mass: 2.5\n  mass: 25\n', 1))
    line = text.splitlines().index('  mass: 2.5') + 1
    assert_clean_error(describe(path), path, 'base.mass', f"key 'mass' is given twice (lines {line} and {line + 1})")


def test_numbers_are_read_as_a_user_means_them(tmp_path):
    from robotsim_core.config_schema import load_yaml
    path = tmp_path / 'numbers.yaml'
    path.write_text('a: 1.0e9\nb: 1e9\nc: 1E-3\nd: .5\ne: +3\nf: 010\ng: -2.5e+2\nh: 1_000\ni: 0x1f\nj: .inf\n'
                    'k: 1:20\nl: "1e9"\nm: 1e\n')
    assert load_yaml(str(path)) == {'a': 1e9, 'b': 1e9, 'c': 1e-3, 'd': 0.5, 'e': 3, 'f': 10, 'g': -250.0, 'h': 1000,
                                    'i': 31, 'j': float('inf'), 'k': '1:20', 'l': '1e9', 'm': '1e'}
    # Through a whole robot: exponents everywhere, a count written as a float, and the result
    # equals the shipped rover.
    text = (CONFIG / 'rover.yaml').read_text()
    for plain, written in (('mass: 2.5', 'mass: 25e-1'), ('radius: 0.045', 'radius: 4.5E-2'), ('count: 4', 'count: 4.0'),
                           ('rate: 100', 'rate: 1e2'), ('max_yaw_rate: 2.5', 'max_yaw_rate: +2.5')):
        assert plain in text
        text = text.replace(plain, written, 1)
    robot = tmp_path / 'rover.yaml'
    robot.write_text(text)
    mine, shipped = describe(robot), describe(CONFIG / 'rover.yaml')
    assert mine.returncode == 0, mine.stderr
    assert mine.stdout.splitlines()[1:] == shipped.stdout.splitlines()[1:]


# ----------------------------------------------------------------------------- bounds of a robot
BOUND_CASES = {
    'camera of 100000 x 100000': (lambda d: d['sensors'][1].update(width=100000, height=100000), 'sensors[1].width',
                                  'expected an integer <= 4096, got 100000'),
    'lidar samples 1e8': (lambda d: d['sensors'][0].update(samples=1e8), 'sensors[0].samples',
                          'expected an integer from 1 to 8192, got 100000000'),
    'lidar rays per scan': (lambda d: d['sensors'][0].update(samples=8192, channels=64, vertical_fov=0.5),
                            'sensors[0].samples', 'expected samples x channels <= 262144 rays per scan'),
    'imu rate 1e9': (lambda d: d['sensors'][2].update(rate=1e9), 'sensors[2].rate',
                     'expected a number from 0.1 to 1000, got 1000000000.0'),
    'mass 1e308': (lambda d: d['base'].update(mass=1e308), 'base.mass', 'expected a number from 0.001 to 10000'),
    'mass of a huge integer': (lambda d: d['base'].update(mass=2**64), 'base.mass',
                               'expected a number from 0.001 to 10000, got 18446744073709551616'),
    'colour above 1': (lambda d: d['base'].update(color=[0.5, 1.5, 0.5, 1]), 'base.color[1]',
                       'expected a number <= 1, got 1.5'),
    'tiny wheel': (lambda d: d['wheels'].update(radius=1e-300), 'wheels.radius', 'expected a number >= 0.001'),
    'sensor name that is no ROS name': (lambda d: d['sensors'][0].update(name='front laser'), 'sensors[0].name',
                                        'expected a name of letters, digits and _ starting with a letter'),
    'sensor type that is a mapping': (lambda d: d['sensors'][0].update(type={}), 'sensors[0].type',
                                      "expected one of 'camera', 'contact', 'force_torque', 'imu', 'lidar', 'navsat', 'range'"),
}


@pytest.mark.parametrize('case', sorted(BOUND_CASES))
def test_robot_values_out_of_bounds(case, tmp_path):
    change, key_path, expected = BOUND_CASES[case]
    path = tmp_path / 'robot.yaml'
    path.write_text(yaml.safe_dump(mutate(rover, change)))
    assert_clean_error(describe(path), path, key_path, expected)


# ----------------------------------------------------------------------------- the simulator's start-up
def start_simulator(*parameters: str) -> subprocess.CompletedProcess:
    """The simulator node as `ros2 run` starts it, headless; it must refuse before running."""
    from rostest_helpers import executable
    arguments = [executable('robotsim_sim', 'sim_node'), '--ros-args', '-p', 'cameras:=false', '-p', 'duration:=0.1']
    for parameter in parameters:
        arguments += ['-p', parameter]
    return subprocess.run(arguments, capture_output=True, text=True, timeout=120)


def assert_simulator_refuses(completed, path, key_path: str, expected: str):
    assert completed.returncode == 2, completed
    assert 'Traceback' not in completed.stderr + completed.stdout
    lines = completed.stderr.strip().splitlines()
    assert len(lines) == 1, completed.stderr
    assert lines[0].startswith(f'robotsim_sim: error: {path}: {key_path}: '), lines[0]
    assert expected in lines[0], lines[0]


def room():
    return yaml.safe_load((CONFIG.parent / 'worlds' / 'room.yaml').read_text())


WORLD_CASES = {
    'duplicate entity names': (lambda d: d['cylinders'][0].update(name='crate'), 'cylinders[0].name',
                               "expected a unique entity name, 'crate' is also boxes[0].name"),
    'box named floor': (lambda d: d['boxes'][0].update(name='floor'), 'boxes[0].name',
                        "expected a name other than 'floor' (reserved"),
    'box named world': (lambda d: d['boxes'][1].update(name='world'), 'boxes[1].name',
                        "expected a name other than 'world' (reserved"),
    'box named like a robot link': (lambda d: d['boxes'][3].update(name='base_link'), 'boxes[3].name',
                                    "expected a name other than 'base_link', which names robot rover"),
    'zero light direction': (lambda d: d['light'].update(direction=[0, 0, 0]), 'light.direction',
                             'expected a non-zero direction vector'),
    'timestep 1e-12': (lambda d: d.update(timestep=1e-12), 'timestep', 'expected a number >= 0.0001, got 1e-12'),
    'negative floor size': (lambda d: d['floor'].update(size=[-12, 12]), 'floor.size[0]', 'expected a number >= 0.001'),
    'zero-length wall': (lambda d: d['walls'][1].update(end=[3.0, -2.5]), 'walls[1].end',
                         'expected an end at least 1 mm from start [3.0, -2.5]'),
    'rgba above 1': (lambda d: d['boxes'][0].update(rgba=[1, 0, 0, 2]), 'boxes[0].rgba[3]',
                     'expected a number <= 1, got 2'),
    'mass 1e308': (lambda d: d['boxes'][3].update(mass=1e308), 'boxes[3].mass',
                   'expected a number from 0 to 10000, got 1e+308'),
}


@pytest.mark.parametrize('case', sorted(WORLD_CASES))
def test_bad_world_is_refused_by_the_simulator(case, tmp_path):
    change, key_path, expected = WORLD_CASES[case]
    path = tmp_path / 'world.yaml'
    path.write_text(yaml.safe_dump(mutate(room, change)))
    assert_simulator_refuses(start_simulator(f'world:={path}'), path, key_path, expected)


@pytest.mark.parametrize('content, expected', [
    ('<mujoco><worldbody><geom type="blob" size="1"/></worldbody></mujoco>',
     "expected an MJCF file MuJoCo compiles, {include}: XML Error: invalid keyword: 'blob' Element 'geom', line 1"),
    ('<mujoco><worldbody>', 'expected an MJCF (XML) file, {include} is not XML'),
    ('<robot name="r"/>', 'expected an MJCF file with a <mujoco> root, {include} has <robot>'),
    ('<mujoco><worldbody><geom name="floor" type="sphere" size="0.1"/></worldbody></mujoco>',
     "expected a world and robots ({robot}) that MuJoCo compiles together: XML Error: Error: repeated name 'floor'"),
], ids=['invalid keyword', 'not xml', 'not mjcf', 'name clash'])
def test_invalid_mjcf_include(tmp_path, content, expected):
    include = tmp_path / 'extra.xml'
    include.write_text(content)
    world = tmp_path / 'world.yaml'
    world.write_text(yaml.safe_dump(mutate(room, lambda d: d.update(include='extra.xml'))))
    expected = expected.format(include=include, robot=CONFIG / 'rover.yaml')
    completed = start_simulator(f'world:={world}', f'robot:={CONFIG / "rover.yaml"}')
    assert_simulator_refuses(completed, world, 'include', expected)


def test_sensor_faster_than_the_physics(tmp_path):
    robot = tmp_path / 'robot.yaml'
    robot.write_text(yaml.safe_dump(mutate(rover, lambda d: d['sensors'][2].update(rate=1000))))
    assert describe(robot).returncode == 0  # the robot alone is fine; with the room's 2 ms step it is not
    assert_simulator_refuses(start_simulator(f'robot:={robot}'), robot, 'sensors[2].rate',
                             'expected at most 500 Hz, the physics rate of world room (timestep 0.002 s)')


def test_six_wheel_differential_robot_with_firmware(tmp_path):
    robot = tmp_path / 'six.yaml'
    robot.write_text(yaml.safe_dump(mutate(rover, lambda d: d['wheels'].update(count=6))))
    assert describe(robot).returncode == 0
    assert_simulator_refuses(start_simulator(f'robot:={robot}', 'firmware:=true'), robot, 'wheels',
                             'firmware in the loop drives at most 4 wheels (one per motor channel of the MCU); '
                             'rover has 6 driven wheels (run it with firmware:=false)')
    # Without the firmware the same robot runs, and firmware:=auto (the default) chooses that.
    completed = start_simulator(f'robot:={robot}', 'firmware:=false')
    assert completed.returncode == 0, completed.stderr
    from robotsim.bringup import graph_for
    auto = graph_for('sim', {'robot': str(robot)})
    assert auto[0].parameters['firmware'] is False and not any(n.executable == 'motor_bridge' for n in auto)
    assert graph_for('sim', {})[0].parameters['firmware'] is True  # the 4-wheel rover: firmware in the loop


# ----------------------------------------------------------------------------- launch values and parameters
LAUNCH_CASES = {
    'seed beyond int64': ('seed:=18446744073709551615', 'seed',
                          'expected an integer from 0 to 9223372036854775807 (2^63-1), got 18446744073709551615'),
    'negative seed': ('seed:=-1', 'seed', 'expected an integer from 0 to 9223372036854775807'),
    'real time factor 1e-300': ('real_time_factor:=1e-300', 'real_time_factor',
                                'expected 0 (as fast as possible) or a number >= 0.001, got 1e-300'),
    'negative real time factor': ('real_time_factor:=-1', 'real_time_factor', 'expected a finite number >= 0'),
    'NaN real time factor': ('real_time_factor:=nan', 'real_time_factor', 'expected a finite number >= 0, got nan'),
    'infinite real time factor': ('real_time_factor:=inf', 'real_time_factor', 'expected a finite number >= 0'),
    'negative duration': ('duration:=-5', 'duration', 'expected a finite number >= 0, got -5.0'),
    'NaN duration': ('duration:=nan', 'duration', 'expected a finite number >= 0, got nan'),
}


@pytest.mark.parametrize('case', sorted(LAUNCH_CASES))
def test_bad_launch_value(case):
    argument, key, expected = LAUNCH_CASES[case]
    completed = subprocess.run([sys.executable, '-m', 'robotsim.cli', 'launch', 'sim', argument],
                               capture_output=True, text=True, timeout=60)
    assert completed.returncode == 2, completed
    assert 'Traceback' not in completed.stderr and 'started' not in completed.stdout + completed.stderr
    lines = completed.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f'robotsim: error: command line: {key}: {expected}'), lines


PARAMETER_CASES = {
    'seed beyond int64': ('seed:=18446744073709551615', "parameter 'seed': expected an integer from 0 to "
                                                        '9223372036854775807 (2^63-1), got 1.8446744073709552e+19'),
    'real time factor 1e-300': ('real_time_factor:=1e-300', "parameter 'real_time_factor': expected 0 "
                                                            '(as fast as possible) or a number >= 0.001, got 1e-300'),
    'duration NaN': ('duration:=nan', "parameter 'duration': expected a finite number >= 0, got nan"),
    'robot given as a number': ('robot:=5', "parameter 'robot': expected a string, got 5"),
    'cameras given as a number': ('cameras:=5', "parameter 'cameras': expected true or false, got 5"),
    'log period beyond a timer': ('log_period:=1e300', "parameter 'log_period': expected a finite number from 0.1 "
                                                       'to 3600, got 1e+300'),
}


@pytest.mark.parametrize('case', sorted(PARAMETER_CASES))
def test_bad_simulator_parameter(case):
    parameter, expected = PARAMETER_CASES[case]
    from rostest_helpers import executable
    completed = subprocess.run([executable('robotsim_sim', 'sim_node'), '--ros-args', '-p', parameter],
                               capture_output=True, text=True, timeout=120)
    assert completed.returncode == 2, completed
    assert 'Traceback' not in completed.stderr
    assert completed.stderr.strip().splitlines() == [f'robotsim_sim: error: {expected}']


CLI_ARGUMENT_CASES = {
    'describe --urdf into a folder': (['describe', 'rover', '--urdf', '{tmp}'], '--urdf',
                                      'expected a file to write, got the folder {tmp}'),
    'describe --urdf under a folder that cannot be made': (['describe', 'rover', '--urdf', '/proc/robotsim/r.urdf'],
                                                           '--urdf', 'cannot create the folder /proc/robotsim'),
    'describe --gltf under a folder that cannot be made': (['describe', 'rover', '--mjcf', '{tmp}/ok.xml', '--gltf',
                                                            '/proc/robotsim/r.glb'], '--gltf',
                                                           'cannot create the folder /proc/robotsim'),
    'contract check for no time': (['contract', 'check', '--duration', '-1'], '--duration',
                                   'expected seconds to watch the graph, more than 0 and at most 3600, got -1'),
    'contract check for NaN seconds': (['contract', 'check', '--duration', 'nan'], '--duration',
                                       'expected seconds to watch the graph, more than 0 and at most 3600, got nan'),
    'contract check in a namespace with a space': (['contract', 'check', '--namespace', 'bad ns'], '--namespace',
                                                   "expected a ROS name (parts [A-Za-z][A-Za-z0-9_]* separated by /), "
                                                   "got 'bad ns'"),
}


@pytest.mark.parametrize('case', sorted(CLI_ARGUMENT_CASES))
def test_bad_cli_argument(case, tmp_path):
    """Output paths are checked before anything is written; a contract check refuses what it cannot watch."""
    arguments, option, expected = CLI_ARGUMENT_CASES[case]
    arguments = [a.replace('{tmp}', str(tmp_path)) for a in arguments]
    completed = subprocess.run([sys.executable, '-m', 'robotsim.cli', *arguments],
                               capture_output=True, text=True, timeout=60)
    assert completed.returncode == 2, completed
    lines = completed.stderr.strip().splitlines()
    assert lines == [f'robotsim: error: command line: {option}: {expected.replace("{tmp}", str(tmp_path))}'] or (
        len(lines) == 1 and lines[0].startswith(f'robotsim: error: command line: {option}: {expected}')), lines
    assert not (tmp_path / 'ok.xml').exists(), 'nothing is written when one output cannot be'


LAUNCH_COMBINATION_CASES = {
    'fleet and namespace': (['fleet:=two_rovers', 'namespace:=r1'], 'namespace',
                            'a fleet gives each of its robots its namespace: expected fleet:= or namespace:=, not both'),
    'bag without recording': (['bag:={tmp}/bag'], 'bag', "expected record:=true with it (bag:= names the recording's folder)"),
    'bag that exists': (['record:=true', 'bag:={tmp}'], 'bag', 'expected a folder that does not exist yet, {tmp} exists'),
    'bag under a file': (['record:=true', 'bag:={tmp}/file.txt/bag'], 'bag', 'cannot create {tmp}/file.txt/bag: '
                                                                            '{tmp}/file.txt is a file, not a folder'),
    'report that is no PNG': (['report:={tmp}/report.txt'], 'report', 'expected the path of a PNG file to write'),
    'report into a folder': (['report:={tmp}'], 'report', 'expected the path of a PNG file to write'),
    'report under a file': (['report:={tmp}/file.txt/r.png'], 'report', 'cannot write {tmp}/file.txt/r.png: '),
    'policy without its driver': (['policy:={tmp}/file.txt', 'driver:=wander'], 'policy',
                                  'expected driver:=policy with it (driver is wander: the policy would not run)'),
    'shield without the policy': (['shield:=false', 'driver:=expert'], 'shield',
                                  'expected driver:=policy with it (driver is expert: only the policy is shielded)'),
    'goal without a driver': (['goal:=1,2'], 'goal', 'expected driver:= one of expert, policy, straight with it '
                                                     '(driver is none: nobody would drive to it)'),
    'lockstep without a driver': (['lockstep:=true'], 'lockstep', 'expected driver:= one of wander, expert, policy, '
                                                                  'straight with it (driver is none: nobody would answer '
                                                                  'the simulator)'),
    'lockstep with the firmware': (['lockstep:=true', 'driver:=wander', 'firmware:=true'], 'lockstep',
                                   'expected firmware:=false or auto with it (firmware is true: the firmware is in '
                                   'lockstep with its motor bridge, not with the driver)'),
    'an argument twice': (['duration:=1', 'duration:=2'], 'duration', 'given twice (duration:=1 and duration:=2)'),
    'a world for the real robot': (['world:=pick'], 'world', 'sim only', 'real'),
    'a world that does not exist': (['world:={tmp}/nope.yaml'], 'world', '{tmp}/nope.yaml: file not found'),
    'a policy that is no ONNX model': (['driver:=policy', 'policy:={tmp}/file.txt'], 'policy',
                                       '{tmp}/file.txt: not a readable ONNX model'),
    'a policy for another robot': (['driver:=policy', f'policy:={CONFIG.parent / "policies" / "rover_goal_reaching.onnx"}',
                                    'robot:=racer'], 'policy',
                                   f'{CONFIG.parent / "policies" / "rover_goal_reaching.onnx"}: robot racer has no 1-channel '
                                   'lidar'),
    'a world that is a text file': (['world:={tmp}/file.txt'], 'world', '{tmp}/file.txt: (top level): expected a mapping'),
    'a world with a bad key': (['world:={tmp}/bad_world.yaml'], 'world', '{tmp}/bad_world.yaml: timestep: expected a '
                                                                        'number >= 0.0001'),
    'a viewer port without the viewer': (['view_port:=9000'], 'view_port', 'expected view:=true with it'),
    'a Foxglove port without the viewer': (['foxglove_port:=9001'], 'foxglove_port', 'expected view:=true with it'),
    'a viewer port out of range': (['view:=true', 'view_port:=70000'], 'view_port',
                                   'expected a TCP port from 1 to 65535, got 70000'),
    'a viewer port of 0': (['view:=true', 'view_port:=0'], 'view_port', 'expected a TCP port from 1 to 65535, got 0'),
}


@pytest.mark.parametrize('case', sorted(LAUNCH_COMBINATION_CASES))
def test_launch_arguments_that_would_be_ignored_or_fail_late(case, tmp_path):
    """Refused before any node starts, in one line, instead of ignored or failing at the end of the run."""
    arguments, key, expected, *mode = LAUNCH_COMBINATION_CASES[case]
    (tmp_path / 'file.txt').write_text('not a folder')
    (tmp_path / 'bad_world.yaml').write_text('name: bad\ntimestep: 1.0e-9\n')
    arguments = [a.replace('{tmp}', str(tmp_path)) for a in arguments]
    completed = subprocess.run([sys.executable, '-m', 'robotsim.cli', 'launch', *(mode or ['sim']), *arguments],
                               capture_output=True, text=True, timeout=60)
    assert completed.returncode == 2, completed
    assert 'started' not in completed.stdout + completed.stderr
    lines = completed.stderr.strip().splitlines()
    prefix = f'robotsim: error: command line: {key}: {expected.replace("{tmp}", str(tmp_path))}'
    assert len(lines) == 1 and lines[0].startswith(prefix), lines


def test_a_huge_config_file_is_refused_by_its_size_before_it_is_parsed(tmp_path):
    """A 10 MB robot or world YAML holding one long list used to take minutes and GBs to be refused: the size
    bound refuses it before any parsing, in one line (asserted on the message and the peak memory, not on time)."""
    huge = 'walls: [' + ', '.join(['1.5'] * 2_000_000) + ']\n'
    for name, arguments in (('robot.yaml', lambda path: ['describe', path, '--urdf', str(tmp_path / 'r.urdf')]),
                            ('world.yaml', lambda path: ['describe', 'rover', '--gltf', str(tmp_path / 'w.glb'),
                                                         '--world', path])):
        path = tmp_path / name
        path.write_text(huge)
        from rostest_helpers import run_measuring_peak_rss
        completed, peak_kib = run_measuring_peak_rss([sys.executable, '-m', 'robotsim.cli', *arguments(str(path))])
        assert completed.returncode == 2, completed.stderr
        lines = completed.stderr.strip().splitlines()
        assert len(lines) == 1 and f'{path}: expected a YAML config file of at most 256 KiB, got ' in lines[0], lines
        assert peak_kib < 600 * 1024, f'peak RSS {peak_kib / 1024:.0f} MiB'


def test_a_list_longer_than_its_bound_is_refused_before_its_items_are_built(tmp_path):
    world = tmp_path / 'crowded.yaml'
    world.write_text(yaml.safe_dump({'name': 'crowded', 'boxes': [
        {'name': f'box{i}', 'position': [0.01 * i, 2.0, 0.1], 'size': [0.01, 0.01, 0.01]} for i in range(300)]}))
    completed = subprocess.run([sys.executable, '-m', 'robotsim.cli', 'describe', 'rover', '--gltf',
                                str(tmp_path / 'w.glb'), '--world', str(world)], capture_output=True, text=True,
                               timeout=120)
    assert completed.returncode == 2
    assert completed.stderr.strip() == f'robotsim: error: {world}: boxes: expected at most 256 items, got 300'
    assert not (tmp_path / 'w.glb').exists()
