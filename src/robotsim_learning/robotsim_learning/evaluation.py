"""Closed-loop evaluation, the ROS-free part: episode outcome from ground truth, obstacle clearance from
the world geometry, success rates with Wilson intervals, the per-episode CSV and the report PNG.

``robotsim policy eval`` (:mod:`robotsim_learning.ros.evaluation_graph`) runs each episode through the ROS graph
and feeds every ``/sim/ground_truth`` pose to an :class:`EpisodeTracker`, which decides the outcome the
way the dataset's fast path does: ``success`` when the robot's centre is within the spec's
``goal_tolerance`` of the goal, ``collision`` when the robot touches an obstacle or a wall, ``timeout``
after ``episode_duration`` sim seconds (``error``: the bringup stopped before any of those).

Collisions come from geometry, not from the simulator: the robot's footprint (a rectangle per collision
shape, arm included, in its base frame) at the ground-truth pose against every wall,
box and cylinder of the episode's world taller than the robot drives over. The footprint touches an
obstacle when it comes within :data:`CONTACT_MARGIN` (MuJoCo's soft contacts let shapes sink a few mm into
each other, so a touch reads as a distance at or just below 0).
"""

from __future__ import annotations

import csv
import json
import math
import os
from dataclasses import dataclass, field

import numpy as np

from robotsim_core.statistics import wilson_interval

OUTCOMES = ('success', 'collision', 'timeout', 'error')
CSV_COLUMNS = ('driver', 'seed', 'episode', 'outcome', 'sim_time', 'path_length', 'min_clearance', 'collisions',
               'final_goal_distance', 'real_time_factor', 'lockstep', 'command_rate', 'nominal_command_rate',
               'stale_input_ticks', 'waiting_ticks', 'lost_poses', 'wall_seconds')
CONTACT_MARGIN = 0.002
"""Clearance (m) at or below which the footprint counts as touching an obstacle."""
STEP_HEIGHT = 0.03
"""Obstacles lower than this (a door threshold) are driven over, not collided with (as the expert's grid)."""


class SharedDomainError(RuntimeError):
    """An episode found another graph on its ROS domain (a second /clock publisher): its ground truth and clock
    would mix with this episode's, and no outcome could be trusted. Stops the evaluation with one line."""


# ----------------------------------------------------------------------------- geometry
def footprint(model) -> np.ndarray:
    """The robot's footprint as rectangles (S, 4, 2), counter-clockwise corners in the base frame: one per
    collision shape (the xy extent of its bounding box at the zero configuration), less those lying inside
    another (the arm above the base). Shape by shape rather than one rectangle round the whole robot, so a
    corner where the robot has no part (beside a protruding camera) does not touch an obstacle first."""
    from robotsim_core.description.kinematics import forward_kinematics
    poses = forward_kinematics(model.tree, {})
    base_inverse = np.linalg.inv(poses[model.base_link])
    rectangles = []
    for name, link in model.tree.links.items():
        for shape in link.collisions:
            size = shape.geometry.size
            half = {'box': lambda: np.array(size[:3]) / 2, 'sphere': lambda: np.full(3, size[0]),
                    'cylinder': lambda: np.array([size[0], size[0], size[1] / 2])}.get(
                shape.geometry.kind, lambda: np.full(3, 0.05))()  # a mesh: a 10 cm cube, as the expert assumes
            corners = np.array([[sx, sy, sz, 1.0] for sx in (-1, 1) for sy in (-1, 1) for sz in (-1, 1)])
            corners[:, :3] *= half
            xy = (base_inverse @ poses[name] @ shape.origin.matrix() @ corners.T).T[:, :2]
            (x0, y0), (x1, y1) = xy.min(axis=0), xy.max(axis=0)
            rectangles.append(np.array([[x0, y0], [x1, y0], [x1, y1], [x0, y1]]))
    kept = [r for i, r in enumerate(rectangles)
            if not any(j != i and (other[0] <= r[0]).all() and (r[2] <= other[2]).all()
                       and (j < i or not np.array_equal(other, r)) for j, other in enumerate(rectangles))]
    return np.array(kept)


