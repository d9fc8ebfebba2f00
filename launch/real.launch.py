"""The real robot: the drivers named in config/real/<robot>.yaml, the motor bridge on the MCU's serial device.

The node graph is defined once in robotsim.bringup; `robotsim launch real` starts the same nodes
on a machine without the launch package. Arguments: `ros2 launch robotsim real.launch.py --show-args`.
"""

from robotsim.ros.launch_adapter import generate_launch_description as _generate


def generate_launch_description():
    return _generate('real')
