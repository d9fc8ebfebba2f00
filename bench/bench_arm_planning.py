"""Arm planning benchmark: random feasible queries in a cluttered scene per arm (rover, UR5, Panda).

A query is a start and a goal drawn uniformly within the arm's joint limits from a seeded generator,
each kept only when it is feasible: collision-free (the planning scene's margin included) and in the
same connected part of the free space as the arm's home configuration. Uniform samples alone are not
feasible queries: the UR5's shoulder has limits of +-2 pi, so an arm pointing up at -pi/2 and at
3 pi/2 are two configurations with the pedestal (arm pointing down) between them, and no path joins
them. The witness of connectedness is independent of the planner under test: a single RRT of
:data:`WITNESS_NODES` nodes grown from home (no goal, straight free edges); a sample is feasible when
a free straight edge joins it to one of its :data:`WITNESS_NEIGHBOURS` nearest tree nodes. Free
samples the witness cannot join are counted (``rejected`` column): they are in another part of the
free space or in a corner the witness did not reach.

Each query is planned with :func:`robotsim_sim.arm_planning.plan` (seed = the query's index), and
every path found is re-checked by an independent dense pass: a scene without margin, every edge sampled at a tenth of
the planner's resolution. One raw row per query; the summary per arm: success with its Wilson 95 % interval,
median and p99 planning time (wall clock, as the planner reports it), median CPU time of the process (less
sensitive to other load on the machine), re-check failures.

The ``planning`` section of ``bench/bench_arm.py`` (``make bench-arm``: planning.csv, --check compares every
row but the times). Alone: ``python bench/bench_arm_planning.py --out /tmp/arm_bench`` (scripts/env.sh
sourced, workspace built). Times vary between runs, and wall-clock times grow with other load on the
machine (on a shared 2-core machine, by a factor of 2 or more); everything else (queries, paths,
outcomes, collision checks) is identical for the same seed.
"""

from __future__ import annotations

import argparse
import csv
import math
import os
import statistics
import sys
import time
from pathlib import Path

# No ROS node is started here; should an import ever start one, it stays on this machine.
os.environ.setdefault('ROS_AUTOMATIC_DISCOVERY_RANGE', 'LOCALHOST')
os.environ.setdefault('ROS_DOMAIN_ID', '187')

import numpy as np  # noqa: E402

from robotsim_core.config_schema import parse_spec  # noqa: E402
from robotsim_core.description import load_robot  # noqa: E402
from robotsim_core.statistics import wilson_interval  # noqa: E402
from robotsim_sim.arm_planning import PlannerOptions, PlanningScene, dense_path_collision, plan  # noqa: E402
from robotsim_sim.scene import RobotPlacement  # noqa: E402
from robotsim_core.description.world_spec import WorldSpec  # noqa: E402

CSV_NAME = 'planning.csv'
COLUMNS = ('arm', 'seed', 'query', 'success', 'reason', 'planning_time_ms', 'cpu_time_ms', 'iterations',
           'collision_checks', 'raw_waypoints', 'waypoints', 'path_length_rad', 'recheck', 'rejected', 'start', 'goal')
REPEATABLE = ('seed', 'success', 'reason', 'iterations', 'collision_checks', 'raw_waypoints', 'waypoints',
              'path_length_rad', 'recheck', 'rejected', 'start', 'goal')
"""Columns equal between two runs with the same settings (all but the wall-clock and CPU times)."""
SUCCESS_TARGET = 0.99
"""Planning success required on random feasible queries in a cluttered scene."""
RECHECK_FRACTION = 0.1
"""The dense re-check samples edges at this fraction of the planner's resolution."""
MAX_SAMPLE_ATTEMPTS = 10000
"""Random configurations tried per start or goal before a scene counts as too cluttered to sample."""
WITNESS_NODES = 3000
"""Nodes of the tree grown from home that witnesses which samples are feasible."""
WITNESS_STEP = 0.5
"""Longest edge of the witness tree (rad, Euclidean)."""
WITNESS_NEIGHBOURS = 10
"""Nearest witness nodes tried for a straight free edge to a sample."""
HOMES = {
    'rover': (1.57, 0.3, 0.3, 0.0),                                  # leaning left, clear of the bars
    'ur5': (0.0, -1.57, 0.0, -1.57, 0.0, 0.0),                       # upright
    'panda': (0.0, -0.785, 0.0, -2.356, 0.0, 1.571, 0.785),          # Franka's "ready" pose
}
"""Per arm: a free configuration in the part of the free space the queries are drawn from."""

