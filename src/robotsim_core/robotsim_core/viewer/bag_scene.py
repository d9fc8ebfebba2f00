"""A rosbag2 bag -> the scene data the replay page animates (plain JSON-able dicts), read with ``rosbags``.

What is read (topics under ``/<namespace>`` when one is given, frame ids with its ``<namespace>/`` prefix
removed):

- the base pose: ``/sim/ground_truth`` in ``world`` (simulation), else ``/odom``, else the TF
  ``odom -> <root link>``; the page's fixed frame is that topic's frame;
- ``/odom`` as a trail anchored at the ground-truth pose of its first message (as the run report does);
- ``/tf`` (per parent -> child edge, thinned to ``max_pose_rate``) and ``/tf_static``;
- ``/joint_states`` with the description's moving joints, for links no TF edge moves (dataset bags carry
  no joint TF);
- ``/scan`` (LaserScan ranges as 16-bit integers, ``range_max / 65534`` per step, 65535 = no return);
- ``/camera/image_raw`` (or ``.../compressed``), thinned to ``max_image_rate`` and re-encoded as JPEG;
- ``/goal_pose`` (the episode goal, PoseStamped in ``odom``) as a marker;
- ``/sim/entities`` (the world's free bodies, ``world`` -> body) moving the world's nodes of those names;
- vectors drawn as arrows at their frames (:data:`VECTOR_SOURCES`): the commanded velocity ``/cmd_vel``
  (Twist or TwistStamped) and the actual one (``/odom``'s twist) at the base, every
  ``geometry_msgs/WrenchStamped`` topic's force (a wrist force-torque sensor) and every
  ``ros_gz_interfaces/Contacts`` topic's total force on its link (a bumper), at the mean contact point.

What is missing (no TF, no robot description, no pose of the robot, ...) becomes a line in ``notes``
that the page shows; only a path that is no bag at all is an error (:class:`BagSceneError`).
"""

from __future__ import annotations

import base64
import io
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from ..description.model import RobotModel
from ..geometry import homogeneous, matrix_to_rpy, rpy_to_quat
from ..contract import ENTITIES_TOPIC
from ..joint_series import JointSeries

MAX_POSE_RATE = 30.0
"""Hz: TF edges and joint states are kept at most this often (the page interpolates between samples)."""
MAX_IMAGE_RATE = 5.0
"""Hz: camera frames kept for the page (each a JPEG inside the HTML file)."""
JPEG_QUALITY = 80
"""Quality of the re-encoded camera frames (Pillow's 1-95 scale)."""
MAX_IMAGE_WIDTH = 480
"""Wider camera frames are scaled down to this many pixels."""
DIGITS = 5
"""Decimals kept for positions (m) and quaternion components: 10 um, far below what the eye sees."""
SCAN_NO_RETURN = 65535
"""Encoded range meaning no return (inf, NaN, below range_min or above range_max)."""
ARROW_LENGTH = 0.5
"""Metres the longest arrow of a vector series is drawn (each series is scaled to it; its legend says the scale)."""
VECTOR_SOURCES = {
    'commanded velocity': ('cmd_vel', 'm/s', '#ffd23f'),
    'actual velocity': ('odom', 'm/s', '#3ddc84'),
    'geometry_msgs/msg/WrenchStamped': (None, 'N', '#c77dff'),
    'ros_gz_interfaces/msg/Contacts': (None, 'N', '#ff6b35'),
}
"""Vector series: (topic, unit, colour) by name, or by message type for every topic of that type."""


class BagSceneError(ValueError):
    """The path is not a readable rosbag2 bag (one line, for the command line)."""


@dataclass
class Topics:
    """Topic names of one robot's bag (``namespace`` applied)."""

    namespace: str = ''

    def __call__(self, name: str) -> str:
        return f'/{self.namespace.strip("/")}/{name}' if self.namespace.strip('/') else f'/{name}'


@dataclass
class SceneData:
    """What :func:`read_bag` gathers; :meth:`as_json` is the page's ``DATA`` object."""

    source: str
    start: float = 0.0
    duration: float = 0.0
    fixed_frame: str = 'world'
    base: dict | None = None
    odom_trail: dict | None = None
    tf: dict = field(default_factory=dict)
    tf_static: dict = field(default_factory=dict)
    joints: dict = field(default_factory=dict)
    joint_states: dict | None = None
    scan: dict | None = None
    camera: dict | None = None
    goal: dict | None = None
    vectors: list = field(default_factory=list)
    topics: dict = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    robot_description: str | None = None

    def as_json(self) -> dict:
        data = {key: value for key, value in self.__dict__.items() if key != 'robot_description'}
        return data


