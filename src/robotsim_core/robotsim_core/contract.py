"""The robot's topic contract: every topic it offers, with type, frame, QoS and nominal rate.

One source for the simulator's publishers (and later the real bringup and the live-graph
checker). Plain data, no rclpy: the ROS layer turns :class:`QosSpec` into a QoSProfile.
Defaults follow what typical drivers use: sensor data best-effort (SensorDataQoS), odometry
and joint states reliable, /tf reliable depth 100, /tf_static and /robot_description
transient-local.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from .description.model import RobotModel
from .sensor_kinds import sensor_kind


@dataclass(frozen=True)
class QosSpec:
    reliability: str = 'reliable'        # 'reliable' | 'best_effort'
    durability: str = 'volatile'         # 'volatile' | 'transient_local'
    depth: int = 10


SENSOR_QOS = QosSpec('best_effort', 'volatile', 5)
RELIABLE_QOS = QosSpec('reliable', 'volatile', 10)
TF_QOS = QosSpec('reliable', 'volatile', 100)
LATCHED_QOS = QosSpec('reliable', 'transient_local', 1)
CLOCK_QOS = QosSpec('reliable', 'volatile', 1000)
"""/clock: reliable with a deep history. It is published hundreds of times a second, so a depth of 10 is
30 ms: a recorder that a loaded machine holds up longer than that lost /clock messages the reliable
protocol could not resend. 1000 Clock messages (12 bytes each) are seconds of slack; rclpy and rclcpp
time sources subscribe best effort (ClockQoS), which a reliable publisher serves."""


@dataclass(frozen=True)
class TopicSpec:
    name: str              # relative name (no leading slash) so a namespace applies
    type: str              # ROS type, e.g. 'sensor_msgs/msg/LaserScan'
    frame_id: str = ''     # header.frame_id ('' for headerless messages)
    qos: QosSpec = RELIABLE_QOS
    rate: float = 0.0      # nominal Hz; 0 = event driven / latched
    sensor: str = ''       # the robot sensor that produces it, if any
    sim_only: bool = False  # ground truth and sim control: never offered by the real robot


@dataclass
class Contract:
    robot: str
    topics: list[TopicSpec] = field(default_factory=list)
    frames: list[tuple[str, str]] = field(default_factory=list)  # (parent, child) that must connect

    def topic(self, name: str) -> TopicSpec:
        return next(t for t in self.topics if t.name == name)


ENTITIES = TopicSpec('sim/entities', 'tf2_msgs/msg/TFMessage', 'world', RELIABLE_QOS, 50.0, sim_only=True)
"""``world`` -> every free body of the world (a pushed box, a picked cube), at the ground-truth rate (empty when
there is none): what moved besides the robots, for replays and renders."""
SCENARIO = TopicSpec('sim/scenario', 'std_msgs/msg/String', '', LATCHED_QOS, sim_only=True)
"""The run described, latched: the world and robot files' text and paths, namespaces, seed (YAML; see
robotsim_sim.scenario), so a recording says what it recorded."""
LOCKSTEP = TopicSpec('sim/lockstep', 'robotsim_msgs/msg/LockstepTick', '', QosSpec('reliable', 'volatile', 10),
                     sim_only=True)
"""Per robot, with the launch argument lockstep:=true only: a driver's decision is due (its sim time, and the stamp of
the newest message of every topic published by then); the simulator waits for the command stamped with it."""
WORLD_TOPICS = (ENTITIES, SCENARIO)
"""The simulation's own topics: one per world (not per robot, never under a namespace), not topics of the real
robot; the simulator publishes them and a recording keeps them."""
ENTITIES_TOPIC, SCENARIO_TOPIC = (f'/{topic.name}' for topic in WORLD_TOPICS)
GLOBAL_TOPICS = ('clock', *(topic.name for topic in WORLD_TOPICS))
"""The world's, shared by every robot: never under a robot namespace."""


def resolve_topic(namespace: str, name: str) -> str:
    """Absolute name of contract topic ``name`` for a robot in ``namespace`` ('' = none)."""
    namespace = namespace.strip('/')
    return f'/{name}' if name in GLOBAL_TOPICS or not namespace else f'/{namespace}/{name}'


GLOBAL_FRAMES = ('world',)  # the simulated world's frame (ground truth): one for all robots, never prefixed


