"""Closed-loop evaluation (`robotsim policy eval`): a policy trained on a tiny expert dataset and the expert and
straight-to-goal baselines, each episode through the ROS graph (bare launcher, simulator node, the driver
node as deployed); the per-episode CSV, the report PNG, success rates with Wilson intervals; the outcome
and clearance geometry; bad input refused on one line."""

from __future__ import annotations

import csv
import math
import os
import re
import subprocess
import sys

import numpy as np
import pytest

from robotsim_core.description import load_robot
from robotsim_learning.evaluation import (CSV_COLUMNS, EpisodeTracker, WorldObstacles, footprint, placed,
                                          wilson_interval)
from robotsim_sim.scene import load_world
from rostest_helpers import WORKSPACE, CpuHog, _die_with_parent

DATASETS = WORKSPACE / 'tests' / 'data' / 'datasets'
TRAINING_SEED = 5
EVALUATION_SEED = 6
EPISODE_DURATION = 6.0


def robotsim(*args: str, timeout: float = 900) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, '-m', 'robotsim.cli', *args], capture_output=True, text=True,
                          timeout=timeout)


@pytest.fixture(scope='module')
def trained_policy(tmp_path_factory):
    pytest.importorskip('jax', reason='training needs requirements/train.txt (Python 3.11+)')
    folder = tmp_path_factory.mktemp('policy')
    dataset, policy = folder / 'dataset', folder / 'policy.onnx'
    completed = robotsim('dataset', 'generate', '--randomization', str(DATASETS / 'expert_course.yaml'), '--out',
                         str(dataset), '--episodes', '3', '--seed', str(TRAINING_SEED), '--driver', 'expert',
                         '--workers', '2', '--no-progress')
    assert completed.returncode == 0, completed.stderr
    completed = robotsim('policy', 'train', str(dataset), '--out', str(policy), '--epochs', '15', '--hidden', '32,32',
                         '--seed', '1')
    assert completed.returncode == 0, completed.stderr
    return policy


@pytest.fixture(scope='module')
def short_course(tmp_path_factory):
    """The policy tests' course with short episodes and nearer goals (the test stays quick)."""
    spec = tmp_path_factory.mktemp('spec') / 'short_course.yaml'
    spec.write_text(f'base_world: room\nrobot: {DATASETS / "small_camera_rover.yaml"}\n'
                    f'episode_duration: {EPISODE_DURATION}\n'
                    'obstacles: {count: [2, 3], size: [0.2, 0.4], height: [0.3, 0.6], cylinder_fraction: 0.5, '
                    'clearance: 0.45}\n'
                    'poses: {wall_margin: 0.45, goal_min_distance: 1.0, robot_radius: 0.22}\n')
    return spec


def test_wilson_interval_is_the_score_interval():
    z = 1.959963984540054
    # Closed forms at the edges: 0 of n has upper bound z^2 / (n + z^2); n of n has lower bound n / (n + z^2).
    assert wilson_interval(0, 10) == pytest.approx((0.0, z * z / (10 + z * z)), abs=1e-12)
    assert wilson_interval(10, 10) == pytest.approx((10 / (10 + z * z), 1.0), abs=1e-12)
    assert wilson_interval(8, 10) == pytest.approx((0.4902, 0.9433), abs=5e-5)  # the textbook example
    # Otherwise: the two p with |k/n - p| = z sqrt(p (1 - p) / n), the roots of a quadratic in p.
    for successes, trials in ((45, 50), (1, 3), (17, 40)):
        p = successes / trials
        a, b, c = 1 + z * z / trials, -(2 * p + z * z / trials), p * p
        roots = sorted(np.roots([a, b, c]).real)
        assert wilson_interval(successes, trials) == pytest.approx(tuple(roots), abs=1e-12)
    assert wilson_interval(0, 0) == (0.0, 1.0)


