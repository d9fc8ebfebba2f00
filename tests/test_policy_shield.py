"""The policy's velocity shield (robotsim_learning.shield): what it lets through against a scan, and in closed loop
on the fast path a policy that only drives ahead at full speed, which without the shield runs into whatever is in
front of it and with it stops short (MuJoCo's contacts decide the outcome)."""

from __future__ import annotations

import json
import math
import secrets
import subprocess
import sys
from types import SimpleNamespace

import numpy as np
import pytest

from robotsim_core.description import load_robot

SAMPLES = 360


def scan(points_in_base=(), sensor_x=-0.08):
    """A 360-sample scan from the rover's lidar (at x = -0.08 in the base) seeing the given points (base frame)."""
    ranges = np.full(SAMPLES, np.inf, dtype=np.float32)
    increment = 2 * math.pi / SAMPLES
    for x, y in points_in_base:
        angle = math.atan2(y, x - sensor_x)
        index = int(round((angle + math.pi) / increment)) % SAMPLES
        ranges[index] = min(ranges[index], math.hypot(x - sensor_x, y))
    return SimpleNamespace(ranges=ranges.tolist(), angle_min=-math.pi, angle_increment=increment, range_min=0.12,
                           range_max=12.0)


def wall(x: float, span=(-0.6, 0.6)):
    return [(x, y) for y in np.arange(span[0], span[1], 0.01)]


@pytest.fixture(scope='module')
def shield():
    """The rover's shield without steering: it only slows and stops."""
    from robotsim_learning.shield import VelocityShield
    return VelocityShield.for_robot(load_robot('rover'), rate=10.0, steer=0.0)


@pytest.fixture(scope='module')
def steering():
    """The rover's shield as the policy node builds it: it may also turn a command."""
    from robotsim_learning.shield import VelocityShield
    return VelocityShield.for_robot(load_robot('rover'), rate=10.0)


def test_the_shield_reads_the_rover_and_its_lidar(shield):
    assert shield.sensor_pose == pytest.approx((-0.08, 0.0, 0.0))
    assert shield.boxes[:, 2].max() == pytest.approx(0.17)  # the camera, the front-most part
    assert shield.deceleration == 1.0 and shield.reaction_time == pytest.approx(0.2)


def test_free_space_lets_every_command_through(shield):
    for command in ((0.8, 0.0), (0.5, 1.5), (-0.3, 0.0), (0.0, -2.5)):
        assert shield.filter(command, scan()) == command
    assert shield.filter((0.8, 0.0), scan(wall(3.5))) == (0.8, 0.0)


def test_a_wall_ahead_slows_then_stops_the_robot(shield):
    # Stopping from 0.8 m/s takes 0.16 m of reaction and 0.32 m of braking, and the shield keeps 6 cm: a wall
    # 1.5 m ahead is no concern, one 0.4 m ahead of the front allows less speed, one 0.1 m ahead a crawl, one
    # within the margin none.
    assert shield.filter((0.8, 0.0), scan(wall(1.5))) == (0.8, 0.0)
    slowed = shield.filter((0.8, 0.0), scan(wall(0.17 + 0.4)))
    assert 0 < slowed[0] < 0.8 and slowed[1] == 0.0
    assert 0 < shield.filter((0.8, 0.0), scan(wall(0.17 + 0.1)))[0] <= 0.15
    assert shield.filter((0.8, 0.0), scan(wall(0.17 + 0.05))) == (0.0, 0.0)
    # Backing away from it is not limited; moving at speed toward it stops at once.
    assert shield.filter((-0.3, 0.0), scan(wall(0.17 + 0.1))) == (-0.3, 0.0)
    assert shield.filter((0.2, 0.0), scan(wall(0.17 + 0.45))) == (0.2, 0.0)
    assert shield.filter((0.2, 0.0), scan(wall(0.17 + 0.45)), moving=0.8) == (0.0, 0.0)


def test_turning_into_something_beside_the_robot_is_refused_driving_past_it_is_not(shield):
    # A post 7 cm beside the left front wheel (y = 0.13; the margin is 6 cm): straight ahead passes it, a tight left
    # turn swings the front-left corner into it, a right turn swings away.
    post = [(0.12, 0.2), (0.13, 0.2), (0.14, 0.2)]
    assert shield.filter((0.3, 0.0), scan(post)) == (0.3, 0.0)
    assert shield.filter((0.0, -1.0), scan(post)) == (0.0, -1.0)
    left = shield.filter((0.0, 2.0), scan(post))
    assert abs(left[1]) < 2.0
    assert shield.limited >= 1 and shield.checked >= 3


