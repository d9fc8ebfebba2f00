"""The node graph defined once (the launch files against the real `launch` library: test_ros2_launch.py);
the real-mode driver configuration covers the contract; the RViz file only names contract topics and
frames; bad launch arguments fail with a clear line."""

import glob
import os
import subprocess

import pytest
import yaml

from robotsim.bringup import graph_for, launch_arguments, load_real_config, rviz_config_path
from robotsim_core.contract import robot_contract
from robotsim_core.description import load_robot
from rostest_helpers import WORKSPACE


def test_every_launch_argument_is_described():
    for name, _, description in launch_arguments():
        assert len(description) > 10, f'launch argument {name} has no description'


def test_fleet_graph_namespaces_every_robot_node():
    graph = graph_for('sim', {'fleet': 'two_rovers', 'demo': 'true'})
    by_label = {spec.label: spec for spec in graph}
    for ns in ('robot1', 'robot2'):
        assert by_label[f'{ns}/robot_state_publisher'].parameters['frame_prefix'] == f'{ns}/'
        assert by_label[f'{ns}/motor_bridge'].parameters['device'].endswith(f'-{ns}')
        assert f'{ns}/wander' in by_label
    assert by_label['robotsim_sim'].namespace == '' and by_label['robotsim_sim'].parameters['fleet'] == 'two_rovers'


def test_the_project_robots_have_real_mode_drivers():
    """rover and racer are this project's robots; the imported public ones (tiago, ur5, panda) have
    vendor bringups of their own and no real-mode configuration here (see the README)."""
    real = {os.path.splitext(os.path.basename(p))[0] for p in glob.glob(str(WORKSPACE / 'config' / 'real' / '*.yaml'))}
    assert {'rover', 'racer'} <= real
    assert real <= {os.path.splitext(os.path.basename(p))[0]
                    for p in glob.glob(str(WORKSPACE / 'config' / 'robots' / '*.yaml'))}


@pytest.mark.parametrize('real_file', sorted(glob.glob(str(WORKSPACE / 'config' / 'real' / '*.yaml'))))
def test_real_drivers_provide_every_contract_topic(real_file):
    robot = os.path.splitext(os.path.basename(real_file))[0]
    robot_file = str(WORKSPACE / 'config' / 'robots' / f'{robot}.yaml')
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


def test_real_mode_on_this_machine_names_every_missing_driver():
    result = subprocess.run(['robotsim', 'launch', 'real'], capture_output=True, text=True, timeout=60)
    assert result.returncode == 2
    assert len(result.stderr.strip().splitlines()) == 1, result.stderr
    real = load_real_config(str(WORKSPACE / 'config' / 'real' / 'rover.yaml'))
    for driver in real.drivers:
        if driver.package != 'robotsim_firmware':  # the motor bridge is ours, so it is installed
            assert f'{driver.package}/{driver.executable}' in result.stderr
    assert 'started' not in result.stdout, 'nothing may start when a driver is missing'


@pytest.mark.parametrize('value,expected', [
    ('null', 'got null'), ('[]', 'got an empty list'), ('[1, "a"]', 'got a list of int, str'),
    ('[1, 2.5]', 'got a list of float, int'),
])
def test_real_config_parameters_that_ros_cannot_hold_are_refused(value, expected, tmp_path):
    """launch_ros aborts on these after the first nodes have started; refuse them before anything starts."""
    config = tmp_path / 'rover_real.yaml'
    data = yaml.safe_load((WORKSPACE / 'config' / 'real' / 'rover.yaml').read_text())
    data['drivers'][0]['parameters']['broken'] = yaml.safe_load(value)
    config.write_text(yaml.safe_dump(data))
    result = subprocess.run(['robotsim', 'launch', 'real', f'real_config:={config}'], capture_output=True, text=True,
                            timeout=60)
    assert result.returncode == 2, result.stdout + result.stderr
    line = result.stderr.strip()
    assert len(line.splitlines()) == 1 and str(config) in line and 'drivers[0].parameters.broken' in line, line
    assert expected in line, line


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


