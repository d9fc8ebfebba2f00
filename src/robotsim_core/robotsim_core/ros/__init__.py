"""ROS adapters of robotsim_core: the modules that import rclpy, launch or interface packages
(shared node helpers, the topic-contract probe, the launch adapter, odometry messages).

Everything outside a ``ros/`` folder is ROS-free (tests/test_layering.py checks it by module)."""
