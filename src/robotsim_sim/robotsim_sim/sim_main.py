"""Entry point of the simulator node (``sim_node``): picks MuJoCo's offscreen GL backend
(EGL, else OSMesa) before anything imports mujoco, then runs :mod:`robotsim_sim.sim_node`."""

from __future__ import annotations

import sys


def main(args=None) -> int:
    from robotsim_sensors.gl_backend import RenderUnavailable, select_gl_backend

    try:
        select_gl_backend()
    except RenderUnavailable as error:
        print(f'robotsim_sim: error: {error}', file=sys.stderr)
        return 2
    from .sim_node import main as run_node
    return run_node(args)


if __name__ == '__main__':
    sys.exit(main())
