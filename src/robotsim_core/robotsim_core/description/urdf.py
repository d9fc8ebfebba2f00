"""URDF text <-> :class:`KinematicTree`.

Writing keeps every number at full precision (``repr``), so forward kinematics of the
written text reproduces the model exactly. Parsing accepts what robot_state_publisher
accepts for fixed/revolute/continuous/prismatic joints and resolves mesh paths
(``package://`` or relative to the URDF file), failing clearly when one is missing.
"""

from __future__ import annotations

import math
import os
import sys
import xml.etree.ElementTree as ET
from collections.abc import Callable, Mapping

from .meshes import mujoco_mesh
from .model import (Geometry, Inertial, Joint, JointLimit, KinematicTree, Link, LinkContact,
                                Mimic, Shape)
from ..errors import DescriptionError
from ..geometry import Pose

MIN_MESH_SCALE, MAX_MESH_SCALE = 1e-6, 1e3
"""Magnitude of a mesh's scale factors: a millionth (a mesh in micrometres) to a thousand; 1e12 is a typo."""
MAX_MASS = 1e5
"""kg: a link heavier than a hundred tonnes is a typo (or a unit mistake), not a robot part."""
MAX_INERTIA = 1e5
"""kg m^2: the largest magnitude of an inertia tensor entry accepted."""
MAX_LENGTH = 1e3
"""m: the largest offset of an origin and the largest primitive size accepted (a robot a kilometre wide is a typo)."""
MIN_AXIS_NORM = 1e-9
"""A joint axis shorter than this has no direction (MuJoCo refuses it later, naming no URDF element)."""


def _num(value: float) -> str:
    return repr(float(value))


def _vec(values) -> str:
    return ' '.join(_num(v) for v in values)


def _origin(parent: ET.Element, pose: Pose) -> None:
    if not pose.is_identity():
        ET.SubElement(parent, 'origin', xyz=_vec(pose.xyz), rpy=_vec(pose.rpy))


def _geometry(parent: ET.Element, geometry: Geometry) -> None:
    element = ET.SubElement(parent, 'geometry')
    if geometry.kind == 'box':
        ET.SubElement(element, 'box', size=_vec(geometry.size))
    elif geometry.kind == 'cylinder':
        ET.SubElement(element, 'cylinder', radius=_num(geometry.size[0]), length=_num(geometry.size[1]))
    elif geometry.kind == 'sphere':
        ET.SubElement(element, 'sphere', radius=_num(geometry.size[0]))
    else:
        mesh = ET.SubElement(element, 'mesh', filename=geometry.filename)
        if geometry.scale != (1.0, 1.0, 1.0):
            mesh.set('scale', _vec(geometry.scale))


def tree_to_urdf(tree: KinematicTree) -> str:
    """URDF XML text for ``tree`` (links in depth-first order, joints after their parents)."""
    robot = ET.Element('robot', name=tree.name)
    materials: dict[tuple, str] = {}
    for link_name in tree.depth_first():
        link = tree.links[link_name]
        element = ET.SubElement(robot, 'link', name=link.name)
        if link.inertial is not None:
            inertial = ET.SubElement(element, 'inertial')
            _origin(inertial, link.inertial.origin)
            ET.SubElement(inertial, 'mass', value=_num(link.inertial.mass))
            ixx, ixy, ixz, iyy, iyz, izz = link.inertial.inertia
            ET.SubElement(inertial, 'inertia', ixx=_num(ixx), ixy=_num(ixy), ixz=_num(ixz),
                          iyy=_num(iyy), iyz=_num(iyz), izz=_num(izz))
        for tag, shapes in (('visual', link.visuals), ('collision', link.collisions)):
            for shape in shapes:
                shape_element = ET.SubElement(element, tag)
                _origin(shape_element, shape.origin)
                _geometry(shape_element, shape.geometry)
                if tag == 'visual' and shape.rgba is not None:
                    name = materials.setdefault(shape.rgba, f'robotsim_color_{len(materials)}')
                    material = ET.SubElement(shape_element, 'material', name=name)
                    ET.SubElement(material, 'color', rgba=_vec(shape.rgba))
        parent_joint = tree.parent_joint(link_name)
        if parent_joint is not None:
            _joint(robot, parent_joint)
    ET.indent(robot)
    return '<?xml version="1.0"?>\n' + ET.tostring(robot, encoding='unicode') + '\n'


