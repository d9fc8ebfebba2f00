"""One dataset episode on the fast path: the simulation core stepped in-process, a driver closing
the loop, every message serialized straight into an MCAP rosbag2 bag (no DDS, no nodes).

The messages are built by :class:`robotsim_sim.ros.robot_messages.RobotMessages`, the simulator node's
own message building, and stamped with sim time; a bag written here holds the topics a recording of
the ROS graph holds (``robotsim launch sim record:=true``): the robot's contract topics,
``/sim/ground_truth``, plus ``/goal_pose`` (the task) and ``/cmd_vel`` (the driver's commands, the
actions). Each message's bag time is its header stamp (sim time), as the recorder's sim-time
receive stamps are up to transport delay.

Drivers: the ROS-free classes of :mod:`robotsim_learning.driving`, named in the driver table. One gets an
:class:`~robotsim_learning.driving.Observation` (the newest message of every topic the robot's nodes see,
plus ``goal_pose``; for a privileged driver also ground truth and the world) at its own rate and returns
(linear, angular), recorded as the ``geometry_msgs/Twist`` on /cmd_vel, or None to give up.
"""

from __future__ import annotations

import math
import time
from collections.abc import MutableMapping
from dataclasses import dataclass, field

import numpy as np
from geometry_msgs.msg import PoseStamped, Twist
from rclpy.serialization import deserialize_message, serialize_message
from sensor_msgs.msg import Image
from std_msgs.msg import String

from robotsim_core.description import load_robot
from robotsim_core.ros.common import stamp_msg, yaw_quaternion

from ..bag_writer import BagWriter, canonical_cdr_view
from ..driving import DriveContext, Observation, RunOptions, make_driver
from ..randomization import Randomizer, Scenario

GOAL_TOPIC = '/goal_pose'
COMMAND_TOPIC = '/cmd_vel'
LABEL_TOPIC = '/expert/cmd_vel'
"""DAgger episodes: what the expert would have commanded at each of the policy's decisions (the label)."""
OUTCOMES = ('success', 'collision', 'timeout', 'gave_up')
GOAL_PERIOD = 1.0
"""Sim seconds between /goal_pose messages (a goal publisher on the robot republishes it, too; a late
subscriber and the export's alignment see it without latching)."""


@dataclass
class EpisodeResult:
    index: int
    outcome: str
    duration: float                       # sim seconds
    counts: dict[str, int]                # messages per topic
    travel: float                         # ground-truth path length (m)
    final_goal_distance: float            # m
    max_image_stddev: float | None        # of the RGB frames (0-255); None without a camera
    camera_frames: int
    wall_seconds: float
    sim_seed: int
    drawn: dict = field(default_factory=dict)
    spawn: tuple = ()
    goal: tuple = ()


def _twist(command: tuple[float, float]) -> Twist:
    twist = Twist()
    twist.linear.x, twist.angular.z = float(command[0]), float(command[1])
    return twist


def _scenario_robot(scenario: Scenario):
    """The episode's robot description (randomized as the scenario drew it)."""
    import yaml

    from robotsim_core.config_schema import parse_spec
    from robotsim_core.description.build import build_robot
    from robotsim_core.description.spec import RobotSpec
    return build_robot(parse_spec(RobotSpec, yaml.safe_load(scenario.robot_yaml), 'scenario robot'), 'scenario robot')


def goal_in_odom(spawn, goal) -> tuple[float, float, float]:
    """The goal in the robot's odom frame (odom starts at the spawn pose: REP 105)."""
    dx, dy = goal[0] - spawn[0], goal[1] - spawn[1]
    c, s = math.cos(spawn[2]), math.sin(spawn[2])
    yaw = math.atan2(math.sin(goal[2] - spawn[2]), math.cos(goal[2] - spawn[2]))
    return c * dx + s * dy, -s * dx + c * dy, yaw


def goal_message(goal_odom, stamp_ns: int) -> PoseStamped:
    message = PoseStamped()
    message.header.stamp, message.header.frame_id = stamp_msg(stamp_ns), 'odom'
    message.pose.position.x, message.pose.position.y = float(goal_odom[0]), float(goal_odom[1])
    x, y, z, w = yaw_quaternion(goal_odom[2])
    message.pose.orientation.x, message.pose.orientation.y = x, y
    message.pose.orientation.z, message.pose.orientation.w = z, w
    return message


class LatestMessages(MutableMapping):
    """Newest message per topic; one that arrived serialized is deserialized when first read (a
    driver reads a few topics at 10 Hz; the IMU alone writes 100 messages a second). Every way of
    reading (``[]``, ``get``, ``values``, ``items``) hands out messages, never the bytes."""

    def __init__(self):
        self._messages: dict[str, object] = {}

    def put_serialized(self, name: str, data: bytes, message_type) -> None:
        self._messages[name] = _Serialized(data, message_type)

    def __getitem__(self, name: str):
        value = self._messages[name]
        if type(value) is _Serialized:
            value = self._messages[name] = deserialize_message(value.data, value.message_type)
        return value

    def __setitem__(self, name: str, message) -> None:
        self._messages[name] = message

    def __delitem__(self, name: str) -> None:
        del self._messages[name]

    def __iter__(self):
        return iter(self._messages)

    def __len__(self) -> int:
        return len(self._messages)


