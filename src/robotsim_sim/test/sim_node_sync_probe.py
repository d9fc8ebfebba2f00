"""Drives the simulator node in this process through episode resets, step by step, and prints (JSON) the
setpoint periods whose start the lockstep links were synced at, with the sim time reached: one reset lands the new
episode's start (a step after the last one's end) on a period's start, another inside a period. With a world file
as its argument (a timestep that does not divide the period), it steps 150 ms of that world without a reset. Run by
test_sim_node_reset.py in a fresh interpreter (its own rclpy context)."""

import json
import os
import shutil
import sys
import tempfile

import rclpy

from robotsim_firmware.base_commands import SETPOINT_PERIOD
from robotsim_msgs.srv import Reset
from robotsim_sim.ros.sim_node import SimNode

# The firmware in the loop with its link in lockstep, on a link of this probe's own; no bridge connects, so the link
# never waits (the sync points are what is measured).
link = os.path.join(tempfile.mkdtemp(prefix='robotsim_sync_probe_'), 'tty')
rclpy.init(args=['--ros-args', '-p', 'real_time_factor:=0.0', '-p', 'start_paused:=true', '-p', 'cameras:=false',
                 '-p', 'firmware:=true', '-p', f'serial_link:={link}']
           + (['-p', f'world:={sys.argv[1]}'] if len(sys.argv) > 1 else []))
node = SimNode()
synced = []
sync_firmware = node.sim.sync_firmware


def recording(publish_clock, repeat_clock, period):
    synced.append(period)
    return sync_firmware(publish_clock, repeat_clock, period)


node.sim.sync_firmware = recording
period_steps = round(SETPOINT_PERIOD * 1e9) // node.sim.timestep_ns
try:
    if len(sys.argv) > 1:
        while node.total_time_ns() < 150_000_000:
            node.advance()
        raise SystemExit(print(json.dumps({'synced_periods': synced, 'timestep_ns': node.sim.timestep_ns})))
    for _ in range(2 * period_steps - 1):  # the next episode starts a step later: on the third period's start
        node.advance()
    node.on_reset(Reset.Request(), Reset.Response())
    landed = node.total_time_ns()
    for _ in range(period_steps + 3):  # the next episode starts inside a period
        node.advance()
    node.on_reset(Reset.Request(), Reset.Response())
    for _ in range(2 * period_steps):
        node.advance()
    result = {'synced_periods': synced, 'reset_onto_period_start_ns': landed, 'reached_ns': node.total_time_ns(),
              'period_ns': round(SETPOINT_PERIOD * 1e9), 'lockstep': node.sim.options.firmware_lockstep}
finally:
    node.sim.close()
    node.destroy_node()
    rclpy.shutdown()
    shutil.rmtree(os.path.dirname(link), ignore_errors=True)
print(json.dumps(result))