def _r(value: float) -> float:
    return round(float(value), DIGITS)


def stamp_seconds(header) -> float:
    return header.stamp.sec + header.stamp.nanosec * 1e-9


def pose7(position, orientation) -> list[float]:
    return [_r(position.x), _r(position.y), _r(position.z),
            _r(orientation.x), _r(orientation.y), _r(orientation.z), _r(orientation.w)]


def pose_matrix(pose) -> np.ndarray:
    x, y, z, qx, qy, qz, qw = pose
    import transforms3d.quaternions as t3q
    return homogeneous(t3q.quat2mat((qw, qx, qy, qz)), (x, y, z))


class Thinner:
    """Keeps a sample when at least 1/rate seconds have passed since the last kept one."""

    def __init__(self, rate: float):
        self.period = 1.0 / rate if rate > 0 else 0.0
        self.last: dict = {}

    def keep(self, key, t: float) -> bool:
        last = self.last.get(key)
        if last is not None and t < last + self.period - 1e-9:
            return False
        self.last[key] = t
        return True


def strip_prefix(frame: str, prefix: str) -> str:
    frame = frame.lstrip('/')
    return frame[len(prefix):] if prefix and frame.startswith(prefix) else frame


def encode_image(message, encoding_hint: str = '') -> str | None:
    """A sensor_msgs Image (rgb8, bgr8, rgba8, bgra8, mono8) or CompressedImage as a JPEG data URL."""
    from PIL import Image

    if hasattr(message, 'format'):  # CompressedImage: JPEG/PNG already
        kind = 'png' if 'png' in message.format.lower() else 'jpeg'
        return f'data:image/{kind};base64,' + base64.b64encode(bytes(message.data)).decode('ascii')
    channels = {'rgb8': 3, 'bgr8': 3, 'rgba8': 4, 'bgra8': 4, 'mono8': 1}.get(message.encoding)
    if channels is None:
        return None
    rows = np.frombuffer(bytes(message.data), dtype=np.uint8).reshape(message.height, message.step)
    pixels = rows[:, :message.width * channels].reshape(message.height, message.width, channels)
    if message.encoding.startswith('bgr'):
        pixels = pixels[..., [2, 1, 0]]
    elif channels == 4:
        pixels = pixels[..., :3]
    image = Image.fromarray(pixels[..., 0] if channels == 1 else np.ascontiguousarray(pixels[..., :3]))
    if image.width > MAX_IMAGE_WIDTH:
        image = image.resize((MAX_IMAGE_WIDTH, round(image.height * MAX_IMAGE_WIDTH / image.width)))
    buffer = io.BytesIO()
    image.save(buffer, format='JPEG', quality=JPEG_QUALITY)
    return 'data:image/jpeg;base64,' + base64.b64encode(buffer.getvalue()).decode('ascii')


def encode_scan(ranges, range_min: float, range_max: float) -> str:
    """LaserScan ranges as base64 little-endian uint16, ``range_max / 65534`` m per step."""
    values = np.asarray(ranges, dtype=np.float64)
    valid = np.isfinite(values) & (values >= range_min) & (values <= range_max)
    scale = 65534.0 / range_max if range_max > 0 else 0.0
    encoded = np.full(values.shape, SCAN_NO_RETURN, dtype='<u2')
    encoded[valid] = np.round(values[valid] * scale).astype('<u2')
    return base64.b64encode(encoded.tobytes()).decode('ascii')


def joint_table(model: RobotModel) -> dict:
    """The description's moving joints as the page computes them from /joint_states: the child link's
    local transform is origin x motion(position) about/along ``axis``; mimic joints follow their leader."""
    joints = {}
    for joint in model.tree.moving_joints():
        quat = rpy_to_quat(joint.origin.rpy)  # (w, x, y, z)
        joints[joint.name] = {
            'parent': joint.parent, 'child': joint.child, 'type': joint.type,
            'origin': [*(float(v) for v in joint.origin.xyz), float(quat[1]), float(quat[2]), float(quat[3]),
                       float(quat[0])],
            'axis': [float(v) for v in joint.axis],
            'mimic': [joint.mimic.joint, joint.mimic.multiplier, joint.mimic.offset] if joint.mimic else None,
        }
    return joints


