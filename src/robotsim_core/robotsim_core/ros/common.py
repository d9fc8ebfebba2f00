"""ROS message helpers shared by every robotsim node (simulator, state publisher, motor bridge).

The one module of robotsim_core that imports ROS types: nothing else in the core imports it, so
the core stays usable without ROS (tests/test_layering.py checks both). Stamps are integer
nanoseconds; quaternions in ROS order (x, y, z, w).
"""

from __future__ import annotations

import contextlib
import ctypes
import faulthandler
import importlib
import os
import signal
import sys
import threading
from collections.abc import Callable

import numpy as np
from builtin_interfaces.msg import Time
from geometry_msgs.msg import TransformStamped
from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy
from sensor_msgs.msg import JointState

from ..contract import QosSpec
from .wire import FixedLayout


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


def stamp_fields(nanoseconds: int) -> tuple[int, int]:
    """(sec, nanosec) of a builtin_interfaces/Time, for a template-encoded header (robotsim_core.ros.wire)."""
    return nanoseconds // 1_000_000_000, nanoseconds % 1_000_000_000


def stamp_nanoseconds(stamp) -> int:
    """A builtin_interfaces/Time as whole nanoseconds (the inverse of :func:`stamp_msg`)."""
    return stamp.sec * 1_000_000_000 + stamp.nanosec


def stamp_msg(nanoseconds: int) -> Time:
    sec, nanosec = stamp_fields(nanoseconds)
    return Time(sec=sec, nanosec=nanosec)


class JointStateEncoder:
    """sensor_msgs/JointState of one fixed list of joints, serialized (robotsim_core.ros.wire): the
    simulator's and the motor bridge's /joint_states, 50 Hz each."""

    def __init__(self, names: list[str]):
        zeros = [0.0] * len(names)
        self.layout = FixedLayout(JointState(name=list(names), position=zeros, velocity=zeros, effort=zeros),
                                  ['header.stamp', 'position', 'velocity', 'effort'])

    def encode(self, positions, velocities, efforts, stamp_ns: int) -> bytes:
        """Positions (rad or m), velocities and efforts (N m or N) in the names' order, as float64."""
        return self.layout.encode(*stamp_fields(stamp_ns), *_floats(positions), *_floats(velocities), *_floats(efforts))


def _floats(values) -> list[float]:
    return np.asarray(values, dtype=np.float64).tolist()


def yaw_quaternion(yaw: float) -> tuple[float, float, float, float]:
    """(x, y, z, w) for a rotation about +z."""
    return (0.0, 0.0, float(np.sin(yaw / 2)), float(np.cos(yaw / 2)))


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


def _interrupted(error: BaseException) -> bool:
    """Whether ``error`` is Ctrl-C / SIGTERM arriving: also when it hit inside a ctypes call (OpenGL
    set-up), which reports it as ``ctypes.ArgumentError: argument 1: KeyboardInterrupt``."""
    if isinstance(error, ctypes.ArgumentError):
        return 'KeyboardInterrupt' in str(error) or isinstance(error.__context__, KeyboardInterrupt)
    return True


def _stopped_by_a_signal(error: BaseException) -> bool:
    """Whether ``error`` only reports that Ctrl-C / SIGTERM shut the context down first: rclpy's signal
    handler shuts it down at once, the KeyboardInterrupt follows later, and in between creating a node or
    an entity raises RCLError ("the given context is not valid"), and taking a message the executor had
    found ready raises pybind11's RuntimeError ("Unable to convert call argument '0' to Python object").
    The same errors while the context is valid are real and show."""
    import rclpy
    return isinstance(error, RuntimeError) and not rclpy.ok()


@contextlib.contextmanager
def signals_stop_the_context_only():
    """Within: SIGINT and SIGTERM shut the context down (rclpy's own handler) and raise no
    KeyboardInterrupt; SIGHUP is sent on as SIGTERM. For a multi-threaded executor: a KeyboardInterrupt
    landing in the main thread while it holds a lock the executor's worker threads share (the thread
    pool's idle semaphore) leaves the lock held, and the executor's shutdown then waits for ever."""
    from rclpy.signals import get_current_signal_handlers_options, install_signal_handlers, uninstall_signal_handlers

    options = get_current_signal_handlers_options()
    uninstall_signal_handlers()
    previous = {number: signal.signal(number, lambda *_: None) for number in (signal.SIGINT, signal.SIGTERM)}
    previous[signal.SIGHUP] = signal.signal(signal.SIGHUP, lambda *_: os.kill(os.getpid(), signal.SIGTERM))
    install_signal_handlers(options)  # rclpy's handlers chain to the quiet ones above
    try:
        yield
    finally:
        uninstall_signal_handlers()
        for number, handler in previous.items():
            signal.signal(number, handler)
        install_signal_handlers(options)


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
    except (KeyboardInterrupt, ExternalShutdownException, ctypes.ArgumentError) as error:
        # Stopped while starting (a launch ending because another node failed): a normal stop too.
        if not _interrupted(error):
            raise
        rclpy.try_shutdown()
        return 0
    except Exception as error:
        if not _stopped_by_a_signal(error):
            raise
        rclpy.try_shutdown()
        return 0
    try:
        (run or rclpy.spin)(node)
    except (KeyboardInterrupt, ExternalShutdownException, ctypes.ArgumentError) as error:
        if not _interrupted(error):
            raise
    except Exception as error:
        if not _stopped_by_a_signal(error):
            raise
    finally:
        # The stop has been asked for: a second Ctrl-C or hang-up must not cut the cleanup short. A terminal's
        # Ctrl-C reaches every process of its foreground group and `ros2 launch` forwards it to each node as well,
        # so every node of a launch gets it twice; the second one used to interrupt destroy_node() (a
        # KeyboardInterrupt traceback, exit -2, "process has died"). SIGTERM and SIGKILL still end a hung cleanup
        # (as ros2 launch escalates).
        _ignore_stop_requests()
        if finish is not None:
            finish(node)
        node.destroy_node()
        rclpy.try_shutdown()
        _ignore_stop_requests()  # rclpy's shutdown puts back the handlers it replaced
    return 0


def _ignore_stop_requests() -> None:
    """Ignore further SIGINT and SIGHUP in this process (main thread only, where signal handlers live)."""
    if threading.current_thread() is threading.main_thread():
        for number in (signal.SIGINT, signal.SIGHUP):
            signal.signal(number, signal.SIG_IGN)
