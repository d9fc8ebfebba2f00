"""The privileged expert (simulation only, ROS-free): plans on the known world, follows the plan.

It may read what a real robot cannot: the world description (every wall, box and cylinder) and the
ground-truth pose. That makes it the teacher of behaviour cloning, never a node of the real robot.

Planning: an occupancy grid of the world's floor in which every obstacle taller than the robot can
drive over is inflated by the robot's footprint radius plus a clearance, then A* (8-connected, octile
distance) from the robot to the goal, and the path shortened where a straight line stays free.
Following: pure pursuit on the shortened path (turning on the spot first when the next waypoint is
far off the heading), slowing down near the goal (and, with ``slow_clearance``, where an obstacle is
close to the footprint at or just ahead of the robot). Deterministic: the same world, pose and goal give the same commands.
"""

from __future__ import annotations

import copy
import heapq
import math
from dataclasses import dataclass

import numpy as np

from robotsim_core.description.model import RobotModel
from robotsim_core.description.kinematics import forward_kinematics


@dataclass
class ExpertConfig:
    resolution: float = 0.05
    """Grid cell size (m)."""
    wide_clearance: float = 0.0
    """A wider margin tried first where the free space allows it (m; 0 = none: ``clearance`` first)."""
    clearance: float = 0.15
    """Margin kept between the robot's footprint circle and every obstacle where the free space allows it
    (m): a wide berth is what a policy that imitates the expert with some error can still copy safely."""
    min_clearance: float = 0.06
    """Margin used when no path keeps ``clearance`` (a narrow gap) (m)."""
    step_height: float = 0.03
    """Obstacles whose top is lower than this are driven over (a door threshold), not avoided (m)."""
    lookahead: float = 0.35
    """Pure-pursuit look-ahead distance along the path (m)."""
    goal_tolerance: float = 0.15
    """Distance to the goal at which it counts as reached and the robot stops (m)."""
    max_linear: float = 0.35
    """Cruise speed (m/s), capped by the robot's own limit."""
    slow_clearance: float = 0.0
    """Clearance (m, footprint circle to the nearest obstacle, at the robot and up to ``slow_ahead`` ahead of
    it) below which the speed falls, linearly to ``slow_fraction`` of cruise at zero clearance (0 = never: cruise
    speed whatever the clearance). Demonstrations that slow down beside obstacles were tried for the shipped
    policy and made it stall (config/policies/README.md)."""
    slow_ahead: float = 0.3
    """How far ahead along the heading the clearance is also looked up (m)."""
    slow_fraction: float = 0.35
    """Fraction of the cruise speed kept at zero clearance."""
    max_angular: float = 1.2
    """Largest yaw rate commanded (rad/s), capped by the robot's own limit."""
    turn_in_place_angle: float = 0.7
    """Heading error above which the robot turns on the spot before driving (rad)."""
    replan_distance: float = 0.3
    """Re-plan when the robot is this far from its path (pushed, slipped) (m)."""
    memoryless: bool = False
    """Plan again at every command from where the robot is, down a cost-to-go field of the goal (Dijkstra from the
    goal over the grid, made once per goal), instead of keeping the path planned earlier until the robot strays
    ``replan_distance`` from it: the command is then a function of the robot's pose and turn rate alone, not of the
    way the path was first planned (where two ways round an obstacle are about as long, the one the robot is nearer
    now), so a policy imitating it is not asked for two different commands from the same state."""
    commit_margin: float = 0.0
    """When the robot already turns (``commit_yaw_rate`` or faster) the other way than its path asks it to turn
    on the spot, the path is made again around the side the robot turns to, and taken when it is at most this
    much longer than the best (m; 0 = never, the default): a label that keeps a turn going where both sides are
    about as good, so a policy that imitates it learns to hold the side it chose instead of turning back and forth.
    Tried with 0.5 for DAgger labels (config/policies/README.md): fewer timeouts, as many more collisions."""
    commit_yaw_rate: float = 0.3
    """Yaw rate (rad/s) from which the robot counts as turning (``commit_margin``)."""
    commit_radius: float = 0.6
    """Radius (m) of the half disc about the robot, on the side it does not turn to, that the path made again
    around the other side may not enter (``commit_margin``)."""


