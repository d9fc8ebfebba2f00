"""What the motor bridge sends the base MCU, ROS-free: the speed loop's gains, the yaw loop's gains and each wheel's
share of a turn, and, every setpoint period, the wheel speeds of the commanded twist (slewed at the drive's limits,
through the drive's inverse kinematics) with the yaw rate they are meant to turn the base at.

The bridge node (``ros/bridge_node.py``) sends these frames over the serial link; the odometry trials
(robotsim_sim.odometry_trials) send the same frames to the firmware in the loop in-process, so that a
measurement of the firmware-driven base drives it as the bridge does.
"""

from __future__ import annotations

from robotsim_core.description.model import DriveRole
from robotsim_core.drive import VelocityLimiter, inverse_kinematics

from . import protocol

SETPOINT_PERIOD = 0.02
"""Seconds between SET_VELOCITY frames (50 Hz, well inside the firmware's watchdog)."""
SPEED_LOOP_GAINS = (0.3, 3.0, 0.0)
"""kp, ki, kd of the firmware's wheel speed loop (duty per rad/s of error, per rad of its integral, per rad/s²);
the feedforward is the inverse of the motor's no-load speed, from the robot description."""
YAW_LOOP_GAINS = (1.0, 4.0)
"""kp, ki of the firmware's yaw-rate loop on its gyro: the turn it adds (rad/s) per rad/s of yaw-rate error and per rad
of its integral. A skid-steer base scrubs its tyres and turns a few per cent slower than its wheels say, by an amount
that depends on floor, load and turn radius: the integral takes that up within about a second."""


class BaseCommands:
    """The frames the bridge sends for one base: owns the slew limiter's state."""

    def __init__(self, drive: DriveRole, wheel_joints: list[str], watchdog_ms: int = 300):
        self.drive, self.wheel_joints, self.watchdog_ms = drive, list(wheel_joints), watchdog_ms
        self.limiter = VelocityLimiter(drive)  # the drive's speed/acceleration limits, as in the sim
        self.setpoints = [0.0] * len(self.wheel_joints)
        """The wheel speeds (rad/s) of the last SET_VELOCITY, in channel order."""

    def gains(self, sequence: int) -> bytes:
        """SET_GAINS: the speed loop's gains, the feedforward through the motor's no-load speed, the watchdog."""
        kp, ki, kd = SPEED_LOOP_GAINS
        return protocol.set_gains(sequence, kp, ki, kd, 1.0 / self.drive.wheel_no_load_speed, self.watchdog_ms)

    def yaw_loop(self, sequence: int) -> bytes:
        """SET_YAW_LOOP: the yaw loop's gains and each channel's share of a base turn (wheel rad/s per base rad/s,
        the drive's inverse kinematics of a pure turn, with its effective track)."""
        turn = inverse_kinematics(self.drive, 0.0, 1.0).wheel_speeds
        return protocol.set_yaw_loop(sequence, *YAW_LOOP_GAINS, [turn[joint] for joint in self.wheel_joints])

    def velocity(self, sequence: int, linear: float, angular: float) -> bytes:
        """SET_VELOCITY for the commanded twist (0, 0 when the command is stale), one setpoint period on."""
        linear, angular = self.limiter(linear, angular, SETPOINT_PERIOD)
        targets = inverse_kinematics(self.drive, linear, angular)
        self.setpoints = [targets.wheel_speeds[joint] for joint in self.wheel_joints]
        return protocol.set_velocity(sequence, self.setpoints, angular)
