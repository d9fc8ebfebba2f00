"""The simulator node's interface besides the contract topics, defined once (ROS-free): its parameters with their
defaults, bounds and meaning, its services, actions and subscriptions.

The node (:mod:`robotsim_sim.ros.sim_node`) declares exactly these parameters and offers exactly these
services and actions (tests/test_sim_node_interface.py compares a running node with this table); the
documentation's reference page (``docs/reference/sim_node.md``) is written from it. The topics it publishes
are the robot's contract (:mod:`robotsim_core.contract`, ``docs/reference/topics.md``).
"""

from __future__ import annotations

from dataclasses import dataclass

from .arm_controller import GripperConfig, TrajectoryConstraints


@dataclass(frozen=True)
class NodeParameter:
    """One ROS parameter of the node."""

    name: str
    default: bool | int | float | str
    """Its value when not given; its type is the parameter's (an int asks for a whole number)."""
    description: str
    minimum: float | None = None
    maximum: float | None = None
    simulation_value: bool = False
    """Checked as the launch argument of the same name is (robotsim_core.run_values), not by type and bounds."""


@dataclass(frozen=True)
class NodeEndpoint:
    """A service, action or subscription of the node."""

    name: str
    """Relative name: under the robot's namespace for ``per_robot`` ones."""
    type: str
    description: str
    per_robot: bool = False
    """One per robot (in a fleet, under each robot's namespace); else one for the node."""
    arm_only: bool = False
    """Only for robots with an arm (or a gripper, for the gripper's action)."""


SIM_NODE_PARAMETERS: tuple[NodeParameter, ...] = (
    NodeParameter('robot', 'rover', 'The robot: a name in config/robots or a YAML path (ignored with fleet).'),
    NodeParameter('namespace', '', "The robot's ROS namespace ('' = none; a fleet gives each robot its own)."),
    NodeParameter('fleet', '', 'A fleet file (several robots, each with namespace and spawn); overrides robot.'),
    NodeParameter('world', 'room', 'The world: a name in config/worlds or a YAML path.'),
    NodeParameter('seed', 0, 'Seed of every random stream (sensor noise, biases): the same seed, the same bytes.',
                  simulation_value=True),
    NodeParameter('real_time_factor', 1.0, 'Sim seconds per wall second (0: as fast as possible).',
                  simulation_value=True),
    NodeParameter('cameras', True, 'Render cameras (false: no camera topics; headless runs).'),
    NodeParameter('cmd_vel_stamped', False, 'Take geometry_msgs/TwistStamped on cmd_vel instead of Twist.'),
    NodeParameter('lockstep_rate', 0.0, "Hz (sim time) of a driver's decisions to wait for (0: none): at each, the node "
                  'publishes sim/lockstep and steps on only when cmd_vel brings a TwistStamped with its stamp; sensor '
                  'topics are then reliable.', minimum=0.0, maximum=1000.0),
    NodeParameter('command_timeout', 0.5, 'Seconds of sim time without a base command before the base stops.',
                  minimum=1e-3),
    NodeParameter('clock_rate', 250.0, 'Hz (sim time) of /clock.', minimum=1e-3),
    NodeParameter('frame_prefix', '', 'Prefix of every frame id of a single robot (a fleet prefixes by namespace).'),
    NodeParameter('firmware', False, 'Drive the wheels with the C firmware over a serial link (the motor bridge '
                  'then publishes odom, its TF and the wheel joints).'),
    NodeParameter('firmware_build', 'host', "Which firmware runs in the loop: 'host' (the host build, the plant as "
                  "its HAL) or 'qemu' (the MCU image for a Netduino Plus 2 under qemu-system-arm, met at register "
                  'level).'),
    NodeParameter('firmware_image', '', "With firmware_build 'qemu': the ELF to run ('' = built from the firmware "
                  'sources with `make qemu`).'),
    NodeParameter('power_board', False, 'With the firmware (host build): a power board on a bus with the base '
                  "controller, holding the motors' supply while it hears the base (bus counters on /diagnostics)."),
    NodeParameter('firmware_lockstep', True, "The firmware's serial link waits for the motor bridge's frame at "
                  'every setpoint period (20 ms of /clock), so the bridge\'s scheduling cannot change the physics.'),
    NodeParameter('serial_link', '', "Where the firmware's serial device appears ('' = the default per namespace)."),
    NodeParameter('publish_base', True, 'Publish odom, its TF and the wheel joints (default: not with firmware).'),
    NodeParameter('duration', 0.0, 'Stop after this many sim seconds (0: run until stopped).', simulation_value=True),
    NodeParameter('start_paused', False, 'Start paused (sim/pause or sim/step then advance it).'),
    NodeParameter('log_period', 5.0, 'Seconds between progress lines in the log.', minimum=0.1, maximum=3600.0),
    NodeParameter('arm_controller.constraints.trajectory', TrajectoryConstraints.trajectory,
                  "joint_trajectory_controller's path tolerance of every joint (rad or m; 0: not checked).",
                  minimum=0.0),
    NodeParameter('arm_controller.constraints.goal', TrajectoryConstraints.goal,
                  'Goal position tolerance of every joint after the last point (rad or m; 0: not checked).',
                  minimum=0.0),
    NodeParameter('arm_controller.constraints.stopped_velocity_tolerance',
                  TrajectoryConstraints.stopped_velocity_tolerance,
                  'How still the arm must be to succeed (rad/s or m/s; 0: not checked).', minimum=0.0),
    NodeParameter('arm_controller.constraints.goal_time', TrajectoryConstraints.goal_time,
                  "Seconds after the last point's time within which the goal tolerance must be met (0: for ever).",
                  minimum=0.0),
    NodeParameter('arm_controller.allow_partial_joints_goal', False,
                  'Accept FollowJointTrajectory goals naming only some arm joints (the others hold).'),
    NodeParameter('arm_controller.action_monitor_rate', 20.0, 'Hz (sim time) of FollowJointTrajectory feedback.',
                  minimum=0.1, maximum=1000.0),
    NodeParameter('arm_controller.state_publish_rate', 50.0,
                  'Hz (sim time) of arm_controller/controller_state (0: never).', minimum=0.0, maximum=1000.0),
    NodeParameter('gripper_controller.goal_tolerance', GripperConfig.goal_tolerance,
                  'How close (m) the finger must come to the commanded position.', minimum=1e-9),
    NodeParameter('gripper_controller.stall_velocity_threshold', GripperConfig.stall_velocity_threshold,
                  'Finger speed (m/s) below which it counts as not moving.', minimum=1e-9),
    NodeParameter('gripper_controller.stall_timeout', GripperConfig.stall_timeout,
                  'Seconds without moving, short of the goal, after which the gripper counts as stalled.',
                  minimum=1e-3),
    NodeParameter('gripper_controller.allow_stalling', GripperConfig.allow_stalling,
                  'A stalled goal ends SUCCEEDED (true) or ABORTED (false).'),
)
"""Every parameter of the simulator node, in declaration order."""

