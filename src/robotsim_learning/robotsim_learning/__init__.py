"""robotsim's learning side: the drivers (:mod:`.driving`, one ROS-free class each, run by the episode loop and
by the driver node), randomised datasets as MCAP bags (:mod:`.dataset`, :mod:`.bag_writer`), the LeRobot export
(:mod:`.lerobot_export`), behaviour cloning to ONNX (:mod:`.policy_training`), closed-loop evaluation
(:mod:`.evaluation`), the browser view (:mod:`.viewer_servers`) and Blender renders (:mod:`.render`); ROS
adapters in ``ros/``; command-line verbs registered as ``robotsim.commands`` entry points."""
