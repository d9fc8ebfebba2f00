"""Errors raised for bad input; each one names the file, the key path and what was expected."""

from __future__ import annotations


class DescriptionError(ValueError):
    """A robot description (YAML, URDF or overlay) is invalid.

    The message always reads ``<file>: <key path>: <problem>`` so a user can go straight
    to the offending line; the CLI prints it alone (no traceback) and exits with status 2.
    """

    def __init__(self, source: str, key_path: str, problem: str):
        self.source = source
        self.key_path = key_path
        self.problem = problem
        where = f'{source}: {key_path}' if key_path else source
        super().__init__(f'{where}: {problem}')
