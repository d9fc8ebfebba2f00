"""A memory of what the lidar has seen and the way to the goal through it (ROS-free).

A policy that sees only the present scan chooses its way around an obstacle cluster from what is in view now:
an obstacle it passed and no longer sees, or one hidden behind a nearer one since, plays no part, and where both
ways look alike it may take the side that turns out to be closed. :class:`RouteMemory` keeps every scan return
as an occupied cell of a grid in the odom frame (cleared again where a later beam passes through it, as the
obstacle layer of a nav2 costmap does), and at each decision plans on that grid from the goal: the cost to go
of the robot's position and of points around it, with unseen space taken as free. The policy observes the cost
to go's change toward each of ``directions`` bearings around the robot (where the remembered way to the goal
leads) and the cost to go itself: a route feature from the robot's own lidar and pose estimate, nothing of the
simulator's. Deterministic: the same scans and poses give the same features.
"""

from __future__ import annotations

import math

import numpy as np

MAX_CELLS = 20000
"""Occupied cells kept at most: beyond it the ones farthest from the robot are dropped (about 200 m of wall at
0.1 m cells; a room holds a few thousand)."""
MAX_GRID = 240
"""Cells along each side of the planning grid at most (24 m at 0.1 m): what lies farther from the robot and the
goal is not planned on."""
MARGIN = 1.0
"""m of free space around the remembered cells, the robot and the goal in the planning grid."""
CLEAR_MARGIN = 0.2
"""m: a remembered cell is cleared by a beam only if the beam's return lies this much beyond it (a noisy return
of the same surface does not clear it)."""
BLOCKED_COST = 50.0
"""Cost per metre of a cell within the robot's footprint radius of a remembered return (planned around, never
impassable: a robot already that close still gets a way out)."""
BERTH_COST = 3.0
"""Cost per metre of a cell within ``berth`` beyond that: the plan keeps clear of obstacles where it can."""
UNREACHABLE = 1e3
"""Cost to go of a point the plan cannot reach (clipped features read it as the largest rise)."""
FEATURE_CLIP = 3.0
"""The change of the cost to go per metre toward a bearing is clipped to +-this."""
LENGTH_CLIP = 20.0
"""The cost to go (m) is clipped to this."""
REPLAN_PERIOD = 0.5
"""s (scan stamps): the plan is made again when the remembered cells changed and this long has passed since the
last plan (or at once when the goal or the grid's extent changed). The cost to go is planned from the goal, so it
does not depend on where the robot is; a new obstacle in front of the robot is in its scan before that."""


