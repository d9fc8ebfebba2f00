"""``robotsim import ROBOT.urdf``: a starting overlay for an existing URDF, for the user to edit.

Guesses, stated in the written file: wheels are the continuous joints whose axis is horizontal
and whose child link has a round collision shape (a differential drive when they sit on both
sides); a wheel without an effort limit or below a swivel is a passive caster wheel, and the joints
between the base and any wheel (caster swivels, suspension) move freely; no wheels and two or more links named
foot, sole, toe or ankle means a robot standing on its legs (a floating base, the joints from the root to each foot
servoed); otherwise no wheels means a fixed-base robot, mounted so that its lowest collision point touches the
floor; arms are the serial chains of the
remaining revolute/prismatic joints (mimic joints left out), one arm per branch of the tree, and the
chains hanging below an arm's last joint (a hand's fingers) are that arm's gripper; a chain of fewer than three
joints without a gripper (a torso lift, a head) is no arm: its joints are held where they start.
"""

from __future__ import annotations

import os
import re

import numpy as np

from ..errors import DescriptionError
from .kinematics import forward_kinematics, joint_motion
from .urdf import default_package_resolver, urdf_to_tree

MIN_ARM_JOINTS = 1
MIN_ARM_CHAIN = 3
"""A chain of fewer joints and no gripper is no arm (a torso lift, a head, a suspension): its joints are held."""
HAND_OWNER_JOINTS = 3
"""A chain hanging below another chain's last joint is that chain's hand (its gripper) when the chain above has this
many joints: below a torso lift or a head, chains are arms and cameras, not fingers."""


def robot_name(urdf_name: str) -> str:
    """The URDF's robot name as a robot name robotsim takes (letters, digits and _, starting with a letter):
    other characters become _, and a name that does not start with a letter gets ``robot_`` in front."""
    name = re.sub(r'[^A-Za-z0-9_]', '_', urdf_name) or 'robot'
    return name if name[0].isalpha() else f'robot_{name}'


GRIPPER_WORDS = re.compile(r'finger|gripper|jaw|claw|grasp|knuckle', re.IGNORECASE)
"""A joint whose name says one of these moves a gripper, not the arm (the joint's name only: a wrist roll moves a link
called gripper too)."""


def _gripper_like(tree, name: str) -> bool:
    return bool(GRIPPER_WORDS.search(name))


def _below(tree, link: str) -> set[str]:
    """Every link below ``link`` (itself included)."""
    found, stack = set(), [link]
    while stack:
        current = stack.pop()
        found.add(current)
        stack.extend(joint.child for joint in tree.child_joints(current))
    return found


def arms_and_grippers(tree, chains: list[list[str]]) -> list[tuple[list[str], list[str]]]:
    """(arm joints, gripper joints) per arm: a chain's trailing finger/gripper/jaw joints are its gripper, not its last
    wrist joints; a chain made only of such joints, and any chain hanging below the last joint of another (a hand's
    fingers below a wrist), is that arm's gripper (its mimic followers with it, after the joint they follow). Longest
    arm first (stable: equal lengths keep the URDF's order)."""
    tips = [_below(tree, tree.joints[chain[-1]].child) for chain in chains]

    def owner(index: int) -> int | None:
        """The chain of at least HAND_OWNER_JOINTS joints, and at least as many as chain ``index``, nearest above it (the
        smallest subtree)."""
        parent = tree.joints[chains[index][0]].parent
        above = [other for other, tip in enumerate(tips)
                 if other != index and parent in tip and len(chains[other]) >= HAND_OWNER_JOINTS
                 and len(chains[other]) >= len(chains[index])]  # a longer arm below a torso is no finger of it
        return min(above, key=lambda other: len(tips[other])) if above else None

    owners = [owner(index) for index in range(len(chains))]
    arms, by_chain, grippers = [], {}, []
    for index, chain in enumerate(chains):
        if owners[index] is not None:
            continue
        cut = len(chain)
        while cut > 0 and _gripper_like(tree, chain[cut - 1]):
            cut -= 1
        if cut == 0:
            grippers.append(chain)
        else:
            by_chain[index] = (chain[:cut], chain[cut:])
            arms.append(by_chain[index])
    for index, chain in enumerate(chains):
        if owners[index] is not None:  # below another chain's last joint: a hand's finger
            top = owners[index]
            while top not in by_chain and owners[top] is not None:
                top = owners[top]
            if top in by_chain:
                by_chain[top][1].extend(chain)
            else:
                grippers.append(chain)
    for fingers in grippers:
        parent = tree.joints[fingers[0]].parent
        owner_arm = next((arm for arm in arms if parent in _below(tree, tree.joints[arm[0][-1]].child)), None)
        if owner_arm is None:
            arms.append((fingers, []))  # no arm above it: a hand of its own
        else:
            owner_arm[1].extend(fingers)
    for _, gripper in arms:
        followers = [j.name for j in tree.moving_joints() if j.mimic is not None and j.mimic.joint in gripper]
        gripper.extend(name for name in followers if name not in gripper)
    return sorted(arms, key=lambda arm: len(arm[0]), reverse=True)


