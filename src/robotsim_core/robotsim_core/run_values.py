"""Values a run of the simulator takes, checked alike wherever they are given: the launch arguments of both
launchers (robotsim.bringup) and the simulator node's own parameters (one range per concept)."""

from __future__ import annotations

import math
import os
import tempfile
from typing import Any

MAX_SEED = 2**63 - 1
"""Largest seed: the simulator's ``seed`` parameter is a ROS integer (int64). Larger seeds are
refused rather than reduced, so a seed in a log always replays the same run."""
MIN_REAL_TIME_FACTOR = 1e-3
"""Slowest pacing other than 0 (as fast as possible); slower would sleep for hours per step."""


def simulation_value_problem(name: str, value: Any) -> str | None:
    """What is wrong with a value of the simulator's ``seed``, ``real_time_factor`` or ``duration``
    (``'expected ...'``), or None. Shared by the launch arguments and the simulator's parameters."""
    if name == 'seed':
        if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= MAX_SEED:
            return f'expected an integer from 0 to {MAX_SEED} (2^63-1), got {value!r}'
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value < 0:
        return f'expected a finite number >= 0, got {value!r}'
    if name == 'real_time_factor' and 0 < value < MIN_REAL_TIME_FACTOR:
        return f'expected 0 (as fast as possible) or a number >= {MIN_REAL_TIME_FACTOR:g}, got {value!r}'
    return None


def default_serial_link(namespace: str = '') -> str:
    """Where the simulated MCU's serial port appears (a symlink to its pty): per user, domain, robot."""
    suffix = f'-{namespace}' if namespace else ''
    return os.path.join(tempfile.gettempdir(), f'robotsim-{os.getuid()}',
                        f'ttyMCU-{os.environ.get("ROS_DOMAIN_ID", "0")}{suffix}')