@pytest.mark.parametrize('robot,rviz,expected_displays', [
    ('rover', 'robotsim.rviz', {'RobotModel', 'TF', 'LaserScan', 'Image', 'Odometry'}),
    ('scout', 'scout.rviz', {'RobotModel', 'TF', 'Range', 'Odometry'}),
])
def test_rviz_config_references_only_contract_topics_and_frames(robot, rviz, expected_displays):
    opened = rviz_config_path(robot)  # what rviz:=true opens (installed)
    assert os.path.basename(opened) == rviz
    config = yaml.safe_load(open(opened, encoding='utf-8').read())
    topics, frames = [], []
    _rviz_references(config, topics, frames)
    model = load_robot(robot)
    contract = robot_contract(model)
    known_frames = set(model.tree.links) | {'odom'}
    by_name = {t.name: t for t in contract.topics}
    displays = {d['Class'].split('/')[-1]: d for d in config['Visualization Manager']['Displays']}
    assert expected_displays <= set(displays)
    assert config['Visualization Manager']['Global Options']['Fixed Frame'] == 'odom'
    assert len(topics) >= 5 and frames
    for topic in topics:
        assert topic in by_name, f'{rviz}: topic {topic} is not in the contract'
    for frame in frames:
        assert frame in known_frames, f'{rviz}: frame {frame} is not a frame of the robot'
    for display in config['Visualization Manager']['Displays']:  # QoS as offered, or RViz sees nothing
        topic = display.get('Topic') or display.get('Description Topic')
        if topic:
            offered = by_name[topic['Value']].qos
            assert topic['Reliability Policy'].lower().replace(' ', '_') == offered.reliability, display['Name']
            assert topic['Durability Policy'].lower().replace(' ', '_') == offered.durability, display['Name']
    shown = {t for t in topics if by_name[t].sensor}
    for sensor_topic in (t for t in contract.topics if t.sensor):  # every sensor RViz can draw is drawn
        if sensor_topic.type in ('sensor_msgs/msg/LaserScan', 'sensor_msgs/msg/Range'):
            assert sensor_topic.name in shown, f'{rviz}: no display for {sensor_topic.name}'


