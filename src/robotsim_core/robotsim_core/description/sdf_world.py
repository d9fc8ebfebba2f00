"""SDF worlds (Gazebo's format) -> a robotsim world file (``robotsim import world.sdf --out world.yaml``).

What is translated, as Gazebo reads it (SDFormat 1.4 to 1.11):

- ``<model>`` elements of the world, nested models and ``<include>`` elements (``model://NAME`` looked up in
  the model path: ``--model-path`` folders, then ``GZ_SIM_RESOURCE_PATH``, ``IGN_GAZEBO_RESOURCE_PATH``,
  ``GAZEBO_MODEL_PATH`` and ``SDF_PATH``; a folder holding ``NAME/model.config`` naming its SDF file, or
  ``NAME/model.sdf``; or a file or folder path relative to the including file), with their ``<pose>``
  (``x y z roll pitch yaw``, fixed-axis, ``degrees="true"`` honoured), ``<name>`` and ``<static>``;
- each link's ``<collision>`` shapes (its ``<visual>`` shapes when it has none): ``box`` (turned about z
  and y; a box turned otherwise by quarter turns has its sizes permuted), upright ``cylinder``,
  ``sphere``, ``mesh`` (its ``uri`` and ``scale``; a concave mesh collides as its convex decomposition)
  and ``heightmap`` (its image, ``size`` and ``pos``); the link's first visual's ``material/diffuse`` as
  the colour; a static model's shapes become fixed entities, a non-static model of one link and one
  shape a free body of the link's ``inertial/mass``;
- the ground plane (a ``plane`` shape facing up at z = 0) as the floor, its size and friction (``mu``);
- the first directional light (its direction turned by its pose, diffuse level, shadows), the scene's
  ambient level, and ``physics/max_step_size`` as the time step.

Anything else (articulated models, free models of several shapes, capsules, ellipsoids, cones,
polylines, point and spot lights, plugins, actors, ``relative_to`` frames, ...) is listed, one line
each, in a comment at the top of the written file, and left out. Robots are imported from URDF
(``robotsim import ROBOT.urdf``), not from a world.
"""

from __future__ import annotations

import math
import os
import re
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field
from itertools import permutations, product

import numpy as np
import transforms3d.quaternions as t3q

from ..errors import DescriptionError
from ..geometry import homogeneous, matrix_to_rpy, rpy_to_matrix
from .world_spec import MAX_TIMESTEP, MIN_TIMESTEP, RESERVED_NAME

MODEL_PATH_VARIABLES = ('GZ_SIM_RESOURCE_PATH', 'IGN_GAZEBO_RESOURCE_PATH', 'GAZEBO_MODEL_PATH', 'SDF_PATH')
"""Environment variables whose folders are searched for ``model://`` URIs, in this order."""
MAX_INCLUDE_DEPTH = 16
"""Nested includes and models at most (a model including itself is refused)."""
MAX_ENTITIES = 256
"""Entities one world may hold (the world file's list bound)."""
MAX_SDF_BYTES = 64 * 2**20
"""Bytes of one SDF file at most."""
TOLERANCE = 1e-9


@dataclass
class ImportedWorld:
    """A translated world: the YAML document and what was left out, one line each."""

    document: dict
    untranslated: list[str] = field(default_factory=list)

    def yaml_text(self, source: str) -> str:
        import yaml
        lines = [f'# Translated from {source} by robotsim import.']
        if self.untranslated:
            lines.append(f'# Not translated ({len(self.untranslated)}):')
            lines += [f'#   - {line}' for line in self.untranslated]
        else:
            lines.append('# Everything in it was translated.')
        return '\n'.join(lines) + '\n' + yaml.safe_dump(self.document, sort_keys=False, width=120, default_flow_style=None)


def model_path(extra: list[str] | None = None) -> list[str]:
    """The folders ``model://`` URIs are looked up in: ``extra`` first, then the environment's."""
    folders = list(extra or [])
    for variable in MODEL_PATH_VARIABLES:
        folders += [part for part in os.environ.get(variable, '').split(os.pathsep) if part]
    return folders


def _numbers(text: str | None, count: int, where: str, source: str) -> list[float]:
    try:
        values = [float(v) for v in (text or '').split()]
    except ValueError:
        values = []
    if len(values) != count or not all(math.isfinite(v) for v in values):
        raise DescriptionError(source, where, f'expected {count} numbers, got {(text or "").strip()!r}')
    return values


