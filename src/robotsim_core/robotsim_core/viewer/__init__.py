"""Seeing the robot in a browser, ROS-free: the robot and world as glTF (:mod:`.gltf`), a recorded bag
as scene data (:mod:`.bag_scene`) and the self-contained replay/live page (:mod:`.page`).

The live view's rclpy subscriber is a ROS adapter in ``robotsim_learning`` (``viewer_node``); nothing
here imports rclpy or message packages.
"""
