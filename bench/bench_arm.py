"""Arm benchmark, ROS-free, for the rover, UR5, Panda, xArm7 and UR10 arms; ``make bench-arm``.

Sections (``--sections``, run in this order; each writes one raw CSV, one row per case):

* ``ik`` (here): inverse kinematics on seeded random reachable targets (a configuration drawn uniformly
  within the joint limits, its tool pose by forward kinematics). Full 6-D pose for UR5 and Panda, tool
  position + pitch for the rover's 4-DOF arm.
* ``planning`` (bench/bench_arm_planning.py): random feasible queries in a cluttered scene per arm,
  RRT-Connect with MuJoCo collision checks, every path re-checked densely.
* ``tracking`` (bench/bench_arm_tracking.py): planned, jerk-limited trajectories executed by the
  simulator's arm controller: worst tracking error, the sampled profiles against the limits.
* ``pick`` (bench/bench_arm_pick.py): seeded cube placements picked from the floor and placed in a bin
  by the rover, simulator core, real contact; the failure's code and reason per placement.

Every solution is re-checked here once more with the robot tree's own forward kinematics
(robotsim_core.description.kinematics, not the chain the solver uses) and with Pinocchio's on the robot's original
URDF (``pin``, installed with the test dependencies): a row counts as a success only if both re-checks are within
0.1 mm / 0.1 deg too.

Writes into --out: ik.csv, planning.csv, tracking.csv, pick.csv, summary.json and summary.md (per arm and
section: success with its Wilson 95 % interval and the section's figures; the machine). ``--write-readme``
also puts summary.md between the arm-bench markers of README.md. ``--check DIR`` re-runs with the settings
of the run in DIR and compares every row of every section (all columns but the wall-clock and CPU times),
exiting 1 on a difference. A section is a function producing a :class:`Section` (rows, summary, Markdown,
the columns that identify a row and those that must repeat), registered in :data:`SECTIONS`.

    source scripts/env.sh && python bench/bench_arm.py --out out/bench-arm --write-readme
"""

from __future__ import annotations

import argparse
import csv
import json
import math
import sys
import time
import zlib
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from robotsim_core.arm.chain import ArmChain, ChainError
from robotsim_core.arm.ik import (ORIENTATION_TOLERANCE, POSITION_TOLERANCE, PoseTarget, PositionPitchTarget,
                                  solve_ik)
from robotsim_core.description import load_robot
from robotsim_core.errors import DescriptionError
from robotsim_core.geometry import rotation_angle_between
from robotsim_core.description.kinematics import forward_kinematics
from robotsim_core.statistics import wilson_interval

from bench_sim import machine as machine_line  # the simulator benchmark's machine line (selects the GL backend)
from readme_block import ReadmeBlockError, replace_block

ARMS = ('rover', 'ur5', 'panda', 'xarm7', 'ur10')
IK_SUCCESS_TARGET = 0.995
SOLUTION_TOLERANCE = 1e-9
"""--check: largest difference (rad or m) between two runs' solutions still counted as the same."""


WORKSPACE = Path(__file__).resolve().parents[1]
README_BLOCK = 'arm-bench'
"""README.md's block (``<!-- arm-bench:start -->`` ... ``<!-- arm-bench:end -->``) --write-readme replaces."""


def machine() -> str:
    """The machine line of ``make bench`` plus the libraries whose speed the arm sections measure."""
    from importlib.metadata import PackageNotFoundError, version
    try:
        ruckig = version('ruckig')
    except PackageNotFoundError:
        ruckig = 'not installed'
    return f'{machine_line()}, numpy {np.__version__}, ruckig {ruckig}'


@dataclass
class Section:
    """One part of the benchmark: its raw rows, a summary for JSON and Markdown lines."""

    name: str
    columns: tuple[str, ...]
    rows: list[dict] = field(default_factory=list)
    summary: dict = field(default_factory=dict)
    markdown: list[str] = field(default_factory=list)
    key: tuple[str, ...] = ()
    """Columns identifying a row (matched between runs under --check)."""
    repeatable: tuple[str, ...] = ()
    """Columns that must be equal between two runs with the same settings."""


def arm_rng(seed: int, arm: str) -> np.random.Generator:
    """Targets of one arm: independent of which other arms run."""
    return np.random.default_rng([seed, zlib.crc32(arm.encode())])


def percentile(values: list[float], q: float) -> float:
    return float(np.percentile(values, q)) if values else math.nan


# ---------------------------------------------------------------------------- IK section
IK_COLUMNS = ('arm', 'target', 'task', 'success', 'position_error_m', 'orientation_error_rad', 'iterations',
              'restarts', 'time_s', 'solution', 'reason')


