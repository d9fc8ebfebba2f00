"""Sensor fidelity in space and time: depth sampled where CameraInfo says (issue 9, item 17), and
every reading stamped t holding the state at t (item 18)."""

import math

import mujoco
import numpy as np
import pytest
import yaml
from nav_msgs.msg import Odometry

from robotsim_core.description import load_robot
from robotsim_sensors.camera import CameraSpec
from robotsim_sensors.camera import Camera, CameraRenderer, intrinsics
from robotsim_sim.scene import RobotPlacement, load_world
from robotsim_sim.simulation import SimOptions, Simulation
from rostest_helpers import RELIABLE, WORKSPACE, NodeProcess, Observer, stamp_seconds
from robotsim_msgs.srv import Step

WIDTH, HEIGHT, FOVY = 320, 240, 0.9
SPEC = CameraSpec(type='camera', width=WIDTH, height=HEIGHT, vertical_fov=FOVY, near=0.05, far=40.0,
                  images=['rgb', 'depth', 'segmentation'])


def camera_axes(pitch: float, roll: float) -> tuple[np.ndarray, np.ndarray]:
    """MuJoCo xyaxes (image right, image up) of a camera looking along +x, pitched down by
    ``pitch`` and rolled by ``roll`` about its view direction."""
    forward = np.array([math.cos(pitch), 0.0, -math.sin(pitch)])
    right = np.array([0.0, -1.0, 0.0])
    up = np.cross(-forward, right)
    c, s = math.cos(roll), math.sin(roll)
    return c * right + s * up, -s * right + c * up


def render_scene(cameras: dict[str, tuple[float, float]], extra: str = ''):
    """A floor, optionally more geoms, and cameras 1 m above the origin; returns (model, data, renderer)."""
    views = ''.join(
        f'<camera name="{name}" pos="0 0 1" fovy="{math.degrees(FOVY)}" '
        f'xyaxes="{" ".join(f"{v:.17g}" for v in np.concatenate(camera_axes(*angles)))}"/>'
        for name, angles in cameras.items())
    # Default offsamples (4) on purpose: the renderer itself must not depend on the model's setting.
    xml = (f'<mujoco><visual><global offwidth="{WIDTH}" offheight="{HEIGHT}"/><map znear="0.05" zfar="50"/></visual>'
           '<statistic extent="1" center="0 0 0"/><worldbody><geom name="floor" type="plane" size="50 50 0.1"/>'
           f'{extra}{views}</worldbody></mujoco>')
    model = mujoco.MjModel.from_xml_string(xml)
    data = mujoco.MjData(model)
    mujoco.mj_forward(model, data)
    return model, data, CameraRenderer(model)


def floor_depth(data, camera: int, u: np.ndarray, v: np.ndarray) -> np.ndarray:
    """Depth along the optical axis of the floor (z = 0) seen through ROS pixel (u, v) per K."""
    fx, fy, cx, cy = intrinsics(SPEC)
    rotation = data.cam_xmat[camera].reshape(3, 3)
    # Optical frame (x right, y down, z forward) -> MuJoCo camera frame (x right, y up, z back).
    rays = np.stack([(u - cx) / fx, -(v - cy) / fy, -np.ones_like(u)], -1) @ rotation.T
    return -data.cam_xpos[camera][2] / rays[..., 2]


