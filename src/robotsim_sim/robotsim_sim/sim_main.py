"""Entry point of the simulator node (``sim_node``): picks MuJoCo's offscreen GL backend
(EGL, else OSMesa) before anything imports mujoco, then runs :mod:`robotsim_sim.ros.sim_node`."""

from __future__ import annotations

import sys


def main(args=None) -> int:
    try:
        from robotsim_sensors.gl_backend import RenderUnavailable, select_gl_backend

        try:
            select_gl_backend()
        except RenderUnavailable as error:
            print(f'robotsim_sim: error: {error}', file=sys.stderr)
            return 2
        from .ros.sim_node import main as run_node
        return run_node(args)
    except BaseException as error:
        if _interrupted(error):
            # Ctrl-C while starting (probing GL, importing, building the world): a normal stop too.
            return 0
        raise


def _interrupted(error: BaseException | None) -> bool:
    """A KeyboardInterrupt, or an error it caused (an extension module interrupted while loading
    raises ImportError from it)."""
    while error is not None:
        if isinstance(error, KeyboardInterrupt):
            return True
        error = error.__cause__ or error.__context__
    return False


if __name__ == '__main__':
    sys.exit(main())
