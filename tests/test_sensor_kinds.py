"""Sensor kinds as plugins (robotsim_core.sensor_kinds) and the two kinds added as plugins: ``range``
(sensor_msgs/Range from a cone of rays, REP 117) and ``navsat`` (sensor_msgs/NavSatFix from a datum).

The models run on real MuJoCo scenes; the live test runs the simulator with the scout robot
(config/robots/scout.yaml) and `robotsim contract check` against it."""

from __future__ import annotations

import dataclasses
import math
import subprocess

import mujoco
import numpy as np
import pytest
from sensor_msgs.msg import NavSatFix, NavSatStatus, Range

from robotsim_core.config_schema import field_docs
from robotsim_core.contract import robot_contract
from robotsim_core.description import load_robot
from robotsim_core.errors import DescriptionError
from robotsim_core.sensor_kinds import sensor_kinds
from robotsim_sensors.navsat import NavSat, NavSatSpec, ecef_to_geodetic, enu_to_geodetic, geodetic_to_ecef
from robotsim_sensors.range_sensor import RangeSensor, RangeSpec
from robotsim_sensors.ros.converters import CONVERTERS
from rostest_helpers import SENSOR, WORKSPACE, Launch, Observer

WALL_AHEAD = str(WORKSPACE / 'tests' / 'data' / 'worlds' / 'wall_ahead.yaml')
OWN_GROUP = 2


def test_every_kind_has_a_converter_and_documents_every_key():
    kinds = sensor_kinds()
    assert {'lidar', 'camera', 'imu', 'range', 'navsat'} <= set(kinds)
    assert set(kinds) == set(CONVERTERS), 'a kind needs a row in both tables'
    for name, kind in kinds.items():
        fields = {f.name for f in dataclasses.fields(kind.spec)}
        assert {'type', 'name', 'parent', 'pose', 'rate'} <= fields, name
        assert set(field_docs(kind.spec)) == fields, f'{name}: a docstring under every field'


def scene(boxes: str) -> mujoco.MjModel:
    """A sensor site at (0, 0, 0.1) looking along +x, the given boxes, and a box of the sensor's own robot."""
    return mujoco.MjModel.from_xml_string(f'''
<mujoco><worldbody>
  <site name="sensor" pos="0 0 0.1"/>
  <geom name="own_body" type="box" pos="0.05 0 0.1" size="0.01 0.2 0.2" group="{OWN_GROUP}"/>
  {boxes}
</worldbody></mujoco>''')


def measure_range(model: mujoco.MjModel, spec: RangeSpec, seed: int = 0) -> float:
    data = mujoco.MjData(model)
    mujoco.mj_forward(model, data)
    return RangeSensor(model, 'sensor', spec, OWN_GROUP).measure(data, np.random.default_rng(seed), 0).range


def test_range_reads_the_nearest_thing_in_its_cone():
    spec = RangeSpec(type='range', field_of_view=0.26, noise_stddev=0.0, max_range=4.0)
    # A wall 1.5 m ahead: its face at x = 1.5 (the box of half-size 0.1 centred at 1.6).
    assert measure_range(scene('<geom type="box" pos="1.6 0 0.1" size="0.1 2 2"/>'), spec) == pytest.approx(1.5, abs=1e-9)
    # Off the axis but inside the cone (half angle 0.13 rad reaches y = 0.065 at x = 0.5): seen, along a tilted ray.
    inside = measure_range(scene('<geom type="box" pos="0.55 0.5 0.1" size="0.05 0.45 0.5"/>'), spec)
    assert 0.5 < inside < 0.5 / math.cos(0.13) + 1e-9
    # Outside the cone (from y = 0.1): nothing within max_range -> +Inf (REP 117).
    assert measure_range(scene('<geom type="box" pos="0.55 0.55 0.1" size="0.05 0.45 0.5"/>'), spec) == math.inf
    # Nearer than min_range -> -Inf; beyond max_range -> +Inf.
    assert measure_range(scene('<geom type="box" pos="0.11 0 0.1" size="0.1 2 2"/>'),
                         RangeSpec(type='range', min_range=0.02, noise_stddev=0.0)) == -math.inf
    assert measure_range(scene('<geom type="box" pos="5.1 0 0.1" size="0.1 2 2"/>'), spec) == math.inf
    # The own robot's geometry (its group) never echoes: only the wall behind it is seen.
    assert measure_range(scene('<geom type="box" pos="2.1 0 0.1" size="0.1 2 2"/>'), spec) == pytest.approx(2.0)


