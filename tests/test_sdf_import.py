"""``robotsim import WORLD.sdf``: Gazebo SDF worlds translated into world files. The shipped room and yard
worlds are written as SDF (walls as static box models, free boxes with inertials, meshes and a heightmap by
URI, the light and the ground plane) and imported back: the MuJoCo model of the translation equals the
original's in every shape, pose, size and mass. Includes resolve through a model path as Gazebo's do, and
what has no translation is listed in the written file."""

from __future__ import annotations

import math
import os
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import mujoco
import numpy as np
import pytest
import trimesh
import yaml

from robotsim_core.description.sdf_world import import_sdf_world
from robotsim_core.geometry import rpy_to_matrix
from robotsim_sim.scene import HIDDEN_COLLISION_GROUP, load_world, resolve_world_path, world_element

WORKSPACE = Path(__file__).resolve().parents[1]


def _pose(xyz, rpy=(0.0, 0.0, 0.0)) -> str:
    return ' '.join(repr(float(v)) for v in (*xyz, *rpy))


def _model(parent, name, pose, geometry, mass=0.0, rgba=None, uri_base=None):
    model = ET.SubElement(parent, 'model', name=name)
    ET.SubElement(model, 'static').text = 'true' if mass == 0 else 'false'
    ET.SubElement(model, 'pose').text = pose
    link = ET.SubElement(model, 'link', name='link')
    if mass:
        inertial = ET.SubElement(link, 'inertial')
        ET.SubElement(inertial, 'mass').text = repr(mass)
    for tag in ('collision', 'visual'):
        item = ET.SubElement(link, tag, name=tag)
        item.append(geometry)
        if tag == 'visual' and rgba is not None:
            ET.SubElement(ET.SubElement(item, 'material'), 'diffuse').text = ' '.join(map(str, rgba))
    return model


def _geometry(kind: str, **fields) -> ET.Element:
    geometry = ET.Element('geometry')
    shape = ET.SubElement(geometry, kind)
    for key, value in fields.items():
        ET.SubElement(shape, key).text = value if isinstance(value, str) else ' '.join(repr(float(v)) for v in value)
    return geometry


def world_as_sdf(world, sdf_path: Path) -> str:
    """The world as Gazebo would have it (the test's own writer)."""
    root = ET.Element('sdf', version='1.9')
    node = ET.SubElement(root, 'world', name=world.name)
    physics = ET.SubElement(node, 'physics', name='default', type='ignored')
    ET.SubElement(physics, 'max_step_size').text = repr(world.timestep)
    light = ET.SubElement(node, 'light', type='directional', name='sun')
    ET.SubElement(light, 'direction').text = ' '.join(map(str, world.light.direction))
    ET.SubElement(light, 'diffuse').text = ' '.join([str(world.light.diffuse)] * 3 + ['1'])
    ET.SubElement(ET.SubElement(node, 'scene'), 'ambient').text = ' '.join([str(world.light.ambient)] * 3 + ['1'])
    ground = _model(node, 'ground_plane', _pose((0, 0, 0)),
                    _geometry('plane', normal=(0, 0, 1), size=world.floor.size), rgba=world.floor.rgba)
    collision = ground.find('link/collision')
    ET.SubElement(ET.SubElement(ET.SubElement(ET.SubElement(collision, 'surface'), 'friction'), 'ode'), 'mu').text = \
        repr(world.floor.friction)
    for index, wall in enumerate(world.walls):
        (x0, y0), (x1, y1) = wall.start, wall.end
        length = math.hypot(x1 - x0, y1 - y0) + wall.thickness
        centre = ((x0 + x1) / 2, (y0 + y1) / 2, wall.height / 2)
        _model(node, f'wall_{index}', _pose(centre, (0, 0, math.atan2(y1 - y0, x1 - x0))),
               _geometry('box', size=(length, wall.thickness, wall.height)), rgba=wall.rgba)
    for box in world.boxes:
        _model(node, box.name, _pose(box.position, (0, box.pitch, box.yaw)), _geometry('box', size=box.size), box.mass,
               box.rgba)
    for cylinder in world.cylinders:
        _model(node, cylinder.name, _pose(cylinder.position),
               _geometry('cylinder', radius=(cylinder.radius,), length=(cylinder.height,)), cylinder.mass, cylinder.rgba)
    for entity in world.meshes:
        relative = os.path.relpath(entity.file, sdf_path.parent)
        _model(node, entity.name, _pose(entity.position, entity.rpy),
               _geometry('mesh', uri=relative, scale=entity.scale), entity.mass, entity.rgba)
    for terrain in world.heightfields:
        model = ET.SubElement(node, 'model', name=terrain.name)
        ET.SubElement(model, 'static').text = 'true'
        link = ET.SubElement(model, 'link', name='link')
        ET.SubElement(link, 'collision', name='collision').append(_geometry(
            'heightmap', uri=os.path.relpath(terrain.image, sdf_path.parent),
            size=(*terrain.size, terrain.height), pos=terrain.position))
    ET.indent(root)
    return ET.tostring(root, encoding='unicode')