def test_outcome_and_clearance_come_from_the_world_geometry(tmp_path):
    world_path = tmp_path / 'world.yaml'
    world_path.write_text('name: geometry\nfloor: {size: [6, 6]}\n'
                          'walls: [{start: [-2, -1], end: [2, -1], thickness: 0.1}]\n'
                          'boxes: [{name: crate, position: [0, 1.5, 0.2], size: [0.4, 0.4, 0.4]},\n'
                          '        {name: kerb, position: [0, 0.5, 0.0075], size: [0.1, 1.0, 0.015]}]\n'
                          'cylinders: [{name: pillar, position: [1, 0, 0.3], radius: 0.2, height: 0.6}]\n')
    obstacles = WorldObstacles(load_world(str(world_path)))
    square = np.array([[-0.1, -0.1], [0.1, -0.1], [0.1, 0.1], [-0.1, 0.1]])
    # Nearest: the pillar (1 - 0.2 - 0.1); the wall's inner face is 0.85 away, the crate 1.2; the kerb is driven over.
    assert obstacles.clearance(placed(square, (0, 0, 0))) == pytest.approx(0.7)
    assert obstacles.clearance(placed(square, (0, 0, math.pi / 4))) == pytest.approx(0.8 - math.sqrt(0.02))
    assert obstacles.clearance(placed(square, (0, -0.8, 0))) == pytest.approx(0.05)   # the wall
    assert obstacles.clearance(placed(square, (0, -0.9, 0))) == 0.0                  # into the wall
    assert obstacles.clearance(placed(square, (0.05, 1.25, 0.3))) == 0.0             # a corner into the crate

    into_pillar = EpisodeTracker((0.0, 0.5), 0.3, 6.0, obstacles, square)
    assert into_pillar.update(0.0, (0.0, 0.0, 0.0)) is None
    assert into_pillar.update(0.1, (0.65, 0.0, 0.0)) is None
    assert into_pillar.update(0.2, (0.7, 0.0, 0.0)) == 'collision'
    assert into_pillar.update(0.3, (0.0, 0.5, 0.0)) == 'collision'  # decided: later poses do not count
    assert (into_pillar.path_length, into_pillar.min_clearance, into_pillar.collisions, into_pillar.end_time) == \
        pytest.approx((0.7, 0.0, 1, 0.2))
    to_goal = EpisodeTracker((0.0, 0.5), 0.3, 6.0, obstacles, square)
    assert [to_goal.update(t, (0.0, y, 0.0)) for t, y in ((0.0, 0.0), (1.0, 0.19), (2.0, 0.21))] == \
        [None, None, 'success']
    waiting = EpisodeTracker((0.0, 0.5), 0.3, 6.0, obstacles, square)
    assert [waiting.update(t, (0.0, 0.0, 0.0)) for t in (0.0, 5.98, 6.0)] == [None, None, 'timeout']
    # The rover's footprint: its base, four wheels (y +-0.115 +- 0.015) and the camera (x 0.155 + 0.015)
    # sticking out in front; the arm, lidar and fingers lie inside the base's rectangle.
    shapes = footprint(load_robot('rover'))
    assert shapes.shape == (6, 4, 2)
    assert shapes.reshape(-1, 2).min(axis=0) == pytest.approx([-0.15, -0.13])
    assert shapes.reshape(-1, 2).max(axis=0) == pytest.approx([0.17, 0.13])
    # Its bounding rectangle's front-left corner on the pillar: there is no part of the rover there; the
    # nearest is the front-left wheel's corner.
    pose = (1 - 0.2 * math.sqrt(0.5) - 0.17, -0.2 * math.sqrt(0.5) - 0.13, 0.0)
    bounding = np.array([[-0.15, -0.13], [0.17, -0.13], [0.17, 0.13], [-0.15, 0.13]])
    assert obstacles.clearance(placed(bounding, pose)) < 1e-9
    assert obstacles.clearance(placed(shapes, pose)) == \
        pytest.approx(math.hypot(1 - (pose[0] + 0.15), pose[1] + 0.13) - 0.2, abs=1e-9)


