"""The appearance-shift ablation of camera-driven policies (`make ablation`): the chained policy (perception ->
control, ``policy train --no-scan --perception``) beside the end-to-end camera policy (``policy train --no-scan``,
the grey-scale thumbnail straight to the command), both trained on the same episodes, in closed loop on held-out
scenarios (a) with the training appearance (``room_obstacles``) and (b) under an appearance shift
(``room_obstacles_appearance_shift``: every colour, the light and the camera noise outside the training ranges).

    python bench/pixels_ablation.py --chained FILE --end-to-end FILE [--episodes 100] [--seed N] [--workers 2]
                                    [--out out/ablation] [--write-readme] [--keep-bags]

Every episode runs on the fast path (``robotsim dataset generate --driver policy``, cameras on: the policies see the
rendered frames), one seed drawn at evaluation time for every row unless ``--seed`` is given (never a training seed
of either policy). Success, collisions and timeouts with Wilson 95 % intervals; beside them the policies' data
sizes and training times, read from their files. The episodes' bags are deleted once counted (tens of GB with
images) unless ``--keep-bags``. With ``--write-readme`` the table replaces the ``pixels-ablation`` block of
docs/pixels-to-control.md.
"""

from __future__ import annotations

import argparse
import json
import shlex
import shutil
import subprocess
import sys
import time
from pathlib import Path

from fast_evaluation import outcomes, row
from readme_block import ReadmeBlockError, replace_block

WORKSPACE = Path(__file__).resolve().parents[1]
APPEARANCES = (('training appearance', 'room_obstacles'), ('appearance shift', 'room_obstacles_appearance_shift'))
"""Row label and the randomisation spec (config/randomization) of each appearance."""
BLOCK = 'pixels-ablation'


def training_report(policy: Path) -> dict:
    import onnx
    metadata = {p.key: p.value for p in onnx.load(str(policy)).metadata_props}
    return json.loads(metadata.get('robotsim.training', '{}'))


def describe(label: str, policy: Path) -> str:
    """One line of what a policy was trained on and how long it took (from its file)."""
    from robotsim_core.output_files import file_sha256
    report = training_report(policy)
    datasets = ', '.join(f"{d.get('name')} ({d.get('episodes')} episodes, {d.get('driver')}, seed {d.get('seed')})"
                         for d in report.get('datasets', []))
    perception = report.get('perception')
    stage = f"; perception model `{perception['name']}` (sha256 `{perception['sha256'][:12]}`)" if perception else ''
    return (f"- {label}: `{policy.name}` (sha256 `{file_sha256(policy)[:12]}`), {report.get('samples')} samples "
            f"from {report.get('episodes')} successful or relabelled episodes of {datasets}, "
            f"{report.get('epochs', '?')} epochs{stage}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument('--chained', type=Path, required=True, help='the chained policy (its perception model beside)')
    parser.add_argument('--end-to-end', type=Path, required=True, help='the end-to-end camera policy')
    parser.add_argument('--episodes', type=int, default=100)
    parser.add_argument('--seed', type=int, default=None, help='default: drawn now, never a training seed, printed')
    parser.add_argument('--workers', type=int, default=2)
    parser.add_argument('--out', type=Path, default=WORKSPACE / 'out' / 'ablation')
    parser.add_argument('--keep-bags', action='store_true', help='keep the episodes\' bags (about 70 MB each)')
    parser.add_argument('--write-readme', action='store_true', help=f'replace the {BLOCK} block of the docs')
    args = parser.parse_args(argv)
    from bench_sim import machine
    from robotsim_learning.evaluation import training_seed_clash
    from robotsim_learning.evaluation_cli import drawn_seed
    policies = (('chained (perception -> control)', args.chained), ('end-to-end camera', args.end_to_end))
    for _, policy in policies:
        if not policy.is_file():
            print(f'pixels_ablation: error: {policy}: file not found (expected an ONNX policy)', file=sys.stderr)
            return 2
    if args.seed is None:
        while True:
            args.seed = drawn_seed(str(args.chained))
            if not training_seed_clash(str(args.end_to_end), args.seed):
                break
        print(f'seed {args.seed} (drawn at evaluation time; --seed {args.seed} runs these scenarios again)', flush=True)
    elif any(training_seed_clash(str(policy), args.seed) for _, policy in policies):
        print(f'pixels_ablation: error: --seed {args.seed}: a training dataset of a policy used it; expected a '
              'held-out seed', file=sys.stderr)
        return 2
    if args.out.exists() and any(args.out.iterdir()):
        print(f'pixels_ablation: error: --out {args.out}: not empty; expected a new folder (nothing is overwritten)',
              file=sys.stderr)
        return 2
    started, date = time.monotonic(), time.strftime('%Y-%m-%d')
    lines = ['| driver | appearance | episodes | reached the goal (Wilson 95 %) | collisions (Wilson 95 %) | timeouts '
             '| gave up |', '|---|---|---|---|---|---|---|']
    for appearance, course in APPEARANCES:
        spec = WORKSPACE / 'config' / 'randomization' / f'{course}.yaml'
        for label, policy in policies:
            out = args.out / course / label.split(' ')[0]
            command = ['robotsim', 'dataset', 'generate', '--randomization', str(spec), '--out', str(out),
                       '--episodes', str(args.episodes), '--seed', str(args.seed), '--workers', str(args.workers),
                       '--driver', 'policy', '--policy', str(policy), '--no-progress']
            print(f'{course} / {label}: {shlex.join(command)}', flush=True)
            completed = subprocess.run([sys.executable, '-m', 'robotsim.cli', *command[1:]])
            if completed.returncode != 0:
                return completed.returncode
            text, _ = row(label, outcomes(out))
            cells = text.split(' | ')
            lines.append(' | '.join([cells[0], appearance, *cells[1:]]))
            print(lines[-1], flush=True)
            if not args.keep_bags:
                for bag in out.iterdir():
                    if bag.is_dir():
                        shutil.rmtree(bag)
    wall = time.monotonic() - started
    head = (f'Measured on {date} by `make ablation` ({wall / 60:.0f} min wall, {args.workers} workers): {machine()}. '
            f'Seed {args.seed} (drawn at evaluation time), episodes 0-{args.episodes - 1} of each course: the same '
            'layouts, physics and goals in both appearances, only the looks differ. Every episode on the fast path '
            '(`robotsim dataset generate`, cameras rendered, the simulation stepped in lockstep with the policy), no '
            'velocity shield, no lidar.')
    trained = ['', 'The policies:', *(describe(label, policy) for label, policy in policies)]
    text = '\n'.join([head, '', *lines, *trained])
    print(text)
    if args.write_readme:
        try:
            print(f'{replace_block(WORKSPACE / "README.md", BLOCK, text)} updated')
        except ReadmeBlockError as error:
            print(f'pixels_ablation: error: {error}', file=sys.stderr)
            return 2
    return 0


if __name__ == '__main__':
    sys.exit(main())