@dataclass
class _Serialized:
    data: bytes
    message_type: type


def image_cdr_parts(typestore, image: Image) -> tuple:
    """The canonical CDR of ``image`` (as :func:`canonical_cdr_view` of its serialization) in two
    parts: everything up to the pixels, and the pixels themselves, not copied. The pixels are the
    last field and need no alignment, so only the part before them is serialized (by rclpy, as
    every message) and has padding to zero; serializing a whole 300 kB image copies the pixels
    four times more on the way."""
    header = Image(header=image.header, height=image.height, width=image.width, encoding=image.encoding,
                   is_bigendian=image.is_bigendian, step=image.step)  # and data empty: its length ends it
    before_pixels = bytearray(canonical_cdr_view(typestore, 'sensor_msgs/msg/Image', serialize_message(header)))
    pixels = memoryview(image.data).cast('B')
    before_pixels[-4:] = len(pixels).to_bytes(4, 'little')
    return before_pixels, pixels


def _qos(spec):
    from rosbags.interfaces import Qos, QosDurability, QosHistory, QosLiveliness, QosReliability, QosTime
    infinite = QosTime(9223372036, 854775807)
    return [Qos(QosHistory.KEEP_LAST, spec.depth,
                QosReliability.RELIABLE if spec.reliability == 'reliable' else QosReliability.BEST_EFFORT,
                QosDurability.TRANSIENT_LOCAL if spec.durability == 'transient_local' else QosDurability.VOLATILE,
                infinite, infinite, QosLiveliness.AUTOMATIC, infinite, False)]


class _Collisions:
    """Contacts between the robot and anything but the floor (walls, obstacles, free bodies)."""

    def __init__(self, sim):
        model = sim.model
        root = model.body_rootid[sim.robots[0].root_body]
        self.robot = model.body_rootid[model.geom_bodyid] == root
        self.floor = np.array([model.geom(g).name == 'floor' for g in range(model.ngeom)])
        # collides[g1, g2]: a contact between geoms g1 and g2 is a collision (one lookup per contact;
        # this runs every physics step).
        robot_on_other = self.robot[:, None] & ~self.robot[None, :] & ~self.floor[None, :]
        self.collides = robot_on_other | robot_on_other.T

    def touching(self, data) -> bool:
        if data.ncon == 0:
            return False
        geoms = data.contact.geom  # (ncon, 2): the bindings size the contact list to ncon
        return bool(self.collides[geoms[:, 0], geoms[:, 1]].any())


def run_episode(randomizer: Randomizer, index: int, folder: str, driver_name: str, cameras: bool = True,
                duration: float | None = None, commands=None, run: RunOptions = RunOptions()) -> EpisodeResult:
    """Run episode ``index`` and write it as a bag in ``folder`` (which must not exist), with the
    scenario's ``world.yaml`` and ``robot.yaml`` beside the MCAP file.

    ``commands``: instead of a driver, replay these (stamp_ns, linear, angular) commands (the
    identity test against the ROS graph). ``run``: the driver's :class:`~robotsim_learning.driving.RunOptions`
    (its velocity shield, the expert's options)."""
    from robotsim_sim.ros.robot_messages import RobotMessages
    from robotsim_sim.scenario import scenario_text
    from robotsim_sim.scene import RobotPlacement, load_world
    from robotsim_sim.simulation import SimOptions, Simulation

    started = time.monotonic()
    scenario = randomizer.scenario(index)
    spec = randomizer.spec
    duration = spec.episode_duration if duration is None else duration
    # Per-episode crash safety: an unfinished episode is redone, so nothing is flushed or described early.
    bag = BagWriter(folder, flush_period=math.inf, describe_while_writing=False)
    try:
        world_path, robot_path = scenario.write(folder)
        world = load_world(world_path)
        sim = Simulation(world, [RobotPlacement(load_robot(robot_path))],
                         SimOptions(seed=scenario.sim_seed, cameras=cameras))
        # The episode's files travel inside its bag too (paths relative to it: bytes independent of --out).
        draw = {'index': scenario.index, 'spawn': list(scenario.spawn), 'goal': list(scenario.goal),
                'drawn': scenario.drawn}
        described = String(data=scenario_text(world_path, [('', robot_path)], scenario.sim_seed, relative_to=folder,
                                              randomization=draw))
        try:
            return _loop(sim, RobotMessages(sim.robots[0], '', True, sim.labels), bag, scenario, world,
                         driver_name, duration, spec.goal_tolerance, commands, started, described, run)
        finally:
            sim.close()  # its renderer too, now, in this thread: the GL context is shared by the next episode
    finally:
        bag.close()


