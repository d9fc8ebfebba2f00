"""``robotsim view BAG --usd run.usdc``: a recording as a time-sampled USD stage (``usd-core``), ROS-free.

Any USD viewer (usdview, Omniverse, Isaac, Blender's USD import) opens it and scrubs through the run.
Stage layout (``upAxis`` Z and metres, as REP 103; ``timeCodesPerSecond`` 1000, so a time code is a
millisecond of the bag from its first message):

- ``/World/world/<name>``: the world's floor, walls, boxes and cylinders (the glTF export's triangles,
  robotsim_core.viewer.gltf); the free bodies the recording moves (``/sim/entities``) carry a time-sampled
  transform, the others a static one;
- ``/World/robot/<link>``: one Xform per link of the robot, side by side (not nested), each with a
  time-sampled world transform (a ``double`` 4x4 op): the base's ground-truth pose (``/sim/ground_truth``) times
  forward kinematics of the joint states interpolated at that stamp (robotsim_core.joint_series); its visual
  shapes are child meshes at their URDF origins;
- ``/World/robot/<optical frame>/camera``: a ``UsdGeom.Camera`` per camera sensor, looking along the optical
  frame's +z (USD cameras look along their -z: the prim turns half a turn about x), with the horizontal
  field of view of the sensor's spec;
- ``/World/robot/<frame>/vectors/<name>``: the vectors the replay page draws as arrows (velocities, forces:
  robotsim_core.viewer.bag_scene), each a shaft (``BasisCurves``, two time-sampled points in the frame, from
  the vector's start to start + vector x scale) and a head (``Cone``, time-sampled), with the vector itself
  time-sampled in ``robotsim:vector`` and ``robotsim:unit`` / ``robotsim:scale`` (m per unit) beside it;
  hide one with its ``visibility``.

Every mesh is bound to a ``UsdPreviewSurface`` material under ``/World/Looks`` (the surface's colour and
opacity, roughness 0.8, not metallic: the glTF export's), and carries the colour as ``displayColor`` too. A
patterned surface (a world ``texture``: checker, grid, speckle) has texture coordinates (``primvars:st``, one
repeat every ``2 tile`` metres, as the glTF export) and its material reads an sRGB PNG of the pattern in the
surface's colour (``UsdUVTexture``, repeating; the colour is its fallback). MuJoCo's colours are display values:
the materials' and ``displayColor``'s are their scene-linear equivalents. A ``.usdz`` holds the stage and its
textures in one package; a ``.usdc`` or ``.usda`` is written with its textures in ``<file name>.textures/`` beside
it (``run.usdc.textures/``), by relative path. Every triangle is in the stage itself: moved without its textures
folder it still opens whole (a viewer then draws the patterned surfaces by its own rule for a missing image: the
fallback colour, or a placeholder). Time samples are the ground-truth stamps (50 Hz in the simulator's recordings).
"""

from __future__ import annotations

import hashlib
import math
import os
import tempfile
from pathlib import Path

import numpy as np

from ..description.kinematics import forward_kinematics
from ..description.model import RobotModel
from ..geometry import homogeneous
from ..joint_series import JointSeries
from .bag_scene import BagSceneError, open_reader, stamp_seconds, strip_prefix
from .gltf import WORLD_NODE, _shape_mesh, add_world, build_scene, srgb_to_linear

TIME_CODES_PER_SECOND = 1000.0
"""A time code is a millisecond of the recording."""
MAX_SAMPLES = 1_000_000
"""Time samples per prim at most (over five hours at 50 Hz): a bound on the stage's size."""
OPTICAL_TO_USD_CAMERA = np.diag([1.0, -1.0, -1.0, 1.0])
"""USD camera <- ROS optical frame: half a turn about x (optical +z forward, +y down; USD camera -z forward, +y up)."""


class UsdUnavailable(RuntimeError):
    """usd-core (pxr) is not installed (one line)."""


def _pxr():
    try:
        from pxr import Gf, Sdf, Usd, UsdGeom, UsdShade, Vt  # noqa: F401 (UsdShade: checked here, used by Looks)
    except ImportError as error:
        raise UsdUnavailable(f'writing USD needs usd-core (pip install -r requirements/bare.txt): {error}') from None
    return Gf, Sdf, Usd, UsdGeom, Vt


