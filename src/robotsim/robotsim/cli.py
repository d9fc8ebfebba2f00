"""The ``robotsim`` command line (bare machine and full ROS install alike).

    robotsim describe ROBOT [--urdf OUT] [--mjcf OUT] [--gltf OUT.glb [--world W]] [--strict]
    robotsim import ROBOT.urdf --out OVERLAY.yaml   (a starting overlay for an existing URDF)
    robotsim import WORLD.sdf --out WORLD.yaml     (a world file from a Gazebo SDF world)
    robotsim contract check [--robot ROBOT] [--duration S] [--namespace NS] [--real]
    robotsim launch sim|real|robot [name:=value ...]   (the launch files' arguments)
    robotsim bag repair BAG   (make an interrupted MCAP recording readable again)
    robotsim odometry calibrate [--robot ROBOT] [--world W | --from-bag BAG]   (skid-steer effective track)
    robotsim arm reach X Y Z [PITCH] [--plan-only]   (plan on the running simulator's world, move through FollowJointTrajectory)
    robotsim dataset generate|verify|export ...   (randomised episodes as bags, manifest, LeRobot export)
    robotsim policy train DATASET --out policy.onnx   (behaviour cloning, ONNX export)
    robotsim policy eval --driver policy --policy FILE --episodes N --seed S   (closed loop through the ROS graph)
    robotsim view BAG --out run.html | robotsim view --live   (the robot in a browser: replay page, live view)
    robotsim render BAG --out DIR [--engine cycles|eevee|workbench] [--passes rgb,depth,seg,lineart]   (Blender)

ROBOT is a YAML path or a name under config/robots. Bad input prints one line naming the
file, the key path and what was expected, and exits with status 2 (no traceback).
"""

from __future__ import annotations

import argparse
import os
import re
import sys

from robotsim_core.errors import DescriptionError
from robotsim_core.output_files import check_output_file

_ROS_NAME = re.compile(r'[A-Za-z][A-Za-z0-9_]*$')


def _write(path: str, text: str, option: str) -> None:
    check_output_file(path, option)
    try:
        with open(path, 'w', encoding='utf-8') as stream:
            stream.write(text)
    except OSError as error:
        raise DescriptionError('command line', option, f'cannot write {path}: {error.strerror or error}') from None


def describe(args: argparse.Namespace) -> int:
    import mujoco

    from robotsim_core.description import load_robot
    from robotsim_core.description.mjcf import robot_to_mjcf
    from robotsim_core.description.urdf import tree_to_urdf

    for option, path in (('--urdf', args.urdf), ('--mjcf', args.mjcf), ('--gltf', args.gltf)):
        if path:
            check_output_file(path, option)  # all checked before the first is written
    model = load_robot(args.robot, strict=args.strict)
    urdf_text = tree_to_urdf(model.tree)
    mjcf_text = robot_to_mjcf(model)
    try:
        compiled = mujoco.MjModel.from_xml_string(mjcf_text)
    except ValueError as error:
        # MuJoCo puts the offending element on a line of its own: keep the refusal one line.
        raise DescriptionError(model.source, '', 'generated MuJoCo model does not compile: '
                                                 + ' '.join(str(error).split())) from None
    if args.urdf:
        _write(args.urdf, urdf_text, '--urdf')
    if args.mjcf:
        _write(args.mjcf, mjcf_text, '--mjcf')
    if args.world and not args.gltf:
        raise DescriptionError('command line', '--world', 'expected --gltf OUT.glb too (the world is drawn in the glTF)')
    if args.gltf:
        from robotsim_core.viewer.gltf import write_glb
        world = _load_world(args.world) if args.world else None
        try:
            write_glb(args.gltf, model, world)
        except OSError as error:
            raise DescriptionError('command line', '--gltf', f'cannot write {args.gltf}: {error.strerror or error}') from None
    summary = model.summary()
    print(f"robot {summary['robot']} ({model.source})")
    print(f"  links {summary['links']}, joints {summary['joints']} ({summary['moving_joints']} moving), "
          f"mass {summary['mass_kg']:.3f} kg (MuJoCo: {float(compiled.body_subtreemass[1]):.3f} kg)")
    if model.drive:
        print(f"  drive {summary['drive']}: {summary['wheels']} wheels, wheelbase {summary['wheelbase_m']} m, "
              f"track {summary['track_m']} m")
    elif model.fixed_base:
        print(f'  fixed base: {model.tree.root()} welded to the world at xyz {tuple(model.mount.xyz)}, '
              f'rpy {tuple(model.mount.rpy)}')
    if model.exclusion_counts:
        reasons = ', '.join(f'{count} {reason}' for reason, count in model.exclusion_counts.items() if count)
        print(f'  self-collision: {len(model.collision_excludes)} link pairs excluded ({reasons or "none"})')
    for warning in model.warnings:
        print(f'robotsim: warning: {warning}', file=sys.stderr)
    for arm in summary['arms']:
        print(f'  arm {arm}')
    for sensor in summary['sensors']:
        print(f'  sensor {sensor}')
    print(f'  MuJoCo: {compiled.nbody} bodies, {compiled.njnt} joints, {compiled.nu} actuators, '
          f'{compiled.nsensor} sensors, {compiled.ncam} cameras')
    for label, path in (('URDF', args.urdf), ('MJCF', args.mjcf), ('glTF', args.gltf)):
        if path:
            print(f'  wrote {label} {path}' + (f' (in world {args.world})' if label == 'glTF' and args.world else ''))
    return 0