def test_range_noise_is_seeded_and_sized_as_specified():
    model = scene('<geom type="box" pos="1.1 0 0.1" size="0.1 2 2"/>')
    spec = RangeSpec(type='range', noise_stddev=0.01)
    data = mujoco.MjData(model)
    mujoco.mj_forward(model, data)
    sensor, rng = RangeSensor(model, 'sensor', spec, OWN_GROUP), np.random.default_rng(3)
    readings = np.array([sensor.measure(data, rng, 0).range for _ in range(4000)])
    assert abs(readings.mean() - 1.0) < 0.001 and abs(readings.std() - 0.01) < 0.001
    assert measure_range(model, spec, seed=7) == measure_range(model, spec, seed=7) != measure_range(model, spec, 8)


def test_navsat_converts_enu_to_wgs84_exactly():
    # Independent references on the WGS84 ellipsoid at the equator: 1 km north is 1000 / M(0) rad of
    # latitude with M(0) = a (1 - e^2); 1 km east along the tangent plane is atan(1000 / a) of longitude,
    # sqrt(a^2 + 1000^2) - a above the ellipsoid.
    a, e2 = 6378137.0, 6.69437999014e-3
    latitude, longitude, altitude = enu_to_geodetic(np.array([0.0, 1000.0, 0.0]), (0.0, 0.0, 0.0))
    assert latitude == pytest.approx(math.degrees(1000.0 / (a * (1 - e2))), rel=1e-6) and longitude == 0.0
    latitude, longitude, altitude = enu_to_geodetic(np.array([1000.0, 0.0, 0.0]), (0.0, 0.0, 0.0))
    assert longitude == pytest.approx(math.degrees(math.atan(1000.0 / a)), rel=1e-9)
    assert altitude == pytest.approx(math.hypot(a, 1000.0) - a, abs=1e-6) and abs(latitude) < 1e-12
    # Round trips anywhere: the datum itself, and ECEF <-> geodetic.
    datum = (46.2044, 6.1432, 375.0)
    # (ECEF coordinates are ~6.4e6 m: doubles carry them to ~1e-9 m, the altitude's subtraction to ~1e-7 m.)
    assert enu_to_geodetic(np.zeros(3), datum) == pytest.approx(datum, abs=1e-6)
    assert ecef_to_geodetic(geodetic_to_ecef(-33.86, 151.21, 58.0)) == pytest.approx((-33.86, 151.21, 58.0), abs=1e-6)


def test_navsat_fix_noise_and_covariance():
    model = scene('')
    spec = NavSatSpec(type='navsat', datum=(46.2044, 6.1432, 375.0), horizontal_noise_stddev=0.8,
                      vertical_noise_stddev=1.5)
    data = mujoco.MjData(model)
    mujoco.mj_forward(model, data)
    sensor, rng = NavSat(model, 'sensor', spec), np.random.default_rng(5)
    fixes = [sensor.measure(data, rng, 0) for _ in range(3000)]
    origin = geodetic_to_ecef(*spec.datum)
    latitude, longitude = math.radians(spec.datum[0]), math.radians(spec.datum[1])
    east = np.array([-math.sin(longitude), math.cos(longitude), 0.0])
    up = np.array([math.cos(latitude) * math.cos(longitude), math.cos(latitude) * math.sin(longitude),
                   math.sin(latitude)])
    offsets = np.array([geodetic_to_ecef(f.latitude, f.longitude, f.altitude) - origin for f in fixes])
    assert abs(np.std(offsets @ east) - 0.8) < 0.05 and abs(np.std(offsets @ up) - 1.5) < 0.08
    assert abs(np.mean(offsets @ up) - 0.1) < 0.1  # the site is 0.1 m above the datum
    assert fixes[0].position_covariance == pytest.approx((0.64, 0, 0, 0, 0.64, 0, 0, 0, 2.25))


