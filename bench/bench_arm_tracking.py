"""Arm tracking benchmark, ROS-free: planned, jerk-limited trajectories executed by the
simulator's arm controller, per arm (rover, UR5, Panda).

Each arm stands in its cluttered planning-benchmark scene (bench/bench_arm_planning.py), in a
:class:`robotsim_sim.simulation.Simulation` with the same world. From its home configuration it
executes ``--tracking-trajectories`` motions in a row: a random feasible goal (the planning
benchmark's sampler and witness, seeded), a path planned from the *measured* joint positions
(:func:`robotsim_sim.arm_planning.plan`), timed by :func:`robotsim_core.arm.timing.time_parameterize`
(positions, velocities and accelerations every ``--tracking-dt`` s), sent as a FollowJointTrajectory
goal to the simulation's arm controller (quintic interpolation between the samples, servo
feed-forward; :mod:`robotsim_sim.arm_controller`) and stepped until the goal ends.

Per trajectory (one raw row): the worst tracking error ``max |desired - measured|`` over all joints
and every physics step from the start to the trajectory's end (target <= 0.005 rad), the error once
it ended, the result code, and whether the sampled profile stays within the description's limits:
the largest ratio of |velocity|, |acceleration| and |jerk| (finite difference of the sampled
accelerations) to the joint's limit over the samples (ruckig's profile; a ratio above 1 + 1e-6 is a
limit exceeded), and, for information, of |velocity| and |acceleration| over the follower's
interpolated setpoints at every physics step (a quintic between two samples may pass a limit the
samples keep by a fraction of a percent).

Everything but the wall-clock columns repeats exactly for the same seed (MuJoCo is deterministic):
``bench_arm.py --check`` compares the rows. Alone:
``python bench/bench_arm_tracking.py --out /tmp/arm_tracking`` (scripts/env.sh sourced, workspace built).
"""

from __future__ import annotations

import argparse
import csv
import math
import os
import statistics
import sys
import time
import zlib
from pathlib import Path

os.environ.setdefault('ROS_AUTOMATIC_DISCOVERY_RANGE', 'LOCALHOST')
os.environ.setdefault('ROS_DOMAIN_ID', '188')

import mujoco  # noqa: E402
import numpy as np  # noqa: E402

from bench_arm_planning import CLUTTERED_WORLDS, HOMES, Witness, cluttered_scene, feasible_configuration  # noqa: E402
from robotsim_core.arm.timing import joint_limits_from_model, time_parameterize  # noqa: E402
from robotsim_core.config_schema import parse_spec  # noqa: E402
from robotsim_core.description import load_robot  # noqa: E402
from robotsim_core.statistics import wilson_interval  # noqa: E402
from robotsim_sim.arm_controller import ArmGoal, GoalStatus, ResultCode  # noqa: E402
from robotsim_sim.arm_planning import PlannerOptions, plan  # noqa: E402
from robotsim_sim.controllers import TrajectoryPoint  # noqa: E402
from robotsim_sim.scene import RobotPlacement  # noqa: E402
from robotsim_sim.simulation import SimOptions, Simulation  # noqa: E402
from robotsim_core.description.world_spec import WorldSpec  # noqa: E402

ARMS = tuple(CLUTTERED_WORLDS)
TRACKING_TARGET = 0.005
"""Worst tracking error (rad) a trajectory may have."""
LIMIT_RATIO_TOLERANCE = 1e-6
"""A profile value up to this fraction above its limit counts as within it (float round-off)."""
SETTLE = 0.5
"""Seconds the arm holds its home configuration before the first trajectory."""
CSV_NAME = 'tracking.csv'
COLUMNS = ('arm', 'trajectory', 'success', 'reason', 'status', 'code', 'waypoints', 'samples', 'duration_s',
           'worst_error_rad', 'worst_joint', 'final_error_rad', 'within_target',
           'sample_velocity_ratio', 'sample_acceleration_ratio', 'sample_jerk_ratio',
           'setpoint_velocity_ratio', 'setpoint_acceleration_ratio', 'within_limits', 'wall_time_s')
