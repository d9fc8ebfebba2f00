"""This package's tests, run by `colcon test` (from this folder) and by the workspace's `make test`.

The environment every test of the workspace runs in (ROS traffic on this machine and a domain of
the run's own, MuJoCo's GL backend) and the helpers they share live in the workspace's tests/
folder (its conftest.py and *_helpers.py): loaded from there, so both runners see one definition."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[3] / 'tests'))

from workspace_setup import *  # noqa: E402,F401,F403  (fixtures and the environment, once)