def _joint(robot: ET.Element, joint: Joint) -> None:
    element = ET.SubElement(robot, 'joint', name=joint.name, type=joint.type)
    _origin(element, joint.origin)
    ET.SubElement(element, 'parent', link=joint.parent)
    ET.SubElement(element, 'child', link=joint.child)
    if joint.type != 'fixed':
        ET.SubElement(element, 'axis', xyz=_vec(joint.axis))
    if joint.limit is not None:
        attributes = {'effort': _num(joint.limit.effort), 'velocity': _num(joint.limit.velocity)}
        if joint.type in ('revolute', 'prismatic'):
            attributes.update(lower=_num(joint.limit.lower), upper=_num(joint.limit.upper))
        ET.SubElement(element, 'limit', **attributes)
    if joint.mimic is not None:
        ET.SubElement(element, 'mimic', joint=joint.mimic.joint,
                      multiplier=_num(joint.mimic.multiplier), offset=_num(joint.mimic.offset))


# ------------------------------------------------------------------ parsing

PackageResolver = Callable[[str], 'str | None']


def python_package_prefixes() -> list[str]:
    """Install prefixes that Python packages carry inside site-packages (cmeel's ``cmeel.prefix``:
    e.g. ``pip install example-robot-data``), whose ``share/`` holds an ament index of its own."""
    prefixes = []
    for entry in sys.path:
        candidate = os.path.join(entry, 'cmeel.prefix')
        if os.path.isdir(os.path.join(candidate, 'share', 'ament_index')) and candidate not in prefixes:
            prefixes.append(candidate)
    return prefixes


def _share_in_prefixes(package: str) -> str | None:
    for prefix in python_package_prefixes():
        marker = os.path.join(prefix, 'share', 'ament_index', 'resource_index', 'packages', package)
        if os.path.isfile(marker):
            return os.path.join(prefix, 'share', package)
    return None


def default_package_resolver(package_paths: Mapping[str, str] | None = None,
                             search_from: str | None = None) -> PackageResolver:
    """Resolve ``package://NAME`` via an explicit map, then the ament index (when importable), then
    the ament indexes inside Python packages (cmeel), then a folder called NAME (containing
    package.xml) above ``search_from``."""

    def resolve(package: str) -> str | None:
        if package_paths and package in package_paths:
            return package_paths[package]
        try:
            from ament_index_python.packages import get_package_share_directory
            return get_package_share_directory(package)
        except Exception:  # ament index absent, or package not in it: fall through
            pass
        shared = _share_in_prefixes(package)
        if shared is not None:
            return shared
        directory = os.path.abspath(search_from) if search_from else None
        while directory and directory != os.path.dirname(directory):
            candidate = os.path.join(directory, package)
            if os.path.isfile(os.path.join(candidate, 'package.xml')):
                return candidate
            if os.path.basename(directory) == package and os.path.isfile(os.path.join(directory, 'package.xml')):
                return directory
            directory = os.path.dirname(directory)
        return None

    return resolve


def _floats(text: str | None, count: int, source: str, key: str, default=None) -> tuple[float, ...]:
    if text is None:
        if default is None:
            raise DescriptionError(source, key, f'expected {count} numbers, attribute is missing')
        return default
    try:
        values = tuple(float(v) for v in text.split())
    except ValueError:
        raise DescriptionError(source, key, f'expected {count} numbers, got {text!r}') from None
    if len(values) != count:
        raise DescriptionError(source, key, f'expected {count} numbers, got {text!r}')
    if not all(math.isfinite(v) for v in values):  # NaN or inf would reach the MJCF and the physics
        raise DescriptionError(source, key, f'expected finite numbers, got {text!r}')
    return values