REPEATABLE = ('success', 'reason', 'status', 'code', 'waypoints', 'samples', 'duration_s', 'worst_error_rad',
              'worst_joint', 'final_error_rad', 'within_target', 'sample_velocity_ratio',
              'sample_acceleration_ratio', 'sample_jerk_ratio', 'setpoint_velocity_ratio',
              'setpoint_acceleration_ratio', 'within_limits')
"""Columns equal between two runs with the same settings (all but the wall-clock time)."""


def _ratio(values: np.ndarray, limits: np.ndarray) -> float:
    return float(np.max(np.abs(values) / limits)) if values.size else 0.0


def _sim_and_scene(arm: str):
    world = parse_spec(WorldSpec, CLUTTERED_WORLDS[arm], f'{CLUTTERED_WORLDS[arm]["name"]} (bench_arm_planning.py)')
    sim = Simulation(world, [RobotPlacement(load_robot(arm))], SimOptions(cameras=False))
    return sim, cluttered_scene(arm)


def _go_home(sim: Simulation, home) -> None:
    """Put the arm at ``home`` (teleported, at rest), hold it there and let the robot settle."""
    robot = sim.robots[0]
    sim.data.qpos[robot.arm_qpos] = home
    sim.data.qvel[:] = 0.0
    mujoco.mj_forward(sim.model, sim.data)
    robot.arm.hold(np.asarray(home, dtype=float))
    for _ in range(round(SETTLE / sim.model.opt.timestep)):
        sim.step()


def track_arm(arm: str, seed: int, trajectories: int, dt: float, options: PlannerOptions | None = None,
              progress=None) -> list[dict]:
    """Execute ``trajectories`` planned motions of one arm in a row; one row per trajectory."""
    options = options or PlannerOptions()
    sim, scene = _sim_and_scene(arm)
    robot = sim.robots[0]
    joints = list(robot.arm.joints)
    limits = joint_limits_from_model(robot.model, joints)
    velocity_limit = np.array([j.velocity for j in limits])
    acceleration_limit = np.array([j.acceleration for j in limits])
    jerk_limit = np.array([j.jerk for j in limits])
    lower, upper = np.array([j.lower for j in limits]), np.array([j.upper for j in limits])
    rng = np.random.default_rng([seed, zlib.crc32(arm.encode())])
    witness = Witness(scene, HOMES[arm], rng, options.resolution)
    _go_home(sim, HOMES[arm])
    timestep = sim.model.opt.timestep
    rows = []
    for index in range(trajectories):
        began = time.perf_counter()
        goal_q, _ = feasible_configuration(scene, witness, rng)
        start = np.clip(sim.data.qpos[robot.arm_qpos], lower, upper)
        scene.set_world_state(sim.data.qpos)
        row = {'arm': arm, 'trajectory': index}
        result = plan(scene, start, goal_q, seed=index, options=options)
        if not result.success:
            rows.append({**row, 'success': 0, 'reason': f'planning: {result.reason}',
                         'wall_time_s': f'{time.perf_counter() - began:.3f}'})
            continue
        timed = time_parameterize(result.path, limits, dt)
        jerks = np.diff(timed.accelerations, axis=0) / dt
        sample_ratios = (_ratio(timed.velocities, velocity_limit), _ratio(timed.accelerations, acceleration_limit),
                         _ratio(jerks, jerk_limit))
        points = [TrajectoryPoint(float(t), tuple(p), tuple(v), tuple(a)) for t, p, v, a in
                  zip(timed.time_from_start, timed.positions, timed.velocities, timed.accelerations)]
        token = (arm, index)
        started_at = sim.time
        sim.send_arm_goal(0, ArmGoal(joints, points), token)
        worst, worst_joint = 0.0, ''
        setpoint_velocity = setpoint_acceleration = 0.0
        outcome = None
        end = started_at + timed.duration
        limit_steps = round((timed.duration + 5.0) / timestep)
        for _ in range(limit_steps):
            sim.step()
            finished = [o for o in sim.take_controller_outcomes() if o.token == token]
            if sim.time <= end + 1e-9:
                desired = robot.arm.sample(sim.time)
                error = np.abs(desired.positions - sim.data.qpos[robot.arm_qpos])
                if error.max() > worst:
                    worst, worst_joint = float(error.max()), joints[int(np.argmax(error))]
                setpoint_velocity = max(setpoint_velocity, _ratio(desired.velocities, velocity_limit))
                setpoint_acceleration = max(setpoint_acceleration, _ratio(desired.accelerations, acceleration_limit))
            if finished:
                outcome = finished[0]
                break
        final_error = float(np.max(np.abs(timed.positions[-1] - sim.data.qpos[robot.arm_qpos])))
        ratios = (*sample_ratios, setpoint_velocity, setpoint_acceleration)
        within_limits = all(r <= 1 + LIMIT_RATIO_TOLERANCE for r in sample_ratios)
        succeeded = outcome is not None and outcome.status is GoalStatus.SUCCEEDED
        rows.append({**row, 'success': int(succeeded and worst <= TRACKING_TARGET and within_limits),
                     'reason': '' if outcome is None or succeeded else outcome.error_string,
                     'status': outcome.status.value if outcome else 'no result',
                     'code': ResultCode(outcome.code).name if outcome else '',
                     'waypoints': len(result.path), 'samples': len(timed.time_from_start),
                     'duration_s': f'{timed.duration:.3f}', 'worst_error_rad': f'{worst:.6e}', 'worst_joint': worst_joint,
                     'final_error_rad': f'{final_error:.6e}', 'within_target': int(worst <= TRACKING_TARGET),
                     'sample_velocity_ratio': f'{ratios[0]:.6f}', 'sample_acceleration_ratio': f'{ratios[1]:.6f}',
                     'sample_jerk_ratio': f'{ratios[2]:.6f}', 'setpoint_velocity_ratio': f'{ratios[3]:.6f}',
                     'setpoint_acceleration_ratio': f'{ratios[4]:.6f}', 'within_limits': int(within_limits),
                     'wall_time_s': f'{time.perf_counter() - began:.3f}'})
        if progress is not None:
            progress(rows[-1])
    return rows


