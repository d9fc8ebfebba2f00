"""An existing URDF plus a YAML overlay -> :class:`RobotModel`.

The overlay says what a URDF cannot (like Gazebo's ``<gazebo>`` extension tags): which joints
spin the driven wheels, the drive type and limits, which joints form arms, and where sensors
are mounted. Meshes resolve through ``package_paths``, the ament index, or a parent folder.
"""

from __future__ import annotations

import os

import numpy as np

from ..errors import DescriptionError
from ..kinematics import forward_kinematics
from ..urdf import default_package_resolver, urdf_to_tree
from .build import add_sensor_frames, drive_geometry, make_drive_role
from .model import ArmRole, RobotModel, WheelRole
from .spec import UrdfOverlaySpec


def import_urdf(spec: UrdfOverlaySpec, overlay_path: str) -> RobotModel:
    overlay_dir = os.path.dirname(os.path.abspath(overlay_path))
    urdf_path = os.path.normpath(os.path.join(overlay_dir, spec.urdf))
    try:
        with open(urdf_path, encoding='utf-8') as stream:
            text = stream.read()
    except OSError as error:
        raise DescriptionError(overlay_path, 'urdf', f'cannot read URDF {urdf_path}: {error.strerror}') from None
    package_paths = {name: os.path.normpath(os.path.join(overlay_dir, path)) for name, path in spec.package_paths.items()}
    tree = urdf_to_tree(text, urdf_path, os.path.dirname(urdf_path),
                        default_package_resolver(package_paths, search_from=os.path.dirname(urdf_path)))
    if spec.name:
        tree.name = spec.name
    if spec.base_link not in tree.links:
        raise DescriptionError(overlay_path, 'base_link', f'expected a link of {urdf_path}, got {spec.base_link!r}')

    for link_name, link in tree.links.items():
        joint = tree.parent_joint(link_name)
        if joint is not None and joint.type != 'fixed' and (link.inertial is None or link.inertial.mass <= 0):
            raise DescriptionError(urdf_path, f'link[{link_name}].inertial',
                                   f'link is moved by joint {joint.name!r}: expected an <inertial> with mass > 0')

    poses = forward_kinematics(tree, {})
    base_inverse = np.linalg.inv(poses[spec.base_link])
    roles = []
    for index, wheel in enumerate(spec.wheels):
        key = f'wheels[{index}]'
        joint = tree.joints.get(wheel.joint)
        if joint is None or joint.type not in ('continuous', 'revolute'):
            raise DescriptionError(overlay_path, f'{key}.joint',
                                   f'expected a continuous or revolute joint of the URDF, got {wheel.joint!r}')
        if wheel.steer_joint is not None and (wheel.steer_joint not in tree.joints
                                              or tree.joints[wheel.steer_joint].type == 'fixed'):
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
    wheels = [(w.position[0], w.position[1], w.driven, w.steer_joint is not None) for w in roles]
    driven_sides = {w.side for w in roles if w.driven}
    if not {'left', 'right'} <= driven_sides:
        raise DescriptionError(overlay_path, 'wheels', 'expected at least one driven wheel on each side (left and right)')
    if spec.drive.type == 'ackermann' and not {'left', 'right'} <= {w.side for w in roles if w.steer_joint}:
        raise DescriptionError(overlay_path, 'wheels',
                               'an Ackermann drive needs a steerable axle: expected steer_joint on a left and a right wheel')
    wheelbase, track = drive_geometry(spec.drive.type, wheels)
    drive = make_drive_role(spec.drive, roles, wheelbase, track, spec.drive.max_steering_angle)

    arms = []
    for index, arm in enumerate(spec.arms):
        for field_name in ('joints', 'gripper_joints'):
            for joint_index, name in enumerate(getattr(arm, field_name)):
                if name not in tree.joints or tree.joints[name].type == 'fixed':
                    raise DescriptionError(overlay_path, f'arms[{index}].{field_name}[{joint_index}]',
                                           f'expected a moving joint of the URDF, got {name!r}')
        arms.append(ArmRole(arm.name, tuple(arm.joints), tuple(arm.gripper_joints)))
    sensors = add_sensor_frames(tree, spec.sensors, overlay_path)
    tree.validate(overlay_path)
    return RobotModel(tree.name, overlay_path, tree, spec.base_link, tree.root(), drive, arms, sensors,
                      link_friction={w.link: 1.0 for w in roles})