# Cluttered scenes, one per arm: obstacles inside the arm's reach on every side and above it.
CLUTTERED_WORLDS = {
    # The rover at the origin; its arm's shoulder is at (0.07, 0, 0.15), reach about 0.28 m.
    'rover': {
        'name': 'arm_clutter_rover',
        'boxes': [
            {'name': 'crate', 'position': [0.28, -0.18, 0.06], 'size': [0.12, 0.12, 0.12]},
            {'name': 'back_box', 'position': [-0.17, 0.0, 0.33], 'size': [0.08, 0.08, 0.06]},
            {'name': 'beam', 'position': [0.10, 0.0, 0.45], 'size': [0.05, 0.60, 0.03]},
            {'name': 'bar', 'position': [0.20, 0.0, 0.33], 'size': [0.03, 0.40, 0.03]},
            {'name': 'side_bar', 'position': [-0.02, -0.20, 0.30], 'size': [0.30, 0.03, 0.03]},
        ],
        'cylinders': [
            {'name': 'post', 'position': [0.30, 0.0, 0.15], 'radius': 0.03, 'height': 0.30},
            {'name': 'left_pillar', 'position': [0.07, 0.21, 0.20], 'radius': 0.03, 'height': 0.40},
            {'name': 'right_pillar', 'position': [0.10, -0.22, 0.20], 'radius': 0.03, 'height': 0.40},
        ],
    },
    # The UR5 on a 0.5 m pedestal (its overlay mounts it there), a table in front, a pole, a bin,
    # a lamp above and a wall behind; reach about 0.85 m.
    'ur5': {
        'name': 'arm_clutter_ur5',
        'walls': [{'start': [-0.6, -1.0], 'end': [-0.6, 1.0], 'height': 1.5}],
        'boxes': [
            {'name': 'pedestal', 'position': [0.0, 0.0, 0.24], 'size': [0.16, 0.16, 0.48]},
            {'name': 'table', 'position': [0.60, 0.0, 0.20], 'size': [0.50, 0.80, 0.40]},
            {'name': 'bin', 'position': [0.55, 0.32, 0.50], 'size': [0.20, 0.20, 0.20]},
            {'name': 'lamp', 'position': [0.35, -0.30, 1.25], 'size': [0.20, 0.20, 0.10]},
        ],
        'cylinders': [{'name': 'pole', 'position': [0.0, 0.55, 0.60], 'radius': 0.05, 'height': 1.20}],
    },
    # The Panda on the floor at the origin, a table in front with a block on it, a pole, a shelf
    # and a beam overhead; reach about 0.85 m.
    'panda': {
        'name': 'arm_clutter_panda',
        'boxes': [
            {'name': 'table', 'position': [0.55, 0.0, 0.15], 'size': [0.40, 0.80, 0.30]},
            {'name': 'block', 'position': [0.50, -0.20, 0.40], 'size': [0.10, 0.10, 0.20]},
            {'name': 'shelf', 'position': [-0.40, 0.30, 0.30], 'size': [0.30, 0.30, 0.60]},
            {'name': 'beam', 'position': [0.20, 0.0, 1.25], 'size': [0.10, 1.00, 0.05]},
        ],
        'cylinders': [{'name': 'pole', 'position': [0.30, 0.40, 0.50], 'radius': 0.04, 'height': 1.00}],
    },
}
ARMS = tuple(CLUTTERED_WORLDS)


def cluttered_scene(arm: str, margin: float | None = None) -> PlanningScene:
    """The planning scene of one benchmark arm (``margin`` None: the planner's default)."""
    world = parse_spec(WorldSpec, CLUTTERED_WORLDS[arm], f'{CLUTTERED_WORLDS[arm]["name"]} (bench_arm_planning.py)')
    placements = [RobotPlacement(load_robot(arm))]
    return PlanningScene(world, placements) if margin is None else PlanningScene(world, placements, margin=margin)


