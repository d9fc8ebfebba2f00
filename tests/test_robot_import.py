"""Public URDFs import, build and move as shipped (issue 10): TIAGo (mobile manipulator), UR5 and
Panda (fixed-base arms) from the example-robot-data package, checked against Pinocchio on the
original URDF files; plus the edges real URDFs hit (Collada meshes, broken inertials, conflicting
roles, a URDF where an overlay is expected) on small URDFs written here."""

from __future__ import annotations

import math
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import mujoco
import numpy as np
import pytest

from robotsim_core.description import load_robot
from robotsim_core.description.build import FRAME_INERTIAL
from robotsim_core.description.meshes import mujoco_mesh
from robotsim_core.description.mjcf import robot_to_mjcf
from robotsim_core.description.urdf import default_package_resolver
from robotsim_sim.scene import RobotPlacement, load_world, resolve_world_path
from robotsim_sim.simulation import SimOptions, Simulation
from rostest_helpers import WORKSPACE
from test_description_errors import assert_clean_error, describe

CORE = WORKSPACE / 'src' / 'robotsim_core' / 'robotsim_core'
ROBOTS = WORKSPACE / 'config' / 'robots'
EXAMPLE_ROBOTS = Path(default_package_resolver()('example-robot-data') or '') / 'robots'
PUBLIC = ['tiago', 'ur5', 'panda', 'xarm7', 'ur10']
# The public robots are test data from a test-only package (`make test` installs it).
needs_example_robots = pytest.mark.skipif(not EXAMPLE_ROBOTS.is_dir(), reason='example-robot-data not installed: '
                                          'ROBOTSIM_TEST_DEPS=1 scripts/setup.sh')


def original_urdf(robot: str) -> Path:
    model = load_robot(robot)
    reference = model.source  # the overlay names the URDF as package://example-robot-data/...
    import yaml
    urdf = yaml.safe_load(Path(reference).read_text())['urdf']
    return EXAMPLE_ROBOTS / urdf.split('/robots/', 1)[1]


def compiled(model) -> tuple[mujoco.MjModel, mujoco.MjData]:
    mj = mujoco.MjModel.from_xml_string(robot_to_mjcf(model))
    return mj, mujoco.MjData(mj)


# ------------------------------------------------------------------ kinematics and mass vs Pinocchio

@needs_example_robots
@pytest.mark.parametrize('robot', PUBLIC)
def test_link_poses_equal_pinocchio_on_the_original_urdf(robot):
    """Every link pose of the MuJoCo model equals Pinocchio's forward kinematics of the shipped URDF
    within 1e-9 over 50 seeded random configurations; total masses are equal."""
    pin = pytest.importorskip('pinocchio', reason='test-only dependency: ROBOTSIM_TEST_DEPS=1 scripts/setup.sh')
    model = load_robot(robot)
    oracle = pin.buildModelFromUrdf(str(original_urdf(robot)))
    oracle_data = oracle.createData()
    mj, data = compiled(model)
    rng = np.random.default_rng(10)
    joints = [j for j in model.tree.moving_joints()]
    for _ in range(50):
        values = {}
        for joint in joints:
            if joint.mimic is None:
                limit = joint.limit
                low, high = ((limit.lower, limit.upper) if joint.type != 'continuous' and limit is not None
                             else (-math.pi, math.pi))
                values[joint.name] = float(rng.uniform(low, high))
        for joint in joints:
            if joint.mimic is not None:
                values[joint.name] = joint.mimic.multiplier * values[joint.mimic.joint] + joint.mimic.offset
        q = pin.neutral(oracle)
        for name, value in values.items():
            pin_joint = oracle.joints[oracle.getJointId(name)]
            if pin_joint.nq == 2:  # continuous: (cos, sin)
                q[pin_joint.idx_q:pin_joint.idx_q + 2] = (math.cos(value), math.sin(value))
            else:
                q[pin_joint.idx_q] = value
            data.qpos[mj.jnt_qposadr[mj.joint(name).id]] = value
        pin.framesForwardKinematics(oracle, oracle_data, q)
        mujoco.mj_kinematics(mj, data)
        # MuJoCo's floating root sits at the origin with identity orientation, like Pinocchio's fixed root;
        # a fixed base sits at its mount (the origin by default).
        mount = np.eye(4)
        mount[:3, 3] = model.mount.xyz
        checked = 0
        for frame in oracle.frames:
            if frame.type != pin.FrameType.BODY or frame.name not in model.tree.links:
                continue
            expected = mount @ oracle_data.oMf[oracle.getFrameId(frame.name)].homogeneous
            body = mj.body(model.body_name(frame.name)).id
            np.testing.assert_allclose(data.xpos[body], expected[:3, 3], atol=1e-9, err_msg=frame.name)
            np.testing.assert_allclose(data.xmat[body].reshape(3, 3), expected[:3, :3], atol=1e-9, err_msg=frame.name)
            checked += 1
        urdf_links = len(model.tree.links) - sum(2 if s.type == 'camera' else 1 for s in model.sensors)
        assert checked >= urdf_links - 1, (checked, urdf_links)  # Pinocchio may fold the world link away
    # The overlay's sensors add frame links of a milligram each (what URDF consumers need to see no body there).
    frames = sum(2 if s.type == 'camera' else 1 for s in model.sensors) * FRAME_INERTIAL.mass
    oracle_mass = sum(inertia.mass for inertia in oracle.inertias)
    assert mj.body_subtreemass[0] == pytest.approx(oracle_mass + frames, rel=1e-12)
    assert model.summary()['mass_kg'] == pytest.approx(oracle_mass, abs=1e-5)
    assert not model.warnings  # these three need no inertia repair once fixed links are lumped


