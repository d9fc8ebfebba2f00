"""Names of MuJoCo elements are owned once (robotsim_core/mjcf.py names them, robotsim_sim/binding.py
turns them into ids), and the scene is composed with MuJoCo's model-editing API."""

from __future__ import annotations

import ast
import math

import mujoco
import pytest

from robotsim_core.description import load_robot
from robotsim_core.description.mjcf import free_joint_name, position_servo_name, wheel_motor_name
from robotsim_sim.binding import RobotBinding, entity_free_joint
from robotsim_sim.scene import RobotPlacement, build_scene, compile_scene, load_world, resolve_world_path
from robotsim_core.description.world_spec import SpawnSpec
from test_layering import python_modules

NAMING_SUFFIXES = ('_freejoint', '_motor', '_position')


def test_element_names_are_written_in_one_module():
    """No module but the MJCF builder spells an element-name suffix: others call its naming functions."""
    offenders = []
    for module, path in python_modules():
        if module == 'robotsim_core.description.mjcf':
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value.endswith(NAMING_SUFFIXES):
                offenders.append(f'{path.relative_to(path.parents[3])}:{node.lineno} {node.value!r}')
    assert not offenders, 'element names spelled outside robotsim_core/mjcf.py:\n' + '\n'.join(offenders)


def two_rovers_scene():
    world = load_world(resolve_world_path('room'))
    placements = [RobotPlacement(load_robot('rover'), 'robot1', SpawnSpec((-1.0, 0.0, 0.0), 0.0)),
                  RobotPlacement(load_robot('rover'), 'robot2', SpawnSpec((1.0, 0.0, 0.0), math.pi))]
    spec = build_scene(world, placements)
    return spec, compile_scene(spec, world, placements), placements


def test_binding_indexes_each_robots_own_elements():
    spec, model, placements = two_rovers_scene()
    rover = placements[0].model
    bindings = [RobotBinding.bind(model, p.model, p.prefix) for p in placements]
    for placement, binding in zip(placements, bindings):
        prefix = placement.prefix
        assert model.body(binding.root_body).name == prefix + rover.body_name(rover.tree.root())
        assert model.joint(binding.root_joint).name == prefix + free_joint_name(rover.tree.root())
        assert model.jnt_type[binding.root_joint] == mujoco.mjtJoint.mjJNT_FREE
        for joint, joint_id in binding.joints.items():
            assert model.joint(joint_id).name == prefix + joint
            assert (binding.qpos[joint], binding.dofs[joint]) == (model.jnt_qposadr[joint_id], model.jnt_dofadr[joint_id])
        for joint, actuator in binding.wheel_motors.items():
            assert model.actuator(actuator).name == prefix + wheel_motor_name(joint)
            assert model.actuator_trnid[actuator, 0] == binding.joints[joint]
        for joint, actuator in binding.position_servos.items():
            assert model.actuator(actuator).name == prefix + position_servo_name(joint)
            assert model.actuator_trnid[actuator, 0] == binding.joints[joint]
        assert {model.body(b).name for b in binding.bodies.values()} == {prefix + rover.body_name(link)
                                                                         for link in binding.bodies}
    assert len(bindings[0].wheel_motors) == 4 and len(bindings[0].position_servos) >= 3
    # The two robots' ids are disjoint: nothing of robot2 is reached through robot1's table.
    assert not set(bindings[0].joints.values()) & set(bindings[1].joints.values())
    assert not set(bindings[0].wheel_motors.values()) & set(bindings[1].wheel_motors.values())
    # Each robot stands at its spawn (attached under its prefix, placed before attaching).
    data = mujoco.MjData(model)
    mujoco.mj_forward(model, data)
    assert data.xpos[bindings[0].root_body][0] == pytest.approx(-1.0)
    assert data.xpos[bindings[1].root_body][0] == pytest.approx(1.0)
    # The spec keeps every robot's elements under its prefix (what MJCF export of the scene shows).
    assert spec.joint('robot2/' + free_joint_name(rover.tree.root())) is not None


def test_entities_are_found_by_their_free_joint():
    world = load_world(resolve_world_path('room'))
    placements = [RobotPlacement(load_robot('rover'))]
    model = compile_scene(build_scene(world, placements), world, placements)
    movable = [box.name for box in world.boxes if box.mass > 0]
    assert movable, 'the room world has no movable box to look up'
    for name in movable:
        assert model.body(model.jnt_bodyid[entity_free_joint(model, name)]).name == name
    with pytest.raises(KeyError):
        entity_free_joint(model, 'floor')
