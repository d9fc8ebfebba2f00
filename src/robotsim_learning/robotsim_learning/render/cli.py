"""``robotsim render``: Blender re-renders of a recorded episode, pixel-aligned with the simulator's camera.

    robotsim render BAG_OR_EPISODE --out DIR [--camera camera] [--engine cycles|eevee|workbench]
        [--passes rgb,depth,seg,lineart] [--samples N] [--every K] [--limit N] [--world W --robot R]
        [--variety [--seed S]] [--compare] [--no-install]
    robotsim render --setup          (install the bpy environment only; `make render-setup`)

The workspace side (this module, ROS-free: rosbags, MuJoCo) reads the bag and the robot and world
descriptions and writes a scene description; the Blender side (blender_side.py) runs in bpy's own
environment (environment.py), installed on first use, and renders frame by frame.

Output folder: rgb/, depth/, seg/, lineart/ (one file per frame, numbered 000000...), render.json
(source, camera, engine, samples, passes, each frame's stamp and files, the seed and every variety
value, the intrinsics Blender's camera was read back with, seconds per frame), labels.json (entity
id -> name, the simulator's table), camera_info.json (the recorded intrinsics), blender.log (Blender's own
output), .scene/ (what Blender was handed: scene.json, scene.npz, request.json).
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import numpy as np

from robotsim_core.errors import DescriptionError

from .environment import BPY_VERSION, RenderSetupError, ensure_environment, run_blender
from .recording import RecordingError

PASSES = ('rgb', 'depth', 'seg', 'lineart')
ENGINES = ('cycles', 'eevee', 'workbench')
INTRINSICS_TOLERANCE = 1e-4
"""Pixels: Blender's camera, read back through its own projection, must project as the recorded
CameraInfo does (Blender's mathutils computes in float32: about 1e-5 px at these focal lengths)."""


class RenderError(RuntimeError):
    """One line for the user (exit status 2)."""


HELP = 'Blender re-renders of a recorded episode: RGB, depth, segmentation, line art'
"""One line for ``robotsim --help`` (this module is a command: the ``robotsim.commands`` entry points)."""


def add_arguments(parser) -> None:
    parser.add_argument('source', nargs='?', help='a recorded bag folder: a dataset episode (its world.yaml and '
                                                  'robot.yaml are used) or a record:=true recording')
    parser.add_argument('--out', help='output folder (rgb/, depth/, seg/, lineart/, render.json)')
    parser.add_argument('--camera', default='camera', help="the robot's camera (sensor name) to re-render")
    parser.add_argument('--engine', choices=ENGINES, default='cycles',
                        help='RGB engine: cycles (path tracing, CPU), eevee (rasteriser, needs OpenGL: EGL here), '
                             'workbench (flat preview)')
    parser.add_argument('--passes', default=','.join(PASSES),
                        help='comma-separated: rgb (PNG), depth (float32 m along the optical axis, +Inf no hit, .npy), '
                             'seg (int32 entity ids of the simulator, -1 background, .npy), lineart (PNG)')
    parser.add_argument('--samples', type=int, default=16, help='RGB samples per pixel (Workbench: anti-aliasing)')
    parser.add_argument('--every', type=int, default=1, help='render every K-th recorded camera frame')
    parser.add_argument('--limit', type=int, default=None, help='render at most this many frames')
    parser.add_argument('--world', help='world YAML or name (default: world.yaml beside the bag)')
    parser.add_argument('--robot', help='robot YAML or name (default: robot.yaml beside the bag)')
    parser.add_argument('--variety', action='store_true',
                        help="domain variety: materials, textures and lighting drawn from the episode's seed")
    parser.add_argument('--seed', type=int, default=None,
                        help='seed of the variety (default: the episode\'s sim_seed in dataset.json, else the '
                             'seed on /sim/status)')
    parser.add_argument('--compare', action='store_true',
                        help="compare depth and segmentation with the simulator's recorded images of the same frames")
    parser.add_argument('--no-install', action='store_true', help='fail instead of installing bpy on first use')
    parser.add_argument('--setup', action='store_true', help=f'install the bpy {BPY_VERSION} environment and exit')


def run(args) -> int:
    try:
        if args.setup:
            python = ensure_environment(install=True)
            print(f'robotsim render: bpy {BPY_VERSION} ready ({python})')
            return 0
        render(args)
        return 0
    except (RenderError, RenderSetupError, RecordingError, DescriptionError) as error:
        print(f'robotsim: error: {error}', file=sys.stderr)
        return 2


def _passes(text: str) -> list[str]:
    passes = [p.strip() for p in text.split(',') if p.strip()]
    unknown = [p for p in passes if p not in PASSES]
    if unknown or not passes:
        raise RenderError(f'--passes: expected a comma-separated subset of {",".join(PASSES)}, got {text!r}')
    return passes


def _description_paths(args, bag: Path) -> tuple[str, str]:
    """--world/--robot, else the files beside a dataset episode, else the scenario recorded in the bag."""
    from robotsim_sim.scenario import ScenarioError, read_scenario, scenario_files

    world, robot = args.world, args.robot
    if world is None and (bag / 'world.yaml').is_file():
        world = str(bag / 'world.yaml')
    if robot is None and (bag / 'robot.yaml').is_file():
        robot = str(bag / 'robot.yaml')
    if world is None or robot is None:
        try:
            recorded = read_scenario(bag)
        except ScenarioError as error:
            raise RenderError(str(error)) from None
        if recorded is not None:
            recorded_world, recorded_robot = scenario_files(recorded, bag)
            world, robot = world or recorded_world, robot or recorded_robot
    if world is None or robot is None:
        missing = ' and '.join(f'--{name}' for name, value in (('world', world), ('robot', robot)) if value is None)
        raise RenderError(f'{bag}: no /sim/scenario in the bag and no {"world.yaml" if world is None else "robot.yaml"} '
                          f'beside it (a recording made before robotsim recorded its scenario): expected {missing} '
                          'naming the description the recording was made with')
    return world, robot


def episode_seed(bag: Path) -> int | None:
    """The episode's sim_seed from its dataset's manifest (the folder above), if it is a dataset episode."""
    manifest = bag.parent / 'dataset.json'
    if not manifest.is_file():
        return None
    try:
        episodes = json.loads(manifest.read_text()).get('episodes', [])
    except (OSError, ValueError):
        return None
    for episode in episodes:
        if episode.get('bag') == bag.name and 'sim_seed' in episode:
            return int(episode['sim_seed'])
    return None


def _duration(seconds: float) -> str:
    seconds = int(round(seconds))
    return f'{seconds // 60} min {seconds % 60:02d} s' if seconds >= 60 else f'{seconds} s'


def render(args, log=None) -> dict:
    """Render; returns the render.json document."""
    from robotsim_core.description import load_robot
    from robotsim_sim.scene import load_world, resolve_world_path

    from .recording import read_recording
    from .scene_description import build_description, write_description

    log = log or (lambda text: print(text, file=sys.stderr, flush=True))
    if not args.source:
        raise RenderError('expected BAG_OR_EPISODE (a recorded bag folder), or --setup')
    if not args.out:
        raise RenderError('expected --out DIR')
    bag = Path(args.source)
    if not bag.is_dir():
        raise RenderError(f'{bag}: expected a rosbag2 bag folder (metadata.yaml and an .mcap file)')
    passes = _passes(args.passes)
    for name in ('samples', 'every'):
        if getattr(args, name) < 1:
            raise RenderError(f'--{name}: expected an integer >= 1, got {getattr(args, name)}')
    if args.limit is not None and args.limit < 1:
        raise RenderError(f'--limit: expected an integer >= 1, got {args.limit}')
    world_path, robot_path = _description_paths(args, bag)
    world = load_world(resolve_world_path(world_path))
    robot = load_robot(robot_path)
    recording = read_recording(bag, args.camera)
    seed = None
    if args.variety:
        seed = args.seed if args.seed is not None else episode_seed(bag)
        seed = seed if seed is not None else recording.seed
        if seed is None:
            raise RenderError(f'--variety: {bag} is not a dataset episode and records no /sim/status seed: '
                              'expected --seed')
    stamps = recording.frame_stamps[::args.every]
    if args.limit is not None:
        stamps = stamps[:args.limit]
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    description = build_description(recording, world, robot, stamps, seed, warn=lambda text: log(
        f'robotsim render: warning: {text}'))
    work = out / '.scene'
    scene_path, arrays_path = write_description(description, work)
    python = ensure_environment(install=not args.no_install, log=log)
    request = work / 'request.json'
    request.write_text(json.dumps({'scene': str(scene_path), 'arrays': str(arrays_path), 'out': str(out),
                                   'engine': args.engine, 'samples': args.samples, 'passes': passes}))
    log(f'robotsim render: {len(stamps)} frames of /{args.camera} from {bag} with {args.engine} '
        f'({args.samples} samples), passes {",".join(passes)} -> {out}')
    started = time.monotonic()
    per_frame: list[float] = []

    def progress(update: dict) -> None:
        per_frame.append(sum(update['seconds'].values()))
        done, total = update['frame'] + 1, update['frames']
        stamp = stamps[update['frame']] / 1e9
        parts = ', '.join(f'{name} {value:.2f} s' for name, value in update['seconds'].items())
        eta = np.mean(per_frame) * (total - done)
        log(f'robotsim render: frame {done}/{total} (t = {stamp:.3f} s): {parts}; ETA {_duration(eta)}')

    run_blender(python, request, out / 'blender.log', progress)
    blender = json.loads((out / 'blender.json').read_text())
    recorded = recording.intrinsics
    for key in ('intrinsics', 'geometry_intrinsics'):
        read_back = blender.get(key)
        if read_back is None:
            continue
        error = max(abs(read_back[name] - getattr(recorded, name)) for name in ('fx', 'fy', 'cx', 'cy'))
        if error > INTRINSICS_TOLERANCE:
            raise RenderError(f"Blender's camera projects with {read_back}, the recorded CameraInfo says "
                              f'fx={recorded.fx} fy={recorded.fy} cx={recorded.cx} cy={recorded.cy}: expected them '
                              'identical')
    frames = [{'index': i, 'stamp_ns': int(stamp),
               **{name: f'{name}/{i:06d}.{"npy" if name in ("depth", "seg") else "png"}' for name in passes},
               'seconds': blender['frames'][i] if i < len(blender['frames']) else {}}
              for i, stamp in enumerate(stamps)]
    document = {
        'format': 'robotsim-render', 'version': 1, 'source': str(bag), 'world': world_path, 'robot': robot_path,
        'camera': recorded.as_dict() | {'name': args.camera}, 'engine': args.engine, 'samples': args.samples,
        'passes': passes, 'every': args.every, 'bpy': blender['bpy'],
        'intrinsics_read_back': blender.get('intrinsics'), 'labels': description.document['labels'],
        'variety': description.document['variety'], 'frames': frames,
        'seconds_per_frame': float(np.mean(per_frame)) if per_frame else 0.0,
        'wall_seconds': time.monotonic() - started,
    }
    if args.compare:
        document['comparison'] = compare_with_recording(out, recording, frames, passes)
    (out / 'labels.json').write_text(json.dumps(description.document['labels'], indent=1) + '\n')
    (out / 'camera_info.json').write_text(json.dumps(recorded.as_dict(), indent=1) + '\n')
    (out / 'render.json').write_text(json.dumps(document, indent=1) + '\n')
    log(f'robotsim render: {len(frames)} frames in {_duration(document["wall_seconds"])} '
        f'({document["seconds_per_frame"]:.2f} s per frame) -> {out}')
    return document


def read_grey(path: Path) -> np.ndarray:
    from PIL import Image  # matplotlib's dependency (requirements/constraints.txt)
    with Image.open(path) as image:
        return np.asarray(image.convert('L'), dtype=np.float64)


def compare_with_recording(out: Path, recording, frames: list[dict], passes: list[str]) -> dict:
    """Per frame: Blender's depth and segmentation against the simulator's recorded images."""
    from .compare import depth_agreement, lineart_agreement, segmentation_iou
    from .recording import read_images

    stamps = {frame['stamp_ns'] for frame in frames}
    camera = recording.camera
    depth_topic, seg_topic = f'/{camera}/depth/image_raw', f'/{camera}/segmentation/image_raw'
    recorded_depth = read_images(recording.bag, depth_topic, stamps) if depth_topic in recording.topics else {}
    recorded_seg = read_images(recording.bag, seg_topic, stamps) if seg_topic in recording.topics else {}
    results = []
    for frame in frames:
        row = {'index': frame['index']}
        if 'depth' in passes and frame['stamp_ns'] in recorded_depth:
            row['depth'] = depth_agreement(np.load(out / frame['depth']), recorded_depth[frame['stamp_ns']])
        if frame['stamp_ns'] in recorded_seg:
            simulator = recorded_seg[frame['stamp_ns']]
            if 'seg' in passes:
                row['segmentation_iou'] = {str(k): v for k, v in
                                           segmentation_iou(np.load(out / frame['seg']), simulator).items()}
            if 'lineart' in passes:
                row['lineart'] = lineart_agreement(read_grey(out / frame['lineart']) / 255.0, simulator)
        results.append(row)
    return {'depth_topic': depth_topic if recorded_depth else None,
            'segmentation_topic': seg_topic if recorded_seg else None, 'frames': results}
