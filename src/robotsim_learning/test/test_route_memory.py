"""The route memory (ROS-free): returns of scans cast in a small world of boxes are remembered in odom, cleared
where a later beam passes through them, and the cost to go planned over them leads around a wall through its gap,
not at the goal straight through the wall."""

import math

import numpy as np
import pytest

from robotsim_core.description import load_robot
from robotsim_learning import route_memory
from robotsim_learning.observation import ObservationSpec, observation, spec_for_robot
from robotsim_learning.route_memory import RouteMemory

ROOM = [(-3.1, -2.6, -3.0, 2.6), (3.0, -2.6, 3.1, 2.6), (-3.1, -2.6, 3.1, -2.5), (-3.1, 2.5, 3.1, 2.6)]
"""Walls of a 6 m x 5 m room as boxes (x0, y0, x1, y1)."""
WALL = (-0.05, -2.5, 0.05, 1.4)
"""A wall across the room with a gap of 1.1 m at its +y end."""
ANGLE_MIN, INCREMENT, BEAMS = -math.pi, 2 * math.pi / 360, 360


def cast(boxes, x, y, yaw, range_max=12.0):
    """Ranges of a 360-beam lidar at (x, y, yaw) against axis-aligned boxes (slab method); +Inf without a return."""
    angles = yaw + ANGLE_MIN + INCREMENT * np.arange(BEAMS)
    dx, dy = np.cos(angles), np.sin(angles)
    ranges = np.full(BEAMS, np.inf)
    with np.errstate(divide='ignore', invalid='ignore'):
        for x0, y0, x1, y1 in boxes:
            tx = np.stack([(x0 - x) / dx, (x1 - x) / dx])
            ty = np.stack([(y0 - y) / dy, (y1 - y) / dy])
            near = np.maximum(np.nanmin(tx, axis=0), np.nanmin(ty, axis=0))
            far = np.minimum(np.nanmax(tx, axis=0), np.nanmax(ty, axis=0))
            hit = (near <= far) & (near > 0)
            ranges = np.where(hit & (near < ranges), near, ranges)
    return np.where(ranges < range_max, ranges, np.inf)


def memory(directions=16):
    return RouteMemory(directions, radius=0.4, cell=0.1, clearance=0.2, berth=0.15, range_max=12.0)


def test_the_cost_to_go_leads_through_the_gap_not_through_the_wall():
    route = memory()
    pose = (-2.0, -1.0, 0.0)
    route.add_scan(cast(ROOM + [WALL], *pose), ANGLE_MIN, INCREMENT, pose, stamp=0.0)
    change = route.features(pose, (2.0, -1.0))
    bearings = np.degrees(route.angles)
    best = bearings[np.argmin(change[:-1])]
    assert 20 <= best <= 90, (best, change)           # toward the gap (+y), not at the goal (0 degrees)
    assert change[0] > change[np.argmin(change[:-1])] + 0.3
    # The cost to go is the way around the wall: longer than the straight 4 m, shorter than a detour of 10 m.
    assert 6.0 < change[-1] < 10.0
    # Without the wall the best bearing is the goal's, and the cost to go its distance.
    free = memory()
    free.add_scan(cast(ROOM, *pose), ANGLE_MIN, INCREMENT, pose, stamp=0.0)
    open_way = free.features(pose, (2.0, -1.0))
    assert np.argmin(open_way[:-1]) == 0 and open_way[0] == pytest.approx(-1.0, abs=0.1)
    assert open_way[-1] == pytest.approx(4.0, abs=0.3)


def test_what_was_seen_is_remembered_where_it_is_hidden_and_cleared_where_a_beam_passes():
    box, screen = (0.5, -0.3, 0.9, 0.3), (-0.5, -0.2, -0.4, 0.2)
    route = memory()
    route.add_scan(cast(ROOM + [box], 0.0, 1.5, 0.0), ANGLE_MIN, INCREMENT, (0.0, 1.5, 0.0), stamp=0.0)
    cells = {(i, j) for i in range(5, 9) for j in range(-3, 3)}
    seen = cells & set(route.cells)
    assert len(seen) >= 3
    # From behind a screen the box is hidden: its cells stay remembered.
    route.add_scan(cast(ROOM + [box, screen], -1.5, 0.0, 0.0), ANGLE_MIN, INCREMENT, (-1.5, 0.0, 0.0), stamp=0.1)
    assert seen <= set(route.cells)
    # The box taken away: the beams from above pass through its cells and clear them.
    route.add_scan(cast(ROOM, 0.0, 1.5, 0.0), ANGLE_MIN, INCREMENT, (0.0, 1.5, 0.0), stamp=0.2)
    assert not (seen & set(route.cells))
    # A scan with a stamp already added changes nothing.
    before = dict(route.cells)
    route.add_scan(cast(ROOM + [box], 0.0, 1.5, 0.0), ANGLE_MIN, INCREMENT, (0.0, 1.5, 0.0), stamp=0.2)
    assert route.cells == before


def test_the_mirrored_reading_is_the_bearings_reversed_and_the_features_repeat():
    a, b = memory(), memory()
    for step, pose in enumerate([(-2.0, -1.0, 0.3), (-1.8, -0.9, 0.5), (-1.6, -0.7, 0.8)]):
        for route in (a, b):
            route.add_scan(cast(ROOM + [WALL], *pose), ANGLE_MIN, INCREMENT, pose, stamp=0.1 * step)
    pose, goal = (-1.6, -0.7, 0.8), (2.0, -1.0)
    plain, mirrored = a.features(pose, goal), a.features(pose, goal, mirror=True)
    assert np.array_equal(plain, b.features(pose, goal))      # deterministic
    order = (-np.arange(16)) % 16
    assert np.array_equal(mirrored[:-1], plain[:-1][order]) and mirrored[-1] == plain[-1]


