"""robotsim_core: the ROS-free core of robotsim.

One robot description (``config/robots/*.yaml`` or an existing URDF plus a YAML overlay)
becomes a :class:`~robotsim_core.description.model.RobotModel`, from which both the URDF
(for robot_state_publisher and RViz) and the MuJoCo model are generated.
"""