def test_a_robot_already_too_close_may_only_get_away(shield, steering):
    from robotsim_learning.shield import HARD
    touching = scan(wall(0.17 + 0.01))
    assert shield.filter((0.3, 0.0), touching) == (0.0, 0.0)
    assert shield.filter((-0.2, 0.0), touching) == (-0.2, 0.0)
    # A wall 2 cm beside the left wheels, closer than HARD: driving on along it at the same distance is not getting
    # away (a scan's noise would let the robot creep closer decision by decision); 5 cm beside them (inside the 6 cm
    # margin, not closer than HARD) it is allowed, no closer.
    close = scan([(x, 0.13 + 0.02) for x in np.arange(-0.4, 0.6, 0.01)])
    assert 0.02 < HARD
    assert shield.filter((0.3, 0.0), close) == (0.0, 0.0)
    linear, angular = steering.filter((0.3, 0.0), close)
    assert linear == 0.0 or angular < 0.0  # the steering shield may drive on turned away from it
    beside = scan([(x, 0.13 + 0.05) for x in np.arange(-0.4, 0.6, 0.01)])
    along = shield.filter((0.3, 0.0), beside)
    assert along[0] > 0.1 and along[1] == 0.0, along
    assert shield.filter((0.3, 1.0), beside)[1] < 1.0  # turning in toward it is refused
    # A post 5 cm beside the left front wheel: turning away from it on the spot passes.
    post = scan([(0.12, 0.18), (0.13, 0.18), (0.14, 0.18)])
    for each in (shield, steering):
        assert each.filter((0.0, -1.0), post) == (0.0, -1.0)


def test_a_robot_alongside_a_wall_within_the_margin_can_slide_along_it(shield, steering):
    """A wall along the robot's right side 4.5 cm from its wheels (inside the margin, outside HARD): turning on the
    spot swings a corner toward it, and backing or driving straight along it does not end farther away, so a shield
    that allowed only getting away by AWAY held the robot there for good. Sliding along it passes; turning into it
    does not; at 2 cm (closer than HARD) sliding does not either."""
    from robotsim_learning.shield import HARD

    def wall_on_the_right(gap):
        # One return per beam, each on the line (the scan() helper's points would move by up to half a beam's angle).
        angles = np.radians(np.arange(-160.0, -19.0, 360.0 / SAMPLES))
        return scan([(-0.08 + (-0.13 - gap) / math.tan(a), -0.13 - gap) for a in angles])

    side = wall_on_the_right(0.045)
    points = shield.points(**{k: getattr(side, k) for k in ('ranges', 'angle_min', 'angle_increment', 'range_min',
                                                               'range_max')})
    assert HARD < float(shield.clearances(points, np.zeros((1, 3)))[0]) < shield.margin
    for each in (shield, steering):
        for linear in (-0.16, 0.16):                              # backing or driving along it
            assert each.filter((linear, 0.0), side) == (linear, 0.0)
        assert each.filter((0.0, 1.0), side) == (0.0, 0.0)        # on the spot a rear corner swings into it
    assert steering.filter((0.2, -1.0), side)[1] > -1.0           # turning into it is refused
    assert shield.filter((0.16, 0.0), wall_on_the_right(0.02)) == (0.0, 0.0)


# ----------------------------------------------------------------------------- closed loop, fast path
def charging_policy(path) -> None:
    """An ONNX policy file that commands 0.99 of full speed straight ahead whatever it observes."""
    from robotsim_learning.observation import spec_for_robot
    from robotsim_learning.policy_model import TrainedPolicy, export_onnx
    spec = spec_for_robot(load_robot('rover'), 36, image=False, heading='imu')
    policy = TrainedPolicy(spec, [(np.zeros((spec.size, 2), np.float32), np.array([math.atanh(0.99), 0.0], np.float32))],
                           np.zeros(spec.size, np.float32), np.ones(spec.size, np.float32),
                           np.array([0.8, 2.5], np.float32), {'datasets': []})
    export_onnx(policy, str(path))


