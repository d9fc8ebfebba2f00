"""The Blender side of ``robotsim render``: runs ONLY in the bpy environment (see environment.py).

    python blender_side.py REQUEST.json PROGRESS_FD

REQUEST.json: {"scene": scene.json, "arrays": scene.npz, "out": folder, "engine": cycles|eevee|workbench,
"samples": N, "passes": [rgb, depth, seg, lineart], "intrinsics_only": bool}. The scene description
(written by scene_description.py) says what to build; this script draws nothing at random.

Two Blender scenes share every object and the camera:
- ``rgb``: the chosen engine (Cycles path tracing, EEVEE, Workbench) with materials, a sun and
  ambient light, ``samples`` per pixel, Standard view transform (colours as the description gives
  them), written as PNG.
- ``geometry``: Cycles at one sample per pixel with a 0.01 px pixel filter, so each pixel is
  sampled at its centre with no anti-aliasing, as the simulator renders its depth and
  segmentation (single-sampled, pixel centres: CameraInfo's pixel grid). Passes: Z (distance
  along the optical axis: verified to be planar depth, not the distance to the camera),
  object index (the entity label + 1 on every object; 0 is background) and Freestyle lines.
  EEVEE and Workbench have no object index pass, and anti-aliased passes would blend
  neighbours, so these passes come from this scene whatever engine draws the RGB.
Outputs per frame i: rgb/{i:06d}.png, depth/{i:06d}.npy (float32 m, +Inf no hit), seg/{i:06d}.npy
(int32 entity id, -1 background), lineart/{i:06d}.png (8-bit, line coverage); blender.json at the
end (version, the intrinsics read back from Blender's camera, seconds per frame and pass).
"""

import json
import math
import os
import sys
import time

import bpy  # first: bmesh, bpy_extras and mathutils are Blender's modules, there once bpy is imported
import bmesh  # noqa: I001
import numpy as np
from mathutils import Quaternion, Vector

# OpenImageIO ships inside the bpy wheel (Blender's own bundled Python packages).
sys.path.append(os.path.join(bpy.utils.resource_path('LOCAL'), 'python', 'lib',
                             f'python{sys.version_info[0]}.{sys.version_info[1]}', 'site-packages'))
import OpenImageIO as oiio  # noqa: E402

ENGINES = {'cycles': 'CYCLES', 'eevee': 'BLENDER_EEVEE', 'workbench': 'BLENDER_WORKBENCH'}
CYLINDER_SEGMENTS = 64
WORKBENCH_AA = [(1, 'OFF'), (5, '5'), (8, '8'), (11, '11'), (16, '16'), (32, '32')]


def make_mesh(name, entry, arrays):
    kind, size = entry['type'], entry['size']
    mesh = bpy.data.meshes.new(name)
    bm = bmesh.new()
    smooth = False
    if kind == 'box':
        bmesh.ops.create_cube(bm, size=2.0)
        bmesh.ops.scale(bm, vec=Vector(size), verts=bm.verts)
    elif kind == 'plane':
        half_x, half_y = (value if value > 0 else 100.0 for value in size[:2])  # 0: infinite in MuJoCo
        bmesh.ops.create_grid(bm, x_segments=1, y_segments=1, size=1.0)
        bmesh.ops.scale(bm, vec=Vector((half_x, half_y, 1.0)), verts=bm.verts)
    elif kind == 'cylinder':
        bmesh.ops.create_cone(bm, cap_ends=True, segments=CYLINDER_SEGMENTS, radius1=size[0], radius2=size[0],
                              depth=2 * size[1])
        smooth = True
    elif kind in ('sphere', 'ellipsoid'):
        bmesh.ops.create_uvsphere(bm, u_segments=48, v_segments=24, radius=1.0)
        scale = size if kind == 'ellipsoid' else (size[0],) * 3
        bmesh.ops.scale(bm, vec=Vector(scale), verts=bm.verts)
        smooth = True
    elif kind == 'capsule':
        radius, half = size[0], size[1]
        bmesh.ops.create_uvsphere(bm, u_segments=48, v_segments=24, radius=radius)
        for vertex in bm.verts:  # split the sphere at its equator and pull the halves apart
            vertex.co.z += half if vertex.co.z > 1e-9 else -half if vertex.co.z < -1e-9 else 0.0
        smooth = True
    elif kind == 'mesh':
        vertices = arrays[f"{entry['mesh']}_vertices"]
        faces = arrays[f"{entry['mesh']}_faces"]
        mesh.from_pydata([tuple(v) for v in vertices], [], [tuple(int(i) for i in f) for f in faces])
        mesh.update()
        bm.free()
        return mesh
    bm.to_mesh(mesh)
    bm.free()
    if smooth:
        mesh.shade_smooth()
        if kind == 'cylinder':  # flat caps, smooth side
            for polygon in mesh.polygons:
                if abs(polygon.normal.z) > 0.99:
                    polygon.use_smooth = False
    return mesh