def _load_world(name_or_path: str):
    # World files are the simulator package's (robotsim_sim depends on this package): imported here only.
    try:
        from robotsim_sim.scene import load_world, resolve_world_path
    except ImportError as error:
        raise DescriptionError('command line', '--world', f'reading a world needs the robotsim_sim package ({error})') from None
    return load_world(resolve_world_path(name_or_path))


def import_command(args: argparse.Namespace) -> int:
    """A URDF -> a starting overlay; an SDF world -> a world file."""
    if args.source.lower().endswith(('.sdf', '.world')):
        return import_sdf_command(args)
    if args.model_path:
        raise DescriptionError('command line', '--model-path', 'expected an SDF world to import (a URDF\'s meshes are '
                                                               'found through its package:// paths)')
    return import_urdf_command(args)


def import_sdf_command(args: argparse.Namespace) -> int:
    from robotsim_core.description.sdf_world import import_sdf_world

    check_output_file(args.out, '--out')
    if not args.out.lower().endswith(('.yaml', '.yml')):
        raise DescriptionError('command line', '--out', f'expected a world YAML file (.yaml), got {args.out!r}')
    for folder in args.model_path:
        if not os.path.isdir(folder):
            raise DescriptionError('command line', '--model-path', f'expected a folder of models, got {folder!r}')
    imported = import_sdf_world(args.source, args.out, args.model_path)
    _write(args.out, imported.yaml_text(args.source), '--out')
    world = _load_world(args.out)  # what the simulator reads: meshes, images and sizes checked now
    counts = ', '.join(f'{len(getattr(world, kind))} {kind}' for kind in ('boxes', 'cylinders', 'spheres', 'meshes',
                                                                           'heightfields') if getattr(world, kind))
    print(f'wrote {args.out}: world {world.name} ({counts or "no entities"}); '
          f'{len(imported.untranslated)} element(s) not translated (listed at the top of the file)')
    for line in imported.untranslated:
        print(f'  not translated: {line}')
    return 0


def import_urdf_command(args: argparse.Namespace) -> int:
    from robotsim_core.description.overlay_draft import draft_overlay

    args.urdf = args.source
    check_output_file(args.out, '--out')
    text = draft_overlay(args.urdf, args.out)
    _write(args.out, text, '--out')
    print(f'wrote {args.out}: a starting overlay for {args.urdf}; edit it, then: robotsim describe {args.out}')
    return 0