def world_geoms(world) -> list[tuple]:
    """Every geom of the world's MuJoCo model but a mesh entity's hidden contact parts: (type, size, world
    position, world rotation, body mass, contact flags, mesh or heightfield data), in a canonical order
    (names apart)."""
    model = mujoco.MjModel.from_xml_string(ET.tostring(world_element(world, (64, 64), 0.05, 40.0), encoding='unicode'))
    data = mujoco.MjData(model)
    mujoco.mj_forward(model, data)
    rows = []
    for geom in range(model.ngeom):
        if model.geom_group[geom] == HIDDEN_COLLISION_GROUP:
            continue  # a mesh's contact shape: SDF says only "this mesh", robotsim's collision option says how
        shape = ()
        if model.geom_type[geom] == mujoco.mjtGeom.mjGEOM_MESH:
            mesh = model.geom_dataid[geom]
            start = model.mesh_vertadr[mesh]
            shape = tuple(np.round(model.mesh_vert[start:start + model.mesh_vertnum[mesh]], 6).ravel())
        elif model.geom_type[geom] == mujoco.mjtGeom.mjGEOM_HFIELD:
            field = model.geom_dataid[geom]
            start = model.hfield_adr[field]
            shape = tuple(np.round(model.hfield_data[start:start + model.hfield_nrow[field] * model.hfield_ncol[field]], 6))
        rows.append((int(model.geom_type[geom]), tuple(np.round(model.geom_size[geom], 9)),
                     tuple(np.round(data.geom_xpos[geom], 9)), tuple(np.round(data.geom_xmat[geom], 7) + 0.0),
                     round(float(model.body_mass[model.geom_bodyid[geom]]), 9), int(model.geom_contype[geom]),
                     int(model.geom_group[geom]), tuple(np.round(model.geom_rgba[geom], 6)),
                     round(float(model.geom_friction[geom][0]), 9), shape))
    return sorted(rows)


@pytest.mark.parametrize('name', ['room', 'yard'])
def test_a_shipped_world_written_as_sdf_imports_to_the_same_world(name, tmp_path):
    original = load_world(resolve_world_path(name))
    sdf = tmp_path / 'gazebo' / f'{name}.sdf'
    sdf.parent.mkdir()
    sdf.write_text(world_as_sdf(original, sdf))
    out = tmp_path / 'imported' / f'{name}.yaml'
    out.parent.mkdir()
    imported = import_sdf_world(str(sdf), str(out))
    assert imported.untranslated == []
    out.write_text(imported.yaml_text(str(sdf)))
    translated = load_world(str(out))
    assert translated.timestep == original.timestep and translated.floor == original.floor
    assert translated.light.direction == pytest.approx(original.light.direction)
    assert world_geoms(translated) == world_geoms(original)
    kinds = {'room': ('boxes', 'cylinders'), 'yard': ('meshes', 'heightfields')}[name]
    assert all(getattr(translated, kind) for kind in kinds)
    # A mesh collides as its convex decomposition, whatever the original chose (SDF cannot say).
    assert all(entity.collision == 'decomposition' for entity in translated.meshes)


@pytest.fixture
def model_folder(tmp_path):
    """A Gazebo model folder: crate/model.config naming model.sdf, its mesh under meshes/."""
    crate = tmp_path / 'models' / 'crate'
    (crate / 'meshes').mkdir(parents=True)
    trimesh.creation.box(extents=(0.4, 0.3, 0.2)).export(crate / 'meshes' / 'crate.stl')
    (crate / 'model.config').write_text(
        '<?xml version="1.0"?><model><name>crate</name><sdf version="1.6">model.sdf</sdf></model>')
    (crate / 'model.sdf').write_text("""<?xml version="1.0"?>
<sdf version="1.6"><model name="crate"><pose>0 0 0.1 0 0 0</pose><link name="body">
  <inertial><mass>2.5</mass></inertial>
  <collision name="c"><geometry><mesh><uri>model://crate/meshes/crate.stl</uri></mesh></geometry></collision>
  <visual name="v"><geometry><mesh><uri>model://crate/meshes/crate.stl</uri></mesh></geometry>
    <material><diffuse>0.6 0.4 0.2 1</diffuse></material></visual>
</link></model></sdf>""")
    return tmp_path / 'models'


