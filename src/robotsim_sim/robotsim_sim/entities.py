"""The things of a simulated world that can be named and moved: each robot (by namespace or model name) and each
free body of the world (by its body name), their poses, and the one rule for where something may be: above the
floor's rectangle and inside nothing else (1 cm of interpenetration tolerated), at the start and on every
teleport alike.

:class:`Entities` owns nothing: it reads and writes the state of the simulation's MuJoCo model and data, and
the simulation's robots (their root joints and bodies), which it is given.
"""

from __future__ import annotations

import math

import mujoco
import numpy as np

from robotsim_core.errors import DescriptionError
from robotsim_core.description.mjcf import free_joint_name

OVERLAP_TOLERANCE = 0.01
"""Metres two things may interpenetrate at a spawn or a teleport: resting contact and mesh/primitive
fits stay within millimetres; more means one was put inside the other (MuJoCo would fling them apart)."""


class Entities:
    """Named access to the movable things of one simulation (see the module docstring)."""

    def __init__(self, model: mujoco.MjModel, data: mujoco.MjData, world, robots: list):
        self.model, self.data, self.world = model, data, world
        self.robots = robots
        """The simulation's robots (its own list, filled as they are made): ``root_dof``, ``root_body``,
        ``binding.root_joint``, ``placement.namespace`` and ``model.name`` of each are read."""
        self._world_joints: tuple[int, dict[str, int]] | None = None
        """(number of robots when found, world_entity_joints()): the compiled model does not change, and the
        ground truth asks for it at 50 Hz."""

    def entity_joints(self) -> dict[str, int]:
        """Free joint id of every entity SetEntityPose can move: each robot by its namespace (or,
        alone, its model name, which also works in a fleet) and each free body of the world."""
        joints = {}
        for robot in self.robots:
            if robot.root_dof < 0:
                continue  # a fixed-base robot is bolted down: not an entity to teleport
            joint = robot.binding.root_joint
            joints[robot.placement.namespace or robot.model.name] = joint
            joints.setdefault(robot.model.name, joint)
        joints.update(self.world_entity_joints())
        return joints

    def world_bounds(self) -> tuple[np.ndarray, np.ndarray]:
        """Where an entity may be placed: above the floor's rectangle, up to its longer side high."""
        half_x, half_y = (size / 2 for size in self.world.floor.size)
        return np.array([-half_x, -half_y, 0.0]), np.array([half_x, half_y, max(self.world.floor.size)])

    def _robot_index(self, body: int) -> int | None:
        """The index of the robot ``body`` belongs to (None: the world body or a world entity)."""
        root = int(self.model.body_rootid[body])
        return next((index for index, robot in enumerate(self.robots)
                     if body and int(self.model.body_rootid[robot.root_body]) == root), None)

    def _body_owner(self, body: int) -> str | None:
        """What a body belongs to, as a user names it: a robot (its namespace or model name) or a world
        entity (its top body's name); None for the world body itself (static geoms)."""
        if body == 0:
            return None
        index = self._robot_index(body)
        if index is not None:
            robot = self.robots[index]
            return robot.placement.namespace or robot.model.name
        return self.model.body(int(self.model.body_rootid[body])).name

    def _placed_later(self, body: int, other: int) -> bool:
        """Whether ``body`` came into the scene after ``other``: the world's static geoms, then its
        entities, then the robots in order."""
        def rank(b: int) -> int:
            index = self._robot_index(b)
            return -2 if b == 0 else (-1 if index is None else index)
        return rank(body) > rank(other)

    def _owner(self, geom: int) -> str:
        """What a geom belongs to (a static geom of the world: its own name)."""
        owner = self._body_owner(int(self.model.geom_bodyid[geom]))
        return owner if owner is not None else (self.model.geom(geom).name or f'world geom {geom}')

    def _overlaps(self, involving: str | None = None) -> list[tuple[str, str, float]]:
        """(owner, other owner, depth in m) of the contacts of the current state (after mj_forward) in
        which two owners interpenetrate by more than OVERLAP_TOLERANCE, deepest first; only those
        involving ``involving`` when given."""
        found = {}
        for contact in self.data.contact[:self.data.ncon]:
            if contact.dist >= -OVERLAP_TOLERANCE:
                continue
            bodies = int(self.model.geom_bodyid[contact.geom1]), int(self.model.geom_bodyid[contact.geom2])
            first, second = self._owner(contact.geom1), self._owner(contact.geom2)
            if first == second or (involving is not None and involving not in (first, second)):
                continue
            if (second == involving) if involving is not None else self._placed_later(bodies[1], bodies[0]):
                first, second = second, first  # the thing put in the way first: a later robot, a static geom last
            key = (first, second)
            found[key] = max(found.get(key, 0.0), -float(contact.dist))
        return sorted(((a, b, depth) for (a, b), depth in found.items()), key=lambda item: -item[2])

    def _refuse_outside_at_start(self) -> None:
        """One rule for where things may be: what set_entity_pose refuses (outside the floor's rectangle or
        above it) is refused at the start too, naming the spawn."""
        low, high = self.world_bounds()
        for name, joint in self.entity_joints().items():
            address = self.model.jnt_qposadr[joint]
            position = self.data.qpos[address:address + 3]
            if not np.all((position >= low - 1e-9) & (position <= high)):
                raise DescriptionError(self.world.source or 'world', 'spawn',
                                       f'{name!r} starts at ({", ".join(f"{v:g}" for v in position)}), outside the '
                                       f'world: expected x in [{low[0]:g}, {high[0]:g}], y in [{low[1]:g}, '
                                       f'{high[1]:g}], z in [{low[2]:g}, {high[2]:g}] m (the floor of world '
                                       f'{self.world.name}; move the spawn, the entity or the fleet\'s xyz)')

    def refuse_overlaps_at_start(self) -> None:
        """A robot or entity put outside the floor or inside something at the start is refused (DescriptionError
        naming the spawn), as :meth:`set_entity_pose` refuses it later."""
        self._refuse_outside_at_start()
        overlaps = self._overlaps()
        if overlaps:
            first, second, depth = overlaps[0]
            for robot in self.robots:  # a fixed-base robot in something: its mount is what puts it there
                name = robot.placement.namespace or robot.model.name
                if robot.model.fixed_base and name in (first, second):
                    other = second if name == first else first
                    raise DescriptionError(robot.model.source, 'mount',
                                           f'{name!r} starts inside {other!r} ({100 * depth:.1f} cm deep): expected the '
                                           'fixed-base robot mounted clear of it (raise mount.xyz, or move the world\'s '
                                           'spawn or entities)')
            raise DescriptionError(self.world.source or 'world', 'spawn',
                                   f'{first!r} starts inside {second!r} ({100 * depth:.1f} cm deep): expected every '
                                   'robot and entity in a free spot (move the world\'s spawn or entities, or the '
                                   "fleet's xyz)")

    @staticmethod
    def _unknown_entity(name: str, entities: dict[str, int]) -> str | None:
        """Why ``name`` names no entity (one line listing those there are), or None."""
        if name in entities:
            return None
        expected = f'one of {", ".join(sorted(entities))}'
        return (f'entity: empty name; expected {expected}' if not name
                else f'entity: no entity {name!r}; expected {expected}')

    def world_entity_poses(self) -> list[tuple[str, np.ndarray, np.ndarray]]:
        """(name, position, quaternion w x y z) in the world frame of every free body of the world (not the
        robots), in model order: the state :meth:`entity_pose` reads, at the current time."""
        qpos, addresses = self.data.qpos, self.model.jnt_qposadr
        return [(name, qpos[addresses[joint]:addresses[joint] + 3].copy(),
                 qpos[addresses[joint] + 3:addresses[joint] + 7].copy())
                for name, joint in self.world_entity_joints().items()]

    def world_entity_joints(self) -> dict[str, int]:
        """Free joint id of every free world body (a world entity with mass), by body name."""
        if self._world_joints is None or self._world_joints[0] != len(self.robots):
            robot_roots = {robot.binding.root_joint for robot in self.robots if robot.root_dof >= 0}
            joints = {}
            for joint in range(self.model.njnt):
                body = self.model.body(self.model.jnt_bodyid[joint]).name
                if joint not in robot_roots and self.model.joint(joint).name == free_joint_name(body):
                    joints[body] = joint  # robotsim_sim.scene names such joints so
            self._world_joints = (len(self.robots), joints)
        return dict(self._world_joints[1])

    def entity_pose(self, name: str) -> tuple[np.ndarray, np.ndarray] | str:
        """(position, quaternion w x y z) in the world frame of a robot (by namespace or model name) or a
        free world body: its free joint's state, what :meth:`set_entity_pose` sets. A string says why
        not (an unknown name)."""
        entities = self.entity_joints()
        problem = self._unknown_entity(name, entities)
        if problem:
            return problem
        address = self.model.jnt_qposadr[entities[name]]
        return self.data.qpos[address:address + 3].copy(), self.data.qpos[address + 3:address + 7].copy()

    def set_entity_pose(self, name: str, position, quaternion) -> str | None:
        """Teleport a robot (by namespace or model name) or a free world body; zero its velocity.
        Returns why a request is refused (nothing moves then)."""
        entities = self.entity_joints()
        problem = self._unknown_entity(name, entities)
        if problem:
            return problem
        joint = entities[name]
        position = np.asarray(position, dtype=float)
        low, high = self.world_bounds()
        if not np.all((position >= low) & (position <= high)):  # also false for NaN
            return (f'pose.position: ({", ".join(f"{v:g}" for v in position)}) is outside the world: expected x in '
                    f'[{low[0]:g}, {high[0]:g}], y in [{low[1]:g}, {high[1]:g}], z in [{low[2]:g}, {high[2]:g}] m '
                    f'(the floor of world {self.world.name})')
        quaternion = np.asarray(quaternion, dtype=float)
        norm = float(np.linalg.norm(quaternion)) if np.all(np.isfinite(quaternion)) else math.nan
        if not 1e-6 <= norm <= 1e6:
            return (f'pose.orientation: (w, x, y, z) = ({", ".join(f"{v:g}" for v in quaternion)}): expected a finite '
                    'quaternion of norm near 1 (between 1e-6 and 1e6; it is normalised)')
        address, dof = self.model.jnt_qposadr[joint], self.model.jnt_dofadr[joint]
        before = self.data.qpos[address:address + 7].copy(), self.data.qvel[dof:dof + 6].copy()
        self.data.qpos[address:address + 3] = position
        self.data.qpos[address + 3:address + 7] = quaternion / np.linalg.norm(quaternion)
        self.data.qvel[dof:dof + 6] = 0.0
        mujoco.mj_forward(self.model, self.data)
        overlaps = self._overlaps(involving=self._body_owner(int(self.model.jnt_bodyid[joint])))
        if overlaps:
            self.data.qpos[address:address + 7], self.data.qvel[dof:dof + 6] = before
            mujoco.mj_forward(self.model, self.data)
            _, other, depth = overlaps[0]
            return (f'pose: {name!r} at ({", ".join(f"{v:g}" for v in position)}) would be {100 * depth:.1f} cm '
                    f'inside {other!r}: expected a free spot (nothing moved)')
        return None