def contract_check(args: argparse.Namespace) -> int:
    from robotsim_core.contract import robot_contract
    from robotsim_core.contract_check import format_table
    from robotsim_core.description import load_robot
    from robotsim_core.ros.contract_probe import probe

    if not args.duration > 0 or args.duration > 3600:  # also refuses NaN
        raise DescriptionError('command line', '--duration', f'expected seconds to watch the graph, more than 0 and '
                                                             f'at most 3600, got {args.duration:g}')
    for option, value in (('--namespace', args.namespace), ('--frame-prefix', args.frame_prefix.rstrip('/'))):
        if value.strip('/') and not all(_ROS_NAME.match(part) for part in value.strip('/').split('/')):
            raise DescriptionError('command line', option, f'expected a ROS name (parts [A-Za-z][A-Za-z0-9_]* '
                                                           f'separated by /), got {value!r}')
    model = load_robot(args.robot)
    contract = robot_contract(model)
    if args.no_cameras:  # a bringup with cameras:=false: its rendering sensors publish nothing, by design
        from dataclasses import replace

        from robotsim_core.sensor_kinds import sensor_kind
        rendered = {sensor.name for sensor in model.sensors if sensor_kind(sensor.type).renders}
        contract = replace(contract, topics=[topic for topic in contract.topics if topic.sensor not in rendered])
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
        if name in arguments:
            raise DescriptionError('command line', name, f'given twice ({name}:={arguments[name]} and {item}): '
                                                         'expected it once')
        arguments[name] = value
    nodes = graph_for(args.mode, arguments, 'command line')
    say(f'ROS_DOMAIN_ID={os.environ.get("ROS_DOMAIN_ID", "0")}, discovery '
        f'{os.environ.get("ROS_AUTOMATIC_DISCOVERY_RANGE", "(default)")}; {len(nodes)} nodes')
    try:
        return launch(nodes)
    except LaunchError as error:
        print(f'robotsim: error: {error}', file=sys.stderr)
        return 2


COMMANDS_GROUP = 'robotsim.commands'
"""Entry point group through which packages add commands, as sensor kinds are added: the entry's name is the
command's words joined by dots (``dataset``, ``policy.train``), its value a module with ``HELP`` (one line),
``add_arguments(parser)`` and ``run(args) -> exit status`` (robotsim_learning registers its commands so)."""
GROUP_HELP = {'policy': 'driving policies: train one from datasets, evaluate it in closed loop',
              'perception': 'perception stages of a chained policy: camera frame -> structural abstraction',
              'bag': 'rosbag2 MCAP bag tools: info, repair'}
"""Help of a command word that only groups registered commands (``robotsim policy train|eval``)."""


def _registered_commands() -> list[tuple[tuple[str, ...], object]]:
    """(command words, entry point) of every registered command, in name order."""
    from importlib.metadata import entry_points
    return sorted(((tuple(entry.name.split('.')), entry) for entry in entry_points(group=COMMANDS_GROUP)),
                  key=lambda item: item[0])


def _missing_package(name: str, error: ImportError):
    def handler(args: argparse.Namespace) -> int:
        print(f'robotsim: error: {name} needs a package that is not installed ({error})', file=sys.stderr)
        return 2
    return handler


def _add_registered_commands(commands) -> None:
    groups: dict[str, object] = {}
    for words, entry in _registered_commands():
        *group_words, verb = words
        target = commands
        for word in group_words:
            if word not in groups:
                groups[word] = commands.add_parser(word, help=GROUP_HELP.get(word, '')).add_subparsers(
                    dest=f'{word}_action', required=True)
            target = groups[word]
        try:
            module = entry.load()
        except ImportError as error:
            parser = target.add_parser(verb, help='(not installed)')
            parser.add_argument('rest', nargs='*')
            parser.set_defaults(handler=_missing_package(' '.join(words), error))
            continue
        parser = target.add_parser(verb, help=module.HELP)
        module.add_arguments(parser)
        parser.set_defaults(handler=module.run)


