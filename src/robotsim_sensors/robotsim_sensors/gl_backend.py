"""Choose MuJoCo's offscreen OpenGL backend before mujoco is imported.

MuJoCo reads MUJOCO_GL once, at import, and a GL platform that failed to initialise cannot be
swapped in the same process, so each candidate is probed in a short subprocess. Policy: EGL,
falling back to OSMesa; an explicit MUJOCO_GL=osmesa is used as is. When nothing works the
reason is kept, and only a node that needs a camera fails (with :class:`RenderUnavailable`).
"""

from __future__ import annotations

import os
import subprocess
import sys

SUPPORTED = ('egl', 'osmesa')
_PROBE = 'import mujoco; context = mujoco.GLContext(16, 16); context.make_current(); context.free()'
_failure: str | None = None


class RenderUnavailable(RuntimeError):
    """No offscreen OpenGL backend could be created."""


def select_gl_backend() -> str | None:
    """Set MUJOCO_GL (and PYOPENGL_PLATFORM) to a backend that works here; None when none does.

    Raises RenderUnavailable for a MUJOCO_GL value MuJoCo cannot use offscreen."""
    global _failure
    requested = os.environ.get('MUJOCO_GL', '').strip().lower()
    if requested and requested not in SUPPORTED:
        raise RenderUnavailable(f'environment variable MUJOCO_GL={requested!r}: expected one of {", ".join(SUPPORTED)} '
                                '(offscreen rendering without a display)')
    candidates = [requested] if requested == 'osmesa' else ['egl', 'osmesa']
    reasons = []
    for backend in candidates:
        env = {**os.environ, 'MUJOCO_GL': backend, 'PYOPENGL_PLATFORM': backend}
        probe = subprocess.run([sys.executable, '-c', _PROBE], env=env, capture_output=True, text=True, timeout=60)
        if probe.returncode == 0:
            os.environ['MUJOCO_GL'] = os.environ['PYOPENGL_PLATFORM'] = backend
            if reasons:
                print(f'robotsim: {"; ".join(reasons)}; using MUJOCO_GL={backend}', file=sys.stderr)
            return backend
        last_line = (probe.stderr.strip().splitlines() or ['no output'])[-1]
        reasons.append(f'MUJOCO_GL={backend} unavailable ({last_line})')
    _failure = ('; '.join(reasons) + '. Install EGL (Debian: libegl1 libegl-mesa0 libgl1-mesa-dri) or OSMesa '
                '(libosmesa6) — scripts/setup.sh installs both — or run without cameras (cameras:=false).')
    # Leave MuJoCo importable (for physics and lidar) even though nothing can render.
    os.environ['MUJOCO_GL'] = os.environ['PYOPENGL_PLATFORM'] = candidates[-1]
    return None


def unavailable_reason() -> str | None:
    """Why rendering is impossible here, if :func:`select_gl_backend` found no backend."""
    return _failure
