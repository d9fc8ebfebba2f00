"""ROS message helpers shared by every robotsim node (simulator, state publisher, motor bridge).

The one module of robotsim_core that imports ROS types: nothing else in the core imports it, so
the core stays usable without ROS (tests/test_layering.py checks both). Stamps are integer
nanoseconds; quaternions in ROS order (x, y, z, w).
"""

from __future__ import annotations

import array
import faulthandler
import importlib
import signal
import sys
from collections.abc import Callable

import numpy as np
from builtin_interfaces.msg import Time
from geometry_msgs.msg import TransformStamped
from nav_msgs.msg import Odometry
from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy
from sensor_msgs.msg import JointState

from ..contract import QosSpec


def message_class(type_name: str):
    """'sensor_msgs/msg/LaserScan' -> the generated Python class (the contract names types so)."""
    package, _, name = type_name.split('/')
    return getattr(importlib.import_module(f'{package}.msg'), name)


def qos_profile(spec: QosSpec) -> QoSProfile:
    return QoSProfile(
        depth=spec.depth,
        reliability=ReliabilityPolicy.RELIABLE if spec.reliability == 'reliable' else ReliabilityPolicy.BEST_EFFORT,
        durability=(DurabilityPolicy.TRANSIENT_LOCAL if spec.durability == 'transient_local'
                    else DurabilityPolicy.VOLATILE))


def stamp_msg(nanoseconds: int) -> Time:
    return Time(sec=nanoseconds // 1_000_000_000, nanosec=nanoseconds % 1_000_000_000)


def joint_state(names: list[str], positions, velocities, efforts, stamp: Time) -> JointState:
    msg = JointState()
    msg.header.stamp = stamp
    msg.name = list(names)
    msg.position = array.array('d', np.asarray(positions, dtype=np.float64).tobytes())
    msg.velocity = array.array('d', np.asarray(velocities, dtype=np.float64).tobytes())
    msg.effort = array.array('d', np.asarray(efforts, dtype=np.float64).tobytes())
    return msg


def yaw_quaternion(yaw: float) -> tuple[float, float, float, float]:
    """(x, y, z, w) for a rotation about +z."""
    return (0.0, 0.0, float(np.sin(yaw / 2)), float(np.cos(yaw / 2)))


def planar_odometry(frame_id: str, child_frame_id: str, x: float, y: float, yaw: float, linear: float,
                    angular: float, stamp: Time, pose_variance: float, twist_variance: float) -> Odometry:
    msg = Odometry()
    msg.header.stamp, msg.header.frame_id, msg.child_frame_id = stamp, frame_id, child_frame_id
    msg.pose.pose.position.x, msg.pose.pose.position.y = float(x), float(y)
    (msg.pose.pose.orientation.x, msg.pose.pose.orientation.y,
     msg.pose.pose.orientation.z, msg.pose.pose.orientation.w) = yaw_quaternion(yaw)
    msg.twist.twist.linear.x, msg.twist.twist.angular.z = float(linear), float(angular)
    msg.pose.covariance = _diagonal6(pose_variance)
    msg.twist.covariance = _diagonal6(twist_variance)
    return msg


def _diagonal6(variance: float) -> list[float]:
    values = [0.0] * 36
    for i in range(6):
        values[7 * i] = variance
    return values


def transform(parent: str, child: str, translation, quaternion_xyzw, stamp: Time) -> TransformStamped:
    msg = TransformStamped()
    msg.header.stamp, msg.header.frame_id, msg.child_frame_id = stamp, parent, child
    t, r = msg.transform.translation, msg.transform.rotation
    t.x, t.y, t.z = (float(v) for v in translation)
    r.x, r.y, r.z, r.w = (float(v) for v in quaternion_xyzw)
    return msg



class ParameterError(ValueError):
    """A node parameter has a value the node cannot use (one line, exit 2 through run_node)."""


def checked_parameter(node, name: str, default, minimum: float | None = None, maximum: float | None = None):
    """Declare a node parameter and check it before the node uses it: a value of another type than
    ``default``'s, or a number outside [minimum, maximum] (NaN and Inf included), raises ParameterError
    naming the parameter and what was expected (run_node turns that into one line and exit 2). An
    int default asks for a whole number; a float default takes ``x:=1`` as well as ``x:=1.0``."""
    import math

    from rcl_interfaces.msg import ParameterDescriptor
    value = node.declare_parameter(name, default, ParameterDescriptor(dynamic_typing=True)).value
    if isinstance(default, (bool, str)):
        if type(value) is not type(default):
            expected = 'true or false' if isinstance(default, bool) else 'a string'
            raise ParameterError(f'parameter {name!r}: expected {expected}, got {value!r}')
        return value
    whole = isinstance(default, int)
    number = isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
    if not (number and (not whole or float(value).is_integer())
            and (minimum is None or value >= minimum) and (maximum is None or value <= maximum)):
        bounds = (f' from {minimum:g} to {maximum:g}' if minimum is not None and maximum is not None
                  else f' >= {minimum:g}' if minimum is not None else f' <= {maximum:g}' if maximum is not None else '')
        raise ParameterError(f'parameter {name!r}: expected {"a whole number" if whole else "a finite number"}{bounds}, '
                         f'got {value!r}')
    return int(value) if whole else float(value)


def run_node(program: str, make_node: Callable, expected_errors: tuple[type[Exception], ...], args=None,
             run: Callable | None = None, finish: Callable | None = None) -> int:
    """Create and spin a node the way every robotsim executable does: a bad configuration
    (``expected_errors``) prints one line and exits 2, Ctrl-C / SIGTERM / SIGHUP is a normal stop, and
    ``finish(node)`` (closing a bag, writing a report) runs however the spin ended."""
    import rclpy
    from rclpy.executors import ExternalShutdownException

    rclpy.init(args=args)
    # A hung-up terminal or SSH session (SIGHUP) stops a node as Ctrl-C does, so ``finish`` runs and the
    # simulator removes its serial link, instead of the default action killing the process outright.
    signal.signal(signal.SIGHUP, signal.default_int_handler)
    # `kill -USR1 <pid>` prints every thread's Python stack to stderr: how to see where a node hangs.
    faulthandler.register(signal.SIGUSR1, all_threads=True)
    try:
        node = make_node()
    except expected_errors as error:
        print(f'{program}: error: {error}', file=sys.stderr)
        rclpy.try_shutdown()
        return 2
    try:
        (run or rclpy.spin)(node)
    except (KeyboardInterrupt, ExternalShutdownException):
        pass
    finally:
        if finish is not None:
            finish(node)
        node.destroy_node()
        rclpy.try_shutdown()
    return 0