class RouteMemory:
    """Owns the occupied cells of one episode (a set of integer cell coordinates in odom) and the last planned
    cost-to-go grid; :meth:`reset` forgets both. Creates nothing that needs closing."""

    def __init__(self, directions: int, radius: float, cell: float, clearance: float, berth: float,
                 range_max: float, scan_origin: tuple[float, float] = (0.0, 0.0)):
        if directions < 0 or directions % 2:
            raise ValueError(f'route directions: expected an even number >= 0, got {directions}')
        if not (cell > 0 and radius > 0 and clearance >= 0 and berth >= 0 and range_max > 0):
            raise ValueError('route memory: expected cell, radius, range_max > 0 and clearance, berth >= 0')
        self.directions, self.radius, self.cell = directions, radius, cell
        self.clearance, self.berth, self.range_max = clearance, berth, range_max
        self.scan_origin = scan_origin
        self.angles = 2 * math.pi * np.arange(directions) / directions
        self.reset()

    def reset(self) -> None:
        self.cells: dict[tuple[int, int], None] = {}   # insertion-ordered: deterministic iteration
        self.last_stamp: float | None = None
        self._version = 0          # counts changes of the cells: the plan is made again only after one
        self._plan_key = None
        self._plan = None
        self._plan_stamp: float | None = None
        self._keys, self._keys_version = np.zeros((0, 2), dtype=np.int64), 0

    # -- memory ---------------------------------------------------------------------------------------------
    def add_scan(self, ranges, angle_min: float, angle_increment: float, pose: tuple[float, float, float],
                 stamp: float | None = None) -> None:
        """Remember the returns of a scan taken at ``pose`` (x, y, yaw of the base in odom) and clear the
        remembered cells its beams pass through. A scan whose ``stamp`` was already added is skipped."""
        if stamp is not None and stamp == self.last_stamp:
            return
        self.last_stamp = stamp
        ranges = np.asarray(ranges, dtype=np.float64)
        x, y, yaw = pose
        c, s = math.cos(yaw), math.sin(yaw)
        ox = x + c * self.scan_origin[0] - s * self.scan_origin[1]
        oy = y + s * self.scan_origin[0] + c * self.scan_origin[1]
        angles = angle_min + angle_increment * np.arange(len(ranges))
        if self.cells and angle_increment != 0:
            self._clear(ranges, angle_min, angle_increment, ox, oy, yaw)
        hit = np.isfinite(ranges) & (ranges > 0) & (ranges < self.range_max)
        world = yaw + angles[hit]
        px = ox + ranges[hit] * np.cos(world)
        py = oy + ranges[hit] * np.sin(world)
        keys = np.stack([np.floor(px / self.cell), np.floor(py / self.cell)], axis=1).astype(np.int64)
        before = len(self.cells)
        for key in map(tuple, keys.tolist()):
            self.cells[key] = None
        if len(self.cells) != before:
            self._version += 1
        if len(self.cells) > MAX_CELLS:
            self._trim(x, y)

    def _key_array(self) -> np.ndarray:
        """The remembered cells as an (n, 2) integer array, made again only after the cells changed."""
        if self._keys_version != self._version:
            self._keys = np.array(list(self.cells), dtype=np.int64).reshape(-1, 2)
            self._keys_version = self._version
        return self._keys

    def _clear(self, ranges, angle_min, angle_increment, ox, oy, yaw) -> None:
        keys = self._key_array()
        centres = (keys + 0.5) * self.cell
        dx, dy = centres[:, 0] - ox, centres[:, 1] - oy
        distance = np.hypot(dx, dy)
        bearing = np.remainder(np.arctan2(dy, dx) - yaw - angle_min, 2 * math.pi)
        beam = np.rint(bearing / angle_increment).astype(np.int64)
        inside = (beam >= 0) & (beam < len(ranges))
        measured = np.full(len(keys), -np.inf)
        measured[inside] = ranges[beam[inside]]
        measured = np.where(np.isposinf(measured), self.range_max, measured)   # REP 117: +Inf = nothing in range
        measured = np.where(np.isnan(measured), -np.inf, measured)
        clear = distance + CLEAR_MARGIN < np.minimum(measured, self.range_max)
        if clear.any():
            for key in map(tuple, keys[clear].tolist()):
                del self.cells[key]
            self._version += 1

    def _trim(self, x: float, y: float) -> None:
        keys = self._key_array()
        distance = np.hypot((keys[:, 0] + 0.5) * self.cell - x, (keys[:, 1] + 0.5) * self.cell - y)
        keep = np.sort(np.argsort(distance, kind='stable')[:MAX_CELLS])
        self.cells = dict.fromkeys(map(tuple, keys[keep].tolist()))
        self._version += 1

    # -- planning -------------------------------------------------------------------------------------------
    def _cost_to_go(self, robot_xy, goal_xy):
        """(grid of the cost to go in m, its lower-left cell) planned from the goal over the remembered cells."""
        from scipy import ndimage
        from scipy.sparse import csr_matrix
        from scipy.sparse.csgraph import dijkstra
        keys = self._key_array()
        pad = int(math.ceil((MARGIN + self.radius) / self.cell))
        anchor = np.floor(np.array([robot_xy, goal_xy]) / self.cell).astype(np.int64)
        low = np.minimum(anchor.min(axis=0), keys.min(axis=0) if len(keys) else anchor.min(axis=0)) - pad
        high = np.maximum(anchor.max(axis=0), keys.max(axis=0) if len(keys) else anchor.max(axis=0)) + pad
        centre = anchor.mean(axis=0).astype(np.int64)
        low = np.maximum(low, centre - MAX_GRID // 2)
        high = np.minimum(high, low + MAX_GRID - 1)
        key = (self._version, tuple(low), tuple(high), tuple(anchor[1]))
        if self._plan_key is not None and (key == self._plan_key or (
                key[1:] == self._plan_key[1:] and self.last_stamp is not None and self._plan_stamp is not None
                and self.last_stamp - self._plan_stamp < REPLAN_PERIOD)):
            return self._plan
        self._plan_stamp = self.last_stamp
        shape = tuple(high - low + 1)
        occupied = np.zeros(shape, dtype=bool)
        if len(keys):
            inside = np.all((keys >= low) & (keys <= high), axis=1)
            occupied[tuple((keys[inside] - low).T)] = True
        distance = ndimage.distance_transform_edt(~occupied) * self.cell if occupied.any() \
            else np.full(shape, np.inf)
        cost = np.where(distance < self.clearance, BLOCKED_COST,
                        np.where(distance < self.clearance + self.berth, BERTH_COST, 1.0))
        index = np.arange(occupied.size).reshape(shape)
        rows, columns, weights = [], [], []
        h, w = shape
        for dr, dc in ((0, 1), (1, 0), (1, 1), (1, -1)):
            a = index[:h - dr, max(0, -dc):w - max(0, dc)]
            b = index[dr:, max(0, dc):w - max(0, -dc)]
            rows.append(a.ravel())
            columns.append(b.ravel())
            weights.append(math.hypot(dr, dc) * self.cell * 0.5 * (cost.ravel()[a.ravel()] + cost.ravel()[b.ravel()]))
        graph = csr_matrix((np.concatenate(weights), (np.concatenate(rows), np.concatenate(columns))),
                           shape=(occupied.size, occupied.size))
        goal_cell = np.clip(anchor[1] - low, 0, np.array(shape) - 1)
        field = dijkstra(graph, directed=False, indices=int(goal_cell[0] * w + goal_cell[1])).reshape(shape)
        self._plan_key, self._plan = key, (np.minimum(field, UNREACHABLE), low)
        return self._plan

    def waypoint(self, pose: tuple[float, float, float], goal_xy, lookahead: float) -> tuple[float, float]:
        """The point (x, y in odom) ``lookahead`` metres along the planned way from the robot: the cost to go
        descended cell by cell (to the lowest of the 8 neighbours); the goal itself when it is nearer, or when no
        neighbour is lower (the plan cannot reach the robot)."""
        x, y = pose[0], pose[1]
        field, low = self._cost_to_go((x, y), goal_xy)
        h, w = field.shape
        goal_cell = np.floor(np.asarray(goal_xy) / self.cell).astype(np.int64) - low
        cell = np.clip(np.floor(np.array([x, y]) / self.cell).astype(np.int64) - low, 0, [h - 1, w - 1])
        travelled = 0.0
        steps = ((-1, -1), (-1, 0), (-1, 1), (0, -1), (0, 1), (1, -1), (1, 0), (1, 1))
        for _ in range(int(4 * lookahead / self.cell) + 1):
            if travelled >= lookahead:
                break
            if tuple(cell) == tuple(goal_cell):
                return float(goal_xy[0]), float(goal_xy[1])
            best, value = None, field[cell[0], cell[1]]
            for dr, dc in steps:
                r, c = cell[0] + dr, cell[1] + dc
                if 0 <= r < h and 0 <= c < w and field[r, c] < value:
                    best, value = (r, c), field[r, c]
            if best is None:
                return float(goal_xy[0]), float(goal_xy[1])
            travelled += self.cell * math.hypot(best[0] - cell[0], best[1] - cell[1])
            cell = np.array(best)
        point = (cell + low + 0.5) * self.cell
        if math.hypot(goal_xy[0] - x, goal_xy[1] - y) <= math.hypot(point[0] - x, point[1] - y):
            return float(goal_xy[0]), float(goal_xy[1])
        return float(point[0]), float(point[1])

    def features(self, pose: tuple[float, float, float], goal_xy, mirror: bool = False) -> np.ndarray:
        """``directions`` changes of the cost to go per metre from the robot's position to points ``radius``
        away at bearings 0, 360/directions, ... degrees in the base frame (negative: toward the goal on the
        remembered way), then the cost to go (m). ``mirror``: as the robot would read them in the world mirrored
        about its x axis (bearing b reads -b; training's ``--mirror``)."""
        from scipy import ndimage
        x, y, yaw = pose
        field, low = self._cost_to_go((x, y), goal_xy)
        world = yaw + self.angles
        points = np.stack([np.concatenate([[x], x + self.radius * np.cos(world)]),
                           np.concatenate([[y], y + self.radius * np.sin(world)])])
        grid = points / self.cell - 0.5 - low[:, None]
        values = ndimage.map_coordinates(field, grid, order=1, mode='nearest')
        here = values[0]
        around = values[1:]
        if here >= UNREACHABLE * 0.5:   # the robot's own cell unreachable: read the changes from the best point
            reachable = around[around < UNREACHABLE * 0.5]
            here = reachable.min() + self.radius if len(reachable) else UNREACHABLE
        change = np.clip((around - here) / self.radius, -FEATURE_CLIP, FEATURE_CLIP)
        if mirror:
            change = change[(-np.arange(self.directions)) % self.directions]
        return np.concatenate([change, [min(here, LENGTH_CLIP)]])