# ------------------------------------------------------------------ behaviour in the simulation

def simulation(robot: str) -> Simulation:
    return Simulation(load_world(resolve_world_path('room')), [RobotPlacement(load_robot(robot))],
                      SimOptions(cameras=False, firmware=False))


def run(sim: Simulation, seconds: float, command=None) -> None:
    for _ in range(round(seconds / sim.model.opt.timestep)):
        if command is not None:
            command()
        sim.step()


def positions(sim: Simulation, joints) -> np.ndarray:
    robot = sim.robots[0]
    index = {name: i for i, name in enumerate(robot.joint_names)}
    return sim.data.qpos[robot.qpos_index[[index[j] for j in joints]]].copy()


def follow_and_hold(sim: Simulation, arm, offset: float) -> tuple[float, float]:
    """(worst tracking error at the end of a 2 s move, worst drift over the next 5 s) in rad."""
    tree = sim.robots[0].model.tree
    start = positions(sim, arm.joints)
    target = []
    for name, value in zip(arm.joints, start):
        limit = tree.joints[name].limit
        target.append(value + offset if limit is None or value + offset <= limit.upper else value - offset)
    assert sim.command_arm(0, list(arm.joints), [(1.0, [(a + b) / 2 for a, b in zip(start, target)]),
                                                 (2.0, target)]) is None
    run(sim, 2.5)
    reached = positions(sim, arm.joints)
    tracking = float(np.max(np.abs(reached - target)))
    worst = 0.0
    for _ in range(10):
        run(sim, 0.5)
        worst = max(worst, float(np.max(np.abs(positions(sim, arm.joints) - reached))))
    return tracking, worst


@needs_example_robots
@pytest.mark.parametrize('robot', ['ur5', 'panda', 'xarm7', 'ur10'])
def test_fixed_base_arm_holds_against_gravity_and_follows_a_trajectory(robot):
    sim = simulation(robot)
    model = sim.robots[0].model
    assert model.fixed_base and model.drive is None
    robot_root = sim.model.body_rootid[sim.robots[0].root_body]
    assert sim.robots[0].root_dof == -1
    assert all(sim.model.jnt_type[j] != mujoco.mjtJoint.mjJNT_FREE
               for j in range(sim.model.njnt) if sim.model.body_rootid[sim.model.jnt_bodyid[j]] == robot_root)
    arm = model.arms[0]
    start = positions(sim, arm.joints)
    root_before = sim.ground_truth_pose()[0]
    run(sim, 5.0)
    assert np.max(np.abs(positions(sim, arm.joints) - start)) < 0.01  # holds its start pose against gravity
    tracking, drift = follow_and_hold(sim, arm, 0.4)
    assert tracking < 0.01, tracking
    assert drift < 0.01, drift
    np.testing.assert_allclose(sim.ground_truth_pose()[0], root_before, atol=1e-12)  # bolted down


@needs_example_robots
def test_tiago_stands_still_drives_a_metre_and_moves_its_arm():
    sim = simulation('tiago')
    robot = sim.robots[0]
    # Casters slide freely: friction 0 from the URDF's <gazebo> tags (mu1 = mu2 = 0).
    caster = sim.model.body('caster_front_left_2_link').id
    caster_geoms = [g for g in range(sim.model.ngeom) if sim.model.geom_bodyid[g] == caster
                    and sim.model.geom_contype[g]]
    assert caster_geoms and all(sim.model.geom_condim[g] == 1 for g in caster_geoms)
    # Wheel motor stall torque from the wheel joints' <limit effort="6.0">.
    assert robot.model.drive.wheel_max_torque == 6.0
    run(sim, 0.5)
    _, yaw_before = sim.ground_truth_pose()
    run(sim, 5.0)
    _, yaw_after = sim.ground_truth_pose()
    assert abs(yaw_after - yaw_before) < 0.001
    self_contacts = [c for c in sim.data.contact[:sim.data.ncon]
                     if sim.model.body_rootid[sim.model.geom_bodyid[c.geom1]]
                     == sim.model.body_rootid[sim.model.geom_bodyid[c.geom2]] != 0]
    assert not self_contacts

    start, _ = sim.ground_truth_pose()
    odometry_start = (robot.odometry.x, robot.odometry.y)
    while np.linalg.norm(sim.ground_truth_pose()[0][:2] - start[:2]) < 1.0:
        assert sim.time < 30.0, 'TIAGo did not drive 1 m in 25 s'
        run(sim, 0.1, lambda: sim.command_base(0, 0.3, 0.0))
    run(sim, 1.5)  # the command times out and the base stops
    truth = float(np.linalg.norm(sim.ground_truth_pose()[0][:2] - start[:2]))
    odometry = math.hypot(robot.odometry.x - odometry_start[0], robot.odometry.y - odometry_start[1])
    assert truth >= 1.0
    assert abs(odometry - truth) < 0.05 * truth, (odometry, truth)

    arm = next(arm for arm in robot.model.arms if arm.name == 'arm')
    tracking, drift = follow_and_hold(sim, arm, 0.3)
    assert tracking < 0.02, tracking
    assert drift < 0.01, drift


# ------------------------------------------------------------------ import edges on small URDFs

LINK = '''  <link name="{name}">{inertial}
    <collision><geometry><box size="0.05 0.05 0.05"/></geometry></collision>
  </link>'''