class Witness:
    """A tree grown from home by plain RRT (no goal): which samples are joined to home."""

    def __init__(self, scene: PlanningScene, home, rng: np.random.Generator, resolution: float):
        self.scene, self.resolution = scene, resolution
        home = np.asarray(home, dtype=float)
        hit = scene.in_collision(home)
        if hit is not None:
            raise RuntimeError(f'home of {scene.placement.model.name} is in collision: {hit}')
        nodes = [home]
        array = home[None, :]
        attempts = 0
        while len(nodes) < WITNESS_NODES:
            attempts += 1
            if attempts > 50 * WITNESS_NODES:
                raise RuntimeError(f'witness tree of {scene.placement.model.name} stuck at {len(nodes)} nodes')
            sample = rng.uniform(scene.lower, scene.upper)
            near = array[int(np.argmin(np.sum((array - sample) ** 2, axis=1)))]
            step = sample - near
            distance = float(np.linalg.norm(step))
            new = sample if distance <= WITNESS_STEP else near + step * (WITNESS_STEP / distance)
            if scene.segment_free(near, new, resolution):
                nodes.append(new)
                array = np.array(nodes)
        self.nodes = array

    def joins(self, q: np.ndarray) -> bool:
        order = np.argsort(np.sum((self.nodes - q) ** 2, axis=1))[:WITNESS_NEIGHBOURS]
        return any(self.scene.segment_free(self.nodes[index], q, self.resolution) for index in order)


def feasible_configuration(scene: PlanningScene, witness: Witness, rng: np.random.Generator) -> tuple[np.ndarray, int]:
    """(a random free configuration the witness joins to home, free samples rejected before it)."""
    rejected = 0
    for _ in range(MAX_SAMPLE_ATTEMPTS):
        q = rng.uniform(scene.lower, scene.upper)
        if scene.in_collision(q) is not None:
            continue
        if witness.joins(q):
            return q, rejected
        rejected += 1
    raise RuntimeError(f'no feasible configuration of {scene.placement.model.name} in '
                       f'{MAX_SAMPLE_ATTEMPTS} random samples: the benchmark scene is too cluttered')


def _vector(q) -> str:
    return ' '.join(f'{value:.6f}' for value in q)


def plan_arm(arm: str, seed: int, queries: int = 100, options: PlannerOptions | None = None,
             progress=None) -> list[dict]:
    """Plan ``queries`` random feasible queries of one arm in its cluttered scene; one raw row per query."""
    options = options or PlannerOptions()
    scene = cluttered_scene(arm)
    recheck_scene = cluttered_scene(arm, margin=0.0)
    rng = np.random.default_rng([seed, ARMS.index(arm)])
    witness = Witness(scene, HOMES[arm], rng, options.resolution)
    rows = []
    for query in range(queries):
        (start, rejected_start), (goal, rejected_goal) = (feasible_configuration(scene, witness, rng)
                                                          for _ in range(2))
        cpu_began = time.process_time()
        result = plan(scene, start, goal, seed=query, options=options)
        cpu_time = time.process_time() - cpu_began
        recheck = ''
        if result.success:
            hit = dense_path_collision(recheck_scene, result.path, options.resolution * RECHECK_FRACTION)
            recheck = 'ok' if hit is None else f'edge {hit[0]}: {hit[1]}'
        rows.append({'arm': arm, 'seed': seed, 'query': query, 'success': int(result.success),
                     'reason': result.reason, 'planning_time_ms': round(result.planning_time * 1000, 3),
                     'cpu_time_ms': round(cpu_time * 1000, 3),
                     'iterations': result.iterations, 'collision_checks': result.collision_checks,
                     'raw_waypoints': result.raw_waypoints, 'waypoints': len(result.path),
                     'path_length_rad': round(result.length, 6), 'recheck': recheck,
                     'rejected': rejected_start + rejected_goal,
                     'start': _vector(start), 'goal': _vector(goal)})
        if progress is not None:
            progress(rows[-1])
    return rows


def run_planning(out_dir, seed: int, queries: int = 100, arms=ARMS, options: PlannerOptions | None = None,
                 progress=None) -> list[dict]:
    """Plan ``queries`` random feasible queries per arm; write the raw rows to ``<out_dir>/planning.csv``
    and return them."""
    rows = []
    for arm in arms:
        rows += plan_arm(arm, seed, queries, options, progress)
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    with open(out_dir / CSV_NAME, 'w', newline='') as stream:
        writer = csv.DictWriter(stream, fieldnames=COLUMNS)
        writer.writeheader()
        writer.writerows(rows)
    return rows


