"""The environment every test of the workspace runs in, and the fixtures they share: loaded by
tests/conftest.py and by each package's test/conftest.py (so `colcon test` of one package and the
workspace's `make test` set up alike). Tests run inside the bare-machine environment
(scripts/env.sh) or a sourced full ROS install; ROS traffic stays on this machine and on a domain of
this test run's own."""

from __future__ import annotations

import atexit
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

WORKSPACE = Path(__file__).resolve().parents[1]
ROS_NODES = Path(__file__).resolve().parent / 'ros_nodes'

__all__ = ['WORKSPACE', 'ROS_NODES', 'workspace', 'run_python']

if not os.environ.get('AMENT_PREFIX_PATH'):
    raise pytest.UsageError('run the tests through `make test` (or source scripts/env.sh first)')

# Network rule: discovery never leaves this machine, and this run gets a ROS domain that a
# parallel run (another clone, CI) is unlikely to share: derived from the process id, kept
# clear of the per-workspace default domains (1-100) that scripts/env.sh hands out.
os.environ['ROS_AUTOMATIC_DISCOVERY_RANGE'] = 'LOCALHOST'
if os.environ.get('ROBOTSIM_DISTRO', 'kilted') == 'jazzy':
    # Jazzy still reads the deprecated variable: set, every process warns twice and ignores the range
    # (scripts/env.sh unsets it there too).
    os.environ.pop('ROS_LOCALHOST_ONLY', None)
else:
    os.environ['ROS_LOCALHOST_ONLY'] = '1'  # Humble's switch (Kilted ignores it)
os.environ['ROS_DOMAIN_ID'] = str(110 + os.getpid() % 120)

# Every training in the tests decodes its bags, and never touches the user's sample cache: the tests' trainings
# use a folder of this run's own and keep nothing in it after a training (the bags a test generates are the same
# bytes every run, and a warm cache would skip the decoding the tests are there to exercise). The sample cache's
# own test sets its folder and bound.
os.environ['ROBOTSIM_SAMPLE_CACHE'] = tempfile.mkdtemp(prefix='robotsim-test-samples-')
os.environ['ROBOTSIM_SAMPLE_CACHE_BYTES'] = '0'
atexit.register(shutil.rmtree, os.environ['ROBOTSIM_SAMPLE_CACHE'], ignore_errors=True)

# Choose MuJoCo's offscreen GL backend (EGL, else OSMesa) before any test imports mujoco.
from robotsim_sensors.gl_backend import select_gl_backend  # noqa: E402

select_gl_backend()


@pytest.fixture
def workspace() -> Path:
    return WORKSPACE


def run_python(script: Path | str, *args: str, timeout: float = 60.0, env: dict | None = None,
               check: bool = True) -> subprocess.CompletedProcess:
    """Run a Python script in a fresh interpreter with this run's ROS environment."""
    completed = subprocess.run([sys.executable, str(script), *args], capture_output=True, text=True,
                               timeout=timeout, env={**os.environ, **(env or {})})
    if check and completed.returncode != 0:
        raise AssertionError(f'{script} exited {completed.returncode}\nstdout:\n{completed.stdout}\n'
                             f'stderr:\n{completed.stderr}')
    return completed