def tree_errors(model, chain: ArmChain, positions, target) -> tuple[float, float]:
    """Errors of ``positions`` by the robot tree's forward kinematics (independent of the chain)."""
    poses = forward_kinematics(model.tree, chain.tree_positions(positions))
    return pose_errors(chain, np.linalg.inv(poses[chain.root]) @ poses[chain.tool.link] @ chain.tool.offset, target)


class PinocchioCheck:
    """Pinocchio's forward kinematics of the robot's *original* URDF (the overlay's ``urdf`` for an imported robot,
    the generated URDF for a robot robotsim describes itself): the oracle a solution is checked against, independent
    of robotsim's own kinematics. Owns the Pinocchio model and data it builds."""

    def __init__(self, model, chain: ArmChain):
        import pinocchio as pin
        import yaml

        from robotsim_core.description.load import resolve_robot_path
        from robotsim_core.description.urdf import default_package_resolver, resolve_mesh_path, tree_to_urdf

        self.pin, self.chain = pin, chain
        overlay = resolve_robot_path(model.source) if model.source.endswith('.yaml') else ''
        reference = (yaml.safe_load(Path(overlay).read_text()) or {}).get('urdf') if overlay else None
        if reference and isinstance(reference, str) and reference.startswith('package://'):
            path = resolve_mesh_path(reference, str(Path(overlay).parent), default_package_resolver(), overlay, 'urdf')
            self.model = pin.buildModelFromUrdf(path)
            self.origin = path
        elif reference:
            self.origin = str((Path(overlay).parent / reference).resolve())
            self.model = pin.buildModelFromUrdf(self.origin)
        else:
            self.model = pin.buildModelFromXML(tree_to_urdf(model.tree))
            self.origin = 'generated URDF'
        self.data = self.model.createData()

    def tool_pose(self, positions) -> np.ndarray:
        """The tool's pose in the chain's root link for the chain's joint positions."""
        pin = self.pin
        q = pin.neutral(self.model)
        for name, value in self.chain.tree_positions(positions).items():
            if not self.model.existJointName(name):
                continue
            joint = self.model.joints[self.model.getJointId(name)]
            if joint.nq == 2:  # continuous: (cos, sin)
                q[joint.idx_q:joint.idx_q + 2] = (math.cos(value), math.sin(value))
            else:
                q[joint.idx_q] = value
        pin.framesForwardKinematics(self.model, self.data, q)

        def frame(link: str) -> np.ndarray:
            return self.data.oMf[self.model.getFrameId(link)].homogeneous
        return np.linalg.inv(frame(self.chain.root)) @ frame(self.chain.tool.link) @ self.chain.tool.offset


def pose_errors(chain: ArmChain, pose: np.ndarray, target) -> tuple[float, float]:
    """(position, orientation or pitch) error of a tool pose against a target."""
    if isinstance(target, PoseTarget):
        return (float(np.linalg.norm(pose[:3, 3] - target.pose[:3, 3])),
                rotation_angle_between(pose[:3, :3], target.pose[:3, :3]))
    pitch_error = abs(math.remainder(chain.tool_pitch(pose) - target.pitch, 2 * math.pi))
    return float(np.linalg.norm(pose[:3, 3] - np.asarray(target.position))), pitch_error


