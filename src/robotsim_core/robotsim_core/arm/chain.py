"""The serial chain of one arm of a robot description: forward kinematics of its tool frame and the
geometric Jacobian, fast enough for the inner loop of inverse kinematics.

A chain runs from a root link (the model's ``base_link`` unless given) through the arm's joints to a
tool frame. Its joint vector is ordered as the arm role lists its joints. Everything on the way that
is not an arm joint is folded into constant transforms once, with the tree's own forward kinematics
(:func:`robotsim_core.description.kinematics.forward_kinematics`): fixed joints, and any other moving joint on the
path (TIAGo's torso lift under its arm), which stays at ``fixed_positions`` (default: the model's
initial position, else 0) and is listed in :attr:`ArmChain.frozen_joints`.

The tool frame, unless given (``tool=`` a link, optionally with an offset), is the first that exists of:

1. a link fixed to the arm's last link whose name follows a tool-frame convention
   (:data:`TOOL_LINK_CONVENTIONS`: Panda's ``panda_hand_tcp``, UR's ``tool0``, TIAGo's ``arm_tool_link``);
2. the gripper centre, for an arm with gripper joints: the mean of the fingers' collision-shape centres
   with the fingers closed, z along the fingers (the rover: 6 cm out of the wrist, between the fingers);
3. the arm's last link.

Poses are 4x4 homogeneous transforms in the root link's frame; the Jacobian is 6 x N (linear velocity
of the tool point, then angular velocity, both in the root frame) in the joint order of the arm.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from ..description.model import RobotModel
from ..description.kinematics import forward_kinematics

TOOL_LINK_CONVENTIONS = ('tcp', 'tool0', 'tool_link', 'ee_link')
"""Link names taken as the tool frame (the whole name or its last ``_``-separated part(s)), most preferred
first: a tool centre point (``panda_hand_tcp``), the ROS-Industrial flange tool frame (``tool0``), TIAGo's
``arm_tool_link``, the older UR convention ``ee_link`` (x out of the flange rather than z)."""

CONTINUOUS_SAMPLE_RANGE = (-math.pi, math.pi)
"""Where random configurations of an unlimited (continuous) joint are drawn from (rad)."""


class ChainError(ValueError):
    """An arm chain cannot be built; the message reads ``<robot>: <what>: <problem>``."""


@dataclass(frozen=True)
class ToolFrame:
    """Where the chain ends: a fixed ``offset`` (4x4, link <- tool) from ``link``."""

    link: str
    offset: np.ndarray
    description: str


def _skew(vector: np.ndarray) -> np.ndarray:
    x, y, z = vector
    return np.array([[0.0, -z, y], [z, 0.0, -x], [-y, x, 0.0]])


def _rotation_from_z(direction: np.ndarray) -> np.ndarray:
    """The smallest rotation taking +z onto the unit vector ``direction``."""
    z = np.array([0.0, 0.0, 1.0])
    cross, cosine = np.cross(z, direction), float(z @ direction)
    if np.linalg.norm(cross) < 1e-12:
        return np.eye(3) if cosine > 0 else np.diag([1.0, -1.0, -1.0])
    k = _skew(cross)
    return np.eye(3) + k + k @ k / (1.0 + cosine)


class ArmChain:
    """Forward kinematics and Jacobian of one arm (see the module docstring for the frames).

    Raises :class:`ChainError` when the arm, the root or the tool does not fit the description.

    Attributes besides the names: ``lower``/``upper`` joint limits (+-inf for continuous joints),
    ``reach_centre`` the first joint origin no joint can move (the shoulder) and ``reach`` an upper bound
    on the tool point's distance from it (m); ``wrist_to_tool`` the tool point's distance along the tool z
    axis from the last joint's origin and ``wrist_reach`` the bound on that origin's distance from the
    shoulder, when the tool point lies on that axis (else None); ``pitch_axis``/``pitch_origin`` the first
    joint's axis (None unless revolute), which :meth:`tool_pitch` measures from.
    """

    def __init__(self, model: RobotModel, arm: str | None = None, *, root: str | None = None,
                 tool: str | None = None, tool_offset: np.ndarray | None = None,
                 fixed_positions: Mapping[str, float] | None = None):
        tree = model.tree
        self.robot = model.name
        role = self._arm_role(model, arm)
        self.arm = role.name
        self.joint_names: tuple[str, ...] = tuple(role.joints)
        self.gripper_joints: tuple[str, ...] = tuple(role.gripper_joints)
        self.dof = len(self.joint_names)
        where = f'{model.name}: arm {role.name!r}'
        for name in self.joint_names:
            joint = tree.joints.get(name)
            if joint is None:
                raise ChainError(f'{where}: joint {name!r} is not in the description')
            if joint.type == 'fixed':
                raise ChainError(f'{where}: joint {name!r} is fixed, expected a moving joint')
            if joint.mimic is not None:
                raise ChainError(f'{where}: joint {name!r} mimics {joint.mimic.joint!r}; '
                                 'list only independent joints in an arm')
        self.root = root or model.base_link
        if self.root not in tree.links:
            raise ChainError(f'{where}: root: expected a link of the robot, got {self.root!r}')

        flange = tree.joints[self.joint_names[-1]].child
        self.tool = self._tool_frame(model, role, flange, tool, tool_offset)
        path = self._path(model, where)  # joints from the root down to the tool link
        on_path = {joint.name for joint in path}
        missing = [name for name in self.joint_names if name not in on_path]
        if missing:
            raise ChainError(f'{where}: joints {missing} are not between root {self.root!r} and tool link '
                             f'{self.tool.link!r}: expected a serial chain')
        order = [joint.name for joint in path if joint.name in self.joint_names]
        # The public joint vector follows the arm role; the chain computes in path order.
        self._path_index = np.array([self.joint_names.index(name) for name in order])
        self._reordered = order != list(self.joint_names)
        fixed_positions = dict(fixed_positions or {})
        self.frozen_joints: dict[str, float] = {}
        for joint in path:
            if joint.type != 'fixed' and joint.name not in self.joint_names:
                if joint.mimic is not None and joint.mimic.joint in self.joint_names:
                    raise ChainError(f'{where}: joint {joint.name!r} on the chain mimics arm joint '
                                     f'{joint.mimic.joint!r}; mimic joints inside an arm are not supported')
                self.frozen_joints[joint.name] = float(
                    fixed_positions.get(joint.name, model.initial_positions.get(joint.name, 0.0)))
        self._build(model, order)

    # ------------------------------------------------------------------ construction
    @staticmethod
    def _arm_role(model: RobotModel, arm: str | None):
        if not model.arms:
            raise ChainError(f'{model.name}: arms: the robot has no arm')
        names = [role.name for role in model.arms]
        if arm is None:
            return model.default_arm()
        for role in model.arms:
            if role.name == arm:
                return role
        raise ChainError(f'{model.name}: arm: expected one of {names}, got {arm!r}')

    def _tool_frame(self, model: RobotModel, role, flange: str, tool: str | None,
                    tool_offset: np.ndarray | None) -> ToolFrame:
        tree = model.tree
        if tool is not None:
            if tool not in tree.links:
                raise ChainError(f'{model.name}: tool: expected a link of the robot, got {tool!r}')
            offset = np.eye(4) if tool_offset is None else np.asarray(tool_offset, dtype=float)
            if offset.shape != (4, 4) or not np.all(np.isfinite(offset)):
                raise ChainError(f'{model.name}: tool_offset: expected a finite 4x4 transform')
            return ToolFrame(tool, offset, tool if tool_offset is None else f'{tool} + offset')
        fixed_children = self._fixed_descendants(tree, flange)
        for convention in TOOL_LINK_CONVENTIONS:
            for link in fixed_children:
                if link == convention or link.endswith('_' + convention):
                    return ToolFrame(link, np.eye(4), link)
        fingers = [tree.joints[name] for name in role.gripper_joints if name in tree.joints]
        if fingers and all(finger.parent in fixed_children or finger.parent == flange for finger in fingers):
            poses = forward_kinematics(tree, {})  # fingers closed (0), every other joint at 0
            to_flange = np.linalg.inv(poses[flange])
            centres, directions = [], []
            for finger in fingers:
                link_pose = to_flange @ poses[finger.child]
                shapes = tree.links[finger.child].collisions
                local = (np.mean([shape.origin.xyz for shape in shapes], axis=0) if shapes else np.zeros(3))
                centre = link_pose[:3, :3] @ local + link_pose[:3, 3]
                centres.append(centre)
                directions.append(centre - (to_flange @ poses[finger.parent] @ finger.origin.matrix())[:3, 3])
            centre = np.mean(centres, axis=0)
            direction = np.mean(directions, axis=0)
            norm = np.linalg.norm(direction)
            rotation = _rotation_from_z(direction / norm) if norm > 1e-9 else np.eye(3)
            offset = np.eye(4)
            offset[:3, :3], offset[:3, 3] = rotation, centre
            xyz = ', '.join(f'{value:.4g}' for value in centre)
            return ToolFrame(flange, offset, f'gripper centre ({flange} + [{xyz}] m)')
        return ToolFrame(flange, np.eye(4), flange)

    @staticmethod
    def _fixed_descendants(tree, link: str) -> list[str]:
        """Links hanging off ``link`` by fixed joints only, breadth first."""
        found, frontier = [], [link]
        while frontier:
            children = [joint.child for parent in frontier for joint in tree.child_joints(parent)
                        if joint.type == 'fixed']
            found.extend(children)
            frontier = children
        return found

    def _path(self, model: RobotModel, where: str) -> list:
        tree = model.tree
        path, link = [], self.tool.link
        while link != self.root:
            joint = tree.parent_joint(link)
            if joint is None:
                raise ChainError(f'{where}: root: link {self.root!r} is not above the tool link {self.tool.link!r}; '
                                 f'expected the base link ({model.base_link!r}) or another link above the arm')
            path.append(joint)
            link = joint.parent
        return path[::-1]

    def _build(self, model: RobotModel, order: list[str]) -> None:
        """Constant transforms and joint axes of the path, the reach bound and the pitch reference."""
        tree = model.tree
        poses = forward_kinematics(tree, self.frozen_joints)  # arm joints at 0
        joints = [tree.joints[name] for name in order]
        count = len(joints)
        origins = np.empty((count, 4, 4))
        previous = self.root
        for index, joint in enumerate(joints):
            # parent-of-previous-arm-joint's child <- this joint's frame; no arm joint lies in between
            origins[index] = np.linalg.inv(poses[previous]) @ poses[joint.parent] @ joint.origin.matrix()
            previous = joint.child
        self._tool_offset = np.linalg.inv(poses[previous]) @ poses[self.tool.link] @ self.tool.offset
        axes = np.array([np.asarray(joint.axis, dtype=float) / np.linalg.norm(joint.axis) for joint in joints])
        revolute = np.array([joint.type in ('revolute', 'continuous') for joint in joints])
        self._origin_rotation = np.ascontiguousarray(origins[:, :3, :3])
        self._origin_translation = np.ascontiguousarray(origins[:, :3, 3])
        self._axes = axes
        self._revolute = revolute.astype(float)
        self._prismatic = (~revolute).astype(float)
        self._all_revolute = bool(revolute.all())
        skew = np.array([_skew(axis) for axis in axes]) * self._revolute[:, None, None]
        self._skew, self._skew2 = skew, skew @ skew
        # A prismatic joint's displacement per metre, in the frame its origin is given in.
        self._slide = np.einsum('nij,nj->ni', self._origin_rotation, axes) * self._prismatic[:, None]
        self._eye3 = np.eye(3)

        lower, upper, continuous = [], [], []
        for name in self.joint_names:
            joint = tree.joints[name]
            if joint.type == 'continuous':
                lower.append(-math.inf), upper.append(math.inf), continuous.append(True)
                continue
            if joint.limit is None or not joint.limit.lower <= joint.limit.upper:
                raise ChainError(f'{self.robot}: arm {self.arm!r}: joint {name!r}: expected limits with '
                                 f'lower <= upper, got {joint.limit}')
            lower.append(joint.limit.lower), upper.append(joint.limit.upper), continuous.append(False)
        self.lower, self.upper = np.array(lower), np.array(upper)
        self.continuous = np.array(continuous)
        self.sample_lower = np.where(self.continuous, CONTINUOUS_SAMPLE_RANGE[0], self.lower)
        self.sample_upper = np.where(self.continuous, CONTINUOUS_SAMPLE_RANGE[1], self.upper)

        # Joint origins at zero (root frame), in path order, then the tool point.
        frames = self._frames(np.zeros(count))
        points = list(frames[:, :3, 3]) + [(frames[-1] @ self._tool_offset)[:3, 3]]
        axes_root = np.einsum('nij,nj->ni', frames[:, :3, :3], axes)
        # The reach centre: the last joint origin that no earlier joint can move (it lies on every earlier
        # revolute axis, with no prismatic joint before it): the UR/Panda/rover shoulder.
        centre = 0
        for candidate in range(1, count):
            if all(revolute[i] and np.linalg.norm(np.cross(points[candidate] - points[i], axes_root[i])) < 1e-9
                   for i in range(candidate)):
                centre = candidate
            else:
                break
        self.reach_joint = order[centre]
        self.reach_centre = points[centre].copy()
        # A prismatic joint lengthens its segment by at most its largest travel.
        travel = {name: max(abs(low), abs(high)) for name, low, high in zip(self.joint_names, self.lower, self.upper)}
        strokes = [0.0 if revolute[i] else travel[order[i]] for i in range(centre, count)]
        self.reach = float(sum(np.linalg.norm(points[i + 1] - points[i]) for i in range(centre, count)) + sum(strokes))
        # Pitch (angle of the tool axis from the plane normal to the first joint's axis) is defined about
        # the first joint when it is revolute: vertical for the rover's base yaw, UR's pan, Panda's joint 1.
        self.pitch_axis = axes_root[0].copy() if revolute[0] else None
        self.pitch_origin = points[0].copy()
        # The rover: the tool point lies on the tool z axis through the last joint, at this distance.
        last_to_tool = points[-1] - points[-2]
        tool_z = (frames[-1] @ self._tool_offset)[:3, 2]
        along = float(last_to_tool @ tool_z)
        on_axis = revolute[-1] and np.linalg.norm(last_to_tool - along * tool_z) < 1e-9
        self.wrist_to_tool = along if on_axis else None
        self.wrist_reach = (float(sum(np.linalg.norm(points[i + 1] - points[i]) for i in range(centre, count - 1))
                                  + sum(strokes[:-1])) if on_axis and centre < count - 1 else None)

    # ------------------------------------------------------------------ kinematics
    def _frames(self, q_path: np.ndarray) -> np.ndarray:
        """Frame of each joint's child link (N, 4, 4) in the root frame, path order."""
        count = len(q_path)
        sine = np.sin(q_path)[:, None, None]
        versine = (1.0 - np.cos(q_path))[:, None, None]
        motion = self._eye3 + sine * self._skew + versine * self._skew2     # Rodrigues; identity if prismatic
        local = np.zeros((count, 4, 4))
        local[:, :3, :3] = self._origin_rotation @ motion
        local[:, :3, 3] = self._origin_translation
        if not self._all_revolute:
            local[:, :3, 3] += self._slide * q_path[:, None]
        local[:, 3, 3] = 1.0
        frames = np.empty_like(local)
        current = local[0]
        frames[0] = current
        for index in range(1, count):
            current = current @ local[index]
            frames[index] = current
        return frames

    def _path_positions(self, positions) -> np.ndarray:
        q = np.asarray(positions, dtype=float)
        if q.shape != (self.dof,):
            raise ValueError(f'{self.robot}: arm {self.arm!r}: expected {self.dof} joint positions '
                             f'({", ".join(self.joint_names)}), got shape {q.shape}')
        return q[self._path_index] if self._reordered else q

    def forward(self, positions: Sequence[float] | np.ndarray) -> np.ndarray:
        """Tool pose (4x4) in the root frame."""
        return self._frames(self._path_positions(positions))[-1] @ self._tool_offset

    def forward_with_jacobian(self, positions: Sequence[float] | np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(tool pose 4x4, geometric Jacobian 6 x N: tool-point linear velocity then angular velocity)."""
        frames = self._frames(self._path_positions(positions))
        tool = frames[-1] @ self._tool_offset
        axes = (frames[:, :3, :3] @ self._axes[:, :, None])[:, :, 0]       # (N, 3) in the root frame
        lever = tool[:3, 3] - frames[:, :3, 3]
        jacobian = np.empty((6, len(axes)))
        ax, ay, az = axes[:, 0], axes[:, 1], axes[:, 2]
        lx, ly, lz = lever[:, 0], lever[:, 1], lever[:, 2]
        jacobian[0] = ay * lz - az * ly
        jacobian[1] = az * lx - ax * lz
        jacobian[2] = ax * ly - ay * lx
        jacobian[3:] = axes.T
        if not self._all_revolute:
            jacobian[:3] = jacobian[:3] * self._revolute + axes.T * self._prismatic
            jacobian[3:] *= self._revolute
        if self._reordered:
            ordered = np.empty_like(jacobian)
            ordered[:, self._path_index] = jacobian
            jacobian = ordered
        return tool, jacobian

    def jacobian(self, positions: Sequence[float] | np.ndarray) -> np.ndarray:
        return self.forward_with_jacobian(positions)[1]

    # ------------------------------------------------------------------ joint space
    def clamp(self, positions: np.ndarray) -> np.ndarray:
        """Positions inside the limits; continuous joints wrapped to [-pi, pi)."""
        q = np.clip(positions, self.lower, self.upper)
        if self.continuous.any():
            q = np.where(self.continuous, (q + math.pi) % (2 * math.pi) - math.pi, q)
        return q

    def within_limits(self, positions: np.ndarray, slack: float = 1e-9) -> bool:
        q = np.asarray(positions, dtype=float)
        return bool(np.all(q >= self.lower - slack) and np.all(q <= self.upper + slack))

    def random_positions(self, rng: np.random.Generator) -> np.ndarray:
        """A configuration drawn uniformly within the limits."""
        return rng.uniform(self.sample_lower, self.sample_upper)

    def middle_positions(self) -> np.ndarray:
        return (self.sample_lower + self.sample_upper) / 2.0

    def tree_positions(self, positions: Sequence[float] | np.ndarray) -> dict[str, float]:
        """Positions by joint name for the tree's forward kinematics (frozen joints included)."""
        return {**self.frozen_joints, **{name: float(value) for name, value in zip(self.joint_names, positions)}}

    # ------------------------------------------------------------------ tool pitch
    def pitch_reference(self, position: np.ndarray) -> np.ndarray:
        """Unit vector normal to the pitch axis pointing from the first joint's axis towards ``position``
        (the arm's outward direction); any normal when ``position`` is on the axis."""
        axis = self.pitch_axis
        offset = np.asarray(position, dtype=float) - self.pitch_origin
        outward = offset - (offset @ axis) * axis
        norm = np.linalg.norm(outward)
        if norm < 1e-9:
            helper = np.array([1.0, 0.0, 0.0]) if abs(axis[0]) < 0.9 else np.array([0.0, 1.0, 0.0])
            outward = helper - (helper @ axis) * axis
            norm = np.linalg.norm(outward)
        return outward / norm

    def tool_pitch(self, pose: np.ndarray) -> float:
        """Angle (rad) of the tool z axis above the plane normal to the first joint's axis (horizontal
        for a vertical first axis), measured in the direction pointing away from that axis:
        0 horizontal outward, +pi/2 straight up, -pi/2 straight down, +-pi horizontal back towards the
        base. Raises ValueError for an arm whose first joint is not revolute."""
        if self.pitch_axis is None:
            raise ValueError(f'{self.robot}: arm {self.arm!r}: pitch needs a revolute first joint')
        tool_axis = pose[:3, 2]
        return math.atan2(float(tool_axis @ self.pitch_axis),
                          float(tool_axis @ self.pitch_reference(pose[:3, 3])))

    def pitch_direction(self, position: np.ndarray, pitch: float) -> np.ndarray:
        """The tool z axis (unit vector, root frame) of a tool at ``position`` pitched by ``pitch``."""
        return math.cos(pitch) * self.pitch_reference(position) + math.sin(pitch) * self.pitch_axis

    def describe(self) -> str:
        frozen = f', frozen: {self.frozen_joints}' if self.frozen_joints else ''
        return (f'{self.robot} arm {self.arm!r}: {self.dof} joints from {self.root} to {self.tool.description}, '
                f'reach {self.reach:.3f} m from {self.reach_joint}{frozen}')