def open_reader(bag: str | Path):
    """A rosbags AnyReader on ``bag`` (a bag folder or its .mcap/.db3 file), or BagSceneError."""
    from rosbags.highlevel import AnyReader

    path = Path(bag)
    if not path.exists():
        raise BagSceneError(f'{bag}: no such bag (expected a rosbag2 folder with metadata.yaml)')
    if path.is_file() and path.parent.joinpath('metadata.yaml').is_file():
        path = path.parent
    try:
        reader = AnyReader([path])
        reader.open()
    except Exception as error:  # rosbags raises its own types per format: one line for any of them
        raise BagSceneError(f'{bag}: not a readable rosbag2 bag ({" ".join(str(error).split())})') from None
    return reader


def read_bag(bag: str | Path, model: RobotModel | None = None, namespace: str = '',
             max_pose_rate: float = MAX_POSE_RATE, max_image_rate: float = MAX_IMAGE_RATE,
             camera_topic: str = 'camera/image_raw') -> SceneData:
    """Gather the scene data of one robot of ``bag`` (see the module docstring)."""
    topic = Topics(namespace)
    prefix = f'{namespace.strip("/")}/' if namespace.strip('/') else ''
    reader = open_reader(bag)
    try:
        return _read(reader, Path(bag), model, topic, prefix, max_pose_rate, max_image_rate, camera_topic)
    finally:
        reader.close()


