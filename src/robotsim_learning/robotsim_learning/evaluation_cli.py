"""``robotsim policy eval``: closed-loop episodes of a driver and its baselines through the ROS graph.

    robotsim policy eval --driver policy --policy FILE --episodes N --seed S [--randomization SPEC] [--out DIR]
                      [--baselines expert,straight,wander] [--real-time-factor auto|RTF]

Episode i of every driver is scenario i of ``Randomizer(SPEC, S)``: the same worlds, spawns and goals for
each driver. A dataset generated with seed T holds the scenarios (T, j), so evaluation seeds must differ
from the training datasets' seeds; the seed of the policy's own training dataset (recorded in the ONNX
file) is refused. Writes ``DIR/episodes.csv``, ``DIR/report.png`` and, per episode, the world, robot and
launch log under ``DIR/episodes/<driver>-<i>/``; a DIR holding any of those (an earlier evaluation) is
refused, never overwritten.
"""

from __future__ import annotations

import os
import sys

from robotsim_core.drivers import evaluated_drivers
from robotsim_core.errors import DescriptionError

EVALUATION_DRIVERS = evaluated_drivers()
"""From the driver table (robotsim_core.drivers)."""
DEFAULT_RANDOMIZATION = 'room_obstacles.yaml'
SLOWEST_PACE = 0.25
"""The slowest real-time factor auto pacing goes down to when a driver's inputs still go stale."""


HELP = 'closed-loop episodes of a driver and baselines through the ROS graph'
"""One line for ``robotsim --help`` (this module is a command: the ``robotsim.commands`` entry points)."""


def add_arguments(parser) -> None:
    parser.add_argument('--driver', default='policy', choices=EVALUATION_DRIVERS, help='the driver evaluated')
    parser.add_argument('--policy', default='', help='the ONNX policy file (driver policy)')
    parser.add_argument('--episodes', type=int, default=10, help='episodes per driver')
    parser.add_argument('--seed', type=int, default=None,
                        help='episode i is scenario i of this seed (default: drawn now from the system\'s entropy, '
                             'one no training dataset of the policy used, and printed)')
    parser.add_argument('--randomization', default='',
                        help="the randomisation spec (default: the policy's training dataset's, else "
                             f'config/randomization/{DEFAULT_RANDOMIZATION})')
    parser.add_argument('--out', default='evaluation',
                        help='folder of episodes.csv, report.png and the episodes: a new folder or one without '
                             'them (an earlier evaluation there is refused, never overwritten)')
    parser.add_argument('--baselines', default='expert,straight,wander',
                        help="drivers run on the same episodes, comma-separated ('' for none)")
    parser.add_argument('--real-time-factor', default='auto',
                        help='auto: as fast as possible while the driver keeps up in sim time on fresh inputs, else '
                             'again at 1.0, 0.5, 0.25; or a number')
    parser.add_argument('--no-progress', action='store_true', help='no progress bar')


class _Refused(ValueError):
    """Bad input: one line, exit 2."""


def _drivers(args) -> list[str]:
    drivers = [args.driver]
    for name in filter(None, (part.strip() for part in args.baselines.split(','))):
        if name not in EVALUATION_DRIVERS:
            raise _Refused(f'--baselines: expected names from {", ".join(EVALUATION_DRIVERS)}, got {name!r}')
        if name not in drivers:
            drivers.append(name)
    return drivers


def _pacing(text: str) -> float | None:
    """None for auto, else the fixed real-time factor."""
    if text == 'auto':
        return None
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not (value == 0 or 1e-3 <= value < float('inf')):
        raise _Refused(f"--real-time-factor: expected auto, 0 (as fast as possible) or a number >= 0.001, got {text!r}")
    return value


OUTPUTS = ('episodes.csv', 'report.png', 'episodes')
"""What an evaluation writes into --out: a folder holding any of them holds an earlier evaluation."""


