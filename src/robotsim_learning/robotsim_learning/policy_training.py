"""``robotsim policy train DATASET [DATASET ...] --out policy.onnx``: behaviour cloning from datasets'
bags (ROS-free).

Each recorded ``/cmd_vel`` (the driver's action) becomes one sample, paired with the observation the
policy node would have built at that moment from the same bag: the latest scan, the image and
odometry closest to it (:func:`robotsim_learning.observation.observation_from_messages`) and the
latest goal. From expert datasets only episodes that reached their goal (and were not pruned) are
used, so the policy imitates successful demonstrations. DAgger datasets (``--driver dagger --policy FILE``)
label every decision of the policy with the expert's command (``/expert/cmd_vel``): those labels are
the targets, and every episode counts, failures included: they hold the states the policy gets
itself into. Several datasets are aggregated (DAgger's data aggregation). Validation holds out whole
episodes.
"""

from __future__ import annotations

import hashlib
import json
import os
import shlex
import time
from collections import deque
from pathlib import Path

import numpy as np

from .driving import RunOptions
from .observation import ObservationSpec, spec_for_robot

TOPICS = ('/scan', '/camera/image_raw', '/odom', '/imu/data', '/goal_pose', '/cmd_vel', '/expert/cmd_vel')


class TrainingDataError(ValueError):
    """The dataset cannot be trained on (one line: what was expected)."""


IMAGE_TOPIC = '/camera/image_raw'


def read_manifest(dataset: Path) -> dict:
    """A dataset's dataset.json, checked as far as training reads it (one line on a problem)."""
    manifest_path = dataset / 'dataset.json'
    if not manifest_path.is_file():
        raise TrainingDataError(f'{dataset}: no dataset.json (expected a folder written by robotsim dataset generate)')
    try:
        manifest = json.loads(manifest_path.read_text())
    except (OSError, ValueError, RecursionError) as error:
        raise TrainingDataError(f'{manifest_path}: unreadable ({str(error).splitlines()[0][:120]}); expected the '
                                'JSON manifest robotsim dataset generate writes') from None
    episodes = manifest.get('episodes') if isinstance(manifest, dict) else None
    if not isinstance(episodes, list) or not all(isinstance(e, dict) and isinstance(e.get('bag'), str)
                                                 for e in episodes):
        raise TrainingDataError(f'{manifest_path}: episodes: expected a list of episodes, each with its bag folder')
    if not isinstance(manifest.get('settings', {}), dict):
        raise TrainingDataError(f'{manifest_path}: settings: expected a mapping')
    return manifest


def distinct_datasets(datasets: list[str]) -> None:
    """Refuse a dataset given twice (the same folder, however spelled): its episodes would be trained on
    and held out for validation at once, and weigh double."""
    seen: dict[Path, str] = {}
    for dataset in datasets:
        key = Path(dataset).resolve()
        if key in seen:
            raise TrainingDataError(f'DATASET {dataset}: given twice (the same folder as {seen[key]}); expected each '
                                    'dataset once (its episodes would be in both training and validation)')
        seen[key] = dataset


def demonstration_bags(dataset: Path) -> list[Path]:
    manifest = read_manifest(dataset)
    relabelled = str(manifest.get('settings', {}).get('driver', '')).startswith('dagger')
    bags = [dataset / entry['bag'] for entry in manifest['episodes']
            if (relabelled or entry.get('outcome') == 'success') and not entry.get('pruned')]
    if not bags:
        raise TrainingDataError(f'{dataset}: no successful episode to imitate (outcomes: '
                                f'{sorted({e.get("outcome") for e in manifest["episodes"]})})')
    return bags


READERS = 2
"""Processes reading the bags (decoding the messages is most of a training's time); the samples come back in
the bags' order, so the result does not depend on it."""


def _read_samples(bags: list[Path], spec: ObservationSpec, perception: str = '', mirror: bool = False,
                  cache: str = ''):
    """(observations, actions, from the cache) of every bag, in order: in READERS spawned processes when there are
    many bags; ``cache``: the folder of a :class:`~robotsim_learning.sample_cache.SampleCache` ('' : none)."""
    readers = min(READERS, os.cpu_count() or 1)
    if readers < 2 or len(bags) < 8:
        yield from (cached_episode_samples(bag, spec, perception, mirror, cache) for bag in bags)
        return
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor
    # spawn: the parent may hold JAX's threads, which a forked child must not inherit.
    from robotsim_core.processes import exit_with_parent
    count = len(bags)
    with ProcessPoolExecutor(readers, mp_context=multiprocessing.get_context('spawn'), initializer=exit_with_parent,
                             initargs=(os.getpid(),)) as pool:
        yield from pool.map(cached_episode_samples, bags, [spec] * count, [perception] * count, [mirror] * count,
                            [cache] * count, chunksize=8)


