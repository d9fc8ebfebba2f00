"""The instability watch: MuJoCo resets the whole world to its initial state when a position,
velocity or acceleration becomes NaN, infinite or huge, and says so only on stderr. The watch notices
(MuJoCo's clock goes back), records what happened, when and to whom, and tells the simulation to
resynchronise its controllers with the reset world.

:class:`InstabilityWatch` owns the list of instabilities not yet taken and the running count; it
reads the simulation's MuJoCo model and data, which it is given.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import mujoco

UNSTABLE_WARNINGS = {mujoco.mjtWarning.mjWARN_BADQACC: 'NaN, Inf or huge acceleration',
                     mujoco.mjtWarning.mjWARN_BADQVEL: 'NaN, Inf or huge velocity',
                     mujoco.mjtWarning.mjWARN_BADQPOS: 'NaN, Inf or huge position'}
"""MuJoCo resets the world when one of these fires (unless auto-reset is disabled)."""


@dataclass
class Instability:
    """MuJoCo found the physics unstable and reset the world to its initial state."""

    stamp: int        # sim time (ns) of the step that went unstable
    what: str
    entity: str       # robot or world body owning the offending degree of freedom
    dof: int


class InstabilityWatch:
    """Notices MuJoCo's resets after an instability, one comparison per step."""

    def __init__(self, model: mujoco.MjModel, data: mujoco.MjData, entity_of_root: Callable[[int], str | None]):
        self.model, self.data = model, data
        self._entity_of_root = entity_of_root
        """Name of the robot whose root body is the given one (None: not a robot's)."""
        self.pending: list[Instability] = []
        """Instabilities not yet taken (:meth:`take`)."""
        self.count = 0
        """Instabilities since the simulation started."""

    def _warning(self):
        return next((kind for kind in UNSTABLE_WARNINGS if self.data.warning[kind].number), None)

    def check(self, step_count: int, time_ns: int) -> bool:
        """After step ``step_count``: did MuJoCo reset the world? If so, record it and return True."""
        # MuJoCo's reset puts its clock back; on an episode's first step the clock agrees either way,
        # so look at the warnings.
        if not (self.data.time < (step_count - 0.5) * self.model.opt.timestep
                or (step_count == 1 and self._warning() is not None)):
            return False
        kind = self._warning()
        dof = int(self.data.warning[kind].lastinfo) if kind is not None else -1
        entity = self._entity_of_dof(dof) if 0 <= dof < self.model.nv else 'unknown'
        what = UNSTABLE_WARNINGS[kind] if kind is not None else 'unstable physics'
        self.pending.append(Instability(time_ns, what, entity, dof))
        self.count += 1
        # MuJoCo's reset set its clock and counters back to zero (the counters to one for the
        # warning at hand, however often it fired); align both so the next one shows again.
        self.data.time = time_ns * 1e-9
        for warning in UNSTABLE_WARNINGS:
            self.data.warning[warning].number = 0
        return True

    def _entity_of_dof(self, dof: int) -> str:
        root = int(self.model.body_rootid[self.model.jnt_bodyid[self.model.dof_jntid[dof]]])
        return self._entity_of_root(root) or self.model.body(root).name or f'body {root}'

    def take(self) -> list[Instability]:
        """Instabilities since the last call."""
        taken, self.pending = self.pending, []
        return taken
