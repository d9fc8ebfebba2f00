"""Same seed and the same commands in step mode: two simulator processes publish byte-identical
sensor messages (the serialized bytes as received off the wire). A different seed changes the
noise, so the comparison can fail."""

from geometry_msgs.msg import Twist
from rclpy.serialization import deserialize_message
from sensor_msgs.msg import Image, Imu, LaserScan
from trajectory_msgs.msg import JointTrajectory, JointTrajectoryPoint

from robotsim_msgs.srv import Step
from rostest_helpers import SENSOR, NodeProcess, Observer

TOPICS = {'/scan': LaserScan, '/imu/data': Imu, '/camera/image_raw': Image, '/camera/depth/image_raw': Image}


def by_stamp(raw: bytes, msg_type) -> tuple[tuple[int, int], bytes]:
    stamp = deserialize_message(raw, msg_type).header.stamp
    return (stamp.sec, stamp.nanosec), bytes(raw)


def record_run(seed: int) -> dict[str, dict[tuple, bytes]]:
    obs = Observer(f'determinism_{seed}')
    for topic, kind in TOPICS.items():
        obs.watch(topic, kind, SENSOR, raw=True)
    cmd = obs.node.create_publisher(Twist, '/cmd_vel', 10)
    arm = obs.node.create_publisher(JointTrajectory, '/arm_controller/joint_trajectory', 10)
    try:
        with NodeProcess('robotsim_sim', 'sim_node', {'seed': seed, 'start_paused': True}):
            assert obs.spin_until(lambda: all(obs.node.count_publishers(t) for t in TOPICS)
                                  and cmd.get_subscription_count() and arm.get_subscription_count(), 30)
            obs.spin_for(0.5)
            trajectory = JointTrajectory(joint_names=['arm_shoulder_joint', 'arm_elbow_joint'])
            trajectory.points = [JointTrajectoryPoint(positions=[0.4, -0.6])]
            trajectory.points[0].time_from_start.sec = 1
            arm.publish(trajectory)
            for linear, angular in [(0.2, 0.0), (0.2, 0.5), (-0.1, -0.3), (0.0, 0.0)]:
                twist = Twist()
                twist.linear.x, twist.angular.z = linear, angular
                cmd.publish(twist)
                obs.spin_for(0.3)  # paused: the command lands before any further step
                for _ in range(20):  # small steps: fewer best-effort images dropped in bursts
                    response = obs.call(Step, '/sim/step', Step.Request(steps=10))
                    assert response.success
                    obs.spin_for(0.03)
            obs.spin_for(0.5)
    finally:
        obs.close()
    return {topic: dict(by_stamp(raw, TOPICS[topic]) for raw in obs.messages[topic]) for topic in TOPICS}


def test_same_seed_same_bytes_different_seed_different_noise():
    first, second, other = record_run(42), record_run(42), record_run(43)
    for topic in TOPICS:
        a, b = first[topic], second[topic]
        common = set(a) & set(b)
        # Sensor topics are best-effort (as on the robot): compare what both runs received.
        assert len(common) >= 0.5 * max(len(a), len(b)) and len(common) >= 3, (topic, len(a), len(b))
        assert all(a[stamp] == b[stamp] for stamp in common), f'{topic} differs between identical runs'
    scans_differ = [first['/scan'][s] != other['/scan'][s] for s in set(first['/scan']) & set(other['/scan'])]
    assert scans_differ and all(scans_differ), 'another seed must give other lidar noise'