def _bounded(values: tuple[float, ...], low: float, high: float, source: str, key: str, text: str | None,
             what: str) -> tuple[float, ...]:
    """``values`` when every one lies in [low, high]; else one line naming ``key``."""
    if not all(low <= v <= high for v in values):
        raise DescriptionError(source, key, f'expected {what}, got {text!r}')
    return values


def _parse_origin(element: ET.Element | None, source: str, key: str) -> Pose:
    origin = element.find('origin') if element is not None else None
    if origin is None:
        return Pose()
    xyz = _bounded(_floats(origin.get('xyz'), 3, source, key + '.origin.xyz', (0.0, 0.0, 0.0)), -MAX_LENGTH,
                   MAX_LENGTH, source, key + '.origin.xyz', origin.get('xyz'), f'offsets within +-{MAX_LENGTH:g} m')
    return Pose(xyz, _floats(origin.get('rpy'), 3, source, key + '.origin.rpy', (0.0, 0.0, 0.0)))


def _sizes(shape: ET.Element, attribute: str, count: int, source: str, key: str) -> tuple[float, ...]:
    """A primitive's dimensions: positive and at most MAX_LENGTH."""
    values = _floats(shape.get(attribute), count, source, key)
    return _bounded(values, 1e-9, MAX_LENGTH, source, key, shape.get(attribute), f'sizes > 0 and <= {MAX_LENGTH:g} m')


def _parse_geometry(element: ET.Element, source: str, key: str, base_dir: str,
                    resolve_package: PackageResolver) -> tuple[Geometry, tuple | None]:
    """(geometry, the mesh file's own colour or None)."""
    geometry = element.find('geometry')
    if geometry is None or len(geometry) == 0:
        raise DescriptionError(source, key + '.geometry', 'expected one of box, cylinder, sphere, mesh')
    shape = geometry[0]
    if shape.tag == 'box':
        return Geometry('box', _sizes(shape, 'size', 3, source, key + '.box.size')), None
    if shape.tag == 'cylinder':
        return Geometry('cylinder', (_sizes(shape, 'radius', 1, source, key + '.cylinder.radius')[0],
                                     _sizes(shape, 'length', 1, source, key + '.cylinder.length')[0])), None
    if shape.tag == 'sphere':
        return Geometry('sphere', _sizes(shape, 'radius', 1, source, key + '.sphere.radius')), None
    if shape.tag == 'mesh':
        filename = shape.get('filename') or ''
        path = resolve_mesh_path(filename, base_dir, resolve_package, source, key + '.mesh.filename')
        scale = _floats(shape.get('scale'), 3, source, key + '.mesh.scale', (1.0, 1.0, 1.0))
        if not all(MIN_MESH_SCALE <= abs(v) <= MAX_MESH_SCALE for v in scale):
            raise DescriptionError(source, key + '.mesh.scale', f'expected factors of magnitude {MIN_MESH_SCALE:g} to '
                                                                f'{MAX_MESH_SCALE:g}, got {shape.get("scale")!r}')
        ready = mujoco_mesh(path, source, key + '.mesh.filename')
        return Geometry('mesh', filename=path, scale=scale, mujoco_file=ready.path if ready.converted else ''), ready.rgba
    raise DescriptionError(source, key + '.geometry', f'expected box, cylinder, sphere or mesh, got <{shape.tag}>')


def resolve_mesh_path(filename: str, base_dir: str, resolve_package: PackageResolver,
                      source: str, key: str) -> str:
    if filename.startswith('package://'):
        # package:///name/... (an empty authority, as some URDFs write it) is package://name/... to ROS tools too.
        package, _, relative = filename[len('package://'):].lstrip('/').partition('/')
        root = resolve_package(package)
        if root is None:
            raise DescriptionError(source, key, f'cannot resolve package {package!r} of mesh {filename!r} '
                                   '(give it under package_paths in the overlay)')
        path = os.path.join(root, relative)
    elif filename.startswith('file://'):
        path = filename[len('file://'):]
    else:
        path = filename if os.path.isabs(filename) else os.path.join(base_dir, filename)
    path = os.path.normpath(path)
    if not os.path.isfile(path):
        raise DescriptionError(source, key, f'mesh file not found: {filename!r} (looked at {path})')
    return path


