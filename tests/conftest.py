"""The tests of the whole workspace (live graphs of several packages' nodes, launch files, the layer
line); each package's own tests are in src/<package>/test/. Both load one environment and one set
of fixtures: workspace_setup.py."""

from workspace_setup import *  # noqa: F401,F403
