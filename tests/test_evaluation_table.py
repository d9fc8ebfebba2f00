"""The evaluation table of README.md (`make evaluate`, `make evaluate-table`: bench/evaluation_table.py):
written from the episodes.csv of a real `robotsim policy eval` run through the ROS graph (two short episodes of
the straight-to-goal baseline), into its README block only; rewritten from the files alone; the targets'
targets judged; a CSV missing a column or holding a bad value refused on one line."""

from __future__ import annotations

import csv
import json
import statistics
import subprocess
import sys
from pathlib import Path

import pytest

from robotsim_core.statistics import wilson_interval
from rostest_helpers import WORKSPACE

TABLE_SCRIPT = WORKSPACE / 'bench' / 'evaluation_table.py'
SEED = 6
EPISODES = 2
EPISODE_DURATION = 6.0
README_HEAD = '# A README\n\nText before the block.\n\n'
README_TAIL = '\n\nText after the block.\n'
EMPTY_README = README_HEAD + '<!-- evaluation:start -->\n<!-- evaluation:end -->' + README_TAIL


def table_script(*args: str, timeout: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(TABLE_SCRIPT), *args], capture_output=True, text=True,
                          timeout=timeout, cwd=WORKSPACE)


def block_of(readme: Path) -> str:
    text = readme.read_text()
    assert text.startswith(README_HEAD) and text.endswith(README_TAIL), text  # nothing else touched
    assert text.count('<!-- evaluation:start -->') == 1 and text.count('<!-- evaluation:end -->') == 1
    return text.split('<!-- evaluation:start -->\n', 1)[1].split('\n<!-- evaluation:end -->', 1)[0]


def table_rows(block: str) -> dict[str, list[str]]:
    lines = [line for line in block.splitlines() if line.startswith('| ')]
    header = [cell.strip() for cell in lines[0].strip('|').split('|')]
    rows = {}
    for line in lines[1:]:
        cells = [cell.strip() for cell in line.strip('|').split('|')]
        rows[cells[0]] = dict(zip(header, cells))
    return rows


@pytest.fixture(scope='module')
def straight_run(tmp_path_factory):
    """`make evaluate`'s path (--run) with the straight baseline alone on two short episodes."""
    folder = tmp_path_factory.mktemp('evaluation_table')
    spec = folder / 'short_course.yaml'
    spec.write_text(f'base_world: room\nrobot: {WORKSPACE / "tests/data/datasets/small_camera_rover.yaml"}\n'
                    f'episode_duration: {EPISODE_DURATION}\n'
                    'obstacles: {count: [2, 3], size: [0.2, 0.4], height: [0.3, 0.6], cylinder_fraction: 0.5, '
                    'clearance: 0.45}\n'
                    'poses: {wall_margin: 0.45, goal_min_distance: 1.0, robot_radius: 0.22}\n')
    readme = folder / 'README.md'
    readme.write_text(EMPTY_README)
    out = folder / 'evaluation'
    completed = table_script('--run', '--driver', 'straight', '--baselines', '', '--episodes', str(EPISODES),
                             '--seed', str(SEED), '--randomization', str(spec), '--out', str(out), '--write-readme',
                             '--readme', str(readme), timeout=900)
    assert completed.returncode == 0, completed.stdout[-3000:] + completed.stderr[-3000:]
    return out, readme, completed


def test_table_from_a_real_evaluation_run(straight_run, tmp_path):
    out, readme, _ = straight_run
    with open(out / 'episodes.csv', newline='') as stream:
        episodes = list(csv.DictReader(stream))
    assert [(row['driver'], row['episode']) for row in episodes] == [('straight', '0'), ('straight', '1')]
    record = json.loads((out / 'run.json').read_text())
    assert record['command'].startswith('robotsim policy eval --driver straight --episodes 2 --seed 6 ')
    assert record['returncode'] == 0 and record['episodes'] == EPISODES and record['machine']

    block = block_of(readme)
    assert block.startswith(f"Measured by `make evaluate` on {record['date']} (")
    assert record['machine'] in block and f"Command: `{record['command']}`" in block
    assert 'seed 6 (scenarios 0-1' in block and 'stopped early' not in block
    row = table_rows(block)['straight']
    # Every figure recomputed here from the CSV the evaluation wrote.
    successes = sum(r['outcome'] == 'success' for r in episodes)
    low, high = wilson_interval(successes, EPISODES)
    assert row['episodes'] == '2'
    assert row['reached the goal (Wilson 95 %)'] == \
        f'{successes}/2 = {50.0 * successes:.1f} % ({100 * low:.1f}-{100 * high:.1f} %)'
    assert row['collisions'] == str(sum(r['outcome'] == 'collision' for r in episodes))
    assert row['timeouts'] == str(sum(r['outcome'] == 'timeout' for r in episodes))
    times = [float(r['sim_time']) for r in episodes if r['outcome'] == 'success']
    assert row['median time to goal (s)'] == (f'{statistics.median(times):.1f}' if times else '-')
    assert row['mean final distance (m)'] == \
        f"{statistics.fmean(float(r['final_goal_distance']) for r in episodes):.2f}"
    rates = {f"{float(r['real_time_factor']):g}" for r in episodes}
    # As fast as possible, or the auto pacing's re-runs (1, 0.5, 0.25) of an episode that did not keep up.
    assert rates <= {'0', '1', '0.5', '0.25'} and all(rate in row['real-time factor (0: as fast as possible)'] for rate in rates)
    assert 'Policy targets' not in block  # no policy, no expert: nothing to judge

    # make evaluate-table: the same block again from the files alone, into a README holding an old table.
    again = tmp_path / 'README.md'
    again.write_text(EMPTY_README.replace('start -->\n', 'start -->\nan old table\n'))
    completed = table_script('--out', str(out), '--write-readme', '--readme', str(again))
    assert completed.returncode == 0, completed.stderr
    assert block_of(again) == block


