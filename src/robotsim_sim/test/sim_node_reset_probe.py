"""Drives the simulator node in this process around resets, step by step, and prints (JSON) what a
reset did: images of the ending episode published, the first stamp of the new episode against the
sim time reached before, the measured real-time factor after it, and where a ``duration`` run
stopped. Run by test_sim_node_reset.py in a fresh interpreter (its own rclpy context)."""

import json
import time

import rclpy
from rclpy.executors import SingleThreadedExecutor

from robotsim_msgs.srv import Reset
from robotsim_sim.ros.sim_node import SimNode

# clock_rate 10 Hz: /clock goes out with readings (IMU at 100 Hz) and seldom otherwise, so the sim
# time runs up to 4 steps ahead of the last /clock between readings.
rclpy.init(args=['--ros-args', '-p', 'real_time_factor:=0.0', '-p', 'start_paused:=true', '-p', 'clock_rate:=10.0',
                 '-p', 'duration:=2.0'])
node = SimNode()
result = {'images_out_at_reset': [], 'new_episode_start_after_time_reached_ns': []}
try:
    camera = next(item.capture for item in node.sim.robots[0].schedule if item.capture is not None)
    images = node.ports[0].pubs['camera/image_raw']
    for extra_steps in range(6):
        node.advance()
        while not camera.in_flight:  # a capture started at this step: still in flight
            node.advance()
        before = images.count
        node.on_reset(Reset.Request(), Reset.Response())
        result['images_out_at_reset'].append(images.count - before)
        for _ in range(7 + extra_steps):  # ends 0-4 steps after a reading
            node.advance()
        reached = node.total_time_ns()
        node.publish_status()  # stamped with the sim time reached
        node.on_reset(Reset.Request(), Reset.Response())
        result['new_episode_start_after_time_reached_ns'].append(node.stamp_ns(0) - reached)
    node.paused = False  # (a paused node reports no real-time factor)
    for _ in range(50):
        node.advance()
    node.publish_status()
    node.on_reset(Reset.Request(), Reset.Response())
    time.sleep(0.01)
    node.publish_status()
    result['real_time_factor_after_reset'] = node.measured_rtf
    # duration 2.0: the run ends when /clock reaches 2 s, counting the episodes before the last reset.
    total_before = node.total_time_ns()
    executor = SingleThreadedExecutor()
    executor.add_node(node)
    node.run(executor)
    result['clock_at_end_of_run_ns'] = node.total_time_ns()
    result['clock_at_last_reset_ns'] = total_before
finally:
    node.sim.close()
    node.destroy_node()
    rclpy.shutdown()
print(json.dumps(result))
