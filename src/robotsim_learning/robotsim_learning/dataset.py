"""Dataset generation, manifest and verification (``robotsim dataset generate|verify``).

Layout of a dataset folder DIR::

    DIR/dataset.json                     the manifest (rewritten atomically after every episode)
    DIR/episode_000000/                  one rosbag2 MCAP bag per episode (ros2 bag info reads it)
        episode_000000.mcap, metadata.yaml, world.yaml, robot.yaml
    DIR/.partial/episode_000007/         an episode being written (or left by a killed run)

An episode is written under ``.partial/`` and renamed into place when its bag is closed, then
entered in the manifest; so an episode in the manifest is complete, and anything under
``.partial/`` is half-written: ``--resume`` deletes and regenerates it, and skips every episode the
manifest lists. Each episode is fully determined by (seed, episode index): the same bytes for any
number of workers and either engine.
"""

from __future__ import annotations

import errno
import hashlib
import json
import math
import os
import shutil
import subprocess
import sys
import time
from dataclasses import asdict
from pathlib import Path

MANIFEST = 'dataset.json'
PARTIAL = '.partial'
GENERATOR_VERSION = '1.0'
"""Bumped when the same (spec, seed, index) would give different bytes."""


class DatasetError(RuntimeError):
    """One line for the user (exit status 2 from the CLI)."""


def episode_name(index: int) -> str:
    return f'episode_{index:06d}'


def file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, 'rb') as stream:
        for block in iter(lambda: stream.read(1 << 20), b''):
            digest.update(block)
    return digest.hexdigest()


def source_commit() -> str:
    """The git commit of the robotsim source this generator ran from ('unknown' outside a clone)."""
    here = Path(__file__).resolve()
    for candidate in [here.parent, *here.parents]:
        if (candidate / '.git').exists() and (candidate / 'src').is_dir():
            try:
                out = subprocess.run(['git', '-C', str(candidate), 'rev-parse', 'HEAD'], capture_output=True,
                                     text=True, timeout=10)
                dirty = subprocess.run(['git', '-C', str(candidate), 'status', '--porcelain', '--untracked-files=no'],
                                       capture_output=True, text=True, timeout=10).stdout.strip()
                return out.stdout.strip() + ('-dirty' if dirty else '') if out.returncode == 0 else 'unknown'
            except (OSError, subprocess.SubprocessError):
                return 'unknown'
    return 'unknown'


def write_json_atomically(path: Path, document: dict) -> None:
    temporary = path.with_name(path.name + '.tmp')
    try:
        with open(temporary, 'w', encoding='utf-8') as stream:
            json.dump(document, stream, indent=1, sort_keys=False)
            stream.write('\n')
            stream.flush()
            os.fsync(stream.fileno())
    except OSError:
        temporary.unlink(missing_ok=True)  # e.g. a full disk: the previous document stays, without a torn copy
        raise
    temporary.replace(path)


# ---------------------------------------------------------------------------------------------- one episode
def generate_episode(spec_path: str, seed: int, index: int, out: str, driver: str, cameras: bool,
                     prune: bool) -> dict:
    """Run one episode into ``out/.partial/<name>``, move it into place and describe it (a worker's
    whole job: picklable arguments in, a JSON-able manifest entry out)."""
    from .ros.episode import run_episode
    from .randomization import Randomizer, load_randomization

    spec = load_randomization(spec_path)
    name = episode_name(index)
    partial = Path(out, PARTIAL, name)
    if partial.exists():
        shutil.rmtree(partial)
    partial.parent.mkdir(parents=True, exist_ok=True)
    result = run_episode(Randomizer(spec, seed), index, str(partial), driver, cameras=cameras)
    entry = {'index': index, 'bag': name, 'outcome': result.outcome, 'duration': round(result.duration, 9),
             'message_counts': result.counts, 'travel': round(result.travel, 6),
             'final_goal_distance': round(result.final_goal_distance, 6), 'camera_frames': result.camera_frames,
             'sim_seed': result.sim_seed, 'spawn': list(result.spawn), 'goal': list(result.goal),
             'drawn': result.drawn, 'wall_seconds': round(result.wall_seconds, 3)}
    reason = prune_reason(spec.prune, result) if prune else None
    if reason:
        shutil.rmtree(partial)
        entry.update(pruned=reason, bag=None)
        return entry
    mcap = partial / f'{name}.mcap'
    entry['sha256'] = file_sha256(mcap)
    entry['bytes'] = sum(f.stat().st_size for f in partial.iterdir())
    final = Path(out, name)
    if final.exists():
        shutil.rmtree(final)  # an episode the manifest does not list (killed between rename and manifest)
    partial.rename(final)
    return entry