def _prim_name(name: str) -> str:
    """A USD prim name (letters, digits, _; not starting with a digit) for a link or entity name."""
    text = ''.join(c if c.isalnum() or c == '_' else '_' for c in name) or '_'
    return f'_{text}' if text[0].isdigit() else text


def _matrix(Gf, transform: np.ndarray):
    """Gf.Matrix4d of a 4x4 column-vector transform (USD multiplies row vectors: transposed)."""
    return Gf.Matrix4d(*[float(v) for v in np.asarray(transform, dtype=float).T.reshape(16)])


class Looks:
    """The stage's materials (``/World/Looks``), one per distinct colour and pattern, and the pattern images they read
    (PNG files written into ``folder``, named by their content; referred to as ``./FOLDER/NAME.png``). Owns nothing
    open: the files are written as materials are made."""

    def __init__(self, stage, folder: Path):
        self.stage, self.folder = stage, folder
        self.materials: dict[tuple, object] = {}
        self.textures: set[str] = set()
        """File names of the pattern images the materials read."""

    def count(self) -> str:
        return f'{len(self.textures)} pattern texture' + ('' if len(self.textures) == 1 else 's')

    def bind(self, prim, rgba, image: np.ndarray | None) -> None:
        """Bind ``prim`` (a mesh) to the material of colour ``rgba`` (0..1) and, if given, the (H, W) grey pattern
        ``image`` (255: the colour; less: darker), reading texture coordinates ``st``."""
        from pxr import UsdShade
        rgba = tuple(round(float(min(1.0, max(0.0, c))), 6) for c in rgba)
        key = (rgba, None if image is None else hashlib.sha256(image.tobytes()).hexdigest()[:16])
        if key not in self.materials:
            self.materials[key] = self._material(len(self.materials), rgba, image)
        prim.GetPrim().ApplyAPI(UsdShade.MaterialBindingAPI)
        UsdShade.MaterialBindingAPI(prim).Bind(self.materials[key])

    def _material(self, index: int, rgba: tuple, image: np.ndarray | None):
        from pxr import Gf, Sdf, UsdGeom, UsdShade
        UsdGeom.Scope.Define(self.stage, '/World/Looks')
        material = UsdShade.Material.Define(self.stage, f'/World/Looks/material_{index}')
        surface = UsdShade.Shader.Define(self.stage, f'{material.GetPath()}/surface')
        surface.CreateIdAttr('UsdPreviewSurface')
        colour = Gf.Vec3f(*[srgb_to_linear(c) for c in rgba[:3]])  # MuJoCo's colours are display values
        diffuse = surface.CreateInput('diffuseColor', Sdf.ValueTypeNames.Color3f)
        diffuse.Set(colour)
        surface.CreateInput('opacity', Sdf.ValueTypeNames.Float).Set(rgba[3])
        surface.CreateInput('roughness', Sdf.ValueTypeNames.Float).Set(0.8)
        surface.CreateInput('metallic', Sdf.ValueTypeNames.Float).Set(0.0)
        material.CreateSurfaceOutput().ConnectToSource(surface.ConnectableAPI(), 'surface')
        if image is not None:
            name = self._write_texture(image, rgba)
            reader = UsdShade.Shader.Define(self.stage, f'{material.GetPath()}/st_reader')
            reader.CreateIdAttr('UsdPrimvarReader_float2')
            reader.CreateInput('varname', Sdf.ValueTypeNames.String).Set('st')
            texture = UsdShade.Shader.Define(self.stage, f'{material.GetPath()}/pattern')
            texture.CreateIdAttr('UsdUVTexture')
            texture.CreateInput('file', Sdf.ValueTypeNames.Asset).Set(f'./{self.folder.name}/{name}')
            texture.CreateInput('st', Sdf.ValueTypeNames.Float2).ConnectToSource(reader.ConnectableAPI(), 'result')
            texture.CreateInput('wrapS', Sdf.ValueTypeNames.Token).Set('repeat')
            texture.CreateInput('wrapT', Sdf.ValueTypeNames.Token).Set('repeat')
            texture.CreateInput('sourceColorSpace', Sdf.ValueTypeNames.Token).Set('sRGB')
            texture.CreateInput('fallback', Sdf.ValueTypeNames.Float4).Set(Gf.Vec4f(*colour, 1.0))
            texture.CreateOutput('rgb', Sdf.ValueTypeNames.Float3)
            diffuse.ConnectToSource(texture.ConnectableAPI(), 'rgb')
        return material

    def _write_texture(self, image: np.ndarray, rgba: tuple) -> str:
        """The pattern in the surface's colour as an sRGB PNG: the colour where the grey image is 255, scaled by the
        grey level elsewhere in display values, as MuJoCo darkens its second colour; returns its file name."""
        from PIL import Image
        pixels = np.round(np.asarray(image, dtype=float)[..., None] * np.asarray(rgba[:3])[None, None, :])
        pixels = pixels.clip(0, 255).astype(np.uint8)
        name = f'pattern_{hashlib.sha256(pixels.tobytes()).hexdigest()[:16]}.png'  # its content: kept if unchanged
        self.folder.mkdir(parents=True, exist_ok=True)
        if not (self.folder / name).exists():
            Image.fromarray(pixels, 'RGB').save(self.folder / name)
        self.textures.add(name)
        return name


