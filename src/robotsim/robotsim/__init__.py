"""robotsim's bringup, on top of every other package: the ``robotsim`` command line (cli), the node graph
defined once (bringup), the bare-machine launcher (launcher) and the launch files' adapter (ros/)."""
