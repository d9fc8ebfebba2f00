"""The privileged expert (ROS-free) in closed loop with the simulator: it plans around the room's
obstacles from ground truth and reaches goals without its body touching anything; an unreachable goal
stops it; the same inputs give the same commands."""

import numpy as np
import pytest

from robotsim_core.description import load_robot
from robotsim_learning.expert import Expert, ExpertConfig, footprint_radius
from robotsim_sim.scene import RobotPlacement, load_world, resolve_world_path
from robotsim_sim.simulation import SimOptions, Simulation
from sim_checks import body_collisions


def drive_to(goal, seconds: float = 45.0, seed: int = 0, log: list | None = None,
             config: ExpertConfig | None = None):
    world = load_world(resolve_world_path('room'))
    model = load_robot('rover')
    sim = Simulation(world, [RobotPlacement(model)], SimOptions(seed=seed, cameras=False))
    expert = Expert(world, model, config)
    drivable = {sim.model.geom(name).id for name in ('floor', 'kerb')}
    collisions, status, steps_per_command = [], 'driving', round(0.02 / sim.model.opt.timestep)
    try:
        for step in range(round(seconds / sim.model.opt.timestep)):
            if step % steps_per_command == 0:  # 50 Hz, like the node
                position, yaw = sim.ground_truth_pose()
                linear, angular, status = expert.command((position[0], position[1], yaw), goal)
                if log is not None:  # (clearance of the footprint, distance to the goal, speed)
                    log.append((expert.grid.clearance_at(position[:2]) - expert.radius,
                                float(np.hypot(*(np.array(goal) - position[:2]))), linear))
                if status != 'driving' and step > 0:
                    break
                sim.command_base(0, linear, angular)
            sim.step()
            collisions += body_collisions(sim, drivable)
        position, _ = sim.ground_truth_pose()
        return status, float(np.hypot(*(np.array(goal) - position[:2]))), collisions, expert
    finally:
        sim.close()


@pytest.mark.parametrize('goal', [(2.3, 1.7), (-2.3, -0.9), (2.3, -1.9)],
                         ids=['behind the crate', 'past the shelf', 'over the kerb'])
def test_the_expert_reaches_goals_around_obstacles_without_touching_them(goal):
    status, distance, collisions, expert = drive_to(goal)
    assert status == 'reached' and distance <= expert.config.goal_tolerance + 0.05, (status, distance)
    assert not collisions, sorted(set(collisions))
    # It did plan around something: the straight line from the spawn is blocked for each of these goals.
    assert len(expert.plan((0.0, 0.0), goal)) > 2


def test_an_unreachable_goal_stops_the_robot():
    status, _, collisions, expert = drive_to((1.6, 0.9), seconds=2.0)  # inside the crate
    assert status == 'no_path' and not collisions
    assert expert.plan((0.0, 0.0), (1.6, 0.9)) is None


def test_plans_are_deterministic_and_keep_the_footprint_clear():
    world = load_world(resolve_world_path('room'))
    model = load_robot('rover')
    assert 0.1 < footprint_radius(model) < 0.4
    first, second = Expert(world, model), Expert(world, model)
    a, b = first.plan((0.0, 0.0), (2.3, 1.7)), second.plan((0.0, 0.0), (2.3, 1.7))
    assert all(np.array_equal(p, q) for p, q in zip(a, b)) and len(a) == len(b)
    # Every segment stays in free cells of the inflated grid (footprint radius + clearance from obstacles).
    assert all(first.grid.free_line(p, q) for p, q in zip(a, a[1:]))


def test_a_goal_is_taken_only_finite_nearby_and_in_odom():
    from robotsim_learning.observation import MAX_GOAL_DISTANCE, goal_problem

    assert goal_problem('odom', (2.0, -1.0), '') == ''
    assert goal_problem('r1/odom', (2.0, -1.0), 'r1/') == ''
    assert 'expected frame_id' in goal_problem('map', (2.0, -1.0), '')
    assert 'expected finite x and y' in goal_problem('odom', (float('nan'), 0.0), '')
    far = goal_problem('odom', (1e300, 1e300), '')  # no place to drive to: refused, not planned for
    assert far == f'expected finite x and y within +-{MAX_GOAL_DISTANCE:g} m, got (1e+300, 1e+300)', far


CAREFUL = ExpertConfig(wide_clearance=0.25, slow_clearance=0.3)
"""An expert that keeps a wider berth where it can and slows down beside obstacles."""


