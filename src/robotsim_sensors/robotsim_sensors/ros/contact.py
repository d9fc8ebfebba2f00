"""``contact`` readings -> ros_gz_interfaces/Contacts (what ros_gz_bridge gives a Gazebo contact sensor).

One ``Contact`` per touching body: ``collision1`` the sensed link (an Entity of type LINK), ``collision2`` the
other body (LINK, or COLLISION for a static shape of the world named by its own name), the points, normals and
depths, and one JointWrench per point: ``body_1_wrench`` on the sensed link, ``body_2_wrench`` its opposite,
both about the sensor frame's origin in the sensor frame (robotsim_sensors.contact)."""

from __future__ import annotations

from geometry_msgs.msg import Vector3, Wrench
from ros_gz_interfaces.msg import Contact, Contacts, Entity, JointWrench


def _vector(values) -> Vector3:
    return Vector3(x=float(values[0]), y=float(values[1]), z=float(values[2]))


def _wrench(force, torque, sign: float) -> Wrench:
    return Wrench(force=_vector(sign * force), torque=_vector(sign * torque))


def converter(role, frame_id: str, topics: list):
    (topic,) = topics

    def convert(reading, stamp) -> list:
        message = Contacts()
        message.header.stamp, message.header.frame_id = stamp, frame_id
        link = Entity(id=reading.link_id, name=reading.link, type=Entity.LINK)
        for touch in reading.touches:
            contact = Contact(collision1=link, collision2=Entity(
                id=touch.other_id, name=touch.other, type=Entity.LINK if touch.other_id else Entity.COLLISION))
            contact.positions = [_vector(p) for p in touch.positions]
            contact.normals = [_vector(n) for n in touch.normals]
            contact.depths = [float(d) for d in touch.depths]
            for force, torque in zip(touch.forces, touch.torques):
                wrench = JointWrench()
                wrench.header = message.header
                wrench.body_1_name.data, wrench.body_1_id.data = reading.link, reading.link_id
                wrench.body_2_name.data, wrench.body_2_id.data = touch.other, touch.other_id
                wrench.body_1_wrench, wrench.body_2_wrench = _wrench(force, torque, 1.0), _wrench(force, torque, -1.0)
                contact.wrenches.append(wrench)
            message.contacts.append(contact)
        return [(topic.name, message)]
    return convert
