"""Collision-free joint-space planning for an arm, with MuJoCo as the collision checker (ROS-free).

The planning scene is the simulator's own MuJoCo model of a world spec and its robots
(:func:`robotsim_sim.scene.build_scene`): walls, boxes, cylinders, an included MJCF and every robot.
It lives in the simulator package because that is where world specs are read and scenes are built;
the ROS-free core (``robotsim_core``) knows robots but not worlds.

A configuration is checked on a private ``MjData``: the arm joints are set by name, then
``mj_kinematics`` + ``mj_collision`` (no dynamics step). A contact counts when it involves a body
the planned joints move (an *arm body*) and the relative pose of its two bodies depends on those
joints; this leaves out the robot's wheels on the floor, the gripper fingers against each other and
anything else the plan cannot change. Parent-child pairs, welded links and the description's
excluded pairs (``collision_excludes``: adjacent links, SRDF, touching at rest) are skipped by
MuJoCo itself (they are ``<exclude>`` elements of the robot's MJCF). Arm geoms carry a margin, so
"in collision" means "closer than the margin", which also covers the arm's motion between two
checks along an edge.

:func:`plan` is RRT-Connect (Kuffner and LaValle 2000) in the box of the arm's joint limits, then
a pass dropping every waypoint the path can skip, random shortcuts between two points anywhere on
the path, and the dropping pass again. Every random choice comes from
``numpy.random.default_rng(seed)`` and nothing depends on the clock: the same seed, scene and query
give the same path, bit for bit.

For manipulation, :meth:`PlanningScene.allow_contact` lets the fingers touch the object they are
about to grasp, and :meth:`PlanningScene.attach` makes a grasped free body part of the arm: it moves
with its link in every check and its contacts with the world and the robot are refused like the
arm's own.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from typing import Mapping, Sequence

import mujoco
import numpy as np

from .binding import RobotBinding
from .scene import RobotPlacement, build_scene, compile_scene
from robotsim_core.description.world_spec import WorldSpec

DEFAULT_MARGIN = 0.005
"""Clearance (m) below which an arm body counts as touching something: keeps the arm this far from
obstacles, and with :attr:`PlannerOptions.resolution` bounds what can hide between two checks."""
START_LIMIT_TOLERANCE = 0.005
"""A start this far (rad or m) outside a joint limit is taken as on the limit: a measured joint state
overshoots a limit slightly (MuJoCo's joint limits are soft constraints)."""
CONTINUOUS_RANGE = (-math.pi, math.pi)
"""Sampling range of a continuous (unlimited) arm joint; angles are not wrapped."""

# contype/conaffinity bits of the planning model's own copy: arm geoms collide with everything,
# other geoms only with arm geoms (pairs the plan cannot change are never generated at all).
_ARM_BITS = (2, 3)     # contype, conaffinity
_OTHER_BITS = (1, 0)

_TRAPPED, _ADVANCED, _REACHED = 0, 1, 2


@dataclass(frozen=True)
class CollisionPair:
    """A contact the planner refuses: an arm body and what it touches (within the margin)."""

    arm_body: str
    """MuJoCo body of the arm (its link name, prefixed ``<namespace>/`` for a namespaced robot)."""
    other: str
    """What it touches: a world geom (``wall_3``, ``crate``, ``floor``), a free entity, or a robot link."""
    distance: float
    """Signed distance between the two geoms (m); negative: penetrating."""
    margin: float
    """The scene's margin (m) the distance was compared with."""

    def __str__(self) -> str:
        if self.distance <= 0:
            return f'{self.arm_body} touches {self.other}'
        return f'{self.arm_body} is within {self.margin * 1000:g} mm of {self.other}'


@dataclass
class PlannerOptions:
    """How :func:`plan` searches; the defaults suit 4- to 7-joint arms in a room-sized scene."""

    max_iterations: int = 5000
    """RRT-Connect iterations (one random sample, one extend of one tree, one connect of the other)
    before giving up."""
    max_step: float = 0.5
    """Longest edge a tree grows by in one extend (rad, Euclidean norm over the arm joints)."""
    resolution: float = 0.01
    """Largest move of any joint between two collision checks along an edge (rad, or m for a
    prismatic joint). 0.01 rad moves a point 0.5 m from the joint by 5 mm, the default margin."""
    shortcut_attempts: int = 40
    """Random shortcuts tried on the path found: two random points on the path, joined by a straight
    edge when that edge is free (measured on the benchmark scenes: 40 gives paths within 1-2 % of the
    length 80 gives, at 60 % of the checks)."""

    def __post_init__(self):
        for name in ('max_iterations', 'shortcut_attempts'):
            value = getattr(self, name)
            if not isinstance(value, int) or value < (1 if name == 'max_iterations' else 0):
                raise ValueError(f'PlannerOptions.{name}: expected an integer >= '
                                 f'{1 if name == "max_iterations" else 0}, got {value!r}')
        for name in ('max_step', 'resolution'):
            value = getattr(self, name)
            if not isinstance(value, (int, float)) or not math.isfinite(value) or value <= 0:
                raise ValueError(f'PlannerOptions.{name}: expected a finite number > 0, got {value!r}')


@dataclass
class PlanResult:
    """The outcome of one query; a failure carries a one-line ``reason`` and an empty path."""

    success: bool
    joint_names: tuple[str, ...]
    """Order of the values in every waypoint."""
    path: np.ndarray
    """Waypoints (N, joints), start first and goal last; every straight edge between two is free."""
    planning_time: float
    """Wall-clock seconds for the whole query (validation, search, shortcutting)."""
    iterations: int
    """RRT-Connect iterations used (0: the straight edge from start to goal was free)."""
    collision_checks: int
    """Configurations checked for collision."""
    reason: str = ''
    """Why there is no path ('' on success)."""
    raw_waypoints: int = 0
    """Waypoints of the tree path before shortcutting."""

    @property
    def length(self) -> float:
        """Joint-space length of the path (rad, Euclidean per edge)."""
        if len(self.path) < 2:
            return 0.0
        return float(np.linalg.norm(np.diff(self.path, axis=0), axis=1).sum())


class PlanningScene:
    """One arm of one robot in the MuJoCo model of a world and its robots.

    ``robot`` indexes ``placements``; ``arm`` names one of that robot's arms (default: the first).
    Other robots, free boxes and the robot's own base stand where the model puts them until
    :meth:`set_base_pose`, :meth:`set_positions` or :meth:`set_world_state` moves them.
    """

    def __init__(self, world: WorldSpec, placements: list[RobotPlacement], robot: int = 0,
                 arm: str | None = None, margin: float = DEFAULT_MARGIN):
        if not 0 <= robot < len(placements):
            raise ValueError(f'robot: expected an index below {len(placements)} (robots in the scene), got {robot}')
        if not math.isfinite(margin) or margin < 0:
            raise ValueError(f'margin: expected a finite distance >= 0 m, got {margin!r}')
        self.placements = list(placements)
        self.placement = placements[robot]
        description = self.placement.model
        arms = {role.name: role for role in description.arms}
        if not arms:
            raise ValueError(f'robot {description.name} ({description.source}) has no arm to plan for')
        if arm is not None and arm not in arms:
            raise ValueError(f'arm: expected one of {sorted(arms)} (arms of {description.name}), got {arm!r}')
        self.arm = arms[arm] if arm is not None else description.default_arm()
        self.margin = float(margin)
        prefix = self.placement.prefix
        self.joint_names: tuple[str, ...] = tuple(self.arm.joints)
        spec = build_scene(world, placements)
        self.model = compile_scene(spec, world, placements)
        fixed_pairs = _arm_pairs_fixed_relative(self.model, [prefix + name for name in self.joint_names])
        if fixed_pairs:
            # MuJoCo would report them at every configuration only for the filter to drop them.
            for body1, body2 in fixed_pairs:
                spec.add_exclude(bodyname1=body1, bodyname2=body2)
            self.model = compile_scene(spec, world, placements)
        self.data = mujoco.MjData(self.model)
        self.bindings = [RobotBinding.bind(self.model, p.model, p.prefix) for p in self.placements]
        self.binding = self.bindings[robot]
        """MuJoCo ids of the planned robot in the planning scene."""
        self._qpos_index = np.array([self.binding.qpos[name] for name in self.joint_names], dtype=int)
        first = int(self._qpos_index[0])
        if np.array_equal(self._qpos_index, np.arange(first, first + len(self.joint_names))):
            self._qpos_index = slice(first, first + len(self.joint_names))  # a chain's joints are consecutive: cheaper
        lower, upper = [], []
        for name in self.joint_names:
            joint = description.tree.joints[name]
            if joint.type == 'continuous' or joint.limit is None:
                low, high = CONTINUOUS_RANGE
            else:
                low, high = joint.limit.lower, joint.limit.upper
            lower.append(low)
            upper.append(high)
        self.lower = np.array(lower)
        self.upper = np.array(upper)
        self._allowed: set[frozenset[int]] = set()
        self._attached: dict[int, _Attachment] = {}
        self._set_initial_state()
        self._prepare_collision_filter([self.binding.joints[name] for name in self.joint_names])

    # ------------------------------------------------------------------ state
    def _set_initial_state(self) -> None:
        """As the simulator starts: joints whose range excludes 0 at their nearest limit."""
        mujoco.mj_resetData(self.model, self.data)
        for placement, binding in zip(self.placements, self.bindings):
            for name, value in placement.model.initial_positions.items():
                self.data.qpos[binding.qpos[name]] = value

    def set_base_pose(self, x: float, y: float, yaw: float, z: float | None = None) -> None:
        """Put a mobile robot's base_footprint at (x, y[, z]) heading ``yaw`` (z: kept, the spawn
        height unless set). A fixed-base robot cannot move: ValueError."""
        description = self.placement.model
        if description.fixed_base:
            raise ValueError(f'robot {description.name} is fixed to the world (fixed_base): its base pose is its mount')
        address = self.binding.root_qpos
        if z is None:
            z = self.data.qpos[address + 2]
        self.data.qpos[address:address + 3] = (x, y, z)
        self.data.qpos[address + 3:address + 7] = (math.cos(yaw / 2), 0.0, 0.0, math.sin(yaw / 2))

    def set_positions(self, positions: Mapping[str, float]) -> None:
        """Set other joints of the planned robot (a gripper's fingers, a mast) by description name;
        a joint that mimics one of them follows it (its equality constraint is not solved here)."""
        tree = self.placement.model.tree
        values = dict(positions)
        for name in list(values):
            if name not in tree.joints or tree.joints[name].type == 'fixed':
                raise ValueError(f'positions: {name!r} is not a moving joint of robot {self.placement.model.name}')
        for joint in tree.moving_joints():
            if joint.mimic is not None and joint.mimic.joint in values and joint.name not in values:
                values[joint.name] = joint.mimic.offset + joint.mimic.multiplier * values[joint.mimic.joint]
        for name, value in values.items():
            self.data.qpos[self.binding.qpos[name]] = value

    def set_world_state(self, qpos: Sequence[float]) -> None:
        """Copy the full ``qpos`` of a simulation of the same world and robots (base poses, free
        boxes, grippers, other robots); the arm joints are then overwritten by each check."""
        qpos = np.asarray(qpos, dtype=float)
        if qpos.shape != (self.model.nq,):
            raise ValueError(f'qpos: expected {self.model.nq} values (the scene model\'s nq), got shape {qpos.shape}')
        self.data.qpos[:] = qpos

    def allow_contact(self, body_a: str, body_b: str) -> None:
        """Ignore contacts between two MuJoCo bodies from now on (e.g. the fingers and the cube
        they are about to grasp)."""
        ids = []
        for name in (body_a, body_b):
            try:
                ids.append(int(self.model.body(name).id))
            except KeyError:
                raise ValueError(f'allow_contact: {name!r} is not a body of the scene') from None
        self._allowed.add(frozenset(ids))

    def forbid_contact(self, body_a: str, body_b: str) -> None:
        """Refuse contacts between two bodies again after :meth:`allow_contact` (no effect otherwise)."""
        ids = []
        for name in (body_a, body_b):
            try:
                ids.append(int(self.model.body(name).id))
            except KeyError:
                raise ValueError(f'forbid_contact: {name!r} is not a body of the scene') from None
        self._allowed.discard(frozenset(ids))

    def attach(self, body: str, link: str, q: Sequence[float]) -> None:
        """Carry the free body ``body`` (a grasped cube) rigidly with the arm body ``link`` (the wrist)
        from now on, in the relative pose the two have with the arm at ``q`` in the current world
        state: the body then counts as part of the arm (its contacts with the world, the robot and
        other arm links are refused, with the margin; with ``link`` and bodies fixed to it, such as
        fingers, it may touch). :meth:`detach` ends it."""
        m, d = self.model, self.data
        ids = []
        for name, what in ((body, 'body'), (link, 'link')):
            try:
                ids.append(int(m.body(name).id))
            except KeyError:
                raise ValueError(f'attach: {what} {name!r} is not a body of the scene') from None
        body_id, link_id = ids
        joint = int(m.body_jntadr[body_id])
        if m.body_jntnum[body_id] != 1 or m.jnt_type[joint] != mujoco.mjtJoint.mjJNT_FREE:
            raise ValueError(f'attach: body {body!r} is not a free body (a world entity with a mass)')
        if not self._arm_body[link_id]:
            raise ValueError(f'attach: link {link!r} is not moved by the arm joints {", ".join(self.joint_names)}')
        q = np.asarray(q, dtype=float)
        if q.shape != (len(self.joint_names),):
            raise ValueError(f'q: expected {len(self.joint_names)} values ({", ".join(self.joint_names)}), '
                             f'got shape {q.shape}')
        self.detach(body)
        self._set_arm(q)
        mujoco.mj_kinematics(m, d)
        link_rotation = d.xmat[link_id].reshape(3, 3)
        offset = link_rotation.T @ (d.xpos[body_id] - d.xpos[link_id])
        relative = np.empty(4)
        mujoco.mju_mulQuat(relative, _conjugate(d.xquat[link_id]), d.xquat[body_id])
        geoms = np.flatnonzero(m.geom_bodyid == body_id)
        saved = (self._relevant[body_id].copy(), [(int(m.geom_contype[g]), int(m.geom_conaffinity[g]),
                                                   float(m.geom_margin[g])) for g in geoms])
        self._attached[body_id] = _Attachment(body_id, link_id, int(m.jnt_qposadr[joint]), offset, relative,
                                              geoms, saved)
        self._arm_body[body_id] = True
        moved = self._moved_by_body[link_id]
        for other in range(m.nbody):
            relevant = self._moved_by_body[other] != moved and other != body_id
            self._relevant[body_id, other] = self._relevant[other, body_id] = relevant
        for geom in geoms:
            if m.geom_contype[geom] or m.geom_conaffinity[geom]:
                m.geom_contype[geom], m.geom_conaffinity[geom] = _ARM_BITS
                m.geom_margin[geom] = self.margin

    def detach(self, body: str) -> None:
        """Stop carrying ``body`` (no effect if it is not attached); it stays where the last check
        put it until :meth:`set_world_state` moves it."""
        try:
            body_id = int(self.model.body(body).id)
        except KeyError:
            raise ValueError(f'detach: {body!r} is not a body of the scene') from None
        attachment = self._attached.pop(body_id, None)
        if attachment is None:
            return
        relevant, geoms = attachment.saved
        self._relevant[body_id] = relevant
        self._relevant[:, body_id] = relevant
        self._arm_body[body_id] = False
        for geom, (contype, conaffinity, margin) in zip(attachment.geoms, geoms):
            self.model.geom_contype[geom], self.model.geom_conaffinity[geom] = contype, conaffinity
            self.model.geom_margin[geom] = margin

    @property
    def attached(self) -> list[str]:
        """Names of the bodies the arm carries."""
        return [self.model.body(body).name for body in self._attached]

    # ------------------------------------------------------------------ collision
    def _prepare_collision_filter(self, planned_joints: list[int]) -> None:
        m = self.model
        moved_by = _moved_by(m, planned_joints)
        self._moved_by_body = moved_by
        self._arm_body = np.array([bool(s) for s in moved_by])
        self._relevant = np.zeros((m.nbody, m.nbody), dtype=bool)
        for a in range(m.nbody):
            for b in range(m.nbody):
                self._relevant[a, b] = (self._arm_body[a] or self._arm_body[b]) and moved_by[a] != moved_by[b]
        for geom in range(m.ngeom):
            if m.geom_contype[geom] == 0 and m.geom_conaffinity[geom] == 0:
                continue  # visual-only
            arm = self._arm_body[m.geom_bodyid[geom]]
            m.geom_contype[geom], m.geom_conaffinity[geom] = _ARM_BITS if arm else _OTHER_BITS
            m.geom_margin[geom] = self.margin if arm else 0.0
            m.geom_gap[geom] = 0.0

    def _describe(self, geom: int) -> str:
        m = self.model
        body = int(m.geom_bodyid[geom])
        if body == 0:  # the floor, walls and fixed entities are geoms of the world body
            return m.geom(geom).name or 'world'
        return m.body(body).name

    def _set_arm(self, q: np.ndarray) -> None:
        self.data.qpos[self._qpos_index] = q

    def in_collision(self, q: Sequence[float]) -> CollisionPair | None:
        """The closest refused contact with the arm at ``q`` (arm joint order), or None when free."""
        m, d = self.model, self.data
        q = np.asarray(q, dtype=float)
        if q.shape != (len(self.joint_names),):
            raise ValueError(f'q: expected {len(self.joint_names)} values ({", ".join(self.joint_names)}), '
                             f'got shape {q.shape}')
        self._set_arm(q)
        mujoco.mj_kinematics(m, d)
        if self._attached:
            self._carry_attached()
        mujoco.mj_collision(m, d)
        if d.ncon == 0:
            return None
        contacts = d.contact
        geom1, geom2, dist = contacts.geom1, contacts.geom2, contacts.dist
        body1, body2 = m.geom_bodyid[geom1], m.geom_bodyid[geom2]
        refused = self._relevant[body1, body2] & (dist < self.margin)
        if not refused.any():
            return None
        candidates = np.flatnonzero(refused)
        if self._allowed:
            candidates = [i for i in candidates if frozenset((int(body1[i]), int(body2[i]))) not in self._allowed]
            if not len(candidates):
                return None
        closest = int(candidates[int(np.argmin(dist[candidates]))])
        g1, g2 = int(geom1[closest]), int(geom2[closest])
        if not self._arm_body[m.geom_bodyid[g1]]:
            g1, g2 = g2, g1
        return CollisionPair(m.body(int(m.geom_bodyid[g1])).name, self._describe(g2), float(dist[closest]),
                             self.margin)

    def _carry_attached(self) -> None:
        """Put every attached body where its link carries it, then recompute the poses."""
        d = self.data
        for attachment in self._attached.values():
            link = attachment.link
            address = attachment.qpos_address
            d.qpos[address:address + 3] = d.xpos[link] + d.xmat[link].reshape(3, 3) @ attachment.offset
            quaternion = np.empty(4)
            mujoco.mju_mulQuat(quaternion, d.xquat[link], attachment.relative)
            d.qpos[address + 3:address + 7] = quaternion
        mujoco.mj_kinematics(self.model, d)

    def is_free(self, q: Sequence[float]) -> bool:
        """Whether the arm at ``q`` touches nothing (within the margin)."""
        return self.in_collision(q) is None

    def segment_free(self, a: np.ndarray, b: np.ndarray, resolution: float, check_start: bool = False) -> bool:
        """Whether every configuration on the straight edge a -> b is free, checked at most
        ``resolution`` apart per joint (``a`` itself only with ``check_start``)."""
        return self._first_collision_on_segment(a, b, resolution, check_start)[0] is None

    def _first_collision_on_segment(self, a, b, resolution, check_start=False):
        steps = max(1, math.ceil(float(np.max(np.abs(b - a))) / resolution))
        checks = 0
        for k in _check_order(steps, check_start):
            checks += 1
            hit = self.in_collision(a + (b - a) * (k / steps))
            if hit is not None:
                return hit, checks
        return None, checks


@dataclass
class _Attachment:
    """A free body carried by an arm link (:meth:`PlanningScene.attach`)."""

    body: int
    link: int
    qpos_address: int
    offset: np.ndarray
    """The body's position in the link frame (m)."""
    relative: np.ndarray
    """The body's orientation in the link frame (quaternion w, x, y, z)."""
    geoms: np.ndarray
    saved: tuple
    """What attaching changed: the body's row of the relevance matrix, (contype, conaffinity, margin) per geom."""


def _conjugate(quaternion: np.ndarray) -> np.ndarray:
    return np.array([quaternion[0], -quaternion[1], -quaternion[2], -quaternion[3]])


def _moved_by(model: mujoco.MjModel, planned_joints: list[int]) -> list[frozenset[int]]:
    """Per body: the bodies of planned joints between it and the world. Two bodies' relative pose
    depends on the plan exactly when these sets differ (they are the joints on the tree path
    between the two)."""
    planned_bodies = {int(model.jnt_bodyid[j]) for j in planned_joints}
    moved_by: list[frozenset[int]] = []
    for body in range(model.nbody):
        inherited = moved_by[int(model.body_parentid[body])] if body else frozenset()
        moved_by.append(inherited | ({body} if body in planned_bodies else set()))
    return moved_by


def _arm_pairs_fixed_relative(model: mujoco.MjModel, planned_joint_names: list[str]) -> list[tuple[str, str]]:
    """Pairs of colliding arm bodies the plan cannot move relative to each other (a gripper's
    fingers), not already skipped by MuJoCo (same body, welded, parent and child, excluded)."""
    moved_by = _moved_by(model, [int(model.joint(name).id) for name in planned_joint_names])
    colliding = sorted({int(model.geom_bodyid[g]) for g in range(model.ngeom)
                        if model.geom_contype[g] or model.geom_conaffinity[g]})
    arm = [body for body in colliding if moved_by[body]]
    excluded = {(int(s) >> 16, int(s) & 0xFFFF) for s in model.exclude_signature}
    pairs = []
    for index, a in enumerate(arm):
        for b in arm[index + 1:]:
            weld_a, weld_b = int(model.body_weldid[a]), int(model.body_weldid[b])
            parent_a, parent_b = (int(model.body_weldid[model.body_parentid[w]]) for w in (weld_a, weld_b))
            skipped = (weld_a == weld_b or parent_a == weld_b or parent_b == weld_a
                       or (min(a, b), max(a, b)) in excluded)
            if moved_by[a] == moved_by[b] and not skipped:
                pairs.append((model.body(a).name, model.body(b).name))
    return pairs


_ORDER_CACHE: dict[tuple[int, bool], tuple[int, ...]] = {}


def _check_order(steps: int, check_start: bool) -> tuple[int, ...]:
    """Indices 1..steps (0..steps with check_start) in the order an edge is checked: its end first,
    then by recursive halving, so a collision anywhere on the edge is found after few checks."""
    key = (steps, check_start)
    if key not in _ORDER_CACHE:
        order, seen = [steps], {steps}
        if check_start:
            order.append(0)
            seen.add(0)
        intervals = [(0, steps)]
        while intervals:
            next_intervals = []
            for low, high in intervals:
                if high - low < 2:
                    continue
                middle = (low + high) // 2
                if middle not in seen:
                    order.append(middle)
                    seen.add(middle)
                next_intervals += [(low, middle), (middle, high)]
            intervals = next_intervals
        _ORDER_CACHE[key] = tuple(order)
    return _ORDER_CACHE[key]


# ---------------------------------------------------------------------------- planning
class _Tree:
    """Nodes in a growing array (nearest neighbour by brute force: a few thousand nodes at most)."""

    def __init__(self, root: np.ndarray):
        self.nodes = np.empty((256, root.size))
        self.nodes[0] = root
        self.parents = [-1]

    @property
    def size(self) -> int:
        return len(self.parents)

    def add(self, q: np.ndarray, parent: int) -> int:
        if self.size == len(self.nodes):
            self.nodes = np.concatenate([self.nodes, np.empty_like(self.nodes)])
        self.nodes[self.size] = q
        self.parents.append(parent)
        return self.size - 1

    def nearest(self, q: np.ndarray) -> int:
        difference = self.nodes[:self.size] - q
        return int(np.argmin(np.einsum('ij,ij->i', difference, difference)))

    def branch(self, index: int) -> list[np.ndarray]:
        """Nodes from ``index`` back to the root."""
        out = []
        while index >= 0:
            out.append(self.nodes[index].copy())
            index = self.parents[index]
        return out


class _Search:
    def __init__(self, scene: PlanningScene, options: PlannerOptions, rng: np.random.Generator):
        self.scene, self.options, self.rng = scene, options, rng
        self.checks = 0

    def edge_free(self, a, b) -> bool:
        hit, checks = self.scene._first_collision_on_segment(a, b, self.options.resolution)
        self.checks += checks
        return hit is None

    def extend(self, tree: _Tree, target: np.ndarray) -> tuple[int, int]:
        near = tree.nearest(target)
        origin = tree.nodes[near]
        step = target - origin
        distance = float(np.linalg.norm(step))
        if distance <= self.options.max_step:
            new, status = target, _REACHED
        else:
            new, status = origin + step * (self.options.max_step / distance), _ADVANCED
        if distance == 0.0:
            return _REACHED, near
        if not self.edge_free(origin.copy(), new):
            return _TRAPPED, -1
        return status, tree.add(new, near)

    def connect(self, tree: _Tree, target: np.ndarray) -> tuple[int, int]:
        while True:
            status, index = self.extend(tree, target)
            if status != _ADVANCED:
                return status, index

    def rrt_connect(self, start: np.ndarray, goal: np.ndarray) -> tuple[list[np.ndarray] | None, int]:
        if self.edge_free(start, goal):
            return [start, goal], 0
        start_tree, goal_tree = _Tree(start), _Tree(goal)
        grow, other = start_tree, goal_tree
        lower, upper = self.scene.lower, self.scene.upper
        for iteration in range(1, self.options.max_iterations + 1):
            sample = self.rng.uniform(lower, upper)
            status, index = self.extend(grow, sample)
            if status != _TRAPPED:
                reached, other_index = self.connect(other, grow.nodes[index].copy())
                if reached == _REACHED:
                    start_index, goal_index = (index, other_index) if grow is start_tree else (other_index, index)
                    # The connecting configuration is in both trees: keep one copy.
                    path = start_tree.branch(start_index)[::-1] + goal_tree.branch(goal_index)[1:]
                    return path, iteration
            grow, other = other, grow
        return None, self.options.max_iterations

    def shortcut(self, path: list[np.ndarray]) -> list[np.ndarray]:
        """Random shortcuts between two points anywhere on the path (not only waypoints)."""
        for _ in range(self.options.shortcut_attempts):
            if len(path) < 3:
                break
            lengths = np.linalg.norm(np.diff(np.array(path), axis=0), axis=1)
            cumulative = np.concatenate([[0.0], np.cumsum(lengths)])
            s1, s2 = np.sort(self.rng.uniform(0.0, cumulative[-1], 2))
            i = min(int(np.searchsorted(cumulative, s1, side='right')) - 1, len(path) - 2)
            j = min(int(np.searchsorted(cumulative, s2, side='right')) - 1, len(path) - 2)
            if i == j:
                continue  # both points on one straight edge: nothing to gain
            p1 = path[i] + (path[i + 1] - path[i]) * ((s1 - cumulative[i]) / lengths[i] if lengths[i] else 0.0)
            p2 = path[j] + (path[j + 1] - path[j]) * ((s2 - cumulative[j]) / lengths[j] if lengths[j] else 0.0)
            if self.edge_free(p1, p2):
                path = path[:i + 1] + [p1, p2] + path[j + 1:]
        return path

    def prune(self, path: list[np.ndarray]) -> list[np.ndarray]:
        """Final pass: from each kept waypoint, jump to the farthest one a free straight edge reaches
        (drops the short kinks that shortcut points leave on an edge)."""
        kept, i = [path[0]], 0
        while i < len(path) - 1:
            j = len(path) - 1
            while j > i + 1 and not self.edge_free(path[i], path[j]):
                j -= 1
            kept.append(path[j])
            i = j
        return kept


def _as_configuration(value, scene: PlanningScene, what: str) -> tuple[np.ndarray | None, str]:
    """(configuration, '') or (None, reason) for a start or goal given as a sequence in the arm's
    joint order or a mapping joint name -> value."""
    names = scene.joint_names
    if isinstance(value, Mapping):
        unknown = [name for name in value if name not in names]
        if unknown:
            return None, (f'{what} names unknown joint {unknown[0]!r}; arm {scene.arm.name!r} has joints '
                          f'{", ".join(names)}')
        missing = [name for name in names if name not in value]
        if missing:
            return None, f'{what} lacks joint {missing[0]!r}; expected values for {", ".join(names)}'
        value = [value[name] for name in names]
    try:
        q = np.array(value, dtype=float)
    except (TypeError, ValueError):
        q = None
    if q is None or q.ndim != 1:
        return None, f'{what}: expected {len(names)} numbers ({", ".join(names)}), got {value!r}'
    if q.shape != (len(names),):
        return None, f'{what} has {q.size} values, expected {len(names)} ({", ".join(names)})'
    bad = np.flatnonzero(~np.isfinite(q))
    if bad.size:
        return None, f'{what}: {names[bad[0]]} is {q[bad[0]]}, expected a finite number'
    return q, ''


def _limit_violation(q: np.ndarray, scene: PlanningScene, what: str, tolerance: float) -> str:
    for name, value, low, high in zip(scene.joint_names, q, scene.lower, scene.upper):
        if value > high + tolerance:
            return f'{what} outside joint limits: {name} {value:.6g} > {high:.6g}'
        if value < low - tolerance:
            return f'{what} outside joint limits: {name} {value:.6g} < {low:.6g}'
    return ''


def plan(scene: PlanningScene, start, goal, seed: int = 0, options: PlannerOptions | None = None) -> PlanResult:
    """A collision-free joint-space path from ``start`` to ``goal`` (each a sequence in
    ``scene.joint_names`` order or a mapping joint name -> value). Bad queries give a result with a
    reason, never an exception. A start within :data:`START_LIMIT_TOLERANCE` outside a limit is
    moved onto it (the path starts there)."""
    options = options or PlannerOptions()
    began = time.perf_counter()
    names = scene.joint_names

    def failure(reason: str, iterations: int = 0, checks: int = 0) -> PlanResult:
        return PlanResult(False, names, np.empty((0, len(names))), time.perf_counter() - began, iterations, checks,
                          reason)

    q_start, reason = _as_configuration(start, scene, 'start')
    if q_start is None:
        return failure(reason)
    q_goal, reason = _as_configuration(goal, scene, 'goal')
    if q_goal is None:
        return failure(reason)
    reason = (_limit_violation(q_start, scene, 'start', START_LIMIT_TOLERANCE)
              or _limit_violation(q_goal, scene, 'goal', 0.0))
    if reason:
        return failure(reason)
    q_start = np.clip(q_start, scene.lower, scene.upper)
    for what, q in (('start', q_start), ('goal', q_goal)):
        hit = scene.in_collision(q)
        if hit is not None:
            return failure(f'{what} in collision: {hit}', checks=1 if what == 'start' else 2)
    search = _Search(scene, options, np.random.default_rng(seed))
    search.checks = 2
    path, iterations = search.rrt_connect(q_start, q_goal)
    if path is None:
        return failure(f'no path within {options.max_iterations} iterations', iterations, search.checks)
    raw = len(path)
    # Pruning first leaves the random shortcuts a path of a few long edges to work on.
    path = search.prune(search.shortcut(search.prune(path)))
    return PlanResult(True, names, np.array(path), time.perf_counter() - began, iterations, search.checks,
                      raw_waypoints=raw)


def dense_path_collision(scene: PlanningScene, path: np.ndarray, resolution: float) -> tuple[int, CollisionPair] | None:
    """The first (edge index, contact) along ``path`` checked every ``resolution``, or None: an
    independent re-check of a planned path (tests, benchmark)."""
    path = np.asarray(path, dtype=float)
    for index in range(len(path) - 1):
        hit, _ = scene._first_collision_on_segment(path[index], path[index + 1], resolution, check_start=True)
        if hit is not None:
            return index, hit
    return None
