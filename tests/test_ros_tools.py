"""ROS's own C++ tools built from their upstream sources against the bare machine's wheels
(scripts/build-ros-tools.sh, a cached prefix outside the repository), used as a ROS install uses them.

- the real robot_state_publisher publishes the stand-in's transforms for the same URDF and joint states;
- ``ros2 launch robotsim sim.launch.py`` starts the real robot_state_publisher (state_publisher:=auto) and, with
  record:=true paused:=true, records with the real ``ros2 bag record -s mcap``; that bag opens in ``ros2 bag info``
  and in the project's readers (``robotsim bag info``, the replay scene);
- a bag written by the project's own recorder opens in ``ros2 bag info`` with the same counts and plays with
  ``ros2 bag play``.

Skipped, with the reason, when the prefix of this distro is not built.
"""

from __future__ import annotations

import functools
import math
import os
import random
import shutil
import signal
import re
import subprocess
import time
import uuid
from pathlib import Path

import pytest
import yaml

from rostest_helpers import DISTRO, LATCHED, RELIABLE, SENSOR, Launch, NodeProcess, Observer, _die_with_parent

PREFIX = Path(os.environ.get('ROBOTSIM_ROS_TOOLS_PREFIX')
              or Path.home() / '.cache' / 'robotsim' / f'ros-tools-{DISTRO}')
SETUP = PREFIX / 'setup_robotsim.bash'
BUILT = (PREFIX / '.robotsim-complete').is_file() and SETUP.is_file()
"""The script marks a prefix complete only when every package it builds was built."""

pytestmark = pytest.mark.skipif(not BUILT, reason=f'ROS 2 {DISTRO} tools not built (completely) at {PREFIX} '
                                                  f'(ROBOTSIM_DISTRO={DISTRO} scripts/build-ros-tools.sh builds them)')


@functools.cache
def tools_env() -> dict[str, str]:
    """This process's environment with the tools' prefix sourced on top (as a user does after env.sh). Without the
    mark this (bootstrapped) Python process carries: a user's shell has not been through the wheels' bootstrapper."""
    shell = {k: v for k, v in os.environ.items() if k != '_ROS_WHEELS_BOOTSTRAP_COMPLETE'}
    out = subprocess.run(['bash', '-c', f'source "{SETUP}" >/dev/null && env -0'], capture_output=True, check=True,
                         env=shell, timeout=60)
    env = dict(item.split('=', 1) for item in out.stdout.decode().split('\0') if '=' in item)
    assert str(PREFIX) in env.get('AMENT_PREFIX_PATH', ''), 'the prefix is not on AMENT_PREFIX_PATH after sourcing'
    return env


ROS2_CLI = shutil.which('ros2') is not None
needs_ros2 = pytest.mark.skipif(not ROS2_CLI, reason='the ros2 command (ros2cli wheels: ROBOTSIM_ROS2_WHEELS at set-up) '
                                                     'is not installed')


