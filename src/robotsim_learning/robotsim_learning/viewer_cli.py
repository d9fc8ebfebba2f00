"""``robotsim view``: the robot in a browser.

    robotsim view BAG --out run.html [--robot R] [--world W] [--namespace NS] [--image-rate HZ]
    robotsim view --live [--host 127.0.0.1] [--port 8080] [--foxglove-port 8765] [--robot R] [--world W]

The replay page is written by the ROS-free :mod:`robotsim_core.viewer`; this module adds what lives in
other packages: world files (``robotsim_sim``) and the live view's ROS subscriber (:mod:`.viewer_node`).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from robotsim_core.viewer.bag_scene import MAX_IMAGE_RATE, BagSceneError

DEFAULT_PORT = 8080
"""HTTP/WebSocket port of the live view."""
DEFAULT_FOXGLOVE_PORT = 8765
"""Foxglove WebSocket port of the live view (Foxglove's own default); 0 turns it off."""


HELP = 'the robot in a browser: a replay page of a bag, or --live'
"""One line for ``robotsim --help`` (this module is a command: the ``robotsim.commands`` entry points)."""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument('bag', nargs='?', help='a rosbag2 folder (record:=true or a dataset episode) to replay')
    parser.add_argument('--out', help='the HTML file to write (one self-contained offline page)')
    parser.add_argument('--usd', help='a USD stage to write (.usdc binary, .usda text, with pattern textures in '
                                      'FILE.textures/ beside it; .usdz: one package with its textures): the run '
                                      'time-sampled, for usdview, Omniverse, Isaac or Blender')
    parser.add_argument('--live', action='store_true', help='serve the live view of the running simulation instead')
    parser.add_argument('--robot', help='robot name or YAML (default: robot.yaml beside the bag, else its '
                                        '/robot_description; live: rover)')
    parser.add_argument('--world', help='world name or YAML to draw (default: world.yaml beside the bag; live: room)')
    parser.add_argument('--namespace', default='', help="the robot's ROS namespace (multi-robot bags and runs)")
    parser.add_argument('--image-rate', type=float, default=MAX_IMAGE_RATE,
                        help=f'camera frames per second kept in the page (default {MAX_IMAGE_RATE:g})')
    parser.add_argument('--host', default='127.0.0.1', help='live: address to bind (default 127.0.0.1: this machine only)')
    parser.add_argument('--port', type=int, default=DEFAULT_PORT, help=f'live: HTTP/WebSocket port (default {DEFAULT_PORT})')
    parser.add_argument('--foxglove-port', type=int, default=DEFAULT_FOXGLOVE_PORT,
                        help=f'live: Foxglove WebSocket port (default {DEFAULT_FOXGLOVE_PORT}; 0: off)')


def load_world_arg(name_or_path: str):
    from robotsim_sim.scene import load_world, resolve_world_path
    return load_world(resolve_world_path(name_or_path))


def recorded_world(bag, world: str | None = None, namespace: str = ''):
    """The world to draw a recording in: ``world`` (a name or YAML) when given, else the ``world.yaml`` a dataset
    episode keeps beside its bag, else the world the recording carries (``/sim/scenario``); None when there is
    none. Raises the scenario's ScenarioError (one line) for an unreadable scenario."""
    from robotsim_core.viewer.replay import bag_folder
    from robotsim_sim.scenario import ScenarioError, read_scenario, scenario_files

    if world:
        return load_world_arg(world)
    if (bag_folder(bag) / 'world.yaml').is_file():
        return load_world_arg(str(bag_folder(bag) / 'world.yaml'))
    try:
        recorded = read_scenario(bag_folder(bag))
    except ScenarioError:
        raise
    except Exception:  # not a readable bag: the page says so in its own words
        return None
    return None if recorded is None else load_world_arg(scenario_files(recorded, bag_folder(bag), namespace)[0])


def _error(text: str) -> int:
    print(f'robotsim: error: {text}', file=sys.stderr)
    return 2


def run(args: argparse.Namespace) -> int:
    if args.live:
        if args.bag or args.out:
            return _error('view --live serves the running simulation: give no BAG and no --out')
        from .ros.viewer_node import serve
        return serve(args)
    if not args.bag:
        return _error('view: expected a BAG folder (or --live)')
    if not args.out and not args.usd:
        return _error('view: expected --out FILE.html (the page to write) or --usd FILE.usdc (a USD stage)')
    if args.usd and Path(args.usd).suffix not in ('.usdc', '.usda', '.usd', '.usdz'):
        return _error(f'view: --usd {args.usd}: expected a file ending in .usdc, .usda, .usd or .usdz')
    if not args.image_rate > 0:
        return _error(f'view: --image-rate: expected a rate > 0 frames per second, got {args.image_rate:g}')
    from robotsim_core.output_files import check_output_file
    from robotsim_core.description import load_robot
    from robotsim_core.errors import DescriptionError
    from robotsim_core.viewer.replay import write_replay

    try:
        for path, option in ((args.out, '--out'), (args.usd, '--usd')):
            if path:  # before reading the bag: a folder or an unwritable place is one line
                check_output_file(path, option)
    except DescriptionError as error:
        return _error(str(error))

    from robotsim_sim.scenario import ScenarioError

    robot = load_robot(args.robot) if args.robot else None
    try:
        world = recorded_world(args.bag, args.world, args.namespace or '')
    except ScenarioError as error:
        return _error(str(error))
    try:
        if args.out:
            print(write_replay(args.bag, Path(args.out), robot, world, args.namespace, args.image_rate))
    except BagSceneError as error:
        return _error(str(error))
    except OSError as error:  # the disk filled, or the folder became read-only, while writing
        return _error(f'--out {args.out}: cannot write ({error.strerror or error})')
    if args.usd:
        from robotsim_core.viewer.usd_stage import UsdUnavailable, write_usd
        from robotsim_core.viewer.replay import robot_beside
        try:
            print(write_usd(args.bag, Path(args.usd), robot or robot_beside(args.bag, []), world, args.namespace))
        except (BagSceneError, UsdUnavailable) as error:
            return _error(str(error))
        except OSError as error:
            return _error(f'--usd {args.usd}: cannot write ({error.strerror or error})')
    return 0
