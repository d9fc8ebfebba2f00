"""The bare-machine state publisher: /robot_description and one /tf_static message, both
transient-local, and /tf from /joint_states that reproduces the simulator's body poses."""

import mujoco
import numpy as np
import transforms3d.quaternions as t3q
from sensor_msgs.msg import JointState
from std_msgs.msg import String
from tf2_msgs.msg import TFMessage

from robotsim_core.description import load_robot
from robotsim_core.geometry import rotation_angle_between
from robotsim_core.description.urdf import urdf_to_tree
from robotsim_sim.scene import RobotPlacement, load_world, resolve_world_path
from robotsim_sim.simulation import SimOptions, Simulation
from rostest_helpers import LATCHED, RELIABLE, NodeProcess, Observer


def matrix(transform) -> np.ndarray:
    t, r = transform.translation, transform.rotation
    out = np.eye(4)
    out[:3, :3] = t3q.quat2mat((r.w, r.x, r.y, r.z))
    out[:3, 3] = (t.x, t.y, t.z)
    return out


def test_tf_tree_matches_simulator_body_poses():
    model = load_robot('rover')
    sim = Simulation(load_world(resolve_world_path('room')), [RobotPlacement(model)], SimOptions(cameras=False))
    rng = np.random.default_rng(7)
    positions = {}
    for joint in model.tree.moving_joints():
        if joint.mimic is None:
            limit = joint.limit
            bounded = joint.type != 'continuous' and limit is not None
            positions[joint.name] = rng.uniform(limit.lower, limit.upper) if bounded else rng.uniform(-9, 9)
    obs = Observer('state_publisher_test')
    obs.watch('/tf', TFMessage, RELIABLE)
    obs.watch('/tf_static', TFMessage, LATCHED)
    obs.watch('/robot_description', String, LATCHED)
    publisher = obs.node.create_publisher(JointState, '/joint_states', 10)
    try:
        with NodeProcess('robotsim_sim', 'state_publisher', {'robot': 'rover'}):
            assert obs.spin_until(lambda: publisher.get_subscription_count() > 0, 30)
            message = JointState(name=list(positions), position=list(positions.values()))
            message.header.stamp.sec = 12
            assert obs.spin_until(lambda: obs.messages['/tf_static'] and obs.messages['/robot_description'], 20)
            publisher.publish(message)
            assert obs.spin_until(lambda: obs.messages['/tf'], 20)
    finally:
        obs.close()
    assert len(obs.messages['/tf_static']) == 1, 'one latched /tf_static message'
    assert urdf_to_tree(obs.messages['/robot_description'][0].data, 'robot_description').name == 'rover'
    dynamic = obs.messages['/tf'][-1].transforms
    assert all(t.header.stamp.sec == 12 for t in dynamic), 'stamped with the joint states stamp'
    edges = {t.child_frame_id: (t.header.frame_id, matrix(t.transform))
             for t in list(obs.messages['/tf_static'][0].transforms) + list(dynamic)}
    assert set(edges) == set(model.tree.links) - {'base_footprint'}

    def pose(link):
        if link == 'base_footprint':
            return np.eye(4)
        parent, transform = edges[link]
        return pose(parent) @ transform

    # The same joint positions in MuJoCo (the right finger follows the left through its equality).
    for name, value in positions.items():
        sim.data.qpos[sim.model.jnt_qposadr[sim.model.joint(name).id]] = value
    finger = model.tree.joints['arm_right_finger_joint']
    sim.data.qpos[sim.model.jnt_qposadr[sim.model.joint(finger.name).id]] = positions[finger.mimic.joint]
    mujoco.mj_kinematics(sim.model, sim.data)
    root = sim.model.body('base_footprint').id
    root_pose = np.eye(4)
    root_pose[:3, :3], root_pose[:3, 3] = sim.data.xmat[root].reshape(3, 3), sim.data.xpos[root]
    for link in model.tree.links:
        body = sim.model.body(link).id
        expected = np.linalg.inv(root_pose)
        body_pose = np.eye(4)
        body_pose[:3, :3], body_pose[:3, 3] = sim.data.xmat[body].reshape(3, 3), sim.data.xpos[body]
        relative = expected @ body_pose
        assert np.linalg.norm(pose(link)[:3, 3] - relative[:3, 3]) < 1e-9, link
        assert rotation_angle_between(pose(link)[:3, :3], relative[:3, :3]) < 1e-9, link