def _check_out(out: str) -> None:
    """--out must be a folder this run can create, or one without an earlier evaluation's files: those are
    never replaced (episodes.csv, report.png) nor mixed with this run's (episodes/). Other files (a wrapper's
    run record, notes) are left as they are."""
    if not out:
        raise _Refused("--out: expected a folder for episodes.csv, report.png and the episodes, got ''")
    if os.path.lexists(out) and not os.path.isdir(out):
        raise _Refused(f'--out {out}: exists and is not a folder; expected a folder for episodes.csv, report.png '
                       'and the episodes')
    if os.path.isdir(out):
        try:
            entries = set(os.listdir(out))
        except OSError as error:
            raise _Refused(f'--out {out}: cannot read the folder ({error.strerror})') from None
        earlier = [name + ('/' if name == 'episodes' else '') for name in OUTPUTS if name in entries]
        if earlier:
            raise _Refused(f'--out {out}: holds an earlier evaluation ({", ".join(earlier)}); expected a folder '
                           'without one (it is never overwritten): choose another --out or remove this one')
        if not os.access(out, os.W_OK | os.X_OK):
            raise _Refused(f'--out {out}: folder is not writable')
        return
    parent = os.path.dirname(os.path.abspath(out))
    while not os.path.lexists(parent):
        parent = os.path.dirname(parent)
    if not os.path.isdir(parent):
        raise _Refused(f'--out {out}: {parent} is not a folder; expected a path where a folder can be created')
    if not os.access(parent, os.W_OK | os.X_OK):
        raise _Refused(f'--out {out}: cannot create the folder ({parent} is not writable)')


def _check_policy(args, drivers: list[str]):
    """The policy runtime (None without the policy driver); refuses a bad file or the training seed."""
    if 'policy' not in drivers:
        return None
    from .evaluation import training_seed_clash
    from .policy_runtime import PolicyFileError, PolicyRuntime
    if not args.policy:
        raise _Refused('--policy: expected the ONNX policy file for --driver policy')
    try:
        runtime = PolicyRuntime(args.policy)
    except PolicyFileError as error:
        raise _Refused(f'--policy: {error}') from None
    dataset = training_seed_clash(args.policy, args.seed)
    if dataset is not None:
        raise _Refused(f'--seed {args.seed}: {args.policy} was trained on {dataset}, generated with this seed; '
                       'expected another seed (held-out scenarios)')
    return runtime


def drawn_seed(policy: str) -> int:
    """A seed from the system's entropy (never chosen by anyone), redrawn while it is a training seed of ``policy``."""
    import secrets

    from .evaluation import training_seed_clash
    while True:
        seed = secrets.randbelow(2**31)  # short enough to type again
        try:
            clash = policy and os.path.isfile(policy) and training_seed_clash(policy, seed)
        except Exception:  # noqa: BLE001 (an unreadable policy file is refused with its own line next)
            clash = None
        if not clash:
            return seed


def run(args) -> int:
    try:
        return _run(args)
    except (_Refused, DescriptionError) as error:
        print(f'robotsim policy eval: error: {error}', file=sys.stderr)
        return 2
    except KeyboardInterrupt:  # the running launch was stopped on the way out; the CSV has every finished episode
        print(f'robotsim policy eval: interrupted; finished episodes are in {os.path.join(args.out, "episodes.csv")}',
              file=sys.stderr)
        return 130


def _run(args) -> int:
    from robotsim_core.description.load import share_path
    from robotsim_core.description import load_robot

    from .evaluation import training_randomization
    from .observation import spec_for_robot
    from .randomization import Randomizer, load_randomization

    if args.episodes < 1:
        raise _Refused(f'--episodes: expected at least 1, got {args.episodes}')
    drivers = _drivers(args)
    if args.seed is None:
        args.seed = drawn_seed(args.policy if 'policy' in drivers else '')
        print(f'seed {args.seed} (drawn at evaluation time; --seed {args.seed} runs these scenarios again)', flush=True)
    if not 0 <= args.seed < 2**63:
        raise _Refused(f'--seed: expected 0 ... 2^63-1, got {args.seed}')
    pacing = _pacing(args.real_time_factor)
    _check_out(args.out)
    runtime = _check_policy(args, drivers)
    spec_path = args.randomization or (runtime and training_randomization(args.policy)) \
        or share_path('config', 'randomization', DEFAULT_RANDOMIZATION)
    if not os.path.isfile(spec_path):
        raise _Refused(f'--randomization: {spec_path}: file not found (expected a randomisation spec YAML)')
    spec = load_randomization(spec_path)
    randomizer = Randomizer(spec, args.seed)
    if runtime is not None:
        model = load_robot(randomizer.robot_path)
        try:
            runtime.check_fits(spec_for_robot(model, runtime.spec.sectors, image=runtime.spec.uses_image,
                                              heading=runtime.spec.heading))
        except ValueError as error:
            raise _Refused(f'--policy: {error} (the robot of {spec_path})') from None
    return _evaluate(args, drivers, pacing, runtime, spec_path, spec, randomizer)


