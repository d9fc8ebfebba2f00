"""RobotModel -> MuJoCo MJCF text, and the names of the elements it writes (owned here:
``free_joint_name`` and its siblings; ``robotsim_sim.binding`` turns them into ids once).

Each URDF link becomes a body of the same name placed by its parent joint's origin, so body
poses equal URDF link poses exactly (src/robotsim_core/test/test_description_equivalence.py). Moving joints keep
their names; driven wheels, steering and arm joints get actuators; every sensor frame gets a
site, and each sensor's kind adds the elements its model reads (a camera looking down the
optical frame's +z, an IMU's gyro/accelerometer/orientation sensors: robotsim_core.sensor_kinds).
Inertia comes only from the URDF inertials (``inertiafromgeom=false``), so the MuJoCo mass equals the
URDF mass.
"""

from __future__ import annotations

import math
import xml.etree.ElementTree as ET

import numpy as np

from .model import Geometry, KinematicTree, RobotModel, Shape
from ..geometry import rpy_to_matrix, rpy_to_quat
from ..sensor_kinds import sensor_kind

VISUAL_GROUP = 1     # visual-only geoms: rendered, never collide
# MuJoCo cameras look along their -z with +y up; the ROS optical frame looks along +z with
# +y down: a half turn about x maps one onto the other.
OPTICAL_TO_MUJOCO_CAMERA_QUAT = (0.0, 1.0, 0.0, 0.0)


def free_joint_name(body: str) -> str:
    """The free joint of a mobile robot's root body, or of a world entity (a box that can move)."""
    return f'{body}_freejoint'


def wheel_motor_name(joint: str) -> str:
    """The DC motor actuator of a driven wheel's joint."""
    return f'{joint}_motor'


def joint_motor_name(joint: str) -> str:
    """The torque motor of a legged robot's joint (its PD loop runs in robotsim_sim.joint_servos)."""
    return f'{joint}_torque'


def position_servo_name(joint: str) -> str:
    """The position actuator (servo) of a steering, arm or driven gripper joint."""
    return f'{joint}_position'


def number_text(value: float) -> str:
    """A number as MJCF text (repr: exact, so the compiled model is the same on every machine)."""
    return repr(float(value))


def vector_text(values) -> str:
    return ' '.join(number_text(v) for v in values)



def _place(element: ET.Element, xyz, rpy) -> None:
    if any(xyz):
        element.set('pos', vector_text(xyz))
    if any(rpy):
        element.set('quat', vector_text(rpy_to_quat(rpy)))


def _geom_attributes(geometry: Geometry, mesh_names: dict[tuple, str]) -> dict[str, str]:
    if geometry.kind == 'box':
        return {'type': 'box', 'size': vector_text(np.asarray(geometry.size) / 2)}
    if geometry.kind == 'cylinder':
        return {'type': 'cylinder', 'size': vector_text((geometry.size[0], geometry.size[1] / 2))}
    if geometry.kind == 'sphere':
        return {'type': 'sphere', 'size': number_text(geometry.size[0])}
    return {'type': 'mesh', 'mesh': mesh_names[(geometry.filename, geometry.scale)]}


def _full_inertia(inertial) -> str:
    """Inertia tensor rotated into the body frame, in MuJoCo's fullinertia order."""
    ixx, ixy, ixz, iyy, iyz, izz = inertial.inertia
    tensor = np.array([[ixx, ixy, ixz], [ixy, iyy, iyz], [ixz, iyz, izz]])
    rotation = rpy_to_matrix(inertial.origin.rpy)
    body = rotation @ tensor @ rotation.T
    return vector_text((body[0, 0], body[1, 1], body[2, 2], body[0, 1], body[0, 2], body[1, 2]))


