"""What a recording says about the scene to render: ROS-free, read with rosbags.

From a rosbag2 bag (a ``robotsim dataset`` episode or a ``record:=true`` recording): the camera's
``CameraInfo`` (intrinsics, size, optical frame, and the stamps of its frames), the robot's true
pose (``/sim/ground_truth``), its joint positions (``/joint_states``), the simulator's segmentation
label table when the camera recorded one, the seed on ``/sim/status`` when recorded, and (for
comparisons) the simulator's own depth and segmentation images.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
from robotsim_core.contract import ENTITIES_TOPIC
from robotsim_core.joint_series import JointSeries


class RecordingError(RuntimeError):
    """One line for the user: the bag, the topic or field, and what was expected."""


@dataclass
class CameraIntrinsics:
    width: int
    height: int
    fx: float
    fy: float
    cx: float
    cy: float
    frame_id: str
    distortion_model: str
    distortion: list[float]

    def as_dict(self) -> dict:
        return {'width': self.width, 'height': self.height, 'fx': self.fx, 'fy': self.fy, 'cx': self.cx,
                'cy': self.cy, 'frame_id': self.frame_id, 'distortion_model': self.distortion_model,
                'distortion': self.distortion}


@dataclass
class Recording:
    bag: Path
    camera: str
    intrinsics: CameraIntrinsics
    frame_stamps: np.ndarray                  # ns, one per recorded camera frame, in order
    truth_stamps: np.ndarray                  # ns
    truth_positions: np.ndarray               # (N, 3) world
    truth_quaternions: np.ndarray             # (N, 4) w, x, y, z
    truth_frame: str                          # child_frame_id: the robot's root link
    joints: JointSeries                       # /joint_states merged by joint name across publishers
    labels: dict[int, str] | None = None      # the simulator's label table (segmentation recorded)
    seed: int | None = None                   # /sim/status seed, when recorded
    topics: set[str] = field(default_factory=set)
    entities: dict[str, tuple[np.ndarray, np.ndarray, np.ndarray]] = field(default_factory=dict)
    """/sim/entities: the world's free bodies, name -> (stamps ns, positions (N, 3), quaternions (N, 4) w x y z)."""


def _stamp(header) -> int:
    return header.stamp.sec * 1_000_000_000 + header.stamp.nanosec


def _open(bag: Path):
    from rosbags.highlevel import AnyReader
    from rosbags.typesys import Stores, get_typestore

    try:
        reader = AnyReader([bag], default_typestore=get_typestore(Stores.ROS2_KILTED))
        reader.open()
    except Exception as error:
        raise RecordingError(f'{bag}: not a readable rosbag2 bag ({" ".join(str(error).split())})') from None
    return reader


def camera_info_topic(topics: set[str], camera: str) -> str:
    for topic in (f'/{camera}/camera_info', f'/{camera}/depth/camera_info', f'/{camera}/segmentation/camera_info'):
        if topic in topics:
            return topic
    cameras = sorted({t.split('/')[1] for t in topics if t.endswith('/camera_info')})
    raise RecordingError(f'--camera {camera}: the bag has no /{camera}/camera_info; expected one of '
                         f'{", ".join(cameras) or "(no camera recorded)"}')


def read_recording(bag: Path, camera: str) -> Recording:
    reader = _open(bag)
    try:
        topics = {c.topic for c in reader.connections}
        info_topic = camera_info_topic(topics, camera)
        for needed, what in (('/sim/ground_truth', "the robot's true pose"), ('/joint_states', 'its joint positions')):
            if needed not in topics:
                raise RecordingError(f'{bag}: no {needed} topic ({what}); expected a recording of the simulator '
                                     '(robotsim dataset generate, or robotsim launch sim record:=true)')
        labels_topic = f'/{camera}/segmentation/labels'
        wanted = {info_topic, '/sim/ground_truth', '/joint_states', labels_topic, '/sim/status', ENTITIES_TOPIC}
        entities: dict[str, list] = {}
        intrinsics, frames, truth, joints, labels, seed = None, [], [], JointSeries(), None, None
        truth_frame = ''
        for connection, _, data in reader.messages(connections=[c for c in reader.connections if c.topic in wanted]):
            message = reader.deserialize(data, connection.msgtype)
            topic = connection.topic
            if topic == info_topic:
                frames.append(_stamp(message.header))
                if intrinsics is None:
                    k = [float(v) for v in message.k]
                    intrinsics = CameraIntrinsics(int(message.width), int(message.height), k[0], k[4], k[2], k[5],
                                                  message.header.frame_id, message.distortion_model,
                                                  [float(v) for v in message.d])
            elif topic == '/sim/ground_truth':
                p, q = message.pose.pose.position, message.pose.pose.orientation
                truth.append((_stamp(message.header), p.x, p.y, p.z, q.w, q.x, q.y, q.z))
                truth_frame = message.child_frame_id
            elif topic == '/joint_states':
                joints.add(_stamp(message.header), message.name, message.position)
            elif topic == ENTITIES_TOPIC:
                for transform in message.transforms:
                    p, q = transform.transform.translation, transform.transform.rotation
                    entities.setdefault(transform.child_frame_id, []).append(
                        (_stamp(transform.header), p.x, p.y, p.z, q.w, q.x, q.y, q.z))
            elif topic == labels_topic:
                labels = {int(key): name for key, name in json.loads(message.data).items()}
            elif topic == '/sim/status' and seed is None:
                seed = int(message.seed)
    finally:
        reader.close()
    if not frames:
        raise RecordingError(f'{bag}: {info_topic} has no messages; expected the camera\'s frames')
    if not truth or not joints:
        raise RecordingError(f'{bag}: {"/sim/ground_truth" if not truth else "/joint_states"} has no messages')
    _check_intrinsics(bag, info_topic, intrinsics)
    truth_array = np.array(sorted(truth), dtype=float)
    return Recording(bag, camera, intrinsics, np.array(sorted(frames), dtype=np.int64),
                     truth_array[:, 0].astype(np.int64), truth_array[:, 1:4], truth_array[:, 4:8], truth_frame,
                     joints, labels, seed, topics, {name: _pose_series(rows) for name, rows in entities.items()})


