"""Output files checked before any work (a command refuses, in one line naming its option, a file it could
not write, before it writes anything), and the content hash that names a written file."""

from __future__ import annotations

import hashlib
import os

from .errors import DescriptionError


def check_output_file(path: str, option: str) -> None:
    """Refuse an output file that cannot be written, before anything is written (its folder is
    created when missing)."""
    if os.path.isdir(path):
        raise DescriptionError('command line', option, f'expected a file to write, got the folder {path}')
    directory = os.path.dirname(os.path.abspath(path))
    try:
        os.makedirs(directory, exist_ok=True)
    except OSError as error:
        raise DescriptionError('command line', option, f'cannot create the folder {directory}: '
                                                       f'{error.strerror or error}') from None
    if not os.access(directory, os.W_OK):
        raise DescriptionError('command line', option, f'cannot write into the folder {directory}')


def file_sha256(path: str | os.PathLike) -> str:
    """The sha256 of a file's bytes, read in 1 MiB blocks (datasets, policies and perception models are named by it)."""
    digest = hashlib.sha256()
    with open(path, 'rb') as stream:
        for block in iter(lambda: stream.read(1 << 20), b''):
            digest.update(block)
    return digest.hexdigest()
