"""The triangles of a world's mesh entities and heightfields, one source for every consumer: the simulator's
MuJoCo model (what lidar, depth and segmentation see), the glTF export (the replay page, the USD stage, the
Blender render) and the tests' independent ray caster.

- A mesh entity is read with ``trimesh`` (Collada through ``pycollada``), scaled, and kept in its own frame.
  Its contact shape is a convex decomposition by CoACD (``coacd`` on PyPI, MIT, wheels for Linux x86_64 and
  aarch64), computed once and cached under the user cache directory by the SHA-256 of the scaled triangles,
  the decomposition settings and the CoACD version: a second run, another world using the same mesh, or
  another worker reads the cache. CoACD runs with a fixed seed, so the parts are the same on every machine.
- A heightfield is a grid of samples in metres above its lowest one; ``samples[i, j]`` lies at row ``i``
  from -y to +y and column ``j`` from -x to +x (MuJoCo's order). Each cell is two triangles split along
  its (-x, -y)-(+x, +y) diagonal, as MuJoCo collides and ray-casts it.

Nothing here imports MuJoCo or ROS; ``trimesh``, ``coacd`` and Pillow are imported when a world uses them.
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass

import numpy as np

from ..errors import DescriptionError
from .meshes import cache_dir
from .world_spec import MAX_CONVEX_PARTS, MAX_HEIGHTFIELD_SAMPLES, MAX_MESH_FACES, HeightfieldSpec, MeshEntitySpec

DECOMPOSITION_VERSION = 'coacd-1'
"""Part of the cache key: bump when the way parts are computed changes."""
TERRAIN_BASE = 0.05
"""Metres of solid a heightfield has below its lowest sample (MuJoCo's hfield base)."""
MAX_INLINE_SAMPLES = 256
"""Rows and columns of ``heights`` written in YAML at most (an image may have more)."""


@dataclass
class EntityMesh:
    """The triangles of one mesh entity in its own frame (scaled), and its contact shape."""

    vertices: np.ndarray
    """(n, 3) float64, metres."""
    faces: np.ndarray
    """(m, 3) int32 vertex indices."""
    parts: list[tuple[np.ndarray, np.ndarray]]
    """Convex contact parts (vertices, faces) in the same frame; empty for ``collision: none`` or when
    not asked for."""

    def trimesh(self):
        import trimesh
        return trimesh.Trimesh(self.vertices, self.faces, process=False)


def _read_trimesh(path: str, source: str, key: str):
    import trimesh  # on demand: worlds of primitives need no mesh library
    if not os.path.isfile(path):
        raise DescriptionError(source, key, f'mesh file not found: {path}')
    try:
        mesh = trimesh.load(path, force='mesh', process=True)
    except Exception as error:  # trimesh/pycollada raise many types for a malformed file
        first = str(error).splitlines()[0] if str(error) else 'unreadable'
        raise DescriptionError(source, key, f'cannot read mesh {path}: {type(error).__name__}: {first}') from None
    if not hasattr(mesh, 'faces') or len(mesh.faces) == 0:
        raise DescriptionError(source, key, f'mesh {path}: expected triangles, found none')
    if len(mesh.faces) > MAX_MESH_FACES:
        raise DescriptionError(source, key, f'mesh {path}: expected at most {MAX_MESH_FACES} triangles, got '
                                            f'{len(mesh.faces)} (simplify it, e.g. in Blender, for a simulator)')
    return mesh


def load_entity_mesh(spec: MeshEntitySpec, source: str, key: str, contact: bool = True) -> EntityMesh:
    """The scaled triangles and (``contact``) the contact parts of a mesh entity; ``source``/``key`` name
    the world file and the entity (``meshes[2]``) in the one-line error for a file that cannot be used."""
    mesh = _read_trimesh(spec.file, source, f'{key}.file')
    vertices = np.asarray(mesh.vertices, dtype=np.float64) * np.asarray(spec.scale, dtype=np.float64)
    faces = np.asarray(mesh.faces, dtype=np.int32)
    extent = vertices.max(axis=0) - vertices.min(axis=0)
    if np.count_nonzero(extent >= 1e-3) < 3:
        raise DescriptionError(source, f'{key}.file', f'mesh {spec.file}: expected a solid at least 1 mm in each '
                                                      f'direction after scale, got extents {extent.round(6).tolist()} m')
    if spec.collision == 'none' or not contact:
        parts = []
    elif spec.collision == 'hull':
        parts = [_hull(vertices, faces)]
    else:
        parts = convex_parts(vertices, faces, spec.max_convex_parts, spec.concavity)
    return EntityMesh(vertices, faces, parts)


def _hull(vertices: np.ndarray, faces: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    import trimesh
    hull = trimesh.Trimesh(vertices, faces, process=False).convex_hull
    return np.asarray(hull.vertices, dtype=np.float64), np.asarray(hull.faces, dtype=np.int32)


def convex_parts(vertices: np.ndarray, faces: np.ndarray, max_parts: int,
                 concavity: float) -> list[tuple[np.ndarray, np.ndarray]]:
    """CoACD's convex decomposition of a triangle mesh (at most ``max_parts`` parts), from the cache when
    the same triangles were decomposed with the same settings before."""
    if not 1 <= max_parts <= MAX_CONVEX_PARTS:
        raise ValueError(f'max_parts: expected 1 to {MAX_CONVEX_PARTS}, got {max_parts}')
    import coacd
    version = getattr(coacd, '__version__', '') or _distribution_version('coacd')
    hasher = hashlib.sha256(f'{DECOMPOSITION_VERSION} {version} {max_parts} {concavity!r}'.encode())
    hasher.update(np.ascontiguousarray(vertices, dtype='<f8').tobytes())
    hasher.update(np.ascontiguousarray(faces, dtype='<i4').tobytes())
    path = os.path.join(os.path.dirname(cache_dir()), 'convex', f'{hasher.hexdigest()[:32]}.npz')
    if os.path.isfile(path):
        try:
            with np.load(path) as stored:
                count = int(stored['count'])
                return [(stored[f'v{i}'], stored[f'f{i}']) for i in range(count)]
        except (OSError, KeyError, ValueError):
            pass  # a damaged cache entry is recomputed and replaced
    coacd.set_log_level('error')
    result = coacd.run_coacd(coacd.Mesh(vertices, faces), threshold=concavity, max_convex_hull=max_parts, seed=0)
    parts = [(np.asarray(v, dtype=np.float64), np.asarray(f, dtype=np.int32)) for v, f in result]
    os.makedirs(os.path.dirname(path), exist_ok=True)
    partial = f'{path}.{os.getpid()}.partial.npz'  # atomic: a concurrent worker never reads half a file
    arrays = {'count': np.array(len(parts))}
    for index, (v, f) in enumerate(parts):
        arrays[f'v{index}'], arrays[f'f{index}'] = v, f
    np.savez(partial, **arrays)
    os.replace(partial, path)
    return parts


def _distribution_version(name: str) -> str:
    from importlib.metadata import PackageNotFoundError, version
    try:
        return version(name)
    except PackageNotFoundError:
        return ''


def mass_properties(mesh: EntityMesh, mass: float) -> tuple[np.ndarray, np.ndarray]:
    """(centre of mass, 3x3 inertia about it in the entity frame) of a mesh entity of ``mass`` kg, uniform
    density over its volume: the mesh's when it is closed, else its convex hull's."""
    solid = mesh.trimesh()
    if not solid.is_watertight or solid.volume <= 0:
        solid = solid.convex_hull
    solid.density = mass / solid.volume
    return np.asarray(solid.center_mass, dtype=float), np.asarray(solid.moment_inertia, dtype=float)


def heightfield_samples(spec: HeightfieldSpec, key: str) -> np.ndarray:
    """The terrain's samples in metres above the lowest one: ``samples[i, j]`` at row ``i`` from -y to +y,
    column ``j`` from -x to +x (see the module docstring); ``key`` (``heightfields[0]``) names the entity
    in the one-line error for an image that cannot be used."""
    if spec.heights is not None:
        rows = np.asarray(spec.heights, dtype=np.float64)
        if max(rows.shape) > MAX_INLINE_SAMPLES:
            raise DescriptionError(spec.source, f'{key}.heights',
                                   f'expected at most {MAX_INLINE_SAMPLES} rows and columns, got {rows.shape[0]} x '
                                   f'{rows.shape[1]} (use an image for more)')
        top_row_first = rows
    else:
        top_row_first = _read_image(spec, f'{key}.image') * float(spec.height)
    samples = np.flipud(top_row_first)  # the first row given is the +y edge
    return samples - samples.min()


def _read_image(spec: HeightfieldSpec, where: str) -> np.ndarray:
    from PIL import Image, UnidentifiedImageError
    try:
        with Image.open(spec.image) as image:
            width, height = image.size
            if not (2 <= width <= MAX_HEIGHTFIELD_SAMPLES and 2 <= height <= MAX_HEIGHTFIELD_SAMPLES):
                raise DescriptionError(spec.source, where, f'image {spec.image}: expected 2 to '
                                                           f'{MAX_HEIGHTFIELD_SAMPLES} pixels a side, got '
                                                           f'{width} x {height}')
            mode = image.mode
            if mode in ('I;16', 'I;16B', 'I;16L', 'I'):
                pixels = np.asarray(image, dtype=np.float64)
                top = 65535.0 if mode.startswith('I;16') else float(max(pixels.max(), 1))
            else:
                pixels = np.asarray(image.convert('L'), dtype=np.float64)
                top = 255.0
    except FileNotFoundError:
        raise DescriptionError(spec.source, where, f'image file not found: {spec.image}') from None
    except (UnidentifiedImageError, OSError) as error:
        raise DescriptionError(spec.source, where, f'cannot read image {spec.image}: {error}') from None
    levels = pixels / top
    if levels.max() - levels.min() < 1e-6:
        raise DescriptionError(spec.source, where, f'image {spec.image}: expected grey levels that vary (one level '
                                                   'everywhere is a flat terrain: a box or the floor)')
    return levels


def heightfield_triangles(spec: HeightfieldSpec, samples: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(vertices, faces) of the terrain as a closed solid in the world frame: its surface (``samples`` from
    :func:`heightfield_samples`), two triangles a cell split as MuJoCo splits them, its four sides and its
    bottom :data:`TERRAIN_BASE` below the lowest sample, facing outwards."""
    rows, columns = samples.shape
    xs = np.linspace(-spec.size[0] / 2, spec.size[0] / 2, columns) + spec.position[0]
    ys = np.linspace(-spec.size[1] / 2, spec.size[1] / 2, rows) + spec.position[1]
    grid_x, grid_y = np.meshgrid(xs, ys)
    vertices = np.column_stack([grid_x.ravel(), grid_y.ravel(), samples.ravel() + spec.position[2]])
    index = np.arange(rows * columns).reshape(rows, columns)
    low_left, low_right = index[:-1, :-1].ravel(), index[:-1, 1:].ravel()
    up_left, up_right = index[1:, :-1].ravel(), index[1:, 1:].ravel()
    faces = [np.column_stack([low_left, low_right, up_right]), np.column_stack([low_left, up_right, up_left])]
    # The rim counter-clockwise seen from above: the -y edge, the +x edge, the +y edge, the -x edge.
    rim = np.concatenate([index[0, :-1], index[:-1, -1], index[-1, :0:-1], index[:0:-1, 0]])
    bottom = vertices[rim].copy()
    bottom[:, 2] = spec.position[2] - TERRAIN_BASE
    below = np.arange(len(rim)) + len(vertices)
    following, following_below = np.roll(rim, -1), np.roll(below, -1)
    faces += [np.column_stack([rim, below, following_below]), np.column_stack([rim, following_below, following])]
    centre = len(vertices) + len(rim)  # the bottom: a fan around its centre, facing down
    faces.append(np.column_stack([np.full(len(rim), centre), following_below, below]))
    vertices = np.concatenate([vertices, bottom, [[spec.position[0], spec.position[1], bottom[0, 2]]]])
    return vertices, np.concatenate(faces).astype(np.int32)
