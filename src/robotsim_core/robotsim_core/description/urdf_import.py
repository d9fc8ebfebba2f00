"""An existing URDF plus a YAML overlay -> :class:`RobotModel`.

The overlay says what a URDF cannot (like Gazebo's ``<gazebo>`` extension tags): which joints
spin the driven wheels, the drive type and limits (a mobile base), or where the root is mounted
(a fixed-base arm); which joints form arms, where sensors are mounted, contact overrides and an
SRDF of pairs that never collide. Meshes resolve through ``package_paths``, the ament index, the
ament indexes inside Python packages, or a parent folder; formats MuJoCo cannot read are converted
once into a user cache (:mod:`.meshes`).

From the URDF itself: inertials (lumped and repaired for MuJoCo, :mod:`.inertia`), contact
parameters from ``<gazebo reference>`` tags, wheel motor torque from ``<limit effort>``.
"""

from __future__ import annotations

import dataclasses
import os

import numpy as np

from ..errors import DescriptionError
from ..geometry import Pose
from .kinematics import forward_kinematics
from .urdf import default_package_resolver, gazebo_contacts, resolve_mesh_path, urdf_to_tree
from .build import add_sensor_frames, drive_geometry, make_drive_role
from .inertia import mujoco_inertials
from .model import ArmRole, LegsRole, LinkContact, RobotModel, WheelRole
from .self_collision import excluded_pairs, srdf_disabled_pairs
from .spec import UrdfOverlaySpec

DEFAULT_WHEEL_TORQUE = 2.0  # N m, when neither the URDF nor the overlay gives one


def _resolve_file(reference: str, overlay_path: str, key: str, resolve_package) -> str:
    """An overlay file reference: ``package://`` or a path relative to the overlay."""
    overlay_dir = os.path.dirname(os.path.abspath(overlay_path))
    if reference.startswith('package://'):
        return resolve_mesh_path(reference, overlay_dir, resolve_package, overlay_path, key)
    return os.path.normpath(os.path.join(overlay_dir, reference))


def _check_roles(spec: UrdfOverlaySpec, tree, overlay_path: str) -> None:
    """One role per joint, no mimic joint driven, unique arm names."""
    roles: dict[str, str] = {}

    def claim(joint: str, key: str) -> None:
        if joint in roles:
            raise DescriptionError(overlay_path, key, f'joint {joint!r} already has a role ({roles[joint]}): '
                                                      'expected each joint in one role')
        roles[joint] = key

    def commanded(name: str, key: str, mimic_allowed: bool = False) -> None:
        """A joint a role drives: a moving joint of the URDF, not one that mimics another, in no other role."""
        if name not in tree.joints or tree.joints[name].type == 'fixed':
            raise DescriptionError(overlay_path, key, f'expected a moving joint of the URDF, got {name!r}')
        mimic = tree.joints[name].mimic
        if mimic is not None and not mimic_allowed:
            raise DescriptionError(overlay_path, key, f'joint {name!r} mimics {mimic.joint!r}: it follows that joint '
                                                      'and cannot be commanded; list the joint it mimics instead')
        claim(name, key)

    for index, wheel in enumerate(spec.wheels):
        claim(wheel.joint, f'wheels[{index}].joint')
        if wheel.steer_joint is not None:
            claim(wheel.steer_joint, f'wheels[{index}].steer_joint')
    if spec.legs is not None:
        for index, name in enumerate(spec.legs.joints):
            commanded(name, f'legs.joints[{index}]')
        for index, foot in enumerate(spec.legs.feet):
            if foot not in tree.links:
                raise DescriptionError(overlay_path, f'legs.feet[{index}]', f'expected a link of the URDF, got {foot!r}')
    names: dict[str, int] = {}
    for index, arm in enumerate(spec.arms):
        if arm.name in names:
            raise DescriptionError(overlay_path, f'arms[{index}].name',
                                   f'duplicate arm name {arm.name!r} (also arms[{names[arm.name]}])')
        names[arm.name] = index
        for field_name in ('joints', 'gripper_joints'):
            for joint_index, name in enumerate(getattr(arm, field_name)):  # (a second finger may mimic the first)
                commanded(name, f'arms[{index}].{field_name}[{joint_index}]',
                          mimic_allowed=field_name == 'gripper_joints' and joint_index > 0)
    for index, name in enumerate(spec.held_joints):
        commanded(name, f'held_joints[{index}]')


