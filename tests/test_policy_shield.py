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
    touching = scan(wall(0.17 + 0.01))
    assert shield.filter((0.3, 0.0), touching) == (0.0, 0.0)
    assert shield.filter((-0.2, 0.0), touching) == (-0.2, 0.0)
    # A post 5 cm beside the left front wheel, within the margin: driving on past it at the same distance is not
    # getting away (a scan's noise would let the robot creep closer decision by decision), turning away from it is.
    post = scan([(0.12, 0.18), (0.13, 0.18), (0.14, 0.18)])
    assert shield.filter((0.3, 0.0), post) == (0.0, 0.0)
    linear, angular = steering.filter((0.3, 0.0), post)
    assert linear == 0.0 or angular < 0.0  # the steering shield may drive on turned away from it
    for each in (shield, steering):
        assert each.filter((0.0, -1.0), post) == (0.0, -1.0)


def test_the_rollout_follows_the_drives_velocity_limiter_from_the_bases_turn(shield):
    """The path of a command equals the base driven by its velocity limiter (robotsim_core.drive) from the speed and
    yaw rate it has now: the command for the reaction time, then stop (integrated finely here)."""
    from robotsim_core.drive import VelocityLimiter
    model = load_robot('rover')
    assert shield.yaw_deceleration == pytest.approx(model.drive.max_yaw_acceleration) and 3 < shield.yaw_deceleration < 5
    for (linear, angular), moving, turning in (((0.5, 1.5), 0.5, -0.5), ((0.3, -2.0), 0.3, 1.0), ((0.0, 2.0), 0.0, 0.0),
                                               ((0.8, 0.0), 0.8, 2.0)):
        limiter = VelocityLimiter(model.drive)
        limiter.linear, limiter.angular = moving, turning
        x = y = yaw = t = 0.0
        dt = 1e-4
        while t < shield.reaction_time or abs(limiter.linear) + abs(limiter.angular) > 0:
            v, w = limiter(*((linear, angular) if t < shield.reaction_time else (0.0, 0.0)), dt)
            x, y, yaw = x + v * math.cos(yaw + w * dt / 2) * dt, y + v * math.sin(yaw + w * dt / 2) * dt, yaw + w * dt
            t += dt
        end = shield.path(linear, angular, moving, turning)[-1]
        assert end == pytest.approx((x, y, yaw), abs=3e-3), (linear, angular, moving, turning)


def test_a_fast_robot_is_not_assumed_to_swerve_past_what_is_ahead_at_once(shield):
    """At 0.8 m/s toward a post 0.45 m ahead of its front, a command to slow down and turn hard away does not pass:
    the base turns only as fast as its yaw acceleration lets it, so it would reach the post first; the shield
    brakes (an instant turn on the command's arc at the current speed, as an earlier rollout assumed, would miss
    the post)."""
    post = scan([(0.17 + 0.45 + dx, 0.05 + dy) for dx in (0.0, 0.03) for dy in (-0.03, 0.0, 0.03)])
    sent = shield.filter((0.1, 1.0), post, moving=0.8)
    assert sent[0] == 0.0, sent
    # Standing still in front of it, the same command is let through (the base has time to turn).
    assert shield.filter((0.1, 1.0), post) == (0.1, 1.0)


def test_a_steering_shield_turns_a_robot_past_a_post_the_plain_one_stops_in_front_of(shield, steering):
    """A post 0.1 m ahead of the front, its edge 4 cm left of the left wheels (inside the margin of a robot driving
    straight on), and a command straight ahead: the plain shield halves the speed; the robot's own shield keeps
    the speed and turns right, and the turned arc keeps the margin from the post all the way to a stop."""
    from robotsim_learning.shield import STEER
    assert steering.steer == pytest.approx(STEER * 2.5) and steering.max_yaw_rate == 2.5
    post = [(0.17 + 0.1 + dx, 0.2 + dy) for dx in (0.0, 0.03, 0.06) for dy in (-0.03, 0.0, 0.03)]
    plain = shield.filter((0.35, 0.0), scan(post))
    assert plain[1] == 0.0 and plain[0] <= 0.5 * 0.35 + 1e-9
    turned = steering.filter((0.35, 0.0), scan(post))
    assert turned[1] < 0.0 and turned[0] == 0.35, (plain, turned)
    assert abs(turned[1]) <= steering.steer + 1e-9
    points = steering.points(**{k: getattr(scan(post), k) for k in ('ranges', 'angle_min', 'angle_increment',
                                                                        'range_min', 'range_max')})
    assert steering.clearances(points, steering.path(*turned)).min() >= steering.margin - 1e-3
    # In free space and where no turn helps (a wide wall close ahead) it does what the plain shield does.
    assert steering.filter((0.5, 0.3), scan()) == (0.5, 0.3)
    assert steering.filter((0.8, 0.0), scan(wall(0.17 + 0.05))) == (0.0, 0.0)
    assert steering.filter((0.3, 2.5), scan(post))[1] <= 2.5  # never beyond the drive's limit


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