def inertial(mass, ixx=1e-3, iyy=1e-3, izz=1e-3, ixy=0.0, xyz='0 0 0'):
    return (f'\n    <inertial><origin xyz="{xyz}"/><mass value="{mass}"/><inertia ixx="{ixx}" ixy="{ixy}" ixz="0" '
            f'iyy="{iyy}" iyz="0" izz="{izz}"/></inertial>')


def write_arm(folder: Path, links: dict[str, str], extra_joints: str = '', overlay_extra: str = '',
              mesh: str = '') -> Path:
    """A 2-joint arm on a fixed base; ``links`` maps link name -> inertial XML."""
    body = '\n'.join(LINK.format(name=name, inertial=xml) for name, xml in links.items())
    if mesh:
        body = body.replace('<box size="0.05 0.05 0.05"/>', f'<mesh filename="{mesh}"/>', 1)
    urdf = folder / 'arm.urdf'
    urdf.write_text(textwrap.dedent(f'''\
        <robot name="testarm">
        {body}
          <joint name="j1" type="revolute"><parent link="base"/><child link="l1"/><origin xyz="0 0 0.3"/>
            <axis xyz="0 1 0"/><limit lower="-2" upper="2" effort="50" velocity="2"/></joint>
          <joint name="j2" type="revolute"><parent link="l1"/><child link="l2"/><origin xyz="0.3 0 0"/>
            <axis xyz="0 1 0"/><limit lower="-2" upper="2" effort="50" velocity="2"/></joint>
          <joint name="tool_joint" type="fixed"><parent link="l2"/><child link="tool"/><origin xyz="0.3 0 0"/></joint>
        {extra_joints}
        </robot>'''))
    overlay = folder / 'arm.yaml'
    overlay.write_text(f'urdf: arm.urdf\nbase_link: base\narms:\n  - {{name: arm, joints: [j1, j2]}}\n{overlay_extra}')
    return overlay


def good_links(**overrides) -> dict[str, str]:
    links = {'base': inertial(2.0), 'l1': inertial(1.0, xyz='0.15 0 0'), 'l2': inertial(0.5), 'tool': ''}
    links.update(overrides)
    return links


def test_massless_fixed_links_are_lumped_with_mass_and_poses_unchanged(tmp_path):
    """A massless moving link whose fixed child carries the mass builds: the child's inertial is
    lumped into it (composite centre of mass), nothing is repaired, the total mass is the URDF's."""
    overlay = write_arm(tmp_path, good_links(l2='', tool=inertial(0.5, xyz='0.1 0 0')))
    model = load_robot(str(overlay))
    assert not model.warnings
    mj, data = compiled(model)
    assert mj.body_subtreemass[0] == pytest.approx(3.5, rel=1e-12)
    l2 = mj.body('l2').id
    assert mj.body_mass[l2] == pytest.approx(0.5) and mj.body_mass[mj.body('tool').id] == 0
    np.testing.assert_allclose(mj.body_ipos[l2], [0.4, 0, 0], atol=1e-12)  # tool at 0.3 + its COM at 0.1
    mujoco.mj_kinematics(mj, data)
    np.testing.assert_allclose(data.xpos[mj.body('tool').id], [0.6, 0, 0.3], atol=1e-12)


@pytest.mark.parametrize('links, expected', [
    (good_links(l2=inertial(0.5, ixx=0, iyy=0, izz=0)), 'principal moments (0, 0, 0) ->'),
    (good_links(l2=inertial(0.5, ixx=1e-3, iyy=1e-3, izz=5e-3)), 'principal moments (0.001, 0.001, 0.005) ->'),
    (good_links(l2=inertial(0.5, ixx=1e-3, iyy=1e-3, izz=1e-3, ixy=2e-3)), 'principal moments (-0.001, 0.001, 0.003) ->'),
    (good_links(l2=''), 'no inertial on a moving body: mass 0.001 kg'),
], ids=['zero tensor', 'A+B<C', 'not positive definite', 'massless moving link'])
def test_invalid_inertials_are_repaired_with_one_warning_or_refused_when_strict(tmp_path, links, expected):
    overlay = write_arm(tmp_path, links)
    completed = describe(overlay)
    assert completed.returncode == 0, completed.stderr
    warnings = completed.stderr.strip().splitlines()
    assert len(warnings) == 1 and 'link[l2].inertial repaired' in warnings[0] and expected in warnings[0], warnings
    model = load_robot(str(overlay))
    mujoco.MjModel.from_xml_string(robot_to_mjcf(model))  # MuJoCo accepts the repaired tensor
    moments = np.linalg.eigvalsh(mujoco_inertia(model.body_inertials['l2']))
    assert moments[0] > 0 and moments[0] + moments[1] >= moments[2]
    strict = subprocess.run([sys.executable, '-m', 'robotsim.cli', 'describe', str(overlay), '--strict'],
                            capture_output=True, text=True, timeout=60)
    assert_clean_error(strict, tmp_path / 'arm.urdf', 'link[l2].inertial', 'strict refuses repairs')


def mujoco_inertia(inertial) -> np.ndarray:
    ixx, ixy, ixz, iyy, iyz, izz = inertial.inertia
    return np.array([[ixx, ixy, ixz], [ixy, iyy, iyz], [ixz, iyz, izz]])


