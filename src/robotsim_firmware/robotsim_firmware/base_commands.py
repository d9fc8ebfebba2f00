"""What the motor bridge sends the base MCU, ROS-free: the speed loop's gains and, every setpoint period, the
wheel speeds of the commanded twist (slewed at the drive's limits, through the drive's inverse kinematics).

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

    def velocity(self, sequence: int, linear: float, angular: float) -> bytes:
        """SET_VELOCITY for the commanded twist (0, 0 when the command is stale), one setpoint period on."""
        linear, angular = self.limiter(linear, angular, SETPOINT_PERIOD)
        targets = inverse_kinematics(self.drive, linear, angular)
        self.setpoints = [targets.wheel_speeds[joint] for joint in self.wheel_joints]
        return protocol.set_velocity(sequence, self.setpoints)
