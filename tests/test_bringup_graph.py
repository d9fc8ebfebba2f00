"""The node graph defined once: both consumers (launch files, bare-machine launcher) start the same
nodes; the real-mode driver configuration covers the contract; the RViz file only names contract
topics and frames; bad launch arguments fail with a clear line."""

import glob
import os
import subprocess

import pytest
import yaml

from launch_standin import load_launch_file
from robotsim_core.bringup import graph_for, launch_arguments, load_real_config
from robotsim_core.contract import robot_contract
from robotsim_core.description import load_robot
from robotsim_core.launcher import command_line, params_document
from rostest_helpers import WORKSPACE

LAUNCH = WORKSPACE / 'launch'
CASES = [
    ('sim', {}),
    ('sim', {'firmware': 'false', 'demo': 'true', 'cameras': 'false'}),
    ('sim', {'fleet': 'two_rovers', 'record': 'true', 'rviz': 'true', 'report': '/tmp/report.png', 'seed': '7'}),
    ('sim', {'robot': 'racer', 'namespace': 'car1', 'world': 'room', 'duration': '3.5'}),
    ('real', {}),
    ('real', {'robot': 'racer', 'namespace': 'car1', 'record': 'true'}),
    ('robot', {'use_sim': 'false'}),
    ('robot', {'use_sim': 'true', 'demo': 'true'}),
]


def launcher_view(spec, tmp_path):
    """What `robotsim launch` runs for one node, read back from its command line and params file."""
    params_file = tmp_path / f'{spec.name}.yaml'
    params_file.write_text(yaml.safe_dump(params_document(spec)))
    argv = command_line(spec, f'/prefix/lib/{spec.package}/{spec.executable}', str(params_file))
    ros_args = argv[argv.index('--ros-args') + 1:]
    name = namespace = None
    remappings, parameters = [], {}
    for flag, value in zip(ros_args[::2], ros_args[1::2]):
        if flag == '--params-file':
            parameters = yaml.safe_load(open(value))['/**']['ros__parameters']
        elif value.startswith('__node:='):
            name = value.split(':=', 1)[1]
        elif value.startswith('__ns:='):
            namespace = value.split(':=', 1)[1].strip('/')
        else:
            remappings.append(tuple(value.split(':=', 1)))
    package, executable = argv[0].split('/')[-2:]
    return (package, executable, name, namespace or '', parameters, remappings, argv[1:argv.index('--ros-args')])


def launch_view(node):
    return (node.package, node.executable, node.name, node.namespace, node.parameters, node.remappings, node.arguments)


@pytest.mark.parametrize('mode,arguments', CASES)
def test_launch_files_and_launcher_start_the_same_nodes(mode, arguments, tmp_path):
    declared, loaded = load_launch_file(str(LAUNCH / f'{mode}.launch.py'), arguments)
    graph = graph_for(mode, arguments)
    assert sorted(declared) == sorted(n for n, _, _ in launch_arguments() if mode == 'robot' or n != 'use_sim')
    assert len(loaded) == len(graph) > 0
    for node, spec in zip(loaded, graph):
        if spec.optional and node.name == '(skipped)':
            assert 'is not installed' in node.command[0] and spec.package in node.command[0]
            continue
        assert node.shuts_down_on_exit == spec.required, spec.label
        if spec.full_install_command:  # the recorder: `ros2 bag record` on a full install
            assert node.command[:3] == ['ros2', 'bag', 'record'] and '--storage' in node.command
            assert [t for t in node.command if t.startswith('/')] == spec.parameters['topics']
            continue
        assert launch_view(node) == launcher_view(spec, tmp_path), spec.label
    if mode == 'sim' or arguments.get('use_sim') == 'true':
        assert graph[0].executable == 'sim_node' and graph[0].required
        assert all(s.parameters.get('use_sim_time') for s in graph[1:]), 'every node but the clock runs on /clock'
    else:
        assert not any(s.parameters.get('use_sim_time') for s in graph)


def test_every_launch_argument_is_described():
    for name, _, description in launch_arguments():
        assert len(description) > 10, f'launch argument {name} has no description'


def test_robot_launch_equals_sim_and_real_launch(tmp_path):
    for use_sim, mode in (('true', 'sim'), ('false', 'real')):
        _, via_robot = load_launch_file(str(LAUNCH / 'robot.launch.py'), {'use_sim': use_sim, 'record': 'true'})
        _, direct = load_launch_file(str(LAUNCH / f'{mode}.launch.py'), {'record': 'true'})
        assert via_robot == direct


def test_fleet_graph_namespaces_every_robot_node():
    graph = graph_for('sim', {'fleet': 'two_rovers', 'demo': 'true'})
    by_label = {spec.label: spec for spec in graph}
    for ns in ('robot1', 'robot2'):
        assert by_label[f'{ns}/robot_state_publisher'].parameters['frame_prefix'] == f'{ns}/'
        assert by_label[f'{ns}/motor_bridge'].parameters['device'].endswith(f'-{ns}')
        assert f'{ns}/wander' in by_label
    assert by_label['robotsim_sim'].namespace == '' and by_label['robotsim_sim'].parameters['fleet'] == 'two_rovers'