def _rectangle(centre, size_x: float, size_y: float, yaw: float) -> np.ndarray:
    c, s = math.cos(yaw), math.sin(yaw)
    local = np.array([[-1, -1], [1, -1], [1, 1], [-1, 1]]) * (size_x / 2, size_y / 2)
    return local @ np.array([[c, s], [-s, c]]) + np.asarray(centre[:2], dtype=float)


def _point_polygon_distance(points: np.ndarray, polygons: np.ndarray) -> np.ndarray:
    """Distance (P, K) of each point (P, 2) to each convex counter-clockwise polygon (K, E, 2); 0 inside."""
    a = polygons[None]                                              # (1, K, E, 2)
    edge = np.roll(polygons, -1, axis=1)[None] - a                  # (1, K, E, 2)
    offset = points[:, None, None, :] - a                           # (P, K, E, 2)
    t = np.clip((offset * edge).sum(-1) / np.maximum((edge * edge).sum(-1), 1e-12), 0.0, 1.0)
    distance = np.linalg.norm(offset - t[..., None] * edge, axis=-1).min(axis=2)
    inside = ((edge[..., 0] * offset[..., 1] - edge[..., 1] * offset[..., 0]) >= 0).all(axis=2)
    return np.where(inside, 0.0, distance)


class WorldObstacles:
    """The episode world's walls, boxes and cylinders as 2D shapes (what the robot can run into)."""

    def __init__(self, world):
        polygons = [_rectangle(((w.start[0] + w.end[0]) / 2, (w.start[1] + w.end[1]) / 2),
                               math.dist(w.start, w.end) + w.thickness, w.thickness,
                               math.atan2(w.end[1] - w.start[1], w.end[0] - w.start[0]))
                    for w in world.walls]  # the simulator's wall box: the length plus a thickness
        polygons += [_rectangle(b.position, b.size[0], b.size[1], b.yaw) for b in world.boxes
                     if b.position[2] + b.size[2] / 2 >= STEP_HEIGHT]
        self.polygons = np.array(polygons).reshape(-1, 4, 2)
        self.circles = [(np.array(c.position[:2], dtype=float), c.radius) for c in world.cylinders
                        if c.position[2] + c.height / 2 >= STEP_HEIGHT]
        self.centres = np.array([centre for centre, _ in self.circles]).reshape(-1, 2)
        self.radii = np.array([radius for _, radius in self.circles])

    def clearance(self, robot: np.ndarray) -> float:
        """Distance from the robot's footprint rectangles (S, 4, 2) in the world to the nearest obstacle, 0
        when they overlap. Between convex shapes that do not overlap the nearest points are a corner of one
        and an edge of the other (or the circle's centre and an edge), so corners suffice."""
        robot = robot.reshape(-1, 4, 2)
        best = math.inf
        if len(self.polygons):
            best = min(float(_point_polygon_distance(robot.reshape(-1, 2), self.polygons).min()),
                       float(_point_polygon_distance(self.polygons.reshape(-1, 2), robot).min()))
        if len(self.circles):
            best = min(best, float(np.maximum(_point_polygon_distance(self.centres, robot) - self.radii[:, None],
                                              0.0).min()))
        return best


def placed(shapes: np.ndarray, pose) -> np.ndarray:
    """Footprint corners (base frame, any shape (..., 2)) at a pose (x, y, yaw) in the world."""
    c, s = math.cos(pose[2]), math.sin(pose[2])
    return shapes @ np.array([[c, s], [-s, c]]) + (pose[0], pose[1])


