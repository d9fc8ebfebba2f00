"""The node graph of every bringup, defined once (ROS-free, no ``launch`` import).

:func:`node_graph` turns a :class:`BringupConfig` (the launch arguments) into the list of nodes
to start: package, executable, node name, namespace, parameters, remappings and whether the run
ends when the node dies. Two thin consumers read it and nothing else:

* the ROS 2 launch files in ``launch/`` (through :mod:`robotsim.ros.launch_adapter`), and
* the bare-machine launcher ``robotsim launch`` (:mod:`robotsim.launcher`).

Sim mode: one simulator node hosts the world and every robot of the fleet; each robot gets its
state publisher, its motor bridge (firmware in the loop) and optionally a driver (wanderer, expert), all in the
robot's namespace. Real mode: the drivers named in ``config/real/<robot>.yaml``.
"""

from __future__ import annotations

import dataclasses
import functools
import math
import os
from dataclasses import dataclass, field
from typing import Any

from robotsim_core.config_schema import field_docs, load_yaml, parse_spec, spec_field
from robotsim_core.contract import WORLD_TOPICS, command_topics, resolve_topic, robot_contract
from robotsim_core.description.load import share_path
from robotsim_core.drivers import DRIVERS, bringup_drivers, goal_drivers
from robotsim_core.errors import DescriptionError
from robotsim_core.fleet import FleetSpec, load_fleet, single_robot
from robotsim_core.run_values import default_serial_link, simulation_value_problem


@dataclass
class NodeSpec:
    package: str
    executable: str
    name: str
    namespace: str = ''
    parameters: dict[str, Any] = field(default_factory=dict)
    remappings: list[tuple[str, str]] = field(default_factory=list)
    arguments: list[str] = field(default_factory=list)
    """Command-line arguments before ``--ros-args`` (e.g. rviz2 -d FILE)."""
    required: bool = False
    """The whole bringup stops when this node exits (non-zero exit status if it failed)."""
    optional: bool = False
    """Started only when installed (rviz2 on a bare machine is skipped with a note)."""
    full_install_command: list[str] = field(default_factory=list)
    """On a full ROS install the launch files run this command instead (``ros2 bag record``)."""

    @property
    def label(self) -> str:
        return f'{self.namespace}/{self.name}' if self.namespace else self.name


