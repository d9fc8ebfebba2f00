"""Surface patterns of a world (``texture`` on the floor, walls, boxes and cylinders) as MuJoCo renders them and as
a glTF reader (pygltflib, then Pillow for the image) reads the export."""

from __future__ import annotations

import io
import xml.etree.ElementTree as ET

import mujoco
import numpy as np
import pytest
import yaml
from PIL import Image
from pygltflib import GLTF2

from robotsim_core.errors import DescriptionError
from robotsim_core.viewer.gltf import build_scene, scene_glb, srgb_to_linear, texture_image
from robotsim_sim.scene import load_world, world_element

WORLD = {
    'name': 'patterns',
    'floor': {'size': [6, 6], 'rgba': [0.6, 0.6, 0.6, 1], 'texture': {'pattern': 'speckle', 'tile': 0.2,
                                                                      'contrast': 0.6}},
    'walls': [{'start': [-2, 2], 'end': [2, 2], 'rgba': [0.3, 0.3, 0.8, 1]}],
    'boxes': [{'name': 'chequered', 'position': [-0.5, 0, 0.3], 'size': [0.6, 0.6, 0.6], 'rgba': [0.8, 0.8, 0.2, 1],
               'texture': {'pattern': 'checker', 'tile': 0.1, 'contrast': 0.5}},
              {'name': 'plain', 'position': [0.5, 0, 0.3], 'size': [0.6, 0.6, 0.6], 'rgba': [0.8, 0.8, 0.2, 1]}],
}


def world_file(tmp_path, world=WORLD):
    path = tmp_path / 'world.yaml'
    path.write_text(yaml.safe_dump(world))
    return str(path)


def render(world, camera: dict, segmentation=False) -> np.ndarray:
    root = world_element(world, (160, 120), 0.05, 20.0)
    ET.SubElement(root.find('worldbody'), 'camera', name='test', **camera)
    model = mujoco.MjModel.from_xml_string(ET.tostring(root, encoding='unicode'))
    data = mujoco.MjData(model)
    mujoco.mj_forward(model, data)
    with mujoco.Renderer(model, 120, 160) as renderer:
        if segmentation:
            renderer.enable_segmentation_rendering()
        renderer.update_scene(data, 'test')
        image = renderer.render()
    if segmentation:
        return np.array([model.geom(int(g)).name if g >= 0 else '' for g in image[..., 0].ravel()]).reshape(120, 160)
    return image


FRONT = {'pos': '0 -2.5 0.3', 'xyaxes': '1 0 0 0 0 1'}  # level with the boxes' centres, facing their -y faces
ABOVE = {'pos': '0 -1.5 3', 'xyaxes': '1 0 0 0 1 0'}    # straight down on the floor in front of the boxes


def test_a_chequered_face_has_two_levels_and_a_flat_one_one(tmp_path):
    world = load_world(world_file(tmp_path))
    image = render(world, FRONT).astype(float)
    labels = render(world, FRONT, segmentation=True)
    assert np.array_equal(image, render(world, FRONT).astype(float)), 'the same world renders the same bytes'
    for name, ratio in (('chequered', 0.5), ('plain', 1.0)):
        red = image[..., 0][labels == name]
        assert red.size > 500, name
        dark, light = np.percentile(red, 10), np.percentile(red, 90)
        assert dark / light == pytest.approx(ratio, abs=0.08), name
    # Squares of about 0.1 m: round(0.6 / 0.2) = 3 repeats of 2 squares, so 5 edges along a row of the face.
    row = labels.shape[0] // 2
    columns = np.flatnonzero(labels[row] == 'chequered')
    levels = image[row, columns, 0] > (np.percentile(image[row, columns, 0], 10) +
                                       np.percentile(image[row, columns, 0], 90)) / 2
    assert 4 <= np.count_nonzero(np.diff(levels.astype(int))) <= 6


def test_a_chequered_floors_squares_are_its_tile_world_aligned(tmp_path):
    """Straight down on a floor chequered in 0.25 m squares: along the middle row the level changes where world x is
    a multiple of 0.25 m (within a pixel), once per 0.25 m."""
    tile = 0.25
    world = load_world(world_file(tmp_path, {**WORLD, 'floor': {**WORLD['floor'], 'texture': {
        'pattern': 'checker', 'tile': tile, 'contrast': 0.5}}}))
    image, labels = render(world, ABOVE).astype(float), render(world, ABOVE, segmentation=True)
    row = labels.shape[0] // 2
    assert (labels[row] == 'floor').all()
    red = image[row, :, 0]
    levels = red > (np.percentile(red, 10) + np.percentile(red, 90)) / 2
    changes = np.flatnonzero(np.diff(levels.astype(int))) + 1  # the first pixel of each new level
    # The camera (fovy 45 degrees, 3 m up, 160 x 120): 2 * 3 tan(22.5 deg) / 120 m a pixel, x = 0 at the centre.
    metres_per_pixel = 2 * 3.0 * np.tan(np.radians(22.5)) / 120
    x = (changes - 80) * metres_per_pixel  # the edge between pixels changes - 1 and changes
    span = 160 * metres_per_pixel
    assert abs(len(changes) - span / tile) <= 1.5, (len(changes), span / tile)
    offset = np.abs((x + tile / 2) % tile - tile / 2)
    assert offset.max() <= 1.5 * metres_per_pixel, (x, offset)


