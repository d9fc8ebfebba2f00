"""Bags -> a LeRobot dataset, format ``codebase_version`` v2.1 (``robotsim dataset export``).

Layout written (LeRobot v2.1, as its ``LeRobotDataset`` reads it)::

    OUT/meta/info.json                   features, fps, counts, path templates
    OUT/meta/episodes.jsonl              {"episode_index", "tasks", "length"} per episode
    OUT/meta/tasks.jsonl                 {"task_index", "task"}
    OUT/meta/episodes_stats.jsonl        {"episode_index", "stats": {feature: {min, max, mean, std, count}}}
    OUT/data/chunk-000/episode_000000.parquet

Camera frames are stored in the parquet tables as PNG (the ``image`` feature dtype: a struct of
``bytes`` and ``path``), not as mp4 videos: encoding video needs ffmpeg/PyAV, which the bare
set-up does not install. Image stats are per channel over [0, 1], shaped (3, 1, 1) as LeRobot's.

Alignment: frames at a fixed rate from the first instant every stream has a message to the last;
each stream contributes the message whose header stamp is nearest the frame time, and a frame
where some stream's nearest message is further than ``max_skew`` is rejected (counted). The goal
and the action are held values: the latest ``/goal_pose`` and ``/cmd_vel`` at or before the frame
(a command holds until the next one, as the base controller holds it). A bag without ``/cmd_vel``
(a plain recording) takes the odometry twist as the action, and says so.

Input: a dataset folder (``dataset.json``; pruned episodes skipped) or one bag folder (e.g. a
``robotsim launch sim record:=true`` recording, or one from the real robot: same topics).
"""

from __future__ import annotations

import io
import json
import math
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

CODEBASE_VERSION = 'v2.1'
CHUNKS_SIZE = 1000
DATA_PATH = 'data/chunk-{episode_chunk:03d}/episode_{episode_index:06d}.parquet'
TASK = 'drive to the goal pose without collisions'


class ExportError(RuntimeError):
    """One line for the user (exit status 2 from the CLI)."""


@dataclass
class Streams:
    """One bag's messages by role, as arrays of (stamp_ns, value)."""
    scan: list = field(default_factory=list)
    odom: list = field(default_factory=list)
    imu: list = field(default_factory=list)
    image: list = field(default_factory=list)
    goal: list = field(default_factory=list)
    command: list = field(default_factory=list)
    scan_size: int = 0
    image_shape: tuple | None = None


def _stamp(header) -> int:
    return header.stamp.sec * 1_000_000_000 + header.stamp.nanosec


def _yaw(q) -> float:
    return math.atan2(2 * (q.w * q.z + q.x * q.y), 1 - 2 * (q.y * q.y + q.z * q.z))


def read_streams(bag: Path) -> Streams:
    from rosbags.highlevel import AnyReader
    from rosbags.typesys import Stores, get_typestore

    wanted = {'/scan', '/odom', '/imu/data', '/camera/image_raw', '/goal_pose', '/cmd_vel'}
    streams = Streams()
    try:
        reader = AnyReader([bag], default_typestore=get_typestore(Stores.ROS2_KILTED))
        reader.open()
    except Exception as error:
        raise ExportError(f'{bag}: not a readable rosbag2 bag ({" ".join(str(error).split())})') from None
    try:
        connections = [c for c in reader.connections if c.topic in wanted]
        for connection, timestamp, data in reader.messages(connections=connections):
            message = reader.deserialize(data, connection.msgtype)
            topic = connection.topic
            if topic == '/scan':
                ranges = np.asarray(message.ranges, dtype=np.float32)
                # +Inf (no return) -> range_max, -Inf (too close) -> 0: finite values a network can use.
                ranges = np.where(np.isposinf(ranges), message.range_max, np.where(np.isneginf(ranges), 0.0, ranges))
                streams.scan_size = streams.scan_size or len(ranges)
                if len(ranges) == streams.scan_size:
                    streams.scan.append((_stamp(message.header), np.nan_to_num(ranges)))
            elif topic == '/odom':
                pose, twist = message.pose.pose, message.twist.twist
                streams.odom.append((_stamp(message.header), np.array(
                    [pose.position.x, pose.position.y, _yaw(pose.orientation), twist.linear.x, twist.angular.z],
                    dtype=np.float32)))
            elif topic == '/imu/data':
                a, g = message.linear_acceleration, message.angular_velocity
                streams.imu.append((_stamp(message.header), np.array([a.x, a.y, a.z, g.x, g.y, g.z], dtype=np.float32)))
            elif topic == '/camera/image_raw' and message.encoding == 'rgb8':
                pixels = np.frombuffer(bytes(message.data), dtype=np.uint8).reshape(message.height, message.step)
                pixels = pixels[:, :message.width * 3].reshape(message.height, message.width, 3)
                streams.image_shape = streams.image_shape or pixels.shape
                streams.image.append((_stamp(message.header), pixels))
            elif topic == '/goal_pose':
                p = message.pose
                streams.goal.append((_stamp(message.header), np.array([p.position.x, p.position.y, _yaw(p.orientation)],
                                                                       dtype=np.float32)))
            elif topic == '/cmd_vel':
                # A Twist has no stamp: the bag time (sim time when recorded with sim time) is when it was sent.
                streams.command.append((timestamp, np.array([message.linear.x, message.angular.z], dtype=np.float32)))
    except Exception as error:  # a bag that opens but does not read to its end (corrupted chunks, bad records)
        raise ExportError(f'{bag}: not a readable rosbag2 bag ({type(error).__name__}: '
                          f'{" ".join(str(error).split())})') from None
    finally:
        reader.close()
    return streams


