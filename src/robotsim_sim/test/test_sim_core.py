"""The ROS-free simulation core: drive kinematics, physics behaviour, sensors, seeds, worlds."""

import math

import numpy as np
import pytest
import yaml

from robotsim_core.description import load_robot
from robotsim_sensors.lidar import LidarSpec
from robotsim_core.drive import inverse_kinematics
from robotsim_core.errors import DescriptionError
from robotsim_sensors.lidar import Lidar
from robotsim_sim.scene import RobotPlacement, load_world, resolve_world_path
from robotsim_sim.simulation import SimOptions, Simulation
from rostest_helpers import WORKSPACE

WORLDS = WORKSPACE / 'tests' / 'data' / 'worlds'


def make_sim(world='room', robot='rover', **options) -> Simulation:
    world_spec = load_world(resolve_world_path(world) if '/' not in str(world) else str(world))
    return Simulation(world_spec, [RobotPlacement(load_robot(robot))], SimOptions(**options))


def run(sim: Simulation, seconds: float, linear=0.0, angular=0.0, collect=None):
    events = []
    for _ in range(round(seconds / sim.model.opt.timestep)):
        sim.command_base(0, linear, angular)
        for event in sim.step():
            if collect is None or event.channel == collect:
                events.append(event)
    return events


def test_ackermann_inner_wheel_turns_further_than_outer():
    drive = load_robot('racer').drive
    targets = inverse_kinematics(drive, 1.0, 1.0 * math.tan(0.3) / drive.wheelbase)
    left = next(w for w in drive.wheels if w.steer_joint and w.side == 'left')
    right = next(w for w in drive.wheels if w.steer_joint and w.side == 'right')
    inner, outer = targets.steer_angles[left.steer_joint], targets.steer_angles[right.steer_joint]
    radius = drive.wheelbase / math.tan(0.3)  # turning left about the rear axle centre
    assert inner == pytest.approx(math.atan(drive.wheelbase / (radius - drive.track / 2)))
    assert outer == pytest.approx(math.atan(drive.wheelbase / (radius + drive.track / 2)))
    assert inner > 0.3 > outer > 0
    # Rear wheels: the outer (right) one runs faster.
    rear = {w.side: targets.wheel_speeds[w.joint] for w in drive.driven_wheels}
    assert rear['right'] > rear['left'] > 0


def test_ackermann_robot_steers_in_simulation():
    sim = make_sim('room', 'racer', cameras=False)
    run(sim, 2.0, linear=0.5, angular=0.6)
    robot = sim.robots[0]
    steer = {w.side: sim.data.qpos[sim.model.jnt_qposadr[sim.model.joint(w.steer_joint).id]]
             for w in robot.model.drive.wheels if w.steer_joint}
    assert steer['left'] > steer['right'] > 0.05, steer
    _, yaw = sim.ground_truth_pose()
    assert yaw > 0.3, 'turns left (counter-clockwise)'


def test_commanded_and_actual_velocity_differ_while_accelerating():
    sim = make_sim(cameras=False)
    run(sim, 0.1, linear=0.5)
    actual = sim.data.qvel[sim.robots[0].root_dof]
    assert 0.0 < actual < 0.2  # 1 m/s^2 limit and inertia: far from 0.5 after 0.1 s


def test_low_friction_floor_loses_distance(tmp_path):
    distances = {}
    for friction in (1.0, 0.01):
        world = tmp_path / f'floor_{friction}.yaml'
        world.write_text(yaml.safe_dump({'name': 'slippery', 'floor': {'friction': friction}}))
        sim = make_sim(world, cameras=False)
        model = sim.model
        for geom in range(model.ngeom):  # tyres as slippery as the floor (MuJoCo takes the larger)
            if model.geom_bodyid[geom] and 'wheel' in model.body(model.geom_bodyid[geom]).name:
                model.geom_friction[geom, 0] = friction
        run(sim, 3.0, linear=0.5)
        distances[friction] = sim.ground_truth_pose()[0][0]
        odometry = sim.robots[0].odometry.x
    assert distances[1.0] == pytest.approx(0.5 * 3.0 - 0.5 * 0.5 * 0.5, abs=0.1)
    assert distances[0.01] < 0.6 * distances[1.0], distances
    assert odometry > distances[0.01] + 0.2, 'the wheels spun: odometry overestimates on ice'