def ik_section(args) -> Section:
    section = Section('ik', IK_COLUMNS, key=('arm', 'target'),
                      repeatable=('task', 'success', 'iterations', 'restarts', 'solution', 'reason'))
    for arm in args.arms:
        model = load_robot(arm)
        chain = ArmChain(model)
        oracle = PinocchioCheck(model, chain)
        rng = arm_rng(args.seed, arm)
        for index in range(args.ik_targets):
            reachable = chain.random_positions(rng)
            pose = chain.forward(reachable)
            target = (PoseTarget(pose) if chain.dof >= 6
                      else PositionPitchTarget(tuple(pose[:3, 3]), chain.tool_pitch(pose)))
            started = time.perf_counter()
            result = solve_ik(chain, target, seed=args.seed * 1_000_003 + index)
            elapsed = time.perf_counter() - started
            success, position_error, orientation_error = result.success, result.position_error, result.orientation_error
            reason = result.reason
            if success:
                position_error, orientation_error = tree_errors(model, chain, result.positions, target)
                if position_error > POSITION_TOLERANCE or orientation_error > ORIENTATION_TOLERANCE:
                    success, reason = False, 'tree forward kinematics disagrees with the solver'
                oracle_errors = pose_errors(chain, oracle.tool_pose(result.positions), target)
                if oracle_errors[0] > POSITION_TOLERANCE or oracle_errors[1] > ORIENTATION_TOLERANCE:
                    success, reason = False, f'Pinocchio on {oracle.origin} disagrees with the solver'
            section.rows.append({
                'arm': arm, 'target': index, 'task': target.task, 'success': int(success),
                'position_error_m': f'{position_error:.3e}', 'orientation_error_rad': f'{orientation_error:.3e}',
                'iterations': result.iterations, 'restarts': result.restarts, 'time_s': f'{elapsed:.6f}',
                'solution': ' '.join(repr(float(v)) for v in result.positions), 'reason': reason})
        mine = [row for row in section.rows if row['arm'] == arm]
        solved = [row for row in mine if row['success']]
        times = [float(row['time_s']) for row in mine]
        low, high = wilson_interval(len(solved), len(mine))
        worst_position = max((float(row['position_error_m']) for row in solved), default=math.nan)
        worst_orientation = max((float(row['orientation_error_rad']) for row in solved), default=math.nan)
        rate = len(solved) / len(mine) if mine else math.nan
        section.summary[arm] = {
            'task': mine[0]['task'] if mine else '', 'joints': chain.dof, 'tool': chain.tool.description,
            'targets': len(mine), 'successes': len(solved), 'success_rate': rate, 'wilson95': [low, high],
            'max_position_error_m': worst_position, 'max_orientation_error_rad': worst_orientation,
            'median_time_s': percentile(times, 50), 'p99_time_s': percentile(times, 99),
            'mean_iterations': float(np.mean([row['iterations'] for row in mine])) if mine else math.nan,
            'mean_restarts': float(np.mean([row['restarts'] for row in mine])) if mine else math.nan,
            'max_restarts': max((row['restarts'] for row in mine), default=0),
            'meets_target': bool(rate >= IK_SUCCESS_TARGET and worst_position <= POSITION_TOLERANCE
                                 and worst_orientation <= ORIENTATION_TOLERANCE),
        }
        print(f'ik {arm}: {len(solved)}/{len(mine)} solved, median {1000 * percentile(times, 50):.2f} ms', flush=True)
    section.markdown = [
        f'IK: {args.ik_targets} seeded random reachable targets per arm (seed {args.seed}); full 6-D pose for '
        f'>= 6 joints, tool position + pitch for the rover; success = within {POSITION_TOLERANCE * 1000:g} mm / '
        f'{math.degrees(ORIENTATION_TOLERANCE):g} deg by the tree\'s forward kinematics and by Pinocchio\'s on the '
        'original URDF.', '',
        '| arm | task | success | Wilson 95 % | max position error | max orientation error | median time '
        '| p99 time | mean restarts | target met |',
        '|---|---|---|---|---|---|---|---|---|---|']
    for arm, entry in section.summary.items():
        low, high = entry['wilson95']
        section.markdown.append(
            f"| {arm} ({entry['joints']} joints, tool {entry['tool']}) | {entry['task']} | "
            f"{entry['successes']}/{entry['targets']} ({100 * entry['success_rate']:.1f} %) | "
            f"{100 * low:.1f}-{100 * high:.1f} % | {1000 * entry['max_position_error_m']:.2g} mm | "
            f"{math.degrees(entry['max_orientation_error_rad']):.2g} deg | {1000 * entry['median_time_s']:.2f} ms | "
            f"{1000 * entry['p99_time_s']:.1f} ms | {entry['mean_restarts']:.2f} | "
            f"{'yes' if entry['meets_target'] else 'NO'} (>= {100 * IK_SUCCESS_TARGET:g} %) |")
    return section


# ---------------------------------------------------------------------------- planning section
def planning_section(args) -> Section:
    """Random feasible queries in a cluttered scene per arm (bench/bench_arm_planning.py)."""
    import bench_arm_planning as planning

    rows = []
    for arm in [arm for arm in args.arms if arm in planning.ARMS]:
        rows += planning.plan_arm(arm, args.seed, args.planning_queries)
        mine = [row for row in rows if row['arm'] == arm]
        times = [float(row['planning_time_ms']) for row in mine if row['success']]
        print(f'planning {arm}: {len(times)}/{len(mine)} planned, median {percentile(times, 50):.1f} ms', flush=True)
    summary = planning.summarize(rows)
    return Section('planning', planning.COLUMNS, rows, summary,
                   planning.markdown(summary, args.planning_queries, args.seed),
                   key=('arm', 'query'), repeatable=planning.REPEATABLE)