def pattern_image(name, grey):
    """A Blender image of a (H, W) uint8 pattern (row 0 at the top, as the glTF and USD exports' PNG), raw values."""
    height, width = grey.shape
    image = bpy.data.images.new(name, width, height, alpha=False)
    image.colorspace_settings.name = 'Non-Color'  # first: setting it regenerates the image's pixels
    values = np.repeat((grey[::-1].astype(np.float32) / 255.0)[..., None], 4, axis=2)  # Blender's rows: bottom first
    values[..., 3] = 1.0
    image.pixels.foreach_set(values.ravel())
    image.pack()  # a generated image's pixels reach the render engines from the packed copy
    return image


def add_face_uvs(mesh):
    """Texture coordinates per face as MuJoCo lays a 2D texture on a box or cylinder: the face's two axes other
    than its normal's dominant one ((y, z) on x faces, (x, z) on y faces, (x, y) on z faces), each spanning 0 ... 1
    over the shape's extent, the same on opposite faces (Blender's box projection mirrors those)."""
    corners = np.array([vertex.co[:] for vertex in mesh.vertices])
    low, span = corners.min(axis=0), np.maximum(np.ptp(corners, axis=0), 1e-9)
    layer = mesh.uv_layers.new(name='faces')
    for polygon in mesh.polygons:
        dominant = int(np.argmax(np.abs(polygon.normal[:])))
        u_axis, v_axis = {0: (1, 2), 1: (0, 2), 2: (0, 1)}[dominant]
        for loop in polygon.loop_indices:
            point = (corners[mesh.loops[loop].vertex_index] - low) / span
            layer.data[loop].uv = (point[u_axis], point[v_axis])


def add_pattern(tree, bsdf, entry, arrays):
    """The world's surface pattern (entry['pattern']) into the base colour: the pattern image, nearest texel, through
    a constant colour ramp onto the surface's two colours; on the floor world-aligned metres times ``repeat``, on
    other shapes ``repeat`` repeats across each face (:func:`add_face_uvs`)."""
    pattern = entry['pattern']
    coordinates = tree.nodes.new('ShaderNodeTexCoord')
    mapping = tree.nodes.new('ShaderNodeMapping')
    mapping.inputs['Scale'].default_value = (pattern['repeat'],) * 3
    texture = tree.nodes.new('ShaderNodeTexImage')
    texture.image = pattern_image(f"{entry['name']}_pattern", arrays[pattern['image']])
    texture.interpolation = 'Closest'
    texture.extension = 'REPEAT'
    if pattern['mapping'] == 'world':
        # MuJoCo lays a plane's texture from its corner at (-x, +y) (its size: half-lengths), its rows toward -y.
        half_x, half_y = entry['size'][:2]
        mapping.inputs['Location'].default_value = (half_x * pattern['repeat'], -half_y * pattern['repeat'], 0.0)
        tree.links.new(coordinates.outputs['Object'], mapping.inputs['Vector'])
    else:
        tree.links.new(coordinates.outputs['UV'], mapping.inputs['Vector'])  # add_face_uvs
        if entry['type'] == 'cylinder':  # MuJoCo's squares on a cylinder sit a tile over from a box's
            mapping.inputs['Location'].default_value = (0.5 * pattern['repeat'], 0.0, 0.0)
    tree.links.new(mapping.outputs['Vector'], texture.inputs['Vector'])
    ramp = tree.nodes.new('ShaderNodeValToRGB')
    ramp.color_ramp.interpolation = 'CONSTANT'
    light, dark = pattern['colours']
    ramp.color_ramp.elements[0].position = 0.0
    ramp.color_ramp.elements[0].color = (*dark, 1.0)
    ramp.color_ramp.elements[1].position = 1.0 - pattern['contrast'] / 2  # between the two grey levels
    ramp.color_ramp.elements[1].color = (*light, 1.0)
    tree.links.new(texture.outputs['Color'], ramp.inputs['Fac'])
    tree.links.new(ramp.outputs['Color'], bsdf.inputs['Base Color'])


