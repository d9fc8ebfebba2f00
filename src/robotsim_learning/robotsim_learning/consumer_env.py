"""Cached environments of heavy consumers (Blender's bpy, LeRobot): installed on demand, pinned, outside
the work tree, run as subprocesses. ROS-free.

A consumer whose dependencies clash with the workspace's (bpy pins numpy < 2; lerobot pulls PyTorch)
never shares the workspace venv: it gets a virtual environment of its own under the user's cache
(``~/.cache/robotsim/<name>/``, or the path in its override variable), which fresh clones on the same
machine reuse. Its pins are a requirements file inside this package; an install writes a marker holding
their sha256 last, so a half-built or outdated environment is rebuilt. Nothing of it is imported by the
workspace: scripts run in it as child processes and talk through files.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

MARKER = '.robotsim-complete'
"""Written last by an install: the sha256 of the pins it installed."""


class ConsumerSetupError(RuntimeError):
    """One line for the user: what is missing and the command that installs it."""


@dataclass(frozen=True)
class ConsumerEnvironment:
    """One consumer's environment: what it is, where it lives, how it is installed and checked."""

    title: str
    """What is installed, for messages (e.g. 'Blender (bpy 5.0.1)')."""
    folder: str
    """Folder name under ``~/.cache/robotsim``."""
    requirements: Path
    """The pins, one ``name==version`` a line, installed with ``pip install --no-deps`` (the closure)."""
    check: str
    """Python code run in the environment after the install; its first output word is the version."""
    version: str
    """What ``check`` must print first."""
    setup_command: str
    """What the user runs to install it (e.g. ``make render-setup``)."""
    env_variable: str
    """Overrides the environment's folder."""
    python_variable: str
    """Names the interpreter to base it on."""
    python_version: tuple[int, int] = (3, 11)
    size_note: str = ''
    """Download and disk size, said before the install starts."""
    pip_check: bool = True
    """Run ``pip check`` (False where the consumer's own pins are known to be looser than what works)."""
    extra_environment: dict = field(default_factory=dict)
    """Variables set for the install and every run (e.g. offline switches)."""

    def directory(self) -> Path:
        override = os.environ.get(self.env_variable)
        if override:
            return Path(override).expanduser()
        cache = Path(os.environ.get('XDG_CACHE_HOME') or Path.home() / '.cache')
        return cache / 'robotsim' / self.folder

    def python(self, env: Path | None = None) -> Path:
        return (env or self.directory()) / 'bin' / 'python'

    def _pins_digest(self) -> str:
        return hashlib.sha256(self.requirements.read_bytes()).hexdigest()

    def is_ready(self, env: Path | None = None) -> bool:
        env = env or self.directory()
        try:
            return (env / MARKER).read_text().strip() == self._pins_digest() and self.python(env).exists()
        except OSError:
            return False

    def find_python(self) -> str:
        """A CPython of ``python_version`` to base the environment on: the override variable, the
        interpreter the workspace runs on when it has that version, else ``pythonX.Y`` on the PATH."""
        wanted = '.'.join(map(str, self.python_version))
        override = os.environ.get(self.python_variable)
        candidates = [override] if override else [getattr(sys, '_base_executable', sys.executable), sys.executable,
                                                  shutil.which(f'python{wanted}')]
        for candidate in candidates:
            if candidate and _version_of(candidate) == self.python_version:
                return candidate
        where = f'{self.python_variable}={override} is not' if override else 'found no'
        raise ConsumerSetupError(f'{self.title} needs CPython {wanted}: {where} CPython {wanted}; install '
                                 f'python{wanted} or set {self.python_variable}, then run `{self.setup_command}`')

    def ensure(self, install: bool = True, log=None, prefix: str = 'robotsim') -> Path:
        """The environment's interpreter, installing the environment first if it is missing or its pins
        changed (``install`` False: say which command installs it instead). Safe from several processes
        at once: one installs, the others wait for it."""
        log = log or (lambda text: print(text, file=sys.stderr, flush=True))
        env = self.directory()
        if self.is_ready(env):
            return self.python(env)
        if not install:
            raise ConsumerSetupError(f'{self.title} is not installed in {env}: run `{self.setup_command}`')
        env.parent.mkdir(parents=True, exist_ok=True)
        with open(env.parent / f'{env.name}.lock', 'w') as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)  # another process may be installing: wait for it
            if not self.is_ready(env):
                self._install(env, log, prefix)
        return self.python(env)

    def _install(self, env: Path, log, prefix: str) -> None:
        base = self.find_python()
        log(f'{prefix}: installing {self.title}{f" ({self.size_note})" if self.size_note else ""} into {env}, once: '
            'later runs and fresh clones reuse it')
        started = time.monotonic()
        if env.exists():
            shutil.rmtree(env)  # a half-built or outdated environment
        python = str(self.python(env))
        steps = [[base, '-m', 'venv', str(env)],
                 # Every package is pinned, the closure included: --no-deps keeps anything unpinned out.
                 [python, '-m', 'pip', 'install', '--no-deps', '--disable-pip-version-check', '-q', '-r',
                  str(self.requirements)]]
        if self.pip_check:
            steps.append([python, '-m', 'pip', 'check', '--disable-pip-version-check'])
        steps.append([python, '-c', self.check])
        for step in steps:
            result = subprocess.run(step, capture_output=True, text=True, env=self.child_environment())
            if result.returncode != 0:
                detail = ' '.join((result.stderr.strip().splitlines() or result.stdout.strip().splitlines()
                                   or ['?'])[-1:])
                raise ConsumerSetupError(f'installing {self.title} into {env} failed at `{" ".join(step[-3:])}`: '
                                         f'{detail}; fix that, then run `{self.setup_command}`')
        printed = result.stdout.strip().split()
        if not printed or printed[0] != self.version:
            raise ConsumerSetupError(f'{env}: expected {self.version}, the environment says '
                                     f'{printed[0] if printed else "nothing"}; delete it and run `{self.setup_command}`')
        (env / MARKER).write_text(self._pins_digest() + '\n')
        size = sum(f.stat().st_size for f in env.rglob('*') if f.is_file() and not f.is_symlink())
        log(f'{prefix}: {self.title} installed in {time.monotonic() - started:.0f} s ({size / 2**30:.2f} GiB in {env})')

    def child_environment(self) -> dict[str, str]:
        """The workspace's environment without what would make the consumer's interpreter import the
        workspace's packages (its PYTHONPATH carries the ROS install and the workspace's numpy)."""
        environment = {key: value for key, value in os.environ.items()
                       if key not in ('PYTHONPATH', 'PYTHONHOME', 'VIRTUAL_ENV', 'PYTHONSTARTUP')}
        environment['PYTHONNOUSERSITE'] = '1'
        environment.update(self.extra_environment)
        return environment


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