def test_reset_replays_the_same_noise_and_state():
    sim = make_sim(cameras=False, seed=5)
    first = [e.reading.ranges.copy() for e in run(sim, 0.5, 0.2, 0.1, collect='laser')]
    pose = sim.ground_truth_pose()[0]
    sim.reset()
    assert sim.step_count == 0 and np.allclose(sim.ground_truth_pose()[0][:2], 0.0)
    again = [e.reading.ranges.copy() for e in run(sim, 0.5, 0.2, 0.1, collect='laser')]
    assert all(np.array_equal(a, b) for a, b in zip(first, again)) and len(first) == len(again) == 6
    np.testing.assert_array_equal(sim.ground_truth_pose()[0], pose)
    sim.reset(seed=6)
    other = [e.reading.ranges.copy() for e in run(sim, 0.5, 0.2, 0.1, collect='laser')]
    assert not np.array_equal(first[0], other[0])



def test_a_sensors_noise_does_not_depend_on_which_other_sensors_run():
    # The rover describes lidar, camera, IMU: with cameras off the IMU and lidar must draw the very
    # noise they draw with cameras on (streams by place in the description, not in the schedule).
    readings = {}
    for cameras in (True, False):
        events = run(make_sim(cameras=cameras, seed=9), 0.2, 0.2, 0.1)
        readings[cameras] = {channel: [e.reading for e in events if e.channel == channel] for channel in ('imu', 'laser')}
    for on, off in zip(readings[True]['imu'], readings[False]['imu'], strict=True):
        assert np.array_equal(on.angular_velocity, off.angular_velocity)
        assert np.array_equal(on.linear_acceleration, off.linear_acceleration)
    for on, off in zip(readings[True]['laser'], readings[False]['laser'], strict=True):
        assert np.array_equal(on.ranges, off.ranges)
    assert len(readings[False]['imu']) == 21 and len(readings[False]['laser']) == 3

def test_sensor_rates_follow_sim_time():
    sim = make_sim()
    counts = {}
    for event in run(sim, 2.0):
        counts[event.channel] = counts.get(event.channel, 0) + 1
    # The first capture is at the first step; then one per period of sim time.
    assert counts == {'joint_states': 101, 'base_state': 101, 'laser': 21, 'camera': 31, 'imu': 201}


def test_multichannel_lidar_points_lie_on_the_wall():
    sim = make_sim(WORLDS / 'wall_ahead.yaml', cameras=False)
    spec = LidarSpec(type='lidar', samples=1024, channels=16, vertical_fov=0.5, noise_stddev=0.0)
    lidar = Lidar(sim.model, 'laser', spec, own_group=2)
    reading = lidar.measure(sim.data, np.random.default_rng(0), 0)
    assert reading.ranges.shape == (16 * 1024,)
    laser_x = sim.data.site_xpos[sim.model.site('laser').id][0]
    points = reading.points[reading.points[:, 2] > -0.1]  # not the floor (0.13 m below the sensor)
    ahead = points[np.abs(np.arctan2(points[:, 1], points[:, 0])) < 0.5]
    np.testing.assert_allclose(ahead[:, 0], 1.95 - laser_x, atol=1e-4)  # the wall face, in the sensor frame
    assert len(ahead) > 1000


def test_segmentation_labels_entities(tmp_path):
    data = yaml.safe_load((WORKSPACE / 'config/robots/rover.yaml').read_text())
    next(s for s in data['sensors'] if s['type'] == 'camera')['images'] = ['rgb', 'depth', 'segmentation']
    robot = tmp_path / 'rover_seg.yaml'
    robot.write_text(yaml.safe_dump(data))
    sim = make_sim(WORLDS / 'box_ahead.yaml', str(robot))
    reading = next(e.reading for e in sim.step() if e.channel == 'camera')
    labels = {name: label for label, name in sim.labels.items()}
    cube = reading.segmentation == labels['cube']
    assert cube.any() and (reading.segmentation == labels['world']).any()
    # The cube's pixels are exactly those whose depth is the cube face's distance.
    assert np.all(np.abs(reading.depth[cube] - (1.4 - 0.155)) < 0.2)
    assert reading.rgb.shape == (240, 320, 3)


def test_world_config_errors(tmp_path):
    bad = tmp_path / 'bad.yaml'
    bad.write_text(yaml.safe_dump({'name': 'x', 'boxes': [{'name': 'b', 'position': [0, 0, 0], 'size': [1, 0, 1]}]}))
    with pytest.raises(DescriptionError, match=r'bad.yaml: boxes\[0\].size\[1\]: expected a number >= 0.001, got 0'):
        load_world(str(bad))
    bad.write_text(yaml.safe_dump({'name': 'x', 'include': 'missing.xml'}))
    with pytest.raises(DescriptionError, match=r'bad.yaml: include: MJCF file not found'):
        load_world(str(bad))


