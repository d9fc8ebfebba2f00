"""Child processes the way every robotsim tool runs them (the launcher, the ROS-graph evaluation): each in a
session of its own that dies with its parent, stopped by Ctrl-C and, if it does not stop, SIGKILL."""

from __future__ import annotations

import ctypes
import os
import signal
import subprocess


def interrupt(process: subprocess.Popen, timeout: float) -> None:
    """Ctrl-C a process (a clean rclpy shutdown, or a launcher stopping its nodes); SIGKILL if it is still
    there after ``timeout`` s."""
    if process.poll() is None:
        process.send_signal(signal.SIGINT)
        try:
            process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def die_with_parent() -> None:
    os.setsid()  # Ctrl-C in the terminal reaches the launcher only; it forwards it once
    ctypes.CDLL('libc.so.6', use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