def urdf_to_tree(text: str, source: str = '<urdf>', base_dir: str = '.',
                 resolve_package: PackageResolver | None = None) -> KinematicTree:
    """Parse URDF text into a validated tree; ``source`` names the file in error messages."""
    resolve_package = resolve_package or default_package_resolver(search_from=base_dir)
    try:
        robot = ET.fromstring(text)
    except ET.ParseError as error:
        raise DescriptionError(source, '', f'expected well-formed URDF XML: {error}') from None
    if robot.tag != 'robot':
        raise DescriptionError(source, '', f'expected a <robot> root element, got <{robot.tag}>')
    tree = KinematicTree(name=robot.get('name') or 'robot')
    named_colours = {}  # robot-level <material name=...><color/></material>, referenced by name in visuals
    for material in robot.findall('material'):
        color = material.find('color')
        if material.get('name') and color is not None:
            named_colours[material.get('name')] = _floats(color.get('rgba'), 4, source,
                                                          f'material[{material.get("name")}].color.rgba')
    for element in robot.findall('link'):
        name = element.get('name')
        if not name:
            raise DescriptionError(source, 'link', 'expected a name attribute')
        if name in tree.links:
            raise DescriptionError(source, f'link[{name}]', 'duplicate link name')
        key = f'link[{name}]'
        inertial = None
        inertial_element = element.find('inertial')
        if inertial_element is not None:
            mass_element = inertial_element.find('mass')
            mass = _floats(mass_element.get('value') if mass_element is not None else None,
                           1, source, key + '.inertial.mass')[0]
            if not 0 <= mass <= MAX_MASS:  # no data to repair: a wrong number
                raise DescriptionError(source, key + '.inertial.mass',
                                       f'expected a mass from 0 to {MAX_MASS:g} kg, got {mass:g}')
            inertia_element = inertial_element.find('inertia')
            if inertia_element is None:
                raise DescriptionError(source, key + '.inertial.inertia', 'expected an <inertia> element')
            inertia = tuple(_bounded(_floats(inertia_element.get(axis), 1, source, f'{key}.inertial.inertia.{axis}',
                                             (0.0,)), -MAX_INERTIA, MAX_INERTIA, source,
                                     f'{key}.inertial.inertia.{axis}', inertia_element.get(axis),
                                     f'a value within +-{MAX_INERTIA:g} kg m^2')[0]
                            for axis in ('ixx', 'ixy', 'ixz', 'iyy', 'iyz', 'izz'))
            inertial = Inertial(_parse_origin(inertial_element, source, key + '.inertial'), mass, inertia)
        link = Link(name, inertial)
        for tag, shapes in (('visual', link.visuals), ('collision', link.collisions)):
            for index, shape_element in enumerate(element.findall(tag)):
                shape_key = f'{key}.{tag}[{index}]'
                rgba = None
                color = shape_element.find('material/color')
                if color is not None:
                    rgba = _floats(color.get('rgba'), 4, source, shape_key + '.material.color.rgba')
                elif shape_element.find('material') is not None:
                    rgba = named_colours.get(shape_element.find('material').get('name'))
                geometry, mesh_rgba = _parse_geometry(shape_element, source, shape_key, base_dir, resolve_package)
                if rgba is None and tag == 'visual':
                    rgba = mesh_rgba
                shapes.append(Shape(_parse_origin(shape_element, source, shape_key), geometry, rgba))
        tree.add_link(link)
    for element in robot.findall('joint'):
        name = element.get('name') or ''
        key = f'joint[{name}]'
        joint_type = element.get('type')
        if joint_type not in ('fixed', 'revolute', 'continuous', 'prismatic'):
            raise DescriptionError(source, key + '.type',
                                   f'expected fixed, revolute, continuous or prismatic, got {joint_type!r}')
        parent, child = element.find('parent'), element.find('child')
        if parent is None or child is None:
            raise DescriptionError(source, key, 'expected <parent link=...> and <child link=...>')
        axis = _floats(element.find('axis').get('xyz') if element.find('axis') is not None else None,
                       3, source, key + '.axis.xyz', (1.0, 0.0, 0.0))
        if joint_type != 'fixed' and math.hypot(*axis) < MIN_AXIS_NORM:
            raise DescriptionError(source, key + '.axis.xyz', f'expected a direction (a non-zero vector), got {axis}')
        limit = None
        limit_element = element.find('limit')
        if limit_element is not None:
            limit = JointLimit(*(_floats(limit_element.get(attribute), 1, source, f'{key}.limit.{attribute}', (0.0,))[0]
                                 for attribute in ('lower', 'upper', 'effort', 'velocity')))
            for attribute in ('effort', 'velocity'):
                if getattr(limit, attribute) < 0:
                    raise DescriptionError(source, f'{key}.limit.{attribute}',
                                           f'expected a value >= 0, got {getattr(limit, attribute):g}')
            if joint_type in ('revolute', 'prismatic') and limit.lower > limit.upper:
                raise DescriptionError(source, key + '.limit',
                                       f'expected lower <= upper, got lower={limit.lower} > upper={limit.upper}')
        elif joint_type in ('revolute', 'prismatic'):
            raise DescriptionError(source, key + '.limit', f'a {joint_type} joint needs a <limit> element')
        mimic = None
        mimic_element = element.find('mimic')
        if mimic_element is not None:
            mimic = Mimic(mimic_element.get('joint') or '',
                          _floats(mimic_element.get('multiplier'), 1, source, key + '.mimic.multiplier', (1.0,))[0],
                          _floats(mimic_element.get('offset'), 1, source, key + '.mimic.offset', (0.0,))[0])
        if name in tree.joints:
            raise DescriptionError(source, key, 'duplicate joint name')
        tree.add_joint(Joint(name, joint_type, parent.get('link') or '', child.get('link') or '',
                             _parse_origin(element, source, key), axis, limit, mimic))
    tree.validate(source)
    return tree