def make_material(entry, variety, arrays):
    material = bpy.data.materials.new(entry['name'])
    chosen = (variety or {}).get('materials', {}).get(entry['name'])
    colour = chosen['colour'] if chosen else entry['colour']
    material.diffuse_color = (*colour, 1.0)  # Workbench shows this colour
    tree = material.node_tree
    bsdf = tree.nodes.get('Principled BSDF')
    bsdf.inputs['Base Color'].default_value = (*colour, 1.0)
    bsdf.inputs['Roughness'].default_value = chosen['roughness'] if chosen else 0.6
    bsdf.inputs['Metallic'].default_value = chosen['metallic'] if chosen else 0.0
    if not chosen:
        if 'pattern' in entry:
            add_pattern(tree, bsdf, entry, arrays)
        return material
    texture = chosen['texture']
    if texture == 'plain':
        return material
    first, second = colour, [c * chosen['second_colour_scale'] for c in colour]
    scale = chosen['texture_scale']
    coordinates = tree.nodes.new('ShaderNodeTexCoord')
    node = tree.nodes.new({'checker': 'ShaderNodeTexChecker', 'noise': 'ShaderNodeTexNoise',
                           'wave': 'ShaderNodeTexWave', 'brick': 'ShaderNodeTexBrick'}[texture])
    tree.links.new(coordinates.outputs['Object'], node.inputs['Vector'])
    node.inputs['Scale'].default_value = scale
    if texture in ('checker', 'brick'):
        node.inputs['Color1'].default_value = (*first, 1.0)
        node.inputs['Color2'].default_value = (*second, 1.0)
        tree.links.new(node.outputs['Color'], bsdf.inputs['Base Color'])
    else:
        mix = tree.nodes.new('ShaderNodeMix')
        mix.data_type = 'RGBA'
        mix.inputs['A'].default_value = (*first, 1.0)
        mix.inputs['B'].default_value = (*second, 1.0)
        tree.links.new(node.outputs['Fac'], mix.inputs['Factor'])
        tree.links.new(mix.outputs['Result'], bsdf.inputs['Base Color'])
    return material


def blackbody(kelvin):
    """Approximate sRGB-linear colour of a black body (normalised to its brightest channel)."""
    t = kelvin / 100.0
    red = 255.0 if t <= 66 else 329.698727446 * (t - 60) ** -0.1332047592
    green = 99.4708025861 * math.log(t) - 161.1195681661 if t <= 66 else 288.1221695283 * (t - 60) ** -0.0755148492
    blue = 255.0 if t >= 66 else 0.0 if t <= 19 else 138.5177312231 * math.log(t - 10) - 305.0447927307
    rgb = [min(255.0, max(0.0, v)) / 255.0 for v in (red, green, blue)]
    rgb = [c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4 for c in rgb]
    top = max(rgb)
    return [c / top for c in rgb]


def make_world(name, ambient, colour=(1.0, 1.0, 1.0)):
    """Uniform ambient light of radiance ``ambient`` that the camera does not see (MuJoCo's
    background is black; its ambient term lights every surface evenly)."""
    world = bpy.data.worlds.new(name)
    tree = world.node_tree
    background = tree.nodes.get('Background')
    background.inputs['Color'].default_value = (*(ambient * c for c in colour), 1.0)
    black = tree.nodes.new('ShaderNodeBackground')
    black.inputs['Color'].default_value = (0.0, 0.0, 0.0, 1.0)
    path = tree.nodes.new('ShaderNodeLightPath')
    mix = tree.nodes.new('ShaderNodeMixShader')
    tree.links.new(path.outputs['Is Camera Ray'], mix.inputs['Fac'])
    tree.links.new(background.outputs['Background'], mix.inputs[1])
    tree.links.new(black.outputs['Background'], mix.inputs[2])
    tree.links.new(mix.outputs['Shader'], tree.nodes.get('World Output').inputs['Surface'])
    world.color = (0.0, 0.0, 0.0)
    return world


