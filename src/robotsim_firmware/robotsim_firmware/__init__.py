"""robotsim's base microcontroller: the C firmware (``firmware/``: host build loaded by the simulator with
ctypes, Cortex-M4 build for the robot), its serial protocol (:mod:`.protocol`), the firmware in the loop of the
simulation (:mod:`.in_the_loop`, :mod:`.host_library`) and the motor bridge node (``ros/bridge_node.py``) that
speaks to it over a serial link, in simulation and on the robot alike."""