def _read(reader, bag: Path, model, topic, prefix, max_pose_rate, max_image_rate, camera_topic) -> SceneData:
    data = SceneData(source=bag.name)
    connections = {c.topic: c for c in reader.connections}
    data.topics = {c.topic: c.msgcount for c in reader.connections}
    start = reader.start_time * 1e-9
    data.start = start
    data.duration = max(0.0, (reader.end_time - reader.start_time) * 1e-9)
    camera_names = [topic(camera_topic), topic(camera_topic) + '/compressed']
    vector_types = {kind for kind, (name, _, _) in VECTOR_SOURCES.items() if name is None}
    vector_topics = {c.topic for c in reader.connections if c.msgtype in vector_types} | {topic('cmd_vel')}
    wanted = {topic('sim/ground_truth'), topic('odom'), topic('tf'), topic('tf_static'), topic('joint_states'),
              topic('scan'), topic('robot_description'), topic('goal_pose'), ENTITIES_TOPIC, *camera_names,
              *vector_topics}
    present = [connections[name] for name in wanted if name in connections]
    vectors: dict[str, dict] = {}
    camera_name = next((name for name in camera_names if name in connections), None)

    truth, odom, tf_base = [], [], []
    tf: dict[str, dict] = {}
    entities: dict[str, dict] = {}
    joints = JointSeries()
    scans: list[tuple[float, str]] = []
    scan_info = None
    images: list[tuple[float, str]] = []
    goal = None
    thin = Thinner(max_pose_rate)
    thin_images = Thinner(max_image_rate)
    root = model.tree.root() if model is not None else 'base_footprint'
    for connection, bag_time, raw in reader.messages(connections=present):
        name = connection.topic
        if name in camera_names:
            if name != camera_name or not thin_images.keep('camera', bag_time * 1e-9):
                continue  # decode only the frames that are kept: images are most of a bag's bytes
        message = reader.deserialize(raw, connection.msgtype)
        if name == topic('sim/ground_truth'):
            truth.append((stamp_seconds(message.header) - start, pose7(message.pose.pose.position,
                                                                  message.pose.pose.orientation),
                          strip_prefix(message.child_frame_id, prefix)))
        elif name == topic('odom'):
            t = stamp_seconds(message.header) - start
            odom.append((t, pose7(message.pose.pose.position, message.pose.pose.orientation)))
            if thin.keep('actual velocity', t):
                _add_vector(vectors, 'actual velocity', name, strip_prefix(message.child_frame_id, prefix), t,
                            message.twist.twist.linear)
        elif name in vector_topics:
            header = getattr(message, 'header', None)
            t = (stamp_seconds(header) if header is not None else bag_time * 1e-9) - start
            if not thin.keep(('vector', name), t):
                continue
            if name == topic('cmd_vel'):
                twist = getattr(message, 'twist', message)  # TwistStamped or Twist
                _add_vector(vectors, 'commanded velocity', name, root, t, twist.linear)
            elif connection.msgtype == 'geometry_msgs/msg/WrenchStamped':
                _add_vector(vectors, name, name, strip_prefix(header.frame_id, prefix), t, message.wrench.force,
                            kind=connection.msgtype)
            else:  # ros_gz_interfaces/Contacts: the total force on the sensed link, at the mean contact point
                wrenches = [w.body_1_wrench.force for c in message.contacts for w in c.wrenches]
                points = [p for c in message.contacts for p in c.positions]
                total = [sum(getattr(f, axis) for f in wrenches) for axis in 'xyz']
                at = [sum(getattr(p, axis) for p in points) / len(points) for axis in 'xyz'] if points else None
                _add_vector(vectors, name, name, strip_prefix(header.frame_id, prefix), t, total,
                            kind=connection.msgtype, at=at)
        elif name == ENTITIES_TOPIC:
            # The world's free bodies (world -> body): drawn as TF edges of the world's nodes of that name.
            for transform in message.transforms:
                t = stamp_seconds(transform.header) - start
                if thin.keep(('entity', transform.child_frame_id), t):
                    edge = entities.setdefault(transform.child_frame_id, {'parent': 'world', 't': [], 'pose': []})
                    edge['t'].append(round(t, 6))
                    edge['pose'].append(pose7(transform.transform.translation, transform.transform.rotation))
        elif name in (topic('tf'), topic('tf_static')):
            for transform in message.transforms:
                parent, child = strip_prefix(transform.header.frame_id, prefix), strip_prefix(transform.child_frame_id, prefix)
                pose = pose7(transform.transform.translation, transform.transform.rotation)
                if name == topic('tf_static'):
                    data.tf_static[child] = {'parent': parent, 'pose': pose}
                    continue
                t = stamp_seconds(transform.header) - start
                if parent == 'odom' and child == root:
                    tf_base.append((t, pose))
                    continue
                if not thin.keep(('tf', child), t):
                    continue
                edge = tf.setdefault(child, {'parent': parent, 't': [], 'pose': []})
                edge['t'].append(round(t, 6))
                edge['pose'].append(pose)
        elif name == topic('joint_states'):
            joints.add(message.header.stamp.sec * 1_000_000_000 + message.header.stamp.nanosec, message.name,
                       message.position)
        elif name == topic('scan'):
            scan_info = scan_info or {'frame': strip_prefix(message.header.frame_id, prefix),
                                      'angle_min': float(message.angle_min),
                                      'angle_increment': float(message.angle_increment),
                                      'range_min': float(message.range_min), 'range_max': float(message.range_max),
                                      'count': len(message.ranges)}
            if len(message.ranges) == scan_info['count']:
                scans.append((stamp_seconds(message.header) - start,
                              encode_scan(message.ranges, message.range_min, scan_info['range_max'])))
        elif name == camera_name:
            encoded = encode_image(message)
            if encoded is not None:
                images.append((stamp_seconds(message.header) - start, encoded))
        elif name == topic('robot_description'):
            data.robot_description = str(message.data)
        elif name == topic('goal_pose'):
            goal = {'frame': strip_prefix(message.header.frame_id, prefix),
                    'pose': pose7(message.pose.position, message.pose.orientation)}

    _base_and_trails(data, truth, odom, tf_base, root, topic)
    data.tf = {child: edge for child, edge in tf.items() if child != root}
    data.tf.update({name: edge for name, edge in entities.items() if name not in data.tf})
    if model is not None:
        data.joints = joint_table(model)
    if joints:
        # Merged by joint name across publishers, each joint interpolated on its own stamps, then sampled
        # on one grid (every stamp of any publisher, thinned) for the page.
        times = [t for t in (stamp * 1e-9 - start for stamp in joints.stamps()) if thin.keep('joint_states', t)]
        stamps = [round((t + start) * 1e9) for t in times]
        positions = [[_r(p) for p in row] for row in joints.resample(stamps)]
        data.joint_states = {'names': list(joints.names), 't': [round(t, 6) for t in times], 'position': positions}
    if scans:
        data.scan = {**scan_info, 't': [round(t, 6) for t, _ in scans], 'ranges': [r for _, r in scans]}
    if images:
        data.camera = {'topic': camera_name, 't': [round(t, 6) for t, _ in images], 'frames': [f for _, f in images]}
    if goal is not None:
        data.goal = _goal_in_fixed_frame(goal, data)
    data.vectors = [_scaled(series) for series in vectors.values()]
    _missing_notes(data, topic, model, camera_names)
    return data