@dataclass
class BringupConfig:
    """The launch arguments; the same names work for ``ros2 launch`` and ``robotsim launch``."""
    use_sim: bool = True
    """true: the MuJoCo simulator; false: the real drivers of config/real/<robot>.yaml."""
    robot: str = 'rover'
    """Robot name in config/robots (or a robot YAML path)."""
    world: str = 'room'
    """World name in config/worlds (or a world YAML path); sim only."""
    namespace: str = ''
    """ROS namespace of the robot (topics /<ns>/..., frames <ns>/...); '' for none."""
    fleet: str = ''
    """Fleet name in config/fleets (several robots, each with its namespace); overrides robot/namespace."""
    firmware: str = 'auto'
    """Base control in sim: true (C firmware in the loop, host build, + motor bridge), qemu (the MCU image under
    qemu-system-arm + motor bridge), false (built-in), auto (the host build for differential bases)."""
    firmware_image: str = ''
    """With firmware:=qemu: the MCU image (ELF) to run; '' builds it from the firmware sources (``make qemu``)."""
    power_board: bool = False
    """With firmware:=true: a power board on a bus with the base controller, holding the motors' supply while it
    hears the base (the sim node's ``/diagnostics`` shows the bus)."""
    rviz: bool = False
    """Start RViz when rviz2 is installed, with the first robot's ``config/rviz/<robot>.rviz`` if there
    is one (the scout's shows its range cones), else ``config/rviz/robotsim.rviz`` (the rover's view)."""
    view: bool = False
    """Serve the live browser view of the (first) robot on http://127.0.0.1:<view_port>/ (and Foxglove's WebSocket
    protocol on <foxglove_port>)."""
    view_port: int = 8080
    """view:=true: TCP port of the browser view on 127.0.0.1 (1-65535)."""
    foxglove_port: int = 8765
    """view:=true: TCP port of the Foxglove WebSocket server on 127.0.0.1 (1-65535; 0 = no Foxglove server)."""
    record: bool = False
    """Record the contract's topics to an MCAP rosbag2 bag."""
    bag: str = ''
    """Output folder of the bag ('' = ./robotsim_bag; it must not exist yet)."""
    demo: bool = False
    """Start the demo driver for every robot: the same as driver:=wander."""
    driver: str = ''
    """Who drives every robot: '' (nobody: publish cmd_vel yourself), wander (reactive lidar wanderer), expert (sim
    only: plans on the known world to the goal on goal_pose), policy (the ONNX policy of policy:=, sim or real),
    straight (baseline: straight at the goal on odometry, obstacles ignored), pick (sim only: the arm picks the
    world's cube, put at the placement drawn from seed:=, and places it in the world's bin through the arm and
    gripper actions; the bringup ends when it is done, with its exit status)."""
    goal: str = ''
    """driver:=expert, policy or straight: a goal 'x,y' (m, in the robot's odom frame) to drive to at start ('' = wait
    for goal_pose)."""
    policy: str = ''
    """driver:=policy: the ONNX policy file (written by robotsim policy train)."""
    shield: bool = True
    """driver:=policy: put every command of the policy through a velocity shield from the scan (it slows, turns or stops
    the base so it can still stop before what the lidar sees; false: the policy's commands as they are)."""
    lockstep: bool = False
    """Sim, with driver:= wander, expert, policy or straight: the simulator waits at each of the driver's decisions for
    its command (sim/lockstep, a TwistStamped on cmd_vel) before stepping on, so the driver decides on the same
    messages at any real-time factor and machine load: the same run, whatever the pace. Built-in base control (the
    firmware's own lockstep is with its motor bridge); sensor topics are then published reliably."""
    report: str = ''
    """Sim: path of the run report PNG written at the end ('' = no live summary, no report)."""
    seed: int = 0
    """Seed of every random stream of the simulation and of a policy driver's draws: 0 to 2^63-1 (a ROS integer
    parameter is int64)."""
    real_time_factor: float = 1.0
    """Sim pacing: 0 = as fast as possible, else at least 0.001 (a sim second in at most 1000 s)."""
    duration: float = 0.0
    """Sim seconds after which the simulator stops and the bringup ends (0 = run until Ctrl-C)."""
    cameras: bool = True
    """Render the cameras (false: no camera topics)."""
    paused: bool = False
    """Start the simulation paused (resume with the /sim/pause service). record:=true alone holds it until the recorder
    has subscribed, then the recorder resumes it."""
    real_config: str = ''
    """Real mode: the driver configuration ('' = config/real/<robot>.yaml)."""
    state_publisher: str = 'auto'
    """Sim: the node publishing the robot's TF from joint_states and robot_description: ros (ROS's
    robot_state_publisher, C++, with the URDF generated from the robot description), standin (robotsim's Python
    stand-in: the same topics, frames and QoS), auto (ros when robot_state_publisher is installed, else standin)."""

    @property
    def use_sim_time(self) -> bool:
        """Derived from the mode: every node of a sim bringup runs on /clock."""
        return self.use_sim


def find_executable(package: str, executable: str) -> str | None:
    """``<prefix>/lib/<package>/<executable>`` of the first AMENT_PREFIX_PATH prefix that has it (as ``ros2 run``)."""
    for prefix in filter(None, os.environ.get('AMENT_PREFIX_PATH', '').split(os.pathsep)):
        candidate = os.path.join(prefix, 'lib', package, executable)
        if os.path.isfile(candidate) and os.access(candidate, os.X_OK):
            return candidate
    return None


STATE_PUBLISHERS = ('auto', 'ros', 'standin')


def ros_state_publisher_installed() -> bool:
    """ROS's own robot_state_publisher (C++) is installed: a full ROS install, or the bare machine's tools prefix
    (scripts/build-ros-tools.sh) sourced."""
    return find_executable('robot_state_publisher', 'robot_state_publisher') is not None


