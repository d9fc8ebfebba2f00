"""Joint-level PD servos of a legged robot: what its motor drivers do at the physics rate.

A command holds, per servoed joint, a position and velocity target, the two gains and a feed-forward torque (a legged
robot's low-level interface: q, dq, kp, kd, tau). The torque each physics step is::

    tau = kp (q* - q) + kd (dq* - dq) + tau_ff, clamped to the joint's effort limit

A position command (a ``forward_command_controller``'s array) sets q* with the default gains, dq* = 0 and tau_ff = 0. A
command holds until the next one (motor drivers keep their last setpoint); a reset holds the starting pose.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

MAX_GAIN_KP = 10000.0
"""Largest position gain a command may carry (N m/rad)."""
MAX_GAIN_KD = 1000.0
"""Largest velocity gain a command may carry (N m s/rad)."""


class JointServos:
    """Owns the setpoints of one robot's servoed joints (nothing else: the caller reads the state and writes the
    torques into MuJoCo's controls)."""

    def __init__(self, joints: Sequence[str], kp: float, kd: float, effort: Sequence[float],
                 hold: Sequence[float]):
        self.joints = tuple(joints)
        self.index = {name: i for i, name in enumerate(self.joints)}
        self.default_kp, self.default_kd = float(kp), float(kd)
        self.effort = np.asarray(effort, dtype=float)
        self.start = np.asarray(hold, dtype=float)
        self.commands = 0
        """Commands accepted since the last reset."""
        self.reset()

    def reset(self) -> None:
        """Hold the starting pose with the default gains."""
        self.q = self.start.copy()
        self.dq = np.zeros(len(self.joints))
        self.kp = np.full(len(self.joints), self.default_kp)
        self.kd = np.full(len(self.joints), self.default_kd)
        self.tau = np.zeros(len(self.joints))
        self.commands = 0

    def command_positions(self, positions: Sequence[float]) -> str | None:
        """Position targets for every joint, in ``joints`` order; None, or why they were refused (nothing changes)."""
        values = np.asarray(positions, dtype=float) if len(positions) else np.zeros(0)
        if values.shape != (len(self.joints),):
            return f'expected {len(self.joints)} positions (one per joint: {", ".join(self.joints)}), got {len(positions)}'
        if not np.all(np.isfinite(values)):
            return 'expected finite positions (rad), got NaN or inf'
        self.q = values
        self.dq = np.zeros(len(self.joints))
        self.kp = np.full(len(self.joints), self.default_kp)
        self.kd = np.full(len(self.joints), self.default_kd)
        self.tau = np.zeros(len(self.joints))
        self.commands += 1
        return None

    def command(self, names: Sequence[str], q: Sequence[float], dq: Sequence[float], kp: Sequence[float],
                kd: Sequence[float], tau: Sequence[float]) -> str | None:
        """A low-level command for the named joints (others keep theirs); None, or why it was refused (nothing
        changes): an unknown or repeated joint, arrays of other lengths, a value that is not finite, a gain outside
        [0, MAX_GAIN_KP] or [0, MAX_GAIN_KD]."""
        unknown = [name for name in names if name not in self.index]
        if unknown:
            return f'unknown joint {unknown[0]!r}: expected names from {", ".join(self.joints)}'
        if len(set(names)) != len(names):
            return 'expected each joint name once'
        fields = {'position': q, 'velocity': dq, 'kp': kp, 'kd': kd, 'effort': tau}
        for field, values in fields.items():
            if len(values) != len(names):
                return f'{field}: expected {len(names)} values (one per name), got {len(values)}'
            if not all(math.isfinite(v) for v in values):
                return f'{field}: expected finite values, got NaN or inf'
        for field, bound in (('kp', MAX_GAIN_KP), ('kd', MAX_GAIN_KD)):
            if not all(0.0 <= v <= bound for v in fields[field]):
                return f'{field}: expected gains in [0, {bound:g}]'
        rows = np.array([self.index[name] for name in names], dtype=int)
        for array, values in ((self.q, q), (self.dq, dq), (self.kp, kp), (self.kd, kd), (self.tau, tau)):
            array[rows] = np.asarray(values, dtype=float)
        self.commands += 1
        return None

    def torques(self, q: np.ndarray, dq: np.ndarray) -> np.ndarray:
        """The motor torques for the joints' state (``joints`` order), clamped to their effort limits."""
        tau = self.kp * (self.q - q) + self.kd * (self.dq - dq) + self.tau
        return np.clip(tau, -self.effort, self.effort)