def _wheels(spec: UrdfOverlaySpec, tree, overlay_path: str) -> tuple[list[WheelRole], float | None]:
    poses = forward_kinematics(tree, {})
    base_inverse = np.linalg.inv(poses[spec.base_link])
    roles, efforts = [], []
    for index, wheel in enumerate(spec.wheels):  # every joint's type first: the clearer error
        joint = tree.joints.get(wheel.joint)
        if joint is None or joint.type not in ('continuous', 'revolute'):
            got = f'{wheel.joint!r}' if joint is None else f'{wheel.joint!r}, a {joint.type} joint'
            raise DescriptionError(overlay_path, f'wheels[{index}].joint',
                                   f'expected a continuous or revolute joint of the URDF, got {got}')
    for index, wheel in enumerate(spec.wheels):
        key = f'wheels[{index}]'
        joint = tree.joints[wheel.joint]
        if wheel.steer_joint is not None and (wheel.steer_joint not in tree.joints
                                              or tree.joints[wheel.steer_joint].type not in ('revolute', 'continuous')):
            raise DescriptionError(overlay_path, f'{key}.steer_joint',
                                   f'expected a revolute joint of the URDF, got {wheel.steer_joint!r}')
        link = tree.links[joint.child]
        radius = wheel.radius
        if radius is None:
            round_shapes = [c.geometry.size[0] for c in link.collisions if c.geometry.kind in ('cylinder', 'sphere')]
            if not round_shapes:
                raise DescriptionError(overlay_path, f'{key}.radius',
                                       f'link {link.name!r} has no cylinder or sphere collision: give the radius')
            radius = round_shapes[0]
        centre = (base_inverse @ poses[link.name])[:3, 3]
        side = 'left' if centre[1] > 1e-9 else 'right' if centre[1] < -1e-9 else 'centre'
        width = next((c.geometry.size[1] for c in link.collisions if c.geometry.kind == 'cylinder'), 2 * radius)
        roles.append(WheelRole(link.name, joint.name, link.name, side, float(radius), float(width), wheel.driven,
                               wheel.steer_joint, tuple(float(v) for v in centre)))
        if wheel.driven and joint.limit is not None and joint.limit.effort > 0:
            efforts.append(joint.limit.effort)
    return roles, (min(efforts) if efforts else None)


def initial_positions(tree) -> dict[str, float]:
    """Every moving joint at 0, or at the limit nearest 0 when 0 is outside its range."""
    positions = {}
    for joint in tree.moving_joints():
        if joint.mimic is not None:
            continue
        value = 0.0
        if joint.type != 'continuous' and joint.limit is not None:
            value = min(max(0.0, joint.limit.lower), joint.limit.upper)
        positions[joint.name] = value
    return positions


def lowest_point(tree, positions: dict[str, float]) -> float | None:
    """z (m, in the root link's frame) of the lowest collision point with the joints at ``positions`` (others at 0);
    None when the robot has no collision shape (or only meshes trimesh cannot read)."""
    poses = forward_kinematics(tree, positions)
    lowest = None
    for name, link in tree.links.items():
        for shape in link.collisions:
            geometry = shape.geometry
            if geometry.kind == 'sphere':
                z = float((poses[name] @ shape.origin.matrix())[2, 3]) - geometry.size[0]
                lowest = z if lowest is None else min(lowest, z)
                continue
            if geometry.kind == 'box':
                half = np.asarray(geometry.size[:3], dtype=float) / 2
                points = np.array([[x, y, z] for x in (-1, 1) for y in (-1, 1) for z in (-1, 1)]) * half
            elif geometry.kind == 'cylinder':
                radius, length = geometry.size[0], geometry.size[1]
                angles = np.linspace(0, 2 * np.pi, 16, endpoint=False)
                ring = np.stack([radius * np.cos(angles), radius * np.sin(angles)], axis=1)
                points = np.vstack([np.hstack([ring, np.full((16, 1), z)]) for z in (-length / 2, length / 2)])
            else:
                try:
                    import trimesh
                    mesh = trimesh.load(geometry.mujoco_file or geometry.filename, force='mesh')
                    points = np.asarray(mesh.vertices, dtype=float) * np.asarray(geometry.scale, dtype=float)
                except Exception:  # (a mesh trimesh cannot read: MuJoCo's own conversion still works)
                    continue
            world = (poses[name] @ shape.origin.matrix() @ np.vstack([points.T, np.ones(len(points))]))[2]
            lowest = float(world.min()) if lowest is None else min(lowest, float(world.min()))
    return lowest


def _legs(spec: UrdfOverlaySpec, tree, overlay_path: str) -> LegsRole:
    """The legs role; every angle within its joint's limits."""
    legs = spec.legs
    for key in ('stance', 'crouch'):
        for joint, value in getattr(legs, key).items():
            limit = tree.joints[joint].limit
            if tree.joints[joint].type != 'continuous' and limit is not None and not \
                    limit.lower - 1e-9 <= value <= limit.upper + 1e-9:
                raise DescriptionError(overlay_path, f'legs.{key}.{joint}', f'expected an angle within the joint\'s '
                                                                            f'limits [{limit.lower}, {limit.upper}], got {value}')
    stance = tuple(float(legs.stance.get(j, 0.0)) for j in legs.joints)
    crouch = tuple(float(legs.crouch.get(j, stance[i])) for i, j in enumerate(legs.joints))
    return LegsRole(tuple(legs.joints), tuple(legs.feet), legs.kp, legs.kd, legs.armature, stance, crouch)


