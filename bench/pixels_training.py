"""Stage 2 of the chained policy and its end-to-end baseline, from the same episodes (`make chained`):

1. expert demonstrations with camera images (``robotsim dataset generate --driver expert``, room_obstacles);
2. behaviour cloning of both policies on them: the chained policy's control stage sees the perception model's
   abstraction (``policy train --no-scan --perception``), the end-to-end policy the grey-scale thumbnail
   (``policy train --no-scan``); neither sees the scan;
3. one DAgger round each: episodes driven by that policy with the expert's labels (``--driver dagger``);
4. both retrained on the demonstrations and their own DAgger episodes.

    python bench/pixels_training.py --perception FILE [--out out/pixels] [--episodes 300] [--dagger-episodes 80]
                                    [--seed 7000] [--workers 2]

Every step whose output exists is skipped (an interrupted run goes on where it stopped); every step's command and
wall time are printed. Writes ``chained.onnx`` (with ``chained.perception.onnx`` beside it) and ``end_to_end.onnx``.
"""

from __future__ import annotations

import argparse
import shlex
import subprocess
import sys
import time
from pathlib import Path

WORKSPACE = Path(__file__).resolve().parents[1]
COURSE = WORKSPACE / 'config' / 'randomization' / 'room_obstacles.yaml'


def step(name: str, output: Path, command: list[str]) -> None:
    if output.exists():
        print(f'{name}: {output} exists, skipped', flush=True)
        return
    print(f'{name}: {shlex.join(command)}', flush=True)
    started = time.monotonic()
    completed = subprocess.run([sys.executable, '-m', 'robotsim.cli', *command[1:]])
    if completed.returncode != 0:
        raise SystemExit(completed.returncode)
    print(f'{name}: {time.monotonic() - started:.0f} s', flush=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument('--perception', type=Path, required=True, help='the perception model (make perception)')
    parser.add_argument('--out', type=Path, default=WORKSPACE / 'out' / 'pixels')
    parser.add_argument('--episodes', type=int, default=300, help='expert demonstrations')
    parser.add_argument('--dagger-episodes', type=int, default=80, help='DAgger episodes per policy')
    parser.add_argument('--seed', type=int, default=7000, help='seed of the demonstrations (DAgger: +1, +2)')
    parser.add_argument('--workers', type=int, default=2)
    parser.add_argument('--epochs', type=int, default=60)
    args = parser.parse_args(argv)
    if not args.perception.is_file():
        print(f'pixels_training: error: --perception {args.perception}: file not found (expected the ONNX file of '
              'make perception)', file=sys.stderr)
        return 2
    args.out.mkdir(parents=True, exist_ok=True)
    expert = args.out / 'expert'
    generate = ['robotsim', 'dataset', 'generate', '--randomization', str(COURSE), '--workers', str(args.workers),
                '--no-progress']
    step('demonstrations', expert, [*generate, '--out', str(expert), '--episodes', str(args.episodes),
                                    '--seed', str(args.seed), '--driver', 'expert'])
    kinds = (('chained', ['--perception', str(args.perception)], 1), ('end_to_end', [], 2))
    train = ['robotsim', 'policy', 'train', '--no-scan', '--epochs', str(args.epochs), '--seed', '0']
    for name, extra, offset in kinds:
        first = args.out / f'{name}_bc.onnx'
        step(f'{name}: behaviour cloning', first, [*train, str(expert), '--out', str(first), *extra])
        dagger = args.out / f'dagger_{name}'
        step(f'{name}: DAgger episodes', dagger, [*generate, '--out', str(dagger), '--episodes',
                                                  str(args.dagger_episodes), '--seed', str(args.seed + offset),
                                                  '--driver', 'dagger', '--policy', str(first)])
        final = args.out / f'{name}.onnx'
        step(f'{name}: retrained with DAgger', final, [*train, str(expert), str(dagger), '--out', str(final), *extra])
    print(f'wrote {args.out / "chained.onnx"} and {args.out / "end_to_end.onnx"}')
    return 0


if __name__ == '__main__':
    sys.exit(main())
