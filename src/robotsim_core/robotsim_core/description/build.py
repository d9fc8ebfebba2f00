"""Robot YAML spec -> :class:`RobotModel` (kinematic tree + roles).

Frame layout follows REP 103/105: ``base_footprint`` on the ground under ``base_link`` (at axle
height), wheel links on continuous joints spinning about +y, sensor frames on fixed joints,
camera optical frames rotated to z forward / x right / y down.
"""

from __future__ import annotations

import math

import numpy as np

from ..errors import DescriptionError
from ..sensor_kinds import sensor_kind
from ..geometry import (Pose, axis_angle_matrix, box_inertia, cylinder_inertia, matrix_to_rpy,
                        sphere_inertia)
from .model import (ArmRole, DriveRole, Geometry, Inertial, Joint, JointLimit, KinematicTree, Link,
                    Mimic, RobotModel, SensorRole, Shape, WheelRole)
from .spec import (ArmSpec, LinkShapeSpec, PoseSpec, RobotSpec, SensorSpec,
                   WheelCountSpec, WheelSpec)

# Fixed rotation of a camera's optical frame in its body frame (REP 103 "_optical" suffix).
OPTICAL_FRAME_RPY = (-math.pi / 2, 0.0, -math.pi / 2)
# Wheel cylinders are modelled with their axis along the spin axis (+y): rotate z onto y.
WHEEL_SHAPE_RPY = (math.pi / 2, 0.0, 0.0)
STEER_LINK_MASS = 0.05  # kg; MuJoCo rejects massless moving bodies
SENSOR_COLOR = (0.1, 0.1, 0.1, 1.0)
FRAME_INERTIAL = Inertial(Pose(), 1e-6, (1e-12, 0.0, 0.0, 1e-12, 0.0, 1e-12))
"""The inertial of a frame link (``base_footprint``, a sensor's frames): a milligram. URDF consumers give a link
without ``<inertial>`` a mass of their own (PyBullet 1 kg), so every link the description writes carries one; a
milligram keeps the robot's mass as specified (five frames add 5e-6 kg) and stays positive, since PyBullet fixes a
root of mass 0 to the world. (robot_state_publisher's KDL warns once that the root's inertia is not used.)"""
WHEEL_COLOR = (0.05, 0.05, 0.05, 1.0)
ARM_COLOR = (0.85, 0.45, 0.1, 1.0)


def _pose(spec: PoseSpec | None) -> Pose:
    return Pose(tuple(spec.xyz), tuple(spec.rpy)) if spec is not None else Pose()


def _diag(moments) -> tuple[float, float, float, float, float, float]:
    ixx, iyy, izz = moments
    return (ixx, 0.0, 0.0, iyy, 0.0, izz)


def _wheel_link(name: str, radius: float, width: float, mass: float, caster: bool) -> Link:
    if caster:
        geometry = Geometry('sphere', (radius,))
        inertia = _diag(sphere_inertia(mass, radius))
        origin = Pose()
    else:
        geometry = Geometry('cylinder', (radius, width))
        side, _, axial = cylinder_inertia(mass, radius, width)
        inertia = _diag((side, axial, side))  # spin axis is y
        origin = Pose(rpy=WHEEL_SHAPE_RPY)
    shape = Shape(origin, geometry, WHEEL_COLOR)
    return Link(name, Inertial(Pose(), mass, inertia), [shape], [shape])


class _WheelPlacement:
    def __init__(self, name, x, y, radius, width, mass, driven, steered, friction):
        self.name, self.x, self.y = name, x, y
        self.radius, self.width, self.mass = radius, width, mass
        self.driven, self.steered, self.friction = driven, steered, friction


def _placements_from_count(spec: WheelCountSpec, base_size, source: str) -> list[_WheelPlacement]:
    length, width, _ = base_size
    axles = spec.count // 2
    track = spec.track if spec.track is not None else width + spec.width
    if spec.axle_positions is not None:
        xs = list(spec.axle_positions)
    elif axles == 1:
        xs = [0.0]
    else:
        span = length - 2 * spec.radius
        if span <= 0:
            raise DescriptionError(source, 'wheels.axle_positions',
                                   f'chassis length {length} m leaves no room for {axles} axles of wheels '
                                   f'with radius {spec.radius} m: give axle_positions explicitly')
        xs = [span / 2 - i * span / (axles - 1) for i in range(axles)]
    labels = [''] if axles == 1 else ['front', 'rear'] if axles == 2 else [f'axle{i + 1}' for i in range(axles)]
    placements = []
    for index, (x, label) in enumerate(zip(xs, labels)):
        front, rear = index == 0, index == axles - 1
        driven = spec.driven == 'all' or (spec.driven == 'front' and front) or (spec.driven == 'rear' and rear)
        steered = spec.steered == 'front' and front and axles > 1
        for side, y in (('left', track / 2), ('right', -track / 2)):
            name = f'{label}_{side}_wheel' if label else f'{side}_wheel'
            placements.append(_WheelPlacement(name, x, y, spec.radius, spec.width, spec.mass, driven, steered,
                                              spec.friction))
    if spec.count % 2:
        caster_radius = spec.caster_radius if spec.caster_radius is not None else spec.radius / 2
        caster_x = xs[0] if axles > 1 else length / 2 - caster_radius
        placements.append(_WheelPlacement('caster_wheel', caster_x, 0.0, caster_radius, 2 * caster_radius,
                                          spec.mass / 4, False, False, 0.0))
    return placements


