"""Peer benchmark: robotsim against PyBullet and Drake on the same room, rover and sensor set, in one run.

Run with `make bench-peers` (or as part of `make bench`). The room and the rover are rebuilt in each peer from
robotsim's own compiled model (every world geom at its world pose, the rover from `robotsim describe --urdf`);
each peer is driven the way its users would drive it (see bench/peers/*_room.py). Repetitions are interleaved
(robotsim, then each peer, REPEATS times), so slow phases of a shared machine hit every engine alike; the table
gives medians with min-max and the ratios robotsim / peer of the medians. With --write-readme it replaces the
`peers` block of docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent / 'peers'))
from bench_sim import (SIM_SECONDS, camera_ms_per_frame, core_rtf, lidar_us_per_ray, machine, node_rtf,  # noqa: E402,I001
                       raw_mujoco_rtf, simulation, spread)
from environment import PEERS, pybullet_only_path, run_peer  # noqa: E402

import mujoco  # noqa: E402
import numpy as np  # noqa: E402

from robotsim_core.description import load_robot  # noqa: E402
from robotsim_core.description.urdf import tree_to_urdf  # noqa: E402
from robotsim_core.drive import inverse_kinematics  # noqa: E402

WORKSPACE = Path(__file__).resolve().parents[1]
LINEAR, ANGULAR = 0.2, 0.3
"""The arc every engine drives (m/s, rad/s), as bench_sim.py's core runs do."""
GEOM_TYPES = {int(mujoco.mjtGeom.mjGEOM_PLANE): 'plane', int(mujoco.mjtGeom.mjGEOM_BOX): 'box',
              int(mujoco.mjtGeom.mjGEOM_CYLINDER): 'cylinder'}


def scene_description(folder: Path) -> dict:
    """The room and rover as the peers rebuild them: JSON-ready, from robotsim's compiled model."""
    robot = load_robot('rover')
    urdf = folder / 'rover.urdf'
    urdf.write_text(tree_to_urdf(robot.tree))
    sim = simulation(False, robot)
    model, data = sim.model, sim.data
    mujoco.mj_forward(model, data)
    root = model.body('base_footprint').id
    geoms = []
    for geom in range(model.ngeom):
        body = model.geom_bodyid[geom]
        if model.body_rootid[body] == root or model.geom_contype[geom] == 0 and model.geom_conaffinity[geom] == 0:
            continue  # the robot, and visual-only geoms
        kind = GEOM_TYPES.get(int(model.geom_type[geom]))
        if kind is None:
            raise SystemExit(f'bench_peers: world geom {model.geom(geom).name!r} of type {model.geom_type[geom]} '
                             'has no peer counterpart here')
        size = model.geom_size[geom]
        full = {'plane': [2 * size[0], 2 * size[1]], 'box': list(2 * size), 'cylinder': [size[0], 2 * size[1]]}[kind]
        quaternion = np.zeros(4)
        mujoco.mju_mat2Quat(quaternion, data.geom_xmat[geom])
        free = model.body_jntnum[body] > 0 and body != 0
        geoms.append({'name': model.geom(geom).name, 'type': kind, 'size': [float(v) for v in full],
                      'pos': data.geom_xpos[geom].tolist(), 'quat': quaternion.tolist(),
                      'rgba': model.geom_rgba[geom].tolist(), 'friction': float(model.geom_friction[geom][0]),
                      'mass': float(model.body_mass[body]) if free else 0.0})
    sensors = {s.type: s for s in robot.sensors}
    lidar, camera = sensors['lidar'].spec, sensors['camera'].spec
    scan = snapshot(sim)['ranges']
    arm_joints = [j for arm in robot.arms for j in (*arm.joints, *arm.gripper_joints)]
    scene = {
        'urdf': str(urdf), 'timestep': float(model.opt.timestep), 'sim_seconds': SIM_SECONDS,
        'spawn': data.xpos[root].tolist(), 'geoms': geoms,
        'wheel_speeds': inverse_kinematics(robot.drive, LINEAR, ANGULAR).wheel_speeds,
        'wheel_max_torque': robot.drive.wheel_max_torque, 'held_joints': arm_joints,
        'lidar': {'frame': sensors['lidar'].frame, 'samples': lidar.samples, 'range_min': lidar.range_min,
                  'range_max': lidar.range_max, 'angle_min': scan.angle_min, 'angle_increment': scan.angle_increment},
        'camera': {'frame': sensors['camera'].frame, 'width': camera.width, 'height': camera.height,
                   'vertical_fov': camera.vertical_fov, 'near': camera.near, 'far': camera.far},
        'rates': {'lidar': lidar.rate, 'camera': camera.rate, 'imu': sensors['imu'].spec.rate, 'joint_states': 50.0},
    }
    sim.close()
    return scene