def _pattern(mesh) -> tuple[np.ndarray | None, np.ndarray | None]:
    """(texture coordinates per vertex, the grey pattern image) of a glTF-export mesh with a pattern, else (None, None)."""
    visual = getattr(mesh, 'visual', None)
    uv = getattr(visual, 'uv', None)
    image = getattr(getattr(visual, 'material', None), 'baseColorTexture', None)
    if uv is None or image is None:
        return None, None
    return np.asarray(uv, dtype=float), np.asarray(image.convert('L'), dtype=np.uint8)


def _mesh(stage, path: str, mesh, transform: np.ndarray, looks: Looks | None = None) -> None:
    Gf, Sdf, _, UsdGeom, Vt = _pxr()
    prim = UsdGeom.Mesh.Define(stage, path)
    vertices = np.asarray(mesh.vertices, dtype=float)
    faces = np.asarray(mesh.faces, dtype=int)
    prim.CreatePointsAttr(Vt.Vec3fArray.FromNumpy(vertices.astype(np.float32)))
    prim.CreateFaceVertexCountsAttr(Vt.IntArray([3] * len(faces)))
    prim.CreateFaceVertexIndicesAttr(Vt.IntArray.FromNumpy(faces.reshape(-1).astype(np.int32)))
    prim.CreateSubdivisionSchemeAttr(UsdGeom.Tokens.none)
    if len(vertices):
        prim.CreateExtentAttr(Vt.Vec3fArray([Gf.Vec3f(*vertices.min(axis=0)), Gf.Vec3f(*vertices.max(axis=0))]))
    colour = getattr(getattr(getattr(mesh, 'visual', None), 'material', None), 'baseColorFactor', None)
    if colour is not None:
        rgba = np.asarray(colour, dtype=float) / 255.0
        prim.CreateDisplayColorAttr(Vt.Vec3fArray([Gf.Vec3f(*[srgb_to_linear(c) for c in rgba[:3]])]))
        prim.CreateDisplayOpacityAttr(Vt.FloatArray([float(rgba[3])]))
        uv, image = _pattern(mesh)
        if uv is not None:
            # (trimesh's texture coordinates start at the image's bottom left, as USD's)
            st = UsdGeom.PrimvarsAPI(prim).CreatePrimvar('st', Sdf.ValueTypeNames.TexCoord2fArray,
                                                         UsdGeom.Tokens.vertex)
            st.Set(Vt.Vec2fArray.FromNumpy(uv.astype(np.float32)))
        if looks is not None:
            looks.bind(prim, rgba, image)
    prim.AddTransformOp(precision=UsdGeom.XformOp.PrecisionDouble).Set(_matrix(Gf, transform))