@needs_example_robots
def test_collada_mesh_is_converted_once_into_the_cache(tmp_path, monkeypatch):
    monkeypatch.setenv('ROBOTSIM_CACHE', str(tmp_path / 'cache'))
    dae = EXAMPLE_ROBOTS / 'tiago_description' / 'meshes' / 'arm' / 'arm_1_collision.dae'
    first = mujoco_mesh(str(dae), 'x.urdf', 'link[a].collision[0].mesh.filename')
    assert first.converted and first.path.startswith(str(tmp_path / 'cache')) and first.path.endswith('.stl')
    stamp = os.stat(first.path).st_mtime_ns
    again = mujoco_mesh(str(dae), 'x.urdf', 'link[a].collision[0].mesh.filename')
    assert again.path == first.path and os.stat(again.path).st_mtime_ns == stamp  # read from the cache
    mesh = mujoco.MjModel.from_xml_string(f'<mujoco><asset><mesh name="m" file="{first.path}"/></asset>'
                                          '<worldbody><geom type="mesh" mesh="m"/></worldbody></mujoco>')
    assert mesh.nmeshvert > 0
    # The arm's Collada collision mesh has the bounds of its STL visual (Collada <unit> applied).
    stl = mujoco.MjModel.from_xml_string(
        f'<mujoco><asset><mesh name="m" file="{dae.with_name("arm_1.stl")}"/></asset>'
        '<worldbody><geom type="mesh" mesh="m"/></worldbody></mujoco>')
    assert mesh.geom_rbound[0] == pytest.approx(stl.geom_rbound[0], rel=0.1)


def test_stl_files_mujoco_cannot_decode_are_converted(tmp_path, monkeypatch):
    """MuJoCo reads binary STL of at most 200,000 triangles only; ASCII STL (common in URDF packages) and
    larger meshes (a Go1 leg has 351,394) go through the cache (binary STL; OBJ above the limit); a binary
    STL it reads is used as is."""
    import trimesh
    monkeypatch.setenv('ROBOTSIM_CACHE', str(tmp_path / 'cache'))
    box = trimesh.creation.box((0.1, 0.2, 0.3))
    ascii_stl, binary_stl = tmp_path / 'ascii.stl', tmp_path / 'binary.stl'
    ascii_stl.write_text(trimesh.exchange.stl.export_stl_ascii(box))
    binary_stl.write_bytes(trimesh.exchange.stl.export_stl(box))
    assert mujoco_mesh(str(binary_stl), 'x.urdf', 'k').path == str(binary_stl)
    converted = mujoco_mesh(str(ascii_stl), 'x.urdf', 'k')
    assert converted.converted and converted.path.endswith('.stl')
    model = mujoco.MjModel.from_xml_string(f'<mujoco><asset><mesh name="m" file="{converted.path}"/></asset>'
                                           '<worldbody><geom type="mesh" mesh="m"/></worldbody></mujoco>')
    assert model.nmeshface == 12
    big = trimesh.creation.icosphere(subdivisions=8)  # 1,310,720 triangles
    big_stl = tmp_path / 'big.stl'
    big_stl.write_bytes(trimesh.exchange.stl.export_stl(big))
    assert mujoco_mesh(str(big_stl), 'x.urdf', 'k').path.endswith('.obj')


def test_unreadable_mesh_is_one_line_naming_urdf_link_and_file(tmp_path, monkeypatch):
    monkeypatch.setenv('ROBOTSIM_CACHE', str(tmp_path / 'cache'))
    (tmp_path / 'broken.dae').write_text('<COLLADA>not a mesh')
    overlay = write_arm(tmp_path, good_links(), mesh='broken.dae')
    completed = describe(overlay)
    assert_clean_error(completed, tmp_path / 'arm.urdf', 'link[base].collision[0].mesh.filename', 'broken.dae')


@pytest.mark.parametrize('overlay_extra, key, expected', [
    ('arms:\n  - {name: arm, joints: [j1, j2]}\n  - {name: arm, joints: [j3]}\n', 'arms[1].name', 'duplicate arm name'),
    ('arms:\n  - {name: arm, joints: [j1, j2]}\n  - {name: other, joints: [j2]}\n', 'arms[1].joints[0]',
     'already has a role'),
    ('arms:\n  - {name: arm, joints: [j1, j3]}\n', 'arms[0].joints[1]', 'mimics'),
    ('drive: {type: differential}\nwheels:\n  - {joint: j1}\n  - {joint: tool_joint}\n', 'wheels[1].joint',
     'a fixed joint'),
    ('drive: {type: differential}\n', 'wheels', 'expected wheels with drive'),
], ids=['duplicate arm', 'joint in two roles', 'mimic joint actuated', 'wheel joint fixed', 'drive without wheels'])
def test_conflicting_roles_are_one_line_naming_the_overlay_key(tmp_path, overlay_extra, key, expected):
    overlay = write_arm(tmp_path, good_links(l3=inertial(0.1)), extra_joints=(
        '<joint name="j3" type="revolute"><parent link="l2"/><child link="l3"/><axis xyz="0 0 1"/>'
        '<limit lower="-1" upper="1" effort="5" velocity="1"/><mimic joint="j2"/></joint>'))
    overlay.write_text(overlay.read_text().split('arms:')[0] + overlay_extra)
    assert_clean_error(describe(overlay), overlay, key, expected)


