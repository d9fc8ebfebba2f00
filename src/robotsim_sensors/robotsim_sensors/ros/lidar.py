"""``lidar`` readings -> LaserScan (one channel) or PointCloud2 (several)."""

from __future__ import annotations

from robotsim_sensors.ros import messages as build


def converter(role, frame_id: str, topics: list):
    (topic,) = topics
    message = build.laser_scan if role.spec.channels == 1 else build.point_cloud

    def convert(reading, stamp) -> list:
        return [(topic.name, message(reading, frame_id, stamp))]
    return convert
