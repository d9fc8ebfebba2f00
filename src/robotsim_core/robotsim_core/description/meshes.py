"""Meshes as real URDFs reference them -> files MuJoCo can read.

MuJoCo reads STL, OBJ and MSH only; public robot descriptions ship Collada (``.dae``), PLY and
others too. Any other format is converted once, with ``trimesh`` (Collada through ``pycollada``), into a
binary STL in a user cache directory, keyed by the SHA-256 of the source file's bytes and the
converter version, so a second import reads the cache and two robots sharing a mesh share one file.

Conventions follow RViz, the reference ROS users check a model against: a Collada file's
``<unit>`` scale is applied and its ``<up_axis>`` is ignored (RViz sets assimp's
IGNORE_UP_DIRECTION), and the URDF ``scale`` attribute is left to MuJoCo's ``<mesh scale>``.
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass

from ..errors import DescriptionError

MUJOCO_NATIVE = ('.stl', '.obj', '.msh')
CONVERTIBLE = ('.dae', '.ply', '.glb', '.gltf', '.off')
CONVERTER_VERSION = 'trimesh-stl-1'  # part of the cache key: bump when the conversion changes


@dataclass(frozen=True)
class ReadyMesh:
    path: str
    """A file MuJoCo reads (the original for STL/OBJ, else the cached conversion)."""
    rgba: tuple[float, float, float, float] | None = None
    """The mesh's own mean colour (Collada materials), used when the URDF gives no material."""
    converted: bool = False


def cache_dir() -> str:
    """``$ROBOTSIM_CACHE`` or ``$XDG_CACHE_HOME/robotsim`` (default ``~/.cache/robotsim``): outside
    the source tree, shared by every workspace of the user."""
    root = os.environ.get('ROBOTSIM_CACHE') or os.path.join(
        os.environ.get('XDG_CACHE_HOME') or os.path.join(os.path.expanduser('~'), '.cache'), 'robotsim')
    return os.path.join(root, 'meshes')


def _digest(path: str) -> str:
    hasher = hashlib.sha256(CONVERTER_VERSION.encode())
    with open(path, 'rb') as stream:
        for block in iter(lambda: stream.read(1 << 20), b''):
            hasher.update(block)
    return hasher.hexdigest()[:32]


def _mean_rgba(mesh) -> tuple[float, float, float, float] | None:
    try:
        colors = mesh.visual.to_color().face_colors
    except Exception:  # texture-only visuals and the like: no colour of their own to report
        return None
    if colors is None or len(colors) == 0:
        return None
    weights = mesh.area_faces
    if weights.sum() <= 0:
        return None
    mean = (colors[:, :4].astype(float) * weights[:, None]).sum(axis=0) / weights.sum() / 255.0
    return tuple(round(float(v), 4) for v in mean)


def mujoco_mesh(path: str, source: str, key: str) -> ReadyMesh:
    """A MuJoCo-readable version of mesh file ``path``; ``source``/``key`` name the URDF and the link
    element for the one-line error when the file cannot be read."""
    extension = os.path.splitext(path)[1].lower()
    if extension in MUJOCO_NATIVE:
        return ReadyMesh(path)
    if extension not in CONVERTIBLE:
        raise DescriptionError(source, key, f'mesh {path}: expected one of '
                                            f'{", ".join(MUJOCO_NATIVE + CONVERTIBLE)} files, got {extension or "no extension"}')
    try:
        digest = _digest(path)
    except OSError as error:
        raise DescriptionError(source, key, f'cannot read mesh {path}: {error.strerror}') from None
    target = os.path.join(cache_dir(), f'{digest}.stl')
    colour_file = target + '.rgba'
    if os.path.isfile(target):
        rgba = None
        if os.path.isfile(colour_file):
            rgba = tuple(float(v) for v in open(colour_file, encoding='utf-8').read().split())
        return ReadyMesh(target, rgba, converted=True)
    import trimesh  # imported on demand: describing the shipped robots needs no mesh library
    try:
        mesh = trimesh.load(path, force='mesh', process=False)
    except Exception as error:  # trimesh/pycollada raise many types for a malformed file
        raise DescriptionError(source, key, f'cannot read mesh {path}: {type(error).__name__}: '
                                            f'{str(error).splitlines()[0] if str(error) else "unreadable"}') from None
    if not hasattr(mesh, 'faces') or len(mesh.faces) == 0:
        raise DescriptionError(source, key, f'mesh {path}: expected triangles, found none')
    rgba = _mean_rgba(mesh)
    os.makedirs(os.path.dirname(target), exist_ok=True)
    partial = f'{target}.{os.getpid()}.partial'  # atomic: a concurrent import never reads half a file
    mesh.export(partial, file_type='stl')
    if rgba is not None:
        colour_partial = f'{colour_file}.{os.getpid()}.partial'
        with open(colour_partial, 'w', encoding='utf-8') as stream:
            stream.write(' '.join(str(v) for v in rgba))
        os.replace(colour_partial, colour_file)
    os.replace(partial, target)
    return ReadyMesh(target, rgba, converted=True)