@needs_example_robots
def test_urdf_where_an_overlay_is_expected_gets_a_hint_and_import_writes_one(tmp_path):
    urdf = original_urdf('ur5')
    completed = describe(urdf)
    assert completed.returncode == 2 and len(completed.stderr.strip().splitlines()) == 1
    assert 'robotsim import' in completed.stderr and 'Traceback' not in completed.stderr
    for robot, mobile in (('ur5', False), ('tiago', True)):
        out = tmp_path / f'{robot}_overlay.yaml'
        written = subprocess.run([sys.executable, '-m', 'robotsim.cli', 'import', str(original_urdf(robot)),
                                  '--out', str(out)], capture_output=True, text=True, timeout=120)
        assert written.returncode == 0, written.stderr
        model = load_robot(str(out))
        assert (model.drive is not None) == mobile and model.fixed_base == (not mobile)
        if mobile:
            assert {w.joint for w in model.drive.wheels} == {'wheel_left_joint', 'wheel_right_joint'}
        arm_joints = {j for arm in model.arms for j in arm.joints}
        assert {'shoulder_pan_joint', 'wrist_3_joint'} <= arm_joints if robot == 'ur5' else 'arm_7_joint' in arm_joints
        assert describe(out).returncode == 0


@needs_example_robots
def test_import_makes_a_name_robotsim_takes_and_resolves_an_empty_package_authority(tmp_path):
    """A URDF robot called '2dof-planar' (not a robotsim name) whose mesh is written package:///demo_pkg/...
    (talos_full_v2's spelling): the overlay names it robot_2dof_planar with the URDF's name beside it, and
    describes without an edit."""
    package = tmp_path / 'demo_pkg'
    (package / 'meshes').mkdir(parents=True)
    (package / 'package.xml').write_text('<package format="3"><name>demo_pkg</name></package>\n')
    import trimesh
    trimesh.creation.box((0.1, 0.1, 0.1)).export(str(package / 'meshes' / 'cube.stl'))
    inertial = '<inertial><mass value="1"/><inertia ixx="0.01" iyy="0.01" izz="0.01"/></inertial>'
    urdf = package / 'robot.urdf'
    urdf.write_text(f'<robot name="2dof-planar"><link name="base">{inertial}<collision><geometry>'
                    '<mesh filename="package:///demo_pkg/meshes/cube.stl"/></geometry></collision></link>'
                    f'<link name="l1">{inertial}</link><link name="l2">{inertial}</link>'
                    '<joint name="j1" type="revolute"><parent link="base"/><child link="l1"/><origin xyz="0 0 0.1"/>'
                    '<axis xyz="0 0 1"/><limit lower="-1" upper="1" effort="1" velocity="1"/></joint>'
                    '<joint name="j2" type="revolute"><parent link="l1"/><child link="l2"/><origin xyz="0.2 0 0"/>'
                    '<axis xyz="0 0 1"/><limit lower="-1" upper="1" effort="1" velocity="1"/></joint></robot>')
    out = tmp_path / 'overlay.yaml'
    written = subprocess.run([sys.executable, '-m', 'robotsim.cli', 'import', str(urdf), '--out', str(out)],
                             capture_output=True, text=True, timeout=120)
    assert written.returncode == 0, written.stderr
    assert "name: robot_2dof_planar  # the URDF calls it '2dof-planar'" in out.read_text()
    completed = describe(out)
    assert completed.returncode == 0, completed.stderr
    model = load_robot(str(out))
    assert model.name == 'robot_2dof_planar'
    mesh = model.tree.links['base'].collisions[0].geometry
    assert mesh.filename == str(package / 'meshes' / 'cube.stl')


GRIPPER_GUESSES = {  # URDF (example-robot-data, not the shipped robots) -> (default arm's last joint, its gripper)
    'so_arm_description/urdf/so101.urdf': ('wrist_roll', ('gripper',)),
    'z1_description/urdf/z1.urdf': ('joint6', ('jointGripper',)),
    'panda_description/urdf/panda.urdf': ('panda_joint7', ('panda_finger_joint1', 'panda_finger_joint2')),
    'baxter_description/urdf/baxter.urdf': ('right_w2', ('r_gripper_l_finger_joint', 'r_gripper_r_finger_joint')),
}


@needs_example_robots
@pytest.mark.parametrize('urdf', sorted(GRIPPER_GUESSES))
def test_import_makes_finger_joints_the_grippers_and_the_longest_chain_the_arm(urdf, tmp_path):
    last, gripper = GRIPPER_GUESSES[urdf]
    out = tmp_path / 'overlay.yaml'
    written = subprocess.run([sys.executable, '-m', 'robotsim.cli', 'import', str(EXAMPLE_ROBOTS / urdf), '--out',
                              str(out)], capture_output=True, text=True, timeout=300)
    assert written.returncode == 0, written.stderr
    assert describe(out).returncode == 0  # describes without an edit
    model = load_robot(str(out))
    arm = model.default_arm()
    assert arm is model.arms[0] and arm.joints[-1] == last and arm.gripper_joints == gripper, out.read_text()
    assert all(len(other.joints) <= len(arm.joints) for other in model.arms)


