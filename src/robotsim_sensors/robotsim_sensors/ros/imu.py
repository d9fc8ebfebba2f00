"""``imu`` readings -> sensor_msgs/Imu (REP 145)."""

from __future__ import annotations

from robotsim_sensors.ros import messages as build


def converter(role, frame_id: str, topics: list):
    (topic,) = topics
    encoder = build.ImuEncoder(frame_id)

    def convert(reading, stamp) -> list:
        return [(topic.name, encoder.encode(reading, stamp))]
    return convert
