"""The ROS-free arm core: the serial chain of an arm in a robot description (forward kinematics and the
geometric Jacobian, :mod:`.chain`) and inverse kinematics with joint limits and seeded restarts
(:mod:`.ik`). Planning and time parameterisation modules sit beside these; none of them imports rclpy
or message packages, so the simulator, the CLI, the benchmark and the ROS nodes all share one core.
"""