def test_the_default_arm_is_the_one_with_the_most_joints(tmp_path):
    """A head pan found first and a three-joint arm after it: the draft holds the head (no arm of one joint) and lists
    the arm, and commands that name no arm (ArmChain, planning) take the arm, even from an overlay that lists the head
    as an arm, first."""
    from robotsim_core.arm.chain import ArmChain, ChainError
    inertial = '<inertial><mass value="0.5"/><inertia ixx="0.001" iyy="0.001" izz="0.001"/></inertial>'
    box = '<collision><geometry><box size="0.05 0.05 0.05"/></geometry></collision>'
    links = ''.join(f'<link name="{name}">{inertial}{box}</link>' for name in ('base', 'head', 'l1', 'l2', 'l3'))

    def joint(name, parent, child, xyz, axis):
        return (f'<joint name="{name}" type="revolute"><parent link="{parent}"/><child link="{child}"/>'
                f'<origin xyz="{xyz}"/><axis xyz="{axis}"/><limit lower="-2" upper="2" effort="5" velocity="2"/></joint>')
    urdf = tmp_path / 'twoarms.urdf'
    urdf.write_text(f'<robot name="twoarms">{links}' + joint('head_pan', 'base', 'head', '0 0 0.3', '0 0 1')
                    + joint('a1', 'base', 'l1', '0.1 0 0.1', '0 0 1') + joint('a2', 'l1', 'l2', '0 0 0.1', '0 1 0')
                    + joint('a3', 'l2', 'l3', '0.15 0 0', '0 1 0') + '</robot>')
    out = tmp_path / 'twoarms.yaml'
    written = subprocess.run([sys.executable, '-m', 'robotsim.cli', 'import', str(urdf), '--out', str(out)],
                             capture_output=True, text=True, timeout=120)
    assert written.returncode == 0, written.stderr
    text = out.read_text()
    assert '{name: arm, joints: [a1, a2, a3]}' in text and 'held_joints: [head_pan]' in text, text  # no 1-joint arm
    # An overlay written by hand that lists the head as an arm, first: still the arm.
    out.write_text(text.replace('held_joints: [head_pan]\n', '')
                   .replace('arms:\n', 'arms:\n  - {name: head, joints: [head_pan]}\n')
                   .replace('{name: arm, joints: [a1, a2, a3]}', '{name: main, joints: [a1, a2, a3]}'))
    model = load_robot(str(out))
    assert [arm.name for arm in model.arms] == ['head', 'main']
    assert model.default_arm().name == 'main'
    assert ArmChain(model).joint_names == ('a1', 'a2', 'a3')
    assert ArmChain(model, 'head').joint_names == ('head_pan',)
    with pytest.raises(ChainError, match=r"arm: expected one of \['head', 'main'\], got 'torso'"):
        ArmChain(model, 'torso')


def test_self_collision_exclusions_are_reported_by_reason():
    model = load_robot('panda')
    counts = model.exclusion_counts
    assert counts['adjacent'] > 0 and counts['srdf'] > 0
    assert len(model.collision_excludes) == sum(counts.values())
    # Non-adjacent links that the SRDF does not name still collide: link1 and link5 are neither.
    assert ('panda_link1', 'panda_link5') not in model.collision_excludes
    tiago = load_robot('tiago')
    assert tiago.exclusion_counts['touching at start'] > 0  # links modelled interpenetrating at rest


def test_every_core_module_imports_on_its_own():
    modules = sorted('robotsim_core.' + '.'.join(path.relative_to(CORE).with_suffix('').parts)
                     for path in CORE.rglob('*.py') if path.name != '__init__.py')
    assert 'robotsim_core.description.urdf' in modules and 'robotsim_core.description.urdf_import' in modules
    script = ('import importlib, subprocess, sys\n'
              'failed = [m for m in sys.argv[1:] if subprocess.run([sys.executable, "-c", f"import {m}"],'
              ' capture_output=True).returncode]\n'
              'print(" ".join(failed))')
    completed = subprocess.run([sys.executable, '-c', script, *modules], capture_output=True, text=True, timeout=300)
    assert completed.stdout.strip() == '', f'modules that fail to import alone: {completed.stdout}'


# ------------------------------------------------------------------ live bringup

@needs_example_robots
@pytest.mark.parametrize('robot', ['ur5', 'tiago', 'go1'])
def test_launched_public_robot_passes_the_contract_check(robot):
    """`robotsim launch sim robot:=ROBOT` passes `robotsim contract check`: TIAGo with its base
    (firmware in the loop drives its two wheels), the UR5 as an arm without odometry, the Go1 standing up (its odom
    from its true pose, the TF reaching each foot)."""
    from sensor_msgs.msg import JointState
    from rostest_helpers import Launch, wait_until_publishing

    bringup = Launch(['robotsim', 'launch', 'sim', f'robot:={robot}', 'cameras:=false'])
    try:
        wait_until_publishing('/joint_states', JointState)
        result = subprocess.run(['robotsim', 'contract', 'check', '--robot', robot, '--duration', '4'],
                                capture_output=True, text=True, timeout=120)
    finally:
        bringup.stop()
    assert result.returncode == 0, (result.stdout, result.stderr, bringup.text)
    assert 'FAIL' not in result.stdout
    assert ('/odom' in result.stdout) == (robot != 'ur5'), result.stdout
    if robot == 'go1':
        assert 'PASS  /foot_contacts' in result.stdout and 'tf trunk -> RL_foot' in result.stdout, result.stdout


def _import(urdf: Path, out: Path):
    written = subprocess.run([sys.executable, '-m', 'robotsim.cli', 'import', str(urdf), '--out', str(out)],
                             capture_output=True, text=True, timeout=300)
    assert written.returncode == 0, written.stderr
    return out.read_text()