def test_world_mjcf_include(tmp_path):
    (tmp_path / 'extra.xml').write_text(
        '<mujoco><worldbody><geom name="barrel" type="cylinder" size="0.2 0.3" pos="1.0 -1.0 0.3"/></worldbody></mujoco>')
    world = tmp_path / 'with_include.yaml'
    world.write_text(yaml.safe_dump({'name': 'inc', 'include': 'extra.xml'}))
    sim = make_sim(world, cameras=False)
    assert sim.model.geom('barrel').size[0] == pytest.approx(0.2)


def test_things_put_inside_others_are_refused(tmp_path):
    # A spawn inside a box, two robots on one spot, a free box inside a fixed one: refused in one line
    # naming the world file, the key and both things (MuJoCo would fling them apart at the first step).
    from robotsim_core.description.world_spec import SpawnSpec
    inside = tmp_path / 'inside.yaml'
    inside.write_text(yaml.safe_dump({'name': 'inside', 'boxes': [{'name': 'crate', 'position': [0.3, 0.0, 0.2],
                                                                     'size': [0.4, 0.4, 0.4]}]}))
    with pytest.raises(DescriptionError, match=r"inside.yaml: spawn: 'rover' starts inside 'crate' \(\d+\.\d cm deep\)"):
        make_sim(inside, cameras=False)
    rover = load_robot('rover')
    with pytest.raises(DescriptionError, match=r"spawn: 'robot2' starts inside 'robot1'"):
        Simulation(load_world(resolve_world_path('room')),
                   [RobotPlacement(rover, 'robot1', SpawnSpec((0.5, 0.5, 0.0), 0.0)),
                    RobotPlacement(rover, 'robot2', SpawnSpec((0.6, 0.5, 0.0), 0.0))], SimOptions(cameras=False))
    stacked = tmp_path / 'stacked.yaml'
    stacked.write_text(yaml.safe_dump({'name': 'stacked', 'boxes': [
        {'name': 'crate', 'position': [1.6, 0.9, 0.2], 'size': [0.4, 0.4, 0.4]},
        {'name': 'toy', 'position': [1.6, 0.9, 0.1], 'size': [0.1, 0.1, 0.2], 'mass': 0.3}]}))
    with pytest.raises(DescriptionError, match=r"spawn: 'toy' starts inside 'crate'"):
        make_sim(stacked, cameras=False)
    # Off the floor (x = 100 on the room's 12 m floor): refused at the start as set_entity_pose refuses it.
    with pytest.raises(DescriptionError, match=r"spawn: 'robot1' starts at \(100, 0\.5, [0-9.]+\), outside the world: "
                                               r"expected x in \[-6, 6\], y in \[-6, 6\]"):
        Simulation(load_world(resolve_world_path('room')),
                   [RobotPlacement(rover, 'robot1', SpawnSpec((100.0, 0.5, 0.0), 0.0))], SimOptions(cameras=False))
    assert 'outside the world' in make_sim(cameras=False).set_entity_pose('rover', (100.0, 0.5, 0.0), (1, 0, 0, 0))
    # Side by side, 1 m apart: accepted.
    Simulation(load_world(resolve_world_path('room')),
               [RobotPlacement(rover, 'robot1', SpawnSpec((0.5, 0.5, 0.0), 0.0)),
                RobotPlacement(rover, 'robot2', SpawnSpec((-0.5, 0.5, 0.0), 0.0))], SimOptions(cameras=False)).close()


def test_set_entity_pose_refuses_a_spot_inside_something():
    sim = make_sim(cameras=False)
    start = sim.entity_pose('rover')[0]
    problem = sim.set_entity_pose('rover', (1.6, 0.9, 0.05), (1.0, 0.0, 0.0, 0.0))  # in the crate
    assert problem and "'rover' at (1.6, 0.9, 0.05) would be" in problem and "inside 'crate'" in problem, problem
    np.testing.assert_array_equal(sim.entity_pose('rover')[0], start)  # nothing moved
    problem = sim.set_entity_pose('toy_box', (1.6, 0.9, 0.1), (1.0, 0.0, 0.0, 0.0))
    assert problem and "'toy_box'" in problem and "inside 'crate'" in problem, problem
    assert sim.set_entity_pose('toy_box', (0.5, 0.8, 0.1), (1.0, 0.0, 0.0, 0.0)) is None  # a free spot
    run(sim, 0.2)
    assert np.linalg.norm(sim.entity_pose('toy_box')[0][:2] - (0.5, 0.8)) < 0.01, 'put on a free spot, it stays'
