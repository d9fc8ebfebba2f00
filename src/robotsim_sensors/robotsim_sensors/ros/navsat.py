"""``navsat`` readings -> sensor_msgs/NavSatFix (a fix from GPS, covariance diagonal and known)."""

from __future__ import annotations

from sensor_msgs.msg import NavSatFix, NavSatStatus


def converter(role, frame_id: str, topics: list):
    (topic,) = topics

    def convert(reading, stamp) -> list:
        message = NavSatFix(latitude=reading.latitude, longitude=reading.longitude, altitude=reading.altitude,
                            position_covariance=list(reading.position_covariance),
                            position_covariance_type=NavSatFix.COVARIANCE_TYPE_DIAGONAL_KNOWN)
        message.status.status, message.status.service = NavSatStatus.STATUS_FIX, NavSatStatus.SERVICE_GPS
        message.header.stamp, message.header.frame_id = stamp, frame_id
        return [(topic.name, message)]
    return convert
