"""The peer benchmark compares like with like: PyBullet 3.2.7 and Drake 1.51.1 (their own cached environment)
rebuild robotsim's room and rover so that their sensors see what robotsim's see at the spawn, drive the same
arc, and read every sensor at its rate. Speed itself is measured by `make bench-peers`, never here."""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path

import numpy as np
import pytest

BENCH = Path(__file__).resolve().parents[1] / 'bench'
sys.path.insert(0, str(BENCH))
sys.path.insert(0, str(BENCH / 'peers'))
from bench_peers import bridge_rtf, scene_description, snapshot  # noqa: E402
from bench_sim import simulation  # noqa: E402
from environment import run_peer  # noqa: E402

from robotsim_core.description import load_robot  # noqa: E402


@pytest.fixture(scope='module')
def scene(tmp_path_factory):
    folder = tmp_path_factory.mktemp('peers')
    description = scene_description(folder)
    description['sim_seconds'] = 0.5
    path = folder / 'scene.json'
    path.write_text(json.dumps(description))
    sim = simulation(True, load_robot('rover'))
    ours = snapshot(sim)
    sim.close()
    return path, description, ours


def far_capped(depth, far: float) -> np.ndarray:
    depth = np.asarray(depth, dtype=float)
    return np.where(np.isfinite(depth) & (depth < far - 1e-3), depth, far)


def test_peers_see_the_room_robotsim_sees(scene):
    path, description, ours = scene
    far = description['camera']['far']
    our_depth = far_capped(ours['camera'].depth[::8, ::8], far)
    pybullet = run_peer('pybullet_room.py', str(path), 'snapshot')
    drake = run_peer('drake_room.py', str(path), 'snapshot')
    for engine, depth in (('pybullet', pybullet['depth']), ('drake', drake['depth'])):
        theirs = far_capped(depth, far)
        assert theirs.shape == our_depth.shape, engine
        agree = np.mean(np.abs(theirs - our_depth) < 0.05)
        assert agree > 0.95, f'{engine}: {agree:.1%} of depth pixels within 5 cm of robotsim\'s'
    their_ranges = np.array([np.inf if r is None else r for r in pybullet['ranges']])
    our_ranges = np.asarray(ours['ranges'].ranges, dtype=float)
    both = np.isfinite(their_ranges) & np.isfinite(our_ranges)
    assert both.mean() > 0.95, 'the room is closed: nearly every beam meets a wall in both'
    assert np.median(np.abs(their_ranges[both] - our_ranges[both])) < 0.02  # robotsim's lidar noise: 1 cm


def test_peers_drive_the_arc_and_read_every_sensor_at_its_rate(scene):
    path, description, _ = scene
    expected = {name: math.floor(description['sim_seconds'] * rate + 1e-9) for name, rate in description['rates'].items()}
    for script in ('pybullet_room.py', 'drake_room.py'):
        result = run_peer(script, str(path), 'run')
        counts = dict(expected)
        if script == 'drake_room.py':
            del counts['lidar']  # Drake has no ray casting
        assert result['counts'] == counts, script
        x, y = result['final_xy']
        assert 0.05 < x < 0.15 and abs(y) < 0.05, f'{script}: 0.5 s of a 0.2 m/s arc ended at {x:.3f}, {y:.3f}'


def test_the_pybullet_rclpy_bridge_runs_the_scene(scene):
    """The bridge the sim node is compared with: PyBullet's module beside the workspace's rclpy, every topic."""
    path, _, _ = scene
    assert bridge_rtf(path, cameras=True) > 0