def _gazebo_number(element: ET.Element, tag: str, source: str, key: str) -> float | None:
    child = element.find(tag)
    if child is None or child.text is None:
        return None
    try:
        return float(child.text.strip())
    except ValueError:
        raise DescriptionError(source, f'{key}.{tag}', f'expected a number, got {child.text.strip()!r}') from None


def gazebo_contacts(text: str, source: str) -> dict[str, LinkContact]:
    """Contact parameters from ``<gazebo reference="LINK">`` tags (Gazebo classic's URDF extension):
    ``mu1``/``mu2`` (MuJoCo has one sliding coefficient per geom: the smaller of the two, so a link
    Gazebo lets slide in one direction slides here too), ``kp``/``kd`` (contact stiffness N/m and
    damping N s/m) and ``selfCollide``. Tags naming no link, or saying nothing of contact, are skipped."""
    robot = ET.fromstring(text)
    contacts: dict[str, LinkContact] = {}
    for element in robot.findall('gazebo'):
        link = element.get('reference')
        if not link:
            continue
        key = f'gazebo[{link}]'
        mu = [v for v in (_gazebo_number(element, 'mu1', source, key), _gazebo_number(element, 'mu2', source, key))
              if v is not None]
        stiffness = _gazebo_number(element, 'kp', source, key)
        damping = _gazebo_number(element, 'kd', source, key)
        self_collide = element.find('selfCollide')
        if not mu and stiffness is None and damping is None and self_collide is None:
            continue
        previous = contacts.get(link, LinkContact())
        contacts[link] = LinkContact(
            friction=max(0.0, min(mu)) if mu else previous.friction,
            stiffness=stiffness if stiffness is not None and stiffness > 0 else previous.stiffness,
            damping=damping if damping is not None and damping >= 0 else previous.damping,
            self_collide=(self_collide.text or '').strip().lower() in ('1', 'true')
            if self_collide is not None else previous.self_collide)
    return contacts