def config_from_arguments(arguments: dict[str, str], source: str = 'launch arguments', **overrides) -> BringupConfig:
    """``{'robot': 'rover', 'rviz': 'true', ...}`` (strings, as launch passes them) -> BringupConfig."""
    fields = {f.name: f for f in dataclasses.fields(BringupConfig)}
    values: dict[str, Any] = dict(overrides)
    for key, text in arguments.items():
        if key == 'use_sim_time':
            continue  # derived from the mode; accepted so `use_sim_time:=true` is not an error
        if key not in fields:
            raise DescriptionError(source, key, f'unknown launch argument; expected one of: '
                                                f'{", ".join(sorted(fields))}, use_sim_time')
        kind = fields[key].type
        try:
            if kind == 'bool':
                if text.lower() not in ('true', 'false', '1', '0'):
                    raise ValueError
                values[key] = text.lower() in ('true', '1')
            elif kind == 'int':
                values[key] = int(text)
            elif kind == 'float':
                values[key] = float(text)
            else:
                values[key] = text
        except ValueError:
            raise DescriptionError(source, key, f'expected {kind}, got {text!r}') from None
        problem = simulation_value_problem(key, values[key]) if key in ('seed', 'real_time_factor', 'duration') else None
        if key in ('view_port', 'foxglove_port') and not (key == 'foxglove_port' and values[key] == 0) \
                and not 1 <= values[key] <= 65535:
            problem = f'expected a TCP port from 1 to 65535{" (or 0: none)" if key == "foxglove_port" else ""}, ' \
                      f'got {values[key]}'
        if problem:
            raise DescriptionError(source, key, problem)
    config = BringupConfig(**values)
    if config.firmware not in ('auto', 'true', 'false', 'qemu'):
        raise DescriptionError(source, 'firmware', f'expected true, false, auto or qemu, got {config.firmware!r}')
    if config.state_publisher not in STATE_PUBLISHERS:
        raise DescriptionError(source, 'state_publisher', f'expected auto, ros or standin, got {config.state_publisher!r}')
    if config.state_publisher == 'ros' and not ros_state_publisher_installed():
        raise DescriptionError(source, 'state_publisher', 'ros needs robot_state_publisher/robot_state_publisher under '
                                                          'AMENT_PREFIX_PATH (a ROS install, or the prefix of '
                                                          'scripts/build-ros-tools.sh sourced); not found')
    if config.driver not in bringup_drivers():
        raise DescriptionError(source, 'driver', f'expected one of {", ".join(repr(d) for d in bringup_drivers())}, '
                                                 f'got {config.driver!r}')
    if config.driver == 'policy' and not os.path.isfile(config.policy):
        raise DescriptionError(source, 'policy', f'driver:=policy needs an ONNX policy file, got {config.policy!r}'
                                                 + (' (not found)' if config.policy else ''))
    if config.driver == 'policy':
        _check_policy(config, source)
    if config.driver and DRIVERS[config.driver].sim_only and not config.use_sim:
        raise DescriptionError(source, 'driver', f'{config.driver} {DRIVERS[config.driver].sim_only}: sim only')
    if config.demo and config.driver not in ('', 'wander'):
        raise DescriptionError(source, 'demo', f'demo:=true is driver:=wander; it contradicts driver:={config.driver}')
    # What the user set: launch files pass every argument, with its default when not given.
    given = {key for key in arguments if key in fields and values.get(key) != fields[key].default}
    _check_combinations(config, given, source)
    if config.goal:
        parts = config.goal.split(',')
        try:
            values = [float(part) for part in parts]
        except ValueError:
            values = []
        if len(values) != 2 or not all(math.isfinite(v) for v in values):
            raise DescriptionError(source, 'goal', f"expected 'x,y' (two finite numbers, m), got {config.goal!r}")
    return config


GOAL_DRIVERS = goal_drivers()
"""The drivers that drive to a goal (goal:=), from the driver table (robotsim_core.drivers)."""


def _output_path_problem(path: str) -> str | None:
    """Why a file or folder cannot be created at ``path`` (checked before any node starts), or None."""
    parent = os.path.dirname(os.path.abspath(path))
    while not os.path.exists(parent):
        parent = os.path.dirname(parent)
    if not os.path.isdir(parent):
        return f'{parent} is a file, not a folder'
    if not os.access(parent, os.W_OK):
        return f'cannot write into {parent}'
    return None