def cached_episode_samples(bag: Path, spec: ObservationSpec, perception: str = '', mirror: bool = False,
                           cache: str = '') -> tuple[np.ndarray, np.ndarray, bool]:
    """:func:`episode_samples` of ``bag`` through the sample cache in folder ``cache`` ('' : decoded from the bag),
    and whether they came from the cache."""
    if not cache:
        return (*episode_samples(bag, spec, perception, mirror), False)
    from .sample_cache import SampleCache, sample_key
    store, key = SampleCache(Path(cache)), sample_key(bag, spec.to_json(), mirror)
    stored = store.get(key)
    if stored is not None:
        return (*stored, True)
    observations, actions = episode_samples(bag, spec, perception, mirror)
    store.put(key, observations, actions)
    return observations, actions, False


_STAGES: dict[str, object] = {}


def _perception_stage(path: str, spec: ObservationSpec):
    """The perception stage of ``path`` (one per process and file), checked against ``spec``."""
    from .policy_runtime import PerceptionStage
    if path not in _STAGES:
        _STAGES[path] = PerceptionStage(path, sha256=spec.perception, classes=spec.perception_classes)
    return _STAGES[path]


def episode_samples(bag: Path, spec: ObservationSpec, perception: str = '',
                    mirror: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """(observations, actions) of one bag, one per recorded command once every input has arrived (``perception``:
    the perception model's file, for a spec that observes its abstraction). ``mirror``: each followed by its
    mirror image about the robot's x axis (:func:`mirrored_sample`)."""
    from rosbags.highlevel import AnyReader

    from .observation import ImuHeadingOdometry, observation_from_messages
    perceive = _perception_stage(perception, spec) if spec.uses_perception else None
    rows, actions = [], []
    estimate = ImuHeadingOdometry() if spec.uses_imu else None
    memory = spec.route_memory()
    scan = goal = None
    images, odometry = deque(maxlen=5), deque(maxlen=20)  # as deep as the policy node's queues
    with AnyReader([bag]) as reader:
        connections = [c for c in reader.connections if c.topic in TOPICS]
        label_topic = '/expert/cmd_vel' if any(c.topic == '/expert/cmd_vel' for c in connections) else '/cmd_vel'
        for connection, _, raw in reader.messages(connections=connections):
            message = reader.deserialize(raw, connection.msgtype)
            topic = connection.topic
            if topic == '/scan':
                scan = message
            elif topic == '/camera/image_raw':
                images.append(message)
            elif topic == '/odom':
                odometry.append(message)
                if estimate is not None:
                    estimate.add_odometry(message)
            elif topic == '/imu/data' and estimate is not None:
                estimate.add_imu(message)
            elif topic == '/goal_pose':
                goal = (message.pose.position.x, message.pose.position.y)
            elif topic == label_topic and (scan is not None or not spec.uses_scan) and goal is not None and odometry \
                    and (images or not spec.uses_image) and (estimate is None or estimate.pose() is not None):
                pose = estimate.pose() if estimate is not None else None
                rows.append(observation_from_messages(spec, scan, images, odometry, goal, pose, perceive, memory))
                actions.append((message.linear.x, message.angular.z))
                if mirror:
                    row, action = mirrored_sample(spec, scan, odometry, goal, pose, actions[-1], memory)
                    rows.append(row)
                    actions.append(action)
    return np.array(rows, dtype=np.float32).reshape(-1, spec.size), np.array(actions, dtype=np.float32).reshape(-1, 2)


def mirrored_sample(spec: ObservationSpec, scan, odometries, goal_odom, pose, action,
                    memory=None) -> tuple[np.ndarray, tuple]:
    """A decision mirrored about the robot's x axis: the scan read in the mirrored world, the yaw rate, the goal's
    lateral offset and the commanded turn negated (a robot symmetric about that axis, with its lidar on it, makes
    the mirrored decision in the mirrored room), the route read at the mirrored bearings (``memory``: the
    episode's route memory, already given this scan). For a spec that observes no image."""
    from .observation import decision_state, goal_in_base, mirrored_ranges, observation
    from .observation import waypoint_goal
    _, odometry, robot = decision_state(spec, scan, [], odometries, pose)
    x, y = waypoint_goal(spec, memory, robot, goal_odom) if spec.route_waypoint else goal_in_base(goal_odom, robot)
    twist = odometry.twist.twist
    route = memory.features(robot, goal_odom, mirror=True) if spec.uses_route else None
    row = observation(spec, mirrored_ranges(scan.ranges, scan.angle_min, scan.angle_increment), None,
                      (twist.linear.x, -twist.angular.z), (x, -y), route=route)
    return row, (action[0], -action[1])


def mirror_problem(model, spec: ObservationSpec) -> str:
    """'' when ``--mirror`` makes sense for the robot and the observation; otherwise why not."""
    from .evaluation import footprint
    from .shield import lidar_pose
    if spec.uses_image or not spec.uses_scan:
        return 'mirrors the scan: expected a policy observing the scan and no camera image (--no-image)'
    _, y, yaw = lidar_pose(model)
    if abs(y) > 1e-3 or abs(yaw) > 1e-3:
        return f"robot {model.name}'s lidar is not on its base's x axis facing forward: its mirror image is no scan it reads"
    shapes = footprint(model)
    if not np.allclose(np.sort(shapes[:, :, 1].max(axis=1)), np.sort(-shapes[:, :, 1].min(axis=1)), atol=1e-3):
        return f"robot {model.name}'s footprint is not symmetric about its x axis"
    return ''


def robot_of(bag: Path):
    """The robot the episode ran (the dataset writes its robot.yaml beside each bag)."""
    from robotsim_core.description import load_robot
    return load_robot(str(bag / 'robot.yaml'))


def dataset_provenance(dataset: Path) -> dict:
    """What the policy file records of a training dataset: enough to tell its scenarios apart from an
    evaluation's (seed, episodes, randomisation spec) and to recognise the very dataset (its manifest's
    sha256), and no path of the machine that trained (the folder's name only)."""
    manifest_bytes = (dataset / 'dataset.json').read_bytes()
    manifest = read_manifest(dataset)
    settings = manifest.get('settings') if isinstance(manifest.get('settings'), dict) else {}
    randomization = manifest.get('randomization') if isinstance(manifest.get('randomization'), dict) else {}
    spec_path = randomization.get('path')
    driver = settings.get('driver')
    if isinstance(driver, str) and ':' in driver:  # NAME:FILE: the policy that drove, by its file's name only
        name, _, path = driver.partition(':')
        driver = f'{name}:{os.path.basename(path)}'
    return {'name': dataset.resolve().name, 'manifest_sha256': hashlib.sha256(manifest_bytes).hexdigest(),
            'seed': settings.get('seed'), 'episodes': settings.get('episodes'), 'driver': driver,
            **RunOptions.from_settings(settings).settings(),
            'randomization': {'name': os.path.basename(spec_path) if isinstance(spec_path, str) else None,
                              'sha256': randomization.get('sha256')},
            'source_commit': manifest.get('source_commit')}


def portable_command(argv: list[str]) -> str:
    """A command line as the policy file records it: paths cut to their last part (no folder of the
    machine that trained)."""
    return ' '.join(shlex.quote(os.path.basename(a.rstrip('/')) if os.sep in a and not a.startswith('-') else a)
                    for a in argv)


def train_from_dataset(datasets: list[str], out: str, config, image: bool = True, progress=None,
                       heading: str = 'imu', command: list[str] | None = None, sectors: int = 36,
                       corridors: tuple[float, ...] = (), scan: bool = True, perception: str = '',
                       mirror: bool = False, cache: str | None = '', reading=None, route: int = 0,
                       waypoint: float = 0.0, twist: bool = True) -> dict:
    """Train on ``datasets`` and write the ONNX policy to ``out``; its ``robotsim.training`` metadata holds the
    report: losses, sizes, the training configuration, the datasets' provenance (:func:`dataset_provenance`)
    and ``command`` (:func:`portable_command`). ``perception`` (a perception model's file) trains the control stage
    of a chained policy: the camera image is observed through that model's abstraction, and the model is copied
    beside ``out`` (:func:`~robotsim_learning.policy_runtime.perception_path`). ``cache``: the folder of the
    sample cache ('' : :func:`~robotsim_learning.sample_cache.cache_folder`, bounded by the environment; None: no
    cache); ``reading(done, total, cached)`` is called after each bag is read."""
    import dataclasses
    import shutil

    from .policy_model import export_onnx, train
    from .policy_runtime import PolicyFileError, perception_path

    started = time.monotonic()
    distinct_datasets(datasets)
    bags = [bag for dataset in datasets for bag in demonstration_bags(Path(dataset))]
    model = robot_of(bags[0])
    try:
        spec = spec_for_robot(model, sectors if scan else 0, image=image, heading=heading, corridors=corridors,
                              route=route, waypoint=waypoint, twist=twist)
    except ValueError as error:
        raise TrainingDataError(f'{bags[0]}: {error}') from None
    if perception:
        if not spec.uses_image:
            raise TrainingDataError('--perception: the perception stage sees the camera image: expected it observed '
                                    '(not --no-image)')
        try:
            stage = _perception_stage(perception, spec)
        except PolicyFileError as error:
            raise TrainingDataError(f'--perception: {error}') from None
        spec = dataclasses.replace(spec, perception=stage.sha256, perception_classes=stage.classes)
        size = (spec.image_height // stage.factor, spec.image_width // stage.factor)
        if size[0] < spec.image_sectors[0] or size[1] < spec.image_sectors[1]:
            raise TrainingDataError(f'--perception: {perception}: shrinks the {spec.image_width}x{spec.image_height} '
                                    f'camera image by {stage.factor} to {size[1]}x{size[0]}; expected at least '
                                    f'{spec.image_sectors[1]}x{spec.image_sectors[0]} (a smaller --factor)')
    problem = mirror_problem(model, spec) if mirror else ''
    if problem:
        raise TrainingDataError(f'--mirror: {problem}')
    if spec.sectors > spec.scan_samples:
        raise TrainingDataError(f'--sectors: expected at most the {spec.scan_samples} samples of the scan of '
                                f'{bags[0]}, got {spec.sectors}')
    if spec.uses_image:  # before reading any bag: a dataset without images gives no sample at all
        for dataset in datasets:
            if read_manifest(Path(dataset)).get('settings', {}).get('cameras') is False:
                raise TrainingDataError(f'{dataset}: generated with --no-cameras, so its bags have no {IMAGE_TOPIC}, '
                                        f'which a policy observing the camera image needs; expected a dataset with '
                                        f'camera images, or train with --no-image (lidar, odometry and goal only)')
    from .sample_cache import SampleCache, cache_folder, limit_from_environment
    limit = None
    if cache == '':
        try:
            limit = limit_from_environment()
        except ValueError as error:
            raise TrainingDataError(str(error)) from None
        cache = str(cache_folder())
    observations, actions, episodes, cached = [], [], [], 0
    for index, (rows, commands, stored) in enumerate(_read_samples(bags, spec, perception, mirror, cache or '')):
        observations.append(rows)
        actions.append(commands)
        episodes.append(np.full(len(rows), index))
        cached += stored
        if reading is not None:
            reading(index + 1, len(bags), cached)
    if cache and limit is not None:
        SampleCache(Path(cache)).trim(limit)
    observations, actions = np.concatenate(observations), np.concatenate(actions)
    if len(observations) < 10:
        raise TrainingDataError(_too_few_samples(datasets, bags, spec, len(observations)))
    drive = model.drive
    policy = train(observations, actions, spec, (drive.max_linear_speed, drive.max_yaw_rate), config,
                   episodes=np.concatenate(episodes), progress=progress)
    provenance = [dataset_provenance(Path(d)) for d in datasets]
    policy.report.update({'datasets': provenance, 'training_seeds': sorted({d['seed'] for d in provenance
                                                                             if isinstance(d['seed'], int)}),
                          'episodes': len(bags), 'samples': int(len(observations)), 'robot': model.name,
                          'heading': heading, 'image': image, 'scan': scan, 'mirror': mirror,
                          **({'perception': {'name': os.path.basename(perception), 'sha256': spec.perception}}
                             if perception else {}),
                          'command': portable_command(command) if command else None,
                          'total_seconds': time.monotonic() - started, 'cached_episodes': cached})
    try:
        export_onnx(policy, out, f'robotsim behaviour-cloning policy for {model.name}: observation -> cmd_vel')
        if perception and os.path.abspath(perception) != os.path.abspath(perception_path(out)):
            shutil.copyfile(perception, perception_path(out))
    except OSError as error:  # the CLI checked --out before training: this is what changed since (a full disk)
        raise TrainingDataError(f'--out {out}: cannot write the policy ({error.strerror or error})') from None
    return policy.report


def _too_few_samples(datasets: list[str], bags: list[Path], spec: ObservationSpec, count: int) -> str:
    """Why the bags gave (almost) no sample: the topics the observation needs that no bag holds."""
    from rosbags.highlevel import AnyReader

    counts: dict[str, int] = {}
    for bag in bags:
        with AnyReader([bag]) as reader:
            for connection in reader.connections:
                counts[connection.topic] = counts.get(connection.topic, 0) + connection.msgcount
    needed = ['/cmd_vel'] + (['/scan'] if spec.uses_scan else []) + ['/odom', '/goal_pose'] \
        + (['/imu/data'] if spec.uses_imu else []) \
        + ([IMAGE_TOPIC] if spec.uses_image else [])
    missing = [topic for topic in needed if not counts.get(topic)]
    line = f'{", ".join(datasets)}: only {count} samples (expected episodes with {", ".join(needed)})'
    if missing:
        line += f'; the bags have no {" and no ".join(missing)}'
    if IMAGE_TOPIC in missing:
        line += ': train with --no-image to observe lidar, odometry and goal only'
    elif '/imu/data' in missing:
        line += ': train with --heading odometry to take the heading from the odometry'
    return line