@pytest.mark.parametrize('arguments,expected', [
    (['speed:=3'], 'command line: speed: unknown launch argument'),
    (['firmware:=maybe'], 'command line: firmware: expected true, false, auto or qemu'),
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


# How each real driver names the frame_id of the messages it publishes, derived from its parameters as the
# driver does it (from the drivers' sources: realsense-ros 4.x base_realsense_node.h builds
# `<camera_name>_<stream>_optical_frame` and stamps aligned depth with the colour frame; rplidar_ros and
# bno055 take `frame_id`; vesc_ackermann's odometry `odom_frame`; robotsim's motor bridge `<frame_prefix>odom`).
# None: the node keeps the header of its input (depth_image_proc's metric conversion of the aligned depth).
DRIVER_FRAME_RULES = {
    'realsense2_camera': lambda p: f"{p.get('camera_name', 'camera')}_color_optical_frame",
    'rplidar_ros': lambda p: p.get('frame_id', 'laser_frame'),
    'bno055': lambda p: p.get('frame_id', 'bno055'),
    'vesc_ackermann': lambda p: p.get('odom_frame', 'odom'),
    'robotsim_firmware': lambda p: f"{p.get('frame_prefix', '')}odom",
    'depth_image_proc': None,
}


@pytest.mark.parametrize('namespace', ['', 'robot1'])
@pytest.mark.parametrize('real_file', sorted(glob.glob(str(WORKSPACE / 'config' / 'real' / '*.yaml'))))
def test_real_drivers_stamp_the_contract_frames(real_file, namespace):
    """`robotsim contract check --real` compares frame ids on the robot; this is the same comparison made
    from the configuration: every contract topic with a frame gets it from its driver, with the prefix."""
    from robotsim_core.contract import resolve_frame
    robot = os.path.splitext(os.path.basename(real_file))[0]
    contract = robot_contract(load_robot(robot))
    prefix = f'{namespace}/' if namespace else ''
    real = load_real_config(real_file)
    nodes = {n.name: n for n in graph_for('real', {'robot': robot, 'real_config': real_file, 'namespace': namespace})}
    camera_frames = [DRIVER_FRAME_RULES['realsense2_camera'](nodes[d.name].parameters)
                     for d in real.drivers if d.package == 'realsense2_camera']
    checked = 0
    for driver in real.drivers:
        for topic_name in driver.provides:
            expected = contract.topic(topic_name).frame_id
            if not expected or driver.package not in DRIVER_FRAME_RULES:
                continue
            rule = DRIVER_FRAME_RULES[driver.package]
            stamped = rule(nodes[driver.name].parameters) if rule else camera_frames[0]
            assert stamped == resolve_frame(prefix, expected), f'{real_file}: {driver.name} stamps {topic_name} ' \
                                                               f'with {stamped}, the contract says {expected}'
            checked += 1
    framed = [t for t in contract.topics if t.frame_id and not t.sim_only]
    assert checked == len(framed), f'{real_file}: frames of {len(framed) - checked} contract topics not checked'


def test_state_publisher_choice(tmp_path, monkeypatch):
    """state_publisher:= picks ROS's robot_state_publisher (the generated URDF as its robot_description) or the
    stand-in; auto follows what AMENT_PREFIX_PATH holds; ros without it installed is refused in one line."""
    from robotsim_core.errors import DescriptionError
    without = os.pathsep.join(prefix for prefix in os.environ.get('AMENT_PREFIX_PATH', '').split(os.pathsep)
                              if prefix and not os.path.exists(os.path.join(prefix, 'lib', 'robot_state_publisher')))
    monkeypatch.setenv('AMENT_PREFIX_PATH', without)
    standin = {spec.label: spec for spec in graph_for('sim', {})}['robot_state_publisher']
    assert (standin.package, standin.executable) == ('robotsim_sim', 'state_publisher')
    with pytest.raises(DescriptionError, match='state_publisher.*robot_state_publisher.*not found'):
        graph_for('sim', {'state_publisher': 'ros'})
    with pytest.raises(DescriptionError, match="state_publisher.*expected auto, ros or standin, got 'cpp'"):
        graph_for('sim', {'state_publisher': 'cpp'})
    executable = tmp_path / 'tools' / 'lib' / 'robot_state_publisher' / 'robot_state_publisher'
    executable.parent.mkdir(parents=True)
    executable.write_text('#!/bin/sh\n')
    executable.chmod(0o755)
    monkeypatch.setenv('AMENT_PREFIX_PATH', f'{without}{os.pathsep}{tmp_path / "tools"}')
    for arguments in ({}, {'state_publisher': 'ros'}, {'fleet': 'two_rovers'}):
        nodes = [spec for spec in graph_for('sim', arguments) if spec.name == 'robot_state_publisher']
        assert nodes and all((n.package, n.executable) == ('robot_state_publisher', 'robot_state_publisher')
                             for n in nodes)
        for node in nodes:
            assert node.parameters['robot_description'].lstrip().startswith('<?xml')
            assert node.parameters['use_sim_time'] is True
    forced = {spec.label: spec for spec in graph_for('sim', {'state_publisher': 'standin'})}['robot_state_publisher']
    assert forced.package == 'robotsim_sim'


def test_a_recording_holds_the_commands_beside_the_observations():
    """The recorder takes every robot's command topics (recorded once published, never waited for); `ros2 bag
    record` (paused:=true, real mode) is given a robot's /cmd_vel only where a driver node of the bringup publishes
    it, since it reports ready only once every topic it was given has a publisher."""
    def recorder(arguments):
        return next(spec for spec in graph_for('sim', {'record': 'true', **arguments}) if spec.executable == 'recorder')
    fleet = recorder({'fleet': 'two_rovers', 'demo': 'true', 'paused': 'true'})
    assert {'/robot1/cmd_vel', '/robot2/cmd_vel', '/robot1/goal_pose'} <= set(fleet.parameters['command_topics'])
    assert '/robot1/cmd_vel' in fleet.full_install_command and '/robot2/cmd_vel' in fleet.full_install_command
    alone = recorder({'paused': 'true'})  # no driver: nothing publishes /cmd_vel, a teleop may later
    assert '/cmd_vel' in alone.parameters['command_topics'] and '/cmd_vel' not in alone.full_install_command
    assert not set(alone.parameters['command_topics']) & set(alone.parameters['topics'])