def _recording(bag, model: RobotModel | None, namespace: str):
    """(ground truth [(t, 4x4, frame)], joint series, entities {name: [(t, 4x4)]}, bag start s, the bag's
    /robot_description or None) of one robot."""
    prefix = f'{namespace.strip("/")}/' if namespace.strip('/') else ''
    topic = (lambda name: f'/{namespace.strip("/")}/{name}') if namespace.strip('/') else (lambda name: f'/{name}')
    reader = open_reader(bag)
    try:
        start = reader.start_time * 1e-9
        wanted = {topic('sim/ground_truth'), topic('joint_states'), '/sim/entities', topic('robot_description')}
        connections = [c for c in reader.connections if c.topic in wanted]
        truth, entities, joints, description = [], {}, JointSeries(), None
        for connection, _, raw in reader.messages(connections=connections):
            message = reader.deserialize(raw, connection.msgtype)
            if connection.topic == topic('sim/ground_truth'):
                p, q = message.pose.pose.position, message.pose.pose.orientation
                truth.append((stamp_seconds(message.header) - start, _pose(p, q),
                              strip_prefix(message.child_frame_id, prefix)))
            elif connection.topic == topic('robot_description'):
                description = str(message.data)
            elif connection.topic == topic('joint_states'):
                joints.add(message.header.stamp.sec * 1_000_000_000 + message.header.stamp.nanosec, message.name,
                           message.position)
            else:
                for transform in message.transforms:
                    t = transform.transform
                    entities.setdefault(transform.child_frame_id, []).append(
                        (stamp_seconds(transform.header) - start, _pose(t.translation, t.rotation)))
    finally:
        reader.close()
    return truth, joints, entities, start, description


def _pose(position, orientation) -> np.ndarray:
    """4x4 of a ROS position and (normalised) quaternion."""
    q = np.array([orientation.w, orientation.x, orientation.y, orientation.z], dtype=float)
    w, x, y, z = q / np.linalg.norm(q)
    rotation = np.array([[1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)],
                         [2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)],
                         [2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)]])
    return homogeneous(rotation, (position.x, position.y, position.z))


def write_usd(bag, out, model: RobotModel | None = None, world=None, namespace: str = '') -> str:
    """Write the USD stage of ``bag`` to ``out`` (.usdc binary, .usda text, .usdz package; ``world``: a
    ``robotsim_sim`` WorldSpec or None); returns a one-line summary. :class:`UsdUnavailable` without usd-core,
    :class:`BagSceneError` for a path that is no bag."""
    _pxr()
    truth, joints, entities, start, description = _recording(bag, model, namespace)
    if model is None and description:  # a record:=true recording: the robot as the bag describes it
        from .replay import model_from_urdf
        model = model_from_urdf(description, 'the robot description in the bag')
    if len(truth) > MAX_SAMPLES:
        raise BagSceneError(f'{bag}: {len(truth)} ground-truth poses; at most {MAX_SAMPLES} are written to a stage')
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    if out.suffix != '.usdz':
        textures = out.parent / f'{out.name}.textures'
        looks = Looks(None, textures)
        details = _write_stage(out, looks, truth, joints, entities, start, model, world, bag, namespace)
        # An earlier stage of this name's textures that this one does not read; the folder goes when empty.
        for stale in textures.glob('pattern_*.png'):
            if stale.name not in looks.textures:
                stale.unlink()
        if textures.is_dir() and not any(textures.iterdir()):
            textures.rmdir()
        where = f'; {looks.count()} in {textures}' if looks.textures else ''
    else:
        from pxr import UsdUtils
        partial = out.with_name(f'.{out.stem}.partial.usdz')  # the package replaces ``out`` once whole
        with tempfile.TemporaryDirectory(prefix='robotsim_usdz_') as folder:
            layer = Path(folder) / f'{out.stem}.usdc'
            looks = Looks(None, Path(folder) / 'textures')
            details = _write_stage(layer, looks, truth, joints, entities, start, model, world, bag, namespace)
            partial.unlink(missing_ok=True)
            if not UsdUtils.CreateNewUsdzPackage(str(layer), str(partial)):
                partial.unlink(missing_ok=True)
                raise OSError(f'USD could not package {out}')
        os.replace(partial, out)
        where = f'; {looks.count()} in the package' if looks.textures else ''
    return f'wrote {out} ({out.stat().st_size / 1e6:.1f} MB{where}): {details}'


