"""The default bringup (rover, firmware in the loop: the C firmware in the simulator, the motor bridge
in its own process) in step mode: two fresh bringups with the same seed and the same commands publish
byte-identical messages, the bridge's odometry too. The serial link runs in lockstep with the bridge
(docs/firmware.md): at every setpoint period the simulator waits for the bridge's frame, so when the
bridge process gets the CPU cannot change the physics, the handshake included (the bridge says HELLO while the
simulation waits at t = 0; docs/firmware.md). Halfway, a world reset (/sim/reset) reboots the MCU: the bridge says
HELLO again and the link waits for it, and the new episode starts on a setpoint period's start, which is synced
before its first step. A different seed changes the noise, so the comparison can fail."""

from __future__ import annotations

import math

import numpy as np
from diagnostic_msgs.msg import DiagnosticArray
from geometry_msgs.msg import Twist
from nav_msgs.msg import Odometry
from rclpy.duration import Duration
from rclpy.serialization import deserialize_message
from sensor_msgs.msg import Imu, LaserScan

from robotsim_msgs.srv import Reset, Step
from rostest_helpers import RELIABLE, SENSOR, Launch, Observer

TOPICS = {'/scan': (LaserScan, SENSOR), '/imu/data': (Imu, SENSOR), '/sim/ground_truth': (Odometry, RELIABLE),
          '/odom': (Odometry, RELIABLE)}
COMMANDS = [(0.25, 0.0), (0.2, 0.8), (-0.1, -0.5), (0.0, 0.0)]
RESET_AFTER = 2
"""A world reset after the second command's steps and 9 physics steps more (0.818 s of sim time: the new episode
starts a 2 ms step later, at the start of setpoint period 41 of 20 ms)."""
RESET_AT = 0.82
"""The sim time (s) the episode after the reset starts at."""


def by_stamp(raw: bytes, msg_type) -> tuple[tuple[int, int], bytes]:
    stamp = deserialize_message(raw, msg_type).header.stamp
    return (stamp.sec, stamp.nanosec), bytes(raw)


def record_run(seed: int, firmware: str = 'true') -> dict[str, dict[tuple, bytes]]:
    obs = Observer(f'fil_determinism_{seed}_{firmware}')
    for topic, (kind, qos) in TOPICS.items():
        obs.watch(topic, kind, qos, raw=True)
    obs.watch('/diagnostics', DiagnosticArray)
    cmd = obs.node.create_publisher(Twist, '/cmd_vel', RELIABLE)

    def accepted() -> int:
        """cmd_vel messages the motor bridge has taken, by its latest /diagnostics (once a second, wall time)."""
        counts = [int(value.value) for array in obs.messages['/diagnostics'] for status in array.status
                  if status.name.startswith('motor_bridge') for value in status.values if value.key == 'accepted_commands']
        return counts[-1] if counts else 0
    run = Launch(['robotsim', 'launch', 'sim', 'paused:=true', 'cameras:=false', f'seed:={seed}', f'firmware:={firmware}'])
    try:
        run.wait_for(r'motor_bridge.*saying hello', 120)  # its HELLO waits in the link for the first step
        assert obs.spin_until(lambda: all(obs.node.count_publishers(t) for t in TOPICS)
                              and any(info.node_name == 'motor_bridge'
                                      for info in obs.node.get_subscriptions_info_by_topic('/cmd_vel')), 60), run.text
        obs.spin_for(0.5)
        for sent, (linear, angular) in enumerate(COMMANDS, 1):
            twist = Twist()
            twist.linear.x, twist.angular.z = linear, angular
            cmd.publish(twist)
            # Paused: the command reaches the bridge before any further step (acknowledged by its reader, then taken
            # by its callback, as its /diagnostics count says: on a loaded machine the callback can run late).
            assert cmd.wait_for_all_acked(Duration(seconds=60))
            assert obs.spin_until(lambda: accepted() >= sent, 60), (sent, accepted(), run.text)
            for _ in range(8):  # 8 x 0.05 s: within the bridge's 0.5 s command timeout
                assert obs.call(Step, '/sim/step', Step.Request(steps=25), timeout=120).success
                obs.spin_for(0.03)
            if sent == RESET_AFTER:
                assert obs.call(Step, '/sim/step', Step.Request(steps=9), timeout=120).success
                reset = obs.call(Reset, '/sim/reset', Reset.Request(), timeout=120)
                assert reset.success, reset.message
                obs.spin_for(0.03)
        obs.spin_for(1.0)
    finally:
        run.stop()
        obs.close()
    assert 'link not in lockstep' not in run.text, run.text
    assert 'the MCU has reset; saying hello again' in run.text, run.text  # the world reset rebooted it
    return {topic: dict(by_stamp(raw, TOPICS[topic][0]) for raw in obs.messages[topic]) for topic in TOPICS}


def moved(run) -> tuple[float, float]:
    """(the farthest the base got from the world's origin, its spawn point, before the world reset; how far it
    turned after it, rad): the commands reached the wheels, before the reset and after the MCU's reboot."""
    before, yaws = 0.0, []
    for (sec, nanosec), raw in sorted(run['/sim/ground_truth'].items()):
        pose = deserialize_message(raw, Odometry).pose.pose
        if sec + nanosec * 1e-9 < RESET_AT:
            before = max(before, abs(pose.position.x) + abs(pose.position.y))
        else:
            yaws.append(2 * math.atan2(pose.orientation.z, pose.orientation.w))
    return before, float(np.ptp(np.unwrap(yaws))) if yaws else 0.0


def assert_identical(first, second) -> None:
    for topic in TOPICS:
        a, b = first[topic], second[topic]
        common = set(a) & set(b)
        # Sensor topics are best-effort (as on the robot): compare what both runs received.
        assert len(common) >= 0.5 * max(len(a), len(b)) and len(common) >= 10, (topic, len(a), len(b))
        differing = sorted(stamp for stamp in common if a[stamp] != b[stamp])
        assert not differing, f'{topic} differs between identical runs from {differing[0]} ({len(differing)} messages)'


def test_the_default_bringup_is_deterministic_in_step_mode_with_the_firmware_in_the_loop():
    first, second, other = record_run(7), record_run(7), record_run(8)
    assert_identical(first, second)
    # It moved (the commands reached the wheels through the firmware, after the reset too: the third command turns
    # at -0.5 rad/s for 0.4 s), and another seed is other noise.
    before, turned = moved(first)
    assert before > 0.1 and turned > 0.05, (before, turned)
    scans = set(first['/scan']) & set(other['/scan'])
    assert scans and all(first['/scan'][s] != other['/scan'][s] for s in scans)


def test_the_bringup_with_the_mcu_image_under_qemu_is_deterministic_in_step_mode():
    """firmware:=qemu: the image's loops are locked to sim time and each waits for the host bytes the link delivered
    before it, so the bridge's process and QEMU's I/O thread cannot change what the physics sees."""
    first, second = record_run(7, 'qemu'), record_run(7, 'qemu')
    assert_identical(first, second)
    before, turned = moved(first)
    assert before > 0.1 and turned > 0.05, (before, turned)
