"""``robotsim import ROBOT.urdf``: a starting overlay for an existing URDF, for the user to edit.

Guesses, stated in the written file: wheels are the continuous joints whose axis is horizontal
and whose child link has a round collision shape (a differential drive when they sit on both
sides); a wheel without an effort limit or below a swivel is a passive caster wheel, and the joints
between the base and any wheel (caster swivels, suspension) move freely; no wheels means a fixed-base
robot, mounted so that its lowest collision point touches the floor; arms are the serial chains of the
remaining revolute/prismatic joints (mimic joints left out), one arm per branch of the tree, and the
chains hanging below an arm's last joint (a hand's fingers) are that arm's gripper.
"""

from __future__ import annotations

import os
import re

import numpy as np

from ..errors import DescriptionError
from .kinematics import forward_kinematics
from .urdf import default_package_resolver, urdf_to_tree

MIN_ARM_JOINTS = 1
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
        """The chain of at least HAND_OWNER_JOINTS joints nearest above chain ``index`` (the smallest subtree)."""
        parent = tree.joints[chains[index][0]].parent
        above = [other for other, tip in enumerate(tips)
                 if other != index and parent in tip and len(chains[other]) >= HAND_OWNER_JOINTS]
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
    if mobile:
        lines += ['# Wheels: continuous joints about a horizontal axis with a round collision shape; driven: false for',
                  '# caster wheels (below a swivel, or without an effort limit in the URDF).',
                  'drive:', '  type: differential', '  max_linear_speed: 1.0', 'wheels:']
        lines += [f'  - {{joint: {name}}}' for name in wheels if name not in passive]
        lines += [f'  - {{joint: {name}, driven: false}}' for name in wheels if name in passive]
        if free:
            lines += ['# Free (no role, unactuated): the joints between the base and its wheels: '
                      + ', '.join(sorted(free)) + '.']
    else:
        lowest = _lowest_point(tree)
        height = max(0.0, -lowest) if lowest is not None else 0.0
        lines += ['# No wheels found: a fixed-base robot, its root link welded to the world at mount, raised so that its',
                  f'# lowest collision point (at the initial joint positions) touches the floor: {height:.4f} m.',
                  f'mount: {{xyz: [0, 0, {round(height + 1e-4, 4)}], rpy: [0, 0, 0]}}']
    # Longest first: the first arm is the one commands mean when they name none (RobotModel.default_arm picks the one
    # with the most joints in any overlay).
    arms = arms_and_grippers(tree, [chain for chain in _arm_chains(tree, set(wheels) | free)
                                    if len(chain) >= MIN_ARM_JOINTS])
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