def _write_stage(out: Path, looks: Looks, truth, joints, entities, start, model, world, bag, namespace) -> str:
    """The stage at ``out`` (a layer of its own), materials through ``looks``; returns what it holds, one line."""
    Gf, Sdf, Usd, UsdGeom, _ = _pxr()
    if out.exists():
        out.unlink()  # CreateNew refuses an existing layer
    stage = Usd.Stage.CreateNew(str(out))
    looks.stage = stage
    UsdGeom.SetStageUpAxis(stage, UsdGeom.Tokens.z)
    UsdGeom.SetStageMetersPerUnit(stage, 1.0)
    stage.SetTimeCodesPerSecond(TIME_CODES_PER_SECOND)
    stage.SetFramesPerSecond(50.0)
    codes = [round(t * TIME_CODES_PER_SECOND, 6) for t, _, _ in truth]
    stage.SetStartTimeCode(codes[0] if codes else 0.0)
    stage.SetEndTimeCode(codes[-1] if codes else 0.0)
    root = UsdGeom.Xform.Define(stage, '/World')
    stage.SetDefaultPrim(root.GetPrim())
    root.GetPrim().SetCustomDataByKey('robotsim:source', Path(bag).name)

    moved = 0
    if world is not None:
        UsdGeom.Xform.Define(stage, '/World/world')
        scene = build_scene(None, None)
        add_world(scene, world)
        for name in scene.graph.nodes_geometry:
            transform, geometry = scene.graph.get(name, frame_from=WORLD_NODE)
            xform = UsdGeom.Xform.Define(stage, f'/World/world/{_prim_name(name)}')
            op = xform.AddTransformOp(precision=UsdGeom.XformOp.PrecisionDouble)
            samples = entities.get(name)
            if samples:
                moved += 1
                for t, pose in samples[:MAX_SAMPLES]:
                    op.Set(_matrix(Gf, pose), round(t * TIME_CODES_PER_SECOND, 6))
                # The entity's mesh is centred on its body frame: the glTF node's transform is its start pose.
                _mesh(stage, f'/World/world/{_prim_name(name)}/shape', scene.geometry[geometry], np.eye(4), looks)
            else:
                op.Set(_matrix(Gf, transform))
                _mesh(stage, f'/World/world/{_prim_name(name)}/shape', scene.geometry[geometry], np.eye(4), looks)

    cameras = 0
    if model is not None:
        UsdGeom.Xform.Define(stage, '/World/robot')
        tree = model.tree
        names = list(joints.names) if joints else []
        positions = joints.resample([round((t + start) * 1e9) for t, _, _ in truth], names) if names else None
        ops = {}
        for link in tree.depth_first():
            xform = UsdGeom.Xform.Define(stage, f'/World/robot/{_prim_name(link)}')
            ops[link] = xform.AddTransformOp(precision=UsdGeom.XformOp.PrecisionDouble)
            cache: dict = {}
            for index, shape in enumerate(tree.links[link].visuals):
                _mesh(stage, f'/World/robot/{_prim_name(link)}/visual_{index}', _shape_mesh(shape, cache),
                      shape.origin.matrix(), looks)
        for sample, (t, pose, frame) in enumerate(truth):
            state = dict(model.initial_positions)
            if positions is not None:
                state.update(zip(names, positions[sample]))
            poses = forward_kinematics(tree, state)
            anchor = pose @ np.linalg.inv(poses[frame if frame in poses else tree.root()])
            code = codes[sample]
            for link, op in ops.items():
                op.Set(_matrix(Gf, anchor @ poses[link]), code)
        for sensor in model.sensors:
            if sensor.type != 'camera' or sensor.frame not in tree.links:
                continue
            camera = UsdGeom.Camera.Define(stage, f'/World/robot/{_prim_name(sensor.frame)}/camera')
            camera.AddTransformOp(precision=UsdGeom.XformOp.PrecisionDouble).Set(_matrix(Gf, OPTICAL_TO_USD_CAMERA))
            width, height = float(sensor.spec.width), float(sensor.spec.height)
            aperture = 20.955  # mm, USD's default horizontal aperture; the vertical one keeps the image's aspect
            camera.CreateHorizontalApertureAttr(aperture)
            camera.CreateVerticalApertureAttr(aperture * height / width)
            camera.CreateFocalLengthAttr(aperture * height / width / (2.0 * math.tan(sensor.spec.vertical_fov / 2.0)))
            camera.CreateClippingRangeAttr(Gf.Vec2f(0.01, 100.0))
            cameras += 1
    arrows = _vectors(stage, bag, model, namespace) if model is not None else 0
    stage.GetRootLayer().Save()
    return (f'{len(truth)} time samples over {(truth[-1][0] - truth[0][0]) if truth else 0.0:.1f} s; '
            f'{len(looks.materials)} materials; robot {model.name if model else "none"} '
            f'({len(model.tree.links) if model else 0} links, {cameras} cameras, {arrows} vectors); world '
            f'{world.name if world else "none"} ({moved} moving bodies)')


