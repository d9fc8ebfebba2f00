"""How far a planar base's wheel odometry may be off: the covariances of its nav_msgs/Odometry (ROS-free).

Wheel odometry of a skid-steer base is wrong in a way that grows: the tyres scrub sideways when it turns, so
the yaw it reports drifts by a few per cent of the angle turned, and every heading error becomes a position
error as it drives on. :class:`OdometryUncertainty` turns that into standard deviations that grow with the
distance travelled and the angle turned since the odometry started (``WheelOdometry.travelled`` and
``.turned``), and into standard deviations of the measured speeds that grow with the yaw rate. Axes a planar
base does not observe (z, roll, pitch; the vertical speed and the roll and pitch rates) carry
:data:`UNMEASURED_VARIANCE`, the large variance by which drivers mark an axis as not measured, so an EKF
(robot_localization) that fuses them by mistake gives them no weight.

The default figures are measured, not chosen: the rover's odometry against the simulator's ground truth on
seven manoeuvres of 10 s from rest (spins at 0.7 and -1.2 rad/s, arcs (0.3, 0.5), (0.4, -0.3), (0.2, 1.0),
(-0.3, 0.2) m/s and rad/s, straight at 0.4 m/s), with the built-in base controller and with the firmware in
the loop. Largest errors seen: yaw 8.5 % of the angle turned (firmware in the loop, spinning at 1.2 rad/s),
position 4.8 cm after spinning 11 rad on the spot and 19 cm after a 4 m arc, forward speed 0.019 m/s and
sideways slip 0.028 m/s (standard deviations over the 50 Hz samples), yaw rate 0.17 rad/s (root mean square)
at 1.2 rad/s. Each figure below is set at or above the largest error seen, so that every one of those errors
is within one standard deviation. ``src/robotsim_sim/test/test_odometry_uncertainty.py`` checks them on four
other manoeuvres (a spin at 1 rad/s, three arcs; 8 s from rest) in both modes: the pose errors stayed within
0.8 standard deviations, and the speed and yaw rate within two in at least 98 % of the samples. Another robot
or floor: measure it the same way (the test shows how).
"""

from __future__ import annotations

from dataclasses import dataclass

UNMEASURED_VARIANCE = 1e6
"""Variance of an axis the odometry does not measure (m², rad², (m/s)², (rad/s)²)."""


@dataclass(frozen=True)
class OdometryUncertainty:
    """Standard deviations of a planar base's wheel odometry, as they grow with what it did."""

    position_floor: float = 0.01
    """Standard deviation of x and y (m) at the start."""
    position_per_metre: float = 0.08
    """Growth of the standard deviation of x and y (m) per metre travelled."""
    position_per_radian: float = 0.006
    """Growth of the standard deviation of x and y (m) per radian turned (a base spinning on the spot wanders)."""
    heading_floor: float = 0.01
    """Standard deviation of the yaw (rad) at the start."""
    heading_per_radian: float = 0.09
    """Growth of the standard deviation of the yaw (rad) per radian turned: tyre scrub."""
    heading_per_metre: float = 0.01
    """Growth of the standard deviation of the yaw (rad) per metre travelled."""
    forward_speed: float = 0.02
    """Standard deviation of the forward speed (m/s)."""
    sideways_speed: float = 0.03
    """Standard deviation of the sideways speed (m/s): reported 0, the tyres slip sideways when turning."""
    yaw_rate_floor: float = 0.05
    """Standard deviation of the yaw rate (rad/s) at rest."""
    yaw_rate_fraction: float = 0.12
    """Growth of the standard deviation of the yaw rate per rad/s of yaw rate."""

    def pose_variances(self, travelled: float, turned: float) -> tuple[float, ...]:
        """Variances of (x, y, z, roll, pitch, yaw) after ``travelled`` m and ``turned`` rad since the start."""
        position = self.position_floor + self.position_per_metre * travelled + self.position_per_radian * turned
        heading = self.heading_floor + self.heading_per_radian * turned + self.heading_per_metre * travelled
        return (position ** 2, position ** 2, UNMEASURED_VARIANCE, UNMEASURED_VARIANCE, UNMEASURED_VARIANCE,
                heading ** 2)

    def twist_variances(self, yaw_rate: float) -> tuple[float, ...]:
        """Variances of (forward, sideways, vertical speed, roll, pitch, yaw rate) at ``yaw_rate`` rad/s."""
        rate = self.yaw_rate_floor + self.yaw_rate_fraction * abs(yaw_rate)
        return (self.forward_speed ** 2, self.sideways_speed ** 2, UNMEASURED_VARIANCE, UNMEASURED_VARIANCE,
                UNMEASURED_VARIANCE, rate ** 2)


ENCODER_HEADING = OdometryUncertainty()
"""Turns counted by the wheel encoders (the built-in base controller; the firmware before its gyro is ready)."""
GYRO_HEADING = OdometryUncertainty(heading_per_radian=0.015, yaw_rate_floor=0.01, yaw_rate_fraction=0.05)
"""Turns measured by the base MCU's gyro (the motor bridge's odometry once the gyro's bias is known): the heading no
longer drifts with tyre scrub, only with the gyro's scale error (+-1 % drawn per power-on, robotsim_firmware's
BoardGyro) and its lag. Measured on the same seven manoeuvres with gyro seeds 1 and 2: yaw 0.24-0.42 % of the angle
turned (plus the seed's scale error, within 1 %), yaw rate 0.045 rad/s root mean square at 1.2 rad/s (0.013 at
0.2 rad/s); the speeds and positions are the wheels', as above."""
