"""``robotsim dataset generate|verify|export|check-lerobot`` (the argument parser lives in robotsim.cli)."""

from __future__ import annotations

import sys

from robotsim_core.errors import DescriptionError

# The options each action uses (argparse destinations); any other one given is refused, not ignored.
# Options default to None in the parser so that "given" can be told from "not given"; their
# defaults are applied here.
OPTIONS = {
    'generate': {'randomization', 'out', 'episodes', 'seed', 'driver', 'workers', 'engine', 'ray_address', 'resume',
                 'prune', 'no_cameras', 'no_progress'},
    'verify': {'dataset'},
    'export': {'dataset', 'out', 'format', 'rate', 'max_skew'},
    'check-lerobot': {'dataset'},
}
DEFAULTS = {'episodes': 10, 'seed': 0, 'driver': 'wander', 'workers': 1, 'engine': 'local', 'format': 'lerobot',
            'rate': 10.0}
ALL_OPTIONS = sorted(set().union(*OPTIONS.values()) - {'dataset'})


def _flag(dest: str) -> str:
    return '--' + dest.replace('_', '-')


def _check_applicable(args) -> None:
    """Refuse, in one line, an option or argument the action would silently ignore."""
    from .dataset import DatasetError

    action = args.action
    if action == 'generate' and getattr(args, 'dataset', None) is not None:
        raise DatasetError(f'generate: unexpected argument {args.dataset!r}; expected only options (the dataset '
                           'folder is --out DIR)')
    given = [dest for dest in ALL_OPTIONS if getattr(args, dest, None) is not None and getattr(args, dest) is not False]
    foreign = [dest for dest in given if dest not in OPTIONS[action]]
    if foreign:
        owners = sorted({other for dest in foreign for other in OPTIONS if dest in OPTIONS[other]})
        raise DatasetError(f'{action}: {", ".join(_flag(d) for d in foreign)} '
                           f'{"does" if len(foreign) == 1 else "do"} not apply to {action} '
                           f'({" and ".join(owners)} only); nothing was done')
    if action == 'generate' and args.ray_address is not None:
        if args.engine != 'ray':
            raise DatasetError(f'--ray-address: applies only with --engine ray (got --engine {args.engine or "local"});'
                               ' nothing was done')
        if args.workers is not None:
            raise DatasetError('--workers: not used with --ray-address (the Ray cluster schedules the episodes on its '
                               'CPUs); nothing was done')


def run(args) -> int:
    from .dataset import DatasetError, generate, incompleteness, verify
    from .lerobot_export import ExportError, export_lerobot

    try:
        _check_applicable(args)
        for dest, default in DEFAULTS.items():
            if getattr(args, dest, None) is None:
                setattr(args, dest, default)
        if args.action == 'generate':
            if not args.randomization or not args.out:
                raise DatasetError('generate: expected --randomization SPEC.yaml and --out DIR')
            generate(args.randomization, args.out, args.episodes, args.seed, args.driver, args.workers, args.engine,
                     args.resume, args.prune, cameras=not args.no_cameras, ray_address=args.ray_address,
                     progress=not args.no_progress)
            return 0
        if args.dataset is None:
            usage = ' --out DIR (DATASET: a dataset or one bag folder)' if args.action == 'export' else ''
            raise DatasetError(f'{args.action}: expected the dataset folder: robotsim dataset {args.action} DATASET{usage}')
        if args.action == 'verify':
            problems = verify(args.dataset)
            missing = incompleteness(args.dataset, listed_verify=not problems)
            if problems:
                print(f'robotsim dataset verify: FAIL {problems[0]}' + (f' (and {len(problems) - 1} more)'
                                                                       if len(problems) > 1 else ''))
            if missing:
                print(f'robotsim dataset verify: INCOMPLETE {missing}')
            if problems or missing:
                return 1
            print(f'robotsim dataset verify: OK {args.dataset}')
            return 0
        if args.action == 'check-lerobot':
            return _check_lerobot(args.dataset)
        if args.format != 'lerobot':
            raise ExportError(f'--format: expected lerobot, got {args.format!r}')
        if not args.out:
            raise ExportError('export: expected --out DIR')
        export_lerobot(args.dataset, args.out, args.rate, args.max_skew)
        return 0
    except (DatasetError, ExportError, ValueError, DescriptionError) as error:
        print(f'robotsim: error: {error}', file=sys.stderr)
        return 2


