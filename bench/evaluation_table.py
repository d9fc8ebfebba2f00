"""The closed-loop evaluation table of README.md (`make evaluate`, `make evaluate-table`).

    python bench/evaluation_table.py --run [--policy FILE] [--episodes 50] [--seed N] [--randomization SPEC]
                                     [--shield both] [--workers W] [--out out/evaluation] [--write-readme] [--block B]
    python bench/evaluation_table.py [--out out/evaluation] [--write-readme] [--block B]

With ``--run`` it records the run (machine, date, policy file sha256, the exact command) in ``OUT/run.json``,
runs ``robotsim policy eval`` (the policy alone and through its velocity shield, and the expert, straight-to-goal
and wanderer baselines on held-out scenarios, through the ROS graph) into OUT, then writes the table. Without
it, it writes the table again from an existing ``OUT/episodes.csv`` (and ``OUT/run.json``) without running any
episode. Per driver: episodes, success with its Wilson 95 % interval, collisions, timeouts, median time to goal
(successful episodes), mean final distance to the goal, the real-time factor the pacing used; then the policy
targets (for ``policy`` and ``policy+shield``: success >= 95 %, Wilson lower bound >= 90 %, collisions <= 2 %,
on 100 episodes) as met or not. ``--block`` names the marked block it replaces (``make evaluate`` writes one per
randomisation spec).
"""

from __future__ import annotations

import argparse
import csv
import json
import math
import os
import shlex
import statistics
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

from readme_block import ReadmeBlockError, replace_block

from robotsim_core.output_files import file_sha256

WORKSPACE = Path(__file__).resolve().parents[1]
README_BLOCK = 'evaluation'
DEFAULT_POLICY = 'config/policies/rover_goal_reaching.onnx'
DEFAULT_RANDOMIZATION = 'config/randomization/room_obstacles.yaml'
DEFAULT_EPISODES = 50
BASELINES = 'expert,straight,wander'
RUN_RECORD = 'run.json'
NUMERIC_COLUMNS = ('sim_time', 'final_goal_distance', 'real_time_factor', 'wall_seconds')
REQUIRED_COLUMNS = ('driver', 'seed', 'episode', 'outcome', *NUMERIC_COLUMNS)
TARGET_SUCCESS = 0.95
"""The policy targets, for the policy alone and through its shield: it reaches the goal in >= 95 % of the
held-out episodes ..."""
TARGET_LOWER_BOUND = 0.90
"""... with the Wilson 95 % interval's lower bound >= 90 % ..."""
TARGET_COLLISIONS = 0.02
"""... and collides in <= 2 % of them ..."""
ISSUE_EPISODES = 100
"""... over this many episodes."""
POLICY_ROWS = ('policy', 'policy+shield')


class TableError(ValueError):
    """Bad input: one line naming the file and field, exit 2."""


# ----------------------------------------------------------------------------- reading
def read_episodes(path: Path) -> list[dict]:
    """The rows of an episodes.csv written by ``robotsim policy eval``, numbers parsed; TableError when a
    column is missing or a value is not what the evaluation writes."""
    from robotsim_learning.evaluation import OUTCOMES
    try:
        with open(path, newline='', encoding='utf-8') as stream:
            reader = csv.DictReader(stream)
            columns = reader.fieldnames or []
            missing = [name for name in REQUIRED_COLUMNS if name not in columns]
            if missing:
                raise TableError(f'{path}: missing column(s) {", ".join(missing)} (expected the columns '
                                 f'robotsim policy eval writes, among them {", ".join(REQUIRED_COLUMNS)})')
            raw_rows = list(reader)
    except OSError as error:
        raise TableError(f'{path}: cannot read ({error.strerror}; expected the episodes.csv of robotsim policy eval)') \
            from None
    if not raw_rows:
        raise TableError(f'{path}: no episodes (expected at least one row below the header)')
    rows = []
    for line, raw in enumerate(raw_rows, start=2):
        row = dict(raw)
        for name in NUMERIC_COLUMNS:
            try:
                row[name] = float(raw[name])
            except (TypeError, ValueError):
                raise TableError(f'{path}: line {line}: {name}: expected a number, got {raw[name]!r}') from None
        if raw['outcome'] not in OUTCOMES:
            raise TableError(f'{path}: line {line}: outcome: expected one of {", ".join(OUTCOMES)}, '
                             f'got {raw["outcome"]!r}')
        if not raw['driver']:
            raise TableError(f'{path}: line {line}: driver: expected a driver name, got an empty value')
        rows.append(row)
    return rows


