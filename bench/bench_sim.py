"""Simulator benchmark: real-time factor, lidar and camera cost, message publish overhead.

Run with `make bench` (bare machine). Prints a markdown table and, with --write-readme,
replaces the block between the bench markers in the documentation (docs/benchmarks.md). Every figure is measured here on
this run; nothing is copied or estimated. Wall-clock timings on a shared 2-core machine vary
by some percent between runs.
"""

from __future__ import annotations

import argparse
import os
import platform
import re
import statistics
import subprocess
import sys
import time
from pathlib import Path

from robotsim_sensors.gl_backend import select_gl_backend

select_gl_backend()  # before mujoco is imported: EGL, else OSMesa

import mujoco  # noqa: E402
import numpy as np  # noqa: E402

from robotsim_core.description import load_robot  # noqa: E402
from robotsim_core.fleet import load_fleet  # noqa: E402
from robotsim_sensors.lidar import LidarSpec  # noqa: E402
from robotsim_sensors.lidar import Lidar  # noqa: E402
from robotsim_sim.scene import RobotPlacement, SpawnSpec, load_world, resolve_world_path  # noqa: E402
from robotsim_sim.simulation import SimOptions, Simulation  # noqa: E402

WORKSPACE = Path(__file__).resolve().parents[1]
SIM_SECONDS = 20.0


def machine() -> str:
    cpu = 'unknown CPU'
    try:
        cpu = next(line.split(':', 1)[1].strip() for line in open('/proc/cpuinfo') if line.startswith('model name'))
    except (OSError, StopIteration):
        pass
    memory = os.sysconf('SC_PAGE_SIZE') * os.sysconf('SC_PHYS_PAGES') / 2**30
    return (f'{cpu}, {os.cpu_count()} cores, {memory:.0f} GiB, {platform.system()} {platform.release()}, '
            f'Python {platform.python_version()}, MuJoCo {mujoco.__version__}, MUJOCO_GL={os.environ.get("MUJOCO_GL")}')


def gl_renderer(sim: Simulation) -> str:
    try:
        from OpenGL import GL
        sim.renderer.gl.make_current()
        return GL.glGetString(GL.GL_RENDERER).decode()
    except Exception as error:  # PyOpenGL missing or no context: report, do not fail the benchmark
        return f'unknown ({error.__class__.__name__})'


def simulation(cameras: bool, robot=None, camera_threads: bool = False, fleet: str = '', world: str = 'room') -> Simulation:
    if fleet:
        placements = [RobotPlacement(load_robot(entry.robot), entry.namespace, SpawnSpec(entry.xyz, entry.yaw))
                      for entry in load_fleet(fleet).robots]
    else:
        placements = [RobotPlacement(robot or load_robot('rover'))]
    return Simulation(load_world(resolve_world_path(world)), placements,
                      SimOptions(seed=0, cameras=cameras, camera_threads=camera_threads))


COMMAND_EVERY = 25
"""Physics steps between base commands in the core runs: 20 Hz, as a navigation controller sends them."""


def core_rtf(cameras: bool, camera_threads: bool = True, fleet: str = '', robot=None, world: str = 'room') -> float:
    """The simulation core alone; ``camera_threads`` as the node runs it (True) or as the dataset
    generator's fast path does (False: every capture in the physics thread). The base drives a
    0.2 m/s, 0.3 rad/s arc, commanded at 20 Hz."""
    sim = simulation(cameras, robot=robot, camera_threads=camera_threads, fleet=fleet, world=world)
    steps = round(SIM_SECONDS / sim.model.opt.timestep)
    start = time.perf_counter()
    for step in range(steps):
        if step % COMMAND_EVERY == 0:
            for index in range(len(sim.robots)):
                sim.command_base(index, 0.2, 0.3)
        sim.step()
    sim.flush()
    seconds = time.perf_counter() - start
    sim.close()
    return SIM_SECONDS / seconds


