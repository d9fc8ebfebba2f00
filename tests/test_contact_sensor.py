"""The ``contact`` (bumper) sensor kind: a racer with a contact sensor on its chassis carries a 1.5 kg box and
drives into a crate. The sensor names what touches (the box, then the crate), the normals point into the chassis,
and the box's weight is what the chassis feels (within 1 %); through the simulator node it arrives as
``ros_gz_interfaces/msg/Contacts``, the message ros_gz_bridge gives a Gazebo contact sensor."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import yaml
from rclpy.serialization import deserialize_message, serialize_message

from robotsim_core.description import load_robot
from robotsim_sim.scene import RobotPlacement, load_world
from robotsim_sim.simulation import SimOptions, Simulation
from rostest_helpers import SENSOR, NodeProcess, Observer

WORKSPACE = Path(__file__).resolve().parents[1]
LOAD_MASS = 1.5
GRAVITY = 9.81


@pytest.fixture(scope='module')
def files(tmp_path_factory):
    folder = tmp_path_factory.mktemp('contact')
    robot = yaml.safe_load((WORKSPACE / 'config' / 'robots' / 'racer.yaml').read_text())
    robot['sensors'] = [{'type': 'contact', 'name': 'bumper', 'parent': 'base_link', 'rate': 50,
                         'pose': {'xyz': [0.1, 0.0, 0.0]}}]
    (folder / 'robot.yaml').write_text(yaml.safe_dump(robot))
    (folder / 'world.yaml').write_text(yaml.safe_dump({
        'name': 'bumper_test', 'floor': {'size': [8, 8]},
        'boxes': [{'name': 'load', 'position': [0.0, 0.0, 0.4], 'size': [0.12, 0.12, 0.1], 'mass': LOAD_MASS},
                  {'name': 'crate', 'position': [1.2, 0.0, 0.25], 'size': [0.3, 1.0, 0.5]}]}))
    return folder / 'robot.yaml', folder / 'world.yaml'


def readings(sim: Simulation, seconds: float, command=None) -> list:
    found = []
    end = sim.time_ns + round(seconds * 1e9)
    while sim.time_ns < end:
        if command:
            sim.command_base(0, *command)
        for event in sim.step():
            if event.channel == 'bumper':
                found.append(event.reading)
    return found


def test_the_bumper_names_what_touches_and_feels_the_load(files):
    robot, world = files
    sim = Simulation(load_world(str(world)), [RobotPlacement(load_robot(str(robot)))], SimOptions(seed=0, cameras=False))
    try:
        settled = readings(sim, 1.5)[-1]
        assert settled.link == 'base_link' and [touch.other for touch in settled.touches] == ['load']
        load = settled.touches[0]
        assert load.other_id == sim.model.body('load').id
        # At rest the chassis carries the box's weight, pressed down into it (sensor frame = base_link turned by 0).
        assert load.forces.sum(axis=0) == pytest.approx([0.0, 0.0, -LOAD_MASS * GRAVITY], abs=0.01 * LOAD_MASS * GRAVITY)
        assert np.allclose(load.normals, [0.0, 0.0, -1.0], atol=1e-6)
        assert np.all(np.abs(load.depths) < 0.005)
        # The points lie on the chassis' top face, in the sensor frame 0.1 m ahead of base_link.
        assert np.allclose(load.positions[:, 0], -0.1, atol=0.07) and np.ptp(load.positions[:, 2]) < 1e-3
        # Torques are about the sensor frame's origin: the weight 0.1 m behind it tips the nose up (-y torque).
        assert load.torques.sum(axis=0) == pytest.approx([0.0, -0.1 * LOAD_MASS * GRAVITY, 0.0], abs=0.02)
        pushed = [r for r in readings(sim, 6.0, (0.4, 0.0)) if any(t.other == 'crate' for t in r.touches)]
        assert pushed, 'the racer never touched the crate'
        crate = next(t for t in pushed[-1].touches if t.other == 'crate')
        assert crate.other_id == 0  # a fixed box is a static shape of the world
        assert np.all(crate.normals[:, 0] < -0.99) and crate.forces.sum(axis=0)[0] < -1.0
        assert np.allclose(crate.positions[:, 0], 0.2 - 0.1, atol=0.01)  # the chassis' front face, 0.2 m ahead
    finally:
        sim.close()


def test_a_threshold_hides_light_touches(files, tmp_path):
    robot, world = files
    spec = yaml.safe_load(Path(robot).read_text())
    spec['sensors'][0]['force_threshold'] = 2 * LOAD_MASS * GRAVITY
    (tmp_path / 'robot.yaml').write_text(yaml.safe_dump(spec))
    sim = Simulation(load_world(str(world)), [RobotPlacement(load_robot(str(tmp_path / 'robot.yaml')))],
                     SimOptions(seed=0, cameras=False))
    try:
        assert readings(sim, 1.5)[-1].touches == []
    finally:
        sim.close()


def test_the_simulator_publishes_ros_gz_contacts(files):
    from ros_gz_interfaces.msg import Contacts

    robot, world = files
    node = NodeProcess('robotsim_sim', 'sim_node', {'robot': str(robot), 'world': str(world)})
    observer = Observer('contact_test')
    observer.watch('/bumper/contacts', Contacts, SENSOR)
    try:
        def settled():
            messages = observer.messages['/bumper/contacts']
            return messages and messages[-1].header.stamp.sec >= 2
        assert observer.spin_until(settled, 90), node.output()[-3000:]
        message = observer.messages['/bumper/contacts'][-1]
        assert message.header.frame_id == 'bumper_link'
        (contact,) = message.contacts
        assert (contact.collision1.name, contact.collision1.type) == ('base_link', contact.collision1.LINK)
        assert (contact.collision2.name, contact.collision2.type) == ('load', contact.collision2.LINK)
        assert len(contact.positions) == len(contact.normals) == len(contact.depths) == len(contact.wrenches) > 0
        weight = sum(wrench.body_1_wrench.force.z for wrench in contact.wrenches)
        assert weight == pytest.approx(-LOAD_MASS * GRAVITY, rel=0.01)
        assert all(w.body_2_wrench.force.z == -w.body_1_wrench.force.z for w in contact.wrenches)
        assert contact.wrenches[0].body_2_name.data == 'load'
        assert deserialize_message(serialize_message(message), Contacts) == message
    finally:
        observer.close()
        node.stop()