def resolve_frame(frame_prefix: str, frame: str) -> str:
    return frame if not frame or frame in GLOBAL_FRAMES else f'{frame_prefix}{frame}'


def sensor_qos(spec) -> QosSpec:
    """The sensor's QoS override from its YAML, else SensorDataQoS."""
    override = getattr(spec, 'qos', None)
    return SENSOR_QOS if override is None else QosSpec(override.reliability, override.durability, override.depth)


LEG_POSITION_COMMANDS = 'leg_position_controller/commands'
"""A legged robot's position targets (std_msgs/Float64MultiArray, legs.joints order), as a ros2_control
forward_command_controller named leg_position_controller takes them."""
LEG_COMMAND = 'leg_command'
"""A legged robot's low-level servo command (robotsim_msgs/LegCommand: per joint q, dq, kp, kd, torque)."""


def command_topics(model: RobotModel) -> list[str]:
    """The relative names of what a robot is told (its drivers publish them, the simulator or the real drivers
    subscribe): the base command, a goal for the goal drivers, the arm's and the legs' command topics. Their
    types depend on the bringup (cmd_vel is TwistStamped in lockstep), so only names: a recorder takes each
    topic's type from its publisher."""
    names = []
    if model.drive is not None or model.legs is not None:
        names += ['cmd_vel', 'goal_pose']
    if model.arms:
        names.append('arm_controller/joint_trajectory')
    if model.legs is not None:
        names += [LEG_POSITION_COMMANDS, LEG_COMMAND]
    return names


def robot_contract(model: RobotModel, joint_state_rate: float = 50.0, odom_rate: float = 50.0) -> Contract:
    topics = [
        TopicSpec('clock', 'rosgraph_msgs/msg/Clock', '', CLOCK_QOS, 0.0, sim_only=True),
        TopicSpec('joint_states', 'sensor_msgs/msg/JointState', '', RELIABLE_QOS, joint_state_rate),
        TopicSpec('odom', 'nav_msgs/msg/Odometry', 'odom', RELIABLE_QOS, odom_rate),
        TopicSpec('tf', 'tf2_msgs/msg/TFMessage', '', TF_QOS, odom_rate),
        TopicSpec('tf_static', 'tf2_msgs/msg/TFMessage', '', LATCHED_QOS),
        TopicSpec('robot_description', 'std_msgs/msg/String', '', LATCHED_QOS),
        TopicSpec('sim/ground_truth', 'nav_msgs/msg/Odometry', 'world', RELIABLE_QOS, odom_rate, sim_only=True),
        TopicSpec('sim/status', 'robotsim_msgs/msg/SimStatus', '', RELIABLE_QOS, 2.0, sim_only=True),
    ]
    if model.legs is not None:  # read with the joint states, as a legged robot's contact estimator reports them
        topics.append(TopicSpec('foot_contacts', 'robotsim_msgs/msg/FootContacts', model.base_link, RELIABLE_QOS,
                                joint_state_rate))
    for sensor in model.sensors:  # each kind names its own topics (robotsim_core.sensor_kinds)
        topics.extend(sensor_kind(sensor.type).topics(sensor, model))
    frames = [('odom', model.base_link)] + [(model.base_link, s.frame) for s in model.sensors]
    if model.legs is not None:
        # A legged robot: odom -> its root from its state estimate (the simulator's is the true pose), then the URDF.
        frames = [('odom', model.tree.root())] + ([(model.tree.root(), model.base_link)]
                                                  if model.tree.root() != model.base_link else [])
        frames += [(model.base_link, s.frame) for s in model.sensors] + [(model.base_link, f) for f in model.legs.feet]
    elif model.drive is None:
        # A fixed-base robot has no odometry: its TF tree starts at its root link, welded to the world,
        # and each arm's TF (from /joint_states) must reach the arm's last link.
        topics = [topic for topic in topics if topic.name != 'odom']
        frames = [(model.base_link, s.frame) for s in model.sensors]
        if model.tree.root() != model.base_link:
            frames.insert(0, (model.tree.root(), model.base_link))
        frames += [(model.base_link, model.tree.joints[arm.joints[-1]].child) for arm in model.arms]
    return Contract(model.name, topics, frames)