def snapshot(sim) -> dict:
    """robotsim's readings at the spawn, before any step: {'ranges': ScanReading, 'camera': CameraReading}."""
    mujoco.mj_forward(sim.model, sim.data)
    readings = {}
    for item in sim.robots[0].schedule:
        if item.channel in ('laser', 'camera'):
            readings['ranges' if item.channel == 'laser' else 'camera'] = item.measure(sim.data, item.rng, 0)
    return readings


def bridge_rtf(scene_path: Path, cameras: bool) -> float:
    """The PyBullet + rclpy bridge (peers/pybullet_bridge.py) in the workspace's environment, no subscriber."""
    import os
    import subprocess
    env = {**os.environ, 'ROS_DOMAIN_ID': str(200 + os.getpid() % 30), 'ROS_AUTOMATIC_DISCOVERY_RANGE': 'LOCALHOST',
           'PYTHONPATH': os.pathsep.join([str(pybullet_only_path()), os.environ.get('PYTHONPATH', '')])}
    result = subprocess.run([sys.executable, str(Path(__file__).resolve().parent / 'peers' / 'pybullet_bridge.py'),
                             str(scene_path), 'cameras' if cameras else 'no-cameras'],
                            capture_output=True, text=True, timeout=1800, env=env)
    lines = [line.split('RESULT ', 1)[1] for line in result.stdout.splitlines() if 'RESULT ' in line]
    if result.returncode != 0 or not lines:
        raise RuntimeError(f'pybullet_bridge.py failed: {result.stderr.strip()[-2000:]}')
    outcome = json.loads(lines[-1])
    return outcome['sim_seconds'] / outcome['wall']


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument('--repeats', type=int, default=3, help='interleaved repetitions of every measure (1..20)')
    parser.add_argument('--write-readme', action='store_true', help='replace the peers block in docs/benchmarks.md')
    args = parser.parse_args()
    if not 1 <= args.repeats <= 20:
        parser.error(f'--repeats: expected 1..20, got {args.repeats}')
    PEERS.ensure(prefix='bench_peers')
    print(f'machine: {machine()}', flush=True)
    with tempfile.TemporaryDirectory(prefix='robotsim-peers-') as folder:
        scene_path = Path(folder) / 'scene.json'
        scene = scene_description(Path(folder))
        scene_path.write_text(json.dumps(scene))
        figures: dict[str, dict[str, list[float]]] = {}
        renderers = {}

        def note(engine: str, measure: str, value: float) -> None:
            figures.setdefault(measure, {}).setdefault(engine, []).append(value)
            print(f'  {engine:9s} {measure:22s} {value:9.3f}', flush=True)

        for repeat in range(args.repeats):
            print(f'repetition {repeat + 1}/{args.repeats}', flush=True)
            note('mujoco', 'rtf_cameras_off', raw_mujoco_rtf())
            note('robotsim', 'rtf_all_sensors', core_rtf(True, camera_threads=False))
            note('robotsim', 'rtf_cameras_off', core_rtf(False))
            note('robotsim', 'us_per_ray', lidar_us_per_ray(1, 360, 0.0))
            milliseconds, renderers['robotsim'] = camera_ms_per_frame(320, 240)
            note('robotsim', 'ms_per_frame', milliseconds)
            for measure, key in (('run', 'rtf_all_sensors'), ('run-no-cameras', 'rtf_cameras_off')):
                result = run_peer('pybullet_room.py', str(scene_path), measure)
                note('pybullet', key, result['sim_seconds'] / result['wall'])
                renderers['pybullet'] = result['renderer']
            note('pybullet', 'us_per_ray', run_peer('pybullet_room.py', str(scene_path), 'lidar')['us_per_ray'])
            note('pybullet', 'ms_per_frame', run_peer('pybullet_room.py', str(scene_path), 'camera')['ms_per_frame'])
            for measure, key in (('run', 'rtf_all_sensors'), ('run-no-cameras', 'rtf_cameras_off')):
                result = run_peer('drake_room.py', str(scene_path), measure)
                note('drake', key, result['sim_seconds'] / result['wall'])
                renderers['drake'] = result['renderer']
            note('drake', 'ms_per_frame', run_peer('drake_room.py', str(scene_path), 'camera')['ms_per_frame'])
            note('robotsim', 'node_rtf_all_sensors', node_rtf(True))
            note('pybullet', 'node_rtf_all_sensors', bridge_rtf(scene_path, True))
            note('robotsim', 'node_rtf_cameras_off', node_rtf(False))
            note('pybullet', 'node_rtf_cameras_off', bridge_rtf(scene_path, False))

    rows = []
    labels = {'rtf_all_sensors': ('RTF, default sensors, cameras in the physics thread', True),
              'rtf_cameras_off': ('RTF, cameras off (lidar, IMU, joint states on)', True),
              'us_per_ray': ('lidar, 360 beams x 1 channel, us/ray', False),
              'ms_per_frame': ('camera RGB-D 320x240, ms/frame', False),
              'node_rtf_all_sensors': ('RTF, default sensors, publishing over ROS 2: sim_node / a PyBullet + rclpy bridge',
                                       True),
              'node_rtf_cameras_off': ('RTF, cameras off, publishing over ROS 2: sim_node / a PyBullet + rclpy bridge',
                                       True)}
    for measure, (label, higher_is_better) in labels.items():
        ours = statistics.median(figures[measure]['robotsim'])
        for engine in ('pybullet', 'drake'):
            if engine not in figures[measure]:
                continue  # Drake has no ray casting
            theirs = statistics.median(figures[measure][engine])
            ratio = ours / theirs if higher_is_better else theirs / ours
            rows.append(f'| {label} | {spread(figures[measure]["robotsim"], 2)} | {engine}: '
                        f'{spread(figures[measure][engine], 2)} | {ratio:.1f}x |')
    limit = statistics.median(figures['rtf_cameras_off']['mujoco'])
    core_off = statistics.median(figures['rtf_cameras_off']['robotsim'])
    rows.append(f'| RTF of raw `mj_step` on the same compiled model (the physics\' limit) | '
                f'{spread(figures["rtf_cameras_off"]["mujoco"], 2)} | robotsim core with cameras off (lidar, IMU on) / raw: '
                f'{core_off / limit:.2f} | |')
    block = '\n'.join([
        f'Measured by `make bench-peers` on {time.strftime("%Y-%m-%d")} ({args.repeats} interleaved repetitions; '
        f'median (min-max)): {machine()}. Renderers: robotsim {renderers["robotsim"]}; PyBullet '
        f'{renderers["pybullet"]}; Drake {renderers["drake"]}. Drake casts no lidar (it has no ray query): in its rows '
        'robotsim does more work than Drake.', '',
        '| measure | robotsim | peer | robotsim faster by |', '|---|---|---|---|', *rows])
    print(block)
    if args.write_readme:
        from readme_block import ReadmeBlockError, replace_block
        try:
            print(f'{replace_block(WORKSPACE / "docs" / "benchmarks.md", "peers", block)} updated')
        except ReadmeBlockError as error:
            print(f'bench_peers: --write-readme: {error}', file=sys.stderr)
            return 1
    return 0


if __name__ == '__main__':
    sys.exit(main())