def _check_policy(config: BringupConfig, source: str) -> None:
    """The policy file loads and fits every robot it would drive, before any node starts (the policy node
    would find out only after the others started). The bringup sits on top of every package: it asks the
    learning package, when installed, as the policy node itself does."""
    try:
        from robotsim_learning.policy_runtime import PolicyFileError, policy_for_robot
    except ImportError:
        return  # no learning package (or no onnxruntime) here: the policy node checks the file at its start
    for entry in fleet_of(config).robots:
        try:
            policy_for_robot(config.policy, entry.robot)
        except (PolicyFileError, DescriptionError) as error:
            raise DescriptionError(source, 'policy', str(error)) from None


def _check_combinations(config: BringupConfig, given: set[str], source: str) -> None:
    """Arguments that would be ignored or would fail only after the nodes started: refused at once."""
    driver = driver_of(config)
    if config.fleet and 'namespace' in given:
        raise DescriptionError(source, 'namespace', 'a fleet gives each of its robots its namespace: expected fleet:= '
                                                    'or namespace:=, not both')
    for port in ('view_port', 'foxglove_port'):
        if port in given and not config.view:
            raise DescriptionError(source, port, 'expected view:=true with it (no viewer would listen on it)')
    if 'world' in given and not config.use_sim:
        raise DescriptionError(source, 'world', 'sim only: the real robot is in the real world')
    if config.use_sim:
        # The world file read and checked here, before any node starts (the simulator would refuse it only after
        # the others started); MuJoCo compiles an MJCF include in the simulator.
        from robotsim_core.description.load import parse_world, resolve_world_path
        try:
            parse_world(resolve_world_path(config.world))
        except DescriptionError as error:
            raise DescriptionError(source, 'world', str(error)) from None
    if 'bag' in given and not config.record:
        raise DescriptionError(source, 'bag', 'expected record:=true with it (bag:= names the recording\'s folder)')
    if config.record and config.bag:
        if os.path.exists(config.bag):
            raise DescriptionError(source, 'bag', f'expected a folder that does not exist yet, {config.bag} exists '
                                                  '(a recording never overwrites one)')
        problem = _output_path_problem(config.bag)
        if problem:
            raise DescriptionError(source, 'bag', f'cannot create {config.bag}: {problem}')
    if config.report:
        if not config.report.lower().endswith('.png') or os.path.isdir(config.report):
            raise DescriptionError(source, 'report', f'expected the path of a PNG file to write (ending in .png), '
                                                     f'got {config.report!r}')
        problem = _output_path_problem(config.report)
        if problem:
            raise DescriptionError(source, 'report', f'cannot write {config.report}: {problem}')
    if 'policy' in given and driver != 'policy':
        raise DescriptionError(source, 'policy', f'expected driver:=policy with it (driver is '
                                                 f'{driver or "none"}: the policy would not run)')
    if 'shield' in given and driver != 'policy':
        raise DescriptionError(source, 'shield', f'expected driver:=policy with it (driver is '
                                                 f'{driver or "none"}: only the policy is shielded)')
    if config.lockstep:
        if not config.use_sim:
            raise DescriptionError(source, 'lockstep', 'simulation only (the real robot does not wait for its driver)')
        if driver not in LOCKSTEP_DRIVERS:
            raise DescriptionError(source, 'lockstep', f'expected driver:= one of {", ".join(LOCKSTEP_DRIVERS)} with it '
                                                       f'(driver is {driver or "none"}: nobody would answer the simulator)')
        if config.firmware in ('true', 'qemu'):
            raise DescriptionError(source, 'lockstep', f'expected firmware:=false or auto with it (firmware is '
                                                       f'{config.firmware}: the firmware is in lockstep with its motor '
                                                       'bridge, not with the driver)')
    if config.goal and driver not in GOAL_DRIVERS:
        raise DescriptionError(source, 'goal', f'expected driver:= one of {", ".join(GOAL_DRIVERS)} with it '
                                               f'(driver is {driver or "none"}: nobody would drive to it)')


LOCKSTEP_DRIVERS = tuple(name for name, info in DRIVERS.items() if info.node and info.implementation)
"""The drivers lockstep:=true takes: the generic driver node's (robotsim_learning.ros.driver_node)."""


def decision_rate(driver: str) -> float:
    """Hz (sim time) of a driver's decisions: its class's rate (the driver node's default)."""
    from robotsim_learning.driving import driver_class
    return float(driver_class(driver).rate)