def test_depth_is_sampled_at_the_pixel_centres_of_camera_info():
    # A camera pitched towards the floor sees depth change along v, the same camera rolled by
    # 90 degrees along u: together they measure any sub-pixel shift in both directions.
    model, data, renderer = render_scene({'pitched': (0.6, 0.0), 'rolled': (0.6, math.pi / 2)})
    v, u = np.mgrid[0:HEIGHT, 0:WIDTH].astype(float)
    residuals, jacobians = [], []
    for name in ('pitched', 'rolled'):
        camera = model.camera(name).id
        depth = Camera(renderer, name, SPEC, np.zeros(model.ngeom, dtype=np.int32)).measure(
            data, np.random.default_rng(0), 0).depth.astype(float)
        expected = floor_depth(data, camera, u, v)
        seen = np.isfinite(depth) & (expected < 20.0)
        assert seen.sum() > 0.4 * depth.size
        step = 1e-3
        du = (floor_depth(data, camera, u + step, v) - expected) / step
        dv = (floor_depth(data, camera, u, v + step) - expected) / step
        residuals.append((depth - expected)[seen])
        jacobians.append(np.stack([du[seen], dv[seen]], -1))
    # Least squares: depth(u, v) = expected(u + shift_u, v + shift_v). Before the fix: (-0.125, +0.375).
    shift = np.linalg.lstsq(np.concatenate(jacobians), np.concatenate(residuals), rcond=None)[0]
    assert np.all(np.abs(shift) < 0.05), f'depth is sampled {shift} px away from the pixel centres of K'
    assert np.abs(np.concatenate(residuals)).max() < 0.005  # m, over the whole floor out to 20 m


def test_depth_and_segmentation_edges_agree():
    # Looking straight down at a box turned 17 degrees about the vertical: its slanted edges cross
    # pixel centres at every sub-pixel phase, so any shift between the images shows as disagreement.
    box = ('<geom name="box" type="box" size="0.15 0.15 0.15" pos="0 0 0.3" '
           'euler="0 0 17" rgba="0.8 0.2 0.2 1"/>')
    model, data, renderer = render_scene({'down': (math.pi / 2, 0.0)}, box)
    reading = Camera(renderer, 'down', SPEC, np.arange(model.ngeom, dtype=np.int32)).measure(
        data, np.random.default_rng(0), 0)
    on_box = reading.segmentation == model.geom('box').id
    assert 1000 < on_box.sum() < 0.5 * on_box.size
    # Box top at 0.45 m: 0.55 m from the camera; the floor 1 m away.
    near = reading.depth < 0.775
    disagreeing = int((on_box != near).sum())
    assert disagreeing == 0, f'{disagreeing} pixels: depth says box where segmentation does not, or back'



def test_cameras_do_not_see_sites():
    # A site marks a frame; it is no surface. A big red site between the camera and the floor must
    # leave every image as the floor alone makes it (MuJoCo draws sites of groups 0-2 by default).
    site = '<site name="marker" type="sphere" size="0.2" pos="0 0 0.5" rgba="1 0 0 1"/>'
    images = []
    for extra in (site, ''):
        model, data, renderer = render_scene({'down': (math.pi / 2, 0.0)}, extra)
        images.append(Camera(renderer, 'down', SPEC, np.arange(model.ngeom, dtype=np.int32)).measure(
            data, np.random.default_rng(0), 0))
        renderer.close()
    with_site, floor_only = images
    assert np.array_equal(with_site.rgb, floor_only.rgb)
    assert np.array_equal(with_site.depth, floor_only.depth)
    assert np.array_equal(with_site.segmentation, floor_only.segmentation)
    assert np.all(floor_only.segmentation == 0) and np.all(np.abs(floor_only.depth - 1.0) < 0.01)

@pytest.fixture(scope='module')
def quiet_rover(tmp_path_factory) -> str:
    """The shipped rover without sensor noise or biases, with segmentation: exact comparisons."""
    data = yaml.safe_load((WORKSPACE / 'config/robots/rover.yaml').read_text())
    for sensor in data['sensors']:
        if sensor['type'] == 'lidar':
            sensor['noise_stddev'] = 0.0
        elif sensor['type'] == 'camera':
            sensor['images'] = ['rgb', 'depth', 'segmentation']
        elif sensor['type'] == 'imu':
            sensor.update({key: 0.0 for key in ('gyro_noise_stddev', 'gyro_bias_stddev', 'accel_noise_stddev',
                                                'accel_bias_stddev', 'orientation_noise_stddev')})
    path = tmp_path_factory.mktemp('robots') / 'rover_quiet.yaml'
    path.write_text(yaml.safe_dump(data))
    return str(path)


