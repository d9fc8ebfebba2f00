"""The Blender (bpy) environment: installed on demand, pinned, outside the work tree, run as a subprocess.

bpy pins its own interpreter and numpy (bpy 5.0.1: CPython 3.11 only, numpy < 2; the workspace runs
numpy 2), so it never shares the workspace's venv: it gets a virtual environment of its own under the
user's cache (``~/.cache/robotsim/bpy-5.0.1-py3.11/``; ``ROBOTSIM_BPY_ENV`` overrides), which fresh
clones on the same machine reuse. The pins are ``requirements.txt`` beside this file
(``requirements/render.txt`` in the repository links to it). Nothing of it is imported here: the
renderer (``blender_side.py``) runs in that environment as a child process, and the two sides talk
through files (scene description JSON + NPZ in, images and arrays out) and a pipe of progress lines.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

from ..consumer_env import ConsumerEnvironment, ConsumerSetupError

BPY_VERSION = '5.0.1'
PYTHON_VERSION = (3, 11)
REQUIREMENTS = Path(__file__).with_name('requirements.txt')
BLENDER_SCRIPT = Path(__file__).with_name('blender_side.py')
SETUP_COMMAND = 'make render-setup'
"""What the user runs to install the environment (``robotsim render --setup``)."""
BPY = ConsumerEnvironment(
    title=f'Blender (bpy {BPY_VERSION})', folder=f'bpy-{BPY_VERSION}-py{PYTHON_VERSION[0]}.{PYTHON_VERSION[1]}',
    requirements=REQUIREMENTS, check='import bpy; print(bpy.app.version_string)', version=BPY_VERSION,
    setup_command=SETUP_COMMAND, env_variable='ROBOTSIM_BPY_ENV', python_variable='ROBOTSIM_BPY_PYTHON',
    python_version=PYTHON_VERSION, size_note='Blender as a Python module; a 375 MB download, about 1 GB on disk')

RenderSetupError = ConsumerSetupError
"""One line for the user: what is missing and the command that installs it."""


def environment_dir() -> Path:
    return BPY.directory()


def environment_python(env: Path | None = None) -> Path:
    return BPY.python(env)


def is_ready(env: Path | None = None) -> bool:
    return BPY.is_ready(env)


def find_python() -> str:
    return BPY.find_python()


def ensure_environment(install: bool = True, log=None) -> Path:
    """bpy's interpreter, installing the environment first if needed (see ConsumerEnvironment.ensure)."""
    return BPY.ensure(install, log, prefix='robotsim render')


def child_environment() -> dict[str, str]:
    return BPY.child_environment()


def run_blender(python: Path, request: Path, log_path: Path, on_progress=None) -> None:
    """Run the Blender side on ``request`` (a JSON file, see blender_side.py). Blender's own output
    goes to ``log_path``; the script reports each frame as a JSON line on a pipe of its own, handed
    to ``on_progress``. A failure raises with the last lines of the log."""
    read_end, write_end = os.pipe()
    with open(log_path, 'w') as log:
        process = subprocess.Popen([str(python), str(BLENDER_SCRIPT), str(request), str(write_end)],
                                   stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                   pass_fds=(write_end,), env=child_environment())
    os.close(write_end)
    try:
        with os.fdopen(read_end) as progress:
            for line in progress:
                if on_progress is not None and line.strip():
                    on_progress(json.loads(line))
        status = process.wait()
    except BaseException:
        process.kill()
        process.wait()
        raise
    if status != 0:
        tail = log_path.read_text(errors='replace').strip().splitlines()
        errors = [line for line in tail if 'Error' in line or 'error' in line] or tail
        raise RenderSetupError(f'the Blender renderer failed (exit {status}): '
                               f'{(errors[-1] if errors else "no output").strip()} (full log: {log_path})')