def test_the_memory_is_bounded_keeping_the_cells_nearest_the_robot(monkeypatch):
    pose = (0.0, 0.0, 0.0)
    whole = memory()
    whole.add_scan(cast(ROOM, *pose), ANGLE_MIN, INCREMENT, pose, stamp=0.0)
    assert len(whole.cells) > 150
    monkeypatch.setattr(route_memory, 'MAX_CELLS', 150)
    route = memory()
    route.add_scan(cast(ROOM, *pose), ANGLE_MIN, INCREMENT, pose, stamp=0.0)
    assert len(route.cells) == 150 and set(route.cells) < set(whole.cells)

    def distance(cells):
        keys = (np.array(list(cells)) + 0.5) * 0.1
        return np.hypot(keys[:, 0], keys[:, 1])
    assert distance(route.cells).max() <= distance(set(whole.cells) - set(route.cells)).min()   # the far ones went
    with pytest.raises(ValueError, match='even number'):
        RouteMemory(3, 0.4, 0.1, 0.2, 0.15, 12.0)


def test_the_rover_s_spec_observes_the_route_after_the_goal():
    spec = spec_for_robot(load_robot('rover'), 72, image=False, heading='imu', route=16)
    assert spec.size == 72 + 5 + 17 and spec.names()[-2:] == ['route_338deg', 'route_cost_to_go']
    assert spec.route_clearance == pytest.approx(0.2007, abs=1e-3)
    assert ObservationSpec.from_json(spec.to_json()) == spec
    route = spec.route_memory()
    ranges = np.full(spec.scan_samples, np.inf)
    route.add_scan(ranges, -math.pi, 2 * math.pi / spec.scan_samples, (0.0, 0.0, 0.0), stamp=0.0)
    row = observation(spec, ranges, None, (0.0, 0.0), (3.0, 0.0), route=route.features((0.0, 0.0, 0.0), (3.0, 0.0)))
    assert row.shape == (spec.size,) and row[-1] == pytest.approx(3.0, abs=0.2)
    with pytest.raises(ValueError, match='expected 17 route values'):
        observation(spec, ranges, None, (0.0, 0.0), (3.0, 0.0))
    with pytest.raises(ValueError, match='even number of directions'):
        spec_for_robot(load_robot('rover'), 72, image=False, heading='imu', route=5)


def test_a_policy_observing_the_route_keeps_its_spec_in_the_file(tmp_path):
    pytest.importorskip('jax', reason='training needs requirements/train.txt (Python 3.11+)')
    import json

    from robotsim_learning.policy_model import TrainConfig, export_onnx, train
    from robotsim_learning.policy_runtime import PolicyFileError, PolicyRuntime, observation_spec_from_metadata
    spec = spec_for_robot(load_robot('rover'), 72, image=False, heading='imu', route=16)
    rows = np.random.default_rng(4).normal(size=(200, spec.size)).astype(np.float32)
    actions = np.tile(np.array([[0.2, 0.1]], dtype=np.float32), (len(rows), 1))
    policy = train(rows, actions, spec, (0.4, 1.5), TrainConfig(hidden=(8,), epochs=1))
    export_onnx(policy, str(tmp_path / 'route.onnx'))
    runtime = PolicyRuntime(str(tmp_path / 'route.onnx'))
    assert runtime.spec == spec and runtime.spec.route_memory() is not None
    np.testing.assert_allclose(runtime.act_batch(rows[:10]), policy.act(rows[:10]), atol=1e-5)
    broken = json.loads(spec.to_json()) | {'route_directions': 3}
    with pytest.raises(PolicyFileError, match='route_directions: expected an even integer 0 ... 64'):
        observation_spec_from_metadata('route.onnx', json.dumps(broken))


def test_the_waypoint_is_a_metre_along_the_way_round_the_wall():
    route = memory()
    pose = (-2.0, -1.0, 0.0)
    route.add_scan(cast(ROOM + [WALL], *pose), ANGLE_MIN, INCREMENT, pose, stamp=0.0)
    x, y = route.waypoint(pose, (2.0, -1.0), 1.0)
    assert 0.8 <= math.hypot(x - pose[0], y - pose[1]) <= 1.3      # 1 m of grid steps from the robot's cell
    assert math.degrees(math.atan2(y - pose[1], x - pose[0])) > 20       # up toward the gap, not at the goal
    free = memory()
    free.add_scan(cast(ROOM, *pose), ANGLE_MIN, INCREMENT, pose, stamp=0.0)
    x, y = free.waypoint(pose, (2.0, -1.0), 1.0)
    assert x == pytest.approx(-1.0, abs=0.15) and y == pytest.approx(-1.0, abs=0.15)
    assert free.waypoint(pose, (-1.5, -1.0), 1.0) == (-1.5, -1.0)         # a goal nearer than that: the goal
    # The policy observes the goal at its own distance in the waypoint's bearing.
    from robotsim_learning.observation import waypoint_goal
    spec = spec_for_robot(load_robot('rover'), 72, image=False, heading='imu', waypoint=1.0)
    assert spec.size == 72 + 5 and spec.route_memory() is not None
    seen = spec.route_memory()
    seen.add_scan(cast(ROOM + [WALL], *pose), ANGLE_MIN, INCREMENT, pose, stamp=0.0)
    gx, gy = waypoint_goal(spec, seen, pose, (2.0, -1.0))
    assert math.hypot(gx, gy) == pytest.approx(4.0) and gy > 0.3 * gx