def prune_reason(rules, result) -> str | None:
    if result.travel < rules.min_travel:
        return f'the robot never moved (travelled {result.travel:.3f} m < min_travel {rules.min_travel:g} m)'
    if result.max_image_stddev is not None and result.max_image_stddev < rules.min_image_stddev:
        return (f'featureless camera (largest pixel standard deviation {result.max_image_stddev:.2f} < '
                f'min_image_stddev {rules.min_image_stddev:g})')
    return None


# ---------------------------------------------------------------------------------------------- engines
def _pool_map(tasks: list[tuple], workers: int):
    """Yield results as episodes finish: in this process for one worker, else a process pool."""
    if workers <= 1:
        for task in tasks:
            yield generate_episode(*task)
        return
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor, as_completed
    # spawn: a fresh interpreter per worker (MuJoCo's GL context and rclpy do not survive fork).
    with ProcessPoolExecutor(max_workers=workers, mp_context=multiprocessing.get_context('spawn')) as pool:
        futures = [pool.submit(generate_episode, *task) for task in tasks]
        try:
            for future in as_completed(futures):
                yield future.result()
        except BaseException:
            for future in futures:
                future.cancel()
            raise


def _ray_map(tasks: list[tuple], workers: int, address: str | None):
    """Yield results as Ray tasks finish. Without ``address``: a local Ray instance of ``workers``
    CPUs on 127.0.0.1 without dashboard; with it, the cluster at that address (DIR must then be on
    a file system every node mounts at the same path)."""
    try:
        import ray
    except ImportError:
        raise DatasetError('--engine ray: Ray is not installed (pip install ray==2.60.0, '
                           'see requirements/test.txt)') from None
    started_here = not ray.is_initialized()
    if started_here:
        if address:
            ray.init(address=address, include_dashboard=False, log_to_driver=False)
        else:
            ray.init(num_cpus=workers, include_dashboard=False, _node_ip_address='127.0.0.1',
                     log_to_driver=False, configure_logging=False)
    try:
        remote = ray.remote(num_cpus=1, max_retries=0)(generate_episode)
        pending = [remote.remote(*task) for task in tasks]
        while pending:
            done, pending = ray.wait(pending, num_returns=1)
            yield ray.get(done[0])
    finally:
        if started_here:
            ray.shutdown()


# ---------------------------------------------------------------------------------------------- generate
def _check_output_dir(out: Path) -> None:
    try:
        out.mkdir(parents=True, exist_ok=True)
        probe = out / '.write-test'
        probe.write_bytes(b'x')
        probe.unlink()
    except OSError as error:
        raise DatasetError(f'--out {out}: cannot write there ({error.strerror or error})') from None


