"""Bags -> a LeRobot dataset, format ``codebase_version`` v3.0 (``robotsim dataset export --format lerobot``).

Layout written (LeRobot v3.0, as ``lerobot.datasets.lerobot_dataset.LeRobotDataset`` 0.4 reads it)::

    OUT/meta/info.json                                 features, fps, counts, path templates
    OUT/meta/stats.json                                min, max, mean, std, count, q01..q99 per feature
    OUT/meta/tasks.parquet                             task text (the index) -> task_index
    OUT/meta/episodes/chunk-000/file-000.parquet       one row per episode: length, its rows in the data
                                                       files, its task, its own stats
    OUT/data/chunk-000/file-000.parquet                every frame, episodes one after the other (a new
                                                       file after DATA_FILE_MB, a new chunk after CHUNKS_SIZE files)

Camera frames are stored in the parquet tables as PNG images (feature dtype ``image``: a struct of
``bytes`` and ``path``, with the ``huggingface`` schema metadata that makes ``datasets`` decode them),
not as videos: an image dataset needs no video decoder in the reader's environment. Image stats are
per channel over [0, 1], shaped (3, 1, 1) as LeRobot's, from a fixed sample of pixels per frame.

Alignment: frames at a fixed rate from the first instant every stream has a message to the last;
each stream contributes the message whose header stamp is nearest the frame time, and a frame where
some stream's nearest message is further than ``max_skew`` is rejected. A LeRobot episode has no
gaps (``timestamp`` is ``frame_index / fps``), so a rejected frame ends the episode there and the
next kept frame starts a new one (the summary counts these splits). The goal and the action are held
values: the latest ``/goal_pose`` and ``/cmd_vel`` at or before the frame (a command holds until the
next one, as the base controller holds it). A bag without ``/cmd_vel`` (a plain recording) takes the
odometry twist as the action, and says so. The task text comes from the driver (a dataset's
``settings.driver``; for a single bag, whether it has a goal): a wander run has no goal.

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

CODEBASE_VERSION = 'v3.0'
CHUNKS_SIZE = 1000
"""Files per chunk folder (LeRobot's default)."""
DATA_FILE_MB = 100
"""A data file is closed once it holds about this many MB (LeRobot's default); the next episode starts another."""
DATA_PATH = 'data/chunk-{chunk_index:03d}/file-{file_index:03d}.parquet'
EPISODES_PATH = 'meta/episodes/chunk-{chunk_index:03d}/file-{file_index:03d}.parquet'
GOAL_TASK = 'drive to the goal pose without collisions'
WANDER_TASK = 'drive around without collisions'
QUANTILES = (('q01', 0.01), ('q10', 0.10), ('q50', 0.50), ('q90', 0.90), ('q99', 0.99))
IMAGE_SAMPLE_PIXELS = 1024
"""Pixels per frame (a fixed stride over the image) that image stats are computed from."""
DEFAULT_FEATURES = ('timestamp', 'frame_index', 'episode_index', 'index', 'task_index')


def task_of(driver: str | None) -> str | None:
    """The task text of a dataset driven by ``driver`` (the driver table's ``goal``), None if unknown."""
    from robotsim_core.drivers import DRIVERS
    info = DRIVERS.get(str(driver).partition(':')[0])
    return None if info is None else GOAL_TASK if info.goal else WANDER_TASK


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
    """One bag's aligned frames, cut into gap-free segments (each a LeRobot episode)."""
    segments: list[dict]
    """Per segment, feature -> per-frame values (``times``: the frames' instants, ns)."""
    rejected: int
    max_skew_ns: int
    action_source: str


def align(streams: Streams, rate: float, max_skew: float, bag: Path) -> EpisodeFrames:
    required = {'scan': streams.scan, 'odom': streams.odom, 'imu': streams.imu}
    if streams.image:
        required['image'] = streams.image
    missing = [name for name, stream in required.items() if not stream]
    if missing:
        raise ExportError(f'{bag}: no {", ".join(missing)} messages: expected /scan, /odom, /imu/data '
                          '(and /camera/image_raw when the robot has a camera)')
    sorted_streams = {name: sorted(stream, key=lambda item: item[0]) for name, stream in required.items()}
    stamps = {name: np.array([s for s, _ in stream], dtype=np.int64) for name, stream in sorted_streams.items()}
    start = max(s[0] for s in stamps.values())
    if streams.goal:  # frames start once the goal is known: no frame without one
        start = max(start, min(s for s, _ in streams.goal))
    end = min(s[-1] for s in stamps.values())
    period = 1e9 / rate
    count = int((end - start) / period) + 1 if end >= start else 0
    times = start + np.round(np.arange(count) * period).astype(np.int64)
    limit = round(max_skew * 1e9)
    keep = np.ones(len(times), dtype=bool)
    picks, worst = {}, 0
    for name, stamp_array in stamps.items():
        pick, skew = _nearest(stamp_array, times)
        picks[name] = pick
        keep &= skew <= limit
        worst = max(worst, int(skew[skew <= limit].max()) if (skew <= limit).any() else 0)
    columns = {'times': times,
               'observation.state': [sorted_streams['odom'][i][1] for i in picks['odom']],
               'observation.scan': [sorted_streams['scan'][i][1] for i in picks['scan']],
               'observation.imu': [sorted_streams['imu'][i][1] for i in picks['imu']]}
    if 'image' in sorted_streams:
        columns['observation.images.camera'] = [sorted_streams['image'][i][1] for i in picks['image']]
    if streams.goal:
        goal = sorted(streams.goal, key=lambda item: item[0])
        held = _held(np.array([s for s, _ in goal], dtype=np.int64), times)
        columns['observation.goal'] = [goal[i][1] for i in held]
    if streams.command:
        command = sorted(streams.command, key=lambda item: item[0])
        held = _held(np.array([s for s, _ in command], dtype=np.int64), times)
        columns['action'] = [command[i][1] if i >= 0 else np.zeros(2, np.float32) for i in held]
        source = '/cmd_vel (held)'
    else:
        columns['action'] = [state[3:5].copy() for state in columns['observation.state']]
        source = '/odom twist (the bag has no /cmd_vel)'
    segments = []
    for first, last in _runs(keep):  # a rejected frame ends a segment: no gaps at the declared fps
        segments.append({key: values[first:last] for key, values in columns.items()})
    return EpisodeFrames(segments, int((~keep).sum()), worst, source)


def _runs(keep: np.ndarray) -> list[tuple[int, int]]:
    """[first, last) of every run of True in ``keep``."""
    edges = np.flatnonzero(np.diff(np.concatenate([[0], keep.astype(np.int8), [0]])))
    return list(zip(edges[::2].tolist(), edges[1::2].tolist()))


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
    """LeRobot's per-feature stats of (frames, width) values: lists of ``width`` numbers, count [frames]."""
    values = np.asarray(values, dtype=np.float64)
    stats = {'min': values.min(axis=0), 'max': values.max(axis=0), 'mean': values.mean(axis=0),
             'std': values.std(axis=0)}
    stats.update({name: np.quantile(values, q, axis=0) for name, q in QUANTILES})
    return {**{key: value.tolist() for key, value in stats.items()}, 'count': [int(len(values))]}


def _image_sample(image: np.ndarray) -> np.ndarray:
    """IMAGE_SAMPLE_PIXELS pixels of a frame (a fixed stride), as (pixels, 3) in [0, 1]."""
    flat = image.reshape(-1, 3)
    stride = max(1, len(flat) // IMAGE_SAMPLE_PIXELS)
    return flat[::stride][:IMAGE_SAMPLE_PIXELS].astype(np.float64) / 255.0


def _image_stats(samples: np.ndarray, frames: int) -> dict:
    """Per channel over sampled pixels, each shaped (3, 1, 1) as LeRobot's; count [frames]."""
    stats = _stats(samples)
    return {**{key: [[[v]] for v in value] for key, value in stats.items() if key != 'count'}, 'count': [frames]}


def export_lerobot(source: str, out: str, rate: float, max_skew: float | None = None, log=print) -> dict:
    """Write the LeRobot v3.0 dataset; returns info.json's content."""
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
        driver = manifest['settings'].get('driver')
        task = task_of(driver)
        bags = [(source_dir / e['bag'], task) for e in manifest['episodes'] if not e.get('pruned')]
        if not bags:
            listed = len(manifest['episodes'])
            raise ExportError(f'{source_dir / "dataset.json"}: episodes: no episode to export ('
                              + (f'all {listed} pruned)' if listed else 'the list is empty)'))
    elif (source_dir / 'metadata.yaml').is_file():
        bags = [(source_dir, None)]  # the task from the bag: a goal, or none
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


def _export(bags: list[tuple[Path, str | None]], out: str, out_dir: Path, rate: float, max_skew: float, log,
            pa, pq) -> dict:
    writer = _DataWriter(out_dir, pa, pq)
    features, episodes, tasks = None, [], {}
    totals = {'frames': 0, 'rejected': 0, 'splits': 0, 'worst_skew': 0}
    accumulated: dict[str, list] = {}
    try:
        for bag, task in bags:
            streams = read_streams(bag)
            frames = align(streams, rate, max_skew, bag)
            if not frames.segments:
                raise ExportError(f'{bag}: no frame within --max-skew {max_skew:g} s of every stream')
            task = task or (GOAL_TASK if streams.goal else WANDER_TASK)
            task_index = tasks.setdefault(task, len(tasks))
            these = _features(frames.segments[0])
            if features is None:
                features = these
                writer.open_schema(features)
            elif these != features:
                raise ExportError(f'{bag}: its features ({", ".join(these)}) differ from the first episode\'s')
            totals['rejected'] += frames.rejected
            totals['splits'] += len(frames.segments) - 1
            totals['worst_skew'] = max(totals['worst_skew'], frames.max_skew_ns)
            for segment in frames.segments:
                episode = _episode(segment, features, len(episodes), totals['frames'], task_index, rate,
                                   accumulated)
                episode.update(writer.write(episode.pop('table')), tasks=[task])
                episodes.append(episode)
                totals['frames'] += episode['length']
            log(f'{bag.name}: {sum(len(seg["times"]) for seg in frames.segments)} frames in '
                f'{len(frames.segments)} episode(s), {frames.rejected} rejected, max skew '
                f'{frames.max_skew_ns * 1e-6:.1f} ms, action from {frames.action_source}')
    finally:
        writer.close()
    _write_episodes(out_dir / EPISODES_PATH.format(chunk_index=0, file_index=0), episodes, pa, pq)
    _write_tasks(out_dir / 'meta' / 'tasks.parquet', tasks, pa, pq)
    stats = {key: (_image_stats(np.concatenate(values), totals['frames']) if features[key]['dtype'] == 'image'
                   else _stats(np.concatenate(values))) for key, values in accumulated.items()}
    _write_json(out_dir / 'meta' / 'stats.json', stats)
    info = {'codebase_version': CODEBASE_VERSION, 'robot_type': 'robotsim', 'total_episodes': len(episodes),
            'total_frames': totals['frames'], 'total_tasks': len(tasks), 'chunks_size': CHUNKS_SIZE,
            'data_files_size_in_mb': DATA_FILE_MB, 'video_files_size_in_mb': 200,
            'fps': int(rate) if float(rate).is_integer() else rate, 'splits': {'train': f'0:{len(episodes)}'},
            'data_path': DATA_PATH, 'video_path': None, 'features': features}
    _write_json(out_dir / 'meta' / 'info.json', info)
    log(f'wrote LeRobot {CODEBASE_VERSION} dataset {out}: {len(episodes)} episodes from {len(bags)} bag(s) '
        f'({totals["splits"]} split where frames were rejected), {totals["frames"]} frames at {rate:g} Hz; max skew '
        f'{totals["worst_skew"] * 1e-6:.1f} ms (limit {max_skew * 1e3:.1f} ms), {totals["rejected"]} frames rejected; '
        f'tasks: {", ".join(repr(t) for t in tasks)}')
    return info


def _episode(segment: dict, features: dict, episode_index: int, first_index: int, task_index: int, rate: float,
             accumulated: dict) -> dict:
    """One gap-free segment as LeRobot columns (``table``), its stats, and its place in the dataset."""
    length = len(segment['times'])
    frame_index = np.arange(length, dtype=np.int64)
    columns = {}
    values = {'frame_index': frame_index, 'episode_index': np.full(length, episode_index),
              'index': first_index + frame_index, 'task_index': np.full(length, task_index)}
    stats = {}
    for key, feature in features.items():
        if feature['dtype'] == 'image':
            images = segment[key]
            columns[key] = [{'bytes': _png(image), 'path': None} for image in images]
            sample = np.concatenate([_image_sample(image) for image in images])
            stats[key] = _image_stats(sample, length)
            accumulated.setdefault(key, []).append(sample)
            continue
        if key == 'timestamp':
            column = (frame_index / rate).astype(np.float32)  # LeRobot's: frame_index / fps, no gaps
        elif key in values:
            column = np.asarray(values[key], dtype=np.int64)
        else:
            column = np.stack(segment[key]).astype(np.float32)
        columns[key] = column
        stats[key] = _stats(column.reshape(length, -1))
        accumulated.setdefault(key, []).append(column.reshape(length, -1).astype(np.float64))
    return {'episode_index': episode_index, 'length': length, 'dataset_from_index': first_index,
            'dataset_to_index': first_index + length, 'stats': stats, 'table': columns}


class _DataWriter:
    """Owns the open data parquet file: episodes appended as row groups, a new file after DATA_FILE_MB."""

    def __init__(self, out_dir: Path, pa, pq):
        self.out_dir, self.pa, self.pq = out_dir, pa, pq
        self.schema, self.writer, self.file_number, self.bytes = None, None, -1, 0

    def open_schema(self, features: dict) -> None:
        pa = self.pa
        fields, hf = [], {}
        for key, feature in features.items():
            if feature['dtype'] == 'image':
                fields.append(pa.field(key, pa.struct([('bytes', pa.binary()), ('path', pa.string())])))
                hf[key] = {'_type': 'Image'}
            elif feature['shape'] == [1]:
                fields.append(pa.field(key, pa.float32() if feature['dtype'] == 'float32' else pa.int64()))
                hf[key] = {'dtype': feature['dtype'], '_type': 'Value'}
            else:
                fields.append(pa.field(key, pa.list_(pa.float32(), feature['shape'][0])))
                hf[key] = {'feature': {'dtype': 'float32', '_type': 'Value'}, 'length': feature['shape'][0],
                           '_type': 'List'}
        # The `datasets` library's own description of the columns (what makes it decode images as images).
        self.schema = pa.schema(fields, metadata={'huggingface': json.dumps({'info': {'features': hf}})})

    def write(self, columns: dict) -> dict:
        """Append one episode; returns where it went (``data/chunk_index``, ``data/file_index``)."""
        pa = self.pa
        if self.writer is None or self.bytes >= DATA_FILE_MB * 2**20:
            self.close()
            self.file_number += 1
            path = self.out_dir / DATA_PATH.format(chunk_index=self.file_number // CHUNKS_SIZE,
                                                   file_index=self.file_number % CHUNKS_SIZE)
            path.parent.mkdir(parents=True, exist_ok=True)
            self.writer, self.bytes = self.pq.ParquetWriter(path, self.schema), 0
        arrays = []
        for column in self.schema:
            values = columns[column.name]
            if pa.types.is_fixed_size_list(column.type):
                arrays.append(pa.FixedSizeListArray.from_arrays(pa.array(values.reshape(-1), pa.float32()),
                                                                column.type.list_size))
            else:
                arrays.append(pa.array(values if isinstance(values, list) else values.reshape(-1), column.type))
        table = pa.Table.from_arrays(arrays, schema=self.schema)
        self.writer.write_table(table)
        self.bytes += table.nbytes
        return {'data/chunk_index': self.file_number // CHUNKS_SIZE, 'data/file_index': self.file_number % CHUNKS_SIZE}

    def close(self) -> None:
        if self.writer is not None:
            self.writer.close()
            self.writer = None


def _write_episodes(path: Path, episodes: list[dict], pa, pq) -> None:
    """meta/episodes: one row per episode, in episode order (LeRobot reads them by position)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    columns = {key: [episode[key] for episode in episodes]
               for key in ('episode_index', 'tasks', 'length', 'data/chunk_index', 'data/file_index',
                           'dataset_from_index', 'dataset_to_index')}
    for feature, stats in episodes[0]['stats'].items():
        for name in stats:
            columns[f'stats/{feature}/{name}'] = [episode['stats'][feature][name] for episode in episodes]
    columns['meta/episodes/chunk_index'] = [0] * len(episodes)
    columns['meta/episodes/file_index'] = [0] * len(episodes)
    table = pa.table({key: pa.array(values, pa.list_(pa.string()) if key == 'tasks' else None)
                      for key, values in columns.items()})
    pq.write_table(table, path)


def _write_tasks(path: Path, tasks: dict[str, int], pa, pq) -> None:
    """meta/tasks.parquet as LeRobot writes it: a pandas table whose index is the task text (the pandas
    metadata says so: without it, a reader gets the row number as the task)."""
    table = pa.table({'task_index': pa.array(list(tasks.values()), pa.int64()),
                      'task': pa.array(list(tasks), pa.string())})
    pandas = {'index_columns': ['task'],
              'column_indexes': [{'name': None, 'field_name': None, 'pandas_type': 'unicode', 'numpy_type': 'object',
                                  'metadata': {'encoding': 'UTF-8'}}],
              'columns': [{'name': 'task_index', 'field_name': 'task_index', 'pandas_type': 'int64',
                           'numpy_type': 'int64', 'metadata': None},
                          {'name': 'task', 'field_name': 'task', 'pandas_type': 'unicode', 'numpy_type': 'object',
                           'metadata': None}],
              'creator': {'library': 'pyarrow', 'version': pa.__version__}, 'pandas_version': '2.2.3'}
    pq.write_table(table.replace_schema_metadata({'pandas': json.dumps(pandas)}), path)


def _features(segment: dict) -> dict:
    features = {}
    for key, values in segment.items():
        if key == 'times':
            continue
        if key.startswith('observation.images.'):
            features[key] = {'dtype': 'image', 'shape': list(values[0].shape), 'names': ['height', 'width', 'channels']}
        else:
            width = len(values[0])
            features[key] = {'dtype': 'float32', 'shape': [width],
                             'names': FEATURE_NAMES.get(key, [f'beam_{i}' for i in range(width)] if key == 'observation.scan'
                                                        else None)}
    features['timestamp'] = {'dtype': 'float32', 'shape': [1], 'names': None}
    for key in DEFAULT_FEATURES[1:]:
        features[key] = {'dtype': 'int64', 'shape': [1], 'names': None}
    return features


def _write_json(path: Path, document) -> None:
    path.write_text(json.dumps(document, indent=4) + '\n', encoding='utf-8')