def test_the_grid_knows_each_cells_clearance_and_the_expert_slows_beside_obstacles():
    world = load_world(resolve_world_path('room'))
    model = load_robot('rover')
    assert Expert(world, model)._slowdown(np.array([-1.8, -1.6 + 0.4]), -np.pi / 2) == 1.0  # by default: never
    expert = Expert(world, model, CAREFUL)
    grid, resolution = expert.grid, expert.config.resolution
    # The shelf (-1.8, -1.6), 0.8 x 0.3, axis-aligned: 0.5 m in front of its long face is 0.5 m of clearance;
    # the cylinder (1.2, -0.6), radius 0.15: 0.4 m from its axis is 0.25 m; the kerb (1.5 cm) is driven over.
    assert abs(grid.clearance_at((-1.8, -1.6 + 0.15 + 0.5)) - 0.5) <= resolution
    assert abs(grid.clearance_at((1.2 + 0.4, -0.6)) - 0.25) <= resolution
    assert grid.clearance_at((0.9, -1.7)) > 0.3
    assert grid.clearance_at((-1.8, -1.6)) == 0.0  # inside the shelf
    # Every grid of a wider berth blocks a superset of the narrower one's cells.
    assert all((wide.blocked >= narrow.blocked).all() for wide, narrow in zip(expert.grids, expert.grids[1:]))
    # Open space: cruise speed; facing the shelf with little clearance: a fraction of it, never below the floor.
    config = expert.config
    assert expert._slowdown(np.array([-0.5, 1.0]), 0.0) == 1.0
    near = expert._slowdown(np.array([-1.8, -1.6 + 0.15 + expert.radius + 0.05]), -np.pi / 2)
    assert config.slow_fraction <= near < 0.6, near
    # Closed loop past the crate: the speeds commanded near obstacles are below those in the open.
    log = []
    status, distance, collisions, _ = drive_to((2.3, 1.7), log=log, config=CAREFUL)
    assert status == 'reached' and not collisions
    away_from_goal = [(clearance, speed) for clearance, to_goal, speed in log if to_goal > 0.6 and speed > 0]
    # It kept the wide berth all the way, and drove slower within slow_clearance of the crate than in the open.
    assert min(clearance for clearance, _ in away_from_goal) >= config.wide_clearance - resolution
    tight = [(clearance, speed) for clearance, speed in away_from_goal if clearance < config.slow_clearance]
    open_space = [speed for clearance, speed in away_from_goal if clearance > config.slow_clearance + config.slow_ahead]
    assert tight and open_space, (len(tight), len(open_space))
    assert max(open_space) == pytest.approx(expert.max_linear, rel=1e-3)
    for clearance, speed in tight:  # never above what the clearance at the robot allows (half a cell of slack)
        allowed = config.slow_fraction + (1 - config.slow_fraction) * (clearance + resolution / 2) / config.slow_clearance
        assert speed <= expert.max_linear * allowed + 1e-9, (clearance, speed)


def test_a_turn_already_going_is_kept_where_the_other_side_is_about_as_short():
    """A robot that turns left where the plan turns it right gets a path around the left when that is at most
    ``commit_margin`` longer (its label keeps the turn going); a longer one, or none asked for, keeps the plan."""
    from robotsim_learning.expert import _length

    world = load_world(resolve_world_path('room'))
    model = load_robot('rover')
    pose, goal = (0.0, 0.0, -1.5), (-2.3, -0.9)  # the plan turns right on the spot
    still = Expert(world, model)
    assert still.command(pose, goal)[:2] == (0.0, -still.max_angular)
    best = _length(still.path)
    for config, turns in ((ExpertConfig(commit_margin=0.5), True), (ExpertConfig(commit_margin=0.0), False),
                          (ExpertConfig(commit_margin=0.2), False)):
        runs = []
        for _ in range(2):
            expert = Expert(world, model, config)
            expert.command(pose, goal)
            linear, angular, status = expert.command(pose, goal, yaw_rate=0.8)
            runs.append((linear, angular, [tuple(p) for p in expert.path]))
            assert status == 'driving'
            if turns:  # around the left: its first step leaves to the left of the heading
                assert angular > 0 and best < _length(expert.path) <= best + config.commit_margin, (angular, best)
                first = expert.path[1] - np.array(pose[:2])
                assert np.cos(pose[2]) * first[1] - np.sin(pose[2]) * first[0] > 0
            else:
                assert angular == -expert.max_angular and _length(expert.path) == pytest.approx(best)
        assert runs[0] == runs[1]  # deterministic
    # Turning the way the plan asks changes nothing.
    expert = Expert(world, model, ExpertConfig(commit_margin=0.5))
    assert expert.command(pose, goal, yaw_rate=-0.8)[:2] == (0.0, -expert.max_angular)
    assert _length(expert.path) == pytest.approx(best)


def test_a_memoryless_expert_plans_from_where_the_robot_is_at_every_command():
    """ExpertConfig(memoryless=True): the goal's cost-to-go field measures the same shortest way as A*; the command
    at a pose is the same whatever the expert commanded before (the path-keeping expert's depends on where it
    planned first), and in closed loop it reaches its goals around the room's obstacles without touching them."""
    from robotsim_learning.expert import _length, astar, cost_to_go

    world = load_world(resolve_world_path('room'))
    model = load_robot('rover')
    expert = Expert(world, model)
    grid = expert.grids[0]
    start, goal = grid.cell((0.0, 0.0)), grid.cell((2.3, 1.7))
    field = cost_to_go(grid, goal)
    cells = astar(grid, start, goal)
    assert field[start] == pytest.approx(_length([grid.centre(c) for c in cells]), abs=1e-9)
    assert not np.isfinite(field[grid.blocked]).any()  # never through a blocked cell
    # From the same pose, after having commanded from elsewhere: the memoryless expert answers as a fresh one.
    first, here, goal_xy = (-1.0, -1.2, 0.3), (0.0, 0.0, 0.6), (2.3, 1.7)
    fresh = Expert(world, model, ExpertConfig(memoryless=True)).command(here, goal_xy)
    remembering = Expert(world, model, ExpertConfig(memoryless=True))
    remembering.command(first, goal_xy)
    assert remembering.command(here, goal_xy) == fresh
    keeping = Expert(world, model)  # the path-keeping expert follows the path it planned at the first pose
    keeping.command(first, goal_xy)
    assert keeping.command(here, goal_xy)[1] != pytest.approx(Expert(world, model).command(here, goal_xy)[1], abs=0.05)
    status, distance, collisions, driven = drive_to((2.3, 1.7), config=ExpertConfig(memoryless=True))
    assert status == 'reached' and distance <= driven.config.goal_tolerance + 0.05, (status, distance)
    assert not collisions, sorted(set(collisions))
