"""Joint positions over time from ``sensor_msgs/JointState`` messages of any number of publishers.

ROS lets several nodes publish on one ``/joint_states`` topic, each a subset of the robot's joints
(robotsim's simulator publishes the arm's joints while the motor bridge publishes the wheels', as
``joint_state_broadcaster`` and a base driver do on a real robot). Their messages interleave in a
recording and their stamps need not be ordered across publishers. Every reader of a recording
(browser replay, Blender render, odometry calibration) therefore merges by joint name: each joint
keeps its own samples, with the stamps of the messages that carried it, sorted by stamp, and is
interpolated on its own. No reader assumes one publisher or one fixed list of names.
"""

from __future__ import annotations

import math

import numpy as np

MAX_JOINTS = 4096
"""Distinct joint names one series accepts (a bound on what a malformed bag can make a reader hold)."""


class JointSeries:
    """Owns the per-joint samples added to it (plain lists until :meth:`freeze`, then arrays)."""

    def __init__(self):
        self.names: list[str] = []
        """Joint names in the order they first appeared."""
        self._samples: dict[str, list[tuple[int, float]]] = {}
        self._arrays: dict[str, tuple[np.ndarray, np.ndarray]] | None = None

    def add(self, stamp_ns: int, names, positions) -> None:
        """One message: ``names[i]`` was at ``positions[i]`` at ``stamp_ns``. Names without a position
        (a message with a shorter ``position`` array, as the JointState definition allows) and
        non-finite positions are skipped."""
        self._arrays = None
        for name, position in zip(names, positions):
            position = float(position)
            if not math.isfinite(position):
                continue
            samples = self._samples.get(name)
            if samples is None:
                if len(self.names) >= MAX_JOINTS:
                    raise ValueError(f'more than {MAX_JOINTS} distinct joint names in joint states')
                samples = self._samples[name] = []
                self.names.append(name)
            samples.append((int(stamp_ns), position))

    def __bool__(self) -> bool:
        return bool(self.names)

    def _frozen(self) -> dict[str, tuple[np.ndarray, np.ndarray]]:
        if self._arrays is None:
            arrays = {}
            for name, samples in self._samples.items():
                samples.sort(key=lambda sample: sample[0])
                arrays[name] = (np.array([s for s, _ in samples], dtype=np.int64),
                                np.array([p for _, p in samples], dtype=float))
            self._arrays = arrays
        return self._arrays

    def samples(self, name: str) -> tuple[np.ndarray, np.ndarray]:
        """``(stamps_ns, positions)`` of one joint, sorted by stamp."""
        return self._frozen()[name]

    def stamps(self) -> np.ndarray:
        """Every stamp any joint has, sorted and unique (ns)."""
        arrays = self._frozen()
        if not arrays:
            return np.zeros(0, dtype=np.int64)
        return np.unique(np.concatenate([stamps for stamps, _ in arrays.values()]))

    def at(self, stamp_ns: int, names: list[str] | None = None) -> np.ndarray:
        """Positions of ``names`` (default: all, in :attr:`names` order) at ``stamp_ns``: linear between
        each joint's own samples, held at either end."""
        arrays = self._frozen()
        return np.array([np.interp(stamp_ns, *arrays[name]) for name in (names or self.names)])

    def resample(self, stamps_ns, names: list[str] | None = None) -> np.ndarray:
        """``(len(stamps_ns), len(names))`` positions, each joint interpolated on its own samples."""
        arrays = self._frozen()
        stamps = np.asarray(stamps_ns, dtype=np.int64)
        columns = [np.interp(stamps, *arrays[name]) for name in (names or self.names)]
        return np.stack(columns, axis=1) if columns else np.zeros((len(stamps), 0))
