"""The demo driver (reactive lidar wanderer) in closed loop with the simulator, ROS-free: it
covers ground in the default room without its body touching walls or obstacles."""

import numpy as np
import pytest

from robotsim_core.description import load_robot
from robotsim_learning.wander import Wanderer
from robotsim_sim.scene import RobotPlacement, load_world, resolve_world_path
from robotsim_sim.simulation import SimOptions, Simulation
from sim_checks import body_collisions


@pytest.mark.parametrize('seed', [0, 3, 7])
def test_wanders_the_room_without_collisions(seed):
    sim = Simulation(load_world(resolve_world_path('room')), [RobotPlacement(load_robot('rover'))],
                     SimOptions(seed=seed, cameras=False))
    model = sim.model
    drivable = {model.geom(name).id for name in ('floor', 'kerb')}
    wanderer = Wanderer()
    command = (0.0, 0.0)
    positions, collisions = [], []
    for _ in range(round(60.0 / model.opt.timestep)):
        sim.command_base(0, *command)
        for event in sim.step():
            if event.channel == 'laser':
                scan = event.reading
                command = wanderer.command(scan.ranges.astype(np.float64), scan.angle_min, scan.angle_increment)
        collisions += body_collisions(sim, drivable)
        if sim.step_count % 50 == 0:
            positions.append(sim.ground_truth_pose()[0][:2])
    path = np.sum(np.linalg.norm(np.diff(np.array(positions), axis=0), axis=1))
    assert path > 3.0, path
    assert not collisions, sorted(set(collisions))