def set_intrinsics(scene, camera_object, camera):
    """Blender camera from a pinhole K (ROS: pixel centres at integer coordinates). Horizontal
    sensor fit: fx pixels = lens / sensor_width * width; fy through the pixel aspect ratio; the
    principal point through the lens shift, in units of the image width."""
    data = camera_object.data
    width, height = camera['width'], camera['height']
    scene.render.resolution_x, scene.render.resolution_y = width, height
    scene.render.resolution_percentage = 100
    # Blender scales pixel heights by aspect_y / aspect_x: fy = fx * aspect_x / aspect_y.
    if camera['fx'] >= camera['fy']:
        scene.render.pixel_aspect_x, scene.render.pixel_aspect_y = 1.0, camera['fx'] / camera['fy']
    else:
        scene.render.pixel_aspect_x, scene.render.pixel_aspect_y = camera['fy'] / camera['fx'], 1.0
    data.type = 'PERSP'
    data.sensor_fit = 'HORIZONTAL'
    data.sensor_width = 36.0
    data.lens = camera['fx'] * data.sensor_width / width
    data.shift_x = ((width - 1) / 2.0 - camera['cx']) / width
    data.shift_y = (camera['cy'] - (height - 1) / 2.0) / width * camera['fx'] / camera['fy']
    data.clip_start, data.clip_end = camera['near'], camera['far']


def read_back_intrinsics(scene, camera_object, camera):
    """(fx, fy, cx, cy) of Blender's own projection matrix for this camera and render size (the
    window matrix renders use, lens shift and pixel aspect included). In NDC, x = P00 X/-Z - P02 and
    y = P11 Y/-Z - P12 for a point (X, Y, Z) in the camera frame (Blender: x right, y up, looking
    along -Z); pixels as ROS counts them: u = (x + 1) W / 2 - 1/2, v = (1 - y) H / 2 - 1/2."""
    render = scene.render
    matrix = camera_object.calc_matrix_camera(bpy.context.evaluated_depsgraph_get(), x=render.resolution_x,
                                              y=render.resolution_y, scale_x=render.pixel_aspect_x,
                                              scale_y=render.pixel_aspect_y)
    width, height = camera['width'], camera['height']
    return {'fx': matrix[0][0] * width / 2, 'fy': matrix[1][1] * height / 2,
            'cx': (1 - matrix[0][2]) * width / 2 - 0.5, 'cy': (1 + matrix[1][2]) * height / 2 - 0.5}


def configure_rgb(scene, engine, samples, light, variety):
    scene.render.engine = ENGINES[engine]
    scene.view_settings.view_transform = 'Standard'
    scene.render.image_settings.file_format = 'PNG'
    scene.render.image_settings.color_mode = 'RGB'
    scene.render.image_settings.color_depth = '8'
    scene.render.film_transparent = False
    if engine == 'cycles':
        scene.cycles.device = 'CPU'
        scene.cycles.samples = samples
        scene.cycles.use_adaptive_sampling = False
        scene.cycles.use_denoising = False
        scene.cycles.seed = 0
        scene.render.use_persistent_data = True
    elif engine == 'eevee':
        scene.eevee.taa_render_samples = samples
    else:
        shading = scene.display.shading
        shading.light = 'STUDIO'
        shading.color_type = 'MATERIAL'
        shading.show_shadows = light['shadows']
        scene.display.render_aa = max((a for a in WORKBENCH_AA if a[0] <= samples), default=WORKBENCH_AA[0])[1]
    lighting = (variety or {}).get('lighting')
    ambient = light['ambient'] * (lighting['ambient_scale'] if lighting else 1.0)
    scene.world = make_world('ambient', ambient)
    sun_data = bpy.data.lights.new('sun', 'SUN')
    sun_data.energy = light['diffuse'] * (lighting['sun_strength_scale'] if lighting else 1.0)
    sun_data.color = blackbody(lighting['sun_temperature']) if lighting else (1.0, 1.0, 1.0)
    sun_data.angle = lighting['sun_angle'] if lighting else 0.0
    sun = bpy.data.objects.new('sun', sun_data)
    direction = Vector(lighting['sun_direction'] if lighting else light['direction']).normalized()
    sun.rotation_euler = direction.to_track_quat('-Z', 'Y').to_euler()  # a sun shines along its -Z
    scene.collection.objects.link(sun)


