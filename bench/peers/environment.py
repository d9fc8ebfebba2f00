"""The peer simulators' environment (PyBullet, Drake): installed on demand, pinned, outside the work tree.

PyBullet and Drake are what users would pick instead of robotsim, and their URDF parsers are among the
consumers of what ``robotsim describe --urdf`` writes. Neither is imported by the workspace: they live
in a virtual environment of their own (``~/.cache/robotsim/peers-py3.11/``; ``ROBOTSIM_PEERS_ENV``
overrides; ``make peers-setup`` installs it), and the scripts beside this file run there as child
processes, talking through JSON on stdout.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / 'src' / 'robotsim_learning'))
from robotsim_learning.consumer_env import ConsumerEnvironment, ConsumerSetupError  # noqa: E402

HERE = Path(__file__).resolve().parent
RESULT = 'RESULT '
"""What a peer script's result line starts with."""
PEERS = ConsumerEnvironment(
    title='the peer simulators (PyBullet 3.2.7, Drake 1.51.1)', folder='peers-py3.11',
    requirements=HERE / 'requirements.txt',
    # (pybullet's C code prints its build time on stdout at import; it comes after Python's output)
    check='import pybullet, pydrake.all; from importlib.metadata import version; print(version("pybullet"), version("drake"))',
    version='3.2.7', setup_command='make peers-setup', env_variable='ROBOTSIM_PEERS_ENV',
    python_variable='ROBOTSIM_PEERS_PYTHON', size_note='about 0.7 GB on disk')


def run_peer(script: str, *args: str, timeout: float = 1800, install: bool = True) -> dict:
    """Run ``script`` (a file beside this one) in the peers' environment; returns the JSON it printed on its
    ``RESULT`` line (the peers' C code prints on stdout too).
    Raises ConsumerSetupError (one line) when the environment cannot be installed or the script fails."""
    python = PEERS.ensure(install, prefix='robotsim peers')
    result = subprocess.run([str(python), str(HERE / script), *args], capture_output=True, text=True,
                            env=PEERS.child_environment(), stdin=subprocess.DEVNULL, timeout=timeout)
    # (Bullet's warnings end without a newline: the marker may follow one on the same line)
    lines = [line.split(RESULT, 1)[1] for line in result.stdout.splitlines() if RESULT in line]
    if result.returncode != 0 or not lines:
        detail = ([line for line in result.stderr.splitlines() if line.strip() and 'build time' not in line]
                  or ['no output'])[-1]
        raise ConsumerSetupError(f'{script} in {PEERS.directory()} failed: {detail}')
    return json.loads(lines[-1])


def pybullet_only_path() -> Path:
    """A folder holding only PyBullet's module (a link into the peers' environment), for a workspace
    process that needs PyBullet beside rclpy (pybullet_bridge.py): PyBullet depends on nothing but numpy,
    which the workspace has."""
    python = PEERS.ensure(prefix='robotsim peers')
    site = next(python.parent.parent.glob('lib/python3*/site-packages'))
    folder = PEERS.directory() / 'pybullet-only'
    folder.mkdir(exist_ok=True)
    for module in site.glob('pybullet.cpython-*.so'):
        link = folder / module.name
        if not link.exists():
            link.symlink_to(module)
    return folder
