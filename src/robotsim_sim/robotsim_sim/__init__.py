"""robotsim's simulator: the MuJoCo world (:mod:`.simulation` and the parts it is made of: compiled scene,
robot assembly, arm goals, entities, instability watch), the arm's planning and pick and place, and the ROS
nodes in ``ros/`` (the simulator node, the state publisher, the arm commander, the monitor). ROS-free outside
``ros/``."""
