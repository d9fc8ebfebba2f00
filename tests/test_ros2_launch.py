"""The launch files under the real ROS 2 ``launch`` / ``launch_ros`` libraries and the real ``ros2`` CLI.

Static: for 9 argument sets each launch file yields exactly the nodes, parameters, remappings and
arguments of the bare-machine launcher (both read robotsim.bringup's graph). Live: ``ros2
launch`` in a subprocess, as a user runs it: the simulator comes up and ``ros2 topic hz`` measures
/scan; bad arguments, missing drivers and a failed required node stop it with a clear line and a
non-zero status, leaving no process behind; fleet output is labelled by robot; recording works
without rosbag2. Skipped with a reason where the launch wheels are not installed.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import sys
import time
import uuid

from pathlib import Path

import pytest
import yaml

from launch_loader import fake_driver_prefix, load_launch_file
from robotsim.bringup import graph_for, launch_arguments, load_real_config
from robotsim.launcher import command_line, params_document
from rostest_helpers import WORKSPACE, Launch, wait_until_it_catches_sigint

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
    ('sim', {'fleet': 'two_rovers', 'driver': 'expert', 'goal': '1.5,-0.5'}),
    ('sim', {'driver': 'policy', 'policy': str(Path(__file__).resolve().parents[1] / 'config' / 'policies'
                                               / 'rover_goal_reaching.onnx'), 'shield': 'false', 'goal': '2,1'}),
]


@pytest.fixture
def real_drivers_installed(tmp_path, monkeypatch):
    """The real robots' driver packages as stand-in executables on AMENT_PREFIX_PATH, so real-mode
    launch files can be loaded here (nothing is started)."""
    packages = set()
    for path in (WORKSPACE / 'config' / 'real').glob('*.yaml'):
        packages |= {(d.package, d.executable) for d in load_real_config(str(path)).drivers}
    prefix = fake_driver_prefix(tmp_path / 'drivers', sorted(packages))
    monkeypatch.setenv('AMENT_PREFIX_PATH', f'{os.environ["AMENT_PREFIX_PATH"]}{os.pathsep}{prefix}')


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
def test_launch_files_and_launcher_start_the_same_nodes(mode, arguments, tmp_path, real_drivers_installed):
    declared, loaded = load_launch_file(str(LAUNCH / f'{mode}.launch.py'), arguments)
    graph = graph_for(mode, arguments)
    assert sorted(declared) == sorted(n for n, _, _ in launch_arguments() if mode == 'robot' or n != 'use_sim')
    assert len(loaded) == len(graph) > 0
    for node, spec in zip(loaded, graph):
        if spec.optional and node.name == '(skipped)':
            assert 'is not installed' in node.command[0] and spec.package in node.command[0]
            continue
        # The output label names the robot: `[robot1/motor_bridge-3]`, not `[motor_bridge-3]`.
        assert node.label == spec.label, (node.label, spec.label)
        assert launch_view(node) == launcher_view(spec, tmp_path), spec.label


def test_robot_launch_equals_sim_and_real_launch(real_drivers_installed):
    for use_sim, mode in (('true', 'sim'), ('false', 'real')):
        _, via_robot = load_launch_file(str(LAUNCH / 'robot.launch.py'), {'use_sim': use_sim, 'record': 'true'})
        _, direct = load_launch_file(str(LAUNCH / f'{mode}.launch.py'), {'record': 'true'})
        assert [launch_view(n) for n in via_robot] == [launch_view(n) for n in direct]


@pytest.mark.parametrize('mode,arguments,expected', [
    ('sim', {'namspace': 'r1'}, 'unknown launch argument(s) namspace'),
    ('sim', {'use_sim': 'false'}, 'unknown launch argument(s) use_sim'),
    ('real', {'world': 'room', 'fleet_name': 'x'}, 'unknown launch argument(s) fleet_name'),
    ('sim', {'seed': 'abc'}, 'sim.launch.py: seed: expected int'),
])
def test_undeclared_or_bad_arguments_are_refused_by_the_launch_file(mode, arguments, expected, real_drivers_installed):
    with pytest.raises(Exception) as error:
        load_launch_file(str(LAUNCH / f'{mode}.launch.py'), arguments)
    assert expected in str(error.value)


@pytest.mark.parametrize('value', [None, [], [1, 'a']])
def test_real_config_parameters_ros_cannot_hold_stop_the_launch_file_before_any_node(value, tmp_path,
                                                                                    real_drivers_installed):
    """launch_ros itself aborts on these only after the first nodes have started."""
    data = yaml.safe_load((WORKSPACE / 'config' / 'real' / 'rover.yaml').read_text())
    data['drivers'][2]['parameters']['broken'] = value
    config = tmp_path / 'rover.yaml'
    config.write_text(yaml.safe_dump(data))
    with pytest.raises(Exception) as error:
        load_launch_file(str(LAUNCH / 'real.launch.py'), {'real_config': str(config)})
    assert f'{config}: drivers[2].parameters.broken: expected a ROS parameter value' in str(error.value)


# ----------------------------------------------------------------------------- live `ros2 launch`
ROS2 = shutil.which('ros2')
needs_ros2 = pytest.mark.skipif(ROS2 is None, reason='the ros2 command (ros2cli wheels) is not installed')


def _our_pids(marker: str) -> list[str]:
    """Processes still running that were started with this test's marker in their environment."""
    found = []
    for pid in filter(str.isdigit, os.listdir('/proc')):
        try:
            with open(f'/proc/{pid}/environ', 'rb') as stream:
                if f'ROBOTSIM_TEST_MARKER={marker}'.encode() in stream.read():
                    found.append(pid)
        except OSError:
            continue
    return found