def footprint_radius(model: RobotModel) -> float:
    """Radius of the circle about the base frame's z axis that covers every collision shape of the robot
    at its zero configuration (arm included: it swings with the base)."""
    poses = forward_kinematics(model.tree, {})
    base_inverse = np.linalg.inv(poses[model.base_link])
    radius = 0.0
    for name, link in model.tree.links.items():
        for shape in link.collisions:
            centre = (base_inverse @ poses[name] @ shape.origin.matrix())[:3, 3]
            size = shape.geometry.size
            extent = {'box': lambda: math.hypot(size[0], size[1]) / 2, 'sphere': lambda: size[0],
                      'cylinder': lambda: max(size[0], size[1] / 2)}.get(shape.geometry.kind, lambda: 0.05)()
            radius = max(radius, math.hypot(centre[0], centre[1]) + extent)
    return radius


class OccupancyGrid:
    """The world's floor as cells; True = the footprint's centre may not be there. ``distance`` holds each
    cell centre's distance to the nearest obstacle surface or floor edge (m, 0 inside an obstacle)."""

    def __init__(self, world, inflation: float, resolution: float, step_height: float):
        self.resolution = resolution
        half_x, half_y = world.floor.size[0] / 2, world.floor.size[1] / 2
        self.origin = np.array([-half_x, -half_y])
        self.shape = (int(math.ceil(2 * half_x / resolution)), int(math.ceil(2 * half_y / resolution)))
        xs = self.origin[0] + (np.arange(self.shape[0]) + 0.5) * resolution
        ys = self.origin[1] + (np.arange(self.shape[1]) + 0.5) * resolution
        self.x, self.y = np.meshgrid(xs, ys, indexing='ij')
        # The floor's own edge is an obstacle too: the robot must not drive off it.
        distance = np.minimum(half_x - np.abs(self.x), half_y - np.abs(self.y))
        for wall in world.walls:
            distance = np.minimum(distance, self._segment_distance(np.array(wall.start), np.array(wall.end))
                                  - wall.thickness / 2)
        for box in world.boxes:
            if box.position[2] + box.size[2] / 2 >= step_height:
                distance = np.minimum(distance, self._box_distance(box))
        for cylinder in world.cylinders:
            if cylinder.position[2] + cylinder.height / 2 >= step_height:
                distance = np.minimum(distance, np.hypot(self.x - cylinder.position[0],
                                                         self.y - cylinder.position[1]) - cylinder.radius)
        self.distance = np.maximum(distance, 0.0)
        self.blocked = self.distance <= inflation

    def inflated(self, inflation: float) -> OccupancyGrid:
        """The same floor with another inflation (cell centres and distance field shared, not recomputed)."""
        grid = copy.copy(self)
        grid.blocked = self.distance <= inflation
        return grid

    def clearance_at(self, xy) -> float:
        """Distance from ``xy`` to the nearest obstacle surface (m, of its cell's centre)."""
        return float(self.distance[self.cell(xy)])

    def _segment_distance(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        ab = b - a
        t = np.clip(((self.x - a[0]) * ab[0] + (self.y - a[1]) * ab[1]) / max(float(ab @ ab), 1e-12), 0.0, 1.0)
        return np.hypot(self.x - (a[0] + t * ab[0]), self.y - (a[1] + t * ab[1]))

    def _box_distance(self, box) -> np.ndarray:
        c, s = math.cos(box.yaw), math.sin(box.yaw)
        dx, dy = self.x - box.position[0], self.y - box.position[1]
        local_x, local_y = c * dx + s * dy, -s * dx + c * dy
        # Distance from the rectangle (0 inside), so corners are rounded like the footprint.
        out_x = np.maximum(np.abs(local_x) - box.size[0] / 2, 0.0)
        out_y = np.maximum(np.abs(local_y) - box.size[1] / 2, 0.0)
        return np.hypot(out_x, out_y)

    def cell(self, xy) -> tuple[int, int]:
        i, j = np.floor((np.asarray(xy, dtype=float) - self.origin) / self.resolution).astype(int)
        return int(np.clip(i, 0, self.shape[0] - 1)), int(np.clip(j, 0, self.shape[1] - 1))

    def centre(self, cell: tuple[int, int]) -> np.ndarray:
        return self.origin + (np.array(cell) + 0.5) * self.resolution

    def free_line(self, a, b) -> bool:
        """Every cell on the segment a-b (sampled at half a cell) is free."""
        a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
        samples = max(2, int(math.ceil(np.linalg.norm(b - a) / (self.resolution / 2))) + 1)
        return not any(self.blocked[self.cell(a + (b - a) * t)] for t in np.linspace(0.0, 1.0, samples))

    def nearest_free(self, cell: tuple[int, int], limit: int = 10) -> tuple[int, int] | None:
        """The closest free cell within ``limit`` cells (a start pose pushed against an obstacle)."""
        if not self.blocked[cell]:
            return cell
        best = None
        for di in range(-limit, limit + 1):
            for dj in range(-limit, limit + 1):
                i, j = cell[0] + di, cell[1] + dj
                if 0 <= i < self.shape[0] and 0 <= j < self.shape[1] and not self.blocked[i, j]:
                    if best is None or di * di + dj * dj < best[0]:
                        best = (di * di + dj * dj, (i, j))
        return best[1] if best else None


def astar(grid: OccupancyGrid, start: tuple[int, int], goal: tuple[int, int]) -> list[tuple[int, int]] | None:
    """Shortest 8-connected cell path (octile metric), or None when the goal cannot be reached."""
    steps = [(di, dj, math.hypot(di, dj)) for di in (-1, 0, 1) for dj in (-1, 0, 1) if di or dj]

    def octile(cell):
        dx, dy = abs(cell[0] - goal[0]), abs(cell[1] - goal[1])
        return max(dx, dy) + (math.sqrt(2) - 1) * min(dx, dy)

    cost = {start: 0.0}
    parent = {}
    frontier = [(octile(start), 0, start)]
    counter = 0  # tie-breaker: equal priorities pop in insertion order, so the result is deterministic
    while frontier:
        _, _, cell = heapq.heappop(frontier)
        if cell == goal:
            path = [cell]
            while cell in parent:
                cell = parent[cell]
                path.append(cell)
            return path[::-1]
        for di, dj, length in steps:
            nxt = (cell[0] + di, cell[1] + dj)
            if not (0 <= nxt[0] < grid.shape[0] and 0 <= nxt[1] < grid.shape[1]) or grid.blocked[nxt]:
                continue
            if di and dj and (grid.blocked[cell[0] + di, cell[1]] or grid.blocked[cell[0], cell[1] + dj]):
                continue  # no corner cutting between two blocked cells
            new_cost = cost[cell] + length
            if new_cost < cost.get(nxt, math.inf):
                cost[nxt] = new_cost
                parent[nxt] = cell
                counter += 1
                heapq.heappush(frontier, (new_cost + octile(nxt), counter, nxt))
    return None


def cost_to_go(grid: OccupancyGrid, goal: tuple[int, int]) -> np.ndarray:
    """Length (m) of the shortest 8-connected way from every cell to ``goal`` over the free cells, without cutting
    a corner between two blocked cells (as :func:`astar`); inf where none."""
    from scipy.sparse import csr_matrix
    from scipy.sparse.csgraph import dijkstra
    free = ~grid.blocked
    h, w = free.shape
    index = np.arange(h * w).reshape(h, w)
    rows, columns, weights = [], [], []
    for di, dj in ((0, 1), (1, 0), (1, 1), (1, -1)):
        from_columns, to_columns = slice(max(0, -dj), w - max(0, dj)), slice(max(0, dj), w - max(0, -dj))
        a, b = (slice(0, h - di), from_columns), (slice(di, h), to_columns)
        ok = free[a] & free[b]
        if di and dj:  # a diagonal step: both cells beside it free
            ok &= free[di:, from_columns] & free[:h - di, to_columns]
        rows.append(index[a][ok])
        columns.append(index[b][ok])
        weights.append(np.full(int(ok.sum()), math.hypot(di, dj) * grid.resolution))
    graph = csr_matrix((np.concatenate(weights), (np.concatenate(rows), np.concatenate(columns))), shape=(h * w, h * w))
    return dijkstra(graph, directed=False, indices=goal[0] * w + goal[1]).reshape(h, w)


def descent(field: np.ndarray) -> np.ndarray:
    """(h, w, 2): the neighbour each cell's way down ``field`` steps to, the lowest of its 8 and lower than itself;
    -1 where none is."""
    h, w = field.shape
    padded = np.pad(field, 1, constant_values=np.inf)
    offsets = [(di, dj) for di in (-1, 0, 1) for dj in (-1, 0, 1) if di or dj]
    around = np.stack([padded[1 + di:1 + di + h, 1 + dj:1 + dj + w] for di, dj in offsets])
    best = np.argmin(around, axis=0)  # the first of equal values: deterministic
    lower = np.take_along_axis(around, best[None], axis=0)[0] < field
    rows, columns = np.indices((h, w))
    step = np.stack([rows + np.array(offsets)[best, 0], columns + np.array(offsets)[best, 1]], axis=-1)
    return np.where(lower[..., None], step, -1)


def visible_shortcut(grid: OccupancyGrid, points: np.ndarray) -> list[np.ndarray]:
    """:func:`shortcut` with every candidate's line of sight checked at once (NumPy)."""
    kept, index = [points[0]], 0
    while index < len(points) - 1:
        rest = points[index + 1:]
        length = float(np.max(np.linalg.norm(rest - points[index], axis=1)))
        samples = max(2, int(math.ceil(length / (grid.resolution / 2))) + 1)
        t = np.linspace(0.0, 1.0, samples)
        along = points[index][None, None, :] + (rest - points[index])[:, None, :] * t[None, :, None]
        cells = np.floor((along - grid.origin) / grid.resolution).astype(int)
        cells[..., 0] = np.clip(cells[..., 0], 0, grid.shape[0] - 1)
        cells[..., 1] = np.clip(cells[..., 1], 0, grid.shape[1] - 1)
        visible = ~grid.blocked[cells[..., 0], cells[..., 1]].any(axis=1)
        farthest = index + 1 + (int(np.flatnonzero(visible)[-1]) if visible.any() else 0)
        kept.append(points[farthest])
        index = farthest
    return kept


def _length(points: list[np.ndarray]) -> float:
    return float(sum(np.linalg.norm(b - a) for a, b in zip(points, points[1:])))


def shortcut(grid: OccupancyGrid, points: list[np.ndarray]) -> list[np.ndarray]:
    """Greedy line-of-sight shortening: from each kept point, jump to the farthest visible one."""
    kept, index = [points[0]], 0
    while index < len(points) - 1:
        farthest = index + 1
        for candidate in range(len(points) - 1, index, -1):
            if grid.free_line(points[index], points[candidate]):
                farthest = candidate
                break
        kept.append(points[farthest])
        index = farthest
    return kept


class Expert:
    """Drives a differential robot to a goal (x, y) in a known world, from ground-truth poses."""

    def __init__(self, world, model: RobotModel, config: ExpertConfig | None = None):
        self.config = config or ExpertConfig()
        self.radius = footprint_radius(model)
        # The widest berth first, a narrower one where the wider one finds no way.
        clearances = [clearance for clearance in dict.fromkeys((self.config.wide_clearance, self.config.clearance,
                                                                 self.config.min_clearance)) if clearance > 0]
        first = OccupancyGrid(world, self.radius + clearances[0], self.config.resolution, self.config.step_height)
        self.grids = [first] + [first.inflated(self.radius + clearance) for clearance in clearances[1:]]
        self.grid = self.grids[0]
        drive = model.drive
        self.max_linear = min(self.config.max_linear, drive.max_linear_speed) if drive else self.config.max_linear
        self.max_angular = min(self.config.max_angular, drive.max_yaw_rate) if drive else self.config.max_angular
        self.path: list[np.ndarray] | None = None
        self.goal: np.ndarray | None = None
        self._declined: list[np.ndarray] | None = None  # the path no other side was found short enough for
        self._fields_key: tuple | None = None   # memoryless: the goal whose cost-to-go fields are kept
        self._fields: dict[int, tuple[np.ndarray, np.ndarray]] = {}   # grid index -> (field, its descent)

    def plan(self, start_xy, goal_xy, grids=None) -> list[np.ndarray] | None:
        """Waypoints from start to goal (the goal last), or None when no collision-free path exists; the
        widest margin that admits a path is used (``self.grid`` is the grid the path was planned on)."""
        for grid in grids or self.grids:
            start = grid.nearest_free(grid.cell(start_xy))
            goal = grid.nearest_free(grid.cell(goal_xy), limit=2)
            cells = astar(grid, start, goal) if start is not None and goal is not None else None
            if cells is not None:
                self.grid = grid
                points = [np.asarray(start_xy, dtype=float)] + [grid.centre(c) for c in cells[1:-1]] \
                    + [np.asarray(goal_xy, dtype=float)]
                return shortcut(grid, points)
        return None

    def command(self, pose: tuple[float, float, float], goal_xy, yaw_rate: float = 0.0) -> tuple[float, float, str]:
        """(linear m/s, angular rad/s, status) for the robot at ``pose`` (x, y, yaw in the world) turning at
        ``yaw_rate`` (rad/s); status: 'driving', 'reached' (stopped at the goal) or 'no_path' (stopped: unreachable)."""
        c = self.config
        position, yaw = np.array(pose[:2], dtype=float), float(pose[2])
        goal = np.asarray(goal_xy, dtype=float)
        if np.linalg.norm(goal - position) <= c.goal_tolerance:
            return 0.0, 0.0, 'reached'
        if c.memoryless:
            self.goal, self.path = goal, self._descend(position, goal)
        elif self.goal is None or not np.allclose(goal, self.goal) or self.path is None \
                or self._distance_to_path(position) > c.replan_distance:
            self.goal, self.path = goal, self.plan(position, goal)
        if self.path is None:
            return 0.0, 0.0, 'no_path'
        target = self._lookahead_point(position)
        heading = math.atan2(target[1] - position[1], target[0] - position[0])
        error = math.remainder(heading - yaw, math.tau)
        if abs(error) > c.turn_in_place_angle and abs(yaw_rate) >= c.commit_yaw_rate and error * yaw_rate < 0 \
                and self._commit(position, yaw, goal, math.copysign(1.0, yaw_rate)):
            target = self._lookahead_point(position)
            heading = math.atan2(target[1] - position[1], target[0] - position[0])
            error = math.remainder(heading - yaw, math.tau)
            if error * yaw_rate < 0 and abs(error) > math.pi - 0.2:  # right behind: round the way it already turns
                error = math.copysign(abs(error), yaw_rate)
        if abs(error) > c.turn_in_place_angle:
            return 0.0, math.copysign(self.max_angular, error), 'driving'
        distance = float(np.linalg.norm(goal - position))
        speed = self.max_linear * min(1.0, distance / 0.5) * max(0.2, math.cos(error)) * self._slowdown(position, yaw)
        # Pure pursuit: curvature 2 sin(error) / L toward the look-ahead point.
        lookahead = max(float(np.linalg.norm(target - position)), 1e-3)
        angular = float(np.clip(speed * 2.0 * math.sin(error) / lookahead, -self.max_angular, self.max_angular))
        return speed, angular, 'driving'

    def _descend(self, start_xy, goal_xy) -> list[np.ndarray] | None:
        """:attr:`ExpertConfig.memoryless`: the way from ``start_xy`` down the goal's cost-to-go field on the widest
        margin whose field reaches the start, shortened where a straight line stays free; None when none does."""
        key = tuple(np.round(np.asarray(goal_xy, dtype=float), 9))
        if self._fields_key != key:
            self._fields_key, self._fields = key, {}
        for index, grid in enumerate(self.grids):
            goal = grid.nearest_free(grid.cell(goal_xy), limit=2)
            start = grid.nearest_free(grid.cell(start_xy))
            if goal is None or start is None:
                continue
            if index not in self._fields:
                field = cost_to_go(grid, goal)
                self._fields[index] = field, descent(field)
            field, step = self._fields[index]
            if not np.isfinite(field[start]):
                continue
            cells, cell = [start], start
            for _ in range(field.size):
                if cell == goal or step[cell][0] < 0:
                    break
                cell = (int(step[cell][0]), int(step[cell][1]))
                cells.append(cell)
            self.grid = grid
            points = np.array([np.asarray(start_xy, dtype=float)] + [grid.centre(c) for c in cells[1:-1]]
                              + [np.asarray(goal_xy, dtype=float)])
            return visible_shortcut(grid, points)
        return None

    def _commit(self, position: np.ndarray, yaw: float, goal: np.ndarray, side: float) -> bool:
        """Take a path around ``side`` (+1 left, -1 right of the heading) when it is at most ``commit_margin``
        longer than the best path from here; False (and the current path kept) otherwise."""
        c = self.config
        if c.commit_margin <= 0 or self._declined is self.path:
            return False
        best = self.plan(position, goal)
        dx, dy = self.grids[0].x - position[0], self.grids[0].y - position[1]
        bearing = np.arctan2(dy, dx) - yaw
        lateral = np.sin(bearing)  # > 0: left of the heading
        wedge = (np.hypot(dx, dy) <= c.commit_radius) & (lateral * side < 0) & (np.hypot(dx, dy) > 1.5 * c.resolution)
        grids = []
        for grid in self.grids:
            sided = copy.copy(grid)
            sided.blocked = grid.blocked | wedge
            grids.append(sided)
        grid = self.grid
        other = self.plan(position, goal, grids)
        if best is None or other is None or _length(other) > _length(best) + c.commit_margin:
            self.grid = grid
            self._declined = self.path
            return False
        self.path, self.grid = other, self.grids[grids.index(self.grid)]
        return True

    def _slowdown(self, position: np.ndarray, yaw: float) -> float:
        """Speed factor from the clearance at the robot and ahead of it (1 in open space)."""
        c = self.config
        if c.slow_clearance <= 0:
            return 1.0
        heading = np.array([math.cos(yaw), math.sin(yaw)])
        clearance = min(self.grid.clearance_at(position + heading * ahead)
                        for ahead in np.linspace(0.0, c.slow_ahead, 4)) - self.radius
        return c.slow_fraction + (1.0 - c.slow_fraction) * min(1.0, max(0.0, clearance) / c.slow_clearance)

    def _distance_to_path(self, position: np.ndarray) -> float:
        best = math.inf
        for a, b in zip(self.path, self.path[1:]):
            ab = b - a
            t = float(np.clip((position - a) @ ab / max(float(ab @ ab), 1e-12), 0.0, 1.0))
            best = min(best, float(np.linalg.norm(position - (a + t * ab))))
        return best

    def _lookahead_point(self, position: np.ndarray) -> np.ndarray:
        """The point ``lookahead`` m further along the path than the robot's projection onto it."""
        best, best_index, best_t = math.inf, 0, 0.0
        for index, (a, b) in enumerate(zip(self.path, self.path[1:])):
            ab = b - a
            t = float(np.clip((position - a) @ ab / max(float(ab @ ab), 1e-12), 0.0, 1.0))
            distance = float(np.linalg.norm(position - (a + t * ab)))
            if distance < best:
                best, best_index, best_t = distance, index, t
        remaining = self.config.lookahead
        point = self.path[best_index] + best_t * (self.path[best_index + 1] - self.path[best_index])
        for a, b in zip([point] + self.path[best_index + 1:-1], self.path[best_index + 1:]):
            length = float(np.linalg.norm(b - a))
            if length >= remaining:
                return a + (b - a) * (remaining / max(length, 1e-12))
            remaining -= length
        return self.path[-1]
