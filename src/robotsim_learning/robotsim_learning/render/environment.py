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

import fcntl
import hashlib
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

BPY_VERSION = '5.0.1'
PYTHON_VERSION = (3, 11)
REQUIREMENTS = Path(__file__).with_name('requirements.txt')
BLENDER_SCRIPT = Path(__file__).with_name('blender_side.py')
SETUP_COMMAND = 'make render-setup'
"""What the user runs to install the environment (``robotsim render --setup``)."""
MARKER = '.robotsim-complete'
"""Written last by an install: holds the sha256 of the pins it installed (a half-built or stale
environment has none, or another, and is rebuilt)."""


class RenderSetupError(RuntimeError):
    """One line for the user: what is missing and the command that installs it."""


def environment_dir() -> Path:
    override = os.environ.get('ROBOTSIM_BPY_ENV')
    if override:
        return Path(override).expanduser()
    cache = Path(os.environ.get('XDG_CACHE_HOME') or Path.home() / '.cache')
    return cache / 'robotsim' / f'bpy-{BPY_VERSION}-py{PYTHON_VERSION[0]}.{PYTHON_VERSION[1]}'


def _pins_digest() -> str:
    return hashlib.sha256(REQUIREMENTS.read_bytes()).hexdigest()


def environment_python(env: Path | None = None) -> Path:
    return (env or environment_dir()) / 'bin' / 'python'


def is_ready(env: Path | None = None) -> bool:
    env = env or environment_dir()
    try:
        return (env / MARKER).read_text().strip() == _pins_digest() and environment_python(env).exists()
    except OSError:
        return False


def _version_of(python: str) -> tuple[int, int] | None:
    try:
        out = subprocess.run([python, '-c', 'import sys, platform; print(platform.python_implementation(), '
                                            '*sys.version_info[:2])'],
                             capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return None
    parts = out.stdout.split()
    if out.returncode != 0 or len(parts) != 3 or parts[0] != 'CPython':
        return None
    return int(parts[1]), int(parts[2])


def find_python() -> str:
    """A CPython 3.11 interpreter to base the environment on: ``ROBOTSIM_BPY_PYTHON``, the
    interpreter the workspace runs on when it is 3.11, else ``python3.11`` on the PATH."""
    wanted = '.'.join(map(str, PYTHON_VERSION))
    override = os.environ.get('ROBOTSIM_BPY_PYTHON')
    candidates = [override] if override else [getattr(sys, '_base_executable', sys.executable), sys.executable,
                                              shutil.which(f'python{wanted}')]
    for candidate in candidates:
        if candidate and _version_of(candidate) == PYTHON_VERSION:
            return candidate
    where = f'ROBOTSIM_BPY_PYTHON={override} is not' if override else 'found no'
    raise RenderSetupError(f'Blender renders need CPython {wanted} (bpy {BPY_VERSION} is built for it only): {where} '
                           f'CPython {wanted}; install python{wanted} or set ROBOTSIM_BPY_PYTHON, then run '
                           f'`{SETUP_COMMAND}`')


def ensure_environment(install: bool = True, log=None) -> Path:
    """The environment's interpreter, installing the environment first if it is missing or its pins
    changed (``install`` False: say which command installs it instead). Safe to call from several
    processes at once: one installs, the others wait for it."""
    log = log or (lambda text: print(text, file=sys.stderr, flush=True))
    env = environment_dir()
    if is_ready(env):
        return environment_python(env)
    if not install:
        raise RenderSetupError(f'Blender (bpy {BPY_VERSION}) is not installed in {env}: run `{SETUP_COMMAND}` '
                               '(or `robotsim render` without --no-install)')
    env.parent.mkdir(parents=True, exist_ok=True)
    with open(env.parent / f'{env.name}.lock', 'w') as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # another process may be installing: wait for it
        if is_ready(env):
            return environment_python(env)
        _install(env, log)
    return environment_python(env)


def _install(env: Path, log) -> None:
    base = find_python()
    log(f'robotsim render: installing bpy {BPY_VERSION} (Blender as a Python module; a 375 MB download, about '
        f'1 GB on disk) into {env}, once: later runs and fresh clones reuse it')
    started = time.monotonic()
    if env.exists():
        shutil.rmtree(env)  # a half-built or outdated environment
    python = str(environment_python(env))
    steps = [
        [base, '-m', 'venv', str(env)],
        # Every package is pinned in REQUIREMENTS, the closure included: --no-deps keeps anything
        # unpinned out, and `pip check` proves the closure complete.
        [python, '-m', 'pip', 'install', '--no-deps', '--disable-pip-version-check', '-r', str(REQUIREMENTS)],
        [python, '-m', 'pip', 'check', '--disable-pip-version-check'],
        [python, '-c', 'import bpy; print(bpy.app.version_string)'],
    ]
    for step in steps:
        result = subprocess.run(step, capture_output=True, text=True, env=child_environment())
        if result.returncode != 0:
            detail = ' '.join((result.stderr.strip().splitlines() or result.stdout.strip().splitlines() or ['?'])[-1:])
            raise RenderSetupError(f'installing bpy {BPY_VERSION} into {env} failed at `{" ".join(step[-3:])}`: '
                                   f'{detail}; fix that, then run `{SETUP_COMMAND}`')
    version = result.stdout.strip().split()[0] if result.stdout.strip() else '?'
    if version != BPY_VERSION:
        raise RenderSetupError(f'{env}: expected bpy {BPY_VERSION}, the environment imports {version}; '
                               f'delete it and run `{SETUP_COMMAND}`')
    (env / MARKER).write_text(_pins_digest() + '\n')
    size = sum(f.stat().st_size for f in env.rglob('*') if f.is_file() and not f.is_symlink())
    log(f'robotsim render: bpy {BPY_VERSION} installed in {time.monotonic() - started:.0f} s '
        f'({size / 2**30:.2f} GiB in {env})')


def child_environment() -> dict[str, str]:
    """The workspace's environment without what would make the bpy interpreter import the
    workspace's packages (its PYTHONPATH carries the ROS install and numpy 2)."""
    environment = {key: value for key, value in os.environ.items()
                   if key not in ('PYTHONPATH', 'PYTHONHOME', 'VIRTUAL_ENV', 'PYTHONSTARTUP')}
    environment['PYTHONNOUSERSITE'] = '1'
    return environment


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
