"""Legged robots: a floating base on joint PD servos (robotsim_sim.joint_servos), its import and the stand-up demo."""

from __future__ import annotations

import math

import numpy as np
import pytest
import yaml
from robotsim_core.description import load_robot
from robotsim_core.description.load import resolve_robot_path
from robotsim_core.description.urdf_import import lowest_point
from robotsim_core.errors import DescriptionError
from robotsim_sim.joint_servos import JointServos
from robotsim_sim.scene import RobotPlacement, load_world, resolve_world_path
from robotsim_sim.simulation import SimOptions, Simulation
from robotsim_sim.stand_up import StandUp

GO1 = 'go1'
COMMAND_PERIOD = 0.02
"""The stand-up targets are sent at 50 Hz, as a node on a topic would."""


def _simulation(robot):
    sim = Simulation(load_world(resolve_world_path('room')), [RobotPlacement(robot)], SimOptions(cameras=False))
    sim.reset(7)
    return sim


def _tilt(quaternion) -> float:
    """Angle (rad) between the body's z axis and the world's."""
    w, x, y, z = quaternion
    return math.acos(max(-1.0, min(1.0, 1 - 2 * (x * x + y * y))))


def test_a_quadruped_rises_from_its_crouch_and_holds_its_stance_for_ten_seconds():
    """The stand-up demo on the Go1 (example-robot-data): lying at the start, standing 1.5 s later, and for the next
    10 s of sim time its trunk stays within 2 cm of the height the stance puts it at (feet on the floor, by forward
    kinematics), level, on its four feet and nothing else."""
    robot = load_robot(GO1)
    stance_height = -lowest_point(robot.tree, dict(zip(robot.legs.joints, robot.legs.stance)))
    sim = _simulation(robot)
    instance = sim.robots[0]
    trunk = instance.binding.bodies[robot.base_link]
    floor = sim.model.geom('floor').id
    feet = {int(g) for geoms in instance.foot_geoms.values() for g in geoms}
    bodies = set(instance.binding.bodies.values())
    mine = {g for g in range(sim.model.ngeom) if int(sim.model.geom_bodyid[g]) in bodies}
    start = float(sim.data.xpos[trunk][2])
    assert start < stance_height - 0.1, (start, stance_height)  # lying down
    controller = StandUp(robot.legs, rise_time=1.5)
    next_command, heights, tilts = 0.0, [], []
    while sim.time < controller.rise_time + 10.0:
        if sim.time >= next_command - 1e-9:
            assert sim.command_leg_positions(0, controller.targets(sim.time)) is None
            next_command += COMMAND_PERIOD
        sim.step()
        if sim.time >= controller.rise_time and sim.step_count % 25 == 0:
            heights.append(float(sim.data.xpos[trunk][2]))
            tilts.append(_tilt(sim.data.xquat[trunk]))
            touching = {int(c.geom1) if int(c.geom2) == floor else int(c.geom2)
                        for c in sim.data.contact[:sim.data.ncon] if floor in (int(c.geom1), int(c.geom2))} & mine
            assert touching <= feet, f'at t={sim.time:.2f} s something other than a foot touches the floor'
            assert all(force > 1.0 for _, force in sim.foot_contacts(0)), sim.foot_contacts(0)
    assert len(heights) >= 10.0 / (25 * sim.model.opt.timestep)
    # Its odometry: the true pose from the floor under where it lay (it rose in place, heading along x).
    reading = sim._base_state(instance, sim.time_ns)
    position, quaternion = reading.odom_pose_3d
    assert abs(position[2] - heights[-1]) < 1e-9 and np.linalg.norm(position[:2]) < 0.05
    assert np.allclose(quaternion, sim.data.xquat[trunk], atol=1e-9)
    assert max(abs(h - stance_height) for h in heights) <= 0.02, (min(heights), max(heights), stance_height)
    assert max(tilts) < math.radians(5)
    weight = sum(b.inertial.mass for b in robot.tree.links.values() if b.inertial) * 9.81
    assert sum(force for _, force in sim.foot_contacts(0)) == pytest.approx(weight, rel=0.05)


