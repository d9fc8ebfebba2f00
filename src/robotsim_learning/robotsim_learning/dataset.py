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
number of workers and either executor.
"""

from __future__ import annotations

import contextlib
import errno
import json
import math
import os
import shutil
import subprocess
import sys
import time
from dataclasses import fields
from pathlib import Path

from robotsim_core.output_files import file_sha256

from .driving import RunOptions

MANIFEST = 'dataset.json'
PARTIAL = '.partial'
GENERATOR_VERSION = '1.0'
"""Bumped when the same (spec, seed, index) would give different bytes."""
MAX_EPISODES = 100_000
"""Episodes one dataset may ask for (checked before anything is allocated; at 20 s and 166 MB an episode with
cameras, already 16 TB): a larger corpus is several datasets."""
MAX_WORKERS = 256
"""Worker processes (or local Ray CPUs) one generation may start."""


class DatasetError(RuntimeError):
    """One line for the user (exit status 2 from the CLI)."""


def episode_name(index: int) -> str:
    return f'episode_{index:06d}'


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


def _got(value) -> str:
    """A short rendering of a JSON value for an error line."""
    text = json.dumps(value)
    return text if len(text) <= 40 else text[:37] + '...'


def _is_count(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def load_manifest(path: Path) -> dict:
    """Read and check ``dataset.json``: a bad one is a DatasetError naming the file and the key."""
    try:
        text = path.read_text(encoding='utf-8')
    except OSError as error:
        raise DatasetError(f'{path}: cannot read ({error.strerror or error})') from None
    except UnicodeDecodeError:
        raise DatasetError(f'{path}: not UTF-8 text; expected a robotsim dataset manifest (JSON)') from None
    try:
        manifest = json.loads(text)
    except (ValueError, RecursionError) as error:  # RecursionError: nested too deep to parse
        raise DatasetError(f'{path}: not valid JSON ({str(error).splitlines()[0][:120]}); expected a robotsim '
                           'dataset manifest') from None
    if not isinstance(manifest, dict):
        raise DatasetError(f'{path}: expected a JSON object (a robotsim dataset manifest), got {_got(manifest)}')
    if 'episodes' not in manifest:
        raise DatasetError(f'{path}: episodes: missing required key (the list of finished episodes)')
    entries = manifest['episodes']
    if not isinstance(entries, list):
        raise DatasetError(f'{path}: episodes: expected a list of episode entries, got {_got(entries)}')
    seen = set()
    for position, entry in enumerate(entries):
        where = f'{path}: episodes[{position}]'
        if not isinstance(entry, dict):
            raise DatasetError(f'{where}: expected an object (one episode), got {_got(entry)}')
        for key in ('index',) if entry.get('pruned') else ('index', 'bag', 'sha256', 'message_counts'):
            if key not in entry:
                raise DatasetError(f'{where}.{key}: missing required key')
        index = entry['index']
        if not _is_count(index) or index < 0:
            raise DatasetError(f'{where}.index: expected a whole number >= 0, got {_got(index)}')
        if index in seen:
            raise DatasetError(f'{where}.index: episode {index} is listed twice')
        seen.add(index)
        if entry.get('pruned'):
            continue
        bag = entry['bag']
        if not isinstance(bag, str) or not bag or bag in ('.', '..') or '/' in bag or '\\' in bag:
            raise DatasetError(f'{where}.bag: expected a folder name in the dataset such as {episode_name(index)}, '
                               f'got {_got(bag)}')
        if not isinstance(entry['sha256'], str):
            raise DatasetError(f'{where}.sha256: expected a hex string, got {_got(entry["sha256"])}')
        counts = entry['message_counts']
        if not isinstance(counts, dict) or not all(_is_count(n) for n in counts.values()):
            raise DatasetError(f'{where}.message_counts: expected an object of topic: message count, '
                               f'got {_got(counts)}')
    settings = manifest.get('settings')
    if not isinstance(settings, dict):
        raise DatasetError(f'{path}: settings: expected an object (episodes, seed, driver, ...), got {_got(settings)}'
                           if 'settings' in manifest else f'{path}: settings: missing required key')
    if not _is_count(settings.get('episodes')) or not 1 <= settings['episodes'] <= MAX_EPISODES:
        raise DatasetError(f'{path}: settings.episodes: expected a whole number from 1 to {MAX_EPISODES}, '
                           f'got {_got(settings.get("episodes"))}')
    return manifest


def incompleteness(out: str, listed_verify: bool = False) -> str | None:
    """None for a dataset whose manifest lists every episode its settings ask for; else one line
    saying how many of how many are done (``listed_verify``: and that those verify) and the command
    that completes it."""
    import shlex

    out_dir = Path(out)
    manifest = load_manifest(out_dir / MANIFEST)
    settings = manifest['settings']
    wanted = settings['episodes']
    done = len({entry['index'] for entry in manifest['episodes']} & set(range(wanted)))
    if done >= wanted:
        return None
    partial = out_dir / PARTIAL
    half = sorted(p.name for p in partial.glob('episode_*')) if partial.is_dir() else []
    randomization = manifest.get('randomization')
    spec = randomization.get('path') if isinstance(randomization, dict) else None
    command = ['robotsim', 'dataset', 'generate', '--randomization', spec if isinstance(spec, str) else 'SPEC.yaml',
               '--episodes', str(wanted)]
    if _is_count(settings.get('seed')):
        command += ['--seed', str(settings['seed'])]
    if isinstance(settings.get('driver'), str):
        name, _, policy = settings['driver'].partition(':')
        command += ['--driver', name] + (['--policy', policy] if policy else [])
    if settings.get('cameras') is False:
        command.append('--no-cameras')
    if settings.get('prune') is True:
        command.append('--prune')
    command += RunOptions.from_settings(settings).arguments()
    command += ['--out', str(out), '--resume']
    return (f'{out}: {done} of {wanted} episodes generated'
            + (f' ({", ".join(half)} half-written in {PARTIAL}/)' if half else '')
            + ('; the listed ones verify' if listed_verify else '')
            + f'; the generation was stopped before the end. Complete it with: {shlex.join(command)}')


# ---------------------------------------------------------------------------------------------- one episode
def generate_episode(spec_path: str, seed: int, index: int, out: str, driver: str, cameras: bool,
                     prune: bool, run: RunOptions = RunOptions()) -> dict:
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
    result = run_episode(Randomizer(spec, seed), index, str(partial), driver, cameras=cameras, run=run)
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
    # The scenario beside the bag (world, robot, metadata): verify covers the whole episode.
    entry['files'] = {path.name: file_sha256(path) for path in sorted(partial.iterdir())
                      if path.is_file() and path != mcap}
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


# ---------------------------------------------------------------------------------------------- executors
def _pool_map(tasks: list[tuple], workers: int):
    """Yield results as episodes finish: in this process for one worker, else a process pool whose workers end
    with this process and with the run when it stops early (robotsim_core.processes)."""
    if workers <= 1:
        for task in tasks:
            yield generate_episode(*task)
        return
    from robotsim_core.processes import exit_with_parent, pool_results
    yield from pool_results(generate_episode, tasks, workers, exit_with_parent, (os.getpid(),))


@contextlib.contextmanager
def ray_session(workers: int, address: str | None, option: str = '--executor ray'):
    """Ray, initialised for the block (and shut down after it when started here): without ``address`` a local
    instance of ``workers`` CPUs on 127.0.0.1 without dashboard; with it, the cluster at that address. DatasetError
    naming ``option`` when Ray is not installed."""
    try:
        import ray
    except ImportError:
        raise DatasetError(f'{option}: Ray is not installed (pip install ray==2.60.0, see requirements/test.txt)') from None
    started_here = not ray.is_initialized()
    if started_here:
        if address:
            ray.init(address=address, include_dashboard=False, log_to_driver=False)
        else:
            ray.init(num_cpus=workers, include_dashboard=False, _node_ip_address='127.0.0.1',
                     log_to_driver=False, configure_logging=False)
    try:
        yield ray
    finally:
        if started_here:
            ray.shutdown()


def _ray_map(tasks: list[tuple], workers: int, address: str | None):
    """Yield results as Ray tasks finish (DIR must be on a file system every node of a cluster mounts at the same
    path)."""
    with ray_session(workers, address) as ray:
        remote = ray.remote(num_cpus=1, max_retries=0)(generate_episode)
        pending = [remote.remote(*task) for task in tasks]
        while pending:
            done, pending = ray.wait(pending, num_returns=1)
            yield ray.get(done[0])


# ---------------------------------------------------------------------------------------------- generate
def _check_output_dir(out: Path) -> None:
    probe = out / '.write-test'
    try:
        out.mkdir(parents=True, exist_ok=True)
        probe.write_bytes(b'x')
    except OSError as error:
        if error.errno == errno.ENOSPC:
            raise DatasetError(f'--out {out}: disk full before an episode could start; free space, then rerun with '
                               '--resume') from None
        raise DatasetError(f'--out {out}: cannot write there ({error.strerror or error})') from None
    finally:
        try:
            probe.unlink()  # also when the disk was full: a half-written probe is no file of the dataset
        except OSError:
            pass


def generate(spec_path: str, out: str, episodes: int, seed: int, driver: str, workers: int = 1,
             executor: str = 'local', resume: bool = False, prune: bool = False, cameras: bool = True,
             ray_address: str | None = None, progress=True, run: RunOptions = RunOptions()) -> dict:
    """Generate (or complete, with ``resume``) a dataset; returns the manifest. ``run``: the driver's
    :class:`~robotsim_learning.driving.RunOptions` (its velocity shield, the expert's options), kept in the
    manifest's settings when not at their defaults."""
    from .driving import make_driver
    from .randomization import load_randomization, spec_content, spec_hash

    spec = load_randomization(spec_path)
    try:
        make_driver(driver, run=run)  # once: a bad name, file or option is one line before any worker
    except ValueError as error:
        raise DatasetError(str(error)) from None
    for option, value, most in (('--episodes', episodes, MAX_EPISODES), ('--workers', workers, MAX_WORKERS)):
        if not 1 <= value <= most:
            raise DatasetError(f'{option}: expected a whole number from 1 to {most}, got {value}')
    if not 0 <= seed < 2**63:
        raise DatasetError(f'--seed: expected 0 ... 2^63-1, got {seed}')
    out_dir = Path(out)
    manifest_path = out_dir / MANIFEST
    if out_dir.exists() and not out_dir.is_dir():
        raise DatasetError(f'--out {out}: is a file; expected a new or empty folder, or a dataset folder to --resume')
    if manifest_path.exists() and not resume:
        raise DatasetError(f'--out {out}: holds a dataset already; add --resume to complete it, or choose another folder')
    if out_dir.is_dir() and not manifest_path.exists():
        # Not a dataset: generating would replace its episode_* folders. Only a generation killed
        # before its first episode was finished (nothing but .partial/) is taken over.
        try:
            foreign = sorted(p.name for p in out_dir.iterdir() if p.name != PARTIAL)
        except OSError as error:
            raise DatasetError(f'--out {out}: cannot read ({error.strerror or error})') from None
        if foreign:
            raise DatasetError(f'--out {out}: exists, is not empty ({", ".join(foreign[:3])}'
                               f'{", ..." if len(foreign) > 3 else ""}) and holds no {MANIFEST}; expected a new or '
                               'empty folder, or a dataset folder to --resume (nothing was changed)')
    _check_output_dir(out_dir)
    settings = {'episodes': episodes, 'seed': seed, 'driver': driver, 'cameras': cameras, 'prune': prune,
                'randomization_sha256': spec_hash(spec), **run.settings()}
    if manifest_path.exists():
        manifest = load_manifest(manifest_path)
        # Settings written only when set (a manifest without them means off): compared also when only one has them.
        optional = [f.name for f in fields(RunOptions)]
        keys = [*settings, *(key for key in optional if key in manifest['settings'] and key not in settings)]
        previous = {key: manifest['settings'].get(key) for key in keys}
        settings = {key: settings.get(key) for key in keys}
        if previous != settings:
            changed = ', '.join(f'{k} {previous[k]!r} -> {settings[k]!r}' for k in settings if previous[k] != settings[k])
            raise DatasetError(f'--resume: {out} was generated with other settings ({changed}); '
                               'expected the same command line')
    else:
        manifest = {'format': 'robotsim-dataset', 'generator_version': GENERATOR_VERSION, 'source_commit': source_commit(),
                    'settings': settings, 'randomization': {'path': os.path.abspath(spec_path), 'sha256': spec_hash(spec),
                                                            'spec': spec_content(spec)},
                    'episodes': []}
        # Listed before the first episode runs: a generation killed before it finished one is a dataset
        # of 0 episodes (verify: INCOMPLETE, with the --resume command), not "no dataset".
        write_json_atomically(manifest_path, manifest)
    done = {entry['index'] for entry in manifest['episodes']}
    todo = [index for index in range(episodes) if index not in done]
    for index in todo:
        # A folder of an episode the manifest does not list is replaced (a run killed between moving
        # it into place and listing it): only if it holds nothing but what the generator writes.
        name = episode_name(index)
        final = out_dir / name
        if final.exists() or final.is_symlink():
            ours = {f'{name}.mcap', 'metadata.yaml', 'metadata.yaml.tmp', 'world.yaml', 'robot.yaml'}
            if final.is_dir() and not final.is_symlink():
                foreign = sorted(p.name for p in final.iterdir() if p.name not in ours or not p.is_file())
            else:
                foreign = [f'{name} itself (not a folder)']
            if foreign:
                raise DatasetError(f'--out {out}: {name} is not listed in {manifest_path} and holds '
                                   f'{", ".join(foreign[:3])}, which the generator does not write; expected only a '
                                   'generated episode there (nothing was changed: move those files away, then rerun)')
    half_written = sorted(p.name for p in (out_dir / PARTIAL).glob('episode_*')) if (out_dir / PARTIAL).is_dir() else []
    if half_written:
        print(f'robotsim dataset: regenerating {len(half_written)} half-written episode(s): {", ".join(half_written)}',
              file=sys.stderr)
    tasks = [(os.path.abspath(spec_path), seed, index, str(out_dir), driver, cameras, prune, run) for index in todo]
    started = time.monotonic()
    finished: list[dict] = []
    bar = None
    if progress and todo:
        from tqdm import tqdm
        bar = tqdm(total=len(todo), unit='episode', desc='generating', file=sys.stderr, dynamic_ncols=True)
    results = _ray_map(tasks, workers, ray_address) if executor == 'ray' else _pool_map(tasks, workers)
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

    from .mcap_crc import crc_problem

    out_dir = Path(out)
    manifest_path = out_dir / MANIFEST
    if not manifest_path.is_file():
        raise DatasetError(f'{out}: no {MANIFEST}: expected a dataset folder written by robotsim dataset generate')
    entries = load_manifest(manifest_path)['episodes']
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
        try:
            digest = file_sha256(mcap)
        except OSError as error:
            problems.append(f'{name}: bag file {mcap} does not read ({error.strerror or error})')
            continue
        if digest != entry['sha256']:
            problems.append(f'{name}: sha256 of {mcap.name} differs from the manifest (the bag was changed or corrupted)')
            continue
        changed = _scenario_problem(folder, entry.get('files'))
        if changed:
            problems.append(f'{name}: {changed}')
            continue
        problem = crc_problem(mcap)
        if problem:
            problems.append(f'{name}: {problem}')
            continue
        try:
            problem = _verify_bag(folder, entry['message_counts'], typestore, Reader)
        except Exception as error:  # a bag rosbags cannot read is the finding, whatever the exception
            problem = f'bag does not read: {" ".join(str(error).split())}'
        if problem:
            problems.append(f'{name}: {problem}')
    return problems


def _scenario_problem(folder: Path, files) -> str | None:
    """The episode's files beside its bag against the manifest's sha256 of each (manifests written before
    the files were listed have none: nothing to compare)."""
    if files is None:
        return None
    if not isinstance(files, dict):
        return f'files: expected an object of file name -> sha256, got {_got(files)}'
    for file_name, digest in sorted(files.items()):
        if not isinstance(file_name, str) or '/' in file_name or file_name in ('', '.', '..'):
            return f'files: expected file names in the episode folder, got {_got(file_name)}'
        path = folder / file_name
        if not path.is_file():
            return f'{file_name} is missing (the manifest lists it)'
        try:
            if file_sha256(path) != digest:
                return f'sha256 of {file_name} differs from the manifest (the scenario file was changed)'
        except OSError as error:
            return f'{file_name} does not read ({error.strerror or error})'
    return None


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