def _add_vector(vectors: dict, name: str, topic_name: str, frame: str, t: float, vector, kind: str | None = None,
                at=None) -> None:
    """One sample of a vector series (``vector``: a Vector3 or three numbers; ``at``: where it starts in its
    frame, default the frame's origin)."""
    values = [float(getattr(vector, axis)) for axis in 'xyz'] if hasattr(vector, 'x') else [float(v) for v in vector]
    _, unit, colour = VECTOR_SOURCES[kind or name]
    series = vectors.setdefault(name, {'name': name, 'topic': topic_name, 'frame': frame, 'unit': unit,
                                       'colour': colour, 't': [], 'v': [], 'at': []})
    series['t'].append(round(t, 6))
    series['v'].append([_r(v) for v in values])
    series['at'].append([_r(v) for v in (at or (0.0, 0.0, 0.0))])


def _scaled(series: dict) -> dict:
    """The series with its drawing scale (m of arrow per unit): the longest arrow :data:`ARROW_LENGTH`."""
    longest = max((float(np.linalg.norm(v)) for v in series['v']), default=0.0)
    series['scale'] = ARROW_LENGTH / longest if longest > 1e-9 else 1.0
    if not any(any(row) for row in series['at']):
        del series['at']  # every arrow starts at its frame's origin
    return series


def _base_and_trails(data: SceneData, truth, odom, tf_base, root: str, topic) -> None:
    if truth:
        data.fixed_frame = 'world'
        data.base = {'source': topic('sim/ground_truth'), 'frame': truth[0][2],
                     't': [round(t, 6) for t, _, _ in truth], 'pose': [p for _, p, _ in truth]}
    elif odom or tf_base:
        series = odom or tf_base
        data.fixed_frame = 'odom'
        data.base = {'source': topic('odom') if odom else topic('tf') + f' odom -> {root}', 'frame': root,
                     't': [round(t, 6) for t, _ in series], 'pose': [p for _, p in series]}
    if odom:
        anchor = np.eye(4)
        if truth:
            # World <- odom: the ground-truth pose at the first odometry message's time.
            t0 = odom[0][0]
            nearest = min(truth, key=lambda sample: abs(sample[0] - t0))
            anchor = pose_matrix(nearest[1]) @ np.linalg.inv(pose_matrix(odom[0][1]))
        xyz = []
        for _, pose in odom:
            point = anchor @ np.array([pose[0], pose[1], pose[2], 1.0])
            xyz.append([_r(point[0]), _r(point[1]), _r(point[2])])
        data.odom_trail = {'t': [round(t, 6) for t, _ in odom], 'xyz': xyz, 'anchor': anchor.round(9).tolist()}


def _goal_in_fixed_frame(goal: dict, data: SceneData) -> dict:
    position = np.array([*goal['pose'][:3], 1.0])
    if goal['frame'] == 'odom' and data.fixed_frame == 'world' and data.odom_trail is not None:
        position = np.array(data.odom_trail['anchor']) @ position
    return {'frame': goal['frame'], 'xyz': [_r(v) for v in position[:3]]}


def _missing_notes(data: SceneData, topic, model, camera_names) -> None:
    notes = data.notes
    if data.base is None:
        notes.append(f'no pose of the robot in this bag ({topic("sim/ground_truth")}, {topic("odom")} or TF '
                     'odom -> base): the robot stands at the origin')
    elif data.fixed_frame == 'odom':
        notes.append(f'no {topic("sim/ground_truth")} (a real robot\'s bag?): the robot is placed by '
                     f'{data.base["source"]} and the fixed frame is odom')
    if topic('tf') not in data.topics and topic('tf_static') not in data.topics:
        notes.append(f'no TF in this bag ({topic("tf")}, {topic("tf_static")})' +
                     (': the joints move from /joint_states' if data.joint_states else ': the links stand still'))
    if model is None:
        notes.append('no robot description (no robot.yaml beside the bag, no '
                     f'{topic("robot_description")} in it, no --robot): the robot is drawn as a frame only')
    if data.scan is None:
        notes.append(f'no {topic("scan")} in this bag: no lidar points')
    if data.camera is None:
        notes.append(f'no camera image ({camera_names[0]}) in this bag')


def pose_yaw(pose) -> float:
    """Heading of a [x, y, z, qx, qy, qz, qw] pose (for tests and summaries)."""
    return matrix_to_rpy(pose_matrix(pose)[:3, :3])[2]


def summary_line(data: SceneData) -> str:
    parts = [f'{data.duration:.1f} s', f'base from {data.base["source"]}' if data.base else 'no base pose']
    parts.append(f'{len(data.tf)} TF edges')
    if data.scan:
        parts.append(f'{len(data.scan["t"])} scans')
    if data.camera:
        parts.append(f'{len(data.camera["t"])} camera frames')
    return ', '.join(parts)

