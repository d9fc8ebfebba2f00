"""The training samples of each episode bag, kept between trainings (ROS-free).

Decoding a bag's messages into (observation, action) samples is most of a training's time (about half of a 60-epoch
training on thousands of episodes), and a DAgger loop trains again and again on mostly the same datasets.
:class:`SampleCache` keeps each episode's samples in one file named by a content key: the bytes of every file of the
bag folder, the observation spec (with the perception model's sha256), the mirror option and the source of the code
that decodes (:data:`DECODER_SOURCES`). A bag recorded again, moved or copied is recognised by its bytes, never by
its path or time; anything that changes what the samples would be changes the key. The samples read back are the
same float32 arrays (``.npy`` in a ``.npz``), so a training gives the same file with the cache cold, warm or off.

The cache lives in ``$ROBOTSIM_SAMPLE_CACHE``, else ``$ROBOTSIM_CACHE/samples`` (default
``~/.cache/robotsim/samples``, beside the converted meshes), and is bounded: after a training the least recently
used entries go until the total is within ``ROBOTSIM_SAMPLE_CACHE_BYTES`` (default :data:`DEFAULT_LIMIT_BYTES`).
It is an optimisation only: an entry that cannot be written (a full or read-only disk) or read back (damaged) is
decoded from the bag again.
"""

from __future__ import annotations

import functools
import hashlib
import os
import tempfile
import time
from pathlib import Path

import numpy as np

DECODER_SOURCES = ('observation.py', 'route_memory.py', 'policy_training.py', 'policy_runtime.py')
"""The package's modules that decide what :func:`robotsim_learning.policy_training.episode_samples` makes of a bag
(the observation, the reading, a chained policy's perception stage): any edit of them changes every key, so an entry
decoded by other code is never read."""

DEFAULT_LIMIT_BYTES = 4 << 30
"""The cache's default bound (4 GiB: the samples of about 50000 rover episodes of 72 sectors with --mirror, 0.4 GB
for 4650)."""

FOLDER_VARIABLE = 'ROBOTSIM_SAMPLE_CACHE'
"""Environment variable naming the cache's folder (the test suite points it at a folder of its own)."""

LIMIT_VARIABLE = 'ROBOTSIM_SAMPLE_CACHE_BYTES'
"""Environment variable bounding the cache's size in bytes (0: keep nothing)."""

SUFFIX = '.npz'

STALE_WRITE_SECONDS = 3600.0
"""A temporary file this old was left by a killed process (an entry is written in well under a second)."""


def cache_folder() -> Path:
    """``$ROBOTSIM_SAMPLE_CACHE``, else ``samples`` in ``$ROBOTSIM_CACHE`` or ``$XDG_CACHE_HOME/robotsim``
    (default ``~/.cache/robotsim/samples``)."""
    if os.environ.get(FOLDER_VARIABLE):
        return Path(os.environ[FOLDER_VARIABLE])
    from robotsim_core.description.meshes import cache_dir
    return Path(cache_dir()).parent / 'samples'


def limit_from_environment() -> int:
    """The bound in bytes: ``ROBOTSIM_SAMPLE_CACHE_BYTES`` (ValueError naming it when not a count of bytes)."""
    text = os.environ.get(LIMIT_VARIABLE, '')
    if not text:
        return DEFAULT_LIMIT_BYTES
    if not text.isdigit():
        raise ValueError(f'{LIMIT_VARIABLE}: expected a size in bytes (0, 1, ...), got {text!r}')
    return int(text)


def bag_digest(bag: Path) -> str:
    """sha256 over the names and bytes of every file of the bag folder, in name order."""
    hasher = hashlib.sha256()
    for path in sorted(p for p in Path(bag).iterdir() if p.is_file()):
        hasher.update(path.name.encode() + b'\0')
        with open(path, 'rb') as stream:
            for block in iter(lambda: stream.read(1 << 20), b''):
                hasher.update(block)
        hasher.update(b'\0')
    return hasher.hexdigest()


@functools.lru_cache(maxsize=1)
def decoder_digest() -> str:
    """sha256 over the source of :data:`DECODER_SOURCES` (read once per process)."""
    hasher = hashlib.sha256()
    for name in DECODER_SOURCES:
        hasher.update(name.encode() + b'\0' + (Path(__file__).parent / name).read_bytes() + b'\0')
    return hasher.hexdigest()


def sample_key(bag: Path, spec_json: str, mirror: bool) -> str:
    """The content key of a bag's samples for the observation spec ``spec_json`` (which names a perception
    model by its sha256)."""
    parts = (decoder_digest(), bag_digest(bag), spec_json, f'mirror {bool(mirror)}')
    return hashlib.sha256('\n'.join(parts).encode()).hexdigest()


class SampleCache:
    """Owns the folder ``root`` (created on the first write): one ``KEY.npz`` per episode's samples."""

    def __init__(self, root: Path):
        self.root = Path(root)

    def path(self, key: str) -> Path:
        return self.root / f'{key}{SUFFIX}'

    def get(self, key: str) -> tuple[np.ndarray, np.ndarray] | None:
        """The (observations, actions) stored under ``key`` (its use time renewed), or None."""
        path = self.path(key)
        try:
            with np.load(path, allow_pickle=False) as stored:
                observations, actions = stored['observations'], stored['actions']
            os.utime(path)
        except (OSError, KeyError, ValueError):  # absent, removed meanwhile or damaged: decode the bag again
            return None
        return observations, actions

    def put(self, key: str, observations: np.ndarray, actions: np.ndarray) -> None:
        """Store the samples under ``key``: written whole to a temporary file and renamed (another reader sees the
        old entry or the new one, never part of one); nothing stored when the disk refuses."""
        try:
            self.root.mkdir(parents=True, exist_ok=True)
            handle, temporary = tempfile.mkstemp(dir=self.root, prefix='.writing-', suffix=SUFFIX)
            try:
                with os.fdopen(handle, 'wb') as stream:
                    np.savez(stream, observations=observations, actions=actions)
                os.replace(temporary, self.path(key))
            finally:
                if os.path.exists(temporary):
                    os.unlink(temporary)
        except OSError:
            pass

    def trim(self, limit: int) -> int:
        """Remove the least recently used entries until they take at most ``limit`` bytes, and the partial writes
        of processes killed over :data:`STALE_WRITE_SECONDS` ago; returns the bytes kept."""
        stale = time.time_ns() - int(STALE_WRITE_SECONDS * 1e9)
        entries = []
        for path in self.root.glob(f'*{SUFFIX}') if self.root.is_dir() else ():
            try:
                status = path.stat()
            except OSError:
                continue
            entries.append((status.st_mtime_ns, path.name, status.st_size, path))
        total = sum(size for _, name, size, _ in entries if not name.startswith('.'))
        for used, name, size, path in sorted(entries):
            partial = name.startswith('.')
            if (used > stale) if partial else (total <= limit):
                continue
            try:
                path.unlink()
            except OSError:
                continue
            if not partial:
                total -= size
        return total