def read_run_record(out: Path) -> dict | None:
    path = out / RUN_RECORD
    if not path.exists():
        return None
    try:
        record = json.loads(path.read_text(encoding='utf-8'))
    except (OSError, ValueError) as error:
        raise TableError(f'{path}: not readable as JSON ({error}); expected the record `make evaluate` writes') \
            from None
    if not isinstance(record, dict):
        raise TableError(f'{path}: expected a JSON object, got {type(record).__name__}')
    return record


# ----------------------------------------------------------------------------- the table
def driver_figures(rows: list[dict]) -> list[dict]:
    """Per driver, in the order they first appear (the evaluated driver first, then its baselines)."""
    from robotsim_learning.evaluation import summary
    drivers = list(dict.fromkeys(row['driver'] for row in rows))
    figures = []
    for entry in summary(rows, drivers):
        mine = [row for row in rows if row['driver'] == entry['driver']]
        times = [row['sim_time'] for row in mine if row['outcome'] == 'success']
        distances = [row['final_goal_distance'] for row in mine if math.isfinite(row['final_goal_distance'])]
        entry['median_time_to_goal'] = statistics.median(times) if times else None
        # Every episode with a trajectory (an 'error' episode, with none, is counted in its own column).
        entry['mean_final_distance'] = statistics.fmean(distances) if distances else None
        entry['pacing'] = Counter(row['real_time_factor'] for row in mine)
        entry['wall_seconds'] = sum(row['wall_seconds'] for row in mine)
        figures.append(entry)
    return figures


def _percent(value: float) -> str:
    return f'{100 * value:.1f} %'


def _pacing(counts: Counter) -> str:
    return ', '.join(f'{rtf:g} in {count}' if len(counts) > 1 else f'{rtf:g}' for rtf, count in sorted(counts.items()))


def table(figures: list[dict]) -> list[str]:
    errors = any(entry['error'] for entry in figures)
    header = ['driver', 'episodes', 'reached the goal (Wilson 95 %)', 'collisions', 'timeouts',
              *(['errors'] if errors else []), 'median time to goal (s)', 'mean final distance (m)',
              'real-time factor (0: as fast as possible)']
    lines = ['| ' + ' | '.join(header) + ' |', '|' + '---|' * len(header)]
    for entry in figures:
        cells = [entry['driver'], str(entry['episodes']),
                 f"{entry['successes']}/{entry['episodes']} = {_percent(entry['rate'])} "
                 f"({100 * entry['low']:.1f}-{100 * entry['high']:.1f} %)",
                 str(entry['collision']), str(entry['timeout']), *([str(entry['error'])] if errors else []),
                 '-' if entry['median_time_to_goal'] is None else f"{entry['median_time_to_goal']:.1f}",
                 '-' if entry['mean_final_distance'] is None else f"{entry['mean_final_distance']:.2f}",
                 _pacing(entry['pacing'])]
        lines.append('| ' + ' | '.join(cells) + ' |')
    return lines


def targets(figures: list[dict]) -> str:
    """The policy targets, met or not, for each policy row (the network alone, and through its shield)."""
    by_driver = {entry['driver']: entry for entry in figures}
    judged = [by_driver[name] for name in POLICY_ROWS if name in by_driver]
    if not judged:
        return ''

    def verdict(ok: bool) -> str:
        return '**met**' if ok else '**not met**'

    parts = []
    for policy in judged:
        collision_rate = policy['collision'] / policy['episodes']
        parts.append(f"`{policy['driver']}`: success >= {_percent(TARGET_SUCCESS)}: "
                     f"{verdict(policy['rate'] >= TARGET_SUCCESS - 1e-12)} ({_percent(policy['rate'])}), Wilson lower "
                     f"bound >= {_percent(TARGET_LOWER_BOUND)}: {verdict(policy['low'] >= TARGET_LOWER_BOUND)} "
                     f"({_percent(policy['low'])}), collisions <= {_percent(TARGET_COLLISIONS)}: "
                     f"{verdict(collision_rate <= TARGET_COLLISIONS + 1e-12)} ({_percent(collision_rate)})")
    line = 'Policy targets: ' + '; '.join(parts) + '.'
    episodes = min(policy['episodes'] for policy in judged)
    if episodes < ISSUE_EPISODES:
        line += f' On {episodes} episodes: the targets are for {ISSUE_EPISODES}.'
    return line