def calibrate_odometry(args: argparse.Namespace) -> int:
    """Fit drive.wheel_separation_multiplier: against ground truth in the headless simulation, or
    against the IMU gyro of a recorded bag (the real robot's way)."""
    from robotsim_core.description import load_robot
    from robotsim_core.odometry_calibration import fit_from_rates, read_bag, require_differential

    model = load_robot(args.robot)
    require_differential(model)
    current = model.drive.wheel_separation_multiplier
    if args.from_bag:
        try:
            fit = fit_from_rates(model, *read_bag(args.from_bag, model, args.imu_topic, args.joint_states_topic))
        except ValueError as error:
            print(f'robotsim: error: --from-bag {args.from_bag}: {error}', file=sys.stderr)
            return 2
        print(f'{args.from_bag}: {fit.windows} windows, wheels turned {fit.encoder_turned:.1f} rad '
              f'(track {model.drive.track:.3f} m), gyro bias {fit.gyro_bias:+.4f} rad/s, '
              f'rms residual {fit.rms_residual:.4f} rad per window')
        multiplier = fit.multiplier
    else:
        # The simulation lives in robotsim_sim, which depends on this package: imported here only.
        try:
            from robotsim_sim.odometry_trials import calibrate_in_simulation, open_floor
            from robotsim_sim.scene import load_world, resolve_world_path
        except ImportError as error:
            print(f'robotsim: error: calibrating in simulation needs the robotsim_sim package ({error})',
                  file=sys.stderr)
            return 2
        world = load_world(resolve_world_path(args.world))
        floor = open_floor(world.floor.friction, world.timestep)
        print(f'driving {model.name} on an open floor (friction {world.floor.friction} from {args.world}), '
              f'{"the firmware in the loop" if args.firmware else "the built-in base controller"}, '
              'odometry against ground truth')
        multiplier, comparisons = calibrate_in_simulation(
            model, world=floor, start=1.0, firmware=args.firmware,
            report=lambda i, used, fitted: print(f'  pass {i + 1}: driven with {used:.4f}, fits {fitted:.4f}'))
        print(f'  {"manoeuvre":<46} odometry yaw error with {multiplier:.2f}')
        for comparison in comparisons:
            print(f'  {comparison.label:<46} {100 * comparison.yaw_error(multiplier):+6.1f} %')
    print(f'{model.name}: drive.wheel_separation_multiplier: {multiplier:.2f} '
          f'(effective track {model.drive.track * multiplier:.3f} m; the description says {current:g})')
    return 0


def arm_reach(args: argparse.Namespace) -> int:
    # Planning on worlds and the ROS actions live in robotsim_sim (which depends on this package).
    try:
        from robotsim_sim.ros.arm_reach import reach_command
    except ImportError as error:
        print(f'robotsim: error: arm motions need the robotsim_sim package and its ROS interfaces ({error})',
              file=sys.stderr)
        return 2
    return reach_command(args)


def _add_arm_parser(commands) -> None:
    arm_parser = commands.add_parser('arm', help='move the arm of a running simulator (plan + FollowJointTrajectory)')
    actions = arm_parser.add_subparsers(dest='arm_action', required=True)
    reach = actions.add_parser('reach', help='move the tool point to X Y Z (m, base_link) at PITCH (rad); exit 0 '
                                             'reached, 1 not (one line: unreachable, target_in_collision, '
                                             'planning_failed, execution_failed ...), 2 bad input or no simulator')
    reach.add_argument('x', type=float, help="tool point x (m) in the robot's base_link frame")
    reach.add_argument('y', type=float, help='tool point y (m)')
    reach.add_argument('z', type=float, help='tool point z (m)')
    reach.add_argument('pitch', type=float, nargs='?', default=None,
                       help='tool pitch (rad): 0 horizontal, -1.5708 straight down; default: the first reachable '
                            'of -90, -75, ... 45 deg')
    reach.add_argument('--plan-only', action='store_true', help='plan and print, do not move')
    reach.add_argument('--world', default='', help='plan on this world (name or YAML) instead of asking the simulator')
    reach.add_argument('--robot', default='', help="robot name or YAML (default: the simulator's)")
    reach.add_argument('--namespace', default='', help="the robot's ROS namespace")
    reach.add_argument('--arm', default='', help="the arm's name in the robot description (default: the one with the "
                                                 'most joints)')
    reach.add_argument('--simulator', default='/robotsim_sim', help='the simulator node to ask for its world')
    reach.add_argument('--seed', type=int, default=0, help='seed of inverse kinematics restarts and planning')
    reach.add_argument('--timeout', type=float, default=20.0,
                       help='seconds to wait for the simulator, joint states and the action servers')
    reach.set_defaults(handler=arm_reach)