def robot_to_mjcf(model: RobotModel, timestep: float = 0.002, collision_group: int = 0) -> str:
    """MJCF of the robot alone; ``collision_group`` is the MuJoCo geom group of its collision geoms
    (the scene gives each robot its own so a lidar can skip its own robot's geometry)."""
    tree = model.tree
    root = ET.Element('mujoco', model=model.name)
    ET.SubElement(root, 'compiler', angle='radian', autolimits='true', inertiafromgeom='false')
    ET.SubElement(root, 'option', timestep=number_text(timestep), integrator='implicitfast')

    asset = ET.SubElement(root, 'asset')
    mesh_names: dict[tuple, str] = {}
    for link in tree.links.values():
        for shape in link.visuals + link.collisions:
            g = shape.geometry
            if g.kind == 'mesh' and (g.filename, g.scale) not in mesh_names:
                name = f'mesh{len(mesh_names)}'
                mesh_names[(g.filename, g.scale)] = name
                ET.SubElement(asset, 'mesh', name=name, file=g.mujoco_file or g.filename, scale=vector_text(g.scale))
    if not len(asset):
        root.remove(asset)

    worldbody = ET.SubElement(root, 'worldbody')
    sensor_sites = {sensor.frame for sensor in model.sensors} | {sensor.spec.body_frame for sensor in model.sensors}
    sensors_at = {}  # link -> the sensors whose data frame it is (their kinds add MuJoCo elements there)
    for sensor in model.sensors:
        sensors_at.setdefault(sensor.frame, []).append(sensor)
    driven_wheels = {wheel.joint for wheel in model.drive.driven_wheels} if model.drive else set()
    inertials = model.body_inertials
    compensated = _gravity_compensated_links(model)
    arm_joints = {name for arm in model.arms for name in arm.joints + arm.gripper_joints}
    leg_joints = set(model.legs.joints) if model.legs else set()

    def add_body(parent: ET.Element, link_name: str) -> None:
        link = tree.links[link_name]
        joint = tree.parent_joint(link_name)
        body = ET.SubElement(parent, 'body', name=model.body_name(link_name))
        if joint is None:
            if model.fixed_base:
                _place(body, model.mount.xyz, model.mount.rpy)  # welded to the world: no joint
            else:
                ET.SubElement(body, 'freejoint', name=free_joint_name(link_name))
        else:
            _place(body, joint.origin.xyz, joint.origin.rpy)
            if joint.type in ('revolute', 'continuous', 'prismatic'):
                element = ET.SubElement(body, 'joint', name=joint.name,
                                        type='slide' if joint.type == 'prismatic' else 'hinge',
                                        axis=vector_text(joint.axis))
                if joint.type != 'continuous' and joint.limit is not None:
                    element.set('range', vector_text((joint.limit.lower, joint.limit.upper)))
                if joint.name in driven_wheels:
                    drive = model.drive
                    element.set('damping', number_text(drive.wheel_max_torque / drive.wheel_no_load_speed))  # back-EMF
                    element.set('armature', number_text(drive.wheel_armature))
                elif joint.name in leg_joints:
                    element.set('damping', '0.05')
                    element.set('armature', number_text(model.legs.armature))  # a geared motor's rotor
                elif joint.type != 'continuous':
                    element.set('damping', '0.05')
                    element.set('armature', '0.001')
                if link_name in compensated and joint.name in arm_joints:
                    element.set('actuatorgravcomp', 'true')  # the servo's own effort limit covers it
        if link_name in compensated:
            body.set('gravcomp', '1')
        inertial = link.inertial if inertials is None else inertials.get(link_name)
        if inertial is not None:
            ET.SubElement(body, 'inertial', pos=vector_text(inertial.origin.xyz), mass=number_text(inertial.mass),
                          fullinertia=_full_inertia(inertial))
        _add_geoms(body, link, model, mesh_names, collision_group)
        if link_name in sensor_sites:
            ET.SubElement(body, 'site', name=link_name, size='0.005')
        for sensor in sensors_at.get(link_name, ()):
            kind = sensor_kind(sensor.type)
            if kind.add_mjcf is not None:
                kind.add_mjcf(root, body, sensor)
        for child in tree.child_joints(link_name):
            add_body(body, child.child)

    add_body(worldbody, tree.root())
    _add_actuators(root, model)
    _add_mimic_equalities(root, tree)
    _add_contact_excludes(root, model)
    ET.indent(root)
    return ET.tostring(root, encoding='unicode') + '\n'


def _gravity_compensated_links(model: RobotModel) -> set[str]:
    """Links carried by an arm joint, when the model's arm servos cancel gravity (real arm
    controllers feed gravity forward; a plain position servo would sag under the arm's weight)."""
    if not model.gravity_compensation:
        return set()
    tree, links = model.tree, set()
    for arm in model.arms:
        for name in arm.joints + arm.gripper_joints:
            stack = [tree.joints[name].child]
            while stack:
                link = stack.pop()
                if link not in links:
                    links.add(link)
                    stack.extend(joint.child for joint in tree.child_joints(link))
    return links


def contact_solref(contact, robot_mass: float) -> tuple[float, float] | None:
    """MuJoCo's direct (negative) solref from a stiffness kp (N/m) and damping kd (N s/m).

    MuJoCo's direct form is per unit effective mass (1/s^2, 1/s): divide by the robot's mass, the
    mass a ground contact carries. Damping is raised to at least critical (2 sqrt(k)): Gazebo's ODE
    step is implicit and does not bounce at these values, MuJoCo's contacts would."""
    if contact is None or contact.stiffness is None or robot_mass <= 0:
        return None
    stiffness = contact.stiffness / robot_mass
    damping = (contact.damping or 0.0) / robot_mass
    return -stiffness, -max(damping, 2 * math.sqrt(stiffness))


def _same_shape(a: Shape, b: Shape) -> bool:
    return a.origin == b.origin and a.geometry == b.geometry


