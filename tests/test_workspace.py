"""The workspace itself: colcon sees the right packages in each mode, the bare-machine
environment confines ROS to this machine, set-up is idempotent, the bringup package installs
launch/ and config/."""

import os
import re
import subprocess
import xml.etree.ElementTree as ET
from pathlib import Path

from rostest_helpers import BUILD, INSTALL, VENV, WORKSPACE
SRC_PACKAGES = {'robotsim', 'robotsim_core', 'robotsim_sim', 'robotsim_sensors', 'robotsim_firmware',
                'robotsim_learning', 'robotsim_msgs'}


def colcon_list(*args: str) -> dict[str, str]:
    completed = subprocess.run(['colcon', 'list', *args], cwd=WORKSPACE, capture_output=True, text=True,
                               timeout=60, check=True)
    return {line.split('\t')[0]: line.split('\t')[2] for line in completed.stdout.splitlines() if line.strip()}


def test_full_ros_install_crawl_never_sees_compat_or_venv():
    """A plain `colcon build` at the workspace root (what a full ROS install does) finds exactly
    the src/ packages: compat/tf2_msgs would shadow the real tf2_msgs, and .venv must be skipped."""
    packages = colcon_list()
    assert set(packages) == SRC_PACKAGES
    assert packages['robotsim_msgs'] == '(ros.ament_cmake)'
    for name in SRC_PACKAGES - {'robotsim_msgs'}:
        assert packages[name] == '(ros.ament_python)', name


def test_bare_machine_build_adds_compat_tf2_msgs():
    packages = colcon_list('--base-paths', 'src', '--paths', 'compat/tf2_msgs')
    assert set(packages) == SRC_PACKAGES | {'tf2_msgs'}


def test_package_manifests_are_valid_format_3():
    for name in SRC_PACKAGES:
        manifest = ET.parse(WORKSPACE / 'src' / name / 'package.xml').getroot()
        assert manifest.get('format') == '3'
        assert manifest.findtext('name') == name
        assert manifest.find('export/build_type') is not None


def sourced_env(**variables) -> dict[str, str]:
    clean = {'PATH': '/usr/bin:/bin', 'HOME': os.environ.get('HOME', '/root'), **variables}
    completed = subprocess.run(['bash', '-c', f'source {WORKSPACE}/scripts/env.sh && env'], env=clean,
                               capture_output=True, text=True, timeout=30, check=True)
    return dict(line.split('=', 1) for line in completed.stdout.splitlines() if '=' in line)


def test_env_script_confines_ros_to_this_machine():
    env = sourced_env()
    assert env['ROBOTSIM_DISTRO'] == 'kilted'
    assert env['ROS_AUTOMATIC_DISCOVERY_RANGE'] == 'LOCALHOST'
    assert env['ROS_LOCALHOST_ONLY'] == '1'
    assert 1 <= int(env['ROS_DOMAIN_ID']) <= 100
    assert env['MUJOCO_GL'] in ('egl', 'osmesa')
    assert str(WORKSPACE / '.venv') in env['AMENT_PREFIX_PATH'].split(':')


def test_env_script_switches_distro_in_one_place():
    """ROBOTSIM_DISTRO=jazzy: its own venv and colcon trees, the range without Jazzy's deprecated
    ROS_LOCALHOST_ONLY (which would override it and warn), asynchronous Fast DDS publication, another
    default domain; an unknown distro is one line and a failed source."""
    kilted, jazzy = sourced_env(), sourced_env(ROBOTSIM_DISTRO='jazzy', ROS_LOCALHOST_ONLY='1')
    assert jazzy['ROBOTSIM_VENV'] == str(WORKSPACE / '.venv-jazzy')
    assert jazzy['ROBOTSIM_INSTALL'] == str(WORKSPACE / 'install-jazzy')
    assert jazzy['ROBOTSIM_CONSTRAINTS'].endswith('requirements/constraints-jazzy.txt')
    assert str(WORKSPACE / '.venv-jazzy') in jazzy['AMENT_PREFIX_PATH'].split(':')
    assert str(WORKSPACE / '.venv') not in jazzy['AMENT_PREFIX_PATH'].split(':')
    assert jazzy['ROS_AUTOMATIC_DISCOVERY_RANGE'] == 'LOCALHOST' and 'ROS_LOCALHOST_ONLY' not in jazzy
    assert jazzy['RMW_FASTRTPS_PUBLICATION_MODE'] == 'ASYNCHRONOUS'
    assert jazzy['ROS_DOMAIN_ID'] != kilted['ROS_DOMAIN_ID']
    bad = subprocess.run(['bash', '-c', f'source {WORKSPACE}/scripts/env.sh && echo sourced'],
                         env={'PATH': '/usr/bin:/bin', 'ROBOTSIM_DISTRO': 'rolling'}, capture_output=True, text=True,
                         timeout=30)
    assert bad.returncode != 0 and 'sourced' not in bad.stdout
    assert bad.stderr.strip() == 'robotsim: ROBOTSIM_DISTRO=rolling: expected kilted or jazzy (the ROS 2 wheels on PyPI)'