@needs_example_robots
def test_import_makes_casters_passive_and_a_hand_the_arm_s_gripper(tmp_path):
    """tiago_dual (example-robot-data, not shipped): its four casters (a swivel and a wheel without an effort limit
    each) are passive wheels, their swivels and the suspension free joints, not arms; each hand's finger chains,
    below an arm's wrist, are that arm's gripper; the 7-joint arms come first. It was a 6-wheel differential drive
    with 26 arms."""
    out = tmp_path / 'tiago_dual.yaml'
    text = _import(EXAMPLE_ROBOTS / 'tiago_description' / 'robots' / 'tiago_dual.urdf', out)
    assert describe(out).returncode == 0, text
    model = load_robot(str(out))
    driven = {w.joint for w in model.drive.wheels if w.driven}
    passive = {w.joint for w in model.drive.wheels if not w.driven}
    assert driven == {'wheel_left_joint', 'wheel_right_joint'}
    assert passive == {f'caster_{end}_{side}_2_joint' for end in ('front', 'back') for side in ('left', 'right')}
    arm_joints = {j for arm in model.arms for j in arm.joints}
    assert not arm_joints & {'caster_front_left_1_joint', 'suspension_left_joint'}
    assert [len(arm.joints) for arm in model.arms] == [7, 7]  # two arms; the head and the torso lift are held
    assert set(model.held_joints) == {'head_1_joint', 'head_2_joint', 'torso_lift_joint'}
    assert model.default_arm().joints[-1] == 'arm_left_7_joint'
    assert {'hand_left_thumb_joint', 'hand_left_index_joint'} <= set(model.arms[0].gripper_joints)
    assert not any(j.startswith('hand_right') for j in model.arms[0].gripper_joints)


@needs_example_robots
@pytest.mark.parametrize('urdf, legged', [('ur_description/urdf/ur5_robot.urdf', False),
                                          ('talos_data/robots/talos_reduced.urdf', True),
                                          ('solo_description/robots/solo12.urdf', True)])
def test_an_imported_robot_without_wheels_starts_on_the_floor_of_the_default_world(urdf, legged, tmp_path):
    """The drafted mount raises the root so that the lowest collision point touches the floor (a fixed base at its
    initial joint positions, a legged robot in its crouch): the robot starts in the default world without
    overlapping it (talos' feet hung 1.08 m below its root, inside the floor)."""
    out = tmp_path / 'robot.yaml'
    _import(EXAMPLE_ROBOTS / urdf, out)
    model = load_robot(str(out))
    assert model.fixed_base != legged and (model.legs is not None) == legged and model.mount.xyz[2] >= 0
    sim = Simulation(load_world(resolve_world_path('room')), [RobotPlacement(model)],
                     SimOptions(cameras=False, firmware=False))  # refuses a robot inside the floor
    try:
        mujoco.mj_forward(sim.model, sim.data)
        m = sim.model
        floor = next(g for g in range(m.ngeom) if m.geom_type[g] == mujoco.mjtGeom.mjGEOM_PLANE)
        root = sim.robots[0].root_body

        def of_the_robot(body: int) -> bool:
            while body not in (root, 0):
                body = m.body_parentid[body]
            return body == root
        robot_geoms = [g for g in range(m.ngeom) if m.geom_contype[g] | m.geom_conaffinity[g]
                       and of_the_robot(m.geom_bodyid[g])]
        assert robot_geoms
        gap = min(mujoco.mj_geomDistance(m, sim.data, floor, g, 1.0, None) for g in robot_geoms)
        assert -1e-3 <= gap <= 5e-3, gap  # on the floor: neither in it nor floating
    finally:
        sim.close()


@needs_example_robots
def test_a_fixed_base_robot_mounted_inside_the_floor_is_refused_naming_its_mount(tmp_path):
    out = tmp_path / 'ur5.yaml'
    text = _import(EXAMPLE_ROBOTS / 'ur_description' / 'urdf' / 'ur5_robot.urdf', out)
    at = text.index('mount: {xyz: [0, 0, ')
    line_end = text.index('\n', at)
    out.write_text(text[:at] + 'mount: {xyz: [0, 0, -0.3], rpy: [0, 0, 0]}' + text[line_end:])
    from robotsim_core.errors import DescriptionError
    with pytest.raises(DescriptionError) as refused:
        Simulation(load_world(resolve_world_path('room')), [RobotPlacement(load_robot(str(out)))],
                   SimOptions(cameras=False, firmware=False))
    message = str(refused.value)
    assert str(out) in message and 'mount' in message and 'starts inside' in message, message


@needs_example_robots
@pytest.mark.parametrize('urdf', ['go2_description/urdf/go2.urdf', 'a1_description/urdf/a1.urdf',
                                  'solo_description/robots/solo12.urdf', 'anymal_c_simple_description/urdf/anymal.urdf'])
def test_an_imported_quadruped_stands_up_with_its_drafted_overlay_unedited(urdf, tmp_path):
    """Quadrupeds of example-robot-data not shipped with robotsim: the drafted overlay (legs from the links named
    foot, gains from the robot's weight, stance and crouch by inverse kinematics) describes without an edit, the robot
    starts lying on the floor, and the stand-up controller raises it: for 3 s after the rise its trunk stays within
    3 cm of the stance's height (feet on the floor), level within 5 degrees, its four feet carrying its weight."""
    from robotsim_core.description.urdf_import import lowest_point
    from robotsim_sim.stand_up import StandUp

    out = tmp_path / 'robot.yaml'
    _import(EXAMPLE_ROBOTS / urdf, out)
    model = load_robot(str(out))
    assert model.legs is not None and len(model.legs.feet) == 4 and len(model.legs.joints) == 12 and not model.arms
    stance_height = -lowest_point(model.tree, dict(zip(model.legs.joints, model.legs.stance)))
    sim = Simulation(load_world(resolve_world_path('room')), [RobotPlacement(model)], SimOptions(cameras=False))
    try:
        sim.reset(3)
        root = sim.robots[0].root_body
        assert sim.data.xpos[root][2] < stance_height - 0.05
        controller, next_command, heights, tilts = StandUp(model.legs, rise_time=1.5), 0.0, [], []
        while sim.time < controller.rise_time + 3.5:
            if sim.time >= next_command - 1e-9:
                assert sim.command_leg_positions(0, controller.targets(sim.time)) is None
                next_command += 0.02
            sim.step()
            if sim.time >= controller.rise_time + 0.5:
                heights.append(float(sim.data.xpos[root][2]))
                w, x, y, z = sim.data.xquat[root]
                tilts.append(math.degrees(math.acos(min(1.0, 1 - 2 * (x * x + y * y)))))
        assert max(abs(h - stance_height) for h in heights) <= 0.03, (min(heights), max(heights), stance_height)
        assert max(tilts) < 5.0
        weight = 9.81 * sum(link.inertial.mass for link in model.tree.links.values() if link.inertial)
        forces = [force for _, force in sim.foot_contacts(0)]
        assert all(f > 0.1 * weight / 4 for f in forces) and sum(forces) == pytest.approx(weight, rel=0.05), forces
        assert sim.instability_count == 0
    finally:
        sim.close()