def driver_of(config: BringupConfig, robot: str | None = None) -> str:
    """The driver of ``robot`` (default the bringup's): demo:=true is the demo driver of its kind, the stand-up for a
    legged robot, the wanderer otherwise."""
    if config.demo:
        return 'stand' if _legged(robot or config.robot) else 'wander'
    return config.driver


@functools.lru_cache(maxsize=32)
def _legged(robot: str) -> bool:
    """Whether the robot stands on joint-servoed legs (its description says legs)."""
    from robotsim_core.description import load_robot

    return load_robot(robot).legs is not None


def graph_for(mode: str, arguments: dict[str, str], source: str = 'launch arguments') -> list['NodeSpec']:
    """The nodes of ``<mode>.launch.py`` (sim, real, robot) with these ``name:=value`` arguments."""
    if mode not in ('sim', 'real', 'robot'):
        raise DescriptionError(source, 'mode', f'expected sim, real or robot, got {mode!r}')
    overrides = {}
    if mode != 'robot':
        if 'use_sim' in arguments:
            raise DescriptionError(source, 'use_sim', f'only for robot.launch.py (this is {mode}.launch.py)')
        overrides['use_sim'] = mode == 'sim'
    return node_graph(config_from_arguments(arguments, source, **overrides))


def launch_arguments() -> list[tuple[str, str, str]]:
    """(name, default as text, description) of every launch argument, for both consumers."""
    docs = field_docs(BringupConfig)
    out = []
    for spec in dataclasses.fields(BringupConfig):
        default = spec.default
        text = str(default).lower() if isinstance(default, bool) else str(default)
        out.append((spec.name, text, ' '.join(docs.get(spec.name, '').split())))
    out.append(('use_sim_time', '', 'derived from the mode (true in sim); accepted and ignored'))
    return out


def rviz_config_path(robot: str) -> str:
    """The RViz configuration of ``robot`` (a name or a robot YAML path): its own, else the rover's."""
    own = share_path('config', 'rviz', f'{os.path.splitext(os.path.basename(robot))[0]}.rviz')
    return own if os.path.isfile(own) else share_path('config', 'rviz', 'robotsim.rviz')


def fleet_of(config: BringupConfig) -> FleetSpec:
    return load_fleet(config.fleet) if config.fleet else single_robot(config.robot, config.namespace)


def firmware_in_the_loop(config: BringupConfig, fleet: FleetSpec) -> bool:
    if config.lockstep:
        return False  # lockstep:=true takes built-in base control (auto; true and qemu are refused with it)
    if config.firmware != 'auto':
        return config.firmware in ('true', 'qemu')
    from robotsim_core.description import load_robot
    from robotsim_core.drive import MCU_MOTOR_CHANNELS
    drives = [load_robot(entry.robot).drive for entry in fleet.robots]
    return all(drive is not None and drive.type == 'differential' and len(drive.driven_wheels) <= MCU_MOTOR_CHANNELS
               for drive in drives)


def recorded_topics(config: BringupConfig, fleet: FleetSpec) -> list[tuple[str, str]]:
    """(absolute topic, type) of every contract topic of every robot, /clock once, and in simulation the
    world's own topics (contract.WORLD_TOPICS)."""
    from robotsim_core.description import load_robot
    topics = {}
    for entry in fleet.robots:
        contract = robot_contract(load_robot(entry.robot))
        for topic in contract.topics:
            if topic.sim_only and not config.use_sim:
                continue
            if topic.sensor and not config.cameras and topic.type in ('sensor_msgs/msg/Image',
                                                                      'sensor_msgs/msg/CameraInfo'):
                continue
            if topic.name.endswith('segmentation/labels') and not config.cameras:
                continue
            topics[resolve_topic(entry.namespace, topic.name)] = topic.type
    if config.use_sim:
        topics.update((resolve_topic('', topic.name), topic.type) for topic in WORLD_TOPICS)
    return sorted(topics.items())


def recorded_commands(config: BringupConfig, fleet: FleetSpec) -> list[str]:
    """Absolute names of every robot's command topics (contract.command_topics): recorded from when a publisher
    appears (a teleop started later, the driver node), never waited for, so a bag holds the actions beside the
    observations."""
    from robotsim_core.description import load_robot
    return sorted({resolve_topic(entry.namespace, name) for entry in fleet.robots
                   for name in command_topics(load_robot(entry.robot))})