def generate(spec_path: str, out: str, episodes: int, seed: int, driver: str, workers: int = 1,
             engine: str = 'local', resume: bool = False, prune: bool = False, cameras: bool = True,
             ray_address: str | None = None, progress=True) -> dict:
    """Generate (or complete, with ``resume``) a dataset; returns the manifest."""
    from .ros.episode import make_driver
    from .randomization import load_randomization, spec_hash

    spec = load_randomization(spec_path)
    try:
        make_driver(driver)  # here, once: a bad name or policy file is one line before any worker starts
    except ValueError as error:
        raise DatasetError(str(error)) from None
    if episodes < 1 or workers < 1:
        raise DatasetError('--episodes and --workers: expected whole numbers >= 1')
    if not 0 <= seed < 2**63:
        raise DatasetError(f'--seed: expected 0 ... 2^63-1, got {seed}')
    out_dir = Path(out)
    manifest_path = out_dir / MANIFEST
    if manifest_path.exists() and not resume:
        raise DatasetError(f'--out {out}: holds a dataset already; add --resume to complete it, or choose another folder')
    _check_output_dir(out_dir)
    settings = {'episodes': episodes, 'seed': seed, 'driver': driver, 'cameras': cameras, 'prune': prune,
                'randomization_sha256': spec_hash(spec)}
    if manifest_path.exists():
        manifest = json.loads(manifest_path.read_text())
        previous = {key: manifest['settings'].get(key) for key in settings}
        if previous != settings:
            changed = ', '.join(f'{k} {previous[k]!r} -> {settings[k]!r}' for k in settings if previous[k] != settings[k])
            raise DatasetError(f'--resume: {out} was generated with other settings ({changed}); '
                               'expected the same command line')
    else:
        manifest = {'format': 'robotsim-dataset', 'generator_version': GENERATOR_VERSION, 'source_commit': source_commit(),
                    'settings': settings, 'randomization': {'path': os.path.abspath(spec_path), 'sha256': spec_hash(spec),
                                                            'spec': asdict(spec)},
                    'episodes': []}
    done = {entry['index'] for entry in manifest['episodes']}
    half_written = sorted(p.name for p in (out_dir / PARTIAL).glob('episode_*')) if (out_dir / PARTIAL).is_dir() else []
    if half_written:
        print(f'robotsim dataset: regenerating {len(half_written)} half-written episode(s): {", ".join(half_written)}',
              file=sys.stderr)
    todo = [index for index in range(episodes) if index not in done]
    tasks = [(os.path.abspath(spec_path), seed, index, str(out_dir), driver, cameras, prune) for index in todo]
    started = time.monotonic()
    finished: list[dict] = []
    bar = None
    if progress and todo:
        from tqdm import tqdm
        bar = tqdm(total=len(todo), unit='episode', desc='generating', file=sys.stderr, dynamic_ncols=True)
    results = _ray_map(tasks, workers, ray_address) if engine == 'ray' else _pool_map(tasks, workers)
    listed = len(manifest['episodes'])  # episodes the manifest on disk lists
    try:
        for entry in results:
            manifest['episodes'].append(entry)
            manifest['episodes'].sort(key=lambda e: e['index'])
            write_json_atomically(manifest_path, manifest)
            listed = len(manifest['episodes'])
            finished.append(entry)
            if bar is not None:
                bar.set_postfix_str(f'episode {entry["index"]}: {entry.get("pruned") and "pruned" or entry["outcome"]}')
                bar.update(1)
    except OSError as error:
        what = 'disk full' if error.errno == errno.ENOSPC else (error.strerror or str(error))
        kept = (f'The {listed} finished episode(s) are intact (robotsim dataset verify {out})' if listed else
                'No episode was finished')
        raise DatasetError(f'--out {out}: {what} while writing an episode; stopped. {kept}; free space, then rerun '
                           'with --resume') from None
    finally:
        if bar is not None:
            bar.close()
    if (out_dir / PARTIAL).is_dir() and not any((out_dir / PARTIAL).iterdir()):
        (out_dir / PARTIAL).rmdir()
    print(summary(manifest, finished, time.monotonic() - started, out_dir), file=sys.stderr)
    return manifest


def summary(manifest: dict, finished: list[dict], wall: float, out_dir: Path) -> str:
    kept = [e for e in manifest['episodes'] if not e.get('pruned')]
    pruned = len(manifest['episodes']) - len(kept)
    sim_seconds = sum(e['duration'] for e in finished)
    frames = sum(e.get('camera_frames', 0) for e in finished)
    size = sum(e.get('bytes', 0) for e in kept)
    outcomes = {}
    for entry in kept:
        outcomes[entry['outcome']] = outcomes.get(entry['outcome'], 0) + 1
    rate = len(finished) / wall * 3600 if wall > 0 else math.inf
    return (f'robotsim dataset: {len(finished)} episode(s) generated in {wall:.1f} s: {rate:.0f} episodes/hour, '
            f'{sim_seconds / wall if wall > 0 else 0:.1f} simulated s per wall s, {frames} camera frames; dataset '
            f'{len(kept)} episodes ({", ".join(f"{k} {v}" for k, v in sorted(outcomes.items())) or "none"}), '
            f'{pruned} pruned, {size / 1e6:.1f} MB in {out_dir}')