def _pose_series(rows: list) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    array = np.array(sorted(rows), dtype=float)
    return array[:, 0].astype(np.int64), array[:, 1:4], array[:, 4:8]


def _check_intrinsics(bag: Path, topic: str, k: CameraIntrinsics) -> None:
    if k.width <= 0 or k.height <= 0:
        raise RecordingError(f'{bag}: {topic}: width/height: expected a positive image size, got {k.width}x{k.height}')
    if not all(math.isfinite(v) for v in (k.fx, k.fy, k.cx, k.cy)) or k.fx <= 0 or k.fy <= 0:
        raise RecordingError(f'{bag}: {topic}: k: expected finite intrinsics with fx, fy > 0, got '
                             f'fx={k.fx:g} fy={k.fy:g} cx={k.cx:g} cy={k.cy:g}')
    if any(abs(v) > 0 for v in k.distortion):
        # A pinhole camera renders no distortion: rendering a distorted camera would need remapping.
        raise RecordingError(f'{bag}: {topic}: d: expected zero distortion (a pinhole camera, as the simulator '
                             f'records), got {k.distortion_model} {k.distortion}')


def interpolate_pose(recording: Recording, stamp: int) -> tuple[np.ndarray, np.ndarray]:
    """The root link's world pose at ``stamp``: linear in position, spherical-linear in orientation
    between the two ground-truth samples around it (held at either end)."""
    return interpolate_series(recording.truth_stamps, recording.truth_positions, recording.truth_quaternions, stamp)


def interpolate_series(stamps: np.ndarray, positions: np.ndarray, quaternions: np.ndarray,
                       stamp: int) -> tuple[np.ndarray, np.ndarray]:
    """A pose series (sorted stamps ns, positions, quaternions w x y z) at ``stamp``: linear in position,
    spherical-linear in orientation between the samples around it, held at either end."""
    after = int(np.searchsorted(stamps, stamp))
    if after == 0 or (after < len(stamps) and stamps[after] == stamp):
        index = min(after, len(stamps) - 1)
        return positions[index].copy(), quaternions[index].copy()
    if after >= len(stamps):
        return positions[-1].copy(), quaternions[-1].copy()
    before = after - 1
    t = (stamp - stamps[before]) / (stamps[after] - stamps[before])
    position = (1 - t) * positions[before] + t * positions[after]
    return position, _slerp(quaternions[before], quaternions[after], t)


def _slerp(a: np.ndarray, b: np.ndarray, t: float) -> np.ndarray:
    a, b = a / np.linalg.norm(a), b / np.linalg.norm(b)
    dot = float(np.dot(a, b))
    if dot < 0:
        b, dot = -b, -dot
    if dot > 0.9995:
        q = a + t * (b - a)
        return q / np.linalg.norm(q)
    angle = math.acos(dot)
    return (math.sin((1 - t) * angle) * a + math.sin(t * angle) * b) / math.sin(angle)


def read_images(bag: Path, topic: str, stamps: set[int] | None = None) -> dict[int, np.ndarray]:
    """``sensor_msgs/Image`` frames of ``topic`` by header stamp (rgb8, 32FC1 or 32SC1), for comparisons."""
    dtypes = {'rgb8': (np.uint8, 3), '32FC1': (np.float32, 1), '32SC1': (np.int32, 1), 'mono8': (np.uint8, 1)}
    reader = _open(bag)
    images = {}
    try:
        connections = [c for c in reader.connections if c.topic == topic]
        if not connections:
            raise RecordingError(f'{bag}: no {topic} topic')
        for connection, _, data in reader.messages(connections=connections):
            message = reader.deserialize(data, connection.msgtype)
            stamp = _stamp(message.header)
            if stamps is not None and stamp not in stamps:
                continue
            if message.encoding not in dtypes:
                raise RecordingError(f'{bag}: {topic}: encoding: expected one of {", ".join(dtypes)}, '
                                     f'got {message.encoding!r}')
            dtype, channels = dtypes[message.encoding]
            pixels = np.frombuffer(bytes(message.data), dtype=dtype).reshape(message.height, -1)
            pixels = pixels[:, :message.width * channels].reshape(message.height, message.width, channels)
            images[stamp] = pixels[..., 0].copy() if channels == 1 else pixels.copy()
    finally:
        reader.close()
    return images