def driven_bases(config: BringupConfig, fleet: FleetSpec) -> list[str]:
    """Absolute /cmd_vel of every robot whose base a driver node of this bringup drives: the command topics that
    surely have a publisher (``ros2 bag record`` reports ready only once every topic it was given has one)."""
    return sorted(resolve_topic(entry.namespace, 'cmd_vel') for entry in fleet.robots
                  if driver_of(config, entry.robot) not in ('', 'pick') and not _legged(entry.robot))


def recorder_holds_start(config: BringupConfig) -> bool:
    """A sim recording starts with the simulation paused until the recorder has subscribed to every
    topic; the recorder then resumes it, so the bag begins at sim time 0 (a recorder starting beside
    a running simulation misses its first seconds). With paused:=true the user resumes it."""
    return config.record and config.use_sim and not config.paused


def node_graph(config: BringupConfig) -> list[NodeSpec]:
    """Every node of the bringup, in start order."""
    fleet = fleet_of(config)
    nodes = _sim_nodes(config, fleet) if config.use_sim else _real_nodes(config, fleet)
    use_sim_time = config.use_sim_time
    if config.record:
        topics, commands = recorded_topics(config, fleet), recorded_commands(config, fleet)
        bag = config.bag or 'robotsim_bag'
        # When the recorder holds the start, `ros2 bag record` cannot release it: the robotsim
        # recorder records on a full install too.
        hold_start = recorder_holds_start(config)
        nodes.append(NodeSpec(
            'robotsim_learning', 'recorder', 'robotsim_recorder',
            parameters={'output': bag, 'topics': [name for name, _ in topics], 'command_topics': commands or [''],
                        'use_sim_time': use_sim_time,
                        'resume_simulation': '/sim/pause' if hold_start else ''},
            required=True,
            full_install_command=[] if hold_start else [
                'ros2', 'bag', 'record', '--storage', 'mcap', '--output', bag,
                *(['--use-sim-time'] if use_sim_time else []), *[name for name, _ in topics],
                *driven_bases(config, fleet)]))
    if config.view:
        first = fleet.robots[0]
        nodes.append(NodeSpec('robotsim_learning', 'viewer', 'robotsim_viewer', parameters={
            'robot': first.robot, 'world': config.world if config.use_sim else '',
            'robot_namespace': first.namespace, 'port': config.view_port, 'foxglove_port': config.foxglove_port,
            'use_sim_time': use_sim_time}))
    if config.rviz:
        # The first robot's view: its namespace resolves the file's relative topics, the fixed frame
        # gets its prefix, and tf2 (which listens on the absolute /tf) is pointed at the robot's tf.
        first = fleet.robots[0]
        tf = [('/tf', 'tf'), ('/tf_static', 'tf_static')] if first.namespace else []
        nodes.append(NodeSpec('rviz2', 'rviz2', 'rviz2', first.namespace, {'use_sim_time': use_sim_time}, tf,
                              ['-d', rviz_config_path(first.robot), '-f', f'{first.frame_prefix}odom'],
                              optional=True))
    return nodes


def _sim_nodes(config: BringupConfig, fleet: FleetSpec) -> list[NodeSpec]:
    firmware = firmware_in_the_loop(config, fleet)
    sim_parameters: dict[str, Any] = {
        'world': config.world, 'seed': config.seed, 'real_time_factor': float(config.real_time_factor),
        'duration': float(config.duration), 'cameras': config.cameras, 'firmware': firmware,
        'firmware_build': 'qemu' if config.firmware == 'qemu' else 'host', 'firmware_image': config.firmware_image,
        'power_board': config.power_board,
        'start_paused': config.paused or recorder_holds_start(config),
        'lockstep_rate': decision_rate(driver_of(config)) if config.lockstep else 0.0,
        'use_sim_time': False,  # the simulator is the clock
    }
    if config.fleet:
        sim_parameters['fleet'] = config.fleet
    else:
        sim_parameters.update(robot=config.robot, namespace=fleet.robots[0].namespace)
    nodes = [NodeSpec('robotsim_sim', 'sim_node', 'robotsim_sim', parameters=sim_parameters, required=True)]
    for entry in fleet.robots:
        ns, prefix = entry.namespace, entry.frame_prefix
        nodes.append(_state_publisher(config, entry.robot, ns, prefix))
        if firmware:
            nodes.append(NodeSpec('robotsim_firmware', 'motor_bridge', 'motor_bridge', ns,
                                  {'robot': entry.robot, 'device': default_serial_link(ns), 'frame_prefix': prefix,
                                   'reconnect_period': 0.2, 'use_sim_time': True}, required=True))
        nodes += _driver_nodes(config, entry)
    if config.report:
        nodes.append(NodeSpec('robotsim_sim', 'monitor', 'robotsim_monitor', parameters={
            'report': config.report, 'world': config.world,
            'namespaces': [entry.namespace or '/' for entry in fleet.robots],
            'robots': [entry.robot for entry in fleet.robots], 'use_sim_time': True}))
    return nodes