def test_jazzy_pins_share_every_pin_that_is_not_ros():
    """requirements/constraints-jazzy.txt differs from constraints.txt only in ROS's own packages."""
    def pins(name: str) -> dict[str, str]:
        found = {}
        for line in (WORKSPACE / 'requirements' / name).read_text().splitlines():
            line = line.split('#')[0].strip()
            if '==' in line:
                package, version = line.split('==')
                found[re.sub(r'[-_.]+', '-', package).lower()] = version
        return found
    kilted, jazzy = pins('constraints.txt'), pins('constraints-jazzy.txt')
    ros = {name for name in jazzy if name.startswith('ros-')}
    ros |= {name.removeprefix('ros-') for name in ros} | {name.removeprefix('ros-jazzy-') for name in ros}
    differing = {name for name in kilted.keys() & jazzy.keys() if kilted[name] != jazzy[name] and name not in ros}
    assert not differing, {name: (kilted[name], jazzy[name]) for name in differing}
    kilted_ros = {name for name in kilted if name.startswith('ros-')}
    only_kilted = set(kilted) - set(jazzy)
    assert only_kilted <= ros | kilted_ros | {name.removeprefix('ros-') for name in kilted_ros}, only_kilted


def test_setup_rerun_is_a_no_op():
    stamps = [VENV / '.robotsim-setup-stamp', INSTALL / '.robotsim-build-stamp']
    before = [stamp.stat().st_mtime_ns for stamp in stamps]
    completed = subprocess.run([str(WORKSPACE / 'scripts' / 'setup.sh')], capture_output=True, text=True,
                               timeout=300, check=True)
    assert completed.stdout == '' and completed.stderr == '', completed
    assert [stamp.stat().st_mtime_ns for stamp in stamps] == before


def test_bringup_package_installs_launch_and_config():
    from ament_index_python.packages import get_package_share_directory

    share = Path(get_package_share_directory('robotsim'))
    assert (share / 'config' / 'robots' / 'rover.yaml').read_text() == \
        (WORKSPACE / 'config' / 'robots' / 'rover.yaml').read_text()
    assert (share / 'config' / 'robots' / 'racer.yaml').is_file()
    assert sorted(path.name for path in (share / 'launch').glob('*.launch.py')) == \
        sorted(path.name for path in (WORKSPACE / 'launch').glob('*.launch.py'))
    for path in (WORKSPACE / 'config').rglob('*'):  # every configuration file, in its folder
        if path.is_file():
            assert (share / path.relative_to(WORKSPACE)).read_bytes() == path.read_bytes(), path


def test_ros_wheel_repair_is_needed_and_applied():
    """The wheels' exported CMake still names the build container's interpreter (so the repair in
    cmake/ros_wheels_fixup.cmake is still needed), and the robotsim_msgs build used the real one."""
    exported = (VENV / 'share' / 'std_msgs' / 'cmake' /
                'export_std_msgs__rosidl_generator_pyExport.cmake').read_text()
    assert '/opt/python/cp' in exported
    cache = (BUILD / 'robotsim_msgs' / 'CMakeCache.txt').read_text()
    assert 'CMAKE_PROJECT_TOP_LEVEL_INCLUDES:UNINITIALIZED=' + str(WORKSPACE / 'cmake' / 'ros_wheels_fixup.cmake') \
        in cache
