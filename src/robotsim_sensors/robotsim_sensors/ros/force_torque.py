"""``force_torque`` readings -> geometry_msgs/WrenchStamped (force_torque_sensor_broadcaster's message)."""

from __future__ import annotations

from geometry_msgs.msg import WrenchStamped


def converter(role, frame_id: str, topics: list):
    (topic,) = topics

    def convert(reading, stamp) -> list:
        message = WrenchStamped()
        message.header.stamp, message.header.frame_id = stamp, frame_id
        wrench = message.wrench
        wrench.force.x, wrench.force.y, wrench.force.z = (float(v) for v in reading.force)
        wrench.torque.x, wrench.torque.y, wrench.torque.z = (float(v) for v in reading.torque)
        return [(topic.name, message)]
    return convert
