"""``robotsim dataset generate|verify|export|check-lerobot``: one subcommand per verb, each with its own ``--help``."""

from __future__ import annotations

import argparse
import sys

from robotsim_core.errors import DescriptionError

class _Renamed(argparse.Action):
    """An old option spelling: still works, for one release, after one line naming the new one."""

    def __init__(self, option_strings, dest, new: str = '', **kwargs):
        self.new = new
        super().__init__(option_strings, dest, **kwargs)

    def __call__(self, parser, namespace, values, option_string=None):
        print(f"robotsim: '{option_string}' of {parser.prog} is now '{self.new}'; the old spelling goes in the next "
              'release', file=sys.stderr)
        setattr(namespace, self.dest, values)


def _driver(args) -> str:
    """The driver as the episode loop names it: NAME, or NAME:FILE for a driver that takes the policy file."""
    from robotsim_core.drivers import DRIVERS
    from .dataset import DatasetError

    name, _, inline = args.driver.partition(':')
    if inline:
        print(f"robotsim: '--driver {name}:FILE' is now '--driver {name} --policy FILE'; the old spelling goes in the "
              'next release', file=sys.stderr)
        if args.policy:
            raise DatasetError(f'--policy: given twice (--driver {args.driver} and --policy {args.policy})')
    info = DRIVERS.get(name)
    if args.policy and (info is None or info.argument != 'policy'):
        raise DatasetError(f'--policy: applies only to the drivers that take a policy file '
                           f'({", ".join(n for n, i in DRIVERS.items() if i.argument == "policy")}), not --driver '
                           f'{name}; nothing was done')
    if info is not None and info.argument == 'policy' and not (args.policy or inline):
        raise DatasetError(f'--driver {name}: expected --policy FILE, the ONNX policy file it drives with')
    return f'{name}:{args.policy}' if args.policy else args.driver