def _placements_from_list(specs: list[WheelSpec], source: str) -> list[_WheelPlacement]:
    placements, names = [], set()
    for index, wheel in enumerate(specs):
        x, y = wheel.position
        side = 'left' if y > 0 else 'right' if y < 0 else 'centre'
        if side == 'centre' and (wheel.driven or wheel.steered):
            raise DescriptionError(source, f'wheels[{index}].position',
                                   'a wheel on the centre line (y = 0) is modelled as a passive ball caster; '
                                   'expected driven: false and steered: false, or a non-zero lateral offset')
        name = wheel.name or (f'caster_wheel_{index}' if side == 'centre' else f'{side}_wheel_{index}')
        if name in names:
            raise DescriptionError(source, f'wheels[{index}].name', f'duplicate wheel name {name!r}')
        names.add(name)
        placements.append(_WheelPlacement(name, x, y, wheel.radius, wheel.width, wheel.mass, wheel.driven,
                                          wheel.steered, 0.0 if side == 'centre' else wheel.friction))
    return placements


def _direction_rpy(direction) -> tuple[float, float, float]:
    """rpy of a frame whose z axis points along unit ``direction``."""
    z = np.array([0.0, 0.0, 1.0])
    d = np.asarray(direction, dtype=float)
    axis = np.cross(z, d)
    if np.linalg.norm(axis) < 1e-12:
        return (0.0, 0.0, 0.0) if d[2] > 0 else (math.pi, 0.0, 0.0)
    angle = math.atan2(np.linalg.norm(axis), float(np.dot(z, d)))
    return matrix_to_rpy(axis_angle_matrix(axis, angle))


def _shape_link(name: str, shape: LinkShapeSpec, color) -> Link:
    rpy = _direction_rpy(shape.direction)
    centre = tuple(float(v) * shape.length / 2 for v in shape.direction)
    if shape.shape == 'cylinder':
        geometry = Geometry('cylinder', (shape.thickness / 2, shape.length))
        moments = cylinder_inertia(shape.mass, shape.thickness / 2, shape.length)
    else:
        geometry = Geometry('box', (shape.thickness, shape.thickness, shape.length))
        moments = box_inertia(shape.mass, (shape.thickness, shape.thickness, shape.length))
    origin = Pose(centre, rpy)
    visual = Shape(origin, geometry, color)
    return Link(name, Inertial(origin, shape.mass, _diag(moments)), [visual], [visual])


def _tip(shape: LinkShapeSpec) -> tuple[float, float, float]:
    return tuple(float(v) * shape.length for v in shape.direction)


