"""ROS adapters of robotsim_sim: the modules that import rclpy, launch or interface packages.

Everything outside a ``ros/`` folder is ROS-free (tests/test_layering.py checks it by module)."""
