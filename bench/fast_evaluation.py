"""The policy's held-out evaluation on the fast path (`make evaluate-fast`): the same scenarios as
``robotsim policy eval`` (episode i of seed S is scenario i of ``Randomizer(SPEC, S)``), each episode run in-process
by ``robotsim dataset generate`` (the simulation stepped in lockstep with the driver, MuJoCo's contacts decide a
collision), so outcomes do not depend on the machine and the figures come in minutes, not hours.

    python bench/fast_evaluation.py [--policy FILE] [--episodes 100] [--seed N] [--workers 2]
                                    [--courses room_obstacles,room_obstacles_hard] [--out out/fast-evaluation]
                                    [--write-readme]

Per course: the policy alone, the policy through its velocity shield (``--shield``) and the expert, on one seed
drawn at evaluation time (never a training seed of the policy) unless ``--seed`` is given; success, collisions and
timeouts with Wilson 95 % intervals, and the policy targets (success >= 95 %, Wilson lower bound >= 90 %,
collisions <= 2 %). With ``--write-readme`` the table replaces the ``fast-evaluation`` block of docs/policies.md.
"""

from __future__ import annotations

import argparse
import json
import shlex
import subprocess
import sys
import time
from pathlib import Path

from readme_block import ReadmeBlockError, replace_block

WORKSPACE = Path(__file__).resolve().parents[1]
POLICY = WORKSPACE / 'config' / 'policies' / 'rover_goal_reaching.onnx'
COURSES = 'room_obstacles,room_obstacles_hard'
RUNS = (('policy', ['--driver', 'policy', '--policy', '{policy}']),
        ('policy+shield', ['--driver', 'policy', '--policy', '{policy}', '--shield']),
        ('expert', ['--driver', 'expert']))
"""Row label and the dataset generate arguments that run it."""
BLOCK = 'fast-evaluation'


def outcomes(folder: Path) -> list[str]:
    manifest = json.loads((folder / 'dataset.json').read_text(encoding='utf-8'))
    return [entry['outcome'] for entry in sorted(manifest['episodes'], key=lambda e: e['index'])]


def row(label: str, found: list[str]) -> tuple[str, dict]:
    from robotsim_core.statistics import wilson_interval
    n = len(found)
    counts = {name: found.count(name) for name in ('success', 'collision', 'timeout', 'gave_up')}
    low, high = wilson_interval(counts['success'], n)
    c_low, c_high = wilson_interval(counts['collision'], n)
    text = (f"| {label} | {n} | {counts['success']}/{n} = {100 * counts['success'] / n:.1f} % "
            f"({100 * low:.1f}-{100 * high:.1f} %) | {counts['collision']} ({100 * c_low:.1f}-{100 * c_high:.1f} %) "
            f"| {counts['timeout']} | {counts['gave_up']} |")
    return text, {'n': n, 'rate': counts['success'] / n, 'low': low, 'collision_rate': counts['collision'] / n}


def verdicts(label: str, figures: dict) -> str:
    def verdict(ok: bool) -> str:
        return '**met**' if ok else '**not met**'
    return (f"`{label}`: success >= 95 % {verdict(figures['rate'] >= 0.95 - 1e-12)}, Wilson lower bound >= 90 % "
            f"{verdict(figures['low'] >= 0.90)} ({100 * figures['low']:.1f} %), collisions <= 2 % "
            f"{verdict(figures['collision_rate'] <= 0.02 + 1e-12)}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument('--policy', type=Path, default=POLICY)
    parser.add_argument('--episodes', type=int, default=100)
    parser.add_argument('--seed', type=int, default=None, help='default: drawn now, never a training seed, printed')
    parser.add_argument('--workers', type=int, default=2)
    parser.add_argument('--courses', default=COURSES, help='randomisation specs in config/randomization, by name')
    parser.add_argument('--out', type=Path, default=WORKSPACE / 'out' / 'fast-evaluation')
    parser.add_argument('--write-readme', action='store_true', help=f'replace the {BLOCK} block of docs/policies.md')
    args = parser.parse_args(argv)
    from bench_sim import machine
    from robotsim_core.output_files import file_sha256
    from robotsim_learning.evaluation import training_seed_clash
    from robotsim_learning.evaluation_cli import drawn_seed
    if args.seed is None:
        args.seed = drawn_seed(str(args.policy))
        print(f'seed {args.seed} (drawn at evaluation time; --seed {args.seed} runs these scenarios again)', flush=True)
    elif training_seed_clash(str(args.policy), args.seed):
        print(f'fast_evaluation: error: --seed {args.seed}: a training dataset of {args.policy} used it; expected a '
              'held-out seed', file=sys.stderr)
        return 2
    if args.out.exists() and any(args.out.iterdir()):
        print(f'fast_evaluation: error: --out {args.out}: not empty; expected a new folder (nothing is overwritten)',
              file=sys.stderr)
        return 2
    started, date = time.monotonic(), time.strftime('%Y-%m-%d')
    lines, judged = [], []
    for course in args.courses.split(','):
        spec = WORKSPACE / 'config' / 'randomization' / f'{course}.yaml'
        lines += ['', f'`{course}` (seed {args.seed}, episodes 0-{args.episodes - 1}):', '',
                  '| driver | episodes | reached the goal (Wilson 95 %) | collisions (Wilson 95 %) | timeouts | gave up |',
                  '|---|---|---|---|---|---|']
        for label, extra in RUNS:
            out = args.out / course / label
            command = ['robotsim', 'dataset', 'generate', '--randomization', str(spec), '--out', str(out),
                       '--episodes', str(args.episodes), '--seed', str(args.seed), '--workers', str(args.workers),
                       '--no-cameras', *[part.format(policy=args.policy) for part in extra]]
            print(f'{course} / {label}: {shlex.join(command)}', flush=True)
            completed = subprocess.run([sys.executable, '-m', 'robotsim.cli', *command[1:]])
            if completed.returncode != 0:
                return completed.returncode
            text, figures = row(label, outcomes(out))
            lines.append(text)
            if label.startswith('policy'):
                judged.append(f'{course}, {verdicts(label, figures)}')
    wall = time.monotonic() - started
    head = (f'Measured on {date} by `make evaluate-fast` ({wall / 60:.0f} min wall, {args.workers} workers): '
            f'{machine()}. Policy `{args.policy.name}` (sha256 `{file_sha256(args.policy)[:12]}`), every episode on '
            'the fast path (`robotsim dataset generate`: the simulation stepped in-process with the driver, outcomes '
            'from MuJoCo contacts and ground truth), one seed drawn at evaluation time for both courses.')
    text = '\n'.join([head, *lines, '', 'Policy targets: ' + '; '.join(judged) + '.'])
    print(text)
    if args.write_readme:
        try:
            print(f'{replace_block(WORKSPACE / "README.md", BLOCK, text)} updated')
        except ReadmeBlockError as error:
            print(f'fast_evaluation: error: {error}', file=sys.stderr)
            return 2
    return 0


if __name__ == '__main__':
    sys.exit(main())