def test_bad_values_name_the_key(tmp_path):
    rover = (WORKSPACE / 'config' / 'robots' / 'scout.yaml').read_text()
    for bad, key, expected in (('datum: [46.2044, 6.1432, 375.0]', 'sensors[0].datum', 'latitude strictly between'),
                               ('radiation: ultrasound', 'sensors[1].radiation', "one of 'ultrasound', 'infrared'")):
        broken = rover.replace(bad, bad.replace('46.2044', '95.0') if 'datum' in bad else 'radiation: sonar', 1)
        path = tmp_path / 'scout.yaml'
        path.write_text(broken)
        with pytest.raises(DescriptionError) as error:
            load_robot(str(path))
        assert key in str(error.value) and expected in str(error.value), str(error.value)
    path.write_text(rover.replace('type: navsat', 'type: sonar', 1))
    with pytest.raises(DescriptionError) as error:
        load_robot(str(path))
    assert 'sensors[0].type' in str(error.value) and "'navsat'" in str(error.value) and "'range'" in str(error.value)


def test_contract_and_converters_of_the_scout():
    model = load_robot('scout')
    topics = {t.name: t for t in robot_contract(model).topics}
    assert topics['gps/fix'].type == 'sensor_msgs/msg/NavSatFix' and topics['gps/fix'].frame_id == 'gps_link'
    assert topics['cliff/range'].rate == 50 and topics['sonar_left/range'].qos.reliability == 'best_effort'
    role = next(s for s in model.sensors if s.name == 'cliff')
    stamp = Range().header.stamp
    from robotsim_sensors.range_sensor import RangeReading
    [(topic, message)] = CONVERTERS['range'](role, 'cliff_link', [topics['cliff/range']])(
        RangeReading(0, math.inf, 0.47, 0.01, 1.2, 'infrared'), stamp)
    assert topic == 'cliff/range' and message.radiation_type == Range.INFRARED and message.range == math.inf
    assert message.field_of_view == pytest.approx(0.47) and message.header.frame_id == 'cliff_link'


def test_scout_publishes_range_and_fixes_and_passes_the_contract_check():
    bringup = Launch(['robotsim', 'launch', 'sim', 'robot:=scout', f'world:={WALL_AHEAD}', 'firmware:=false'])
    observer = Observer('sensor_kinds_test')
    try:
        observer.watch('/sonar_left/range', Range, SENSOR)
        observer.watch('/gps/fix', NavSatFix, SENSOR)
        assert observer.spin_until(lambda: len(observer.messages['/sonar_left/range']) >= 5
                                   and len(observer.messages['/gps/fix']) >= 5, 90), bringup.text
        check = subprocess.run(['robotsim', 'contract', 'check', '--robot', 'scout', '--duration', '4'],
                               capture_output=True, text=True, timeout=120)
    finally:
        observer.close()
        bringup.stop()
    assert check.returncode == 0 and 'FAIL' not in check.stdout, (check.stdout, check.stderr)
    sonar = observer.messages['/sonar_left/range'][-1]
    # The wall's face is at x = 1.95 m; the sonar (0.18 m ahead, turned 0.35 rad left and 0.14 rad up, so
    # the floor never echoes) sees it through the edge of its cone nearest the x axis: the axis is
    # acos(cos 0.35 cos 0.14) = 0.376 rad off x, that edge 0.246 rad: (1.95 - 0.18) / cos(0.246) = 1.83 m.
    assert sonar.radiation_type == Range.ULTRASOUND and sonar.header.frame_id == 'sonar_left_link'
    assert 1.7 < sonar.range < 1.9, sonar.range
    fix = observer.messages['/gps/fix'][-1]
    assert fix.status.status == NavSatStatus.STATUS_FIX and fix.header.frame_id == 'gps_link'
    assert fix.position_covariance_type == NavSatFix.COVARIANCE_TYPE_DIAGONAL_KNOWN
    assert abs(fix.latitude - 46.2044) < 1e-4 and abs(fix.longitude - 6.1432) < 1e-4  # within ~10 m of the datum


def _rover_with_wrist_sensor(tmp_path) -> str:
    import yaml
    spec = yaml.safe_load((WORKSPACE / 'config' / 'robots' / 'rover.yaml').read_text())
    spec['sensors'].append({'type': 'force_torque', 'name': 'wrist_ft', 'parent': 'arm_wrist_link', 'rate': 100})
    path = tmp_path / 'rover_ft.yaml'
    path.write_text(yaml.safe_dump(spec))
    return str(path)