FOOT_WORDS = re.compile(r'foot|sole|toe|ankle', re.IGNORECASE)
"""A link whose name says one of these (the lowest in its branch) is a foot: a robot without wheels that has two or
more stands on its legs."""
LEG_STIFFNESS = 10.0
"""Drafted position gain of the leg servos, per N m of the load on one leg (the robot's weight over its feet, times
the root-to-foot distance; 1/rad): a joint carrying that torque sags 0.1 rad at most (the Go1 gets about
150 N m/rad)."""


def _legs(tree) -> tuple[list[str], list[str]]:
    """(leg joints, feet): the feet are the lowest links named foot, sole, toe or ankle in their branch (the nearest
    link at or above one through fixed joints that has a collision shape: what touches the ground); the leg joints
    are the moving joints on the way from the root to each foot (mimic joints left out), foot by foot."""
    named = [name for name in tree.links if FOOT_WORDS.search(name) and name != tree.root()]
    lowest = [name for name in named if not any(other != name and other in _below(tree, name) for other in named)]
    feet, joints = [], []
    for name in lowest:
        link = name
        while not tree.links[link].collisions:
            joint = _parent_joint(tree, link)
            if joint is None or joint.type != 'fixed':
                break
            link = joint.parent
        if not tree.links[link].collisions or link in feet:
            continue
        path, current = [], link
        while (joint := _parent_joint(tree, current)) is not None:
            if joint.type != 'fixed' and joint.mimic is None:
                path.append(joint.name)
            current = joint.parent
        if not path or any(j in joints for j in path):  # a foot on no joint, or on another foot's leg: not a leg
            continue
        feet.append(link)
        joints += reversed(path)
    return (joints, feet) if len(feet) >= 2 else ([], [])


STANCE_HEIGHT = 0.65
"""Drafted stance: each foot this fraction of its leg's reach below the leg's first joint (the Go1's SRDF standing
pose puts its feet at 0.6)."""
CROUCH_HEIGHT = 0.3
"""Drafted crouch: each foot this fraction of its leg's reach below the leg's first joint (legs folded, lying)."""


