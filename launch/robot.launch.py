"""Either world: use_sim:=true (simulator) or use_sim:=false (real drivers).

The node graph is defined once in robotsim.bringup; `robotsim launch robot` starts the same nodes
on a machine without the launch package. Arguments: `ros2 launch robotsim robot.launch.py --show-args`.
"""

from robotsim.ros.launch_adapter import generate_launch_description as _generate


def generate_launch_description():
    return _generate('robot')