def summarize(rows: list[dict]) -> dict:
    """Per arm: trajectories, successes with the Wilson 95 % interval, worst and median tracking error,
    largest limit ratios."""
    summary = {}
    for arm in dict.fromkeys(row['arm'] for row in rows):
        mine = [row for row in rows if row['arm'] == arm]
        executed = [row for row in mine if row.get('worst_error_rad', '') != '']
        errors = [float(row['worst_error_rad']) for row in executed]
        successes = sum(int(row['success']) for row in mine)
        low, high = wilson_interval(successes, len(mine))

        def largest(column):
            return max((float(row[column]) for row in executed), default=math.nan)
        summary[arm] = {
            'trajectories': len(mine), 'successes': successes, 'success_rate': successes / len(mine) if mine else math.nan,
            'wilson95': [low, high], 'max_tracking_error_rad': max(errors, default=math.nan),
            'median_tracking_error_rad': statistics.median(errors) if errors else math.nan,
            'max_final_error_rad': largest('final_error_rad'),
            'within_target': sum(int(row['within_target']) for row in executed),
            'within_limits': sum(int(row['within_limits']) for row in executed),
            'max_sample_velocity_ratio': largest('sample_velocity_ratio'),
            'max_sample_acceleration_ratio': largest('sample_acceleration_ratio'),
            'max_sample_jerk_ratio': largest('sample_jerk_ratio'),
            'max_setpoint_velocity_ratio': largest('setpoint_velocity_ratio'),
            'max_setpoint_acceleration_ratio': largest('setpoint_acceleration_ratio'),
            'failures': sorted({row['reason'] for row in mine if not int(row['success']) and row['reason']}),
            'meets_target': bool(executed and len(executed) == len(mine) and max(errors) <= TRACKING_TARGET
                                 and all(int(row['within_limits']) for row in executed)),
        }
    return summary