def _our_processes(marker: str) -> list[str]:
    """The command lines of :func:`_our_pids`."""
    found = []
    for pid in _our_pids(marker):
        try:
            found.append(open(f'/proc/{pid}/cmdline', 'rb').read().replace(b'\0', b' ').decode())
        except OSError:
            continue
    return found


def _where_they_wait(marker: str) -> str:
    """Each leftover process's state, parent, signal masks and every thread's kernel wait channel: what a process
    that outlived its launch was doing (a signal pending and blocked, a thread in pipe_write, a futex)."""
    lines = []
    for pid in _our_pids(marker):
        try:
            status = dict(line.split(':', 1) for line in open(f'/proc/{pid}/status').read().splitlines() if ':' in line)
            fields = ' '.join(f'{k}={status[k].strip()}' for k in ('State', 'PPid', 'SigPnd', 'ShdPnd', 'SigBlk',
                                                                  'SigIgn', 'SigCgt') if k in status)
            threads = {t: open(f'/proc/{pid}/task/{t}/wchan').read() or '-' for t in os.listdir(f'/proc/{pid}/task')}
            lines.append(f'pid {pid} {fields} threads {threads}')
        except OSError as error:
            lines.append(f'pid {pid}: {error}')
    return '\n'.join(lines)


def ros2_launch(launch_file: str, *arguments: str, session: bool = False) -> tuple[Launch, str]:
    marker = uuid.uuid4().hex
    return Launch([ROS2, 'launch', 'robotsim', launch_file, *arguments], env={'ROBOTSIM_TEST_MARKER': marker},
                  session=session), marker


def assert_nothing_left(marker: str) -> None:
    deadline = time.monotonic() + 30
    while (left := _our_processes(marker)) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not left, f'processes left running: {left}'


def _error_lines(text: str) -> list[str]:
    return [line for line in text.splitlines() if 'Caught exception in launch' in line]


@needs_ros2
@pytest.mark.parametrize('launch_file,arguments', [
    ('real.launch.py', []), ('robot.launch.py', ['use_sim:=false']),
])
def test_missing_drivers_start_nothing_and_are_all_named(launch_file, arguments):
    launch, marker = ros2_launch(launch_file, *arguments)
    assert launch.finish(timeout=120) != 0, launch.text
    errors = _error_lines(launch.text)
    assert len(errors) == 1, launch.text
    for driver in load_real_config(str(WORKSPACE / 'config' / 'real' / 'rover.yaml')).drivers:
        if driver.package != 'robotsim_firmware':
            assert f'{driver.package}/{driver.executable}' in errors[0]
    assert 'process started' not in launch.text, 'nothing may start when a driver is missing'
    assert_nothing_left(marker)


