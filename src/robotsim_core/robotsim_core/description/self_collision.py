"""Which link pairs of an imported robot may collide with each other.

A URDF does not say; Gazebo and MoveIt users exclude pairs by convention. Excluded here, each
pair counted under the first reason that applies (``robotsim describe`` prints the counts):

* ``adjacent``: links joined by one moving joint, where links on fixed joints count as one rigid
  group with their moving ancestor (a wrist and a flange bolted to the next link are adjacent);
* ``self_collide false``: a link whose ``<gazebo>`` tag or overlay ``contacts`` says it never
  collides with the robot;
* ``srdf``: pairs listed in the SRDF's ``<disable_collisions>`` (MoveIt's convention);
* ``touching at start``: pairs within 1 mm of each other at the initial configuration (measured
  with MuJoCo's own collision detection), which would otherwise push the robot apart at rest;
* ``self_collision false``: every remaining pair, when the overlay turns self-collision off.
"""

from __future__ import annotations

import itertools
import xml.etree.ElementTree as ET

from ..errors import DescriptionError
from .model import RobotModel

TOUCH_MARGIN = 1e-3  # m


def rigid_groups(model: RobotModel) -> dict[str, str]:
    """Link -> its group's head: the nearest ancestor on a moving joint (or the root)."""
    tree, group = model.tree, {}
    for link in tree.depth_first():
        joint = tree.parent_joint(link)
        group[link] = link if joint is None or joint.type != 'fixed' else group[joint.parent]
    return group


def srdf_disabled_pairs(path: str, links: set[str]) -> list[tuple[str, str]]:
    try:
        root = ET.parse(path).getroot()
    except (OSError, ET.ParseError) as error:
        raise DescriptionError(path, '', f'expected a readable SRDF (XML) file: {error}') from None
    pairs = []
    for index, element in enumerate(root.findall('disable_collisions')):
        pair = (element.get('link1') or '', element.get('link2') or '')
        for end, name in zip(('link1', 'link2'), pair):
            if name not in links:
                raise DescriptionError(path, f'disable_collisions[{index}].{end}',
                                       f'expected a link of the robot, got {name!r}')
        pairs.append(pair)
    return pairs


def _colliding_links(model: RobotModel) -> list[str]:
    return [name for name, link in model.tree.links.items() if link.collisions]


def touching_pairs(model: RobotModel, positions: dict[str, float]) -> set[frozenset[str]]:
    """Link pairs whose collision geoms are within :data:`TOUCH_MARGIN` at ``positions``."""
    import mujoco

    from .mjcf import robot_to_mjcf

    try:
        compiled = mujoco.MjModel.from_xml_string(robot_to_mjcf(model))
    except ValueError as error:  # MuJoCo's compiler message, e.g. a mesh it cannot take
        raise DescriptionError(model.source, '', 'generated MuJoCo model does not compile: '
                                                 + ' '.join(str(error).split())) from None
    data = mujoco.MjData(compiled)
    for name, value in positions.items():
        data.qpos[compiled.jnt_qposadr[compiled.joint(name).id]] = value
    compiled.geom_margin[:] = TOUCH_MARGIN
    mujoco.mj_forward(compiled, data)
    body_link = {model.body_name(link): link for link in model.tree.links}
    pairs = set()
    for contact in data.contact[:data.ncon]:
        bodies = [compiled.body(compiled.geom_bodyid[g]).name for g in (contact.geom1, contact.geom2)]
        if all(body in body_link for body in bodies) and bodies[0] != bodies[1]:
            pairs.add(frozenset(body_link[body] for body in bodies))
    return pairs


def excluded_pairs(model: RobotModel, positions: dict[str, float], srdf_pairs: list[tuple[str, str]],
                   self_collision: bool) -> tuple[list[tuple[str, str]], dict[str, int]]:
    """(link pairs to exclude, count per reason). Only pairs of links with collision shapes are listed."""
    group = rigid_groups(model)
    tree = model.tree
    links = _colliding_links(model)
    counts = {'adjacent': 0, 'self_collide false': 0, 'srdf': 0, 'touching at start': 0, 'self_collision false': 0}
    excluded: dict[frozenset[str], str] = {}

    def adjacent(a: str, b: str) -> bool:
        ga, gb = group[a], group[b]
        if ga == gb:
            return True
        for head, other in ((ga, gb), (gb, ga)):
            joint = tree.parent_joint(head)
            if joint is not None and group[joint.parent] == other:
                return True
        return False

    srdf = {frozenset(pair) for pair in srdf_pairs}
    loners = {name for name, contact in model.contacts.items() if not contact.self_collide}
    for a, b in itertools.combinations(links, 2):
        pair = frozenset((a, b))
        if adjacent(a, b):
            excluded[pair] = 'adjacent'
        elif a in loners or b in loners:
            excluded[pair] = 'self_collide false'
        elif pair in srdf:
            excluded[pair] = 'srdf'
    if self_collision:
        model.collision_excludes = [tuple(sorted(pair)) for pair in excluded]
        for pair in touching_pairs(model, positions):
            if pair not in excluded and len(pair) == 2:
                excluded[pair] = 'touching at start'
    else:
        for a, b in itertools.combinations(links, 2):
            excluded.setdefault(frozenset((a, b)), 'self_collision false')
    for reason in excluded.values():
        counts[reason] += 1
    order = {link: index for index, link in enumerate(tree.depth_first())}
    pairs = sorted((tuple(sorted(pair, key=order.get)) for pair in excluded), key=lambda p: (order[p[0]], order[p[1]]))
    return pairs, counts
