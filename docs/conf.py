"""Sphinx configuration of robotsim's documentation (Markdown through MyST, as ROS 2's own docs).

``make docs`` regenerates the reference pages (docs/generate_reference.py) and builds the HTML into
out/docs with warnings as errors."""

project = 'robotsim'
author = 'robotsim developers'
copyright = '2026, robotsim developers (Apache License 2.0)'

extensions = ['myst_parser']
source_suffix = {'.md': 'markdown'}
root_doc = 'index'
exclude_patterns = ['_build']
myst_heading_anchors = 3
html_theme = 'alabaster'
html_static_path = []
html_theme_options = {'description': 'a MuJoCo simulator that stands in for a ROS 2 robot',
                      'fixed_sidebar': True}