class _Importer:
    def __init__(self, path: str, out_path: str, folders: list[str]):
        self.path, self.out_dir, self.folders = path, os.path.dirname(os.path.abspath(out_path)), folders
        self.untranslated: list[str] = []
        self.entities: dict[str, list[dict]] = {'boxes': [], 'cylinders': [], 'spheres': [], 'meshes': [],
                                                 'heightfields': []}
        self.names: set[str] = set()
        self.floor: dict | None = None
        self.light: dict | None = None

    # Files and URIs --------------------------------------------------------------------------------------

    def parse(self, path: str, where: str) -> ET.Element:
        try:
            if os.path.getsize(path) > MAX_SDF_BYTES:
                raise DescriptionError(path, '', f'expected an SDF file of at most {MAX_SDF_BYTES // 2**20} MB')
            root = ET.parse(path).getroot()
        except FileNotFoundError:
            raise DescriptionError(self.path, where, f'file not found: {path}') from None
        except ET.ParseError as error:
            raise DescriptionError(path, '', f'expected SDF (XML): {error}') from None
        except (OSError, UnicodeDecodeError) as error:
            raise DescriptionError(path, '', f'cannot read the file: {error}') from None
        if root.tag != 'sdf':
            raise DescriptionError(path, '', f'expected an SDF file with an <sdf> root, got <{root.tag}>')
        return root

    def resolve(self, uri: str, base_dir: str) -> str | None:
        """A file or folder a URI names, or None."""
        uri = uri.strip()
        for scheme in ('model://', 'package://'):
            if uri.startswith(scheme):
                rest = uri[len(scheme):]
                for folder in self.folders:
                    candidate = os.path.join(folder, rest)
                    if os.path.exists(candidate):
                        return os.path.abspath(candidate)
                return None
        if uri.startswith('file://'):
            uri = uri[len('file://'):]
        if re.match(r'^[a-z]+://', uri):
            return None  # https://fuel.gazebosim.org/... : not fetched
        candidate = uri if os.path.isabs(uri) else os.path.join(base_dir, uri)
        return os.path.abspath(candidate) if os.path.exists(candidate) else None

    def model_file(self, folder: str) -> str | None:
        """The SDF file of a model folder: the one ``model.config`` names (the highest version), else
        ``model.sdf``."""
        config = os.path.join(folder, 'model.config')
        if os.path.isfile(config):
            try:
                files = ET.parse(config).getroot().findall('sdf')
            except ET.ParseError:
                files = []
            files.sort(key=lambda e: [int(p) if p.isdigit() else 0 for p in (e.get('version') or '0').split('.')])
            for element in reversed(files):
                if element.text and os.path.isfile(os.path.join(folder, element.text.strip())):
                    return os.path.join(folder, element.text.strip())
        fallback = os.path.join(folder, 'model.sdf')
        return fallback if os.path.isfile(fallback) else None

    # Poses ------------------------------------------------------------------------------------------------

    def pose(self, element: ET.Element, where: str, source: str) -> np.ndarray:
        pose = element.find('pose')
        if pose is None or not (pose.text or '').strip():
            return np.eye(4)
        if pose.get('relative_to'):
            self.untranslated.append(f'{where}: pose relative_to {pose.get("relative_to")!r} read as relative to '
                                     'its parent')
        values = (pose.text or '').split()
        if len(values) == 7 or pose.get('rotation_format') == 'quat_xyzw':
            x, y, z, qx, qy, qz, qw = _numbers(pose.text, 7, f'{where}.pose', source)
            norm = math.sqrt(qx * qx + qy * qy + qz * qz + qw * qw)
            if norm < 1e-9:
                raise DescriptionError(source, f'{where}.pose', f'expected a unit quaternion, got {pose.text.strip()!r}')
            return homogeneous(t3q.quat2mat(np.array([qw, qx, qy, qz]) / norm), (x, y, z))
        x, y, z, roll, pitch, yaw = _numbers(pose.text, 6, f'{where}.pose', source)
        if (pose.get('degrees') or '').strip().lower() == 'true':
            roll, pitch, yaw = (math.radians(v) for v in (roll, pitch, yaw))
        return homogeneous(rpy_to_matrix((roll, pitch, yaw)), (x, y, z))

    # Names ------------------------------------------------------------------------------------------------

    def name(self, wanted: str) -> str:
        """A unique entity name (letters, digits and _, starting with a letter) close to ``wanted``."""
        base = re.sub(r'[^A-Za-z0-9_]', '_', wanted) or 'entity'
        if not base[0].isalpha():
            base = f'm_{base}'
        if RESERVED_NAME.fullmatch(base):
            base = f'{base}_model'
        name, count = base, 1
        while name in self.names:
            count += 1
            name = f'{base}_{count}'
        self.names.add(name)
        return name

    # The world --------------------------------------------------------------------------------------------

    def world(self) -> ImportedWorld:
        root = self.parse(self.path, '')
        world = root.find('world')
        if world is None:
            raise DescriptionError(self.path, 'sdf', 'expected a <world> element (a model file is imported with '
                                                     'an <include> in a world)')
        document: dict = {'name': self.name(world.get('name') or 'imported')}
        self.names.discard(document['name'])  # the world's name is no entity's
        step = world.find('physics/max_step_size')
        if step is not None and step.text:
            value = _numbers(step.text, 1, 'world.physics.max_step_size', self.path)[0]
            if MIN_TIMESTEP <= value <= MAX_TIMESTEP:
                document['timestep'] = value
            else:
                self.untranslated.append(f'physics max_step_size {value:g} s: outside {MIN_TIMESTEP:g}..'
                                         f'{MAX_TIMESTEP:g} s, the default 0.002 s kept')
        base_dir = os.path.dirname(os.path.abspath(self.path))
        for child in world:
            tag = child.tag
            if tag == 'model':
                self.model(child, np.eye(4), False, '', base_dir, self.path, 0)
            elif tag == 'include':
                self.include(child, np.eye(4), False, '', base_dir, self.path, 0)
            elif tag == 'light':
                self.add_light(child, self.path)
            elif tag in ('physics', 'gravity', 'magnetic_field', 'atmosphere', 'spherical_coordinates', 'gui',
                         'wind', 'audio'):
                continue  # the world's physics settings: MuJoCo's own (only the step is taken)
            elif tag == 'scene':
                ambient = child.find('ambient')
                if ambient is not None and ambient.text:
                    rgba = [float(v) for v in ambient.text.split()[:3]]
                    self.light = {**(self.light or {}), 'ambient': round(min(1.0, max(0.0, sum(rgba) / 3)), 4)}
            elif isinstance(tag, str) and not tag.startswith('{'):
                self.untranslated.append(f'world <{tag}> {child.get("name") or ""}'.rstrip())
        if self.floor is not None:
            document['floor'] = self.floor
        else:
            self.untranslated.append('no ground plane: the default 20 x 20 m floor added')
        if self.light is not None:
            document['light'] = self.light
        for kind, entries in self.entities.items():
            if entries:
                document[kind] = entries
        count = sum(len(entries) for entries in self.entities.values())
        if count > MAX_ENTITIES:
            raise DescriptionError(self.path, 'world', f'expected at most {MAX_ENTITIES} shapes, got {count}')
        return ImportedWorld(document, self.untranslated)

    def add_light(self, light: ET.Element, source: str) -> None:
        label = f'light {light.get("name") or ""}'.rstrip()
        if light.get('type') != 'directional' or (self.light or {}).get('direction') is not None:
            self.untranslated.append(f'{label} ({light.get("type") or "no type"}): only the first directional '
                                     'light is taken')
            return
        text = light.findtext('direction') or '0 0 -1'
        direction = self.pose(light, label, source)[:3, :3] @ np.array(_numbers(text, 3, f'{label}.direction', source))
        entry = {**(self.light or {}), 'direction': [round(float(v), 6) for v in direction]}
        diffuse = light.findtext('diffuse')
        if diffuse:
            entry['diffuse'] = round(min(1.0, max(0.0, sum(float(v) for v in diffuse.split()[:3]) / 3)), 4)
        if (light.findtext('cast_shadows') or '').strip() == 'true':
            entry['shadows'] = True
        self.light = entry

    def include(self, element: ET.Element, parent: np.ndarray, static: bool, prefix: str, base_dir: str,
                source: str, depth: int) -> None:
        uri = (element.findtext('uri') or '').strip()
        label = f'include {uri}'
        if depth >= MAX_INCLUDE_DEPTH:
            raise DescriptionError(source, label, f'expected includes nested at most {MAX_INCLUDE_DEPTH} deep')
        target = self.resolve(uri, base_dir)
        if target is not None and os.path.isdir(target):
            target = self.model_file(target)
        if target is None:
            if uri in ('model://sun', 'model://sun/'):  # Gazebo's stock sun: a directional light
                sun = ET.fromstring('<light type="directional" name="sun"><cast_shadows>true</cast_shadows>'
                                    '<diffuse>0.8 0.8 0.8 1</diffuse><direction>-0.5 0.1 -0.9</direction></light>')
                self.add_light(sun, source)
                return
            if uri in ('model://ground_plane', 'model://ground_plane/'):
                self.floor = {'size': [100.0, 100.0]}
                return
            self.untranslated.append(f'{label}: not found in the model path ({", ".join(self.folders) or "empty"}; '
                                     'add --model-path)')
            return
        root = self.parse(target, label)
        model = root.find('model')
        if model is None:
            self.untranslated.append(f'{label}: {target} holds no <model>')
            return
        # SDFormat: an include's <pose> replaces the model's own; without one, the model's own applies.
        placed = self.pose(element, label, source) if element.find('pose') is not None else None
        if element.findtext('name'):
            model.set('name', element.findtext('name').strip())
        static_text = (element.findtext('static') or '').strip()
        self.model(model, parent, static or static_text == 'true', prefix, os.path.dirname(target), target, depth + 1,
                   placed)

    def model(self, element: ET.Element, parent: np.ndarray, static: bool, prefix: str, base_dir: str, source: str,
              depth: int, placed: np.ndarray | None = None) -> None:
        """Translate a model (``placed``: the pose its include gives it, which replaces its own)."""
        name = f'{prefix}{element.get("name") or "model"}'
        label = f'model {name}'
        if depth >= MAX_INCLUDE_DEPTH:
            raise DescriptionError(source, label, f'expected models nested at most {MAX_INCLUDE_DEPTH} deep')
        frame = parent @ (placed if placed is not None else self.pose(element, label, source))
        static = static or (element.findtext('static') or '').strip() == 'true'
        joints = [j for j in element.findall('joint') if j.get('type') != 'fixed']
        if joints:
            self.untranslated.append(f'{label}: an articulated model ({len(joints)} joints; import robots from URDF)')
            return
        for nested in element.findall('model'):
            self.model(nested, frame, static, f'{name}_', base_dir, source, depth + 1)
        for nested in element.findall('include'):
            self.include(nested, frame, static, f'{name}_', base_dir, source, depth + 1)
        links = element.findall('link')
        shapes = []
        for link in links:
            link_frame = frame @ self.pose(link, f'{label} link {link.get("name")}', source)
            colour = self.colour(link)
            mass = float(link.findtext('inertial/mass') or 1.0)
            items = link.findall('collision') or link.findall('visual')
            for item in items:
                shapes.append((link, item, link_frame @ self.pose(item, f'{label} {item.get("name")}', source), colour,
                               mass, item.tag == 'visual'))
        if not static and (len(links) > 1 or len(shapes) > 1):
            self.untranslated.append(f'{label}: a free model of {len(links)} links and {len(shapes)} shapes (free '
                                     'entities are one shape each)')
            return
        for link, item, pose, colour, mass, visual_only in shapes:
            geometry = item.find('geometry')
            kinds = [child.tag for child in geometry] if geometry is not None else []
            kind = kinds[0] if kinds else 'nothing'
            single = len(shapes) == 1
            wanted = name if single else f'{name}_{link.get("name") or "link"}_{item.get("name") or kind}'
            self.shape(kind, geometry.find(kind) if kinds else None, pose, colour, 0.0 if static else mass,
                       wanted, f'{label} {item.tag} {item.get("name") or ""}'.rstrip(), base_dir, source, item)

    def colour(self, link: ET.Element) -> list[float] | None:
        for visual in link.findall('visual'):
            text = visual.findtext('material/diffuse') or visual.findtext('material/ambient')
            if text:
                values = [min(1.0, max(0.0, float(v))) for v in text.split()]
                return (values + [1.0])[:4] if len(values) >= 3 else None
        return None

    def shape(self, kind: str, geometry: ET.Element | None, pose: np.ndarray, colour, mass: float, wanted: str,
              label: str, base_dir: str, source: str, item: ET.Element) -> None:
        rotation, position = pose[:3, :3], [round(float(v), 9) for v in pose[:3, 3]]
        extra = {'rgba': colour} if colour else {}
        if mass > 0:
            extra['mass'] = mass
        if kind == 'plane':
            normal = _numbers(geometry.findtext('normal') or '0 0 1', 3, f'{label}.normal', source)
            if np.allclose(rotation @ normal / np.linalg.norm(normal), (0, 0, 1), atol=1e-6) and abs(position[2]) < 1e-6:
                size = _numbers(geometry.findtext('size') or '100 100', 2, f'{label}.size', source)
                floor = {'size': size}
                mu = item.findtext('surface/friction/ode/mu')
                if mu:
                    floor['friction'] = float(mu)
                if colour:
                    floor['rgba'] = colour
                self.floor = floor
            else:
                self.untranslated.append(f'{label}: a plane that is not the ground (facing up at z = 0)')
            return
        if kind == 'box':
            size = _numbers(geometry.findtext('size'), 3, f'{label}.size', source)
            turned = _box_turn(rotation, size)
            if turned is None:
                self.untranslated.append(f'{label}: a box rolled about its own x axis (robotsim boxes turn about z '
                                         'and y only)')
                return
            yaw, pitch, size = turned
            entry = {'name': self.name(wanted), 'position': position, 'size': size}
            if abs(yaw) > TOLERANCE:
                entry['yaw'] = yaw
            if abs(pitch) > TOLERANCE:
                entry['pitch'] = pitch
            self.entities['boxes'].append({**entry, **extra})
        elif kind == 'cylinder':
            if not np.allclose(np.abs(rotation[:, 2]), (0, 0, 1), atol=1e-9):
                self.untranslated.append(f'{label}: a cylinder not standing upright (robotsim cylinders stand on z)')
                return
            radius = _numbers(geometry.findtext('radius'), 1, f'{label}.radius', source)[0]
            length = _numbers(geometry.findtext('length'), 1, f'{label}.length', source)[0]
            self.entities['cylinders'].append({'name': self.name(wanted), 'position': position, 'radius': radius,
                                               'height': length, **extra})
        elif kind == 'sphere':
            radius = _numbers(geometry.findtext('radius'), 1, f'{label}.radius', source)[0]
            self.entities['spheres'].append({'name': self.name(wanted), 'position': position, 'radius': radius, **extra})
        elif kind == 'mesh':
            uri = (geometry.findtext('uri') or '').strip()
            path = self.resolve(uri, base_dir)
            if path is None or not os.path.isfile(path):
                self.untranslated.append(f'{label}: mesh {uri} not found in the model path')
                return
            if geometry.find('submesh') is not None:
                self.untranslated.append(f'{label}: a submesh of {uri} (whole meshes only)')
                return
            entry = {'name': self.name(wanted), 'file': os.path.relpath(path, self.out_dir), 'position': position}
            rpy = [round(float(v), 12) for v in matrix_to_rpy(rotation)]
            if any(abs(v) > TOLERANCE for v in rpy):
                entry['rpy'] = rpy
            scale = geometry.findtext('scale')
            if scale:
                entry['scale'] = _numbers(scale, 3, f'{label}.scale', source)
            self.entities['meshes'].append({**entry, **extra})
        elif kind == 'heightmap':
            uri = (geometry.findtext('uri') or '').strip()
            path = self.resolve(uri, base_dir)
            if path is None or mass > 0:
                self.untranslated.append(f'{label}: heightmap {uri} ' + ('not found' if path is None else 'on a free model'))
                return
            size = _numbers(geometry.findtext('size') or '1 1 1', 3, f'{label}.size', source)
            offset = _numbers(geometry.findtext('pos') or '0 0 0', 3, f'{label}.pos', source)
            self.entities['heightfields'].append({
                'name': self.name(wanted), 'image': os.path.relpath(path, self.out_dir), 'height': size[2],
                'size': size[:2], 'position': [round(float(v), 9) for v in pose[:3, 3] + rotation @ offset],
                **({'rgba': colour} if colour else {})})
        else:
            self.untranslated.append(f'{label}: {kind} geometry (no robotsim shape)')


def _box_turn(rotation: np.ndarray, size: list[float]):
    """(yaw, pitch, sizes) with rotation = Rz(yaw) Ry(pitch) up to a signed permutation of the box's axes
    (which permutes its sizes), or None."""
    for order in permutations(range(3)):
        for signs in product((1, -1), repeat=3):
            permutation = np.zeros((3, 3))
            for row, (column, sign) in enumerate(zip(order, signs)):
                permutation[row, column] = sign
            if np.linalg.det(permutation) < 0:
                continue
            turned = rotation @ permutation.T
            roll, pitch, yaw = matrix_to_rpy(turned)
            if abs(roll) < 1e-9 and np.allclose(rpy_to_matrix((0.0, pitch, yaw)), turned, atol=1e-9):
                sizes = [abs(float(v)) for v in np.abs(permutation) @ np.asarray(size)]
                return round(float(yaw), 12), round(float(pitch), 12), sizes
    return None


def import_sdf_world(path: str, out_path: str, folders: list[str] | None = None) -> ImportedWorld:
    """Translate the SDF world in ``path`` into a world document for ``out_path`` (files it names are
    written relative to that file's folder); ``folders`` are searched first for ``model://`` URIs."""
    return _Importer(path, out_path, model_path(folders)).world()
