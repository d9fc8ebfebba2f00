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
from dataclasses import dataclass

from robotsim_core.drivers import evaluated_drivers
from robotsim_core.errors import DescriptionError

EVALUATION_DRIVERS = evaluated_drivers()
"""From the driver table (robotsim_core.drivers)."""
DEFAULT_RANDOMIZATION = 'room_obstacles.yaml'
SLOWEST_PACE = 0.25
"""The slowest real-time factor auto pacing goes down to when a driver's inputs still go stale."""
LOST_POSE_RUNS = 2
"""Runs again of an episode whose ground truth came with gaps (its outcome could hang on a missing pose)."""
ERROR_RUNS = 2
"""Runs again of an episode whose bringup failed to start, stopped early or stalled (``error``: the graph's doing,
not the driver's decision; in lockstep a run again decides the same outcome the first would have)."""
SHIELDED = 'policy+shield'
"""The rows of the policy driven through its velocity shield (the node's ``shield:=true``)."""
SHIELD_CHOICES = ('off', 'on', 'both')
MAX_WORKERS = 32
"""Parallel episodes: each is a simulator and a driver node, and each worker a ROS domain of its own."""


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
                        help='auto: as fast as possible (with --no-lockstep: while the driver keeps up in sim time '
                             'on fresh inputs, else again at 1.0, 0.5, 0.25); or a number')
    parser.add_argument('--no-lockstep', dest='lockstep', action='store_false',
                        help="let the simulator run free of the driver's decisions (by default it waits for each: "
                             'outcomes independent of pace and load)')
    parser.add_argument('--shield', choices=SHIELD_CHOICES, default='both',
                        help="--driver policy: evaluate the policy's own commands (off), through the policy node's "
                             f"velocity shield (on: rows '{SHIELDED}'), or both on the same episodes (default)")
    parser.add_argument('--workers', type=int, default=1,
                        help=f'episodes run in parallel, each worker with its own ROS domain (1 ... {MAX_WORKERS}; '
                             'the rows are the same for any count)')
    parser.add_argument('--executor', choices=['local', 'ray'], default='local',
                        help='where the workers run: local processes, or Ray actors (a local Ray instance, or '
                             '--ray-address), as robotsim dataset generate --executor')
    parser.add_argument('--ray-address', help='with --executor ray: an existing Ray cluster (--out on a file system '
                                              'every node mounts at the same path)')
    parser.add_argument('--no-progress', action='store_true', help='no progress bar')


class _Refused(ValueError):
    """Bad input: one line, exit 2."""


def _drivers(args) -> list[str]:
    """The rows' driver labels: the evaluated driver (the policy once or twice, by --shield), then the baselines."""
    drivers = [args.driver] if args.driver != 'policy' else \
        {'off': ['policy'], 'on': [SHIELDED], 'both': ['policy', SHIELDED]}[args.shield]
    for name in filter(None, (part.strip() for part in args.baselines.split(','))):
        if name not in EVALUATION_DRIVERS:
            raise _Refused(f'--baselines: expected names from {", ".join(EVALUATION_DRIVERS)}, got {name!r}')
        if name not in drivers and not (name == 'policy' and SHIELDED in drivers):
            drivers.append(name)
    return drivers


def launched(label: str) -> tuple[str, bool]:
    """(driver:= of the launch, shield) of a row label."""
    return ('policy', True) if label == SHIELDED else (label, False)


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
    if not any(launched(label)[0] == 'policy' for label in drivers):
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
    from .evaluation import SharedDomainError
    try:
        return _run(args)
    except (_Refused, DescriptionError, SharedDomainError) as error:
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
    if not 1 <= args.workers <= MAX_WORKERS:
        raise _Refused(f'--workers: expected a whole number from 1 to {MAX_WORKERS}, got {args.workers}')
    if args.ray_address is not None and args.executor != 'ray':
        raise _Refused(f'--ray-address: applies only with --executor ray (got --executor {args.executor})')
    if args.shield != 'both' and args.driver != 'policy':
        raise _Refused(f'--shield: applies only to --driver policy (the policy node\'s shield), not --driver {args.driver}')
    drivers = _drivers(args)
    if args.seed is None:
        args.seed = drawn_seed(args.policy if args.driver == 'policy' or 'policy' in drivers else '')
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
    import time

    from tqdm import tqdm

    from .evaluation import summary, summary_line, write_csv, write_report

    try:
        os.makedirs(os.path.join(args.out, 'episodes'), exist_ok=True)
    except OSError as error:  # checked before; what changed since (a file put there, a full disk) is one line too
        raise _Refused(f'--out {args.out}: cannot create the folder ({error.strerror})') from None
    csv_path, report_path = os.path.join(args.out, 'episodes.csv'), os.path.join(args.out, 'report.png')
    uses_image = bool(runtime and runtime.spec.uses_image)
    print(f'evaluating {", ".join(drivers)} on {args.episodes} episodes of {spec_path}, seed {args.seed}'
          + (f', {args.workers} workers' if args.workers > 1 else ''))
    tasks = [EpisodeTask(label, index, args.seed, os.path.abspath(spec_path), os.path.abspath(args.out), pacing,
                         os.path.abspath(args.policy) if args.policy else '', uses_image, args.lockstep)
             for label in drivers for index in range(args.episodes)]
    order = {(task.label, task.index): k for k, task in enumerate(tasks)}
    rows, shown = [], {}
    bar = tqdm(total=len(tasks), desc='evaluate', unit='episode', file=sys.stderr, disable=args.no_progress)
    try:
        for done in _episodes(tasks, args.workers, args.executor, args.ray_address):
            for line in done['lines']:
                bar.write(line)
            rows.append(done['row'])
            rows.sort(key=lambda row: order[row['driver'], row['episode']])
            shown[done['row']['driver'], done['row']['episode']] = done['shown']
            write_csv(csv_path, rows)  # after every episode: an interrupted run keeps what it measured
            bar.set_postfix(driver=done['row']['driver'], episode=done['row']['episode'], outcome=done['row']['outcome'])
            bar.update(1)
    finally:
        bar.close()
    evaluated = f'policy {os.path.basename(args.policy)}' if args.driver == 'policy' else drivers[0]
    write_report(report_path, rows, drivers, shown, spec.goal_tolerance,
                 f'{evaluated} on {os.path.basename(spec_path)}, seed {args.seed}, episodes 0-{args.episodes - 1} '
                 f'({spec.episode_duration:g} s each), {time.strftime("%Y-%m-%d")}')
    for entry in summary(rows, drivers):
        print(summary_line(entry))
    print(f'wrote {csv_path} and {report_path}')
    return 0


