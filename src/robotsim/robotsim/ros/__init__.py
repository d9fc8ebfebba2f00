"""The bringup's ROS adapter: the node graph as `launch` actions (the launch files call it)."""
