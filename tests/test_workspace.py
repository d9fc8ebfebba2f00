"""The workspace itself: colcon sees the right packages in each mode, the bare-machine
environment confines ROS to this machine, set-up is idempotent, the bringup package installs
launch/ and config/."""

import os
import subprocess
import xml.etree.ElementTree as ET
from pathlib import Path

WORKSPACE = Path(__file__).resolve().parents[1]
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


def test_env_script_confines_ros_to_this_machine():
    clean = {'PATH': '/usr/bin:/bin', 'HOME': os.environ.get('HOME', '/root')}
    completed = subprocess.run(['bash', '-c', f'source {WORKSPACE}/scripts/env.sh && env'], env=clean,
                               capture_output=True, text=True, timeout=30, check=True)
    env = dict(line.split('=', 1) for line in completed.stdout.splitlines() if '=' in line)
    assert env['ROS_AUTOMATIC_DISCOVERY_RANGE'] == 'LOCALHOST'
    assert env['ROS_LOCALHOST_ONLY'] == '1'
    assert 1 <= int(env['ROS_DOMAIN_ID']) <= 100
    assert env['MUJOCO_GL'] in ('egl', 'osmesa')
    assert str(WORKSPACE / '.venv') in env['AMENT_PREFIX_PATH'].split(':')
    assert any(p.startswith(str(WORKSPACE / 'install')) for p in env['AMENT_PREFIX_PATH'].split(':'))


def test_setup_rerun_is_a_no_op():
    stamps = [WORKSPACE / '.venv' / '.robotsim-setup-stamp', WORKSPACE / 'install' / '.robotsim-build-stamp']
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
    exported = (WORKSPACE / '.venv' / 'share' / 'std_msgs' / 'cmake' /
                'export_std_msgs__rosidl_generator_pyExport.cmake').read_text()
    assert '/opt/python/cp' in exported
    cache = (WORKSPACE / 'build' / 'robotsim_msgs' / 'CMakeCache.txt').read_text()
    assert 'CMAKE_PROJECT_TOP_LEVEL_INCLUDES:UNINITIALIZED=' + str(WORKSPACE / 'cmake' / 'ros_wheels_fixup.cmake') \
        in cache
