"""Blender renders of recorded episodes (``robotsim render``), pixel-aligned with the simulator's cameras.

Workspace side (ROS-free): :mod:`.recording` reads the bag, :mod:`.scene_description` builds the scene
from the robot and world descriptions, :mod:`.compare` measures agreement with the simulator's images,
:mod:`.cli` runs it all. Blender side: ``blender_side.py``, run in bpy's own environment
(:mod:`.environment`), never imported here.
"""
