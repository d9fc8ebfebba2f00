"""robotsim base-MCU firmware, serial protocol and motor bridge node.

Empty until the firmware-in-the-loop issue lands.
"""
