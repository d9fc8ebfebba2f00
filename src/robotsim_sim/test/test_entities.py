"""robotsim_sim.entities alone: named access to a world's movable things on a compiled MuJoCo scene, with no
Simulation (no controllers, sensors or firmware); and a Simulation closing what it made."""

from __future__ import annotations

import mujoco
import numpy as np
import pytest

from robotsim_core.description import load_robot
from robotsim_core.errors import DescriptionError
from types import SimpleNamespace

from robotsim_sim.compiled_scene import CompiledScene
from robotsim_sim.entities import Entities
from robotsim_sim.scene import RobotPlacement, load_world, resolve_world_path
from robotsim_sim.simulation import SimOptions, Simulation


def room_entities() -> Entities:
    """The room with the rover at its spawn, compiled: the entities of its model and initial state."""
    world = load_world(resolve_world_path('room'))
    placement = RobotPlacement(load_robot('rover'))
    scene = CompiledScene.compile(world, [placement])
    data = mujoco.MjData(scene.model)
    mujoco.mj_forward(scene.model, data)
    binding = scene.bindings[0]
    robot = SimpleNamespace(root_dof=binding.root_dof, root_body=binding.root_body, binding=binding,
                            placement=placement, model=placement.model)  # what Entities reads of a robot
    return Entities(scene.model, data, world, [robot])


def test_free_bodies_are_named_posed_and_moved_by_the_one_rule():
    entities = room_entities()
    names = set(entities.entity_joints())
    assert names == set(entities.world_entity_joints()) | {'rover'}
    assert 'toy_box' in names and 'crate' not in names  # the crate is static
    low, high = entities.world_bounds()
    np.testing.assert_allclose(low, (-6, -6, 0))
    np.testing.assert_allclose(high, (6, 6, 12))
    position, quaternion = entities.entity_pose('toy_box')
    assert [name for name, _, _ in entities.world_entity_poses()] == list(entities.world_entity_joints())
    assert "no entity 'nothing'" in entities.entity_pose('nothing') and 'toy_box' in entities.entity_pose('nothing')
    inside = entities.set_entity_pose('toy_box', (1.6, 0.9, 0.1), (1.0, 0.0, 0.0, 0.0))
    assert "inside 'crate'" in inside and "nothing moved" in inside, inside
    np.testing.assert_array_equal(entities.entity_pose('toy_box')[0], position)
    assert 'outside the world' in entities.set_entity_pose('toy_box', (7.0, 0.0, 0.1), quaternion)
    assert 'quaternion' in entities.set_entity_pose('toy_box', (0.5, 0.8, 0.1), (0.0, 0.0, 0.0, 0.0))
    assert entities.set_entity_pose('toy_box', (0.5, 0.8, 0.1), (2.0, 0.0, 0.0, 0.0)) is None
    moved, turned = entities.entity_pose('toy_box')
    np.testing.assert_allclose(moved, (0.5, 0.8, 0.1))
    np.testing.assert_allclose(turned, (1, 0, 0, 0))
    entities.refuse_overlaps_at_start()  # the room as shipped: nothing inside anything
    entities.data.qpos[entities.model.jnt_qposadr[entities.entity_joints()['toy_box']]] = 60.0
    with pytest.raises(DescriptionError, match="'toy_box' starts at .* outside the world"):
        entities.refuse_overlaps_at_start()


def test_a_simulation_closes_its_renderer_and_threads_once():
    world = load_world(resolve_world_path('room'))
    sim = Simulation(world, [RobotPlacement(load_robot('rover'))], SimOptions(camera_threads=False))
    assert sim.renderer is not None and sim.entities.robots is sim.robots
    sim.step()
    sim.close()
    assert sim.renderer is None
    sim.close()  # twice: nothing left to free, no error