def _evaluate(args, drivers, pacing, runtime, spec_path, spec, randomizer) -> int:
    import numpy as np
    from tqdm import tqdm

    from .evaluation import summary, summary_line, write_csv, write_report
    from .ros.evaluation_graph import GraphObserver, last_lines, run_graph_episode

    try:
        os.makedirs(os.path.join(args.out, 'episodes'), exist_ok=True)
    except OSError as error:  # checked before; what changed since (a file put there, a full disk) is one line too
        raise _Refused(f'--out {args.out}: cannot create the folder ({error.strerror})') from None
    csv_path, report_path = os.path.join(args.out, 'episodes.csv'), os.path.join(args.out, 'report.png')
    uses_image = bool(runtime and runtime.spec.uses_image)
    print(f'evaluating {", ".join(drivers)} on {args.episodes} episodes of {spec_path}, seed {args.seed}')
    rows, shown = [], {}
    observer = GraphObserver()
    bar = tqdm(total=len(drivers) * args.episodes, desc='evaluate', unit='episode', file=sys.stderr,
               disable=args.no_progress)
    try:
        for driver in drivers:
            real_time_factor = 0.0 if pacing is None else pacing
            for index in range(args.episodes):
                scenario = randomizer.scenario(index)
                folder = os.path.join(args.out, 'episodes', f'{driver}-{index}')
                bar.set_postfix(driver=driver, episode=index, rtf=f'{real_time_factor:g}')
                result = run_graph_episode(observer, scenario, spec, driver, folder, real_time_factor, args.policy,
                                           uses_image)
                if pacing is None and index == 0:
                    verdict = 'keeps up' if result.kept_up else 'falls behind'
                    bar.write(f'{driver}: /cmd_vel at {result.command_rate:.1f} Hz of sim time (nominal '
                              f'{result.nominal_rate:g}) at real_time_factor {real_time_factor:g}: {verdict}')
                while pacing is None and not result.kept_up and real_time_factor != SLOWEST_PACE:
                    # The episode again, slower, and the rest of this driver's too: as fast as possible, then
                    # real time, then half and a quarter of it.
                    real_time_factor = 1.0 if real_time_factor == 0 else max(SLOWEST_PACE, real_time_factor / 2)
                    why = (f'/cmd_vel at {result.command_rate:.1f} of {result.nominal_rate:g} Hz; ticks '
                           + (f'stale {result.stale_ticks}, waiting {result.waiting_ticks}' if result.ticks
                              else 'not reported'))
                    bar.write(f'{driver}: episode {index} again at real_time_factor {real_time_factor:g} ({why})')
                    result = run_graph_episode(observer, scenario, spec, driver, folder, real_time_factor,
                                               args.policy, uses_image)
                if not result.kept_up and result.outcome != 'error':
                    bar.write(f'{driver} episode {index}: the driver did not keep up at real_time_factor '
                              f'{real_time_factor:g} (ticks {result.ticks or "not reported"}): this machine\'s load, '
                              'not the driver, may have decided its outcome')
                if result.outcome == 'error':
                    bar.write(f'{driver} episode {index}: the bringup stopped early ({result.log}): '
                              f'{last_lines(result.log)}')
                tracker = result.tracker
                rows.append({'driver': driver, 'seed': args.seed, 'episode': index, 'outcome': result.outcome,
                             'sim_time': tracker.end_time, 'path_length': tracker.path_length,
                             'min_clearance': tracker.min_clearance, 'collisions': tracker.collisions,
                             'final_goal_distance': tracker.final_goal_distance,
                             'real_time_factor': real_time_factor, 'command_rate': result.command_rate,
                             'nominal_command_rate': result.nominal_rate, 'stale_input_ticks': result.stale_ticks,
                             'waiting_ticks': result.waiting_ticks,
                             'wall_seconds': result.wall_seconds})
                trajectory = np.array(tracker.trajectory, dtype=float).reshape(-1, 4)
                np.savetxt(os.path.join(folder, 'trajectory.csv'), trajectory, fmt='%.4f', delimiter=',',
                           header='t,x,y,yaw', comments='')
                shown[driver, index] = (result.obstacles, scenario.spawn, scenario.goal, trajectory, result.outcome)
                write_csv(csv_path, rows)  # after every episode: an interrupted run keeps what it measured
                bar.update(1)
    finally:
        bar.close()
        observer.close()
    import time
    evaluated = f'policy {os.path.basename(args.policy)}' if 'policy' in drivers else drivers[0]
    write_report(report_path, rows, drivers, shown, spec.goal_tolerance,
                 f'{evaluated} on {os.path.basename(spec_path)}, seed {args.seed}, episodes 0-{args.episodes - 1} '
                 f'({spec.episode_duration:g} s each), {time.strftime("%Y-%m-%d")}')
    for entry in summary(rows, drivers):
        print(summary_line(entry))
    print(f'wrote {csv_path} and {report_path}')
    return 0