def _duration(seconds: float) -> str:
    return f'{seconds:.0f} s' if seconds < 120 else f'{seconds / 60:.0f} min'


def _shown_path(path: str) -> str:
    """A path as the README shows it: relative to the workspace when inside it."""
    try:
        return str(Path(path).resolve().relative_to(WORKSPACE))
    except ValueError:
        return str(path)


def _lockstep(rows: list[dict]) -> str:
    """How the graph was paced: ', in lockstep' (the simulator waited for every decision: outcomes independent of
    the pace and the load) when every row says so."""
    found = {str(row.get('lockstep', '')) for row in rows}
    return (', in lockstep: the simulator waited for each of the driver\'s decisions, so no outcome depends on the '
            'pace or the load') if found == {'true'} else ''


def block(out: Path, rows: list[dict], record: dict | None) -> str:
    figures = driver_figures(rows)
    seeds = sorted({row['seed'] for row in rows})
    episodes = sorted({int(row['episode']) for row in rows if str(row['episode']).isdigit()})
    scenarios = f'{episodes[0]}-{episodes[-1]}' if len(episodes) > 1 else ', '.join(map(str, episodes))
    wall = sum(entry['wall_seconds'] for entry in figures)
    if record is not None:
        requested, expected = record.get('episodes'), record.get('drivers') or []
        shortfall = [f"{entry['driver']} {entry['episodes']}" for entry in figures
                     if isinstance(requested, int) and entry['episodes'] < requested]
        shortfall += [f'{driver} 0' for driver in expected if driver not in {e['driver'] for e in figures}]
        partial = (f" (**the run stopped early**: {', '.join(shortfall)} of the {requested} episodes requested)"
                   if shortfall else '')
        subject = (f"Policy `{record['policy']}` (sha256 `{str(record.get('policy_sha256'))[:12]}`)"
                   if record.get('policy') else f"Driver `{record.get('driver', '?')}`")
        took = _duration(record.get('wall_seconds', wall))
        lead = (f"Measured by `make evaluate` on {record.get('date', '?')} ({took} wall): "
                f"{record.get('machine', 'machine not recorded')}. {subject}, held-out randomised episodes "
                f"of `{record.get('randomization', '?')}`, seed {', '.join(seeds)} (scenarios {scenarios}, the same "
                f"for every driver){partial}, each through the ROS graph (`robotsim launch sim` with the driver node "
                f"as deployed{_lockstep(rows)}). Command: `{record.get('command', '?')}`.")
    else:
        from bench_sim import machine
        lead = (f"From `{_shown_path(str(out / 'episodes.csv'))}` of a `robotsim policy eval` run by hand (no "
                f"{RUN_RECORD}: machine, policy file and command not recorded), seed {', '.join(seeds)} (scenarios "
                f"{scenarios}), {_duration(wall)} of episode wall time; table written on "
                f"{time.strftime('%Y-%m-%d')} on {machine()}.")
    parts = [lead, '', *table(figures)]
    verdicts = targets(figures)
    if verdicts:
        parts += ['', verdicts]
    return '\n'.join(parts)


# ----------------------------------------------------------------------------- running
def evaluate_arguments(args) -> list[str]:
    """The ``robotsim policy eval`` arguments of this run (as recorded and as run)."""
    arguments = ['policy', 'eval', '--driver', args.driver]
    if args.driver == 'policy':
        arguments += ['--policy', _shown_path(args.policy)]
        arguments += ['--shield', args.shield]
    return arguments + ['--episodes', str(args.episodes), '--seed', str(args.seed), '--randomization',
                        _shown_path(args.randomization), '--baselines', args.baselines, '--workers', str(args.workers),
                        '--out', _shown_path(str(args.out))]


def evaluated_rows(args) -> list[str]:
    """The row labels of the evaluated driver (the policy alone and/or through its shield)."""
    if args.driver != 'policy':
        return [args.driver]
    return {'off': ['policy'], 'on': ['policy+shield'], 'both': ['policy', 'policy+shield']}[args.shield]


