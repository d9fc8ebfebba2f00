"""robotsim simulator node (MuJoCo world, sim time, control services).

Empty until the simulator issue lands: nothing here pretends to simulate yet.
"""