def test_targets_are_judged(straight_run, tmp_path):
    """Policy 9/10 with 1 collision, through the shield 10/10, expert 10/10: each policy row judged on success
    >= 95 %, Wilson lower bound >= 90 % and collisions <= 2 %; the real run's rows relabelled, so the columns are
    robotsim policy eval's."""
    out, _, _ = straight_run
    with open(out / 'episodes.csv', newline='') as stream:
        reader = csv.DictReader(stream)
        columns, template = reader.fieldnames, next(reader)
    rows = [{**template, 'driver': driver, 'episode': str(index), 'outcome': outcome, 'sim_time': f'{index + 2}.0'}
            for driver, outcomes in (('policy', ['success'] * 9 + ['collision']), ('policy+shield', ['success'] * 10),
                                     ('expert', ['success'] * 10))
            for index, outcome in enumerate(outcomes)]
    folder = tmp_path / 'judged'
    folder.mkdir()
    with open(folder / 'episodes.csv', 'w', newline='') as stream:
        writer = csv.DictWriter(stream, fieldnames=columns)
        writer.writeheader()
        writer.writerows(rows)
    (folder / 'run.json').write_text((out / 'run.json').read_text())
    readme = tmp_path / 'README.md'
    readme.write_text(EMPTY_README)
    completed = table_script('--out', str(folder), '--write-readme', '--readme', str(readme))
    assert completed.returncode == 0, completed.stderr
    block = block_of(readme)
    assert list(table_rows(block)) == ['policy', 'policy+shield', 'expert']  # the evaluated rows first, as in the CSV
    assert table_rows(block)['policy']['median time to goal (s)'] == '6.0'  # 2 ... 10 s
    # 9/10: Wilson 59.6-98.2 %; 10/10: 72.2-100 %.
    assert ('Policy targets: `policy`: success >= 95.0 %: **not met** (90.0 %), Wilson lower bound >= 90.0 %: '
            '**not met** (59.6 %), collisions <= 2.0 %: **not met** (10.0 %); `policy+shield`: success >= 95.0 %: '
            '**met** (100.0 %), Wilson lower bound >= 90.0 %: **not met** (72.2 %), collisions <= 2.0 %: **met** '
            '(0.0 %). On 10 episodes: the targets are for 100.') in block
    # The record asked for 2 episodes of straight: the table says which drivers fell short.
    assert 'the run stopped early' in block and 'straight 0 of the 2 episodes requested' in block


@pytest.mark.parametrize('case', ['missing column', 'bad number', 'unknown outcome', 'no rows', 'no file'])
def test_bad_csv_is_refused_on_one_line(case, straight_run, tmp_path):
    out, _, _ = straight_run
    with open(out / 'episodes.csv', newline='') as stream:
        reader = csv.DictReader(stream)
        columns, rows = list(reader.fieldnames), list(reader)
    if case == 'missing column':
        columns.remove('final_goal_distance')
    elif case == 'bad number':
        rows[1]['sim_time'] = 'fast'
    elif case == 'unknown outcome':
        rows[0]['outcome'] = 'reached'
    elif case == 'no rows':
        rows = []
    folder = tmp_path / 'evaluation'
    folder.mkdir()
    if case != 'no file':
        with open(folder / 'episodes.csv', 'w', newline='') as stream:
            writer = csv.DictWriter(stream, fieldnames=columns, extrasaction='ignore')
            writer.writeheader()
            writer.writerows(rows)
    readme = tmp_path / 'README.md'
    readme.write_text(EMPTY_README)
    completed = table_script('--out', str(folder), '--write-readme', '--readme', str(readme))
    path = folder / 'episodes.csv'
    expected = {'missing column': f'{path}: missing column(s) final_goal_distance (expected the columns',
                'bad number': f"{path}: line 3: sim_time: expected a number, got 'fast'",
                'unknown outcome': f"{path}: line 2: outcome: expected one of success, collision, timeout, error, "
                                   "got 'reached'",
                'no rows': f'{path}: no episodes (expected at least one row below the header)',
                'no file': f'{path}: cannot read (No such file or directory; expected the episodes.csv'}[case]
    assert completed.returncode == 2, completed.stdout + completed.stderr
    assert completed.stderr.startswith(f'evaluation_table: error: {expected}'), completed.stderr
    assert len(completed.stderr.strip().splitlines()) == 1, completed.stderr
    assert readme.read_text() == EMPTY_README  # the README is left alone