# ----------------------------------------------------------------------------- one episode
@dataclass
class EpisodeTracker:
    """Outcome and measures of one episode from its ground-truth poses, in order of their stamps."""
    goal_xy: tuple[float, float]
    tolerance: float
    duration: float
    obstacles: WorldObstacles
    footprint: np.ndarray
    outcome: str | None = None
    end_time: float = 0.0
    path_length: float = 0.0
    min_clearance: float = math.inf
    collisions: int = 0
    trajectory: list = field(default_factory=list)   # (t, x, y, yaw)

    def update(self, time: float, pose: tuple[float, float, float]) -> str | None:
        """Take one ground-truth pose (sim seconds, world x, y, yaw); the outcome once decided."""
        if self.outcome is not None:
            return self.outcome
        if self.trajectory:
            self.path_length += math.dist(self.trajectory[-1][1:3], pose[:2])
        self.trajectory.append((time, *pose))
        self.end_time = time
        clearance = self.obstacles.clearance(placed(self.footprint, pose))
        self.min_clearance = min(self.min_clearance, clearance)
        if clearance <= CONTACT_MARGIN:
            self.collisions += 1
            self.outcome = 'collision'
        elif math.dist(pose[:2], self.goal_xy) <= self.tolerance:
            self.outcome = 'success'
        elif time >= self.duration:
            self.outcome = 'timeout'
        return self.outcome

    @property
    def final_goal_distance(self) -> float:
        return math.dist(self.trajectory[-1][1:3], self.goal_xy) if self.trajectory else math.inf


# ----------------------------------------------------------------------------- statistics
def summary(rows: list[dict], drivers: list[str]) -> list[dict]:
    """Per driver: episodes, successes, success rate with its Wilson 95 % interval, outcome counts."""
    out = []
    for driver in drivers:
        mine = [row for row in rows if row['driver'] == driver]
        successes = sum(row['outcome'] == 'success' for row in mine)
        low, high = wilson_interval(successes, len(mine))
        out.append({'driver': driver, 'episodes': len(mine), 'successes': successes,
                    'rate': successes / len(mine) if mine else 0.0, 'low': low, 'high': high,
                    **{outcome: sum(row['outcome'] == outcome for row in mine) for outcome in OUTCOMES}})
    return out


def summary_line(entry: dict) -> str:
    return (f"{entry['driver']:<9} {entry['successes']}/{entry['episodes']} reached the goal: "
            f"{100 * entry['rate']:.1f} % (Wilson 95 %: {100 * entry['low']:.1f}-{100 * entry['high']:.1f} %); "
            f"collisions {entry['collision']}, timeouts {entry['timeout']}"
            + (f", errors {entry['error']}" if entry['error'] else ''))


# ----------------------------------------------------------------------------- files
def write_csv(path: str, rows: list[dict]) -> None:
    with open(path, 'w', newline='', encoding='utf-8') as stream:
        writer = csv.DictWriter(stream, fieldnames=CSV_COLUMNS, extrasaction='ignore')
        writer.writeheader()
        for row in rows:
            writer.writerow({key: (f'{value:.4f}' if isinstance(value, float) else value) for key, value in row.items()})


REPORT_COLUMNS = 10
"""Episode panels per row of the report."""
OUTCOME_COLOURS = {'success': 'tab:green', 'collision': 'tab:red', 'timeout': 'tab:orange', 'error': 'black'}