def _leg_pose(tree, joints: list[str], foot: str, fraction: float, start: dict[str, float]) -> dict[str, float]:
    """Angles of one leg's joints that put its foot ``fraction`` of the leg's reach straight below the leg's first
    joint, within the joints' limits (damped least squares from a few starts; a leg of six or more joints keeps the
    foot's orientation at ``start`` too, so that a humanoid's sole stays flat). Rounded to 0.1 mrad inside the
    limits."""
    path, link = [], foot
    while (joint := _parent_joint(tree, link)) is not None:
        path.append(joint)
        link = joint.parent
    path.reverse()
    origins = [joint.origin.matrix() for joint in path]

    def frames(values: dict[str, float]) -> list[np.ndarray]:
        """The pose of each joint's child frame along the path from the root to the foot."""
        pose, found = np.eye(4), []
        for joint, origin in zip(path, origins):
            pose = pose @ origin @ joint_motion(joint, values.get(joint.name, start.get(joint.name, 0.0)))
            found.append(pose)
        return found

    at_start = frames(start)
    child = {joint.name: pose for joint, pose in zip(path, at_start)}
    hip = child[joints[0]][:3, 3]
    points = [child[j][:3, 3] for j in joints] + [at_start[-1][:3, 3]]
    reach = sum(float(np.linalg.norm(b - a)) for a, b in zip(points, points[1:]))
    target = np.array([hip[0], at_start[-1][1, 3], hip[2] - fraction * reach])
    rotation = at_start[-1][:3, :3]
    with_orientation = len(joints) >= 6
    limits = [(tree.joints[j].limit.lower, tree.joints[j].limit.upper)
              if tree.joints[j].limit is not None and tree.joints[j].type != 'continuous' else (-np.inf, np.inf)
              for j in joints]
    lower, upper = np.array([lo for lo, _ in limits]), np.array([hi for _, hi in limits])

    def error(q: np.ndarray) -> np.ndarray:
        pose = frames(dict(zip(joints, q)))[-1]
        e = target - pose[:3, 3]
        if with_orientation:
            r = rotation @ pose[:3, :3].T
            e = np.concatenate([e, 0.5 * np.array([r[2, 1] - r[1, 2], r[0, 2] - r[2, 0], r[1, 0] - r[0, 1]])])
        return e

    best = None
    initial = np.array([start.get(j, 0.0) for j in joints])
    for offset in (0.0, 0.5, -0.5):
        q = np.clip(initial + offset, lower, upper)
        for _ in range(60):
            e = error(q)
            if float(np.abs(e).max()) < 1e-9:
                break
            jacobian = np.empty((len(e), len(q)))
            for k in range(len(q)):
                moved = q.copy()
                moved[k] += 1e-6
                jacobian[:, k] = (e - error(moved)) / 1e-6
            step = jacobian.T @ np.linalg.solve(jacobian @ jacobian.T + 1e-4 * np.eye(len(e)), e)
            q = np.clip(q + step, lower, upper)
        score = (round(float(np.linalg.norm(error(q))), 4), float(np.abs(q - initial).sum()))
        if best is None or score < best[0]:
            best = (score, q)
    inside_lower, inside_upper = np.ceil(lower * 1e4) / 1e4, np.floor(upper * 1e4) / 1e4
    rounded = np.minimum(np.maximum(np.round(best[1], 4), inside_lower), inside_upper)
    return {j: float(v) for j, v in zip(joints, rounded)}


def _path_joints(tree, link: str) -> set[str]:
    """The joints between the root and ``link``."""
    found = set()
    while (joint := _parent_joint(tree, link)) is not None:
        found.add(joint.name)
        link = joint.parent
    return found


def _wheel_joints(tree) -> list[str]:
    """Continuous joints about a horizontal axis with a round collision shape (or named wheel)."""
    poses = forward_kinematics(tree, {})
    wheels = []
    for joint in tree.moving_joints():
        if joint.type != 'continuous' or joint.mimic is not None:
            continue
        link = tree.links[joint.child]
        if not any(shape.geometry.kind in ('cylinder', 'sphere') for shape in link.collisions) \
                and 'wheel' not in joint.name:
            continue
        axis = poses[joint.child][:3, :3] @ np.asarray(joint.axis, dtype=float)
        if abs(axis[2]) < 0.5 * np.linalg.norm(axis):  # spins about a horizontal axis
            wheels.append(joint.name)
    return wheels


def _parent_joint(tree, link: str):
    return next((joint for joint in tree.joints.values() if joint.child == link), None)


def _drive_joints(tree, wheels: list[str]) -> tuple[set[str], set[str]]:
    """(passive wheels, free joints): the moving joints between the base and any wheel (caster swivels, suspension)
    are free; a wheel below a swivel (a moving joint about a vertical axis) or without an effort limit is a passive
    caster wheel."""
    poses = forward_kinematics(tree, {})
    free, passive = set(), set()
    for wheel in wheels:
        joint = tree.joints[wheel]
        above = _parent_joint(tree, joint.parent)
        swivel = False
        while above is not None:
            if above.type != 'fixed' and above.mimic is None:
                free.add(above.name)
                axis = poses[above.child][:3, :3] @ np.asarray(above.axis, dtype=float)
                swivel = swivel or (above.type in ('continuous', 'revolute') and abs(axis[2]) > 0.9 * np.linalg.norm(axis))
            above = _parent_joint(tree, above.parent)
        if swivel or joint.limit is None or not joint.limit.effort > 0:
            passive.add(wheel)
    return passive, free