def _state_publisher(config: BringupConfig, robot: str, namespace: str, frame_prefix: str) -> NodeSpec:
    """The robot's TF from its joint states: ROS's robot_state_publisher or the stand-in (state_publisher:=)."""
    ros = config.state_publisher == 'ros' or (config.state_publisher == 'auto' and ros_state_publisher_installed())
    if not ros:
        return NodeSpec('robotsim_sim', 'state_publisher', 'robot_state_publisher', namespace,
                        {'robot': robot, 'frame_prefix': frame_prefix, 'use_sim_time': True}, required=True)
    from robotsim_core.description import load_robot
    from robotsim_core.description.urdf import tree_to_urdf
    # publish_frequency: its cap on /tf per joint_states message (20 Hz by default) raised above the simulator's
    # joint-state rate, so every joint state gives its transforms, as the stand-in does. Its broadcasters publish
    # on the absolute /tf and /tf_static: remapped to the namespace's tf and tf_static, where the stand-in and the
    # contract put them for a fleet's robot (the same topics without a namespace).
    return NodeSpec('robot_state_publisher', 'robot_state_publisher', 'robot_state_publisher', namespace,
                    {'robot_description': tree_to_urdf(load_robot(robot).tree), 'frame_prefix': frame_prefix,
                     'publish_frequency': 1000.0, 'use_sim_time': True},
                    remappings=[('/tf', 'tf'), ('/tf_static', 'tf_static')], required=True)


def _driver_nodes(config: BringupConfig, entry) -> list[NodeSpec]:
    """The node that drives one robot: the driver table's node (robotsim_core.drivers) with its parameters."""
    driver, ns = driver_of(config, entry.robot), entry.namespace
    if not driver:
        return []
    info = DRIVERS[driver]
    if info.legs != _legged(entry.robot):
        kind = 'legged robot' if _legged(entry.robot) else 'robot without legs'
        fitting = [name for name, other in DRIVERS.items() if other.node and other.legs == _legged(entry.robot)]
        raise DescriptionError('launch arguments', 'driver', f'{driver} cannot drive {entry.robot} (a {kind}): '
                                                             f'expected one of {", ".join(fitting)} or none')
    package, executable = info.node
    if driver == 'wander':
        parameters = {'use_sim_time': config.use_sim_time}
    elif driver == 'pick':
        # The placement of the cube is drawn from the bringup's seed.
        parameters = {'robot': entry.robot, 'world': config.world, 'fleet': config.fleet, 'placement_seed': config.seed,
                      'use_sim_time': True}
    else:
        parameters = {'robot': entry.robot, 'frame_prefix': entry.frame_prefix, 'use_sim_time': config.use_sim_time}
        if config.goal:
            parameters['goal'] = [float(v) for v in config.goal.split(',')]
        if driver == 'expert':
            parameters['world'] = config.world
            if entry.xyz is not None:
                parameters['spawn'] = [float(entry.xyz[0]), float(entry.xyz[1]), float(entry.yaw)]
        if info.argument == 'policy':
            parameters['policy'] = os.path.abspath(config.policy)
            parameters['shield'] = config.shield
            parameters['seed'] = config.seed  # a sampling policy's draws
    if config.lockstep:
        parameters.update(lockstep=True, rate=decision_rate(driver))
    # Required drivers end the bringup with their exit status (the pick demo when done; a policy that stops
    # must not leave the robot undriven unnoticed).
    return [NodeSpec(package, executable, executable, ns, parameters, required=info.required)]


