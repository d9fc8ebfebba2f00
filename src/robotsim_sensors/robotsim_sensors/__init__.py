"""robotsim sensor models (lidar, cameras, IMU, encoders) and sensor_msgs conversion.

Empty until the simulator issue lands: nothing here pretends to sense yet.
"""