EXIT_CODES = {0: 'done; a check passed',
              1: 'a check found problems (dataset verify, contract check, dataset check-lerobot): named on stdout',
              2: 'bad input: one line on stderr naming the file, key, argument or option and what was expected; '
                 'nothing was done'}
"""The exit status of every command."""


class CommandParser(argparse.ArgumentParser):
    """The parser of every command and subcommand (argparse hands its class down to subparsers): bad arguments are
    one line, ``PROG: error: MESSAGE``, and exit status 2; ``--help`` shows the usage."""

    def error(self, message: str):
        self.exit(2, f'{self.prog}: error: {message}\n')


def _chosen_parsers(parser: argparse.ArgumentParser, args: argparse.Namespace) -> list[argparse.ArgumentParser]:
    """The parsers a command line went through, from ``robotsim`` down to the verb's."""
    path = [parser]
    while True:
        sub = next((a for a in path[-1]._actions if isinstance(a, argparse._SubParsersAction)), None)
        if sub is None or getattr(args, sub.dest, None) is None:
            return path
        path.append(sub.choices[getattr(args, sub.dest)])


def _refuse_extras(parser: argparse.ArgumentParser, args: argparse.Namespace, extras: list[str]) -> None:
    """Arguments the chosen verb does not take: one line, naming the sibling verbs an option belongs to."""
    path = _chosen_parsers(parser, args)
    leaf = path[-1]
    verb = leaf.prog.rsplit(' ', 1)[-1]
    flags = [extra.split('=', 1)[0] for extra in extras if extra.startswith('--')]
    siblings = {}
    if len(path) > 1:
        sub = next(a for a in path[-2]._actions if isinstance(a, argparse._SubParsersAction))
        siblings = {name: p for name, p in sub.choices.items() if p is not leaf}
    owners = {flag: [name for name, p in siblings.items() if flag in p._option_string_actions] for flag in flags}
    if flags and all(owners.values()):
        names = sorted({name for found in owners.values() for name in found})
        leaf.error(f'{", ".join(flags)} {"does" if len(flags) == 1 else "do"} not apply to {verb} '
                   f'({" and ".join(names)} only); nothing was done')
    leaf.error(f'unexpected arguments: {" ".join(extras)} (see {leaf.prog} --help)')