def configure_geometry(scene, lineart):
    scene.render.engine = 'CYCLES'
    scene.cycles.device = 'CPU'
    scene.cycles.samples = 1
    scene.cycles.use_adaptive_sampling = False
    scene.cycles.use_denoising = False
    scene.cycles.filter_width = 0.01          # every sample at the pixel centre: no anti-aliasing
    scene.cycles.max_bounces = 0
    scene.render.use_persistent_data = True
    scene.view_settings.view_transform = 'Standard'
    scene.world = bpy.data.worlds.new('black')
    layer = scene.view_layers[0]
    layer.use_pass_z = True
    layer.use_pass_object_index = True
    settings = scene.render.image_settings
    settings.media_type = 'MULTI_LAYER_IMAGE'
    settings.file_format = 'OPEN_EXR_MULTILAYER'
    settings.color_depth = '32'
    settings.exr_codec = 'ZIP'
    scene.render.use_freestyle = lineart
    layer.use_freestyle = lineart
    if lineart:
        freestyle = layer.freestyle_settings
        freestyle.as_render_pass = True
        freestyle.crease_angle = math.radians(120)
        lineset = freestyle.linesets[0] if len(freestyle.linesets) else freestyle.linesets.new('outlines')
        lineset.linestyle = bpy.data.linestyles.new('outline')
        lineset.linestyle.color = (0.0, 0.0, 0.0)
        lineset.linestyle.thickness = 1.0
        lineset.select_by_visibility = True
        lineset.visibility = 'VISIBLE'
        lineset.select_by_edge_types = True
        # Outlines only: occluding contours and open borders, no creases (box edges inside a face
        # of the silhouette would draw lines where the segmentation has no edge).
        lineset.select_silhouette, lineset.select_border, lineset.select_crease = True, True, False
        scene.render.line_thickness_mode = 'ABSOLUTE'
        scene.render.line_thickness = 1.0


def read_parts(path):
    """Every part of a multi-part EXR as float arrays by pass name, rows from the top."""
    image = oiio.ImageInput.open(path)
    if image is None:
        raise RuntimeError(f'cannot read {path}: {oiio.geterror()}')
    parts, index = {}, 0
    while image.seek_subimage(index, 0):
        spec = image.spec()
        name = spec.getattribute('name') or str(index)
        parts[name.split('.', 1)[-1]] = image.read_image(index, 0, 0, spec.nchannels, oiio.FLOAT)
        index += 1
    image.close()
    return parts


def save_mask_png(path, coverage):
    height, width = coverage.shape
    image = bpy.data.images.new('lineart', width, height, alpha=False)
    grey = np.repeat(np.flipud(coverage)[..., None], 4, axis=2).astype(np.float32)  # Blender rows from the bottom
    grey[..., 3] = 1.0
    image.pixels.foreach_set(grey.ravel())
    image.filepath_raw = path
    image.file_format = 'PNG'
    image.save()
    bpy.data.images.remove(image)