def _lowest_point(tree) -> float | None:
    """z (m, in the root link's frame) of the lowest collision point with every joint at its initial position; None
    when the robot has no collision shape."""
    from .urdf_import import initial_positions, lowest_point

    return lowest_point(tree, initial_positions(tree))


def _arm_chains(tree, exclude: set[str]) -> list[list[str]]:
    """Serial chains of actuatable joints: a chain ends where the tree branches into two or more
    chains of actuatable joints."""
    actuatable = {j.name for j in tree.moving_joints() if j.mimic is None and j.name not in exclude}

    def below(link: str) -> list[str]:
        """First actuatable joints reachable from link (through fixed or excluded joints)."""
        found = []
        for joint in tree.child_joints(link):
            found += [joint.name] if joint.name in actuatable else below(joint.child)
        return found

    chains, starts = [], below(tree.root())
    while starts:
        chain = [starts.pop(0)]
        while True:
            following = below(tree.joints[chain[-1]].child)
            if len(following) == 1:
                chain.append(following[0])
                continue
            starts.extend(following)
            break
        chains.append(chain)
    return chains


def draft_overlay(urdf_path: str, out_path: str) -> str:
    try:
        with open(urdf_path, encoding='utf-8') as stream:
            text = stream.read()
    except OSError as error:
        raise DescriptionError(urdf_path, '', f'cannot read URDF: {error.strerror}') from None
    base_dir = os.path.dirname(os.path.abspath(urdf_path))
    tree = urdf_to_tree(text, urdf_path, base_dir, default_package_resolver(search_from=base_dir))
    wheels = _wheel_joints(tree)
    sides = set()
    if wheels:
        poses = forward_kinematics(tree, {})
        sides = {np.sign(round(float(poses[tree.joints[w].child][1, 3]), 6)) for w in wheels}
    mobile = len(wheels) >= 2 and {1.0, -1.0} <= sides
    root = tree.root()
    base_link = 'base_link' if 'base_link' in tree.links else (
        tree.child_joints(root)[0].child if root == 'world' and tree.child_joints(root) else root)
    if mobile:
        base_link = tree.joints[wheels[0]].parent if 'base_link' not in tree.links else base_link
    relative = os.path.relpath(os.path.abspath(urdf_path), os.path.dirname(os.path.abspath(out_path)))
    lines = [f'# Starting overlay for {os.path.basename(urdf_path)}, written by `robotsim import`: check every guess,',
             '# then `robotsim describe` this file. Keys: src/robotsim_core/robotsim_core/description/spec.py',
             f'urdf: {relative}', f'name: {robot_name(tree.name)}'
             + (f'  # the URDF calls it {tree.name!r}, not a name robotsim takes' if robot_name(tree.name) != tree.name
                else ''), f'base_link: {base_link}']
    passive, free = _drive_joints(tree, wheels) if mobile else (set(), set())
    leg_joints, feet = _legs(tree) if not mobile and root != 'world' else ([], [])
    if leg_joints:
        from .urdf_import import initial_positions

        poses = forward_kinematics(tree, initial_positions(tree))
        weight = 9.81 * sum(link.inertial.mass for link in tree.links.values() if link.inertial)
        reach = max(float(np.linalg.norm(poses[foot][:3, 3])) for foot in feet)
        kp = float(f'{max(1.0, LEG_STIFFNESS * weight / len(feet) * reach):.3g}')
        start = initial_positions(tree)
        legs = [[j for j in leg_joints if j in _path_joints(tree, foot)] for foot in feet]
        stance, crouch = {}, {}
        for leg, foot in zip(legs, feet):
            stance.update(_leg_pose(tree, leg, foot, STANCE_HEIGHT, start))
            crouch.update(_leg_pose(tree, leg, foot, CROUCH_HEIGHT, start))

        def angles(pose: dict[str, float]) -> str:
            return '{' + ', '.join(f'{joint}: {value + 0.0:g}' for joint, value in pose.items()) + '}'  # no -0
        lines += ['# No wheels, and links named foot, sole, toe or ankle: a robot that stands on its legs (a floating base).',
                  '# Leg joints: the moving joints from the root to each foot, driven by joint PD servos; kp is',
                  f'# {LEG_STIFFNESS:g} x the weight on one foot ({weight / len(feet):.1f} N) x the root-to-foot '
                  f'distance ({reach:.3f} m), kd kp / 50.',
                  f"# stance: each foot {STANCE_HEIGHT:g} of its leg's reach straight below the leg's first joint; "
                  f'crouch: {CROUCH_HEIGHT:g}',
                  '# (inverse kinematics within the joint limits; a leg of six or more joints keeps its foot level).',
                  '# It starts in its crouch with its lowest collision point on the floor (make sim ROBOT=this file: '
                  'it stands up).',
                  'legs:', f'  joints: [{", ".join(leg_joints)}]', f'  feet: [{", ".join(feet)}]',
                  f'  kp: {kp:g}', f'  kd: {float(f"{kp / 50:.3g}"):g}',
                  f'  stance: {angles(stance)}', f'  crouch: {angles(crouch)}']
        free |= set(leg_joints)  # not arms
    if mobile:
        lines += ['# Wheels: continuous joints about a horizontal axis with a round collision shape; driven: false for',
                  '# caster wheels (below a swivel, or without an effort limit in the URDF).',
                  'drive:', '  type: differential', '  max_linear_speed: 1.0', 'wheels:']
        lines += [f'  - {{joint: {name}}}' for name in wheels if name not in passive]
        lines += [f'  - {{joint: {name}, driven: false}}' for name in wheels if name in passive]
        if free:
            lines += ['# Free (no role, unactuated): the joints between the base and its wheels: '
                      + ', '.join(sorted(free)) + '.']
    elif not leg_joints:
        lowest = _lowest_point(tree)
        height = max(0.0, -lowest) if lowest is not None else 0.0
        lines += ['# No wheels found: a fixed-base robot, its root link welded to the world at mount, raised so that its',
                  f'# lowest collision point (at the initial joint positions) touches the floor: {height:.4f} m.',
                  f'mount: {{xyz: [0, 0, {round(height + 1e-4, 4)}], rpy: [0, 0, 0]}}']
    # Longest first: the first arm is the one commands mean when they name none (RobotModel.default_arm picks the one
    # with the most joints in any overlay).
    arms = arms_and_grippers(tree, [chain for chain in _arm_chains(tree, set(wheels) | free)
                                    if len(chain) >= MIN_ARM_JOINTS])
    held = [joint for joints, gripper in arms if len(joints) < MIN_ARM_CHAIN and not gripper for joint in joints]
    arms = [(joints, gripper) for joints, gripper in arms if len(joints) >= MIN_ARM_CHAIN or gripper]
    if held:
        lines += [f'# Held (no arm: chains of fewer than {MIN_ARM_CHAIN} joints without a gripper, such as a torso lift '
                  "or a head's", '# pan and tilt): each held at its initial position by a position servo.',
                  f'held_joints: [{", ".join(held)}]']
    if arms:
        lines += ['# Arms: serial chains of the remaining joints, longest first (mimic joints follow their leader);',
                  '# trailing joints named finger, gripper, jaw, claw, grasp or knuckle, and the chains below an',
                  "# arm's last joint (a hand), are the arm's gripper_joints, the joint a finger mimics first.",
                  'arms:']
        for index, (joints, gripper) in enumerate(arms):
            name = 'arm' if index == 0 else f'arm{index + 1}'
            lines.append(f'  - {{name: {name}, joints: [{", ".join(joints)}]'
                         + (f', gripper_joints: [{", ".join(gripper)}]' if gripper else '') + '}')
    lines += ['# sensors: [{type: lidar, name: laser, parent: base_link, pose: {xyz: [0, 0, 0.2]}}]', '']
    return '\n'.join(lines)