def test_the_servos_are_torque_motors_a_zero_gain_command_drops_the_robot():
    """A low-level command with zero gains and no torque leaves the legs limp: the robot that stood sinks to the
    floor. Each field of the command reaches the motors (not only the positions)."""
    robot = load_robot(GO1)
    sim = _simulation(robot)
    controller = StandUp(robot.legs, rise_time=1.0)
    while sim.time < 2.0:
        sim.command_leg_positions(0, controller.targets(sim.time))
        sim.step()
    trunk = sim.robots[0].binding.bodies[robot.base_link]
    standing = float(sim.data.xpos[trunk][2])
    joints = list(robot.legs.joints)
    zeros = [0.0] * len(joints)
    assert sim.command_leg_joints(0, joints, list(robot.legs.stance), zeros, zeros, zeros, zeros) is None
    while sim.time < 3.0:
        sim.step()
    assert float(sim.data.xpos[trunk][2]) < standing - 0.08
    # A feed-forward torque alone moves a joint: every calf pushed to its limit.
    calves = [j for j in joints if 'calf' in j]
    lower = [robot.tree.joints[j].limit.lower for j in calves]
    assert sim.command_leg_joints(0, calves, [0.0] * 4, [0.0] * 4, [0.0] * 4, [0.0] * 4, [-5.0] * 4) is None
    while sim.time < 4.0:
        sim.step()
    q = sim.data.qpos[[sim.robots[0].binding.qpos[j] for j in calves]]
    assert np.allclose(q, lower, atol=0.05), (q, lower)


def test_servo_commands_with_bad_values_are_refused_and_change_nothing():
    servos = JointServos(['a', 'b'], kp=10.0, kd=1.0, effort=[5.0, 5.0], hold=[0.1, 0.2])
    before = servos.torques(np.zeros(2), np.zeros(2))
    refusals = [
        servos.command_positions([1.0]),
        servos.command_positions([1.0, math.nan]),
        servos.command(['a', 'c'], [0, 0], [0, 0], [1, 1], [1, 1], [0, 0]),
        servos.command(['a', 'a'], [0, 0], [0, 0], [1, 1], [1, 1], [0, 0]),
        servos.command(['a'], [0, 0], [0], [1], [1], [0]),
        servos.command(['a'], [0], [0], [-1], [1], [0]),
        servos.command(['a'], [0], [0], [1], [1e9], [0]),
        servos.command(['a'], [0], [0], [1], [1], [math.inf]),
    ]
    assert all(isinstance(reason, str) and reason for reason in refusals), refusals
    assert np.array_equal(servos.torques(np.zeros(2), np.zeros(2)), before)
    assert servos.commands == 0
    # Torques are clamped to each joint's effort limit.
    assert servos.command(['b'], [100.0], [0.0], [10.0], [0.0], [0.0]) is None
    assert servos.torques(np.zeros(2), np.zeros(2))[1] == 5.0


@pytest.mark.parametrize('edit, key', [
    ({'joints': ['FR_hip_joint', 'nope'], 'stance': {}, 'crouch': {}}, 'legs.joints[1]'),
    ({'feet': ['FR_foot', 'no_foot']}, 'legs.feet[1]'),
    ({'crouch': {'FR_calf_joint': -3.5}}, 'legs.crouch.FR_calf_joint'),
    ({'joints': ['FR_hip_joint'], 'stance': {'RR_hip_joint': 0.1}, 'crouch': {}}, 'legs.stance.RR_hip_joint'),
    ({'kp': -1.0}, 'legs.kp'),
    ({'stance': {'FR_hip_joint': float('nan')}}, 'legs.stance.FR_hip_joint'),
])
def test_a_legs_overlay_with_a_bad_entry_is_refused_naming_it(tmp_path, edit, key):
    """One line naming the overlay's key: a joint or foot the URDF does not have, an angle outside the joint's limits
    or not a number, a pose for a joint that is not a leg joint, a negative gain."""
    overlay = yaml.safe_load(open(resolve_robot_path(GO1), encoding='utf-8'))
    overlay['legs'].update(edit)
    path = tmp_path / 'go1.yaml'
    path.write_text(yaml.safe_dump(overlay))
    with pytest.raises(DescriptionError) as raised:
        load_robot(str(path))
    assert key in str(raised.value) and '\n' not in str(raised.value), str(raised.value)