def summarize(rows: list[dict]) -> dict:
    """Per arm: queries, successes, rate with its Wilson 95 % interval, median and p99 planning time
    (successful queries), median CPU time and collision checks, re-check failures, failure reasons."""
    summary = {}
    for arm in dict.fromkeys(row['arm'] for row in rows):
        mine = [row for row in rows if row['arm'] == arm]
        solved = [row for row in mine if int(row['success'])]
        low, high = wilson_interval(len(solved), len(mine))
        times = [float(row['planning_time_ms']) for row in solved]
        cpu_times = [float(row['cpu_time_ms']) for row in solved]
        rate = len(solved) / len(mine)
        recheck_failures = sum(row['recheck'] not in ('', 'ok') for row in mine)
        summary[arm] = {
            'queries': len(mine), 'successes': len(solved), 'success_rate': rate, 'wilson95': [low, high],
            'median_planning_ms': statistics.median(times) if times else math.nan,
            'p99_planning_ms': float(np.percentile(times, 99)) if times else math.nan,
            'median_cpu_ms': statistics.median(cpu_times) if cpu_times else math.nan,
            'median_collision_checks': (statistics.median(int(row['collision_checks']) for row in solved)
                                        if solved else 0),
            'median_waypoints': statistics.median(int(row['waypoints']) for row in solved) if solved else 0,
            'recheck_failures': recheck_failures,
            'rejected_samples': sum(int(row['rejected']) for row in mine),
            'failures': sorted({row['reason'] for row in mine if not int(row['success'])}),
            'meets_target': bool(rate >= SUCCESS_TARGET and recheck_failures == 0),
        }
    return summary


def markdown(summary: dict, queries: int, seed: int) -> list[str]:
    lines = [f'Planning: {queries} random feasible queries per arm (seed {seed}) in a cluttered scene per arm '
             '(bench/bench_arm_planning.py: obstacles inside the reach on every side and above), RRT-Connect with '
             'MuJoCo collision checks and shortcutting; every path re-checked densely without margin.', '',
             '| arm | success | Wilson 95 % | median planning time | p99 | median CPU time | median collision checks '
             '| median waypoints | dense re-check | free samples not joined to home | target met |',
             '|---|---|---|---|---|---|---|---|---|---|---|']
    for arm, entry in summary.items():
        low, high = entry['wilson95']
        lines.append(
            f"| {arm} | {entry['successes']}/{entry['queries']} ({100 * entry['success_rate']:.1f} %) | "
            f"{100 * low:.1f}-{100 * high:.1f} % | {entry['median_planning_ms']:.1f} ms | "
            f"{entry['p99_planning_ms']:.1f} ms | {entry['median_cpu_ms']:.1f} ms | "
            f"{entry['median_collision_checks']:.0f} | {entry['median_waypoints']:.0f} | "
            f"{entry['successes'] - entry['recheck_failures']}/{entry['successes']} free | "
            f"{entry['rejected_samples']} | {'yes' if entry['meets_target'] else 'NO'} "
            f"(>= {100 * SUCCESS_TARGET:g} %) |")
    for arm, entry in summary.items():
        for reason in entry['failures']:
            lines.append(f'- {arm} failure: {reason}')
    return lines


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--out', default='arm_bench', help=f'directory for {CSV_NAME}')
    parser.add_argument('--seed', type=int, default=0, help='seed of the queries')
    parser.add_argument('--queries', type=int, default=100, help='queries per arm')
    parser.add_argument('--arms', nargs='+', choices=ARMS, default=list(ARMS), help='arms to benchmark')
    args = parser.parse_args(argv)
    if args.queries < 1:
        parser.error(f'--queries: expected at least 1, got {args.queries}')
    rows = run_planning(args.out, args.seed, args.queries, args.arms)
    print('\n'.join(markdown(summarize(rows), args.queries, args.seed)))
    print(f'raw rows: {Path(args.out) / CSV_NAME}', file=sys.stderr)
    return 0


if __name__ == '__main__':
    sys.exit(main())
