"""robotsim sensor models (ROS-free: lidar, camera, IMU) and their sensor_msgs conversion
(:mod:`robotsim_sensors.ros.messages`, the only module here that imports ROS types)."""
