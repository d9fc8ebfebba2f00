"""Cameras rendered in threads of their own (robotsim_sim/capture.py, SimOptions.camera_threads) give the
readings a capture in the physics thread gives, byte for byte, with noise on, for one and two robots;
every capture is delivered (at the latest when the camera's next one is due, or by flush), never
before its stamp's step, and a reset discards captures in flight."""

from __future__ import annotations

import math

import numpy as np
import pytest

from robotsim_core.description import load_robot
from robotsim_sim.scene import RobotPlacement, load_world, resolve_world_path
from robotsim_sim.simulation import SimOptions, Simulation
from robotsim_core.description.world_spec import SpawnSpec

SECONDS = 1.0


def simulation(robots: int, threads: bool) -> Simulation:
    world = load_world(resolve_world_path('room'))
    if robots == 1:
        placements = [RobotPlacement(load_robot('rover'))]
    else:
        placements = [RobotPlacement(load_robot('rover'), 'robot1', SpawnSpec((-1.0, 0.0, 0.0), 0.0)),
                      RobotPlacement(load_robot('rover'), 'robot2', SpawnSpec((1.0, 0.0, 0.0), math.pi))]
    return Simulation(world, placements, SimOptions(seed=4, cameras=True, camera_threads=threads))


def camera_readings(sim: Simulation) -> tuple[dict, list[tuple[int, int]]]:
    """Camera readings by robot, and (stamp, step time) of each delivery."""
    readings, deliveries = {}, []
    try:
        while sim.time_ns < SECONDS * 1e9:
            for robot in range(len(sim.robots)):
                sim.command_base(robot, 0.3, 0.6 if robot == 0 else -0.6)
            for event in sim.step():
                if event.channel == 'camera':
                    readings.setdefault(event.robot, []).append(event.reading)
                    deliveries.append((event.reading.stamp, sim.time_ns))
        for event in sim.flush():
            readings.setdefault(event.robot, []).append(event.reading)
            deliveries.append((event.reading.stamp, sim.time_ns))
        assert not sim.flush()
    finally:
        sim.close()
    return readings, deliveries


@pytest.mark.parametrize('robots', [1, 2])
def test_threaded_captures_equal_captures_in_the_physics_thread(robots):
    inline, _ = camera_readings(simulation(robots, threads=False))
    threaded, deliveries = camera_readings(simulation(robots, threads=True))
    assert sorted(inline) == sorted(threaded) == list(range(robots))
    for robot in inline:
        assert len(inline[robot]) == len(threaded[robot]) >= 15
        for a, b in zip(inline[robot], threaded[robot]):
            assert a.stamp == b.stamp
            assert a.rgb.tobytes() == b.rgb.tobytes() and a.depth.tobytes() == b.depth.tobytes()
        stamps = [r.stamp for r in threaded[robot]]
        assert stamps == sorted(stamps)
    # The noise is on, so equal bytes mean the same noise draws, not just the same scene.
    assert float(np.std(inline[0][1].rgb.astype(float) - inline[0][0].rgb.astype(float))) > 0
    period, step = round(1e9 / 15), 2_000_000  # the room's 500 Hz physics
    for stamp, delivered_at in deliveries:  # at the latest at the step the next capture falls due
        assert stamp <= delivered_at < stamp + period + step, (stamp, delivered_at)


def test_a_reset_discards_captures_in_flight():
    sim = simulation(1, threads=True)
    try:
        capture = next(item.capture for item in sim.robots[0].schedule if item.capture is not None)
        while sim.time_ns < 300_000_000 or not capture.in_flight:  # a capture of the old episode in flight
            sim.step()
        sim.reset(5)
        assert not sim.flush()
        first = []
        while not first:
            first = [e for e in sim.step() + sim.flush() if e.channel == 'camera']
        assert first[0].reading.stamp == 2_000_000  # the new episode's first step's capture, not the old one
    finally:
        sim.close()


def test_a_failed_start_leaves_no_capture_thread_or_firmware_link():
    # The first rover's camera thread and firmware link exist when the racer (Ackermann: no firmware in the
    # loop) is refused: they must be closed, not left to the process's end.
    import threading

    from robotsim_core.errors import DescriptionError

    def captures() -> int:
        return sum(thread.name.startswith('capture') and thread.is_alive() for thread in threading.enumerate())
    before = captures()
    world = load_world(resolve_world_path('room'))
    placements = [RobotPlacement(load_robot('rover'), 'robot1', SpawnSpec((-1.0, 0.0, 0.0), 0.0)),
                  RobotPlacement(load_robot('racer'), 'robot2', SpawnSpec((1.0, 0.0, 0.0), math.pi))]
    with pytest.raises(DescriptionError, match='firmware in the loop drives differential bases'):
        Simulation(world, placements, SimOptions(seed=4, cameras=True, camera_threads=True, firmware=True))
    assert captures() == before
