"""`robotsim contract check` against the sim bringup (both base-control modes) and against
broken set-ups, plus the ROS-free evaluation on synthetic observations."""

import subprocess

from nav_msgs.msg import Odometry

from robotsim_core.contract import SENSOR_QOS, Contract, QosSpec, TopicSpec
from robotsim_core.contract_check import TopicObservation, evaluate
from rostest_helpers import WORKSPACE, Launch, NodeProcess, wait_until_publishing

WORLD = str(WORKSPACE / 'tests' / 'data' / 'worlds' / 'wall_ahead.yaml')


def check(*extra: str) -> subprocess.CompletedProcess:
    return subprocess.run(['robotsim', 'contract', 'check', '--duration', '4', *extra], capture_output=True,
                          text=True, timeout=120)


def test_sim_bringup_passes_in_every_base_control_mode():
    """Built-in controller, the firmware's host build, and the MCU image under QEMU."""
    for firmware in ('false', 'true', 'qemu'):
        bringup = Launch(['robotsim', 'launch', 'sim', f'world:={WORLD}', f'firmware:={firmware}'])
        try:
            wait_until_publishing('/odom', Odometry)
            result = check()
        finally:
            bringup.stop()
        assert result.returncode == 0, (firmware, result.stdout, result.stderr, bringup.text)
        assert 'FAIL' not in result.stdout and '18 of 18 checks pass' in result.stdout
        assert ('firmware in the loop' in bringup.text) == (firmware != 'false')
        assert ('MCU image under QEMU' in bringup.text) == (firmware == 'qemu')


def test_broken_setups_fail_with_a_clear_line():
    nodes = [NodeProcess('robotsim_sim', 'state_publisher', {'use_sim_time': True}),
             NodeProcess('robotsim_sim', 'sim_node', {'world': WORLD, 'cameras': False, 'frame_prefix': 'wrong/'})]
    try:
        wait_until_publishing('/sim/ground_truth', Odometry)
        result = check()
        without_cameras = check('--no-cameras')
    finally:
        for node in nodes:
            node.stop()
    assert result.returncode == 1
    lines = result.stdout.splitlines()
    # "no message received" when the graph still lists the publisher of a simulator that just stopped
    assert any(line.startswith('FAIL') and '/camera/image_raw' in line
               and ('missing: no publisher' in line or 'no message received' in line) for line in lines), result.stdout
    assert any(line.startswith('FAIL') and '/scan' in line and 'frame_id wrong/laser, expected laser' in line
               for line in lines), result.stdout
    # --no-cameras: a run with cameras:=false is not failed for its cameras (the rest is checked as before)
    assert without_cameras.returncode == 1 and '/camera/' not in without_cameras.stdout, without_cameras.stdout
    assert 'frame_id wrong/laser, expected laser' in without_cameras.stdout


def test_evaluation_rules():
    contract = Contract('toy', [TopicSpec('scan', 'sensor_msgs/msg/LaserScan', 'laser', SENSOR_QOS, 10.0)],
                        [('odom', 'base_link')])
    stamps = [i * 100_000_000 for i in range(30) if i % 3 != 1]  # a third of the scans lost: still 10 Hz
    good = TopicObservation(['sensor_msgs/msg/LaserScan'], [SENSOR_QOS], {'laser'}, stamps, len(stamps))
    rows = evaluate(contract, {'/scan': good}, {('odom', 'base_footprint'), ('base_footprint', 'base_link')},
                    stamps[-1])
    assert all(row.ok for row in rows), rows
    slow = TopicObservation(['sensor_msgs/msg/LaserScan'], [QosSpec('reliable', 'volatile', 10)], {'laser'},
                            [i * 200_000_000 for i in range(10)], 10)
    rows = evaluate(contract, {'/scan': slow}, set(), 10 ** 12)
    detail = rows[0].detail
    assert not rows[0].ok and 'rate 5.0 Hz' in detail and 'QoS reliable/volatile' in detail
    assert 'not in the reference time domain' in detail
    assert not rows[1].ok and rows[1].detail == 'not connected on /tf, /tf_static'
