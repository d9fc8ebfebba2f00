"""Encoder odometry -> nav_msgs/Odometry and its odom -> base_footprint transform (REP 105).

The one builder of these messages for every publisher of encoder odometry: the simulator
(``robotsim_sim.ros.robot_messages.RobotMessages.base_state``, hence also the dataset fast path) and
the motor bridge (``robotsim_firmware.ros.bridge_node``, in firmware-in-the-loop and on the robot).
Both integrate the same :class:`robotsim_core.drive.WheelOdometry` and publish the same
covariances, so a consumer (an EKF, nav2) sees the simulated and the real base alike.

Covariances (``Odometry.pose.covariance``, ``Odometry.twist.covariance``): a 6x6 matrix, row-major,
over (x, y, z, rotation about x, about y, about z); pose in the ``odom`` frame (m, rad), twist in
the child (body) frame (m/s, rad/s). Only the diagonal is set, at indices 0, 7, 14, 21, 28, 35:
errors are taken as independent. Every diagonal entry is the same fixed variance, the value both
publishers used before they shared this module (the simulator's wire bytes are unchanged by it):

- ``POSE_VARIANCE`` 1e-3 (m², rad²: a standard deviation of 3.2 cm, 1.8°) and ``TWIST_VARIANCE``
  1e-3 ((m/s)², (rad/s)²: 3.2 cm/s, 1.8°/s) are round figures, not fitted to measurements; they are
  kept because they are what both publishers sent. For scale: encoder quantisation alone is far
  smaller (one count of 8192 per revolution in the firmware's 10 ms speed window is 3.5 mm/s on the
  rover's 4.5 cm wheels), so the twist figure leaves room for slip; and dead reckoning drifts
  without bound, so no fixed pose variance holds for long: this one says "trust it locally", which
  is how consumers use wheel odometry (fused as velocities or differentially).
- z, roll and pitch are not observed by a planar base (the message holds 0 there) and carry the
  same 1e-3, not the very large variance some drivers put there: a filter fusing this message must
  be told to ignore those axes (robot_localization: ``two_d_mode``), not infer it from here.
  Changing any of these values changes every /odom message on the wire.
"""

from __future__ import annotations

from builtin_interfaces.msg import Time
from nav_msgs.msg import Odometry
from tf2_msgs.msg import TFMessage

from .common import stamp_fields, transform, yaw_quaternion
from .wire import FixedLayout

POSE_VARIANCE = 1e-3
"""Variance of each diagonal entry of the pose covariance (m², rad²; see the module docstring)."""
TWIST_VARIANCE = 1e-3
"""Variance of each diagonal entry of the twist covariance ((m/s)², (rad/s)²; see the module docstring)."""
_DIAGONAL = (0, 7, 14, 21, 28, 35)
"""Indices of a row-major 6x6 matrix's diagonal."""


class OdometryEncoder:
    """The /odom message and the /tf message (``odom_frame`` -> ``child_frame``) of planar encoder
    odometry, serialized (robotsim_core.ros.wire: numbers written into a template of the frames and
    the covariances, 50 Hz for every robot)."""

    def __init__(self, odom_frame: str, child_frame: str):
        prototype = Odometry(child_frame_id=child_frame)
        prototype.header.frame_id = odom_frame
        for covariance, variance in ((prototype.pose.covariance, POSE_VARIANCE),
                                     (prototype.twist.covariance, TWIST_VARIANCE)):
            covariance[list(_DIAGONAL)] = variance
        self.odometry = FixedLayout(prototype, ['header.stamp', 'pose.pose.position.x', 'pose.pose.position.y',
                                                'pose.pose.orientation.z', 'pose.pose.orientation.w',
                                                'twist.twist.linear.x', 'twist.twist.angular.z'])
        # REP 105: odom -> the URDF root (base_footprint, itself the parent of base_link).
        self.tf = FixedLayout(TFMessage(transforms=[transform(odom_frame, child_frame, (0, 0, 0), (0, 0, 0, 1), Time())]),
                              ['transforms[0].header.stamp', 'transforms[0].transform.translation.x',
                               'transforms[0].transform.translation.y', 'transforms[0].transform.rotation.z',
                               'transforms[0].transform.rotation.w'])

    def encode(self, x: float, y: float, yaw: float, forward_speed: float, yaw_rate: float,
               stamp_ns: int) -> tuple[bytes, bytes]:
        """Pose ``x``, ``y`` (m), ``yaw`` (rad) in the odom frame; ``forward_speed`` (m/s) and
        ``yaw_rate`` (rad/s) in the body frame; both stamped ``stamp_ns``. z, roll and pitch are 0."""
        sec, nanosec = stamp_fields(stamp_ns)
        x, y = float(x), float(y)
        _, _, qz, qw = yaw_quaternion(yaw)
        return (self.odometry.encode(sec, nanosec, x, y, qz, qw, float(forward_speed), float(yaw_rate)),
                self.tf.encode(sec, nanosec, x, y, qz, qw))