def _running_with(text: str) -> list[str]:
    """Command lines of live processes that mention ``text`` (the launches of this evaluation)."""
    found = []
    for pid in filter(str.isdigit, os.listdir('/proc')):
        try:
            with open(f'/proc/{pid}/cmdline', 'rb') as stream:
                line = stream.read().replace(b'\0', b' ').decode(errors='replace')
        except OSError:
            continue
        if text in line and int(pid) != os.getpid():
            found.append(line)
    return found


def test_evaluate_runs_the_policy_and_baselines_through_the_ros_graph(trained_policy, short_course, tmp_path):
    from robotsim_learning.randomization import Randomizer, load_randomization
    out = tmp_path / 'evaluation'
    completed = robotsim('policy', 'eval', '--driver', 'policy', '--policy', str(trained_policy), '--episodes', '2',
                         '--seed', str(EVALUATION_SEED), '--randomization', str(short_course), '--out', str(out),
                         '--baselines', 'expert,straight', '--shield', 'off', '--no-progress')
    assert completed.returncode == 0, completed.stdout + completed.stderr
    assert not _running_with(str(out)), 'a launch outlived the evaluation'
    with open(out / 'episodes.csv', newline='') as stream:
        reader = csv.DictReader(stream)
        assert tuple(reader.fieldnames) == CSV_COLUMNS
        rows = list(reader)
    assert [(r['driver'], r['episode']) for r in rows] == \
        [(d, e) for d in ('policy', 'expert', 'straight') for e in ('0', '1')]
    randomizer = Randomizer(load_randomization(str(short_course)), EVALUATION_SEED)
    for row in rows:
        folder = out / 'episodes' / f"{row['driver']}-{row['episode']}"
        # Episode i is scenario i of the evaluation seed, for every driver.
        assert (folder / 'world.yaml').read_text() == randomizer.scenario(int(row['episode'])).world_yaml
        assert (folder / 'launch.log').is_file() and (folder / 'trajectory.csv').is_file()
        assert row['seed'] == str(EVALUATION_SEED)
        assert row['outcome'] in ('success', 'collision', 'timeout'), (row, (folder / 'launch.log').read_text())
        assert 0 < float(row['sim_time']) <= EPISODE_DURATION + 0.05
        assert (row['outcome'] == 'collision') == (row['collisions'] == '1') and row['collisions'] in ('0', '1')
        assert float(row['min_clearance']) >= 0 and float(row['path_length']) >= 0
        # In lockstep (the default) as fast as possible: the simulator waited for every decision of the driver node.
        assert row['real_time_factor'] == '0.0000' and row['lockstep'] == 'true', row
        assert row['command_rate'] == row['nominal_command_rate'] and row['stale_input_ticks'] == '0', row
    for driver in ('policy', 'expert', 'straight'):
        mine = [r for r in rows if r['driver'] == driver]
        assert max(float(r['path_length']) for r in mine) > 0.05, mine  # it drove the robot
        successes = sum(r['outcome'] == 'success' for r in mine)
        low, high = wilson_interval(successes, 2)
        line = re.search(rf'^{driver}\s+(\d+)/2 reached the goal: ([\d.]+) % \(Wilson 95 %: ([\d.]+)-([\d.]+) %\)',
                         completed.stdout, re.M)
        assert line, completed.stdout
        assert (int(line[1]), float(line[2]), float(line[3]), float(line[4])) == \
            (successes, round(50.0 * successes, 1), round(100 * low, 1), round(100 * high, 1))
    from matplotlib.image import imread
    image = imread(str(out / 'report.png'))
    assert image.shape[0] > 400 and image.shape[1] > 400
    assert image[..., :3].std() > 0.05 and (image[..., :3] < 0.5).mean() > 0.01  # drawn, not blank


