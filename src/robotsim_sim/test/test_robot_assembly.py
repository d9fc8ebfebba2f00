"""robotsim_sim.robot_assembly and robotsim_sim.instability alone: a robot's state by name, and MuJoCo's
reset after an instability noticed, recorded and owned by the right entity."""

from __future__ import annotations

import mujoco
import numpy as np
import pytest

from robotsim_core.description import load_robot
from robotsim_sim.compiled_scene import CompiledScene
from robotsim_sim.instability import InstabilityWatch
from robotsim_sim.robot_assembly import NamedAccess
from robotsim_sim.scene import RobotPlacement, load_world, resolve_world_path
from robotsim_sim.simulation import SimOptions, Simulation


def test_a_robots_joints_and_actuators_by_name():
    sim = Simulation(load_world(resolve_world_path('room')), [RobotPlacement(load_robot('rover'))],
                     SimOptions(cameras=False))
    try:
        named = sim.named()
        binding = sim.robots[0].binding
        wheel = sim.robots[0].model.drive.driven_wheels[0].joint
        arm_joint = sim.robots[0].model.arms[0].joints[1]
        for _ in range(50):
            sim.command_base(0, 0.3, 0.0)
            sim.step()
        assert named.qpos[wheel] == sim.data.qpos[binding.qpos[wheel]] != 0.0
        assert named.qvel[wheel] == sim.data.qvel[binding.dofs[wheel]] > 0.0
        named.ctrl[arm_joint] = 0.25
        assert sim.data.ctrl[binding.position_servos[arm_joint]] == 0.25
        assert set(named.ctrl.keys()) == set(binding.wheel_motors) | set(binding.position_servos)
        np.testing.assert_array_equal(named.body_position(sim.robots[0].model.tree.root()),
                                      sim.data.xpos[binding.root_body])
        with pytest.raises(KeyError, match=r"qpos: no 'elbow'; expected one of .*" + wheel):
            named.qpos['elbow']
        assert isinstance(named, NamedAccess)
    finally:
        sim.close()


def test_the_watch_notices_mujocos_reset_and_names_the_body():
    world = load_world(resolve_world_path('room'))
    scene = CompiledScene.compile(world, [RobotPlacement(load_robot('rover'))])
    model, data = scene.model, mujoco.MjData(scene.model)
    watch = InstabilityWatch(model, data, lambda root: 'rover' if root == scene.bindings[0].root_body else None)
    steps = 0
    for steps in range(1, 11):
        mujoco.mj_step(model, data)
        assert not watch.check(steps, steps * round(model.opt.timestep * 1e9))
    [toy] = [model.joint(j) for j in range(model.njnt) if 'toy_box' in model.joint(j).name]  # its free joint
    data.qvel[toy.dofadr[0]] = np.nan  # MuJoCo resets the world at the next step
    mujoco.mj_step(model, data)
    steps += 1
    assert watch.check(steps, steps * 2_000_000)
    [event] = watch.take()
    assert watch.count == 1 and not watch.pending
    assert 'toy_box' in event.entity and 'NaN' in event.what and event.stamp == steps * 2_000_000
    assert data.time == pytest.approx(steps * 2e-3)  # MuJoCo's clock put back to the simulation's
    mujoco.mj_step(model, data)
    assert not watch.check(steps + 1, (steps + 1) * 2_000_000)


def test_arm_goals_alone_on_an_assembled_robot():
    """robotsim_sim.arm_goals without a Simulation: a robot assembled on a compiled scene, the topic's rules for
    a trajectory (refused naming the joint, clamped at a limit once), the follower holding the result."""
    from robotsim_sim.arm_controller import GripperConfig, TrajectoryConstraints
    from robotsim_sim.arm_goals import ArmGoals
    from robotsim_sim.robot_assembly import AssemblyOptions, assemble_robot

    world = load_world(resolve_world_path('room'))
    placement = RobotPlacement(load_robot('rover'))
    scene = CompiledScene.compile(world, [placement])
    data = mujoco.MjData(scene.model)
    robots = []
    options = AssemblyOptions(joint_state_rate=50.0, odom_rate=50.0, command_timeout=0.5, firmware=False,
                              serial_link=None, seed=0, baud=115200, firmware_lockstep=False, firmware_build='host',
                              firmware_image='', power_board=False, cameras=False, camera_threads=False,
                              arm_constraints=TrajectoryConstraints(), allow_partial_joints_goal=False,
                              gripper=GripperConfig())
    robot = assemble_robot(0, placement, scene.bindings[0], scene.model, options, world.light, None,
                           scene.geom_labels, robots.append)
    try:
        assert robots == [robot]
        assert [item.channel for item in robot.schedule] == ['laser', 'imu']  # cameras off; no joint states here
        goals = ArmGoals(scene.model, data, robots, lambda: 1.0)
        joints = robot.arm.joints
        refused = goals.command(0, ['elbow_typo'], [(0.5, [0.1])])
        assert refused and 'elbow_typo' in refused, refused
        low, high = robot.joint_limits[joints[1]]
        assert goals.command(0, [joints[1]], [(0.5, [high + 1.0])]) is None
        assert robot.newly_clamped == [(joints[1], high + 1.0, high)]
        assert goals.command(0, [joints[1]], [(0.5, [high + 1.0])]) is None and robot.newly_clamped == []  # once
        desired = robot.arm.sample(2.0)  # the clock said 1.0: the point is due at 1.5
        assert desired is not None and desired.positions[1] == pytest.approx(high)
    finally:
        robot.close()