def make_sim(tmp_path, robot: str, world: dict, **options) -> Simulation:
    path = tmp_path / 'world.yaml'
    path.write_text(yaml.safe_dump(world))
    return Simulation(load_world(str(path)), [RobotPlacement(load_robot(robot))], SimOptions(**options))


def test_floor_points_from_depth_and_camera_info_lie_on_the_floor(tmp_path, quiet_rover):
    sim = make_sim(tmp_path, quiet_rover, {'name': 'floor_only', 'floor': {'size': [40, 40]}})
    reading = next(e.reading for e in sim.step() if e.channel == 'camera')
    spec = next(s.spec for s in sim.robots[0].model.sensors if s.type == 'camera')
    fx, fy, cx, cy = intrinsics(spec)
    floor = (reading.segmentation == 0) & np.isfinite(reading.depth)
    assert floor.sum() > 0.3 * floor.size
    v, u = np.nonzero(floor)
    z = reading.depth[floor].astype(float)
    optical = np.stack([(u - cx) / fx * z, (v - cy) / fy * z, z], -1)   # points in the optical frame
    camera = sim.model.camera('camera').id
    rotation = sim.data.cam_xmat[camera].reshape(3, 3)
    mujoco_frame = optical * np.array([1.0, -1.0, -1.0])                   # optical -> MuJoCo camera axes
    world = mujoco_frame @ rotation.T + sim.data.cam_xpos[camera]
    rms = float(np.sqrt(np.mean(world[:, 2] ** 2)))
    assert rms < 0.001, f'floor points from depth + K: rms height {rms * 1000:.2f} mm'
    assert world[:, 0].max() > 3.0  # the comparison reaches far across the floor, where a shift hurts most


def test_physics_trajectory_is_unchanged_by_bringing_readings_to_the_stamp(tmp_path, quiet_rover):
    """The mj_forward that aligns readings with their stamp must not change the dynamics."""
    world = {'name': 'floor_only', 'floor': {'size': [40, 40]}}
    with_readings = make_sim(tmp_path, quiet_rover, world, cameras=False)
    forwarded = make_sim(tmp_path, quiet_rover, world, cameras=False)
    for _ in range(1000):
        for sim in (with_readings, forwarded):
            sim.command_base(0, 0.4, 0.6)
            sim.step()
        mujoco.mj_forward(forwarded.model, forwarded.data)  # after every step, not just the ones with readings
    np.testing.assert_array_equal(with_readings.data.qpos, forwarded.data.qpos)
    np.testing.assert_array_equal(with_readings.data.qvel, forwarded.data.qvel)