SIM_NODE_SERVICES: tuple[NodeEndpoint, ...] = (
    NodeEndpoint('sim/pause', 'robotsim_msgs/srv/Pause', 'Pause or resume the simulation (sim time stops with it).'),
    NodeEndpoint('sim/step', 'robotsim_msgs/srv/Step', 'Advance a paused simulation by a number of physics steps.'),
    NodeEndpoint('sim/reset', 'robotsim_msgs/srv/Reset', 'Restore the initial state of the world and the noise '
                 'streams, with a new seed or the last one; /clock runs on.'),
    NodeEndpoint('sim/set_entity_pose', 'robotsim_msgs/srv/SetEntityPose', 'Teleport a robot or free world body '
                 '(refused, with the reason, where it would overlap).'),
    NodeEndpoint('sim/get_entity_pose', 'robotsim_msgs/srv/GetEntityPose', 'The pose of a robot or free world body.'),
    NodeEndpoint('sim/inject_fault', 'robotsim_msgs/srv/InjectFault', 'Inject or clear a fault of the base with '
                 'firmware in the loop (stuck or noisy encoder, dead motor, lost frames, link down, MCU reset).',
                 per_robot=True),
)
"""The node's services."""

SIM_NODE_ACTIONS: tuple[NodeEndpoint, ...] = (
    NodeEndpoint('arm_controller/follow_joint_trajectory', 'control_msgs/action/FollowJointTrajectory',
                 "The arm, as joint_trajectory_controller offers it (MoveIt's FollowJointTrajectory interface).",
                 per_robot=True, arm_only=True),
    NodeEndpoint('gripper_controller/gripper_cmd', 'control_msgs/action/GripperCommand',
                 'The gripper, as gripper_action_controller offers it.', per_robot=True, arm_only=True),
)
"""The node's action servers."""

SIM_NODE_SUBSCRIPTIONS: tuple[NodeEndpoint, ...] = (
    NodeEndpoint('cmd_vel', 'geometry_msgs/msg/Twist', 'Base command (TwistStamped with cmd_vel_stamped:=true or '
                 'lockstep_rate > 0).',
                 per_robot=True),
    NodeEndpoint('arm_controller/joint_trajectory', 'trajectory_msgs/msg/JointTrajectory',
                 "The arm's topic interface (joint_trajectory_controller's): replaces the running trajectory.",
                 per_robot=True, arm_only=True),
)
"""The commands the node subscribes to."""

PARAMETERS = {parameter.name: parameter for parameter in SIM_NODE_PARAMETERS}
