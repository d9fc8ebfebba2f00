"""The simulator bringup: MuJoCo sim node, firmware in the loop + motor bridge, state publisher.

The node graph is defined once in robotsim.bringup; `robotsim launch sim` starts the same nodes
on a machine without the launch package. Arguments: `ros2 launch robotsim sim.launch.py --show-args`.
"""

from robotsim.ros.launch_adapter import generate_launch_description as _generate


def generate_launch_description():
    return _generate('sim')
