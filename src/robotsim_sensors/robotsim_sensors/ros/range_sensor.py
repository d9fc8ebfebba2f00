"""``range`` readings -> sensor_msgs/Range (REP 117: +Inf no echo, -Inf too close)."""

from __future__ import annotations

from sensor_msgs.msg import Range

RADIATION = {'ultrasound': Range.ULTRASOUND, 'infrared': Range.INFRARED}


def converter(role, frame_id: str, topics: list):
    (topic,) = topics
    spec = role.spec

    def convert(reading, stamp) -> list:
        message = Range(radiation_type=RADIATION[spec.radiation], field_of_view=float(spec.field_of_view),
                        min_range=float(spec.min_range), max_range=float(spec.max_range), range=float(reading.range))
        message.header.stamp, message.header.frame_id = stamp, frame_id
        return [(topic.name, message)]
    return convert
