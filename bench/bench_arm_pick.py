"""Arm benchmark, pick-and-place section: the rover picks a 25 mm cube from the floor and places it in
a bin (world ``pick``), in the simulator core, for seeded cube placements.

Placements come from :func:`robotsim_sim.pick_place.sample_placements` (seed ``--seed``): uniform over an
annular sector in front of the arm (0.12-0.19 m from its first joint's axis, -100 to +25 deg) and over
the cube's yaw, clear of the rover and the bin. Each placement runs
:func:`robotsim_sim.pick_place.run_in_simulation` in a fresh simulation: planning with the arm core,
execution through the simulator's trajectory follower, the gripper closing on the cube (contact and
friction only) and the check that the cube lies in the bin. One CSV row per placement, with the
failure's code and reason; the summary gives the success rate with its Wilson 95 % interval and the
failures by code.

Everything but the wall-clock columns repeats exactly for the same seed on the same machine (MuJoCo,
inverse kinematics and the planner are deterministic; nothing depends on the clock).

Run through ``bench/bench_arm.py --sections pick`` (or alone:
``python bench/bench_arm_pick.py --placements 20 --seed 0 --out /tmp/pick-bench``; scripts/env.sh sourced,
workspace built).
"""

from __future__ import annotations

import argparse
import csv
import math
import os
import statistics
import sys
import time
from collections import Counter
from pathlib import Path

# No ROS node is started here; should an import ever start one, it stays on this machine.
os.environ.setdefault('ROS_AUTOMATIC_DISCOVERY_RANGE', 'LOCALHOST')
os.environ.setdefault('ROS_DOMAIN_ID', '188')

from robotsim_core.description import load_robot  # noqa: E402
from robotsim_core.statistics import wilson_interval  # noqa: E402
from robotsim_sim.arm_motion import ArmMotionPlanner  # noqa: E402
from robotsim_sim.pick_place import (PickPlaceOptions, PickWorld, PlacementRegion, run_in_simulation,  # noqa: E402
                                     sample_placements)
from robotsim_sim.scene import RobotPlacement, load_world, resolve_world_path  # noqa: E402

WORLD = 'pick'
ROBOT = 'rover'
SUCCESS_TARGET = 0.9
COLUMNS = ('placement', 'x_m', 'y_m', 'yaw_rad', 'success', 'code', 'stage', 'grasp_pitch_deg', 'place_pitch_deg',
           'grip_width_mm', 'cube_rise_mm', 'cube_end', 'motion_s', 'sim_s', 'planning_s', 'wall_s', 'reason')
REPEATABLE = ('x_m', 'y_m', 'yaw_rad', 'success', 'code', 'stage', 'grasp_pitch_deg', 'place_pitch_deg',
              'grip_width_mm', 'cube_rise_mm', 'cube_end', 'motion_s', 'sim_s', 'reason')
"""Columns that must repeat under --check (all but the wall-clock ones)."""


def placements(seed: int, count: int) -> list[tuple[float, float, float]]:
    world = load_world(resolve_world_path(WORLD))
    robots = [RobotPlacement(load_robot(ROBOT))]
    task = PickWorld.from_world(world, PickPlaceOptions())
    return sample_placements(ArmMotionPlanner(world, robots), task, count, seed, PlacementRegion())