def _check_lerobot(export: str) -> int:
    """Open an export with the real LeRobot (its own environment, installed on first use) and iterate it."""
    import tempfile

    from pathlib import Path

    from .consumer_env import ConsumerSetupError
    from .lerobot_reader import read_with_lerobot

    if not (Path(export) / 'meta' / 'info.json').is_file():
        from .dataset import DatasetError
        raise DatasetError(f'check-lerobot: {export}: no meta/info.json; expected a LeRobot dataset folder, as '
                           'robotsim dataset export --format lerobot writes')
    with tempfile.TemporaryDirectory(prefix='robotsim-lerobot-') as scratch:
        try:
            read = read_with_lerobot(export, scratch)
        except ConsumerSetupError as error:
            print(f'robotsim dataset check-lerobot: FAIL {error}')
            return 1
    print(f'robotsim dataset check-lerobot: OK {export}: lerobot {read["lerobot"]} LeRobotDataset read every frame: '
          f'{read["episodes"]} episodes, {read["frames"]} frames at {read["fps"]} fps, cameras '
          f'{", ".join(read["camera_keys"]) or "none"}; tasks {sorted(set(read["tasks"].values()))}')
    return 0


HELP = 'randomised episodes as bags, verify, LeRobot export'
"""One line for ``robotsim --help`` (this module is a command: the ``robotsim.commands`` entry points)."""


def add_arguments(parser) -> None:
    from robotsim_core.drivers import episode_drivers
    parser.add_argument('action', choices=['generate', 'verify', 'export', 'check-lerobot'],
                        help='generate: run randomised episodes into bags; verify: check a dataset; '
                             'export: write a LeRobot dataset (format v3.0); check-lerobot: open an export with the '
                             'real LeRobot loader (installed on first use into its own environment, about 6 GB)')
    parser.add_argument('dataset', nargs='?', help='verify/export: the dataset folder (export: or one bag folder); '
                                                   'check-lerobot: the exported LeRobot dataset')
    parser.add_argument('--randomization', help='generate: the randomisation spec YAML (config/randomization/)')
    parser.add_argument('--out', help='generate: the dataset folder (new, empty, or a dataset to --resume); '
                                      'export: the LeRobot dataset folder (new or empty)')
    parser.add_argument('--episodes', type=int, help='generate: how many episodes (default 10)')
    parser.add_argument('--seed', type=int, help='generate: episode i depends on (seed, i) only (default 0)')
    parser.add_argument('--driver', help='generate: the episode driver, NAME or NAME:FILE (one of '
                                         f'{", ".join(episode_drivers())}; default wander)')
    parser.add_argument('--workers', type=int, help='generate: processes (or local Ray CPUs) in parallel (default 1)')
    parser.add_argument('--engine', choices=['local', 'ray'],
                        help='generate: local process pool (default), or Ray tasks (a local Ray instance, or '
                             '--ray-address)')
    parser.add_argument('--ray-address', help='generate --engine ray: an existing Ray cluster')
    parser.add_argument('--resume', action='store_true', help='generate: complete an interrupted generation')
    parser.add_argument('--prune', action='store_true', help="generate: drop episodes the spec's prune rules call useless")
    parser.add_argument('--no-cameras', action='store_true', help='generate: without camera images')
    parser.add_argument('--no-progress', action='store_true', help='generate: no progress bar')
    parser.add_argument('--format', help='export: lerobot (LeRobot dataset format v3.0; the default)')
    parser.add_argument('--rate', type=float, help='export: frames per second (more than 0, at most 1000; default 10)')
    parser.add_argument('--max-skew', type=float, default=None,
                        help='export: reject frames where a stream is further than this from the frame time (s; '
                             'default half a frame period)')