def _loop(sim, messages, bag, scenario, world, driver_name, duration, tolerance, commands, started,
          described, run) -> EpisodeResult:
    produced = [topic for topic in messages.topics if topic.name != 'sim/status']  # /sim/status is wall-clock RTF
    for topic in produced:
        bag.add_topic(f'/{topic.name}', topic.type, _qos(topic.qos))
    from robotsim_core.contract import ENTITIES_TOPIC, RELIABLE_QOS, SCENARIO_TOPIC, WORLD_TOPICS
    from robotsim_sim.ros.robot_messages import world_entities_message
    for topic in WORLD_TOPICS:
        bag.add_topic(f'/{topic.name}', topic.type, _qos(topic.qos))
    bag.add_topic(GOAL_TOPIC, 'geometry_msgs/msg/PoseStamped', _qos(RELIABLE_QOS))
    bag.add_topic(COMMAND_TOPIC, 'geometry_msgs/msg/Twist', _qos(RELIABLE_QOS))
    driver = make_driver(driver_name, run=run) if commands is None else None
    if getattr(driver, 'labels', False):
        bag.add_topic(LABEL_TOPIC, 'geometry_msgs/msg/Twist', _qos(RELIABLE_QOS))
    latest = LatestMessages()
    updated: set[str] = set()
    types = {topic: connection.msgtype for topic, connection in bag.connections.items()}

    def record(name: str, message, stamp_ns: int) -> None:
        # Padding zeroed: an episode's bytes depend on (seed, index) only (identical in any worker).
        topic = f'/{name}'
        if type(message) is bytes:  # template-encoded (robotsim_core.ros.wire): canonical already
            bag.write(topic, stamp_ns, message)
            latest.put_serialized(name, message, messages.message_type(name))
        else:
            if type(message) is Image:
                bag.write_parts(topic, stamp_ns, image_cdr_parts(bag.typestore, message))
            else:
                bag.write(topic, stamp_ns, canonical_cdr_view(bag.typestore, types[topic], serialize_message(message)))
            latest[name] = message
        updated.add(name)

    for name, message in [*messages.latched(), (SCENARIO_TOPIC.lstrip('/'), described)]:
        record(name, message, 0)
    goal_odom = goal_in_odom(scenario.spawn, scenario.goal)
    if driver is not None:
        driver.reset(DriveContext(lambda: _scenario_robot(scenario), scenario.sim_seed))
    replay = list(commands or [])
    period_ns = round(1e9 / (driver.rate if driver else 10.0))
    next_control_ns = next_goal_ns = 0
    collisions = _Collisions(sim)
    travel, last_xy, truth = 0.0, None, None
    image_stddev, frames = None, 0
    at_goal = False
    outcome = 'timeout'
    end_ns = round(duration * 1e9)
    goal_xy = np.array(scenario.goal[:2])
    while sim.time_ns < end_ns:
        for event in sim.step():
            for name, message in messages.build(event.channel, event.reading, event.reading.stamp):
                record(name, message, event.reading.stamp)
            if event.channel == 'base_state':
                record(ENTITIES_TOPIC[1:], world_entities_message(sim.world_entity_poses(), event.reading.stamp),
                       event.reading.stamp)
                truth = latest['sim/ground_truth']
                xy = event.reading.true_position[:2]
                travel += 0.0 if last_xy is None else float(np.hypot(*(xy - last_xy)))
                last_xy = xy.copy()
                at_goal = np.hypot(*(last_xy - goal_xy)) <= tolerance  # checked below, after collisions
            elif getattr(event.reading, 'rgb', None) is not None:
                frames += 1
                spread = float(event.reading.rgb[::4, ::4].std())
                image_stddev = spread if image_stddev is None else max(image_stddev, spread)
        now = sim.time_ns
        if now >= next_goal_ns:
            record('goal_pose', goal_message(goal_odom, now), now)
            next_goal_ns += round(GOAL_PERIOD * 1e9)
        if collisions.touching(sim.data):
            outcome = 'collision'
            break
        if at_goal:
            outcome = 'success'
            break
        command = None
        if replay:
            while replay and replay[0][0] <= now:
                _, linear, angular = replay.pop(0)
                command = Twist()
                command.linear.x, command.angular.z = float(linear), float(angular)
        elif driver is not None and now >= next_control_ns:
            next_control_ns += period_ns
            observation = Observation(now, latest, set(updated))
            if driver.privileged:
                observation.ground_truth, observation.world, observation.goal_in_world = truth, world, scenario.goal
            updated.clear()
            decided = driver.act(observation)
            if decided is None:
                outcome = 'gave_up'
                break
            command = _twist(decided)
            if getattr(driver, 'labels', False):
                record(LABEL_TOPIC[1:], _twist(driver.label), now)
        if command is not None:
            sim.command_base(0, command.linear.x, command.angular.z)
            record('cmd_vel', command, now)
    final = float(np.hypot(*(last_xy - goal_xy))) if last_xy is not None else math.inf
    return EpisodeResult(scenario.index, outcome, sim.time_ns * 1e-9, dict(bag.counts), travel, final, image_stddev,
                         frames, time.monotonic() - started, scenario.sim_seed, scenario.drawn, scenario.spawn,
                         scenario.goal)