def run(args) -> int:
    from .dataset import DatasetError, generate, incompleteness, verify
    from .driving import RunOptions
    from .lerobot_export import ExportError, export_lerobot

    try:
        if args.action == 'generate':
            if args.ray_address is not None:
                if args.executor != 'ray':
                    raise DatasetError(f'--ray-address: applies only with --executor ray (got --executor '
                                       f'{args.executor}); nothing was done')
                if args.workers is not None:
                    raise DatasetError('--workers: not used with --ray-address (the Ray cluster schedules the episodes '
                                       'on its CPUs); nothing was done')
            generate(args.randomization, args.out, args.episodes, args.seed, _driver(args),
                     args.workers if args.workers is not None else 1, args.executor, args.resume, args.prune,
                     cameras=not args.no_cameras, ray_address=args.ray_address, progress=not args.no_progress,
                     run=RunOptions(shield=args.shield, expert_commit=args.expert_commit,
                                    expert_memoryless=args.expert_memoryless, expert_share=args.expert_share))
            return 0
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
        export_lerobot(args.dataset, args.out, args.rate, args.max_skew)
        return 0
    except (DatasetError, ExportError, ValueError, DescriptionError) as error:
        print(f'robotsim: error: {error}', file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        if args.action != 'generate':
            raise
        # The workers are stopped (robotsim_core.processes.pool_results); the manifest lists every finished episode.
        print(f'robotsim dataset generate: interrupted; the finished episodes are in {args.out} (complete it with the '
              f'same command and --resume)', file=sys.stderr)
        return 130


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
    from robotsim_core.drivers import DRIVERS, episode_drivers

    from .driving import DAGGER_EXPERT_SHARE
    verbs = parser.add_subparsers(dest='action', required=True, metavar='{generate,verify,export,check-lerobot}')
    generate = verbs.add_parser('generate', help='run randomised episodes into MCAP bags, with a manifest',
                                description='Run randomised episodes into MCAP bags (one folder per episode) and '
                                            'write dataset.json. Episode i depends on (--seed, i) only: the same '
                                            'bytes for any --workers and --executor.')
    generate.add_argument('--randomization', required=True, metavar='SPEC.yaml',
                          help='the randomisation spec (config/randomization/)')
    generate.add_argument('--out', required=True, metavar='DIR',
                          help='the dataset folder (new, empty, or a dataset to --resume)')
    generate.add_argument('--episodes', type=int, default=10, help='how many episodes (default 10)')
    generate.add_argument('--seed', type=int, default=0, help='episode i depends on (seed, i) only (default 0)')
    generate.add_argument('--driver', default='wander', metavar='NAME',
                          help=f'who drives the episodes: {", ".join(episode_drivers())} (default wander)')
    generate.add_argument('--policy', metavar='FILE', help='the ONNX policy file of --driver '
                          + ' or '.join(n for n, i in DRIVERS.items() if i.argument == 'policy' and i.episodes))
    generate.add_argument('--shield', action='store_true',
                          help="with --policy: the policy's commands go through the velocity shield from the scan "
                               '(as the policy node with shield:=true)')
    generate.add_argument('--expert-commit', type=float, default=0.0, metavar='M',
                          help='with --driver expert or dagger: when the robot already turns the other way than the '
                               "expert's path asks, the expert keeps the turn if the path around that side is at "
                               'most M metres longer (0 ... 5; default 0: never)')
    generate.add_argument('--expert-memoryless', action='store_true',
                          help='with --driver expert or dagger: the expert plans again from where the robot is at '
                               'every command (down its cost to the goal), so its command depends on the state alone, '
                               'not on a path planned earlier (default: it keeps its path until the robot strays '
                               '0.3 m from it)')
    generate.add_argument('--expert-share', type=float, default=DAGGER_EXPERT_SHARE, metavar='S',
                          help="with --driver dagger: the share of decisions the expert's label drives instead of the "
                               f'policy (0 ... 1, seeded; default {DAGGER_EXPERT_SHARE:g}; 0: the policy drives every '
                               'decision and the expert only labels, so the states where the policy goes wrong are '
                               'recorded whole)')
    generate.add_argument('--workers', type=int, default=None,
                          help='processes (or local Ray CPUs) in parallel (default 1)')
    generate.add_argument('--executor', choices=['local', 'ray'], default='local',
                          help='where episodes run: a local process pool (default), or Ray tasks (a local Ray '
                               'instance, or --ray-address)')
    generate.add_argument('--engine', dest='executor', choices=['local', 'ray'], action=_Renamed, new='--executor',
                          help=argparse.SUPPRESS)
    generate.add_argument('--ray-address', help='with --executor ray: an existing Ray cluster')
    generate.add_argument('--resume', action='store_true', help='complete an interrupted generation')
    generate.add_argument('--prune', action='store_true', help="drop episodes the spec's prune rules call useless")
    generate.add_argument('--no-cameras', action='store_true', help='without camera images')
    generate.add_argument('--no-progress', action='store_true', help='no progress bar')
    verify = verbs.add_parser('verify', help='check a dataset: manifest, scenario files, MCAP CRCs',
                              description='Check every episode of a dataset against its manifest. Exit 0: OK; 1: a '
                                          'bad or missing episode (named); 2: not a dataset.')
    verify.add_argument('dataset', help='the dataset folder')
    export = verbs.add_parser('export', help='write a LeRobot dataset (format v3.0)',
                              description='Write a LeRobot dataset (format v3.0) from a dataset or one bag folder.')
    export.add_argument('dataset', help='the dataset folder, or one bag folder')
    export.add_argument('--out', required=True, metavar='DIR', help='the LeRobot dataset folder (new or empty)')
    export.add_argument('--format', choices=['lerobot'], default='lerobot',
                        help='lerobot (LeRobot dataset format v3.0; the default)')
    export.add_argument('--rate', type=float, default=10.0,
                        help='frames per second (more than 0, at most 1000; default 10)')
    export.add_argument('--max-skew', type=float, default=None,
                        help='reject frames where a stream is further than this from the frame time (s; default '
                             'half a frame period)')
    check = verbs.add_parser('check-lerobot', help='open an export with the real LeRobot loader',
                             description='Open an export with the real LeRobot loader (installed on first use into '
                                         'its own environment, about 6 GB) and iterate every frame. Exit 0: read; 1: '
                                         'LeRobot refused it.')
    check.add_argument('dataset', metavar='EXPORT', help='the exported LeRobot dataset folder')
