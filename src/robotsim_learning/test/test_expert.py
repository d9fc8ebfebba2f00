"""The privileged expert (ROS-free) in closed loop with the simulator: it plans around the room's
obstacles from ground truth and reaches goals without its body touching anything; an unreachable goal
stops it; the same inputs give the same commands."""

import numpy as np
import pytest

from robotsim_core.description import load_robot
from robotsim_learning.expert import Expert, footprint_radius
from robotsim_sim.scene import RobotPlacement, load_world, resolve_world_path
from robotsim_sim.simulation import SimOptions, Simulation
from sim_checks import body_collisions


def drive_to(goal, seconds: float = 45.0, seed: int = 0):
    world = load_world(resolve_world_path('room'))
    model = load_robot('rover')
    sim = Simulation(world, [RobotPlacement(model)], SimOptions(seed=seed, cameras=False))
    expert = Expert(world, model)
    drivable = {sim.model.geom(name).id for name in ('floor', 'kerb')}
    collisions, status, steps_per_command = [], 'driving', round(0.02 / sim.model.opt.timestep)
    try:
        for step in range(round(seconds / sim.model.opt.timestep)):
            if step % steps_per_command == 0:  # 50 Hz, like the node
                position, yaw = sim.ground_truth_pose()
                linear, angular, status = expert.command((position[0], position[1], yaw), goal)
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
