"""The legged demo through the ROS graph: `make sim ROBOT=go1` (scripts/run-sim.sh) starts the simulator, the state
publisher and the stand-up node; the Go1 rises and holds its stance, read on the topics a user reads."""

from __future__ import annotations

import math
import os

from nav_msgs.msg import Odometry
from robotsim_core.description import load_robot
from robotsim_core.description.urdf_import import lowest_point
from robotsim_msgs.msg import FootContacts, LegCommand

from rostest_helpers import RELIABLE, WORKSPACE, Launch, Observer, stamp_seconds

DURATION = 9.0
RISE_TIME = 1.5


def test_make_sim_with_a_quadruped_stands_it_up_and_a_bad_command_is_refused_without_stopping_it(tmp_path):
    robot = load_robot('go1')
    stance_height = -lowest_point(robot.tree, dict(zip(robot.legs.joints, robot.legs.stance)))
    observer = Observer('legged_test')
    observer.watch('/sim/ground_truth', Odometry)
    observer.watch('/foot_contacts', FootContacts)
    observer.watch('/odom', Odometry)
    publisher = observer.node.create_publisher(LegCommand, '/leg_command', RELIABLE)
    # Half real time: the stand-up node's commands arrive on time on a loaded machine too.
    run = Launch([str(WORKSPACE / 'scripts' / 'run-sim.sh')],
                 {'ROBOT': 'go1', 'DURATION': str(DURATION), 'RTF': '0.5', 'VIEW': '0',
                  'REPORT': str(tmp_path / 'report.png'), 'ROS_DOMAIN_ID': os.environ['ROS_DOMAIN_ID']})
    try:
        run.wait_for(r'\[stand_up\].*rising from the crouch', 120)
        truth = observer.messages['/sim/ground_truth']
        assert observer.spin_until(lambda: any(stamp_seconds(m.header.stamp) > RISE_TIME + 1.0 for m in truth), 120), \
            (len(truth), run.text)
        bad = LegCommand(name=['FR_calf_joint'], position=[math.nan], velocity=[0.0], kp=[10.0], kd=[1.0],
                         effort=[0.0])
        observer.spin_until(lambda: publisher.publish(bad) or 'refused leg_command' in run.text, 30)
        assert run.finish(timeout=120) == 0, run.text
        observer.spin_for(0.5)
    finally:
        run.stop()
        observer.close()
    text = run.text
    assert 'refused leg_command: position: expected finite values' in text and '1 rejected so far' in text, text
    truth = [(stamp_seconds(m.header.stamp), m.pose.pose) for m in observer.messages['/sim/ground_truth']]
    assert truth[-1][0] >= DURATION - 0.1, truth[-1][0]  # ran to the end after the refusal
    holding = [pose for t, pose in truth if t >= RISE_TIME + 0.5]
    assert len(holding) > 100
    trunk_offset = 0.0  # the root link 'base' sits at the trunk's origin (a fixed joint with no offset)
    heights = [pose.position.z + trunk_offset for pose in holding]
    assert max(abs(h - stance_height) for h in heights) <= 0.02, (min(heights), max(heights), stance_height)
    assert all(abs(pose.orientation.x) < 0.05 and abs(pose.orientation.y) < 0.05 for pose in holding)  # level
    contacts = [m for m in observer.messages['/foot_contacts'] if stamp_seconds(m.header.stamp) >= RISE_TIME + 0.5]
    assert contacts and all(list(m.name) == list(robot.legs.feet) and all(m.in_contact) for m in contacts)
    weight = sum(link.inertial.mass for link in robot.tree.links.values() if link.inertial) * 9.81
    assert abs(sum(contacts[-1].normal_force) - weight) < 0.05 * weight, list(contacts[-1].normal_force)
    assert contacts[-1].header.frame_id == 'trunk'
    # /odom: the root's true pose from the floor under its start (a perfect state estimator; no wheel encoders).
    odometry = [m for m in observer.messages['/odom'] if stamp_seconds(m.header.stamp) >= RISE_TIME + 0.5]
    assert odometry and odometry[-1].header.frame_id == 'odom' and odometry[-1].child_frame_id == robot.tree.root()
    last_truth = holding[-1]
    assert abs(odometry[-1].pose.pose.position.z - last_truth.position.z) < 1e-6  # spawned on the floor, heading x
    assert abs(odometry[-1].pose.pose.position.x) < 0.05 and abs(odometry[-1].pose.pose.position.y) < 0.05
