"""Inertials as real URDFs have them -> inertials MuJoCo accepts, with the same total mass.

MuJoCo accepts a massless body that has no joint; it refuses a *moving* body (one with a joint,
or the floating root with its free joint) whose composite inertia is zero or not physical.
Real URDFs are full of massless frames (``base_footprint``, ``tool0``) and some carry tensors that
are not positive definite or break the triangle inequality. So:

1. **Lumping**: every link on a fixed joint is rigidly part of its nearest moving ancestor (or of
   the root): its inertial is added to that body's (composite mass, centre of mass, inertia by the
   parallel-axis theorem). Link poses do not change, nor does the total mass.
2. **Repair** of a lumped body whose tensor is invalid: eigen-decomposition ``I = R diag(a, b, c) R^T``
   (a <= b <= c); every principal moment is raised to at least :func:`moment_floor` (positivity), then,
   if a + b < c, the smallest moment is raised to c - b (plus 1e-9 c) so that A + B >= C holds: the
   smallest change that makes the tensor physical. The axes R are kept. A moving body with no mass
   at all gets :data:`REPAIR_MASS`. Each repaired body gives one warning line; ``strict`` makes it
   an error instead.
"""

from __future__ import annotations

import numpy as np

from ..errors import DescriptionError
from ..geometry import Pose
from .model import Inertial, KinematicTree

REPAIR_MASS = 1e-3          # kg given to a moving body that has none
MOMENT_FLOOR_RADIUS = 1e-4  # m: a principal moment is at least mass * (0.1 mm)^2 ...
MOMENT_FLOOR_MIN = 1e-12    # kg m^2: ... and at least this (MuJoCo's resolution is 1e-15)


def moment_floor(mass: float) -> float:
    return max(mass * MOMENT_FLOOR_RADIUS ** 2, MOMENT_FLOOR_MIN)


def tensor(inertia) -> np.ndarray:
    ixx, ixy, ixz, iyy, iyz, izz = inertia
    return np.array([[ixx, ixy, ixz], [ixy, iyy, iyz], [ixz, iyz, izz]], dtype=float)


def _six(matrix: np.ndarray) -> tuple[float, float, float, float, float, float]:
    return (float(matrix[0, 0]), float(matrix[0, 1]), float(matrix[0, 2]), float(matrix[1, 1]),
            float(matrix[1, 2]), float(matrix[2, 2]))


def lump(tree: KinematicTree, moving: set[str]) -> tuple[dict[str, str], dict[str, Inertial | None]]:
    """(body of each link, inertial of each body in its own frame). ``moving``: the links that move
    on their own (moving joint, floating root); every other link belongs to its nearest ancestor in
    ``moving`` or to the root. A body that receives nothing keeps its own inertial object unchanged."""
    root = tree.root()
    owner: dict[str, str] = {}
    in_owner: dict[str, np.ndarray] = {}   # link pose in its owner body's frame
    for link in tree.depth_first():
        joint = tree.parent_joint(link)
        if link == root or link in moving:
            owner[link], in_owner[link] = link, np.eye(4)
        else:
            owner[link] = owner[joint.parent]
            in_owner[link] = in_owner[joint.parent] @ joint.origin.matrix()
    members: dict[str, list[str]] = {}
    for link in tree.depth_first():
        if tree.links[link].inertial is not None and tree.links[link].inertial.mass != 0:
            members.setdefault(owner[link], []).append(link)
    result: dict[str, Inertial | None] = {link: None for link in tree.links}
    for body, links in members.items():
        if links == [body]:
            result[body] = tree.links[body].inertial
            continue
        parts = []
        for link in links:
            inertial = tree.links[link].inertial
            frame = in_owner[link] @ inertial.origin.matrix()
            rotation = frame[:3, :3]
            parts.append((inertial.mass, frame[:3, 3], rotation @ tensor(inertial.inertia) @ rotation.T))
        mass = sum(part[0] for part in parts)
        if mass <= 0:
            result[body] = Inertial(Pose(), mass, (0.0,) * 6)
            continue
        centre = sum(part[0] * part[1] for part in parts) / mass
        total = np.zeros((3, 3))
        for part_mass, position, rotated in parts:
            offset = position - centre
            total += rotated + part_mass * (offset @ offset * np.eye(3) - np.outer(offset, offset))
        result[body] = Inertial(Pose(tuple(float(v) for v in centre)), float(mass), _six(total))
    return owner, result


def repair(inertial: Inertial | None, moving: bool) -> tuple[Inertial | None, str | None]:
    """(valid inertial, what changed or None). Only a moving body needs mass."""
    if inertial is None or inertial.mass <= 0:
        if not moving:
            return inertial, None
        floor = moment_floor(REPAIR_MASS)
        before = 'no inertial' if inertial is None else f'mass {inertial.mass:g} kg'
        return (Inertial(Pose(), REPAIR_MASS, (floor, 0.0, 0.0, floor, 0.0, floor)),
                f'{before} on a moving body: mass {REPAIR_MASS:g} kg, principal moments {floor:.3g} kg m^2')
    moments, axes = np.linalg.eigh(tensor(inertial.inertia))
    floor = moment_floor(inertial.mass)
    fixed = np.maximum(moments, floor)
    a, b, c = fixed  # eigh returns them ascending
    if a + b < c:
        fixed[0] = c - b + 1e-9 * c
    if np.array_equal(fixed, moments):
        return inertial, None
    repaired = axes @ np.diag(fixed) @ axes.T
    # Keep the tensor symmetric to the last bit: MuJoCo decomposes it again.
    repaired = (repaired + repaired.T) / 2
    change = (f'principal moments ({", ".join(f"{v:.4g}" for v in moments)}) -> '
              f'({", ".join(f"{v:.4g}" for v in fixed)}) kg m^2')
    return Inertial(inertial.origin, inertial.mass, _six(repaired)), change


def mujoco_inertials(tree: KinematicTree, floating_root: bool, source: str, strict: bool,
                     warnings: list[str]) -> dict[str, Inertial | None]:
    """Lumped and repaired inertial of every MuJoCo body (None: a massless body without a joint)."""
    moving = {joint.child for joint in tree.moving_joints()}
    root = tree.root()
    if floating_root:
        moving.add(root)
    _, lumped = lump(tree, moving)
    for body, inertial in lumped.items():
        repaired, change = repair(inertial, body in moving)
        if change is None:
            continue
        if strict:
            raise DescriptionError(source, f'link[{body}].inertial',
                                   f'invalid for a simulated body ({change} would repair it; strict refuses repairs)')
        warnings.append(f'{source}: link[{body}].inertial repaired: {change}')
        lumped[body] = repaired
    return lumped