# ----------------------------------------------------------------------------- real mode
@dataclass
class DriverSpec:
    name: str
    """Node name of the driver."""
    package: str
    """ROS package that provides the driver (edit this YAML for other hardware)."""
    executable: str
    """Executable in that package."""
    parameters: dict[str, Any] = spec_field(default_factory=dict)
    """Driver parameters; strings may use {robot}, {namespace}, {frame_prefix}, {serial_device}, {robot_description}."""
    remappings: dict[str, str] = spec_field(default_factory=dict)
    """Driver topic -> contract topic (relative names, so the robot namespace applies)."""
    provides: dict[str, str] = spec_field(default_factory=dict)
    """Contract topics this driver publishes (after remapping) -> ROS type."""
    required: bool = True
    """The bringup stops when this driver dies."""


@dataclass
class RealBringupSpec:
    drivers: list[DriverSpec] = spec_field(non_empty=True)
    """The driver nodes of the real robot."""
    serial_device: str = '/dev/ttyACM0'
    """The base MCU's serial device (USB CDC)."""


def real_config_path(config: BringupConfig, robot: str) -> str:
    return config.real_config or share_path('config', 'real', f'{os.path.splitext(os.path.basename(robot))[0]}.yaml')


def load_real_config(path: str) -> RealBringupSpec:
    spec = parse_spec(RealBringupSpec, load_yaml(path), path)
    for index, driver in enumerate(spec.drivers):
        for key, value in driver.parameters.items():
            check_ros_parameter(value, path, f'drivers[{index}].parameters.{key}')
    return spec


_PARAMETER_SCALARS = (bool, int, float, str)


def check_ros_parameter(value: Any, source: str, key: str) -> None:
    """A value a ROS 2 parameter can hold: bool, int, float, string, a non-empty list of one of
    those (ints and floats not mixed, as rcl's parameter types are homogeneous arrays), or a mapping
    of such values (nested names, as launch_ros flattens them). launch_ros and the params-file
    parser reject anything else only after some nodes have started."""
    expected = 'a ROS parameter value (bool, int, float, string, or a non-empty list of one of those)'
    if isinstance(value, dict):
        for name, item in value.items():
            check_ros_parameter(item, source, f'{key}.{name}')
        return
    if isinstance(value, list):
        kinds = {bool if isinstance(item, bool) else type(item) for item in value}
        if not value or len(kinds) != 1 or not kinds <= set(_PARAMETER_SCALARS):
            got = 'an empty list' if not value else f'a list of {", ".join(sorted(k.__name__ for k in kinds))}'
            raise DescriptionError(source, key, f'expected {expected}, got {got}')
        return
    if not isinstance(value, _PARAMETER_SCALARS):
        raise DescriptionError(source, key, f'expected {expected}, got {"null" if value is None else repr(value)}')


def _real_nodes(config: BringupConfig, fleet: FleetSpec) -> list[NodeSpec]:
    from robotsim_core.description import load_robot
    from robotsim_core.description.urdf import tree_to_urdf
    nodes = []
    for entry in fleet.robots:
        path = real_config_path(config, entry.robot)
        real = load_real_config(path)
        values = {'robot': entry.robot, 'namespace': entry.namespace, 'frame_prefix': entry.frame_prefix,
                  'serial_device': real.serial_device}
        urdf = None  # generated once per robot, only if a driver asks for it
        for index, driver in enumerate(real.drivers):
            parameters = {}
            for key, value in driver.parameters.items():
                if isinstance(value, str) and '{robot_description}' in value:
                    urdf = urdf or tree_to_urdf(load_robot(entry.robot).tree)
                    value = value.replace('{robot_description}', urdf)
                elif isinstance(value, str):
                    try:
                        value = value.format_map(values)
                    except (KeyError, ValueError) as error:
                        raise DescriptionError(path, f'drivers[{index}].parameters.{key}',
                                               f'unknown placeholder {error}; expected one of '
                                               f'{{{", ".join(sorted(values))}, robot_description}}') from None
                parameters[key] = value
            parameters['use_sim_time'] = False
            nodes.append(NodeSpec(driver.package, driver.executable, driver.name, entry.namespace, parameters,
                                  list(driver.remappings.items()), required=driver.required))
        nodes += _driver_nodes(config, entry)
    return nodes