# ----------------------------------------------------------------------------- one episode, in any worker
@dataclass(frozen=True)
class EpisodeTask:
    """One episode of one row label: everything a worker process needs (picklable, absolute paths)."""
    label: str
    index: int
    seed: int
    spec_path: str
    out: str
    pacing: float | None
    """None: auto (as fast as possible, slower while the driver does not keep up); else the fixed factor."""
    policy: str
    uses_image: bool
    lockstep: bool = True
    """The simulator waits for each of the driver's decisions: no re-runs, the outcome is the same at any pace."""


_observer = None
"""The worker's GraphObserver (one rclpy context per process, on the worker's ROS domain), made at its first episode."""


def _worker_observer():
    global _observer
    if _observer is None:
        import atexit

        from .ros.evaluation_graph import GraphObserver
        _observer = GraphObserver()
        atexit.register(_observer.close)
    return _observer


def evaluate_episode(task: EpisodeTask) -> dict:
    """Run one episode through the ROS graph with this process's observer: its row, what the report draws of it,
    and the lines to print. Auto pacing is the episode's own (as fast as possible, then 1.0, 0.5, 0.25 while
    the driver does not keep up), so its row does not depend on which worker ran it or what ran before."""
    import numpy as np

    from .randomization import Randomizer, load_randomization
    from .ros.evaluation_graph import last_lines, run_graph_episode

    spec = load_randomization(task.spec_path)
    scenario = Randomizer(spec, task.seed).scenario(task.index)
    driver, shield = launched(task.label)
    folder = os.path.join(task.out, 'episodes', f'{task.label}-{task.index}')
    real_time_factor = 0.0 if task.pacing is None else task.pacing
    lines = []

    def run(factor: float):
        return run_graph_episode(_worker_observer(), scenario, spec, driver, folder, factor, task.policy,
                                 task.uses_image, shield, task.lockstep)
    result = run(real_time_factor)
    auto = task.pacing is None and not task.lockstep  # in lockstep nothing needs running again slower
    if auto and task.index == 0:
        lines.append(f'{task.label}: /cmd_vel at {result.command_rate:.1f} Hz of sim time (nominal '
                     f'{result.nominal_rate:g}) at real_time_factor 0: '
                     + ('keeps up' if result.kept_up else 'falls behind'))
    while auto and not result.kept_up and real_time_factor != SLOWEST_PACE:
        real_time_factor = 1.0 if real_time_factor == 0 else max(SLOWEST_PACE, real_time_factor / 2)
        why = (f'/cmd_vel at {result.command_rate:.1f} of {result.nominal_rate:g} Hz; ticks '
               + (f'stale {result.stale_ticks}, waiting {result.waiting_ticks}' if result.ticks else 'not reported'))
        lines.append(f'{task.label}: episode {task.index} again at real_time_factor {real_time_factor:g} ({why})')
        result = run(real_time_factor)
    for _ in range(ERROR_RUNS):
        if result.outcome != 'error':
            break
        lines.append(f'{task.label}: episode {task.index} again: the bringup stopped early or stalled '
                     f'({last_lines(result.log, 1)})')
        result = run(real_time_factor)
    for _ in range(LOST_POSE_RUNS):
        if not result.lost_poses or result.outcome == 'error':
            break
        lines.append(f'{task.label}: episode {task.index} again: {result.lost_poses} gaps in the ground truth received '
                     '(a loaded machine held the evaluation back; a pose the outcome depends on may be missing)')
        result = run(real_time_factor)
    if result.lost_poses:
        lines.append(f'{task.label} episode {task.index}: {result.lost_poses} gaps in the ground truth after '
                     f'{LOST_POSE_RUNS + 1} runs; its outcome may have missed a pose')
    if not result.kept_up and result.outcome != 'error':
        lines.append(f'{task.label} episode {task.index}: the driver did not keep up at real_time_factor '
                     f'{real_time_factor:g} (ticks {result.ticks or "not reported"}): this machine\'s load, '
                     'not the driver, may have decided its outcome')
    if result.outcome == 'error':
        lines.append(f'{task.label} episode {task.index}: the bringup stopped early ({result.log}): '
                     f'{last_lines(result.log)}')
    tracker = result.tracker
    row = {'driver': task.label, 'seed': task.seed, 'episode': task.index, 'outcome': result.outcome,
           'sim_time': tracker.end_time, 'path_length': tracker.path_length, 'min_clearance': tracker.min_clearance,
           'collisions': tracker.collisions, 'final_goal_distance': tracker.final_goal_distance,
           'real_time_factor': real_time_factor, 'lockstep': str(task.lockstep).lower(), 'command_rate': result.command_rate,
           'nominal_command_rate': result.nominal_rate, 'stale_input_ticks': result.stale_ticks,
           'waiting_ticks': result.waiting_ticks, 'lost_poses': result.lost_poses, 'wall_seconds': result.wall_seconds}
    trajectory = np.array(tracker.trajectory, dtype=float).reshape(-1, 4)
    np.savetxt(os.path.join(folder, 'trajectory.csv'), trajectory, fmt='%.4f', delimiter=',',
               header='t,x,y,yaw', comments='')
    return {'row': row, 'lines': lines,
            'shown': (result.obstacles, scenario.spawn, scenario.goal, trajectory, result.outcome)}