WORLD_WITH_INCLUDES = """<?xml version="1.0"?>
<sdf version="1.8"><world name="depot">
  <include><uri>model://sun</uri></include>
  <include><uri>model://ground_plane</uri></include>
  <include><uri>model://crate</uri><name>crate_a</name><pose>1 2 0.1 0 0 1.2</pose></include>
  <include><uri>model://crate</uri><name>crate_b</name><static>true</static><pose degrees="true">-1 0 0.1 0 0 90</pose></include>
  <include><uri>model://crate</uri><name>crate_c</name></include>
  <model name="shelf"><static>true</static><pose>3 0 0 0 0 0</pose>
    <link name="frame"><pose>0 0 0.5 0 0 0</pose>
      <collision name="left"><pose>0 -0.5 0 0 0 0</pose><geometry><box><size>0.1 0.1 1</size></box></geometry></collision>
      <collision name="right"><pose>0 0.5 0 0 0 0</pose><geometry><box><size>0.1 0.1 1</size></box></geometry></collision>
      <collision name="board"><pose>0 0 0.2 1.5707963267948966 0 0</pose><geometry><box><size>0.3 0.05 1.1</size>
          </box></geometry></collision>
    </link></model>
  <model name="ball"><pose>0 -2 0.2 0 0 0</pose><link name="l"><inertial><mass>0.5</mass></inertial>
    <collision name="c"><geometry><sphere><radius>0.2</radius></sphere></geometry></collision></link></model>
  <model name="pill"><static>true</static><link name="l"><collision name="c"><geometry><capsule><radius>0.1</radius>
      <length>0.5</length></capsule></geometry></collision></link></model>
  <model name="log"><static>true</static><pose>0 3 0.1 1.5707963267948966 0 0</pose><link name="l">
      <collision name="c"><geometry><cylinder><radius>0.1</radius><length>1</length></cylinder></geometry>
      </collision></link></model>
  <model name="tilted"><static>true</static><pose>2 3 0.5 0.3 0.2 0.1</pose><link name="l"><collision name="c">
      <geometry><box><size>1 0.8 0.6</size></box></geometry></collision></link></model>
  <model name="rolled"><static>true</static><pose>4 3 0.5 0.3 0 0</pose><link name="l"><collision name="c"><geometry>
      <box><size>1 0.8 0.6</size></box></geometry></collision></link></model>
  <model name="door"><link name="frame"/><link name="leaf"/><joint name="hinge" type="revolute">
      <parent>frame</parent><child>leaf</child></joint></model>
  <include><uri>model://no_such_model</uri></include>
  <light type="point" name="lamp"><pose>0 0 2 0 0 0</pose></light>
  <plugin filename="gz-sim-physics-system" name="gz::sim::systems::Physics"/>
</world></sdf>"""