def test_a_wrist_force_torque_sensor_reads_the_weight_of_what_it_carries(tmp_path, monkeypatch):
    """The rover picks the cube with a force_torque sensor at its wrist (default noise and offset). Wherever the arm
    stands still, the reading is the weight of what the wrist carries turned into the sensor's frame, plus the
    episode's constant offset (in that frame): the wrist and fingers (0.07 kg) before the grasp, and those plus the
    cube (0.03 kg: 0.294 N) while it holds the cube above the floor, within the noise of the averaged samples."""
    from robotsim_sim.pick_place import run_in_simulation
    from robotsim_sim.scene import RobotPlacement, load_world
    from robotsim_sim.simulation import Simulation
    from geometry_msgs.msg import WrenchStamped

    model = load_robot(_rover_with_wrist_sensor(tmp_path))
    samples = []
    original = Simulation.step

    def step(self):
        events = original(self)
        m, data = self.model, self.data
        if float(np.abs(data.qvel[self.robots[0].arm_dofs]).max()) < 0.01:  # the arm standing still
            rotation = data.site_xmat[m.site('wrist_ft_measured').id].reshape(3, 3)
            for event in events:
                if event.channel == 'wrist_ft':
                    fingers = float(data.qpos[m.joint('arm_left_finger_joint').qposadr[0]])
                    samples.append((event.reading, rotation.copy(), data.xpos[m.body('cube').id][2], fingers,
                                    self.time))
        return events
    monkeypatch.setattr(Simulation, 'step', step)
    result, sim = run_in_simulation(load_world(str(WORKSPACE / 'config' / 'worlds' / 'pick.yaml')),
                                    [RobotPlacement(model)], seed=3)
    try:
        assert result.success, result
        wrist = sim.model.body('arm_wrist_link').id
        carried, cube = sim.model.body_subtreemass[wrist], sim.model.body_mass[sim.model.body('cube').id]
    finally:
        sim.close()
    gravity = np.array([0.0, 0.0, -9.81])
    start_z = samples[0][2]
    lifted = [i for i, sample in enumerate(samples) if sample[2] > start_z + 0.05]
    assert len(lifted) >= 50, len(lifted)
    open_fingers = max(sample[3] for sample in samples[:lifted[0]])
    # Before the grasp: the base settled (after 0.6 s), the fingers still open (not yet squeezing the cube).
    before = [i for i in range(lifted[0]) if samples[i][4] > 0.6 and abs(samples[i][3] - open_fingers) < 1e-3]
    assert len(before) >= 50, len(before)

    def residuals(indices, mass):
        """Reading minus the weight of ``mass`` in the sensor frame (what is left: the offset and the noise)."""
        return np.array([samples[i][0].force - samples[i][1].T @ (mass * gravity) for i in indices])
    offset = residuals(before, carried).mean(axis=0)
    assert np.linalg.norm(offset) < 0.5  # 0.1 N a component (per-episode offset)
    assert np.std(residuals(before, carried), axis=0) == pytest.approx([0.05] * 3, abs=0.015)  # white noise
    holding = residuals(lifted, carried + cube).mean(axis=0) - offset
    assert np.linalg.norm(holding) < 0.03, holding  # the cube's 0.294 N accounted for
    without_cube = residuals(lifted, carried).mean(axis=0) - offset
    assert np.linalg.norm(without_cube) == pytest.approx(cube * 9.81, abs=0.03)
    # Its message: geometry_msgs/WrenchStamped in the sensor's frame, on <name>/wrench.
    role = next(s for s in model.sensors if s.name == 'wrist_ft')
    topic = next(t for t in robot_contract(model).topics if t.name == 'wrist_ft/wrench')
    assert topic.type == 'geometry_msgs/msg/WrenchStamped' and topic.frame_id == 'wrist_ft_link'
    reading = samples[-1][0]
    [(name, message)] = CONVERTERS['force_torque'](role, 'wrist_ft_link', [topic])(reading, WrenchStamped().header.stamp)
    assert name == 'wrist_ft/wrench' and message.header.frame_id == 'wrist_ft_link'
    assert message.wrench.force.z == pytest.approx(reading.force[2])