def test_the_report_draws_every_episode_with_its_outcome_goal_and_collisions(tmp_path):
    """23 episodes of two drivers: 46 maps (three rows of ten per driver), a collision cross on each collision."""
    from matplotlib.image import imread

    from robotsim_learning.evaluation import REPORT_COLUMNS, write_report
    world_path = tmp_path / 'world.yaml'
    world_path.write_text('name: report\nfloor: {size: [6, 6]}\n'
                          'boxes: [{name: crate, position: [1, 1, 0.2], size: [0.4, 0.4, 0.4]}]\n')
    obstacles = WorldObstacles(load_world(str(world_path)))
    outcomes = ['success', 'collision', 'timeout']
    episodes, rows = {}, []
    for driver in ('policy', 'expert'):
        for index in range(23):
            outcome = outcomes[index % 3] if driver == 'policy' else 'success'
            t = np.linspace(0, 1, 20)
            trajectory = np.stack([t, -2 + 3 * t, -2 + 3 * t * t, np.zeros_like(t)], axis=1)
            episodes[driver, index] = (obstacles, (-2.0, -2.0, 0.5), (1.0, 1.0, 0.0), trajectory, outcome)
            rows.append({'driver': driver, 'episode': index, 'outcome': outcome})
    path = tmp_path / 'report.png'
    drawn = write_report(str(path), rows, ['policy', 'expert'], episodes, 0.3,
                         'policy p.onnx on spec.yaml, seed 6, episodes 0-22 (6 s each), 2026-12-03')
    assert drawn == {'panels': 46, 'collision_marks': 8}
    image = imread(str(path))
    assert REPORT_COLUMNS == 10 and image.shape[1] >= 1400 and image.shape[0] > 1000
    red = (image[..., 0] > 0.7) & (image[..., 1] < 0.3) & (image[..., 2] < 0.3)
    assert red.sum() > 200  # the collision paths, crosses and bars are drawn in red


def test_the_report_draws_a_driver_that_reached_every_goal(tmp_path):
    """100 of 100 reached, 0 collisions: Wilson bounds that floating point puts a hair past the rate (0 - 1e-17) are
    drawn as zero-length error bars (matplotlib refuses negative ones; a 300-episode run once ended there)."""
    from robotsim_learning.evaluation import write_report
    world_path = tmp_path / 'world.yaml'
    world_path.write_text('name: report\nfloor: {size: [6, 6]}\n')
    obstacles = WorldObstacles(load_world(str(world_path)))
    t = np.linspace(0, 1, 5)
    trajectory = np.stack([t, t, t, np.zeros_like(t)], axis=1)
    rows = [{'driver': 'expert', 'episode': index, 'outcome': 'success'} for index in range(100)]
    shown = {('expert', index): (obstacles, (0.0, 0.0, 0.0), (1.0, 1.0, 0.0), trajectory, 'success')
             for index in range(100)}
    drawn = write_report(str(tmp_path / 'report.png'), rows, ['expert'], shown, 0.3, 'expert on spec.yaml, seed 1')
    assert drawn['panels'] == 100 and (tmp_path / 'report.png').stat().st_size > 10_000


def test_a_driver_waiting_for_or_stopped_on_stale_inputs_did_not_keep_up(tmp_path):
    """The driver node's tick counts at exit (tests/test_policy_node.py sees the node print them) decide, with the
    /cmd_vel rate, whether an episode was run fairly: zero commands sent for stale or missing inputs count as
    /cmd_vel, not as decisions."""
    from robotsim_learning.ros.evaluation_graph import GraphEpisode, driver_ticks
    log = tmp_path / 'launch.log'
    log.write_text('[policy] [INFO] [1.0] [policy]: waiting for the first scan message\n'
                   '[policy] policy: ticks 60: decided 55, stale input 0, waiting for inputs 2, standing still 3\n')
    ticks = driver_ticks(str(log))
    assert ticks == {'decided': 55, 'stale': 0, 'waiting': 2, 'still': 3}
    assert driver_ticks(str(tmp_path / 'missing.log')) is None

    def episode(rate: float, **changed) -> GraphEpisode:
        return GraphEpisode(None, None, 'success', rate, 10.0, 1.0, str(log), None if changed.get('none') else
                            {**ticks, **{k: v for k, v in changed.items() if k != 'none'}})
    assert episode(9.5).kept_up
    assert not episode(8.0).kept_up  # the node's timer fell behind sim time
    assert not episode(9.5, stale=1).kept_up
    assert not episode(9.5, waiting=57).kept_up  # a whole episode without its scan: zeros at full rate
    assert not episode(9.5, none=True).kept_up   # not reported (killed): not known to have kept up