def _vectors(stage, bag, model: RobotModel, namespace: str) -> int:
    """The bag's vector series as arrows under their frames' prims (see the module docstring); returns how many."""
    Gf, Sdf, _, UsdGeom, Vt = _pxr()
    from .bag_scene import read_bag
    series_list = read_bag(bag, model, namespace, max_image_rate=1e-3).vectors
    written = 0
    for series in series_list:
        if series['frame'] not in model.tree.links:
            continue  # not a link of the robot: the replay page says so; the stage leaves it out
        base = f'/World/robot/{_prim_name(series["frame"])}/vectors/{_prim_name(series["name"])}'
        UsdGeom.Xform.Define(stage, base)
        shaft = UsdGeom.BasisCurves.Define(stage, f'{base}/shaft')
        shaft.CreateTypeAttr(UsdGeom.Tokens.linear)
        shaft.CreateCurveVertexCountsAttr(Vt.IntArray([2]))
        shaft.CreateWidthsAttr(Vt.FloatArray([0.01]))
        colour = [int(series['colour'][i:i + 2], 16) / 255.0 for i in (1, 3, 5)]
        shaft.CreateDisplayColorAttr(Vt.Vec3fArray([Gf.Vec3f(*colour)]))
        head = UsdGeom.Cone.Define(stage, f'{base}/head')
        head.CreateDisplayColorAttr(Vt.Vec3fArray([Gf.Vec3f(*colour)]))
        head_op = head.AddTransformOp(precision=UsdGeom.XformOp.PrecisionDouble)
        prim = stage.GetPrimAtPath(base)
        prim.CreateAttribute('robotsim:unit', Sdf.ValueTypeNames.String).Set(series['unit'])
        prim.CreateAttribute('robotsim:scale', Sdf.ValueTypeNames.Double).Set(float(series['scale']))
        prim.CreateAttribute('robotsim:topic', Sdf.ValueTypeNames.String).Set(series['topic'])
        vector_attribute = prim.CreateAttribute('robotsim:vector', Sdf.ValueTypeNames.Double3)
        points = shaft.CreatePointsAttr()
        starts = series.get('at') or [[0.0, 0.0, 0.0]] * len(series['t'])
        for t, vector, start in list(zip(series['t'], series['v'], starts))[:MAX_SAMPLES]:
            code = round(t * TIME_CODES_PER_SECOND, 6)
            vector, start = np.asarray(vector, dtype=float), np.asarray(start, dtype=float)
            tip = start + vector * series['scale']
            vector_attribute.Set(Gf.Vec3d(*vector), code)
            points.Set(Vt.Vec3fArray([Gf.Vec3f(*start), Gf.Vec3f(*tip)]), code)
            head_op.Set(_matrix(Gf, _cone_pose(start, tip)), code)
        written += 1
    return written


def _cone_pose(start: np.ndarray, tip: np.ndarray) -> np.ndarray:
    """A USD cone's transform (its axis z, height 2 and radius 1 by default) as an arrowhead ending at ``tip``,
    a fifth of the arrow long (at most 8 cm); scaled to nothing for a zero vector."""
    direction = tip - start
    length = float(np.linalg.norm(direction))
    if length < 1e-9:
        return homogeneous(np.zeros((3, 3)), start)
    z = direction / length
    helper = np.array([1.0, 0.0, 0.0]) if abs(z[0]) < 0.9 else np.array([0.0, 1.0, 0.0])
    x = np.cross(helper, z)
    x /= np.linalg.norm(x)
    rotation = np.column_stack([x, np.cross(z, x), z])
    height = min(0.2 * length, 0.08)
    scale = np.diag([height / 4, height / 4, height / 2])  # radius half the height
    return homogeneous(rotation @ scale, tip - z * height / 2)