@needs_ros2
@pytest.mark.parametrize('arguments,expected', [
    (['namspace:=r1'], 'unknown launch argument(s) namspace'),
    (['use_sim:=false'], 'unknown launch argument(s) use_sim'),
    (['real_time_factor:=fast'], 'real_time_factor: expected float'),
    (['world:=nope'], 'nope.yaml: file not found'),  # the world checked before any node starts
])
def test_bad_arguments_stop_ros2_launch_with_one_line(arguments, expected):
    launch, marker = ros2_launch('sim.launch.py', *arguments)
    assert launch.finish(timeout=120) != 0, launch.text
    errors = _error_lines(launch.text)
    assert len(errors) == 1 and expected in errors[0], launch.text
    assert 'process started' not in launch.text
    assert_nothing_left(marker)


@needs_ros2
def test_a_failed_required_node_fails_the_launch_and_stops_the_rest(tmp_path):
    # A world the launch file reads fine, whose MJCF include only the simulator compiles: it exits 2.
    world = tmp_path / 'world.yaml'
    world.write_text('name: with_include\ninclude: missing.xml\n')
    launch, marker = ros2_launch('sim.launch.py', f'world:={world}')
    assert launch.finish(timeout=120) != 0, launch.text
    assert 'include: MJCF file not found' in launch.text
    errors = _error_lines(launch.text)
    assert len(errors) == 1 and 'required node robotsim_sim exited with status 2' in errors[0], launch.text
    assert_nothing_left(marker)


@needs_ros2
def test_fleet_output_is_labelled_by_robot_and_a_finished_sim_ends_the_launch_cleanly():
    launch, marker = ros2_launch('sim.launch.py', 'fleet:=two_rovers', 'duration:=2', 'cameras:=false',
                                 'real_time_factor:=0')
    assert launch.finish(timeout=180) == 0, launch.text
    for robot in ('robot1', 'robot2'):
        for node in ('robot_state_publisher', 'motor_bridge'):
            assert re.search(rf'^\[{robot}/{node}-\d+\] ', launch.text, re.M), f'{robot}/{node}\n{launch.text}'
    assert not _error_lines(launch.text)
    assert_nothing_left(marker)


@needs_ros2
def test_recording_without_rosbag2_writes_a_bag(tmp_path):
    from rosbags.highlevel import AnyReader
    bag = tmp_path / 'bag'
    launch, marker = ros2_launch('sim.launch.py', 'record:=true', f'bag:={bag}', 'duration:=3', 'cameras:=false',
                                 'firmware:=false')
    assert launch.finish(timeout=180) == 0, launch.text
    assert_nothing_left(marker)
    with AnyReader([bag]) as reader:
        counts = {c.topic: c.msgcount for c in reader.connections}
    assert counts.get('/clock', 0) > 0 and counts.get('/scan', 0) > 0, counts