# ---------------------------------------------------------------------------- tracking section
def tracking_section(args) -> Section:
    """Planned, ruckig-timed trajectories executed by the simulator's arm controller (bench/bench_arm_tracking.py)."""
    import bench_arm_tracking as tracking

    arms = [arm for arm in args.arms if arm in tracking.ARMS]
    rows = []
    for arm in arms:
        rows += tracking.track_arm(arm, args.seed, args.tracking_trajectories, args.tracking_dt)
        mine = [row for row in rows if row['arm'] == arm]
        print(f'tracking {arm}: {sum(int(row["success"]) for row in mine)}/{len(mine)} within '
              f'{tracking.TRACKING_TARGET} rad and the limits', flush=True)
    summary = tracking.summarize(rows)
    return Section('tracking', tracking.COLUMNS, [{column: row.get(column, '') for column in tracking.COLUMNS}
                                                  for row in rows], summary,
                   tracking.markdown(summary, args.tracking_trajectories, args.seed, args.tracking_dt),
                   key=('arm', 'trajectory'), repeatable=tracking.REPEATABLE)


# ---------------------------------------------------------------------------- pick-and-place section
def pick_section(args) -> Section:
    """Seeded cube placements picked and placed in the bin by the rover, simulator core (bench/bench_arm_pick.py)."""
    import bench_arm_pick as pick

    rows = pick.run(args.seed, args.pick_placements, report=lambda line: print(line, flush=True))
    summary = pick.summarize(rows)
    print(f'pick: {summary["successes"]}/{summary["placements"]} placed in the bin', flush=True)
    return Section('pick', pick.COLUMNS, rows, summary, pick.markdown(summary, args.seed), key=('placement',),
                   repeatable=pick.REPEATABLE)


SECTIONS: dict[str, Callable[[argparse.Namespace], Section]] = {
    'ik': ik_section, 'planning': planning_section, 'tracking': tracking_section, 'pick': pick_section}
"""Benchmark sections by name, run in this order."""


# ---------------------------------------------------------------------------- output and --check
def write(out: Path, sections: list[Section], settings: dict) -> str:
    """Write the rows, summary.json and summary.md; return summary.md's text."""
    out.mkdir(parents=True, exist_ok=True)
    for section in sections:
        with open(out / f'{section.name}.csv', 'w', newline='') as stream:
            writer = csv.DictWriter(stream, fieldnames=section.columns)
            writer.writeheader()
            writer.writerows(section.rows)
    summary = {'settings': settings, 'machine': machine(), 'date': time.strftime('%Y-%m-%d %H:%M:%S'),
               **{section.name: section.summary for section in sections}}
    (out / 'summary.json').write_text(json.dumps(summary, indent=2) + '\n')
    lines = [f'Measured by `make bench-arm` on {summary["date"]}: {summary["machine"]}. Raw rows: '
             f'{", ".join(f"`{section.name}.csv`" for section in sections)} in `{out}`; '
             f'`make bench-arm CHECK={out}` re-runs every section and compares its rows (times aside).', '']
    for section in sections:
        lines += section.markdown + ['']
    text = '\n'.join(lines).rstrip('\n') + '\n'
    (out / 'summary.md').write_text(text)
    print(text)
    return text


def compare(previous: Path, sections: list[Section]) -> list[str]:
    """Differences between the rows of this run and those of the run in ``previous``."""
    differences = []
    for section in sections:
        path = previous / f'{section.name}.csv'
        if not path.is_file():
            differences.append(f'{section.name}: {path} is missing')
            continue
        with open(path, newline='') as stream:
            before = {tuple(row[k] for k in section.key): row for row in csv.DictReader(stream)}
        now = {tuple(str(row[k]) for k in section.key): row for row in section.rows}
        if set(before) != set(now):
            differences.append(f'{section.name}: rows differ ({len(before)} before, {len(now)} now)')
        for key in sorted(set(before) & set(now), key=str):
            for column in section.repeatable:
                old, new = before[key][column], str(now[key][column])
                if old != new and not _same_numbers(old, new):
                    differences.append(f'{section.name} {dict(zip(section.key, key))}: {column} was {old!r}, now {new!r}')
    return differences