def raw_mujoco_rtf() -> float:
    """MuJoCo's own limit: ``mj_step`` alone on the core's compiled model (cameras off), from the state
    of the core after 1 s of the same arc, the wheels' last duties held, so the rover keeps driving."""
    sim = simulation(False)
    for step in range(round(1.0 / sim.model.opt.timestep)):
        if step % COMMAND_EVERY == 0:
            sim.command_base(0, 0.2, 0.3)
        sim.step()
    model, data = sim.model, mujoco.MjData(sim.model)
    mujoco.mj_copyData(data, model, sim.data)
    steps = round(SIM_SECONDS / model.opt.timestep)
    start = time.perf_counter()
    for _ in range(steps):
        mujoco.mj_step(model, data)
    seconds = time.perf_counter() - start
    sim.close()
    return SIM_SECONDS / seconds


def spread(values: list[float], digits: int = 1) -> str:
    """Median (min-max) of repeated measures."""
    return f'{statistics.median(values):.{digits}f} ({min(values):.{digits}f}-{max(values):.{digits}f})'


def rover_with_sensors(*kinds: str):
    """The rover with only the sensors of these kinds (none: joint states, odometry and TF only)."""
    import dataclasses
    robot = load_robot('rover')
    return dataclasses.replace(robot, sensors=[sensor for sensor in robot.sensors if sensor.type in kinds])


NODE_CPU: dict[tuple[bool, str], list[float]] = {}
"""CPU seconds per simulated second of each node run (its report's CPU time: every thread, start-up excluded)."""


def node_rtf(cameras: bool, fleet: str = '') -> float:
    """The ROS node end to end (messages built and published, no subscriber), as fast as possible. Also
    notes in NODE_CPU the run's CPU seconds per simulated second."""
    env = {**os.environ, 'ROS_DOMAIN_ID': str(200 + os.getpid() % 30)}
    install = Path(os.environ.get('ROBOTSIM_INSTALL') or WORKSPACE / 'install')  # the distro's (scripts/distro.sh)
    command = [str(install / 'robotsim_sim/lib/robotsim_sim/sim_node'), '--ros-args',
               '-p', 'real_time_factor:=0.0', '-p', f'duration:={SIM_SECONDS}', '-p', f'cameras:={str(cameras).lower()}']
    if fleet:
        command += ['-p', f'fleet:={fleet}']
    output = subprocess.run(command, capture_output=True, text=True, timeout=600, env=env).stderr
    match = re.search(r'simulated ([0-9.]+) s in [0-9.]+ s wall: real-time factor ([0-9.]+); ([0-9.]+) s CPU', output)
    if not match:
        raise RuntimeError(f'sim_node printed no report:\n{output}')
    NODE_CPU.setdefault((cameras, fleet), []).append(float(match.group(3)) / float(match.group(1)))
    return float(match.group(2))


def firmware_costs(seconds: float = 5.0) -> dict[str, tuple[float, float]]:
    """Per base control: (RTF, wall us per 1 kHz firmware loop beyond the built-in controller's run) of the core
    (cameras off) driving a 0.3 m/s, 0.5 rad/s arc; the firmware gets the bridge's frames in process
    (robotsim_sim.odometry_trials)."""
    from robotsim_core.odometry_calibration import Manoeuvre
    from robotsim_sim.odometry_trials import OdometryTrials
    model = load_robot('rover')
    walls = {}
    for label, firmware, build in (('built-in controller', False, 'host'), ('host build', True, 'host'),
                                   ('MCU image under QEMU', True, 'qemu')):
        trials = OdometryTrials(model, model.drive.wheel_separation_multiplier, firmware=firmware, firmware_build=build)
        try:
            start = time.perf_counter()
            for _ in trials.readings(Manoeuvre(0.3, 0.5, duration=seconds, settle=0.0)):
                pass
            walls[label] = time.perf_counter() - start
        finally:
            trials.sim.close()
    loops = seconds * 1000
    return {label: (seconds / wall, (wall - walls['built-in controller']) / loops * 1e6) for label, wall in walls.items()}