def ros2(*args: str, timeout: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run(['ros2', *args], capture_output=True, text=True, env=tools_env(), timeout=timeout)


def _transforms(messages) -> dict[tuple[int, str], tuple[str, tuple, tuple]]:
    """(stamp ns, child) -> (parent, translation, rotation with w >= 0) of every transform received."""
    found = {}
    for message in messages:
        for t in message.transforms:
            q = t.transform.rotation
            sign = -1.0 if q.w < 0 else 1.0
            found[(t.header.stamp.sec * 10**9 + t.header.stamp.nanosec, t.child_frame_id)] = (
                t.header.frame_id, (t.transform.translation.x, t.transform.translation.y, t.transform.translation.z),
                (sign * q.x, sign * q.y, sign * q.z, sign * q.w))
    return found


def _assert_same_transforms(real: dict, standin: dict) -> None:
    assert real.keys() == standin.keys(), (sorted(set(real) ^ set(standin))[:10])
    for key, (parent, translation, rotation) in real.items():
        other = standin[key]
        assert parent == other[0], key
        assert max(abs(a - b) for a, b in zip(translation, other[1])) < 1e-9, (key, translation, other[1])
        assert max(abs(a - b) for a, b in zip(rotation, other[2])) < 1e-9, (key, rotation, other[2])


def test_every_python_process_loads_the_prefixs_tf2_msgs():
    """With the prefix sourced, a Python process under any hash seed loads this prefix's full tf2_msgs (the wheels'
    bootstrapper once rebuilt LD_LIBRARY_PATH from a set, so in some processes the workspace's reduced tf2_msgs
    library came first and the simulator failed to import TFMessage's type support)."""
    code = ('from tf2_msgs.msg import TFMessage; from tf2_msgs.action import LookupTransform; '
            'TFMessage.__class__.__import_type_support__(); LookupTransform.__class__.__import_type_support__(); '
            'import tf2_msgs; print(tf2_msgs.__file__)')
    for seed in random.Random().sample(range(10_000), 8):
        done = subprocess.run([shutil.which('python') or 'python', '-c', code], capture_output=True, text=True,
                              env={**tools_env(), 'PYTHONHASHSEED': str(seed)}, timeout=120)
        assert done.returncode == 0, (seed, done.stderr[-2000:])
        assert done.stdout.strip().startswith(str(PREFIX)), (seed, done.stdout)


@pytest.mark.parametrize('robot', ['rover', 'panda'])
def test_robot_state_publisher_publishes_the_standins_transforms(robot, tmp_path):
    """The same URDF (generated from the robot description) and the same joint states, drawn at test time, to the
    real robot_state_publisher (namespace /real) and to the stand-in (namespace /standin): the same /tf_static and
    the same /tf, frame for frame and stamp for stamp, to 1e-9."""
    from builtin_interfaces.msg import Time
    from sensor_msgs.msg import JointState
    from tf2_msgs.msg import TFMessage

    from robotsim_core.description import load_robot
    from robotsim_core.description.urdf import tree_to_urdf

    tree = load_robot(robot).tree
    urdf = tree_to_urdf(tree)
    moving = [j for j in tree.moving_joints() if j.mimic is None]
    seed = random.randrange(2**32)
    print(f'joint positions drawn with seed {seed}')
    rng = random.Random(seed)
    params = tmp_path / 'rsp.yaml'
    params.write_text(yaml.safe_dump({'/**': {'ros__parameters': {'robot_description': urdf,
                                                                   'publish_frequency': 1000.0}}}))
    real = subprocess.Popen([str(PREFIX / 'lib' / 'robot_state_publisher' / 'robot_state_publisher'), '--ros-args',
                             '--params-file', str(params), '-r', '__ns:=/real', '-r', '/tf:=tf',
                             '-r', '/tf_static:=tf_static'], env=tools_env(), stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, preexec_fn=_die_with_parent)  # no orphan, ever
    obs = Observer(f'rsp_compare_{robot}')
    try:
        with NodeProcess('robotsim_sim', 'state_publisher', {'robot': robot}, namespace='standin'):
            for ns in ('real', 'standin'):
                obs.watch(f'/{ns}/tf_static', TFMessage, LATCHED)
                obs.watch(f'/{ns}/tf', TFMessage, RELIABLE)
            publishers = {ns: obs.node.create_publisher(JointState, f'/{ns}/joint_states', 10)
                          for ns in ('real', 'standin')}
            assert obs.spin_until(lambda: all(obs.messages[f'/{ns}/tf_static'] for ns in ('real', 'standin'))
                                  and all(p.get_subscription_count() for p in publishers.values()), 90), \
                'no /tf_static from both publishers'
            count = 12
            for k in range(count):
                message = JointState(name=[j.name for j in moving])
                message.header.stamp = Time(sec=100 + k, nanosec=1000 * k)
                for joint in moving:
                    low, high = (joint.limit.lower, joint.limit.upper) if joint.type in ('revolute', 'prismatic') \
                        and joint.limit is not None else (-math.pi, math.pi)
                    message.position.append(rng.uniform(low, high))
                for publisher in publishers.values():
                    publisher.publish(message)
                obs.spin_for(0.1)
            assert obs.spin_until(lambda: all(len(obs.messages[f'/{ns}/tf']) >= count for ns in ('real', 'standin')),
                                  60), {ns: len(obs.messages[f'/{ns}/tf']) for ns in ('real', 'standin')}
    finally:
        obs.close()
        real.send_signal(signal.SIGINT)
        output = real.communicate(timeout=30)[0]
    assert 'Robot initialized' in output, output  # the real one's start-up line
    # Static transforms: their stamps do not count (tf2 holds them for all time; the real node stamps them with its
    # start time, the stand-in with 0).
    unstamped = [{(0, child): value for (_, child), value in _transforms(obs.messages[f'/{ns}/tf_static']).items()}
                 for ns in ('real', 'standin')]
    assert unstamped[0]
    _assert_same_transforms(*unstamped)
    real_tf, standin_tf = _transforms(obs.messages['/real/tf']), _transforms(obs.messages['/standin/tf'])
    assert len({stamp for stamp, _ in real_tf}) == count
    _assert_same_transforms(real_tf, standin_tf)


def _bag_info(bag: Path) -> dict[str, int]:
    """Topic -> message count, from ``ros2 bag info``'s output."""
    result = ros2('bag', 'info', str(bag))
    assert result.returncode == 0, result.stdout + result.stderr
    counts = dict((m.group(1), int(m.group(2))) for m in re.finditer(r'Topic: (\S+)\s+\| Type: \S+\s+\| Count: (\d+)',
                                                                       result.stdout))
    assert counts, result.stdout
    return counts


@needs_ros2
def test_ros2_launch_runs_the_real_robot_state_publisher_and_ros2_bag_record(tmp_path):
    """sim.launch.py with the tools sourced: state_publisher:=auto starts the real robot_state_publisher, record:=true
    with paused:=true the real `ros2 bag record -s mcap`; the bag opens in `ros2 bag info` and in the project's
    readers, and holds the real node's transforms of the wheels."""
    from robotsim_core.description import load_robot
    from robotsim_core.viewer.bag_scene import read_bag
    from robotsim_msgs.srv import Pause, Step

    bag = tmp_path / 'bag'
    marker = uuid.uuid4().hex
    launch = Launch(['ros2', 'launch', 'robotsim', 'sim.launch.py', 'record:=true', f'bag:={bag}', 'paused:=true',
                     'duration:=4', 'cameras:=false', 'firmware:=false', 'driver:=wander'],
                    env={**tools_env(), 'ROBOTSIM_TEST_MARKER': marker})
    obs = Observer('ros_tools_resume')
    try:
        launch.wait_for(r'robot_state_publisher.*Robot initialized', 120)
        launch.wait_for(r'waiting for /clock before starting recording', 120)
        # `ros2 bag record --use-sim-time` creates no subscription before /clock has started (a simulation paused at
        # time 0 never starts it), then subscribes topic by topic (seconds apart on a loaded machine). One step
        # starts the clock; resume when it has subscribed to every requested topic: the bag starts at the steps.
        # A step's /clock reaches the recorder only once their endpoints have matched: step until it has.
        deadline = time.monotonic() + 120
        while not any('Sim time /clock found' in line for line in list(launch.lines)):
            assert time.monotonic() < deadline, launch.text
            stepped = obs.call(Step, '/sim/step', Step.Request(steps=1), timeout=30)
            assert stepped.success, stepped.message
            obs.spin_for(0.5)
        launch.wait_for(r'All requested topics are subscribed', 180)
        response = obs.call(Pause, '/sim/pause', Pause.Request(paused=False), timeout=30)
        assert response.success, response.message
        assert launch.finish(timeout=240) == 0, launch.text
    finally:
        obs.close()
        launch.stop()
    assert '[state_publisher' not in launch.text
    counts = _bag_info(bag)
    # /cmd_vel: the wanderer's commands, recorded beside the observations.
    for topic in ('/clock', '/scan', '/odom', '/joint_states', '/tf', '/tf_static', '/sim/ground_truth', '/cmd_vel'):
        assert counts.get(topic, 0) > 0, (topic, counts)
    ours = subprocess.run(['robotsim', 'bag', 'info', str(bag)], capture_output=True, text=True, timeout=120)
    assert ours.returncode == 0, ours.stderr
    for topic, count in counts.items():
        assert re.search(rf'Topic: {re.escape(topic)}\s+\| .*Count: {count}\b', ours.stdout), (topic, ours.stdout)
    scene = read_bag(bag, load_robot('rover'))
    assert scene.duration > 3.0 and scene.base is not None, scene.notes
    assert any('wheel' in frame for frame in scene.tf), sorted(scene.tf)  # the real node's wheel transforms


@needs_ros2
def test_project_bags_open_in_ros2_bag_info_and_play(tmp_path):
    """A bag of the project's own recorder (the bare launcher's record:=true): `ros2 bag info` reads the counts the
    project's reader reads, and `ros2 bag play` publishes its scans."""
    from rosbags.highlevel import AnyReader
    from sensor_msgs.msg import LaserScan

    bag = tmp_path / 'bag'
    run = Launch(['robotsim', 'launch', 'sim', 'record:=true', f'bag:={bag}', 'duration:=3', 'cameras:=false',
                  'firmware:=false', 'state_publisher:=standin'])
    assert run.finish(timeout=240) == 0, run.text
    with AnyReader([bag]) as reader:
        ours = {c.topic: c.msgcount for c in reader.connections}
    assert _bag_info(bag) == ours
    obs = Observer('ros_tools_play')
    try:
        obs.watch('/scan', LaserScan, SENSOR)
        # --delay: the player waits before its first message, so this subscriber has matched its publisher.
        play = Launch(['ros2', 'bag', 'play', str(bag), '--topics', '/scan', '--delay', '3'], env=tools_env())
        obs.spin_until(lambda: play.process.poll() is not None, 120)
        obs.spin_for(1.0)
    finally:
        obs.close()
    assert play.finish(timeout=30) == 0, play.text
    # Best effort on loopback: nearly all, not necessarily every one.
    assert len(obs.messages['/scan']) >= 0.8 * ours['/scan'], (len(obs.messages['/scan']), ours['/scan'])
