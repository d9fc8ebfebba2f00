"""Meshes as real URDFs reference them -> files MuJoCo can read.

MuJoCo reads binary STL (1 to 200,000 triangles), OBJ and MSH only; public robot descriptions ship
Collada (``.dae``), PLY, ASCII STL and STL files with more triangles too. Those are converted once, with
``trimesh`` (Collada through ``pycollada``), into a binary STL (an OBJ above 200,000 triangles) in a user
cache directory, keyed by the SHA-256 of the source file's bytes and the converter version, so a second
import reads the cache and two robots sharing a mesh share one file.

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
MUJOCO_STL_MAX_FACES = 200_000  # MuJoCo's STL decoder refuses more (its OBJ reader does not)
CONVERTER_VERSION = 'trimesh-2'  # part of the cache key: bump when the conversion changes


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


def _mujoco_reads_stl(path: str) -> bool:
    """A binary STL MuJoCo's decoder accepts: 80-byte header, face count, 50 bytes a face."""
    try:
        size = os.path.getsize(path)
        with open(path, 'rb') as stream:
            header = stream.read(84)
    except OSError:
        return True  # let MuJoCo (or the caller) name the read error
    if len(header) < 84:
        return False
    faces = int.from_bytes(header[80:84], 'little')
    return 1 <= faces <= MUJOCO_STL_MAX_FACES and size == 84 + 50 * faces


def mujoco_mesh(path: str, source: str, key: str) -> ReadyMesh:
    """A MuJoCo-readable version of mesh file ``path``; ``source``/``key`` name the URDF and the link
    element for the one-line error when the file cannot be read."""
    extension = os.path.splitext(path)[1].lower()
    if extension in ('.obj', '.msh') or (extension == '.stl' and _mujoco_reads_stl(path)):
        return ReadyMesh(path)
    if extension not in CONVERTIBLE + ('.stl',):
        raise DescriptionError(source, key, f'mesh {path}: expected one of '
                                            f'{", ".join(MUJOCO_NATIVE + CONVERTIBLE)} files, got {extension or "no extension"}')
    try:
        digest = _digest(path)
    except OSError as error:
        raise DescriptionError(source, key, f'cannot read mesh {path}: {error.strerror}') from None
    for target in (os.path.join(cache_dir(), f'{digest}{suffix}') for suffix in ('.stl', '.obj')):
        if os.path.isfile(target):
            rgba = None
            if os.path.isfile(target + '.rgba'):
                rgba = tuple(float(v) for v in open(target + '.rgba', encoding='utf-8').read().split())
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
    os.makedirs(cache_dir(), exist_ok=True)
    small = len(mesh.faces) <= MUJOCO_STL_MAX_FACES  # binary STL is about half the size of OBJ text
    target = os.path.join(cache_dir(), f'{digest}{".stl" if small else ".obj"}')
    partial = f'{target}.{os.getpid()}.partial'  # atomic: a concurrent import never reads half a file
    with open(partial, 'wb') as stream:
        stream.write(trimesh.exchange.stl.export_stl(mesh) if small else trimesh.exchange.obj.export_obj(
            mesh, include_normals=False, include_color=False, include_texture=False).encode())
    if rgba is not None:
        colour_partial = f'{target}.rgba.{os.getpid()}.partial'
        with open(colour_partial, 'w', encoding='utf-8') as stream:
            stream.write(' '.join(str(v) for v in rgba))
        os.replace(colour_partial, target + '.rgba')
    os.replace(partial, target)
    return ReadyMesh(target, rgba, converted=True)