def run(seed: int, count: int, report=print) -> list[dict]:
    """One row per placement (``count`` placements drawn from ``seed``)."""
    world = load_world(resolve_world_path(WORLD))
    robots = [RobotPlacement(load_robot(ROBOT))]
    rows = []
    for index, (x, y, yaw) in enumerate(placements(seed, count)):
        started = time.perf_counter()
        result, sim = run_in_simulation(world, robots, (x, y, yaw), seed=seed * 1_000_003 + index)
        wall = time.perf_counter() - started
        rows.append({
            'placement': index, 'x_m': f'{x:.4f}', 'y_m': f'{y:.4f}', 'yaw_rad': f'{yaw:.4f}',
            'success': int(result.success), 'code': result.code, 'stage': result.stage,
            'grasp_pitch_deg': _number(math.degrees(result.grasp_pitch), '.0f'),
            'place_pitch_deg': _number(math.degrees(result.place_pitch), '.0f'),
            'grip_width_mm': _number(1000 * result.grip_width, '.2f'),
            'cube_rise_mm': _number(1000 * result.cube_rise, '.1f'),
            'cube_end': ' '.join(f'{v:.4f}' for v in result.cube_end),
            'motion_s': f'{result.motion_time:.2f}', 'sim_s': f'{sim.time:.3f}',
            'planning_s': f'{result.planning_time:.3f}', 'wall_s': f'{wall:.2f}', 'reason': result.reason})
        report(f'pick {index}: ({x:.3f}, {y:.3f}) m, yaw {math.degrees(yaw):.0f} deg: '
               + ('placed' if result.success else f'{result.code}: {result.reason}'))
    return rows


def _number(value: float, spec: str) -> str:
    return format(value, spec) if math.isfinite(value) else ''


def summarize(rows: list[dict]) -> dict:
    successes = sum(int(row['success']) for row in rows)
    low, high = wilson_interval(successes, len(rows))
    failures = [row for row in rows if not int(row['success'])]
    planned = [float(row['planning_s']) for row in rows]
    placed = [float(row['motion_s']) for row in rows if int(row['success'])]
    rate = successes / len(rows) if rows else math.nan
    return {
        'world': WORLD, 'robot': ROBOT, 'placements': len(rows), 'successes': successes, 'success_rate': rate,
        'wilson95': [low, high], 'failures_by_code': dict(Counter(row['code'] for row in failures)),
        'failures': [{'placement': row['placement'], 'code': row['code'], 'stage': row['stage'],
                      'reason': row['reason']} for row in failures],
        'median_planning_s': statistics.median(planned) if planned else math.nan,
        'median_motion_s': statistics.median(placed) if placed else math.nan,
        'meets_target': bool(rows) and rate >= SUCCESS_TARGET,
    }


def markdown(summary: dict, seed: int) -> list[str]:
    low, high = summary['wilson95']
    lines = [
        f'Pick and place: the rover picks a 25 mm, 30 g cube from the floor and places it in a bin (world '
        f'{WORLD}), {summary["placements"]} seeded cube placements (seed {seed}; position and yaw uniform in front '
        'of the arm), simulator core, real contact (the cube is held by the fingers\' friction only).', '',
        '| placements | placed in the bin | Wilson 95 % | median planning time | median motion time | target met |',
        '|---|---|---|---|---|---|',
        f'| {summary["placements"]} | {summary["successes"]}/{summary["placements"]} '
        f'({100 * summary["success_rate"]:.0f} %) | {100 * low:.1f}-{100 * high:.1f} % | '
        f'{summary["median_planning_s"]:.2f} s | {summary["median_motion_s"]:.1f} s | '
        f'{"yes" if summary["meets_target"] else "NO"} (>= {100 * SUCCESS_TARGET:g} %) |']
    if summary['failures']:
        lines += ['', 'Failures:']
        lines += [f'- placement {failure["placement"]} ({failure["code"]}, in stage {failure["stage"]}): '
                  f'{failure["reason"]}' for failure in summary['failures']]
    return lines


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument('--placements', type=int, default=20, help='seeded cube placements (default 20)')
    parser.add_argument('--seed', type=int, default=0, help='seed of the placements (default 0)')
    parser.add_argument('--out', required=True, help='folder for pick.csv')
    args = parser.parse_args()
    if args.placements < 1:
        print(f'bench_arm_pick: --placements: expected a count >= 1, got {args.placements}', file=sys.stderr)
        return 2
    rows = run(args.seed, args.placements)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    with open(out / 'pick.csv', 'w', newline='') as stream:
        writer = csv.DictWriter(stream, fieldnames=COLUMNS)
        writer.writeheader()
        writer.writerows(rows)
    print('\n'.join(markdown(summarize(rows), args.seed)))
    return 0


if __name__ == '__main__':
    sys.exit(main())