@needs_ros2
@pytest.mark.flaky(reruns=1)  # seen: `ros2 launch` did not exit within 30 s of Ctrl-C in full runs (not alone)
def test_ros2_launch_runs_the_simulator_and_ros2_topic_hz_measures_it():
    launch, marker = ros2_launch('sim.launch.py', 'cameras:=false', 'firmware:=false')
    hz = None
    try:
        launch.wait_for(r'robotsim_sim.*5 topics|robot rover', timeout=120)
        hz = Launch([ROS2, 'topic', 'hz', '/scan'])  # (sensor QoS is matched by ros2 topic)
        rate = float(hz.wait_for(r'average rate: ([0-9.]+)', timeout=120).group(1))
        deadline = time.monotonic() + 120
        while True:  # discovery of a fresh `ros2` process takes a moment (longer on a loaded machine)
            nodes = subprocess.run([ROS2, 'node', 'list', '--no-daemon', '--spin-time', '3'], capture_output=True,
                                   text=True, timeout=120)
            if {'/robotsim_sim', '/robot_state_publisher'} <= set(nodes.stdout.split()) or time.monotonic() > deadline:
                break
    finally:
        if hz is not None:
            hz.process.kill()  # what it measured is the point, not how it exits
            hz.process.wait()
        launch.stop()
        subprocess.run([ROS2, 'daemon', 'stop'], capture_output=True, timeout=60)  # if `ros2 topic` started one
    assert rate > 0  # /scan's nominal 10 Hz in sim time; the wall-clock rate depends on the machine's load
    assert '/robotsim_sim' in nodes.stdout and '/robot_state_publisher' in nodes.stdout, nodes.stdout
    assert launch.finish(timeout=60) == 0, launch.text
    assert_nothing_left(marker)



@needs_ros2
def test_an_argument_given_twice_stops_ros2_launch_as_the_launcher_refuses_it():
    launch, marker = ros2_launch('sim.launch.py', 'seed:=1', 'seed:=2')
    assert launch.finish(timeout=120) != 0, launch.text
    errors = _error_lines(launch.text)
    assert len(errors) == 1 and 'argument(s) seed given twice' in errors[0], launch.text
    assert 'process started' not in launch.text
    assert_nothing_left(marker)


@needs_ros2
# Seen once in a full run (a late-starting node, wander, still running 10 s after the SIGKILL; not reproduced in 5
# runs alone): one rerun, and the leftover's state and wait channels go to the run's log.
@pytest.mark.flaky(reruns=1)
def test_sigkill_of_ros2_launch_leaves_no_node_running():
    """ros2 launch killed outright runs no shutdown of its own: every node process still dies with it (each
    started under setpriv --pdeathsig TERM), within 10 s."""
    launch, marker = ros2_launch('sim.launch.py', 'cameras:=false', 'firmware:=false', 'demo:=true')
    try:
        launch.wait_for(r'robotsim_sim.*real_time_factor', 120)  # the simulator is up and the others started
        assert len(_our_processes(marker)) >= 4, _our_processes(marker)  # ros2 launch and its nodes
        launch.process.send_signal(signal.SIGKILL)
        launch.process.wait(timeout=30)
        deadline = time.monotonic() + 10
        while (left := _our_processes(marker)) and time.monotonic() < deadline:
            time.sleep(0.2)
        if left:  # to the run's own log as well: a rerun that passes would not show the failure's message
            report = f'left running 10 s after the SIGKILL: {left}\n{_where_they_wait(marker)}'
            print(f'\ntest_sigkill_of_ros2_launch_leaves_no_node_running: {report}', file=sys.__stderr__, flush=True)
        assert not left, report
    finally:
        launch.stop()


@needs_ros2
@pytest.mark.flaky(reruns=1)  # as test_ros2_launch_runs_the_simulator...: ros2 launch slow to exit on Ctrl-C, seen in full runs
def test_ctrl_c_in_a_terminal_stops_ros2_launch_and_every_node_cleanly():
    """A terminal's Ctrl-C signals the whole foreground process group: ros2 launch and, directly, every node, which
    then gets SIGINT a second time from ros2 launch. Every node (the simulator, the state publisher, the motor bridge
    with its firmware) ends cleanly: no traceback, no "process has died", exit status 0, nothing left running."""
    launch, marker = ros2_launch('sim.launch.py', 'cameras:=false', session=True)
    try:
        launch.wait_for(r'motor_bridge.*firmware .* channels', 120)  # every node up, the firmware answering
        wait_until_it_catches_sigint(launch.process)
        os.killpg(launch.process.pid, signal.SIGINT)
        code = launch.finish(timeout=60)
    finally:
        launch.stop()
    assert code == 0, launch.text
    assert 'Traceback' not in launch.text and 'process has died' not in launch.text, launch.text
    assert len(re.findall(r'process has finished cleanly', launch.text)) == 3, launch.text
    assert_nothing_left(marker)