# ----------------------------------------------------------------------------- workers
def worker_domains(workers: int) -> list[int]:
    """The ROS domain of each worker: this process's (ROS_DOMAIN_ID) and the next ones (0 ... 232)."""
    base = int(os.environ.get('ROS_DOMAIN_ID', '0') or 0)
    return [(base + k) % 233 for k in range(workers)]


def _take_domain(domains, parent: int) -> None:
    """Pool initializer: this worker process's ROS domain, for its observer and the launches it starts; the worker
    ends with ``parent`` (robotsim_core.processes.exit_with_parent)."""
    from robotsim_core.processes import exit_with_parent
    exit_with_parent(parent)
    os.environ['ROS_DOMAIN_ID'] = str(domains.get())


class EvaluationWorker:
    """A Ray actor running episodes on a ROS domain of its own (set before its observer's rclpy context exists, and
    inherited by the launches it starts); owns that observer and closes it."""

    def __init__(self, domain: int):
        os.environ['ROS_DOMAIN_ID'] = str(domain)

    def run(self, task: EpisodeTask) -> dict:
        return evaluate_episode(task)

    def close(self) -> None:
        global _observer
        if _observer is not None:
            _observer.close()
            _observer = None


def _ray_episodes(tasks: list[EpisodeTask], workers: int, address: str | None):
    """Yield evaluate_episode's results as Ray actors finish them: ``workers`` actors, each on its own ROS domain,
    each given the next task when it is free."""
    from .dataset import DatasetError, ray_session
    try:
        with ray_session(workers, address) as ray:
            actor_class = ray.remote(num_cpus=1, max_restarts=0)(EvaluationWorker)
            actors = [actor_class.remote(domain) for domain in worker_domains(workers)]
            queue, pending = list(tasks), {}
            for actor in actors:
                if queue:
                    pending[actor.run.remote(queue.pop(0))] = actor
            while pending:
                done, _ = ray.wait(list(pending), num_returns=1)
                actor = pending.pop(done[0])
                if queue:
                    pending[actor.run.remote(queue.pop(0))] = actor
                yield ray.get(done[0])
            ray.get([actor.close.remote() for actor in actors])
    except DatasetError as error:  # Ray is not installed: one line
        raise _Refused(str(error)) from None


def _episodes(tasks: list[EpisodeTask], workers: int, executor: str = 'local', address: str | None = None):
    """Yield evaluate_episode's results as episodes finish: in this process for one local worker, else in worker
    processes (spawned: rclpy and MuJoCo do not survive fork) or Ray actors, each on its own ROS domain."""
    if executor == 'ray':
        yield from _ray_episodes(tasks, workers, address)
        return
    if workers <= 1:
        try:
            for task in tasks:
                yield evaluate_episode(task)
        finally:
            global _observer
            if _observer is not None:
                _observer.close()
                _observer = None
        return
    import multiprocessing

    from robotsim_core.processes import pool_results
    domains = multiprocessing.get_context('spawn').Queue()
    for domain in worker_domains(workers):
        domains.put(domain)
    yield from pool_results(evaluate_episode, [(task,) for task in tasks], workers, _take_domain,
                            (domains, os.getpid()))