def markdown(summary: dict, trajectories: int, seed: int, dt: float) -> list[str]:
    lines = [f'Tracking: {trajectories} planned trajectories per arm in a row (seed {seed}) in the cluttered '
             f'planning scenes, timed by ruckig (samples every {dt:g} s) and executed by the simulator\'s arm '
             f'controller; tracking error = max |desired - measured| over joints and physics steps up to the '
             f'trajectory\'s end; limit ratio = largest |value| / limit (samples; interpolated setpoints).', '',
             '| arm | succeeded | Wilson 95 % | worst tracking error | median of worst | worst error at the end '
             '| max v / a / jerk ratio (samples) | max v / a ratio (setpoints) | target met |',
             '|---|---|---|---|---|---|---|---|---|']
    for arm, entry in summary.items():
        low, high = entry['wilson95']
        lines.append(
            f"| {arm} | {entry['successes']}/{entry['trajectories']} ({100 * entry['success_rate']:.1f} %) | "
            f"{100 * low:.1f}-{100 * high:.1f} % | "
            f"{entry['max_tracking_error_rad']:.2e} rad | {entry['median_tracking_error_rad']:.2e} rad | "
            f"{entry['max_final_error_rad']:.2e} rad | {entry['max_sample_velocity_ratio']:.4f} / "
            f"{entry['max_sample_acceleration_ratio']:.4f} / {entry['max_sample_jerk_ratio']:.4f} | "
            f"{entry['max_setpoint_velocity_ratio']:.4f} / {entry['max_setpoint_acceleration_ratio']:.4f} | "
            f"{'yes' if entry['meets_target'] else 'NO'} (<= {TRACKING_TARGET} rad, ratios <= 1) |")
    for arm, entry in summary.items():
        for reason in entry['failures']:
            lines.append(f'- {arm} failure: {reason}')
    return lines


def run_tracking(out_dir, seed: int, trajectories: int, arms=ARMS, dt: float = 0.01, progress=None) -> list[dict]:
    """Run every arm; write the raw rows to ``<out_dir>/tracking.csv`` and return them."""
    rows = []
    for arm in arms:
        rows += track_arm(arm, seed, trajectories, dt, progress=progress)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    with open(out / CSV_NAME, 'w', newline='') as stream:
        writer = csv.DictWriter(stream, fieldnames=COLUMNS)
        writer.writeheader()
        writer.writerows(rows)
    return rows


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--out', default='arm_bench', help=f'directory for {CSV_NAME}')
    parser.add_argument('--seed', type=int, default=0, help='seed of the goals')
    parser.add_argument('--tracking-trajectories', type=int, default=30, help='trajectories per arm')
    parser.add_argument('--tracking-dt', type=float, default=0.01, help='sample period of the timed trajectories (s)')
    parser.add_argument('--arms', nargs='+', choices=ARMS, default=list(ARMS), help='arms to benchmark')
    args = parser.parse_args(argv)
    if args.tracking_trajectories < 1:
        parser.error(f'--tracking-trajectories: expected at least 1, got {args.tracking_trajectories}')
    if not (math.isfinite(args.tracking_dt) and 1e-4 <= args.tracking_dt <= 0.1):
        parser.error(f'--tracking-dt: expected a sample period from 0.0001 to 0.1 s, got {args.tracking_dt}')
    rows = run_tracking(args.out, args.seed, args.tracking_trajectories, args.arms, args.tracking_dt,
                        progress=lambda row: print(f"{row['arm']} {row['trajectory']}: {row.get('worst_error_rad', '')} "
                                                   f"{row.get('code', row.get('reason', ''))}", file=sys.stderr))
    print('\n'.join(markdown(summarize(rows), args.tracking_trajectories, args.seed, args.tracking_dt)))
    print(f'raw rows: {Path(args.out) / CSV_NAME}', file=sys.stderr)
    return 0


if __name__ == '__main__':
    sys.exit(main())
