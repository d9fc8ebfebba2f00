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

Every triangle is written into the stage itself, so the file stays valid when moved to another machine
(no asset paths). Time samples are the ground-truth stamps (50 Hz in the simulator's recordings).
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np

from ..description.kinematics import forward_kinematics
from ..description.model import RobotModel
from ..geometry import homogeneous
from ..joint_series import JointSeries
from .bag_scene import BagSceneError, open_reader, stamp_seconds, strip_prefix
from .gltf import WORLD_NODE, _shape_mesh, add_world, build_scene

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
        from pxr import Gf, Sdf, Usd, UsdGeom, Vt
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


def _mesh(stage, path: str, mesh, transform: np.ndarray) -> None:
    Gf, _, _, UsdGeom, Vt = _pxr()
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
        prim.CreateDisplayColorAttr(Vt.Vec3fArray([Gf.Vec3f(*rgba[:3])]))
        prim.CreateDisplayOpacityAttr(Vt.FloatArray([float(rgba[3])]))
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
    """Write the USD stage of ``bag`` to ``out`` (.usdc binary, .usda text; ``world``: a ``robotsim_sim`` WorldSpec
    or None); returns a one-line summary. :class:`UsdUnavailable` without usd-core, :class:`BagSceneError` for a
    path that is no bag."""
    Gf, Sdf, Usd, UsdGeom, _ = _pxr()
    truth, joints, entities, start, description = _recording(bag, model, namespace)
    if model is None and description:  # a record:=true recording: the robot as the bag describes it
        from .replay import model_from_urdf
        model = model_from_urdf(description, 'the robot description in the bag')
    if len(truth) > MAX_SAMPLES:
        raise BagSceneError(f'{bag}: {len(truth)} ground-truth poses; at most {MAX_SAMPLES} are written to a stage')
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    if out.exists():
        out.unlink()  # CreateNew refuses an existing layer
    stage = Usd.Stage.CreateNew(str(out))
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
                _mesh(stage, f'/World/world/{_prim_name(name)}/shape', scene.geometry[geometry], np.eye(4))
            else:
                op.Set(_matrix(Gf, transform))
                _mesh(stage, f'/World/world/{_prim_name(name)}/shape', scene.geometry[geometry], np.eye(4))

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
                      shape.origin.matrix())
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
    size = out.stat().st_size
    return (f'wrote {out} ({size / 1e6:.1f} MB): {len(truth)} time samples over '
            f'{(truth[-1][0] - truth[0][0]) if truth else 0.0:.1f} s; robot {model.name if model else "none"} '
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