def _nearest(stamps: np.ndarray, times: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Index of the nearest stamp for each time, and the absolute skew (ns)."""
    right = np.clip(np.searchsorted(stamps, times), 0, len(stamps) - 1)
    left = np.clip(right - 1, 0, len(stamps) - 1)
    pick = np.where(np.abs(stamps[left] - times) <= np.abs(stamps[right] - times), left, right)
    return pick, np.abs(stamps[pick] - times)


def _held(stamps: np.ndarray, times: np.ndarray) -> np.ndarray:
    """Index of the latest stamp at or before each time (-1: none yet)."""
    return np.searchsorted(stamps, times, side='right') - 1


@dataclass
class EpisodeFrames:
    columns: dict
    rejected: int
    max_skew_ns: int
    action_source: str


def align(streams: Streams, rate: float, max_skew: float, bag: Path) -> EpisodeFrames:
    required = {'scan': streams.scan, 'odom': streams.odom, 'imu': streams.imu}
    if streams.image:
        required['image'] = streams.image
    missing = [name for name, stream in required.items() if not stream]
    if missing or not (streams.command or streams.odom):
        raise ExportError(f'{bag}: no {", ".join(missing)} messages: expected /scan, /odom, /imu/data '
                          '(and /camera/image_raw when the robot has a camera)')
    sorted_streams = {name: sorted(stream, key=lambda item: item[0]) for name, stream in required.items()}
    stamps = {name: np.array([s for s, _ in stream], dtype=np.int64) for name, stream in sorted_streams.items()}
    start = max(s[0] for s in stamps.values())
    end = min(s[-1] for s in stamps.values())
    period = 1e9 / rate
    times = start + np.round(np.arange(int((end - start) / period) + 1) * period).astype(np.int64)
    limit = round(max_skew * 1e9)
    keep = np.ones(len(times), dtype=bool)
    picks, worst = {}, 0
    for name, stamp_array in stamps.items():
        pick, skew = _nearest(stamp_array, times)
        picks[name] = pick
        keep &= skew <= limit
        worst = max(worst, int(skew[skew <= limit].max()) if (skew <= limit).any() else 0)
    times = times[keep]
    columns = {'timestamp': ((times - times[0]) * 1e-9).astype(np.float32) if len(times) else np.zeros(0, np.float32)}
    columns['observation.state'] = [sorted_streams['odom'][i][1] for i in picks['odom'][keep]]
    columns['observation.scan'] = [sorted_streams['scan'][i][1] for i in picks['scan'][keep]]
    columns['observation.imu'] = [sorted_streams['imu'][i][1] for i in picks['imu'][keep]]
    if 'image' in sorted_streams:
        columns['observation.images.camera'] = [sorted_streams['image'][i][1] for i in picks['image'][keep]]
    if streams.goal:
        goal = sorted(streams.goal, key=lambda item: item[0])
        held = _held(np.array([s for s, _ in goal], dtype=np.int64), times)
        columns['observation.goal'] = [goal[i][1] if i >= 0 else np.full(3, np.nan, np.float32) for i in held]
    if streams.command:
        command = sorted(streams.command, key=lambda item: item[0])
        held = _held(np.array([s for s, _ in command], dtype=np.int64), times)
        columns['action'] = [command[i][1] if i >= 0 else np.zeros(2, np.float32) for i in held]
        source = '/cmd_vel (held)'
    else:
        columns['action'] = [state[3:5].copy() for state in columns['observation.state']]
        source = '/odom twist (the bag has no /cmd_vel)'
    return EpisodeFrames(columns, int((~keep).sum()), worst, source)


FEATURE_NAMES = {
    'observation.state': ['odom_x', 'odom_y', 'odom_yaw', 'linear_velocity', 'angular_velocity'],
    'observation.imu': ['accel_x', 'accel_y', 'accel_z', 'gyro_x', 'gyro_y', 'gyro_z'],
    'observation.goal': ['goal_x', 'goal_y', 'goal_yaw'],
    'action': ['linear_x', 'angular_z'],
}


def _png(pixels: np.ndarray) -> bytes:
    from PIL import Image
    buffer = io.BytesIO()
    Image.fromarray(pixels).save(buffer, format='PNG', optimize=False)
    return buffer.getvalue()


def _stats(values: np.ndarray) -> dict:
    return {'min': values.min(axis=0).tolist(), 'max': values.max(axis=0).tolist(),
            'mean': values.mean(axis=0).tolist(), 'std': values.std(axis=0).tolist(), 'count': [int(len(values))]}


def _image_stats(images: list[np.ndarray]) -> dict:
    stack = np.stack([image[::4, ::4] for image in images]).astype(np.float64) / 255.0  # subsampled, as LeRobot does
    per_channel = stack.reshape(-1, 3)
    def shaped(values):
        return [[[float(v)]] for v in values]
    return {'min': shaped(per_channel.min(axis=0)), 'max': shaped(per_channel.max(axis=0)),
            'mean': shaped(per_channel.mean(axis=0)), 'std': shaped(per_channel.std(axis=0)), 'count': [len(images)]}


def export_lerobot(source: str, out: str, rate: float, max_skew: float | None = None, log=print) -> dict:
    """Write the LeRobot v2.1 dataset; returns info.json's content."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    if not (math.isfinite(rate) and 0 < rate <= 1000):
        raise ExportError(f'--rate: expected frames per second, more than 0 and at most 1000, got {rate:g}')
    max_skew = 0.5 / rate if max_skew is None else max_skew
    if not (math.isfinite(max_skew) and max_skew >= 0):
        raise ExportError(f'--max-skew: expected seconds >= 0, got {max_skew:g}')
    source_dir, out_dir = Path(source), Path(out)
    if (source_dir / 'dataset.json').is_file():
        from .dataset import DatasetError, load_manifest
        try:
            manifest = load_manifest(source_dir / 'dataset.json')
        except DatasetError as error:
            raise ExportError(str(error)) from None
        bags = [source_dir / e['bag'] for e in manifest['episodes'] if not e.get('pruned')]
        if not bags:
            listed = len(manifest['episodes'])
            raise ExportError(f'{source_dir / "dataset.json"}: episodes: no episode to export ('
                              + (f'all {listed} pruned)' if listed else 'the list is empty)'))
    elif (source_dir / 'metadata.yaml').is_file():
        bags = [source_dir]
    else:
        raise ExportError(f'{source}: expected a dataset folder (dataset.json) or a rosbag2 bag folder (metadata.yaml)')
    if out_dir.exists() and not out_dir.is_dir():
        raise ExportError(f'--out {out}: is a file; expected a new or empty folder (nothing was overwritten)')
    try:
        occupied = out_dir.exists() and any(out_dir.iterdir())
    except OSError as error:
        raise ExportError(f'--out {out}: cannot read ({error.strerror or error}); expected a new or empty '
                          'folder') from None
    if occupied:
        raise ExportError(f'--out {out}: exists and is not empty; choose a new folder (nothing was overwritten)')
    # What this export creates, removed again if it fails: the folder (and missing parents), or,
    # in an empty folder that was there, what it writes inside.
    created = [folder for folder in (out_dir, *out_dir.parents) if not folder.exists()]
    try:
        (out_dir / 'meta').mkdir(parents=True, exist_ok=True)
    except OSError as error:
        _remove_created(out_dir, created)
        raise ExportError(f'--out {out}: cannot write there ({error.strerror or error})') from None
    try:
        return _export(bags, out, out_dir, rate, max_skew, log, pa, pq)
    except BaseException:
        _remove_created(out_dir, created)
        raise


def _remove_created(out_dir: Path, created: list[Path]) -> None:
    import shutil
    if created:
        shutil.rmtree(out_dir, ignore_errors=True)
        for folder in created[1:]:  # parents this export created, innermost first, while empty
            try:
                folder.rmdir()
            except OSError:
                break
    else:
        for name in ('meta', 'data'):
            shutil.rmtree(out_dir / name, ignore_errors=True)


def _export(bags: list[Path], out: str, out_dir: Path, rate: float, max_skew: float, log, pa, pq) -> dict:
    features, total_frames, episodes, episode_stats = None, 0, [], []
    worst_skew, rejected = 0, 0
    for episode_index, bag in enumerate(bags):
        frames = align(read_streams(bag), rate, max_skew, bag)
        columns, length = frames.columns, len(frames.columns['timestamp'])
        if length == 0:
            raise ExportError(f'{bag}: no frame within --max-skew {max_skew:g} s of every stream')
        worst_skew, rejected = max(worst_skew, frames.max_skew_ns), rejected + frames.rejected
        these = _features(columns)
        if features is None:
            features = these
        elif these != features:
            raise ExportError(f'{bag}: its features ({", ".join(these)}) differ from the first episode\'s')
        table = {'timestamp': pa.array(columns['timestamp'], pa.float32())}
        stats = {'timestamp': _stats(columns['timestamp'][:, None])}
        for key, spec in features.items():
            if key in ('timestamp', 'frame_index', 'episode_index', 'index', 'task_index'):
                continue
            if spec['dtype'] == 'image':
                images = columns[key]
                table[key] = pa.array([{'bytes': _png(image), 'path': None} for image in images],
                                      pa.struct([('bytes', pa.binary()), ('path', pa.string())]))
                stats[key] = _image_stats(images)
            else:
                values = np.stack(columns[key]).astype(np.float32)
                table[key] = pa.array(list(values), pa.list_(pa.float32(), values.shape[1]))
                stats[key] = _stats(values)
        frame_index = np.arange(length, dtype=np.int64)
        for key, values in (('frame_index', frame_index), ('episode_index', np.full(length, episode_index, np.int64)),
                            ('index', total_frames + frame_index), ('task_index', np.zeros(length, np.int64))):
            table[key] = pa.array(values, pa.int64())
            stats[key] = _stats(values[:, None])
        path = out_dir / DATA_PATH.format(episode_chunk=episode_index // CHUNKS_SIZE, episode_index=episode_index)
        path.parent.mkdir(parents=True, exist_ok=True)
        pq.write_table(pa.table(table), path)
        episodes.append({'episode_index': episode_index, 'tasks': [TASK], 'length': length})
        episode_stats.append({'episode_index': episode_index, 'stats': stats})
        total_frames += length
        log(f'episode {episode_index} ({bag.name}): {length} frames, {frames.rejected} rejected, max skew '
            f'{frames.max_skew_ns * 1e-6:.1f} ms, action from {frames.action_source}')
    info = {'codebase_version': CODEBASE_VERSION, 'robot_type': 'robotsim', 'total_episodes': len(episodes),
            'total_frames': total_frames, 'total_tasks': 1, 'total_videos': 0,
            'total_chunks': (len(episodes) - 1) // CHUNKS_SIZE + 1, 'chunks_size': CHUNKS_SIZE, 'fps': int(rate) if float(rate).is_integer() else rate,
            'splits': {'train': f'0:{len(episodes)}'}, 'data_path': DATA_PATH, 'video_path': None,
            'features': features}
    _write_json(out_dir / 'meta' / 'info.json', info)
    _write_jsonl(out_dir / 'meta' / 'episodes.jsonl', episodes)
    _write_jsonl(out_dir / 'meta' / 'tasks.jsonl', [{'task_index': 0, 'task': TASK}])
    _write_jsonl(out_dir / 'meta' / 'episodes_stats.jsonl', episode_stats)
    log(f'wrote LeRobot {CODEBASE_VERSION} dataset {out}: {len(episodes)} episodes, {total_frames} frames at {rate:g} Hz; '
        f'max skew {worst_skew * 1e-6:.1f} ms (limit {max_skew * 1e3:.1f} ms), {rejected} frames rejected')
    return info


def _features(columns: dict) -> dict:
    features = {}
    for key, values in columns.items():
        if key == 'timestamp':
            continue
        if key.startswith('observation.images.'):
            features[key] = {'dtype': 'image', 'shape': list(values[0].shape), 'names': ['height', 'width', 'channel']}
        else:
            width = len(values[0])
            features[key] = {'dtype': 'float32', 'shape': [width],
                             'names': FEATURE_NAMES.get(key, [f'beam_{i}' for i in range(width)] if key == 'observation.scan'
                                                        else None)}
    features['timestamp'] = {'dtype': 'float32', 'shape': [1], 'names': None}
    for key in ('frame_index', 'episode_index', 'index', 'task_index'):
        features[key] = {'dtype': 'int64', 'shape': [1], 'names': None}
    return features


def _write_json(path: Path, document) -> None:
    path.write_text(json.dumps(document, indent=4) + '\n', encoding='utf-8')


def _write_jsonl(path: Path, rows) -> None:
    path.write_text(''.join(json.dumps(row) + '\n' for row in rows), encoding='utf-8')