def test_under_load_as_fast_as_possible_every_kept_episode_ran_on_fresh_inputs(trained_policy, short_course,
                                                                                tmp_path):
    """Auto pacing beside a CPU hog: an episode whose driver waited for its inputs, found them stale or fell behind
    is run again slower, so every row kept either kept up or says it did not at the slowest pace."""
    out = tmp_path / 'evaluation'
    with CpuHog(900):
        completed = robotsim('policy', 'eval', '--driver', 'policy', '--policy', str(trained_policy), '--episodes',
                             '2', '--seed', str(EVALUATION_SEED), '--randomization', str(short_course), '--out',
                             str(out), '--baselines', '', '--shield', 'off', '--no-lockstep', '--no-progress')
    assert completed.returncode == 0, completed.stdout + completed.stderr
    with open(out / 'episodes.csv', newline='') as stream:
        rows = list(csv.DictReader(stream))
    assert len(rows) == 2 and all(row['lockstep'] == 'false' for row in rows)
    for row in rows:
        fair = (int(row['stale_input_ticks']) == 0 and int(row['waiting_ticks']) <= 3
                and float(row['command_rate']) >= 0.9 * float(row['nominal_command_rate']))
        assert fair or (row['real_time_factor'] == '0.2500' and 'did not keep up' in completed.stderr), \
            (row, completed.stderr)


def _rows(out) -> list[dict]:
    """An evaluation's rows without what depends on the machine (wall time)."""
    with open(out / 'episodes.csv', newline='') as stream:
        return [{k: v for k, v in row.items() if k != 'wall_seconds'} for row in csv.DictReader(stream)]


def test_rows_are_the_same_for_one_and_two_workers_each_on_its_own_ros_domain(short_course, tmp_path):
    """Episodes spread over workers (local processes or Ray actors, each with a ROS domain of its own): the same rows,
    in the same order, as one worker running them all: in lockstep an episode through the graph repeats, outcome, end time, path
    length and clearance alike, whichever worker ran it and whatever ran beside it."""
    rows, domains = {}, {}
    runs = [(1, 'local'), (2, 'local'), (2, 'ray')]
    for workers, executor in runs:
        out = tmp_path / f'workers-{workers}-{executor}'
        completed = robotsim('policy', 'eval', '--driver', 'expert', '--baselines', 'straight', '--episodes', '2',
                             '--seed', str(EVALUATION_SEED), '--randomization', str(short_course), '--out', str(out),
                             '--workers', str(workers), '--executor', executor, '--no-progress')
        assert completed.returncode == 0, completed.stdout + completed.stderr
        rows[workers, executor] = found = _rows(out)
        assert all(r['outcome'] in ('success', 'collision', 'timeout') and r['lost_poses'] == '0' for r in found), found
        domains[workers, executor] = {re.search(r'ROS_DOMAIN_ID=(\d+)', log.read_text())[1]
                                      for log in (out / 'episodes').glob('*/launch.log')}
    assert [(r['driver'], r['episode']) for r in rows[1, 'local']] == \
        [(d, e) for d in ('expert', 'straight') for e in ('0', '1')]
    assert all(found == rows[1, 'local'] for found in rows.values()), rows
    assert domains[1, 'local'] == {os.environ['ROS_DOMAIN_ID']}
    for run in runs[1:]:
        assert len(domains[run]) == 2 and os.environ['ROS_DOMAIN_ID'] in domains[run], domains