def lidar_us_per_ray(channels: int, samples: int, vertical_fov: float, world: str = 'room') -> float:
    sim = simulation(False, world=world)
    spec = LidarSpec(type='lidar', samples=samples, channels=channels, vertical_fov=vertical_fov, noise_stddev=0.01)
    lidar = Lidar(sim.model, 'laser', spec, own_group=2)
    rng = np.random.default_rng(0)
    lidar.measure(sim.data, rng, 0)
    repeats = max(20, 200_000 // lidar.count)
    start = time.perf_counter()
    for _ in range(repeats):
        lidar.measure(sim.data, rng, 0)
    return (time.perf_counter() - start) / repeats / lidar.count * 1e6


def camera_ms_per_frame(width: int, height: int, world: str = 'room') -> tuple[float, str]:
    robot = load_robot('rover')
    for sensor in robot.sensors:
        if sensor.type == 'camera':
            sensor.spec.width, sensor.spec.height, sensor.spec.images = width, height, ['rgb', 'depth']
    sim = simulation(True, robot, world=world)
    camera_item = next(item for item in sim.robots[0].schedule if item.channel == 'camera')
    for _ in range(5):
        camera_item.measure(sim.data, camera_item.rng, 0)
    repeats = 40
    start = time.perf_counter()
    for _ in range(repeats):
        sim.step()  # the scene changes between frames, as in a run
        camera_item.measure(sim.data, camera_item.rng, 0)
    elapsed = (time.perf_counter() - start) / repeats * 1e3
    return elapsed, gl_renderer(sim)


def publish_overhead() -> dict[str, float]:
    """Microseconds per message to convert a reading and publish it (no subscriber attached)."""
    import rclpy
    from rosgraph_msgs.msg import Clock

    from robotsim_sensors.ros import messages as convert
    from robotsim_core.ros.common import JointStateEncoder, message_class, stamp_msg
    from robotsim_core.ros.odometry import OdometryEncoder
    from robotsim_core.ros.wire import FixedLayout

    os.environ['ROS_DOMAIN_ID'] = str(200 + os.getpid() % 30)
    rclpy.init()
    node = rclpy.create_node('bench_publish')
    sim = simulation(True)
    readings = {}
    for _ in range(200):
        for event in sim.step():
            readings[event.channel] = event.reading
    cloud_lidar = Lidar(sim.model, 'laser', LidarSpec(type='lidar', samples=1024, channels=16, vertical_fov=0.5), 2)
    readings['cloud'] = cloud_lidar.measure(sim.data, np.random.default_rng(0), 0)
    stamp = stamp_msg(sim.time_ns)
    camera_spec = next(s.spec for s in sim.robots[0].model.sensors if s.type == 'camera')
    imu = convert.ImuEncoder('imu_link')
    clock = FixedLayout(Clock(), ['clock'])
    joints = JointStateEncoder(readings['joint_states'].names)
    odometry = OdometryEncoder('odom', 'base_footprint')
    cases = {
        'LaserScan (360 beams)': ('sensor_msgs/msg/LaserScan', lambda: convert.laser_scan(readings['laser'], 'laser', stamp)),
        'PointCloud2 (16x1024)': ('sensor_msgs/msg/PointCloud2', lambda: convert.point_cloud(readings['cloud'], 'laser', stamp)),
        'Image rgb8 320x240': ('sensor_msgs/msg/Image', lambda: convert.camera_images(readings['camera'], 'f', stamp)['rgb']),
        'Image 32FC1 depth 320x240': ('sensor_msgs/msg/Image',
                                      lambda: convert.camera_images(readings['camera'], 'f', stamp)['depth']),
        'CameraInfo': ('sensor_msgs/msg/CameraInfo', lambda: convert.camera_info(camera_spec, 'f')),
        'Imu': ('sensor_msgs/msg/Imu', lambda: imu.encode(readings['imu'], stamp)),
        'JointState (10 joints)': ('sensor_msgs/msg/JointState', lambda: joints.encode(
            readings['joint_states'].positions, readings['joint_states'].velocities, readings['joint_states'].efforts,
            sim.time_ns)),
        'Odometry': ('nav_msgs/msg/Odometry', lambda: odometry.encode(1.0, 2.0, 0.0, 0.3, 0.1, sim.time_ns, 1.0, 0.5)[0]),
        'TFMessage (1 transform)': ('tf2_msgs/msg/TFMessage', lambda: odometry.tf.encode(
            stamp.sec, stamp.nanosec, 1.0, 2.0, 0.0, 1.0)),
        'Clock': ('rosgraph_msgs/msg/Clock', lambda: clock.encode(stamp.sec, stamp.nanosec)),
    }
    results = {}
    for label, (kind, make) in cases.items():
        publisher = node.create_publisher(message_class(kind), f'bench/topic_{len(results)}', 10)
        repeats = 200 if 'Image' in label or 'Cloud' in label else 2000
        for _ in range(20):
            publisher.publish(make())
        start = time.perf_counter()
        for _ in range(repeats):
            publisher.publish(make())
        results[label] = (time.perf_counter() - start) / repeats * 1e6
    node.destroy_node()
    rclpy.shutdown()
    return results


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument('--write-readme', action='store_true', help='replace the bench block in README.md')
    parser.add_argument('--repeats', type=int, default=3, help='interleaved repetitions of the RTF measures (1..20)')
    args = parser.parse_args()
    if not 1 <= args.repeats <= 20:
        parser.error(f'--repeats: expected 1..20, got {args.repeats}')
    rows = []

    def row(what: str, value: str, target: str = '') -> None:
        rows.append(f'| {what} | {value} | {target} |')
        print(rows[-1], flush=True)

    print(f'machine: {machine()}', flush=True)
    # Every RTF measure, repeated and interleaved (a shared machine's slow phases hit all of them alike).
    measures = {
        'raw': raw_mujoco_rtf,
        'bare': lambda: core_rtf(False, robot=rover_with_sensors()),
        'lidar': lambda: core_rtf(False, robot=rover_with_sensors('lidar')),
        'imu': lambda: core_rtf(False, robot=rover_with_sensors('imu')),
        'camera': lambda: core_rtf(True, camera_threads=False, robot=rover_with_sensors('camera')),
        'bare_yard': lambda: core_rtf(False, robot=rover_with_sensors(), world='yard'),
        'core': lambda: core_rtf(True),
        'core_inline': lambda: core_rtf(True, camera_threads=False),
        'core_off': lambda: core_rtf(False),
        'node': lambda: node_rtf(True),
        'node_off': lambda: node_rtf(False),
        'two': lambda: node_rtf(True, 'two_rovers'),
    }
    values: dict[str, list[float]] = {key: [] for key in measures}
    for repeat in range(args.repeats):
        for key, measure in measures.items():
            values[key].append(measure())
            print(f'  repetition {repeat + 1}/{args.repeats} {key}: {values[key][-1]:.2f}', flush=True)
    median = {key: statistics.median(series) for key, series in values.items()}
    worst = max((max(series) - min(series)) / statistics.median(series) for series in values.values())
    row('RTF, raw `mj_step` on the same compiled model, cameras off (MuJoCo\'s own limit)', spread(values['raw']))
    row('RTF, simulation core, no sensors (joint states, odometry, TF)', spread(values['bare']))
    row('ratio: core with no sensors / raw `mj_step`', f'{median["bare"] / median["raw"]:.2f}', '>= 0.6')
    for kind in ('lidar', 'imu', 'camera'):
        cost = 1e3 * (1 / median[kind] - 1 / median['bare'])
        row(f'cost of the {kind} (default rate, in the physics thread), wall ms per simulated second', f'{cost:.1f}')
    # The mesh and terrain world `yard` (an arch, two rocks of 1,280 triangles, 8,000 triangles of terrain) against
    # the primitive `room`: the lidar's and the camera's cost per call, and the physics without sensors.
    room_ray, yard_ray = lidar_us_per_ray(16, 1024, 0.5), lidar_us_per_ray(16, 1024, 0.5, 'yard')
    row('lidar 1024 beams x 16 channels, `yard` / `room`', f'{yard_ray:.2f} / {room_ray:.2f} us/ray = '
        f'{yard_ray / room_ray:.2f}')
    room_frame, yard_frame = camera_ms_per_frame(320, 240)[0], camera_ms_per_frame(320, 240, 'yard')[0]
    row('camera RGB-D 320x240, `yard` / `room`', f'{yard_frame:.1f} / {room_frame:.1f} ms/frame = '
        f'{yard_frame / room_frame:.2f}')
    row('RTF, simulation core, no sensors, `yard` / `room` (contact with meshes and terrain)',
        f'{median["bare_yard"] / median["bare"]:.2f}')
    row('RTF, default sensors, simulation core (no ROS), cameras in their own threads (as in sim_node)', spread(values['core']))
    row('RTF, default sensors, simulation core, cameras in the physics thread (dataset fast path)',
        spread(values['core_inline']))
    row('RTF, cameras off, simulation core (no ROS)', spread(values['core_off']))
    row('RTF, default sensors, sim_node publishing everything', spread(values['node']), '>= 3')
    row('RTF, cameras off, sim_node publishing everything', spread(values['node_off']), '>= 30')
    row('RTF, two rovers (fleet two_rovers), default sensors, sim_node', spread(values['two']))
    # The targets are ratios of medians of this one run (a shared machine drifts between runs).
    row('ratio: sim_node / core, cameras off', f'{median["node_off"] / median["core_off"]:.2f}', '>= 0.9')
    row('ratio: sim_node / core, default sensors', f'{median["node"] / median["core"]:.2f}', 'no regression')
    row('ratio: two rovers / one rover, sim_node, default sensors (RTF)', f'{median["two"] / median["node"]:.2f}')
    one, two = (statistics.median(NODE_CPU[(True, fleet)]) for fleet in ('', 'two_rovers'))
    row('CPU seconds per simulated second (all threads), sim_node, default sensors: one rover, two rovers',
        f'{one:.3f}, {two:.3f}')
    row('ratio: two rovers / one rover, sim_node CPU per simulated second', f'{two / one:.2f}', '<= 2.1')
    row('largest run-to-run spread of an RTF above, (max - min) / median', f'{100 * worst:.0f} %')
    firmware = firmware_costs()
    for label in ('built-in controller', 'host build', 'MCU image under QEMU'):
        rtf, per_loop = firmware[label]
        row(f'RTF, cameras off, simulation core, base driven by the {label}' +
            ('' if label.startswith('built') else ' (its 1 kHz loop costs ' + (f'{per_loop:.0f} us' if per_loop >= 1 else
                                                                            'under 1 us') + ' of wall time)'),
            f'{rtf:.1f}' if rtf >= 1 else f'{rtf:.2f}')
    row('ratio: MCU image under QEMU / host build, core RTF',
        f'{firmware["MCU image under QEMU"][0] / firmware["host build"][0]:.3f}')
    row('lidar, 360 beams x 1 channel', f'{lidar_us_per_ray(1, 360, 0.0):.2f} us/ray', '<= 0.5 us/ray')
    row('lidar, 1024 beams x 16 channels', f'{lidar_us_per_ray(16, 1024, 0.5):.2f} us/ray', '<= 0.5 us/ray')
    small, renderer = camera_ms_per_frame(320, 240)
    row('camera RGB-D 320x240 (one render pass)', f'{small:.1f} ms/frame')
    large, _ = camera_ms_per_frame(640, 480)
    row('camera RGB-D 640x480 (one render pass)', f'{large:.1f} ms/frame')
    for label, micros in publish_overhead().items():
        row(f'build + publish {label}', f'{micros:.0f} us/msg')

    header = ['| measure | this machine | target |', '|---|---|---|']
    block = '\n'.join([
        f'Measured by `make bench` on {time.strftime("%Y-%m-%d")}: {machine()}; GL renderer: {renderer}.',
        'Default sensor set: rover in the room world, 500 Hz physics, 360-beam lidar at 10 Hz, 320x240 RGB-D at 15 Hz,',
        'IMU at 100 Hz, joint states/odometry/TF at 50 Hz. RTF is simulated seconds per wall second over '
        f'{SIM_SECONDS:.0f} s of sim time, as fast as possible, the core driving a 0.2 m/s, 0.3 rad/s arc commanded at 20 Hz; '
        f'"sim_node" runs the ROS node with no subscriber. RTFs: median (min-max) of {args.repeats} interleaved repetitions.',
        '', *header, *rows])
    if args.write_readme:
        sys.path.insert(0, str(Path(__file__).resolve().parent))
        from readme_block import ReadmeBlockError, replace_block
        try:
            print(f'{replace_block(WORKSPACE / "README.md", "bench", block)} updated')
        except ReadmeBlockError as error:
            print(f'bench_sim: --write-readme: {error}', file=sys.stderr)
            return 1
    return 0


if __name__ == '__main__':
    sys.exit(main())