# ---------------------------------------------------------------------------------------------- verify
def verify(out: str) -> list[str]:
    """Every problem of the dataset, in episode order (empty: it verifies). Checks per episode: the
    bag opens, sha256, message count per topic, header stamps and bag times not going backwards
    per topic, one image size and encoding per image topic with data of height * step bytes, no
    NaN in ground truth."""
    from rosbags.rosbag2 import Reader
    from rosbags.typesys import Stores, get_typestore

    out_dir = Path(out)
    manifest_path = out_dir / MANIFEST
    if not manifest_path.is_file():
        raise DatasetError(f'{out}: no {MANIFEST}: expected a dataset folder written by robotsim dataset generate')
    try:
        manifest = json.loads(manifest_path.read_text())
        entries = manifest['episodes']
    except (ValueError, KeyError) as error:
        raise DatasetError(f'{manifest_path}: not a robotsim dataset manifest ({error})') from None
    typestore = get_typestore(Stores.ROS2_KILTED)
    problems = []
    for entry in entries:
        if entry.get('pruned'):
            continue
        name, folder = entry['bag'], out_dir / entry['bag']
        mcap = folder / f'{name}.mcap'
        if not mcap.is_file():
            problems.append(f'{name}: bag file {mcap} is missing')
            continue
        if file_sha256(mcap) != entry['sha256']:
            problems.append(f'{name}: sha256 of {mcap.name} differs from the manifest (the bag was changed or corrupted)')
            continue
        try:
            problem = _verify_bag(folder, entry['message_counts'], typestore, Reader)
        except Exception as error:  # a bag rosbags cannot read is the finding, whatever the exception
            problem = f'bag does not read: {" ".join(str(error).split())}'
        if problem:
            problems.append(f'{name}: {problem}')
    return problems


def _verify_bag(folder: Path, expected_counts: dict, typestore, reader_class) -> str | None:
    import numpy as np
    counts: dict[str, int] = {}
    last_time: dict[str, int] = {}
    last_stamp: dict[str, int] = {}
    image_shape: dict[str, tuple] = {}
    with reader_class(folder) as reader:
        for connection, timestamp, data in reader.messages():
            topic = connection.topic
            counts[topic] = counts.get(topic, 0) + 1
            if timestamp < last_time.get(topic, -1):
                return f'{topic}: bag time goes backwards at {timestamp} ns'
            last_time[topic] = timestamp
            if connection.msgtype in ('geometry_msgs/msg/Twist', 'std_msgs/msg/String', 'tf2_msgs/msg/TFMessage'):
                if connection.msgtype == 'tf2_msgs/msg/TFMessage':
                    message = typestore.deserialize_cdr(data, connection.msgtype)
                    stamps = [t.header.stamp for t in message.transforms]
                    if stamps:
                        stamp = min(s.sec * 1_000_000_000 + s.nanosec for s in stamps)
                        if stamp < last_stamp.get(topic, -1):
                            return f'{topic}: header stamp goes backwards at {stamp} ns'
                        last_stamp[topic] = stamp
                continue
            message = typestore.deserialize_cdr(data, connection.msgtype)
            stamp = message.header.stamp.sec * 1_000_000_000 + message.header.stamp.nanosec
            if stamp < last_stamp.get(topic, -1):
                return f'{topic}: header stamp goes backwards at {stamp} ns'
            last_stamp[topic] = stamp
            if connection.msgtype == 'sensor_msgs/msg/Image':
                shape = (message.width, message.height, message.encoding, message.step)
                if image_shape.setdefault(topic, shape) != shape:
                    return (f'{topic}: image at {stamp} ns is {shape[0]}x{shape[1]} {shape[2]}, earlier ones '
                            f'{image_shape[topic][0]}x{image_shape[topic][1]} {image_shape[topic][2]}')
                if len(message.data) != message.height * message.step:
                    return f'{topic}: image at {stamp} ns holds {len(message.data)} bytes, expected height * step = ' \
                           f'{message.height * message.step}'
            if topic.endswith('sim/ground_truth'):
                pose, twist = message.pose.pose, message.twist.twist
                values = [pose.position.x, pose.position.y, pose.position.z, pose.orientation.x, pose.orientation.y,
                          pose.orientation.z, pose.orientation.w, twist.linear.x, twist.linear.y, twist.linear.z,
                          twist.angular.x, twist.angular.y, twist.angular.z]
                if not np.all(np.isfinite(values)):
                    return f'{topic}: NaN or Inf in ground truth at {stamp} ns'
    if counts != expected_counts:
        differing = sorted(set(counts) | set(expected_counts), key=str)
        detail = ', '.join(f'{t} {counts.get(t, 0)} (manifest {expected_counts.get(t, 0)})' for t in differing
                           if counts.get(t, 0) != expected_counts.get(t, 0))
        return f'message counts differ from the manifest: {detail}'
    return None