def main():
    request_path, progress_fd = sys.argv[1], int(sys.argv[2])
    progress = os.fdopen(progress_fd, 'w', buffering=1)
    request = json.load(open(request_path))
    scene_document = json.load(open(request['scene']))
    arrays = dict(np.load(request['arrays']))
    out = request['out']
    passes = set(request['passes'])
    camera = scene_document['camera']
    variety = scene_document.get('variety')

    bpy.ops.wm.read_factory_settings(use_empty=True)
    rgb_scene = bpy.context.scene
    rgb_scene.name = 'rgb'
    camera_object = bpy.data.objects.new('camera', bpy.data.cameras.new('camera'))
    rgb_scene.collection.objects.link(camera_object)
    rgb_scene.camera = camera_object
    content = bpy.data.collections.new('content')
    rgb_scene.collection.children.link(content)
    objects = []
    for entry in scene_document['geoms']:
        mesh = make_mesh(entry['name'], entry, arrays)
        if not variety and entry.get('pattern', {}).get('mapping') == 'faces':
            add_face_uvs(mesh)
        obj = bpy.data.objects.new(entry['name'], mesh)
        obj.data.materials.append(make_material(entry, variety, arrays))
        obj.pass_index = entry['label'] + 1
        obj.rotation_mode = 'QUATERNION'
        content.objects.link(obj)
        objects.append((entry['slot'], obj))
    set_intrinsics(rgb_scene, camera_object, camera)
    configure_rgb(rgb_scene, request['engine'], request['samples'], scene_document['light'], variety)

    geometry_scene = None
    if passes & {'depth', 'seg', 'lineart'}:
        geometry_scene = bpy.data.scenes.new('geometry')
        geometry_scene.collection.objects.link(camera_object)
        geometry_scene.collection.children.link(content)
        geometry_scene.camera = camera_object
        set_intrinsics(geometry_scene, camera_object, camera)
        configure_geometry(geometry_scene, 'lineart' in passes)

    for folder in passes:
        os.makedirs(os.path.join(out, folder), exist_ok=True)
    positions, quaternions = arrays['geom_positions'], arrays['geom_quaternions']
    camera_positions, camera_quaternions = arrays['camera_positions'], arrays['camera_quaternions']
    report = {'bpy': bpy.app.version_string, 'engine': request['engine'], 'samples': request['samples'],
              'frames': []}
    frames = 0 if request.get('intrinsics_only') else len(arrays['stamps'])
    for frame in range(max(frames, 1)):
        camera_object.location = Vector(camera_positions[frame])
        camera_object.rotation_mode = 'QUATERNION'
        camera_object.rotation_quaternion = Quaternion(camera_quaternions[frame])
        for slot, obj in objects:
            obj.location = Vector(positions[frame, slot])
            obj.rotation_quaternion = Quaternion(quaternions[frame, slot])
        bpy.context.view_layer.update()
        if frame == 0:
            report['intrinsics'] = read_back_intrinsics(rgb_scene, camera_object, camera)
            if geometry_scene is not None:
                report['geometry_intrinsics'] = read_back_intrinsics(geometry_scene, camera_object, camera)
        if frames == 0:
            break
        seconds = {}
        if 'rgb' in passes:
            started = time.monotonic()
            rgb_scene.render.filepath = os.path.join(out, 'rgb', f'{frame:06d}.png')
            bpy.ops.render.render(write_still=True, scene=rgb_scene.name)
            seconds['rgb'] = time.monotonic() - started
        if geometry_scene is not None:
            started = time.monotonic()
            scratch = os.path.join(out, '.geometry.exr')
            geometry_scene.render.filepath = scratch
            bpy.ops.render.render(write_still=True, scene=geometry_scene.name)
            parts = read_parts(scratch)
            os.remove(scratch)
            if 'depth' in passes:
                depth = parts['Depth'][..., 0].astype(np.float32)
                depth[~(depth < camera['far'])] = np.inf  # nothing hit within the far clip (Blender: 1e10)
                np.save(os.path.join(out, 'depth', f'{frame:06d}.npy'), depth)
            if 'seg' in passes:
                index = np.rint(parts['Object Index'][..., 0]).astype(np.int32)
                np.save(os.path.join(out, 'seg', f'{frame:06d}.npy'), index - 1)
            if 'lineart' in passes:
                save_mask_png(os.path.join(out, 'lineart', f'{frame:06d}.png'), parts['Freestyle'][..., 3])
            seconds['geometry'] = time.monotonic() - started
        report['frames'].append(seconds)
        progress.write(json.dumps({'frame': frame, 'frames': frames, 'seconds': seconds}) + '\n')
    with open(os.path.join(out, 'blender.json'), 'w') as stream:
        json.dump(report, stream, indent=1)
    progress.close()


if __name__ == '__main__':
    main()
