"""``imu`` readings -> sensor_msgs/Imu (REP 145)."""

from __future__ import annotations

from robotsim_sensors.ros import messages as build


def converter(role, frame_id: str, topics: list):
    (topic,) = topics

    def convert(reading, stamp) -> list:
        return [(topic.name, build.imu(reading, frame_id, stamp))]
    return convert