def _add_arm(tree: KinematicTree, arm: ArmSpec, index: int, source: str) -> ArmRole:
    path = f'arms[{index}]'
    if arm.parent not in tree.links:
        raise DescriptionError(source, f'{path}.parent',
                               f'expected an existing link (one of {", ".join(tree.links)}), got {arm.parent!r}')
    if arm.joints[0].origin is not None:
        raise DescriptionError(source, f'{path}.joints[0].origin',
                               'the first joint sits at the arm mount: set the arm\'s mount instead')
    parent, previous_shape, joint_names = arm.parent, None, []
    for joint_index, joint in enumerate(arm.joints):
        if joint.name in tree.joints:
            raise DescriptionError(source, f'{path}.joints[{joint_index}].name', f'duplicate joint name {joint.name!r}')
        link_name = joint.link_name or (joint.name[:-len('_joint')] if joint.name.endswith('_joint') else joint.name) + '_link'
        if link_name in tree.links:
            raise DescriptionError(source, f'{path}.joints[{joint_index}].link_name', f'duplicate link name {link_name!r}')
        if joint_index == 0:
            origin = _pose(arm.mount)
        elif joint.origin is not None:
            origin = _pose(joint.origin)
        else:
            origin = Pose(_tip(previous_shape))
        tree.add_link(_shape_link(link_name, joint.link, ARM_COLOR))
        tree.add_joint(Joint(joint.name, joint.type, parent, link_name, origin, tuple(joint.axis),
                             JointLimit(joint.lower, joint.upper, joint.effort, joint.velocity,
                                        joint.acceleration, joint.jerk)))
        joint_names.append(joint.name)
        parent, previous_shape = link_name, joint.link
    gripper_joints: tuple[str, ...] = ()
    if arm.gripper is not None:
        gripper = arm.gripper
        direction = np.asarray(previous_shape.direction, dtype=float)
        slide = np.array([0.0, 1.0, 0.0]) if abs(direction[1]) < 0.9 else np.array([1.0, 0.0, 0.0])
        tip = np.asarray(_tip(previous_shape))
        finger = LinkShapeSpec(length=gripper.finger_length, thickness=gripper.finger_thickness, shape='box',
                               direction=tuple(direction), mass=gripper.finger_mass)
        for side, sign in (('left', 1.0), ('right', -1.0)):
            name = f'{arm.name}_{side}_finger'
            tree.add_link(_shape_link(f'{name}_link', finger, ARM_COLOR))
            origin = Pose(tuple(float(v) for v in tip + sign * slide * gripper.finger_thickness / 2))
            mimic = Mimic(f'{arm.name}_left_finger_joint') if side == 'right' else None
            tree.add_joint(Joint(f'{name}_joint', 'prismatic', parent, f'{name}_link', origin,
                                 tuple(float(v) for v in sign * slide),
                                 JointLimit(0.0, gripper.stroke, gripper.effort, 0.1), mimic))
        gripper_joints = (f'{arm.name}_left_finger_joint', f'{arm.name}_right_finger_joint')
    return ArmRole(arm.name, tuple(joint_names), gripper_joints)


def add_sensor_frames(tree: KinematicTree, sensors: list[SensorSpec], source: str) -> list[SensorRole]:
    """Add each sensor's frame(s) as fixed links; shared by generated and imported robots."""
    roles = []
    for index, sensor in enumerate(sensors):
        path = f'sensors[{index}]'
        if sensor.parent not in tree.links:
            raise DescriptionError(source, f'{path}.parent',
                                   f'expected an existing link (one of {", ".join(tree.links)}), got {sensor.parent!r}')
        # The sensor's body frame; a camera's images are in an optical frame under it (REP 103).
        body = sensor.body_frame
        optical = sensor.frame != body
        frames = [body] + ([sensor.frame] if optical else [])
        for frame in frames:
            if frame in tree.links:
                raise DescriptionError(source, f'{path}.name', f'frame {frame!r} already exists in the robot')
        kind = sensor_kind(sensor.type)
        size = kind.marker_size
        marker = Shape(Pose(), Geometry('box', (size, size, size)), SENSOR_COLOR)
        tree.add_link(Link(body, FRAME_INERTIAL, [marker], [marker] if kind.marker_collides else []))
        tree.add_joint(Joint(f'{body}_joint', 'fixed', sensor.parent, body, _pose(sensor.pose)))
        if optical:
            tree.add_link(Link(sensor.frame, FRAME_INERTIAL))
            tree.add_joint(Joint(f'{sensor.frame}_joint', 'fixed', body, sensor.frame, Pose(rpy=OPTICAL_FRAME_RPY)))
        roles.append(SensorRole(sensor.name, sensor.type, sensor.frame, sensor.parent, sensor))
    names = [role.name for role in roles]
    for index, name in enumerate(names):
        if names.index(name) != index:
            raise DescriptionError(source, f'sensors[{index}].name', f'duplicate sensor name {name!r}')
    return roles


def drive_geometry(drive_type: str, wheels: list[tuple[float, float, bool, bool]]) -> tuple[float, float]:
    """(wheelbase, track) measured from the wheels that exist: (x, y, driven, steered) in base_link.

    Wheelbase: steered axle to the mean of the other axles (Ackermann), front-most to rear-most
    wheel (differential). Track: mean left minus mean right lateral offset of the driven wheels.
    """
    sided = [w for w in wheels if w[1] != 0]
    if drive_type == 'ackermann':
        wheelbase = float(np.mean([w[0] for w in sided if w[3]]) - np.mean([w[0] for w in sided if not w[3]]))
    else:
        wheelbase = float(max(w[0] for w in sided) - min(w[0] for w in sided))
    driven = [w for w in sided if w[2]]
    track = float(np.mean([w[1] for w in driven if w[1] > 0]) - np.mean([w[1] for w in driven if w[1] < 0]))
    return wheelbase, track


def make_drive_role(spec, wheels: list[WheelRole], wheelbase: float, track: float,
                    max_steering_angle: float) -> DriveRole:
    no_load = spec.wheel_no_load_speed
    if no_load is None:
        no_load = 1.5 * spec.max_linear_speed / min(w.radius for w in wheels if w.driven)
    return DriveRole(spec.type, tuple(wheels), wheelbase, track, spec.max_linear_speed,
                     spec.max_linear_acceleration, spec.max_yaw_rate, max_steering_angle,
                     spec.wheel_max_torque, no_load, spec.wheel_armature, spec.wheel_separation_multiplier)