def run_evaluation(args) -> int:
    """Record the run, run ``robotsim policy eval`` (its progress on this terminal); its exit code."""
    if args.driver == 'policy' and not os.path.isfile(args.policy):
        raise TableError(f'--policy: {args.policy}: file not found (expected an ONNX policy file)')
    if not os.path.isfile(args.randomization):
        raise TableError(f'--randomization: {args.randomization}: file not found (expected a randomisation spec)')
    from robotsim_learning.evaluation_cli import OUTPUTS
    earlier = [name for name in OUTPUTS if (args.out / name).exists()]
    if earlier:  # robotsim policy eval refuses it too; checked here before run.json is rewritten
        raise TableError(f'--out {args.out}: holds an earlier evaluation ({", ".join(earlier)}); it is never '
                         'overwritten: remove it or choose another folder (make evaluate OUT=...)')
    from bench_sim import machine
    if args.seed is None:  # drawn now (never chosen), and not one the policy was trained on
        from robotsim_learning.evaluation_cli import drawn_seed
        args.seed = drawn_seed(args.policy if args.driver == 'policy' else '')
        print(f'seed {args.seed} (drawn at evaluation time)', flush=True)
    arguments = evaluate_arguments(args)
    record = {'date': time.strftime('%Y-%m-%d'), 'started': time.strftime('%Y-%m-%dT%H:%M:%S%z'),
              'machine': machine(), 'command': shlex.join(['robotsim', *arguments]),
              'policy': _shown_path(args.policy) if args.driver == 'policy' else None,
              'policy_sha256': file_sha256(args.policy) if args.driver == 'policy' else None,
              'randomization': _shown_path(args.randomization), 'episodes': args.episodes, 'seed': args.seed,
              'driver': args.driver,
              'drivers': list(dict.fromkeys([*evaluated_rows(args), *filter(None, map(str.strip, args.baselines.split(',')))]))}
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / RUN_RECORD).write_text(json.dumps(record, indent=2) + '\n', encoding='utf-8')
    started = time.monotonic()
    # From the workspace: the recorded command's relative paths are the ones run.
    returncode = subprocess.run([sys.executable, '-m', 'robotsim.cli', *arguments], cwd=WORKSPACE).returncode
    record.update(wall_seconds=round(time.monotonic() - started, 1), returncode=returncode)
    (args.out / RUN_RECORD).write_text(json.dumps(record, indent=2) + '\n', encoding='utf-8')
    return returncode


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument('--run', action='store_true', help='run robotsim policy eval first (else: table only)')
    parser.add_argument('--out', type=Path, default=WORKSPACE / 'out' / 'evaluation', help='the evaluation folder')
    parser.add_argument('--policy', default=str(WORKSPACE / DEFAULT_POLICY), help='--run: the ONNX policy')
    parser.add_argument('--episodes', type=int, default=DEFAULT_EPISODES, help='--run: episodes per driver')
    parser.add_argument('--seed', type=int, default=None,
                        help='--run: the scenario seed (default: drawn at evaluation time, printed and recorded)')
    parser.add_argument('--randomization', default=str(WORKSPACE / DEFAULT_RANDOMIZATION), help='--run: the spec')
    parser.add_argument('--driver', default='policy', help='--run: the driver evaluated (policy)')
    parser.add_argument('--baselines', default=BASELINES, help="--run: baselines, comma-separated ('' for none)")
    parser.add_argument('--shield', choices=['off', 'on', 'both'], default='both',
                        help="--run: the policy alone, through the node's velocity shield, or both (default)")
    parser.add_argument('--workers', type=int, default=1, help='--run: episodes in parallel (robotsim policy eval)')
    parser.add_argument('--block', default=README_BLOCK,
                        help=f'the marked block to replace (<!-- NAME:start --> in README.md or docs/; default {README_BLOCK})')
    parser.add_argument('--write-readme', action='store_true', help='replace the evaluation block of the README')
    parser.add_argument('--readme', type=Path, default=WORKSPACE / 'README.md', help='the README to write')
    args = parser.parse_args(argv)
    args.out = args.out.resolve()
    try:
        if args.run:
            returncode = run_evaluation(args)
            if returncode != 0:
                print(f'evaluation_table: robotsim policy eval exited {returncode}; the README was not changed '
                      f'(rerun the table from what finished with: python bench/evaluation_table.py --out '
                      f'{_shown_path(str(args.out))} --write-readme)', file=sys.stderr)
                return returncode
        rows = read_episodes(args.out / 'episodes.csv')
        text = block(args.out, rows, read_run_record(args.out))
        print(text)
        if args.write_readme:
            print(f'{replace_block(args.readme, args.block, text)} updated')
    except (TableError, ReadmeBlockError) as error:
        print(f'evaluation_table: error: {error}', file=sys.stderr)
        return 2
    return 0


if __name__ == '__main__':
    sys.exit(main())
