"""The replay page inline in a Jupyter notebook, in one call and offline::

    from robotsim_learning.notebook import replay
    replay('runs/bag_0')          # the robot in its world, scrubbable, in the cell's output

The same page as ``robotsim view BAG --out run.html`` (robotsim_core.viewer.replay: three.js and the scene
inside the document, nothing fetched), shown in an ``<iframe srcdoc>`` so its scripts and styles stay apart
from the notebook's. The robot and world are found as the command finds them (``robot.yaml``/``world.yaml``
beside a dataset episode's bag, the recording's ``/robot_description`` and ``/sim/scenario``), or given.
"""

from __future__ import annotations

import html
from pathlib import Path

from robotsim_core.viewer.bag_scene import MAX_IMAGE_RATE

MIN_HEIGHT, MAX_HEIGHT = 200, 4000
"""Bounds of the cell's height (pixels)."""


class ReplayView:
    """A replay page ready to show: Jupyter (and anything honouring ``_repr_html_``) draws it inline."""

    def __init__(self, page: str, summary: str, height: int):
        self.page = page
        """The whole offline HTML document."""
        self.summary = summary
        """What it shows, in one line (also its plain-text representation)."""
        self.height = height

    def _repr_html_(self) -> str:
        return (f'<iframe class="robotsim-replay" srcdoc="{html.escape(self.page, quote=True)}" '
                f'style="width: 100%; height: {self.height}px; border: 0" title="{html.escape(self.summary)}">'
                '</iframe>')

    def __repr__(self) -> str:
        return f'<robotsim replay: {self.summary}>'

    def save(self, path: str | Path) -> Path:
        """Write the page as a file (what ``robotsim view BAG --out`` writes)."""
        Path(path).write_text(self.page, encoding='utf-8')
        return Path(path)


def replay(bag: str | Path, robot: str | None = None, world: str | None = None, namespace: str = '',
           height: int = 560, image_rate: float = MAX_IMAGE_RATE) -> ReplayView:
    """The replay page of ``bag`` (a rosbag2 folder) for a notebook cell. ``robot``/``world``: a name or YAML
    path overriding what the recording says; ``height``: the cell's height in pixels (200 to 4000). Bad input
    raises ValueError with one line (a missing bag, an unreadable scenario, a height out of range)."""
    from robotsim_core.description import load_robot
    from robotsim_core.viewer.bag_scene import BagSceneError
    from robotsim_core.viewer.replay import replay_page
    from robotsim_sim.scenario import ScenarioError

    from .viewer_cli import recorded_world

    if isinstance(height, bool) or not isinstance(height, int) or not MIN_HEIGHT <= height <= MAX_HEIGHT:
        raise ValueError(f'height: expected {MIN_HEIGHT} to {MAX_HEIGHT} pixels, got {height!r}')
    if not Path(bag).exists():
        raise ValueError(f'bag: {bag} does not exist (expected a rosbag2 folder)')
    try:
        model = load_robot(robot) if robot else None
        drawn_world = recorded_world(bag, world, namespace)
        page, summary = replay_page(bag, model, drawn_world, namespace, image_rate)
    except (ScenarioError, BagSceneError) as error:
        raise ValueError(str(error)) from None
    return ReplayView(page, summary, height)
