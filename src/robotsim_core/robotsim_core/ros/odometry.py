"""Encoder odometry -> nav_msgs/Odometry and its odom -> base_footprint transform (REP 105).

The one builder of these messages for every publisher of encoder odometry: the simulator
(``robotsim_sim.ros.robot_messages.RobotMessages.base_state``, hence also the dataset fast path) and
the motor bridge (``robotsim_firmware.ros.bridge_node``, in firmware-in-the-loop and on the robot).
Both integrate the same :class:`robotsim_core.drive.WheelOdometry` and publish the same
covariances, so a consumer (an EKF, nav2) sees the simulated and the real base alike.

Covariances (``Odometry.pose.covariance``, ``Odometry.twist.covariance``): a 6x6 matrix, row-major,
over (x, y, z, rotation about x, about y, about z); pose in the ``odom`` frame (m, rad), twist in
the child (body) frame (m/s, rad/s). Only the diagonal is set, at indices 0, 7, 14, 21, 28, 35:
errors are taken as independent. The pose's grow with the distance travelled and the angle turned
since the odometry started, the yaw rate's with the yaw rate; z, roll and pitch and their rates are
marked unmeasured (a variance of 1e6). The figures and how they were measured:
:mod:`robotsim_core.odometry_uncertainty`.
"""

from __future__ import annotations

from builtin_interfaces.msg import Time
from nav_msgs.msg import Odometry
from tf2_msgs.msg import TFMessage

from ..odometry_uncertainty import OdometryUncertainty
from .common import stamp_fields, transform, yaw_quaternion
from .wire import FixedLayout

_DIAGONAL = (0, 7, 14, 21, 28, 35)
"""Indices of a row-major 6x6 matrix's diagonal."""


class OdometryEncoder:
    """The /odom message and the /tf message (``odom_frame`` -> ``child_frame``) of planar encoder
    odometry, serialized (robotsim_core.ros.wire: numbers written into a template of the frames and
    the covariances, 50 Hz for every robot)."""

    def __init__(self, odom_frame: str, child_frame: str, uncertainty: OdometryUncertainty | None = None):
        prototype = Odometry(child_frame_id=child_frame)
        prototype.header.frame_id = odom_frame
        self.uncertainty = uncertainty or OdometryUncertainty()
        """The standard deviations the covariances come from."""
        self.odometry = FixedLayout(prototype, ['header.stamp', 'pose.pose.position.x', 'pose.pose.position.y',
                                                'pose.pose.orientation.z', 'pose.pose.orientation.w',
                                                'pose.covariance', 'twist.twist.linear.x', 'twist.twist.angular.z',
                                                'twist.covariance'])
        self._pose_covariance = [0.0] * 36
        self._twist_covariance = [0.0] * 36
        # REP 105: odom -> the URDF root (base_footprint, itself the parent of base_link).
        self.tf = FixedLayout(TFMessage(transforms=[transform(odom_frame, child_frame, (0, 0, 0), (0, 0, 0, 1), Time())]),
                              ['transforms[0].header.stamp', 'transforms[0].transform.translation.x',
                               'transforms[0].transform.translation.y', 'transforms[0].transform.rotation.z',
                               'transforms[0].transform.rotation.w'])

    def encode(self, x: float, y: float, yaw: float, forward_speed: float, yaw_rate: float,
               stamp_ns: int, travelled: float = 0.0, turned: float = 0.0) -> tuple[bytes, bytes]:
        """Pose ``x``, ``y`` (m), ``yaw`` (rad) in the odom frame; ``forward_speed`` (m/s) and
        ``yaw_rate`` (rad/s) in the body frame; both stamped ``stamp_ns``. z, roll and pitch are 0.
        ``travelled`` (m) and ``turned`` (rad) since the odometry started size the pose's covariance."""
        sec, nanosec = stamp_fields(stamp_ns)
        x, y = float(x), float(y)
        _, _, qz, qw = yaw_quaternion(yaw)
        pose, twist = self._pose_covariance, self._twist_covariance
        for index, variance in zip(_DIAGONAL, self.uncertainty.pose_variances(travelled, turned)):
            pose[index] = variance
        for index, variance in zip(_DIAGONAL, self.uncertainty.twist_variances(yaw_rate)):
            twist[index] = variance
        return (self.odometry.encode(sec, nanosec, x, y, qz, qw, *pose, float(forward_speed), float(yaw_rate),
                                     *twist),
                self.tf.encode(sec, nanosec, x, y, qz, qw))