def test_ctrl_c_to_an_evaluation_s_main_process_ends_its_workers_and_their_launches(short_course, tmp_path):
    """SIGINT to `robotsim policy eval --workers 2`'s main process alone while both workers have a launch running:
    it exits 130 at once and nothing of the evaluation outlives it. Before, it waited for its workers to run their
    episodes (and the one queued behind them) to the end."""
    import signal
    import time
    out = tmp_path / 'interrupted'
    process = subprocess.Popen([sys.executable, '-m', 'robotsim.cli', 'policy', 'eval', '--driver', 'expert',
                                '--baselines', '', '--episodes', '6', '--seed', str(EVALUATION_SEED),
                                '--randomization', str(short_course), '--out', str(out), '--workers', '2',
                                '--no-progress'], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                               preexec_fn=_die_with_parent)  # Ctrl-C not ignored, whatever started the tests
    try:
        deadline = time.monotonic() + 300
        while time.monotonic() < deadline and process.poll() is None and \
                len(list((out / 'episodes').glob('*/launch.log'))) < 2:
            time.sleep(0.05)
        assert process.poll() is None, process.stdout.read()
        process.send_signal(signal.SIGINT)
        output = process.communicate(timeout=120)[0]  # a bound, not a speed: each launch stops within seconds
    finally:
        process.kill()
        process.wait()
    assert process.returncode == 130 and 'interrupted' in output, output
    deadline = time.monotonic() + 30  # the kernel's SIGKILL to a launch whose worker ended is prompt; its reaping is not
    while time.monotonic() < deadline and _running_with(str(out)):
        time.sleep(0.1)
    assert not _running_with(str(out)), 'a launch outlived the interrupted evaluation'
    started = sorted(p.parent.name for p in (out / 'episodes').glob('*/launch.log'))
    assert len(started) <= 3, started  # the two running (and a third a worker may have been starting), no more
    # The workers ended mid-episode: none ran its episode to the end (a worker writes trajectory.csv then).
    assert not list((out / 'episodes').glob('*/trajectory.csv')), 'a worker went on with its episode'


LOAD_SEED = 913_577
"""Held-out scenarios of the shipped policy's course for the load test (no training dataset of it used this seed)."""


def test_an_episode_ends_the_same_at_any_pace_on_a_loaded_machine(tmp_path):
    """The shipped policy (through its shield, as deployed) on the same two held-out episodes, in lockstep: as fast as
    possible beside a CPU hog, and at real time on the machine as it is. Each episode is the same run: the same
    outcome at the same sim time, the same trajectory to the last digit of its CSV, so neither the pace nor the load
    decided anything."""
    policy = WORKSPACE / 'config' / 'policies' / 'rover_goal_reaching.onnx'
    spec = WORKSPACE / 'config' / 'randomization' / 'room_obstacles.yaml'
    rows, trajectories = {}, {}
    for pace in ('0', '1'):
        out = tmp_path / f'pace-{pace}'
        arguments = ('policy', 'eval', '--driver', 'policy', '--policy', str(policy), '--episodes', '2', '--seed',
                     str(LOAD_SEED), '--randomization', str(spec), '--out', str(out), '--baselines', '', '--shield',
                     'on', '--real-time-factor', pace, '--no-progress')
        if pace == '0':
            with CpuHog(1200):
                completed = robotsim(*arguments)
        else:
            completed = robotsim(*arguments)
        assert completed.returncode == 0, completed.stdout + completed.stderr
        rows[pace] = [{k: v for k, v in row.items() if k != 'real_time_factor'} for row in _rows(out)]
        trajectories[pace] = [(out / 'episodes' / f'policy+shield-{i}' / 'trajectory.csv').read_text() for i in (0, 1)]
    assert rows['0'] == rows['1'], rows
    assert trajectories['0'] == trajectories['1']
    assert all(row['outcome'] in ('success', 'collision', 'timeout') and row['lost_poses'] == '0' for row in rows['1'])