def test_readings_hold_the_state_at_their_stamp(tmp_path, quiet_rover):
    """Drive and turn in the room (a box falls into view) and compare every reading with one taken
    from an independent copy of the recorded physics state at the reading's stamp."""
    world = yaml.safe_load((WORKSPACE / 'config/worlds/room.yaml').read_text())
    world['boxes'].append({'name': 'dropped', 'position': [1.0, 0.0, 2.0], 'size': [0.1, 0.1, 0.1], 'mass': 0.2})
    sim = make_sim(tmp_path, quiet_rover, world)
    robot = sim.robots[0]
    sensors = {s.name: s for s in robot.model.sensors}
    measures = {item.channel: item.measure for item in robot.schedule}
    state_kind = mujoco.mjtState.mjSTATE_INTEGRATION
    state = np.empty(mujoco.mj_stateSize(sim.model, state_kind))
    reference = mujoco.MjData(sim.model)

    def reference_at(recorded: np.ndarray):
        mujoco.mj_setState(sim.model, reference, recorded, state_kind)
        mujoco.mj_forward(sim.model, reference)
        return reference

    previous, checked = None, {}
    for _ in range(300):  # 0.6 s: every sensor several times
        sim.command_base(0, 0.5, 0.8)
        events = sim.step()
        mujoco.mj_getState(sim.model, sim.data, state, state_kind)
        recorded = state.copy()
        for event in events:
            assert event.reading.stamp == sim.time_ns
            checked[event.channel] = checked.get(event.channel, 0) + 1
            for label, snapshot, must_match in (('at the stamp', recorded, True), ('a step before', previous, False)):
                if snapshot is None:
                    continue
                ref = reference_at(snapshot)
                if event.channel == 'base_state':
                    truth = event.reading
                    position = ref.qpos[robot.root_qpos:robot.root_qpos + 3]
                    velocity = ref.xmat[robot.root_body].reshape(3, 3).T @ ref.qvel[robot.root_dof:robot.root_dof + 3]
                    same = (np.allclose(truth.true_position, position, rtol=0, atol=1e-12)
                            and np.allclose(truth.true_quaternion, ref.xquat[robot.root_body], rtol=0, atol=1e-12)
                            and np.allclose(truth.true_linear_velocity, velocity, rtol=0, atol=1e-12))
                elif event.channel == 'joint_states':
                    same = np.array_equal(event.reading.positions, ref.qpos[robot.qpos_index])
                elif sensors[event.channel].type == 'lidar':
                    same = np.array_equal(event.reading.ranges, measures[event.channel](ref, None, 0).ranges)
                elif sensors[event.channel].type == 'imu':
                    expected = measures[event.channel](ref, np.random.default_rng(0), 0)
                    same = all(np.allclose(getattr(event.reading, key), getattr(expected, key), rtol=0, atol=1e-9)
                               for key in ('orientation', 'angular_velocity', 'linear_acceleration'))
                else:  # camera
                    expected = measures[event.channel](ref, None, 0)
                    same = (np.array_equal(event.reading.depth, expected.depth)
                            and np.array_equal(event.reading.segmentation, expected.segmentation))
                assert same == must_match, f'{event.channel} at {sim.time:.3f} s: reading vs state {label}'
        previous = recorded
    assert checked == {'joint_states': 31, 'base_state': 31, 'laser': 7, 'camera': 10, 'imu': 61}, checked
    # The box fell freely in front of the camera: semi-implicit Euler from rest, k steps of dt.
    box = sim.model.jnt_qposadr[sim.model.joint('dropped_freejoint').id]
    k, dt = sim.step_count, sim.model.opt.timestep
    assert sim.data.qpos[box + 2] == pytest.approx(2.0 - 9.81 * dt * dt * k * (k + 1) / 2, abs=1e-9)


def test_ground_truth_on_the_wire_holds_the_state_at_its_stamp(tmp_path):
    """The rover dropped from 1 m: /sim/ground_truth at stamp t equals free fall at t (position
    and velocity from the same step; before the fix the position lagged one step)."""
    world = tmp_path / 'drop.yaml'
    world.write_text(yaml.safe_dump({'name': 'drop', 'spawn': {'xyz': [0.0, 0.0, 1.0]}}))
    obs = Observer('ground_truth_timing')
    obs.watch('/sim/ground_truth', Odometry, RELIABLE)
    try:
        with NodeProcess('robotsim_sim', 'sim_node', {'world': str(world), 'cameras': False, 'start_paused': True}):
            assert obs.spin_until(lambda: obs.node.count_publishers('/sim/ground_truth') > 0, 30)
            obs.spin_for(0.5)
            assert obs.call(Step, '/sim/step', Step.Request(steps=200)).success  # 0.4 s: still in the air
            assert obs.spin_until(lambda: len(obs.messages['/sim/ground_truth']) >= 21, 20)
    finally:
        obs.close()
    dt, gravity = 0.002, 9.81
    z0 = 1.0 + 0.001  # spawn height + the 1 mm the scene adds (base_footprint is the free body's origin)
    for message in obs.messages['/sim/ground_truth']:
        k = round(stamp_seconds(message.header.stamp) / dt)
        fallen = gravity * dt * dt * k * (k + 1) / 2          # semi-implicit Euler from rest
        one_step = gravity * k * dt * dt                        # how far it falls in the step to t
        z = message.pose.pose.position.z
        assert z == pytest.approx(z0 - fallen, abs=0.05 * one_step + 1e-9), f'position at step {k}'
        assert message.twist.twist.linear.z == pytest.approx(-gravity * k * dt, abs=1e-6), f'velocity at step {k}'