def import_urdf(spec: UrdfOverlaySpec, overlay_path: str) -> RobotModel:
    overlay_dir = os.path.dirname(os.path.abspath(overlay_path))
    package_paths = {name: os.path.normpath(os.path.join(overlay_dir, path)) for name, path in spec.package_paths.items()}
    resolver_start = overlay_dir
    urdf_path = _resolve_file(spec.urdf, overlay_path, 'urdf',
                              default_package_resolver(package_paths, search_from=resolver_start))
    try:
        with open(urdf_path, encoding='utf-8') as stream:
            text = stream.read()
    except OSError as error:
        raise DescriptionError(overlay_path, 'urdf', f'cannot read URDF {urdf_path}: {error.strerror}') from None
    resolve_package = default_package_resolver(package_paths, search_from=os.path.dirname(urdf_path))
    tree = urdf_to_tree(text, urdf_path, os.path.dirname(urdf_path), resolve_package)
    if spec.name:
        tree.name = spec.name
    if spec.base_link not in tree.links:
        raise DescriptionError(overlay_path, 'base_link', f'expected a link of {urdf_path}, got {spec.base_link!r}')
    root = tree.root()
    if root == 'world' and not spec.fixed_base:
        raise DescriptionError(overlay_path, 'legs' if spec.legs is not None else 'drive',
                               f'{urdf_path} is rooted at link "world" (bolted to the world): '
                               'expected a fixed-base overlay (no drive, no wheels, no legs)')
    _check_roles(spec, tree, overlay_path)

    drive, friction = None, {}
    if not spec.fixed_base and spec.legs is None:
        roles, urdf_effort = _wheels(spec, tree, overlay_path)
        wheels = [(w.position[0], w.position[1], w.driven, w.steer_joint is not None) for w in roles]
        driven_sides = {w.side for w in roles if w.driven}
        if not {'left', 'right'} <= driven_sides:
            raise DescriptionError(overlay_path, 'wheels', 'expected at least one driven wheel on each side (left and right)')
        if spec.drive.type == 'ackermann' and not {'left', 'right'} <= {w.side for w in roles if w.steer_joint}:
            raise DescriptionError(overlay_path, 'wheels',
                                   'an Ackermann drive needs a steerable axle: expected steer_joint on a left and a right wheel')
        wheelbase, track = drive_geometry(spec.drive.type, wheels)
        torque = spec.drive.wheel_max_torque or urdf_effort or DEFAULT_WHEEL_TORQUE
        drive_spec = dataclasses.replace(spec.drive, wheel_max_torque=torque)
        drive = make_drive_role(drive_spec, roles, wheelbase, track, spec.drive.max_steering_angle)
        friction = {w.link: 1.0 for w in roles}

    arms = [ArmRole(arm.name, tuple(arm.joints), tuple(arm.gripper_joints)) for arm in spec.arms]
    sensors = add_sensor_frames(tree, spec.sensors, overlay_path)
    tree.validate(overlay_path)

    contacts = gazebo_contacts(text, urdf_path)
    for link, override in spec.contacts.items():
        if link not in tree.links:
            raise DescriptionError(overlay_path, f'contacts.{link}', f'expected a link of {urdf_path}, got {link!r}')
        base = contacts.get(link, LinkContact())
        contacts[link] = LinkContact(
            override.friction if override.friction is not None else base.friction,
            override.stiffness if override.stiffness is not None else base.stiffness,
            override.damping if override.damping is not None else base.damping,
            override.self_collide if override.self_collide is not None else base.self_collide)
    contacts = {link: contact for link, contact in contacts.items() if link in tree.links}

    warnings: list[str] = []
    model = RobotModel(tree.name, overlay_path, tree, spec.base_link, root, drive, arms, sensors,
                       link_friction=friction, fixed_base=spec.fixed_base,
                       mount=Pose(tuple(spec.mount.xyz), tuple(spec.mount.rpy)) if spec.mount else Pose(),
                       contacts=contacts, warnings=warnings, gravity_compensation=spec.gravity_compensation)
    model.body_inertials = mujoco_inertials(tree, not spec.fixed_base, urdf_path, spec.strict, warnings)
    srdf_pairs = []
    if spec.srdf:
        srdf_pairs = srdf_disabled_pairs(_resolve_file(spec.srdf, overlay_path, 'srdf', resolve_package),
                                         set(tree.links))
    model.initial_positions = {name: value for name, value in initial_positions(tree).items() if value != 0.0}
    model.held_joints = tuple(spec.held_joints)
    if spec.legs is not None:
        model.legs = _legs(spec, tree, overlay_path)
        model.initial_positions.update(zip(model.legs.joints, model.legs.crouch))
        if spec.mount is None:  # lying in its crouch with its lowest collision point on the floor
            lowest = lowest_point(tree, model.initial_positions)
            model.mount = Pose((0.0, 0.0, round(max(0.0, -(lowest or 0.0)) + 1e-3, 6)))
    model.collision_excludes, model.exclusion_counts = excluded_pairs(
        model, model.initial_positions, srdf_pairs, spec.self_collision)
    return model