def build_robot(spec: RobotSpec, source: str) -> RobotModel:
    base = spec.base
    placements = (_placements_from_count(spec.wheels, base.size, source) if isinstance(spec.wheels, WheelCountSpec)
                  else _placements_from_list(spec.wheels, source))
    wheels_key = 'wheels.steered' if isinstance(spec.wheels, WheelCountSpec) else 'wheels'
    steered = [p for p in placements if p.steered]
    sided = [p for p in placements if p.y != 0]
    if spec.drive.type == 'ackermann':
        if not any(p.y > 0 for p in steered) or not any(p.y < 0 for p in steered):
            raise DescriptionError(source, wheels_key,
                                   'an Ackermann drive needs a steerable axle (a steered wheel on each side); '
                                   "expected wheels.steered: front or steered: true on a left and a right wheel")
    elif steered:
        raise DescriptionError(source, wheels_key, 'steered wheels need drive.type: ackermann')
    driven = [p for p in placements if p.driven]
    if not any(p.y > 0 for p in driven) or not any(p.y < 0 for p in driven):
        raise DescriptionError(source, 'wheels', 'expected at least one driven wheel on each side (left and right)')

    axle_height = max(p.radius for p in sided)
    tree = KinematicTree(spec.name)
    tree.add_link(Link('base_footprint', FRAME_INERTIAL))
    length, width, height = base.size
    box_offset = base.ground_clearance + height / 2 - axle_height
    chassis = Shape(Pose((0.0, 0.0, box_offset)), Geometry('box', tuple(base.size)), tuple(base.color))
    tree.add_link(Link('base_link', Inertial(Pose((0.0, 0.0, box_offset)), base.mass,
                                             _diag(box_inertia(base.mass, base.size))), [chassis], [chassis]))
    tree.add_joint(Joint('base_joint', 'fixed', 'base_footprint', 'base_link', Pose((0.0, 0.0, axle_height))))

    wheelbase, track = drive_geometry(spec.drive.type, [(p.x, p.y, p.driven, p.steered) for p in placements])
    max_steer = spec.drive.max_steering_angle
    if spec.drive.type == 'ackermann' and wheelbase > 0:
        # The inner wheel turns further than the virtual centre wheel: allow its full angle.
        turn_radius = wheelbase / math.tan(max_steer)
        inner = math.atan2(wheelbase, turn_radius - track / 2) if turn_radius > track / 2 else math.pi / 2
        steer_limit = min(inner, math.pi / 2)
    else:
        steer_limit = max_steer

    roles, friction = [], {}
    for p in placements:
        caster = p.y == 0
        centre = (p.x, p.y, p.radius - axle_height)
        link = _wheel_link(f'{p.name}_link', p.radius, p.width, p.mass, caster)
        tree.add_link(link)
        friction[link.name] = p.friction
        steer_joint = None
        parent, origin = 'base_link', Pose(centre)
        if p.steered:
            steer_joint = f'{p.name}_steer_joint'
            steer_inertia = _diag(sphere_inertia(STEER_LINK_MASS, 0.02))
            tree.add_link(Link(f'{p.name}_steer_link', Inertial(Pose(), STEER_LINK_MASS, steer_inertia)))
            tree.add_joint(Joint(steer_joint, 'revolute', 'base_link', f'{p.name}_steer_link', origin, (0.0, 0.0, 1.0),
                                 JointLimit(-steer_limit, steer_limit, spec.drive.wheel_max_torque, 3.0)))
            parent, origin = f'{p.name}_steer_link', Pose()
        if caster:
            tree.add_joint(Joint(f'{p.name}_joint', 'fixed', parent, link.name, origin))
        else:
            tree.add_joint(Joint(f'{p.name}_joint', 'continuous', parent, link.name, origin, (0.0, 1.0, 0.0),
                                 JointLimit(effort=spec.drive.wheel_max_torque,
                                            velocity=spec.drive.max_linear_speed / p.radius * 1.5)))
        roles.append(WheelRole(p.name, f'{p.name}_joint', link.name,
                               'left' if p.y > 0 else 'right' if p.y < 0 else 'centre',
                               p.radius, p.width, p.driven, steer_joint, centre))
    drive = make_drive_role(spec.drive, roles, wheelbase, track, max_steer)

    arms = [_add_arm(tree, arm, index, source) for index, arm in enumerate(spec.arms)]
    sensors = add_sensor_frames(tree, spec.sensors, source)
    tree.validate(source)
    return RobotModel(spec.name, source, tree, 'base_link', 'base_footprint', drive, arms, sensors,
                      link_friction=friction)