def _same_numbers(old: str, new: str) -> bool:
    try:
        a, b = np.array(old.split(), dtype=float), np.array(new.split(), dtype=float)
    except ValueError:
        return False
    return a.shape == b.shape and bool(np.all(np.abs(a - b) <= SOLUTION_TOLERANCE))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument('--ik-targets', type=int, default=1000, help='random reachable targets per arm (default 1000)')
    parser.add_argument('--seed', type=int, default=0, help='seed of the targets and of the IK restarts (default 0)')
    parser.add_argument('--planning-queries', type=int, default=100,
                        help='random feasible queries per arm in the planning section (default 100)')
    parser.add_argument('--tracking-trajectories', type=int, default=30,
                        help='planned trajectories executed per arm in the tracking section (default 30)')
    parser.add_argument('--tracking-dt', type=float, default=0.01,
                        help='sample period (s) of the tracking section\'s timed trajectories (default 0.01)')
    parser.add_argument('--arms', default=','.join(ARMS), help=f'robots whose first arm is measured (default {",".join(ARMS)})')
    parser.add_argument('--pick-placements', type=int, default=20,
                        help='seeded cube placements of the pick-and-place section (default 20)')
    parser.add_argument('--sections', default=','.join(SECTIONS), help=f'sections to run (default {",".join(SECTIONS)})')
    parser.add_argument('--out', required=True, help='folder for the CSV rows and the summary')
    parser.add_argument('--check', metavar='DIR', help='re-run with the settings of the run in DIR, compare its rows; '
                                                       'exit 1 on a difference')
    parser.add_argument('--write-readme', action='store_true',
                        help=f'replace the {README_BLOCK} block of README.md with summary.md')
    args = parser.parse_args()
    if args.check:
        try:
            settings = json.loads((Path(args.check) / 'summary.json').read_text())['settings']
        except (OSError, ValueError, KeyError) as error:
            print(f'bench_arm: --check: expected a previous run in {args.check} (summary.json with settings): {error}',
                  file=sys.stderr)
            return 2
        args.ik_targets, args.seed, args.arms, args.sections = (settings['ik_targets'], settings['seed'],
                                                                ','.join(settings['arms']), ','.join(settings['sections']))
        args.tracking_trajectories = settings.get('tracking_trajectories', args.tracking_trajectories)
        args.tracking_dt = settings.get('tracking_dt', args.tracking_dt)
        args.pick_placements = settings.get('pick_placements', args.pick_placements)
        args.planning_queries = settings.get('planning_queries', args.planning_queries)
    args.arms = [arm for arm in args.arms.split(',') if arm]
    names = [name for name in args.sections.split(',') if name]
    unknown = [name for name in names if name not in SECTIONS]
    if unknown or args.ik_targets < 1:
        print(f'bench_arm: --sections: expected names from {list(SECTIONS)}, got {unknown}' if unknown
              else f'bench_arm: --ik-targets: expected a count >= 1, got {args.ik_targets}', file=sys.stderr)
        return 2
    for option in ('pick_placements', 'planning_queries'):
        if getattr(args, option) < 1:
            print(f'bench_arm: --{option.replace("_", "-")}: expected a count >= 1, got {getattr(args, option)}',
                  file=sys.stderr)
            return 2
    if args.tracking_trajectories < 1 or not (math.isfinite(args.tracking_dt) and 1e-4 <= args.tracking_dt <= 0.1):
        print(f'bench_arm: --tracking-trajectories: expected a count >= 1, got {args.tracking_trajectories}'
              if args.tracking_trajectories < 1 else
              f'bench_arm: --tracking-dt: expected a sample period from 0.0001 to 0.1 s, got {args.tracking_dt}',
              file=sys.stderr)
        return 2
    settings = {'ik_targets': args.ik_targets, 'seed': args.seed, 'arms': args.arms, 'sections': names,
                'tracking_trajectories': args.tracking_trajectories, 'tracking_dt': args.tracking_dt,
                'pick_placements': args.pick_placements, 'planning_queries': args.planning_queries}
    try:
        sections = [SECTIONS[name](args) for name in names]
    except (DescriptionError, ChainError) as error:  # an unknown robot in --arms, a robot without an arm
        print(f'bench_arm: --arms: {error}', file=sys.stderr)
        return 2
    text = write(Path(args.out), sections, settings)
    if args.check:
        differences = compare(Path(args.check), sections)
        for line in differences[:20]:
            print(f'bench_arm --check: {line}', file=sys.stderr)
        if differences:
            print(f'bench_arm --check: {len(differences)} differences from {args.check}', file=sys.stderr)
            return 1
        print(f'bench_arm --check: every row repeats {args.check} (timing aside)')
    if args.write_readme:  # after --check: a run that does not repeat its reference does not reach the README
        try:
            written = replace_block(WORKSPACE / 'README.md', README_BLOCK, text.rstrip('\n'))
        except ReadmeBlockError as error:
            print(f'bench_arm: --write-readme: {error}', file=sys.stderr)
            return 1
        print(f'{written}: the {README_BLOCK} block updated')
    return 0


if __name__ == '__main__':
    sys.exit(main())