@pytest.mark.parametrize('robot_file', sorted(glob.glob(str(WORKSPACE / 'config' / 'robots' / '*.yaml'))))
def test_real_drivers_provide_every_contract_topic(robot_file):
    robot = os.path.splitext(os.path.basename(robot_file))[0]
    real_file = WORKSPACE / 'config' / 'real' / f'{robot}.yaml'
    assert real_file.is_file(), f'no real-mode driver configuration for robot {robot}'
    real = load_real_config(str(real_file))
    provided = {}
    for driver in real.drivers:
        for topic, msg_type in driver.provides.items():
            provided.setdefault(topic, set()).add(msg_type)
    contract = robot_contract(load_robot(robot_file))
    for topic in contract.topics:
        if topic.sim_only:
            continue
        assert topic.name in provided, f'{real_file}: no driver provides contract topic {topic.name}'
        assert provided[topic.name] == {topic.type}, f'{real_file}: {topic.name} provided as {provided[topic.name]}'
    nodes = graph_for('real', {'robot': robot, 'real_config': str(real_file)})
    assert [n.name for n in nodes] == [d.name for d in real.drivers]
    for node in nodes:  # every placeholder resolved, the URDF handed over where asked
        for key, value in node.parameters.items():
            assert not (isinstance(value, str) and '{' in value and not value.startswith('<?xml')), (node.name, key)


def test_real_mode_on_this_machine_names_the_missing_driver():
    result = subprocess.run(['robotsim', 'launch', 'real'], capture_output=True, text=True, timeout=60)
    assert result.returncode == 2
    assert "package 'robot_state_publisher'" in result.stderr and 'not found under AMENT_PREFIX_PATH' in result.stderr
    assert 'started' not in result.stdout, 'nothing may start when a driver is missing'


def _rviz_references(node, topics, frames):
    if isinstance(node, dict):
        for key, value in node.items():
            if key in ('Topic', 'Description Topic') and isinstance(value, dict):
                topics.append(value['Value'])
            elif key in ('Fixed Frame', 'Target Frame', 'Reference Frame') and not str(value).startswith('<'):
                frames.append(value)
            else:
                _rviz_references(value, topics, frames)
    elif isinstance(node, list):
        for item in node:
            _rviz_references(item, topics, frames)


def test_rviz_config_references_only_contract_topics_and_frames():
    config = yaml.safe_load((WORKSPACE / 'config' / 'rviz' / 'robotsim.rviz').read_text())
    topics, frames = [], []
    _rviz_references(config, topics, frames)
    contract = robot_contract(load_robot('rover'))
    model = load_robot('rover')
    known_frames = set(model.tree.links) | {'odom'}
    by_name = {t.name: t for t in contract.topics}
    displays = {d['Class'].split('/')[-1]: d for d in config['Visualization Manager']['Displays']}
    assert {'RobotModel', 'TF', 'LaserScan', 'Image', 'Odometry'} <= set(displays)
    assert config['Visualization Manager']['Global Options']['Fixed Frame'] == 'odom'
    assert len(topics) >= 5 and frames
    for topic in topics:
        assert topic in by_name, f'robotsim.rviz: topic {topic} is not in the contract'
    for frame in frames:
        assert frame in known_frames, f'robotsim.rviz: frame {frame} is not a frame of the robot'
    for display in config['Visualization Manager']['Displays']:  # QoS as offered, or RViz sees nothing
        topic = display.get('Topic') or display.get('Description Topic')
        if topic:
            offered = by_name[topic['Value']].qos
            assert topic['Reliability Policy'].lower().replace(' ', '_') == offered.reliability, display['Name']
            assert topic['Durability Policy'].lower().replace(' ', '_') == offered.durability, display['Name']


@pytest.mark.parametrize('arguments,expected', [
    (['speed:=3'], 'command line: speed: unknown launch argument'),
    (['firmware:=maybe'], 'command line: firmware: expected true, false or auto'),
    (['seed:=abc'], 'command line: seed: expected int'),
    (['rviz'], 'command line: rviz: expected name:=value'),
    (['fleet:=no_such_fleet'], 'no_such_fleet.yaml: file not found'),
    (['use_sim:=true'], 'use_sim: only for robot.launch.py'),
])
def test_bad_launch_arguments_fail_with_one_clear_line(arguments, expected):
    result = subprocess.run(['robotsim', 'launch', 'sim', *arguments], capture_output=True, text=True, timeout=60)
    assert result.returncode == 2, result.stdout + result.stderr
    assert expected in result.stderr and len(result.stderr.strip().splitlines()) == 1, result.stderr


def test_docker_images_reuse_the_project_setup_steps():
    """No Docker engine here: check what can be checked without one."""
    full_setup = WORKSPACE / 'scripts' / 'setup-full-install.sh'
    assert subprocess.run(['bash', '-n', str(full_setup)]).returncode == 0
    for name in ('desktop.Dockerfile', 'jetson.Dockerfile'):
        text = (WORKSPACE / 'docker' / name).read_text()
        assert 'scripts/setup-full-install.sh' in text and 'COPY . ' in text, name
    for script in ('setup.sh', 'setup-full-install.sh'):  # one Debian package list for both modes
        assert 'requirements/debian.txt' in (WORKSPACE / 'scripts' / script).read_text(), script
    assert 'colcon build --base-paths src' in full_setup.read_text()  # compat/tf2_msgs stays out