def _add_geoms(body: ET.Element, link, model: RobotModel, mesh_names, collision_group: int) -> None:
    friction = model.link_friction.get(link.name)
    contact = model.contacts.get(link.name)
    if contact is not None and contact.friction is not None:
        friction = contact.friction
    solref = contact_solref(contact, sum(each.inertial.mass for each in model.tree.links.values() if each.inertial))
    for shape in link.collisions:
        geom = ET.SubElement(body, 'geom', group=str(collision_group), **_geom_attributes(shape.geometry, mesh_names))
        _place(geom, shape.origin.xyz, shape.origin.rpy)
        visual = next((v for v in link.visuals if _same_shape(v, shape)), None)
        if visual is not None and visual.rgba is not None:
            geom.set('rgba', vector_text(visual.rgba))
        if friction is not None:
            if friction == 0.0:
                geom.set('condim', '1')  # frictionless ball caster
            else:
                geom.set('friction', vector_text((friction, 0.005, 0.0001)))
        if solref is not None:
            geom.set('solref', vector_text(solref))
        if contact is not None and contact.friction is not None:
            # MuJoCo mixes two geoms' condim and friction by taking the larger, so a frictionless
            # caster on a floor with friction would still drag: priority makes the link's own win.
            geom.set('priority', '1')
    for shape in link.visuals:
        if any(_same_shape(shape, c) for c in link.collisions):
            continue
        geom = ET.SubElement(body, 'geom', group=str(VISUAL_GROUP), contype='0', conaffinity='0',
                             **_geom_attributes(shape.geometry, mesh_names))
        _place(geom, shape.origin.xyz, shape.origin.rpy)
        if shape.rgba is not None:
            geom.set('rgba', vector_text(shape.rgba))


def _add_actuators(root: ET.Element, model: RobotModel) -> None:
    actuator = ET.SubElement(root, 'actuator')
    tree = model.tree
    if model.drive is not None:
        torque = model.drive.wheel_max_torque
        for wheel in model.drive.driven_wheels:
            # A DC gear motor: control is PWM duty in [-1, 1]; torque = stall torque * duty minus
            # back-EMF, which is the joint damping set in add_body (integrated implicitly by MuJoCo).
            ET.SubElement(actuator, 'motor', name=wheel_motor_name(wheel.joint), joint=wheel.joint,
                          gear=number_text(torque), ctrlrange='-1 1')
        for wheel in model.drive.wheels:
            if wheel.steer_joint:
                limit = tree.joints[wheel.steer_joint].limit
                ET.SubElement(actuator, 'position', name=position_servo_name(wheel.steer_joint), joint=wheel.steer_joint,
                              kp='50', kv='2', ctrlrange=vector_text((limit.lower, limit.upper)),
                              forcerange=vector_text((-limit.effort, limit.effort)))
    if model.legs is not None:
        for name in model.legs.joints:  # torque motors: the PD loop is the simulation's (kp, kd per command)
            limit = tree.joints[name].limit
            effort = limit.effort if limit is not None and limit.effort > 0 else 20.0
            ET.SubElement(actuator, 'motor', name=joint_motor_name(name), joint=name,
                          ctrlrange=vector_text((-effort, effort)))
    # Arm joints, each gripper's first finger (the others follow it by equality) and the held joints.
    servoed = [name for arm in model.arms for name in arm.joints + arm.gripper_joints[:1]] + list(model.held_joints)
    for name in servoed:
        limit = tree.joints[name].limit
        effort = limit.effort if limit is not None and limit.effort > 0 else 10.0
        attributes = {'kp': number_text(20 * effort), 'kv': number_text(effort), 'forcerange': vector_text((-effort, effort))}
        if limit is not None and tree.joints[name].type != 'continuous':
            attributes['ctrlrange'] = vector_text((limit.lower, limit.upper))
        ET.SubElement(actuator, 'position', name=position_servo_name(name), joint=name, **attributes)
    if not len(actuator):
        root.remove(actuator)


def _add_mimic_equalities(root: ET.Element, tree: KinematicTree) -> None:
    mimics = [joint for joint in tree.moving_joints() if joint.mimic is not None]
    if mimics:
        equality = ET.SubElement(root, 'equality')
        for joint in mimics:
            ET.SubElement(equality, 'joint', joint1=joint.name, joint2=joint.mimic.joint,
                          polycoef=vector_text((joint.mimic.offset, joint.mimic.multiplier, 0, 0, 0)))


def _add_contact_excludes(root: ET.Element, model: RobotModel) -> None:
    """MuJoCo skips parent-child contacts only; a steered wheel is a grandchild of the chassis.
    Imported robots list their excluded pairs (adjacent groups, touching at start, SRDF)."""
    pairs = []
    if model.drive is not None:
        pairs = [(model.base_link, wheel.link) for wheel in model.drive.wheels if wheel.steer_joint]
    pairs += [pair for pair in model.collision_excludes if pair not in pairs]
    if pairs:
        contact = ET.SubElement(root, 'contact')
        for body1, body2 in pairs:
            ET.SubElement(contact, 'exclude', body1=model.body_name(body1), body2=model.body_name(body2))