def test_a_gridded_floors_lines_lie_on_every_tile_edge_an_eighth_of_a_tile_wide(tmp_path):
    """Straight down on a 6 m floor gridded every 0.4 m: along the middle row the lines are centred a multiple of
    0.4 m from the floor's edge at x = -3 m, each 0.05 m wide (within a pixel), the image the exports carry drawn the
    same way."""
    tile = 0.4
    world = load_world(world_file(tmp_path, {**WORLD, 'floor': {**WORLD['floor'], 'texture': {
        'pattern': 'grid', 'tile': tile, 'contrast': 0.5}}}))
    image = render(world, ABOVE).astype(float)
    red = image[image.shape[0] // 2, :, 0]
    dark = red < (red.min() + red.max()) / 2
    metres_per_pixel = 2 * 3.0 * np.tan(np.radians(22.5)) / 120
    x = (np.arange(160) + 0.5 - 80) * metres_per_pixel  # pixel centres
    runs = np.split(np.flatnonzero(dark), np.flatnonzero(np.diff(np.flatnonzero(dark)) > 1) + 1)
    runs = [run for run in runs if 0 < run[0] and run[-1] < 159]  # whole lines
    assert len(runs) >= 6, runs
    for run in runs:
        centre, width = x[run].mean(), len(run) * metres_per_pixel
        from_edge = centre + 3.0
        assert abs(from_edge - tile * round(from_edge / tile)) <= metres_per_pixel, (centre, width)
        assert abs(width - tile / 8) <= 1.5 * metres_per_pixel, (centre, width)
    exported = texture_image('grid', 0.5)
    assert (exported[:, 0] < 255).all() and (exported[0] < 255).all()
    assert np.count_nonzero(exported[32] < 255) == 64 and np.count_nonzero(exported[16] < 255) == 2 * 4  # 4 px: tile / 8


def test_a_speckled_floor_darkens_about_three_texels_in_ten(tmp_path):
    world = load_world(world_file(tmp_path))
    labels = render(world, ABOVE, segmentation=True)
    red = render(world, ABOVE).astype(float)[..., 0][labels == 'floor']
    threshold = (red.min() + red.max()) / 2
    assert red.min() / red.max() == pytest.approx(0.4, abs=0.03)  # the second colour is 60 % darker
    assert 0.15 < np.mean(red < threshold) < 0.45


def test_the_gltf_export_carries_the_pattern_image_and_texture_coordinates(tmp_path):
    world = load_world(world_file(tmp_path))
    path = tmp_path / 'world.glb'
    path.write_bytes(scene_glb(build_scene(world=world)))
    gltf = GLTF2().load_binary(str(path))
    binary = gltf.binary_blob()

    def primitive(name):
        node = next(n for n in gltf.nodes if n.name == name)
        return gltf.meshes[node.mesh].primitives[0]

    def read(accessor_index, columns):
        accessor = gltf.accessors[accessor_index]
        view = gltf.bufferViews[accessor.bufferView]
        start = (view.byteOffset or 0) + (accessor.byteOffset or 0)
        return np.frombuffer(binary, np.float32, accessor.count * columns, start).reshape(-1, columns)

    box = primitive('chequered')
    material = gltf.materials[box.material]
    rgba = WORLD['boxes'][0]['rgba']   # glTF's factor is linear: MuJoCo's display colour through the sRGB curve
    assert np.allclose(material.pbrMetallicRoughness.baseColorFactor,
                       [*(srgb_to_linear(c) for c in rgba[:3]), rgba[3]], atol=0.6 / 255)
    texture = gltf.textures[material.pbrMetallicRoughness.baseColorTexture.index]
    image = gltf.images[texture.source]
    view = gltf.bufferViews[image.bufferView]
    pixels = np.asarray(Image.open(io.BytesIO(binary[view.byteOffset or 0:(view.byteOffset or 0) + view.byteLength])))
    assert np.array_equal(pixels[..., 0], texture_image('checker', 0.5))
    assert texture.sampler is None or gltf.samplers[texture.sampler].wrapS in (None, 10497)  # REPEAT
    uv, positions = read(box.attributes.TEXCOORD_0, 2), read(box.attributes.POSITION, 3)
    assert len(uv) == len(positions)
    # One repeat (2 squares) every 0.2 m: across the 0.6 m box, 3 repeats.
    assert np.ptp(uv[:, 0]) == pytest.approx(0.6 / 0.2, abs=1e-5)
    floor = gltf.materials[primitive('floor').material]
    assert floor.pbrMetallicRoughness.baseColorTexture is not None
    for flat in ('plain', 'wall_0'):
        assert gltf.materials[primitive(flat).material].pbrMetallicRoughness.baseColorTexture is None
        assert primitive(flat).attributes.TEXCOORD_0 is None


def test_an_unknown_pattern_is_one_line_naming_its_key(tmp_path):
    world = {**WORLD, 'boxes': [{**WORLD['boxes'][0], 'texture': {'pattern': 'stripes'}}]}
    with pytest.raises(DescriptionError) as error:
        load_world(world_file(tmp_path, world))
    message = str(error.value)
    assert 'boxes[0].texture.pattern' in message and 'checker' in message and '\n' not in message