FOREIGN_CLOCK = """
import rclpy
from rosgraph_msgs.msg import Clock
rclpy.init()
node = rclpy.create_node('foreign_clock')
publisher = node.create_publisher(Clock, '/clock', 10)
node.create_timer(0.1, lambda: publisher.publish(Clock()))
rclpy.spin(node)
"""


def test_another_simulator_on_the_evaluation_s_ros_domain_stops_it_with_one_line(short_course, tmp_path):
    """Two graphs on one ROS domain read each other's ground truth and clock (seen: two evaluations started with the
    same ROS_DOMAIN_ID gave goals "reached" at 0.002 s and paths of 541 m, with no word): an episode that finds a
    /clock publisher besides its simulator's stops the evaluation, naming the domain."""
    foreign = subprocess.Popen([sys.executable, '-c', FOREIGN_CLOCK], preexec_fn=_die_with_parent)
    try:
        completed = robotsim('policy', 'eval', '--driver', 'straight', '--baselines', '', '--episodes', '1', '--seed',
                             '3', '--randomization', str(short_course), '--out', str(tmp_path / 'out'), '--no-progress')
    finally:
        foreign.kill()
        foreign.wait()
    assert completed.returncode == 2, completed.stdout + completed.stderr
    line = completed.stderr.strip()
    assert '\n' not in line and 'Traceback' not in line, line
    assert line.startswith(f'robotsim policy eval: error: ROS domain {os.environ["ROS_DOMAIN_ID"]}: 2 publishers of '
                           '/clock'), line


@pytest.mark.parametrize('case', ['missing policy', 'training seed', 'unknown baseline', 'ray address'])
def test_bad_input_is_one_line(case, trained_policy, short_course, tmp_path):
    policy = str(tmp_path / 'nowhere.onnx') if case == 'missing policy' else str(trained_policy)
    seed = TRAINING_SEED if case == 'training seed' else EVALUATION_SEED
    baselines = 'expert,teleop' if case == 'unknown baseline' else 'expert'
    extra = ['--ray-address', '127.0.0.1:6379'] if case == 'ray address' else []
    completed = robotsim('policy', 'eval', '--policy', policy, '--episodes', '1', '--seed', str(seed), '--randomization',
                         str(short_course), '--out', str(tmp_path / 'out'), '--baselines', baselines, *extra,
                         timeout=120)
    expected = {'missing policy': f'robotsim policy eval: error: --policy: {policy}: policy file not found',
                'training seed': f'robotsim policy eval: error: --seed {TRAINING_SEED}: {policy} was trained on ',
                'unknown baseline': "robotsim policy eval: error: --baselines: expected names from wander, expert, "
                                    "policy, straight, got 'teleop'",
                'ray address': 'robotsim policy eval: error: --ray-address: applies only with --executor ray (got '
                               '--executor local)'}[case]
    assert completed.returncode == 2, completed.stderr
    assert completed.stderr.startswith(expected) and len(completed.stderr.strip().splitlines()) == 1, completed.stderr
    assert not (tmp_path / 'out').exists()  # refused before anything ran