def test_a_robot_stuck_before_a_wall_turns_toward_free_space_on_the_goal_side_then_drives(steering):
    """StallRecovery: nothing while the robot makes progress, nor before it has been stuck for STALL_TIME; then it
    turns on the spot to the free heading nearest the goal's bearing (never into the wall), drives along it, and
    gives the robot back to the policy."""
    from robotsim_learning.shield import RECOVERY_DRIVE_TIME, STALL_TIME, StallRecovery
    recovery = StallRecovery(steering, 0.8, 2.5)
    blocked = scan(wall(0.32, (-1.0, 1.0)))           # a wall across the way, 15 cm from the camera
    goal_bearing = 0.4                                # the goal beyond the wall, a little to the left
    heading = recovery.heading(steering.points(**{k: getattr(blocked, k) for k in (
        'ranges', 'angle_min', 'angle_increment', 'range_min', 'range_max')}), goal_bearing)
    assert math.radians(60) <= heading <= math.radians(120), math.degrees(heading)  # the wall's left end
    t = 0.0
    for step in range(40):                            # driving on: 4 s of progress, never a recovery
        assert recovery.command(t, (0.05 * step, 0.0, 0.0), 0.5, scan(), goal_bearing) is None
        t += 0.1
    here = (2.0, 0.0, 0.0)
    stuck_at = t
    while t < stuck_at + STALL_TIME - 0.05:           # jittering in place, not yet for long enough
        assert recovery.command(t, (here[0] + 0.01 * math.sin(10 * t), 0.0, 0.0), 0.02, blocked,
                                goal_bearing) is None, t
        t += 0.1
    t += 0.2
    turn = recovery.command(t, here, 0.0, blocked, goal_bearing)
    assert turn is not None and turn[0] == 0.0 and turn[1] > 0 and recovery.recoveries == 1   # on the spot, left
    yaw = heading                                     # the robot has turned
    c, s = math.cos(yaw), math.sin(yaw)               # the wall as the turned robot sees it
    beside = scan([(c * x + s * y, -s * x + c * y) for x, y in wall(0.32, (-1.0, 1.0))])
    drive = recovery.command(t + 1.0, (*here[:2], yaw), 0.0, beside, goal_bearing)
    assert drive is not None and drive[0] > 0.1, drive   # along the free heading (the wall now beside it)
    assert recovery.command(t + 1.0 + RECOVERY_DRIVE_TIME + 0.1, (here[0], 0.3, yaw), 0.3, beside,
                            goal_bearing) is None


def test_a_robot_that_cannot_turn_where_it_stands_backs_up_first(steering):
    """Stuck 3 cm from a wall, the shield refuses a turn on the spot (a front corner would come closer): the recovery
    backs up, then turns."""
    from robotsim_learning.shield import RECOVERY_BACK_TIME, STALL_TIME, StallRecovery
    recovery = StallRecovery(steering, 0.8, 2.5)
    cornered = scan(wall(0.20, (-1.0, 1.0)))
    assert steering.filter((0.0, 1.5), cornered) == (0.0, 0.0) and steering.filter((0.0, -1.5), cornered) == (0.0, 0.0)
    t = 0.0
    while t <= STALL_TIME + 0.15:
        command = recovery.command(t, (0.0, 0.0, 0.0), 0.0, cornered, 0.0)
        t += 0.1
    assert recovery.recoveries == 1 and command is not None and command[0] < 0 and command[1] == 0.0, command
    assert recovery.command(t + RECOVERY_BACK_TIME, (-0.2, 0.0, 0.0), 0.0, scan(wall(0.4, (-1.0, 1.0))), 0.0)[1] != 0


def test_in_closed_loop_the_shield_stops_a_policy_that_would_run_into_things(tmp_path):
    pytest.importorskip('onnxruntime')
    policy = tmp_path / 'charging.onnx'
    charging_policy(policy)
    spec = tmp_path / 'course.yaml'
    spec.write_text('base_world: room\nrobot: rover\nepisode_duration: 8.0\n'
                    'obstacles: {count: [3, 5], size: [0.3, 0.5], height: [0.3, 0.6], clearance: 0.45}\n'
                    'poses: {wall_margin: 0.45, goal_min_distance: 1.0, robot_radius: 0.22}\n')
    seed = secrets.randbelow(2**31)
    outcomes = {}
    for shielded in (False, True):
        out = tmp_path / ('shielded' if shielded else 'alone')
        completed = subprocess.run(
            [sys.executable, '-m', 'robotsim.cli', 'dataset', 'generate', '--randomization', str(spec), '--out',
             str(out), '--episodes', '4', '--seed', str(seed), '--driver', 'policy', '--policy', str(policy),
             '--no-cameras', '--no-progress', '--workers', '2'] + (['--shield'] if shielded else []),
            capture_output=True, text=True, timeout=600)
        assert completed.returncode == 0, completed.stderr
        manifest = json.loads((out / 'dataset.json').read_text())
        assert manifest['settings'].get('shield', False) is shielded
        outcomes[shielded] = [episode['outcome'] for episode in sorted(manifest['episodes'],
                                                                       key=lambda e: e['index'])]
    # At full speed ahead in a 6 m x 5 m room for 8 s, the robot meets a wall or an obstacle every time, or by
    # chance drives over its goal on the way (6 of 200 shielded episodes of seed 5551 did).
    assert set(outcomes[False]) <= {'collision', 'success'} and outcomes[False].count('collision') >= 2, (
        seed, outcomes)
    assert 'collision' not in outcomes[True], (seed, outcomes)