@needs_example_robots
def test_held_joints_stay_where_they_start_under_the_arms_weight(tmp_path):
    """tiago_dual's drafted overlay holds its torso lift and head (no arms): after 2 s of standing still each is
    within 5 mm or 0.01 rad of where it started, the torso lift carrying both arms; a held joint named twice or a
    mimic joint is refused naming held_joints."""
    out = tmp_path / 'tiago_dual.yaml'
    text = _import(EXAMPLE_ROBOTS / 'tiago_description' / 'robots' / 'tiago_dual.urdf', out)
    model = load_robot(str(out))
    sim = Simulation(load_world(resolve_world_path('room')), [RobotPlacement(model)],
                     SimOptions(cameras=False, firmware=False))
    try:
        sim.reset(5)
        addresses = [sim.robots[0].binding.qpos[j] for j in model.held_joints]
        start = sim.data.qpos[addresses].copy()
        while sim.time < 2.0:
            sim.step()
        bounds = [0.005 if model.tree.joints[j].type == 'prismatic' else 0.01 for j in model.held_joints]
        assert np.all(np.abs(sim.data.qpos[addresses] - start) < bounds), (model.held_joints, sim.data.qpos[addresses])
    finally:
        sim.close()
    twice = text.replace('held_joints: [head_1_joint,', 'held_joints: [arm_left_1_joint, head_1_joint,')
    out.write_text(twice)
    assert_clean_error(describe(out), out, 'held_joints[0]', 'already has a role')


EXAMPLE_URDFS = sorted(str(path.relative_to(EXAMPLE_ROBOTS)) for pattern in ('*/*.urdf', '*/*/*.urdf')
                       for path in EXAMPLE_ROBOTS.glob(pattern)) if EXAMPLE_ROBOTS.is_dir() else []
REFUSED = {  # example-robot-data 6.0.0's own defects, or too big for the default world's free floor: one clean line
    'alex_description/urdf/alex_nub_hands.urdf': 'mesh volume is too small',
    'alex_description/urdf/alex_psyonic_hands.urdf': 'mimic.joint: expected an existing joint',
    'anymal_b_simple_description/robots/anymal-kinova.urdf': 'mesh.filename',
    'anymal_b_simple_description/robots/anymal.urdf': 'mesh.filename',
    'romeo_description/urdf/romeo_laas_small.urdf': 'mesh file not found',
    'ur_description/urdf/ur3.urdf': 'expected exactly one root link',
    'simple_humanoid_description/urdf/simple_humanoid.urdf': "mount: 'simple_humanoid' starts inside 'toy_box'",
}


@needs_example_robots
def test_every_example_robot_imports_describes_unedited_and_starts_in_the_default_world(tmp_path):
    """All 69 URDFs of example-robot-data 6.0.0, drafted by the importer and used without an edit: each describes,
    its default arm is its longest, no arm ends in a finger, gripper or jaw joint (they are grippers, unless the whole
    arm is a finger), and the robot
    starts in the default world without overlap (a fixed base mounted on the floor, a legged robot lying on it, a
    mobile base on its wheels); the few that cannot are refused on one line that says why (REFUSED)."""
    from robotsim_core.description.overlay_draft import GRIPPER_WORDS, draft_overlay
    from robotsim_core.errors import DescriptionError

    assert len(EXAMPLE_URDFS) == 69
    world = load_world(resolve_world_path('room'))
    refused, kinds = {}, {'legged': 0, 'mobile': 0, 'fixed': 0}
    for relative in EXAMPLE_URDFS:
        out = tmp_path / (Path(relative).stem + '.yaml')
        try:
            out.write_text(draft_overlay(str(EXAMPLE_ROBOTS / relative), str(out)))
            model = load_robot(str(out))
            Simulation(world, [RobotPlacement(model)], SimOptions(cameras=False, firmware=False)).close()
        except DescriptionError as error:
            assert '\n' not in str(error), str(error)
            refused[relative] = str(error)
            continue
        if model.arms:
            assert model.arms[0] == model.default_arm(), relative
        for arm in model.arms:  # (a hand of its own, every joint a finger's, is the robot's arm: finger_edu)
            assert not GRIPPER_WORDS.search(arm.joints[-1]) or all(map(GRIPPER_WORDS.search, arm.joints)), (relative, arm)
        kinds['legged' if model.legs else 'mobile' if model.drive else 'fixed'] += 1
    assert set(refused) == set(REFUSED), refused
    for relative, reason in REFUSED.items():
        assert reason in refused[relative], refused[relative]
    assert kinds == {'legged': 23, 'mobile': 4, 'fixed': 35}, kinds