def build_parser() -> argparse.ArgumentParser:
    parser = CommandParser(prog='robotsim', description='robotsim command line',
                           epilog='Exit status: ' + '; '.join(f'{code} {text}' for code, text in EXIT_CODES.items()))
    commands = parser.add_subparsers(dest='command', required=True)
    describe_parser = commands.add_parser('describe', help='generate URDF and MuJoCo model from a robot description')
    describe_parser.add_argument('robot', help='robot YAML (or URDF overlay YAML) path, or a name in config/robots')
    describe_parser.add_argument('--urdf', help='write the URDF here')
    describe_parser.add_argument('--mjcf', help='write the MuJoCo MJCF here')
    describe_parser.add_argument('--gltf', metavar='OUT.glb',
                                 help='write the robot as binary glTF 2.0 (+Y up, metres, node names = link names)')
    describe_parser.add_argument('--world', help='with --gltf: draw this world (name or YAML) and the robot at its spawn')
    describe_parser.add_argument('--strict', action='store_true',
                                 help='refuse URDF inertials that need repair (overlay strict: true)')
    describe_parser.set_defaults(handler=describe)
    import_parser = commands.add_parser('import', help='write a starting overlay YAML for an existing URDF, or a world '
                                                       'file for a Gazebo SDF world')
    import_parser.add_argument('source', metavar='FILE', help="the robot's URDF, or an SDF world (.sdf, .world)")
    import_parser.add_argument('--out', required=True, help='the overlay or world YAML to write')
    import_parser.add_argument('--model-path', action='append', default=[], metavar='DIR',
                               help='SDF: a folder of models searched for model:// URIs before GZ_SIM_RESOURCE_PATH '
                                    '(repeatable)')
    import_parser.set_defaults(handler=import_command)
    contract_parser = commands.add_parser('contract', help="the robot's topic contract")
    contract_check_parser = contract_parser.add_subparsers(dest='contract_action', required=True).add_parser(
        'check', help="check a live ROS graph against a robot's topic contract; exit 0 all rows pass, 1 not")
    contract_check_parser.add_argument('--robot', default='rover', help='robot YAML path or name in config/robots')
    contract_check_parser.add_argument('--duration', type=float, default=5.0, help='seconds to watch the graph')
    contract_check_parser.add_argument('--namespace', default='', help="the robot's ROS namespace")
    contract_check_parser.add_argument('--frame-prefix', default='', help='prefix of every frame id (multi-robot)')
    contract_check_parser.add_argument('--no-cameras', action='store_true',
                                       help="a simulation run with cameras:=false: the cameras' topics are not checked")
    contract_check_parser.add_argument('--real', action='store_true',
                                       help='a real robot: skip simulator-only topics; stamps must be wall time')
    contract_check_parser.set_defaults(handler=contract_check)
    launch_parser = commands.add_parser('launch', help='bare-machine launcher: start a bringup without `launch`')
    launch_parser.add_argument('mode', choices=['sim', 'real', 'robot'],
                               help='sim.launch.py, real.launch.py or robot.launch.py (use_sim:=true|false)')
    launch_parser.add_argument('arguments', nargs='*', metavar='name:=value', help='launch arguments')
    launch_parser.set_defaults(handler=launch_command)
    odometry_parser = commands.add_parser('odometry', help="the base's wheel odometry")
    calibrate_parser = odometry_parser.add_subparsers(dest='odometry_action', required=True).add_parser(
        'calibrate', help="fit a skid-steer base's drive.wheel_separation_multiplier (its effective track)")
    calibrate_parser.add_argument('--robot', default='rover', help='robot YAML path or name in config/robots')
    calibrate_parser.add_argument('--world', default='room',
                                  help='simulation: the floor friction and time step come from this world')
    calibrate_parser.add_argument('--from-bag', metavar='BAG',
                                  help='the real robot: fit against the IMU gyro in this rosbag2 folder instead')
    calibrate_parser.add_argument('--firmware', action='store_true',
                                  help='simulation: the wheels driven by the C firmware in the loop, as the motor bridge '
                                       'drives it (the default bringup), instead of the built-in base controller')
    calibrate_parser.add_argument('--imu-topic', default='/imu/data', help='with --from-bag')
    calibrate_parser.add_argument('--joint-states-topic', default='/joint_states', help='with --from-bag')
    calibrate_parser.set_defaults(handler=calibrate_odometry)
    _add_arm_parser(commands)
    _add_registered_commands(commands)
    return parser


RENAMED = {('calibrate', 'odometry'): ('odometry', 'calibrate'), ('evaluate',): ('policy', 'eval')}
"""Old spelling -> the command's name now (noun, then verb); an old spelling still runs, for one release, after a
line saying what it is called now."""


def _current_spelling(argv: list[str]) -> list[str]:
    for old, new in RENAMED.items():
        if tuple(argv[:len(old)]) == old:
            print(f"robotsim: '{' '.join(old)}' is now 'robotsim {' '.join(new)}'; the old spelling goes in the next "
                  'release', file=sys.stderr)
            return [*new, *argv[len(old):]]
    return argv


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args, extras = parser.parse_known_args(_current_spelling(list(sys.argv[1:] if argv is None else argv)))
    if extras:
        _refuse_extras(parser, args, extras)
    try:
        return args.handler(args)
    except DescriptionError as error:
        print(f'robotsim: error: {error}', file=sys.stderr)
        return 2


if __name__ == '__main__':
    sys.exit(main())