def test_geometric_collisions_agree_with_the_physics_and_straight_drives_on_the_fast_path(short_course, tmp_path):
    """The straight baseline as an episode driver (fast path, MuJoCo contacts decide collisions), its
    ground truth replayed into the evaluation's tracker: the same outcomes at the same times."""
    from rosbags.highlevel import AnyReader

    from robotsim_learning.ros.episode import run_episode
    from robotsim_learning.randomization import Randomizer, load_randomization
    from robotsim_learning.observation import yaw_of
    spec = load_randomization(str(short_course))
    randomizer = Randomizer(spec, EVALUATION_SEED)
    outcomes = []
    for index in range(3):
        folder = tmp_path / f'episode-{index}'
        result = run_episode(randomizer, index, str(folder), 'straight', cameras=False)
        scenario = randomizer.scenario(index)
        tracker = EpisodeTracker(tuple(scenario.goal[:2]), spec.goal_tolerance, spec.episode_duration,
                                 WorldObstacles(load_world(str(folder / 'world.yaml'))),
                                 footprint(load_robot(str(folder / 'robot.yaml'))))
        with AnyReader([folder]) as reader:
            connections = [c for c in reader.connections if c.topic == '/sim/ground_truth']
            for connection, stamp, raw in reader.messages(connections=connections):
                pose = reader.deserialize(raw, connection.msgtype).pose.pose
                if tracker.update(stamp * 1e-9, (pose.position.x, pose.position.y, yaw_of(pose.orientation))):
                    break
        outcomes.append(result.outcome)
        assert result.travel > 0.3, result  # the baseline drove
        assert tracker.outcome == result.outcome, (index, tracker.outcome, result)
        assert tracker.end_time == pytest.approx(result.duration, abs=0.05), (index, tracker.end_time, result)
    assert 'collision' in outcomes, outcomes  # the comparison covered a contact


def test_straight_is_a_driver_of_both_worlds():
    from robotsim.bringup import graph_for
    for mode in ('sim', 'real'):
        driver = graph_for(mode, {'driver': 'straight', 'goal': '1.5,-0.5'})[-1]
        assert (driver.package, driver.executable, driver.parameters['goal']) == \
            ('robotsim_learning', 'straight', [1.5, -0.5])


STALL_SCRIPT = r'''
import json, os, re, signal, sys, threading, time
from robotsim_learning import evaluation_cli
from robotsim_learning.ros import evaluation_graph
evaluation_graph.STALL_TIMEOUT = 15.0
out, spec = sys.argv[1], sys.argv[2]
log = os.path.join(out, 'episodes', 'expert-0', 'launch.log')
frozen = []
resume = evaluation_graph.GraphObserver.resume

def resume_then_freeze_the_driver(self, alive):
    # The first run: once the simulator runs, its expert stops (as a hung node) for 40 s; the simulator waits for it.
    resumed = resume(self, alive)
    if not frozen:
        pid = int(re.search(r'started expert \(robotsim_learning/expert, pid (\d+)\)', open(log).read()).group(1))
        os.kill(pid, signal.SIGSTOP)
        frozen.append(pid)
        threading.Timer(40.0, os.kill, (pid, signal.SIGCONT)).start()
    return resumed

evaluation_graph.GraphObserver.resume = resume_then_freeze_the_driver
task = evaluation_cli.EpisodeTask('expert', 0, 6, spec, out, None, '', False, True)
result = evaluation_cli.evaluate_episode(task)
print(json.dumps({'row': result['row'], 'lines': result['lines'], 'frozen': frozen}))
'''


def test_a_stalled_episode_is_an_error_and_runs_again(short_course, tmp_path):
    """In lockstep a driver that stops answering holds sim time still: after STALL_TIMEOUT wall seconds without a
    pose the run is an error (not a 17-minute wait for the backstop), and the episode runs again, deciding the
    outcome the first run would have."""
    completed = subprocess.run([sys.executable, '-c', STALL_SCRIPT, str(tmp_path / 'out'), str(short_course)],
                               capture_output=True, text=True, timeout=900)
    assert completed.returncode == 0, completed.stderr[-3000:]
    result = __import__('json').loads(completed.stdout.strip().splitlines()[-1])
    assert len(result['frozen']) == 1, result
    assert any('expert: episode 0 again: the bringup stopped early or stalled ([evaluation] stalled: no ground-truth '
               'pose for 15 wall seconds)' in line for line in result['lines']), result
    assert result['row']['outcome'] in ('success', 'collision', 'timeout'), result
