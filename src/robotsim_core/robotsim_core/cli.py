"""The ``robotsim`` command line (bare machine and full ROS install alike).

    robotsim describe ROBOT [--urdf OUT] [--mjcf OUT]
    robotsim contract check [--robot ROBOT] [--duration S] [--namespace NS] [--real]
    robotsim launch sim|real|robot [name:=value ...]   (the launch files' arguments)

ROBOT is a YAML path or a name under config/robots. Bad input prints one line naming the
file, the key path and what was expected, and exits with status 2 (no traceback).
"""

from __future__ import annotations

import argparse
import os
import sys

from .errors import DescriptionError


def _write(path: str, text: str) -> None:
    directory = os.path.dirname(os.path.abspath(path))
    os.makedirs(directory, exist_ok=True)
    with open(path, 'w', encoding='utf-8') as stream:
        stream.write(text)


def describe(args: argparse.Namespace) -> int:
    import mujoco

    from .description import load_robot
    from .mjcf import robot_to_mjcf
    from .urdf import tree_to_urdf

    model = load_robot(args.robot)
    urdf_text = tree_to_urdf(model.tree)
    mjcf_text = robot_to_mjcf(model)
    try:
        compiled = mujoco.MjModel.from_xml_string(mjcf_text)
    except ValueError as error:
        raise DescriptionError(model.source, '', f'generated MuJoCo model does not compile: {error}') from None
    if args.urdf:
        _write(args.urdf, urdf_text)
    if args.mjcf:
        _write(args.mjcf, mjcf_text)
    summary = model.summary()
    print(f"robot {summary['robot']} ({model.source})")
    print(f"  links {summary['links']}, joints {summary['joints']} ({summary['moving_joints']} moving), "
          f"mass {summary['mass_kg']:.3f} kg (MuJoCo: {float(compiled.body_subtreemass[1]):.3f} kg)")
    if model.drive:
        print(f"  drive {summary['drive']}: {summary['wheels']} wheels, wheelbase {summary['wheelbase_m']} m, "
              f"track {summary['track_m']} m")
    for arm in summary['arms']:
        print(f'  arm {arm}')
    for sensor in summary['sensors']:
        print(f'  sensor {sensor}')
    print(f'  MuJoCo: {compiled.nbody} bodies, {compiled.njnt} joints, {compiled.nu} actuators, '
          f'{compiled.nsensor} sensors, {compiled.ncam} cameras')
    for label, path in (('URDF', args.urdf), ('MJCF', args.mjcf)):
        if path:
            print(f'  wrote {label} {path}')
    return 0


def contract_check(args: argparse.Namespace) -> int:
    from .contract import robot_contract
    from .contract_check import format_table
    from .description import load_robot
    from .ros_contract_probe import probe

    contract = robot_contract(load_robot(args.robot))
    rows = probe(contract, args.duration, args.namespace, args.frame_prefix, include_sim_only=not args.real)
    print(format_table(rows))
    return 0 if all(row.ok for row in rows) else 1


def launch_command(args: argparse.Namespace) -> int:
    from .bringup import graph_for
    from .launcher import LaunchError, launch, say

    arguments = {}
    for item in args.arguments:
        name, separator, value = item.partition(':=')
        if not separator:
            raise DescriptionError('command line', item, 'expected name:=value (a launch argument)')
        arguments[name] = value
    nodes = graph_for(args.mode, arguments, 'command line')
    say(f'ROS_DOMAIN_ID={os.environ.get("ROS_DOMAIN_ID", "0")}, discovery '
        f'{os.environ.get("ROS_AUTOMATIC_DISCOVERY_RANGE", "(default)")}; {len(nodes)} nodes')
    try:
        return launch(nodes)
    except LaunchError as error:
        print(f'robotsim: error: {error}', file=sys.stderr)
        return 2


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog='robotsim', description='robotsim command line')
    commands = parser.add_subparsers(dest='command', required=True)
    describe_parser = commands.add_parser('describe', help='generate URDF and MuJoCo model from a robot description')
    describe_parser.add_argument('robot', help='robot YAML (or URDF overlay YAML) path, or a name in config/robots')
    describe_parser.add_argument('--urdf', help='write the URDF here')
    describe_parser.add_argument('--mjcf', help='write the MuJoCo MJCF here')
    describe_parser.set_defaults(handler=describe)
    contract_parser = commands.add_parser('contract', help="check a live ROS graph against a robot's topic contract")
    contract_parser.add_argument('action', choices=['check'])
    contract_parser.add_argument('--robot', default='rover', help='robot YAML path or name in config/robots')
    contract_parser.add_argument('--duration', type=float, default=5.0, help='seconds to watch the graph')
    contract_parser.add_argument('--namespace', default='', help="the robot's ROS namespace")
    contract_parser.add_argument('--frame-prefix', default='', help='prefix of every frame id (multi-robot)')
    contract_parser.add_argument('--real', action='store_true',
                                 help='a real robot: skip simulator-only topics; stamps must be wall time')
    contract_parser.set_defaults(handler=contract_check)
    launch_parser = commands.add_parser('launch', help='bare-machine launcher: start a bringup without `launch`')
    launch_parser.add_argument('mode', choices=['sim', 'real', 'robot'],
                               help='sim.launch.py, real.launch.py or robot.launch.py (use_sim:=true|false)')
    launch_parser.add_argument('arguments', nargs='*', metavar='name:=value', help='launch arguments')
    launch_parser.set_defaults(handler=launch_command)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return args.handler(args)
    except DescriptionError as error:
        print(f'robotsim: error: {error}', file=sys.stderr)
        return 2


if __name__ == '__main__':
    sys.exit(main())
