"""The ROS side's table of sensor kinds: kind -> converter factory.

``converter(role, frame_id, topics)`` is called once per placed sensor (its SensorRole, the frame id
its messages carry, its contract topics) and returns ``convert(reading, stamp) -> [(topic, message)]``,
called per reading with the stamp as a builtin_interfaces/Time. The core's table is the
``robotsim.sensor_kinds`` entry-point group (robotsim_core.sensor_kinds); a kind needs a row in both."""

from __future__ import annotations

from . import camera, contact, force_torque, imu, lidar, navsat, range_sensor

CONVERTERS = {
    'lidar': lidar.converter,
    'camera': camera.converter,
    'imu': imu.converter,
    'range': range_sensor.converter,
    'navsat': navsat.converter,
    'force_torque': force_torque.converter,
    'contact': contact.converter,
}


def sensor_converter(role, frame_id: str, topics: list):
    """The converter of one placed sensor; a kind without a row is named in the error."""
    if role.type not in CONVERTERS:
        raise KeyError(f'sensor {role.name!r}: no ROS converter for sensor kind {role.type!r} '
                       f'(robotsim_sensors.ros.converters has: {", ".join(CONVERTERS)})')
    return CONVERTERS[role.type](role, frame_id, topics)
