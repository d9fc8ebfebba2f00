"""``robotsim dataset generate|verify|export`` (the argument parser lives in robotsim_core.cli)."""

from __future__ import annotations

import sys

from robotsim_core.errors import DescriptionError


def run(args) -> int:
    from .dataset import DatasetError, generate, verify
    from .lerobot_export import ExportError, export_lerobot

    try:
        if args.action == 'generate':
            if not args.randomization or not args.out:
                raise DatasetError('generate: expected --randomization SPEC.yaml and --out DIR')
            generate(args.randomization, args.out, args.episodes, args.seed, args.driver, args.workers, args.engine,
                     args.resume, args.prune, cameras=not args.no_cameras, ray_address=args.ray_address,
                     progress=not args.no_progress)
            return 0
        if args.action == 'verify':
            problems = verify(args.dataset)
            if problems:
                print(f'robotsim dataset verify: FAIL {problems[0]}' + (f' (and {len(problems) - 1} more)'
                                                                       if len(problems) > 1 else ''))
                return 1
            print(f'robotsim dataset verify: OK {args.dataset}')
            return 0
        if args.format != 'lerobot':
            raise ExportError(f'--format: expected lerobot, got {args.format!r}')
        if not args.out:
            raise ExportError('export: expected --out DIR')
        export_lerobot(args.dataset, args.out, args.rate, args.max_skew)
        return 0
    except (DatasetError, ExportError, ValueError, DescriptionError) as error:
        print(f'robotsim: error: {error}', file=sys.stderr)
        return 2


def add_arguments(parser) -> None:
    parser.add_argument('action', choices=['generate', 'verify', 'export'],
                        help='generate: run randomised episodes into bags; verify: check a dataset; '
                             'export: write a LeRobot v2.1 dataset')
    parser.add_argument('dataset', nargs='?', help='verify/export: the dataset folder (export: or one bag folder)')
    parser.add_argument('--randomization', help='generate: the randomisation spec YAML (config/randomization/)')
    parser.add_argument('--out', help='generate: the dataset folder; export: the LeRobot dataset folder')
    parser.add_argument('--episodes', type=int, default=10, help='generate: how many episodes')
    parser.add_argument('--seed', type=int, default=0, help='generate: episode i depends on (seed, i) only')
    parser.add_argument('--driver', default='wander', help='generate: the episode driver (wander, ...)')
    parser.add_argument('--workers', type=int, default=1, help='generate: processes (or Ray CPUs) in parallel')
    parser.add_argument('--engine', choices=['local', 'ray'], default='local',
                        help='generate: local process pool, or Ray tasks (a local Ray instance, or --ray-address)')
    parser.add_argument('--ray-address', help='generate --engine ray: an existing Ray cluster')
    parser.add_argument('--resume', action='store_true', help='generate: complete an interrupted generation')
    parser.add_argument('--prune', action='store_true', help="generate: drop episodes the spec's prune rules call useless")
    parser.add_argument('--no-cameras', action='store_true', help='generate: without camera images')
    parser.add_argument('--no-progress', action='store_true', help='generate: no progress bar')
    parser.add_argument('--format', default='lerobot', help='export: lerobot (LeRobot dataset format v2.1)')
    parser.add_argument('--rate', type=float, default=10.0, help='export: frames per second')
    parser.add_argument('--max-skew', type=float, default=None,
                        help='export: reject frames where a stream is further than this from the frame time (s; '
                             'default half a frame period)')