def test_includes_resolve_through_the_model_path_and_the_rest_is_listed(tmp_path, model_folder, monkeypatch):
    monkeypatch.setenv('GZ_SIM_RESOURCE_PATH', str(model_folder))
    sdf = tmp_path / 'depot.sdf'
    sdf.write_text(WORLD_WITH_INCLUDES)
    out = tmp_path / 'depot.yaml'
    imported = import_sdf_world(str(sdf), str(out))
    text = imported.yaml_text(str(sdf))
    out.write_text(text)
    world = load_world(str(out))
    meshes = {entity.name: entity for entity in world.meshes}
    assert set(meshes) == {'crate_a', 'crate_b', 'crate_c'}
    assert meshes['crate_a'].position == (1.0, 2.0, 0.1) and meshes['crate_a'].rpy[2] == pytest.approx(1.2)
    assert meshes['crate_a'].mass == 2.5 and meshes['crate_b'].mass == 0.0  # <static> of the include
    assert meshes['crate_b'].rpy[2] == pytest.approx(math.pi / 2)  # degrees="true"
    assert meshes['crate_c'].position == (0.0, 0.0, 0.1)  # no include pose: the model's own
    assert meshes['crate_a'].rgba == (0.6, 0.4, 0.2, 1.0)
    assert Path(meshes['crate_a'].file) == model_folder / 'crate' / 'meshes' / 'crate.stl'
    assert world.floor.size == (100.0, 100.0) and world.light.direction == pytest.approx((-0.5, 0.1, -0.9))
    shelf = {box.name: box for box in world.boxes if box.name.startswith('shelf')}
    assert set(shelf) == {'shelf_frame_left', 'shelf_frame_right', 'shelf_frame_board'}
    assert shelf['shelf_frame_left'].position == pytest.approx((3.0, -0.5, 0.5))
    # A board rolled a quarter turn: the same box with its y and z sizes swapped.
    assert shelf['shelf_frame_board'].size == pytest.approx((0.3, 1.1, 0.05))
    assert shelf['shelf_frame_board'].position == pytest.approx((3.0, 0.0, 0.7))
    assert [(s.name, s.radius, s.mass) for s in world.spheres] == [('ball', 0.2, 0.5)]
    # Rolled about x alone: the same box with x and y sizes swapped, yawed a quarter turn and pitched.
    rolled = next(box for box in world.boxes if box.name == 'rolled')
    assert rolled.size == pytest.approx((0.8, 1.0, 0.6)) and abs(rolled.yaw) == pytest.approx(math.pi / 2)
    assert abs(rolled.pitch) == pytest.approx(0.3)
    signs = np.array([[x, y, z] for x in (-0.5, 0.5) for y in (-0.5, 0.5) for z in (-0.5, 0.5)])
    sdf_corners = signs * (1.0, 0.8, 0.6) @ rpy_to_matrix((0.3, 0.0, 0.0)).T
    our_corners = signs * np.array(rolled.size) @ rpy_to_matrix((0.0, rolled.pitch, rolled.yaw)).T
    assert sorted(map(tuple, np.round(sdf_corners, 9) + 0.0)) == sorted(map(tuple, np.round(our_corners, 9) + 0.0))
    header = [line for line in text.splitlines() if line.startswith('#')]
    for expected in ('model pill', 'capsule', 'model log', 'not standing upright', 'model tilted', 'rolled',
                     'model door', 'articulated', 'no_such_model', 'light lamp (point)', 'world <plugin>'):
        assert any(expected in line for line in header), (expected, header)
    assert not any(name in {b.name for b in world.boxes} for name in ('tilted', 'log', 'pill', 'door'))
    # ...and the file the simulator reads compiles, the crates' contact shapes included.
    mujoco.MjModel.from_xml_string(ET.tostring(world_element(world, (64, 64), 0.05, 40.0), encoding='unicode'))


def robotsim(*args: str, cwd: Path, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, '-m', 'robotsim.cli', *args], capture_output=True, text=True, cwd=cwd,
                          env={**os.environ, **(env or {})}, timeout=300)


def test_the_command_writes_the_world_and_refuses_bad_input_in_one_line(tmp_path, model_folder):
    sdf = tmp_path / 'depot.sdf'
    sdf.write_text(WORLD_WITH_INCLUDES)
    result = robotsim('import', str(sdf), '--out', 'depot.yaml', '--model-path', str(model_folder), cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert 'wrote depot.yaml' in result.stdout and 'not translated: model pill' in result.stdout
    written = yaml.safe_load((tmp_path / 'depot.yaml').read_text())
    assert {m['name'] for m in written['meshes']} == {'crate_a', 'crate_b', 'crate_c'}
    cases = [
        (['import', 'missing.sdf', '--out', 'a.yaml'], 'missing.sdf'),
        (['import', str(sdf), '--out', 'a.yaml', '--model-path', 'nowhere'], '--model-path'),
        (['import', str(sdf), '--out', 'a.txt'], '--out'),
    ]
    (tmp_path / 'model.sdf').write_text('<sdf version="1.6"><model name="m"/></sdf>')
    (tmp_path / 'broken.sdf').write_text('<sdf><world name="w">')
    cases += [(['import', 'model.sdf', '--out', 'b.yaml'], 'expected a <world> element'),
              (['import', 'broken.sdf', '--out', 'c.yaml'], 'expected SDF (XML)')]
    for arguments, says in cases:
        result = robotsim(*arguments, cwd=tmp_path)
        assert result.returncode == 2, (arguments, result.stdout, result.stderr)
        lines = result.stderr.strip().splitlines()
        assert len(lines) == 1 and says in lines[0], (arguments, result.stderr)