def write_report(path: str, rows: list[dict], drivers: list[str], episodes: dict, goal_tolerance: float = 0.0,
                 heading: str = '') -> dict:
    """The report PNG: ``heading`` (what was evaluated: spec, seed, policy, date) over the success, collision and
    timeout rates per driver side by side with Wilson 95 % intervals, then every episode of every driver as a small
    map (obstacles, start and heading, goal with its tolerance circle, the path coloured by outcome, a cross
    where a collision happened, a 1 m scale bar), :data:`REPORT_COLUMNS` to a row, and a legend. ``episodes``:
    (driver, index) -> (WorldObstacles, spawn, goal, trajectory array (t, x, y, yaw), outcome). Returns what it
    drew: ``panels`` (episode maps) and ``collision_marks``."""
    import matplotlib
    matplotlib.use('Agg')
    import matplotlib.pyplot as plt
    from matplotlib.lines import Line2D
    from matplotlib.patches import Circle, Patch, Polygon

    indices = sorted({index for _, index in episodes})
    rows_per_driver = max(1, math.ceil(len(indices) / REPORT_COLUMNS))
    columns = max(1, min(REPORT_COLUMNS, len(indices)))
    panel = 1.7
    figure = plt.figure(figsize=(max(panel * columns, 9.0), 4.2 + panel * rows_per_driver * len(drivers) + 0.9),
                        dpi=90)
    grid = figure.add_gridspec(2 + rows_per_driver * len(drivers), columns,
                               height_ratios=[3.2, 0.6] + [panel] * (rows_per_driver * len(drivers)))
    figure.suptitle(heading or 'closed-loop evaluation', fontsize=11)

    # Rates side by side: one group per driver, a bar per outcome.
    bars = figure.add_subplot(grid[0, :])
    stats = summary(rows, drivers)
    outcomes = ('success', 'collision', 'timeout')
    width = 0.8 / len(outcomes)
    for k, outcome in enumerate(outcomes):
        rates, low, high = [], [], []
        for entry in stats:
            count, total = entry[outcome], entry['episodes']
            lo, hi = wilson_interval(count, total)
            rate = count / total if total else 0.0
            rates.append(100 * rate)
            # Never below 0: at 100/100 the upper bound is 1 - 1e-16 in floating point, and matplotlib refuses it.
            low.append(max(0.0, 100 * (rate - lo)))
            high.append(max(0.0, 100 * (hi - rate)))
        positions = np.arange(len(drivers)) + (k - 1) * width
        bars.bar(positions, rates, width, yerr=[low, high], capsize=3, color=OUTCOME_COLOURS[outcome], label=outcome)
        for x, entry in zip(positions, stats):
            bars.text(x, 101, f"{entry[outcome]}/{entry['episodes']}", ha='center', va='bottom', fontsize=8)
    bars.set_xticks(np.arange(len(drivers)), drivers)
    bars.set_ylim(0, 128)  # the legend above the count labels (at 101), never over them
    bars.set_ylabel('episodes (%)')
    bars.set_title('outcome rates per driver, Wilson 95 % intervals', fontsize=10)
    bars.legend(loc='upper center', fontsize=8, ncols=3)

    legend = figure.add_subplot(grid[1, :])
    legend.axis('off')
    legend.legend(handles=[Line2D([], [], color=OUTCOME_COLOURS[o], lw=2, label=f'path: {o}') for o in outcomes]
                  + [Line2D([], [], marker='o', color='k', ls='', label='start (tick: heading)'),
                     Line2D([], [], marker='*', color='tab:purple', ls='', ms=10, label='goal'),
                     Patch(fill=False, ls='--', ec='tab:purple', label=f'goal tolerance ({goal_tolerance:g} m)'),
                     Line2D([], [], marker='x', color='tab:red', ls='', ms=8, mew=2, label='collision'),
                     Patch(color='0.35', label='obstacle')],
                  loc='center', ncols=4, fontsize=8, frameon=False)

    drawn = marks = 0
    for d, driver in enumerate(drivers):
        for position, index in enumerate(indices):
            row = 2 + d * rows_per_driver + position // REPORT_COLUMNS
            axes = figure.add_subplot(grid[row, position % REPORT_COLUMNS])
            axes.set_aspect('equal')
            axes.set_xticks([])
            axes.set_yticks([])
            if (driver, index) not in episodes:
                continue
            obstacles, spawn, goal, trajectory, outcome = episodes[driver, index]
            for polygon in obstacles.polygons:
                axes.add_patch(Polygon(polygon, closed=True, color='0.35'))
            for centre, radius in obstacles.circles:
                axes.add_patch(Circle(centre, radius, color='0.35'))
            colour = OUTCOME_COLOURS.get(outcome, 'black')
            if len(trajectory):
                axes.plot(trajectory[:, 1], trajectory[:, 2], color=colour, lw=1.2)
            axes.plot(*spawn[:2], 'ko', ms=3)
            if len(spawn) > 2:
                axes.plot([spawn[0], spawn[0] + 0.35 * math.cos(spawn[2])], [spawn[1], spawn[1] + 0.35 * math.sin(spawn[2])],
                          color='k', lw=1)
            axes.plot(*goal[:2], marker='*', color='tab:purple', ms=8)
            if goal_tolerance > 0:
                axes.add_patch(Circle(goal[:2], goal_tolerance, fill=False, ls='--', ec='tab:purple', lw=0.8))
            if outcome == 'collision' and len(trajectory):
                axes.plot(trajectory[-1, 1], trajectory[-1, 2], marker='x', color='tab:red', ms=8, mew=2)
                marks += 1
            axes.autoscale_view()
            x0, x1 = axes.get_xlim()
            y0, _ = axes.get_ylim()
            axes.plot([x0 + 0.05 * (x1 - x0), x0 + 0.05 * (x1 - x0) + 1.0], [y0 + 0.04 * (x1 - x0)] * 2, color='k', lw=2)
            axes.text(x0 + 0.05 * (x1 - x0) + 0.5, y0 + 0.06 * (x1 - x0), '1 m', ha='center', va='bottom', fontsize=6)
            axes.set_title(f'{driver} #{index}: {outcome}', fontsize=7, color=colour)
            drawn += 1
    figure.tight_layout(rect=(0, 0, 1, 0.98))
    figure.savefig(path)
    plt.close(figure)
    return {'panels': drawn, 'collision_marks': marks}


