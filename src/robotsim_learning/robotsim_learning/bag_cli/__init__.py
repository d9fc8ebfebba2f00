"""``robotsim bag info|repair``: rosbag2 MCAP bag tools, one module per verb (``robotsim.commands`` entry points)."""
