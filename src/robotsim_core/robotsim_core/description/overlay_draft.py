"""``robotsim import ROBOT.urdf``: a starting overlay for an existing URDF, for the user to edit.

Guesses, stated in the written file: wheels are the continuous joints whose axis is horizontal
and whose child link has a round collision shape (a differential drive when they sit on both
sides); no wheels means a fixed-base robot; arms are the serial chains of the remaining
revolute/prismatic joints (mimic joints left out), one arm per branch of the tree.
"""

from __future__ import annotations

import os
import re

import numpy as np

from ..errors import DescriptionError
from .kinematics import forward_kinematics
from .urdf import default_package_resolver, urdf_to_tree

MIN_ARM_JOINTS = 1


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
    wrist joints, and a chain made only of such joints, hanging below an arm's last link, is that arm's gripper
    (its mimic followers with it, after the joint they follow). Longest arm first (stable: equal lengths keep the
    URDF's order)."""
    arms, grippers = [], []
    for chain in chains:
        cut = len(chain)
        while cut > 0 and _gripper_like(tree, chain[cut - 1]):
            cut -= 1
        if cut == 0:
            grippers.append(chain)
        else:
            arms.append((chain[:cut], chain[cut:]))
    for fingers in grippers:
        parent = tree.joints[fingers[0]].parent
        owner = next((arm for arm in arms if parent in _below(tree, tree.joints[arm[0][-1]].child)), None)
        if owner is None:
            arms.append((fingers, []))  # no arm above it: a hand of its own
        else:
            owner[1].extend(fingers)
    for _, gripper in arms:
        followers = [j.name for j in tree.moving_joints() if j.mimic is not None and j.mimic.joint in gripper]
        gripper.extend(name for name in followers if name not in gripper)
    return sorted(arms, key=lambda arm: len(arm[0]), reverse=True)


def _wheel_joints(tree) -> list[str]:
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
    if mobile:
        lines += ['# Wheels: continuous joints about a horizontal axis with a round collision shape.',
                  'drive:', '  type: differential', '  max_linear_speed: 1.0', 'wheels:']
        lines += [f'  - {{joint: {name}}}' for name in wheels]
    else:
        lines += ['# No wheels found: a fixed-base robot, its root link welded to the world at mount.',
                  'mount: {xyz: [0, 0, 0], rpy: [0, 0, 0]}']
    # Longest first: the first arm is the one commands mean when they name none (RobotModel.default_arm picks the one
    # with the most joints in any overlay).
    arms = arms_and_grippers(tree, [chain for chain in _arm_chains(tree, set(wheels)) if len(chain) >= MIN_ARM_JOINTS])
    if arms:
        lines += ['# Arms: serial chains of the remaining joints, longest first (mimic joints follow their leader);',
                  '# trailing joints named finger, gripper, jaw, claw, grasp or knuckle are the',
                  "# arm's gripper_joints, the joint a finger mimics first.",
                  'arms:']
        for index, (joints, gripper) in enumerate(arms):
            name = 'arm' if index == 0 else f'arm{index + 1}'
            lines.append(f'  - {{name: {name}, joints: [{", ".join(joints)}]'
                         + (f', gripper_joints: [{", ".join(gripper)}]' if gripper else '') + '}')
    lines += ['# sensors: [{type: lidar, name: laser, parent: base_link, pose: {xyz: [0, 0, 0.2]}}]', '']
    return '\n'.join(lines)