# ----------------------------------------------------------------------------- seeds
def training_report(policy_path: str) -> dict:
    """The policy's ``robotsim.training`` metadata ({} when absent or unreadable)."""
    import onnx
    model = onnx.load(policy_path, load_external_data=False)
    metadata = {prop.key: prop.value for prop in model.metadata_props}
    try:
        report = json.loads(metadata.get('robotsim.training', '{}'))
    except (ValueError, RecursionError):
        return {}
    return report if isinstance(report, dict) else {}  # hand-edited metadata: nothing known


def training_datasets(policy_path: str) -> list[dict]:
    """The provenance of the datasets the policy was trained on (robotsim_learning.policy_training.dataset_provenance):
    name, seed, episodes, randomisation spec name and sha256. Files written before the policy recorded it list
    folder paths; those are read from the folder's manifest when it is still there (seed None otherwise)."""
    out = []
    entries = training_report(policy_path).get('datasets') or []
    for entry in entries if isinstance(entries, list) else []:
        if isinstance(entry, dict):
            out.append(entry)
            continue
        folder, settings, randomization = str(entry), {}, {}
        try:
            with open(os.path.join(folder, 'dataset.json'), encoding='utf-8') as stream:
                manifest = json.load(stream)
            settings = manifest.get('settings') or {}
            randomization = manifest.get('randomization') or {}
        except (OSError, ValueError, RecursionError, AttributeError):
            pass
        path = randomization.get('path') if isinstance(randomization, dict) else None
        out.append({'name': folder, 'seed': settings.get('seed') if isinstance(settings, dict) else None,
                    'randomization': {'name': os.path.basename(path) if isinstance(path, str) else None,
                                      'sha256': randomization.get('sha256') if isinstance(randomization, dict) else None}})
    return out


def training_seed_clash(policy_path: str, seed: int) -> str | None:
    """The training dataset generated with ``seed`` (episode i of a seed is the same scenario in training and in
    evaluation), or None."""
    for dataset in training_datasets(policy_path):
        if dataset.get('seed') == seed:
            return str(dataset.get('name'))
    return None


def training_randomization(policy_path: str) -> str | None:
    """The randomisation spec the policy was trained on, when a spec of that name in config/randomization still
    has that content (sha256 of the spec); None otherwise."""
    from robotsim_core.description.load import share_path

    from .randomization import load_randomization, spec_hash
    for dataset in training_datasets(policy_path):
        randomization = dataset.get('randomization') or {}
        name = randomization.get('name') if isinstance(randomization, dict) else None
        if not isinstance(name, str) or not name or os.sep in name:
            continue
        path = share_path('config', 'randomization', name)
        try:
            if os.path.isfile(path) and spec_hash(load_randomization(path)) == randomization.get('sha256'):
                return path
        except Exception:  # noqa: BLE001 (a spec that no longer loads is not the training spec)
            continue
    return None
