"""The drivers of the robot's base, ROS-free: one class each, run by the episode loop and by the driver node.

A :class:`Driver` is reset at the start of a run and then asked, at its own ``rate`` of sim (or robot)
time, for the base command given an :class:`Observation`: the newest message of each topic it reads
(``inputs``; message objects of the ROS types, read by attribute only, so no ROS import here) and,
for a ``privileged`` driver, the simulator's ground truth and world. It answers ``(linear m/s,
angular rad/s)``, or None when it gives up (the episode ends as 'gave_up'; the node stands still
and says why in ``status``).

Who runs them: ``robotsim dataset generate --driver NAME`` (robotsim_learning.ros.episode, the
simulation stepped in-process) and ``driver:=NAME`` of a bringup (robotsim_learning.ros.driver_node,
one generic node on the ROS graph). Each class is named once, in the driver table
(:data:`robotsim_core.drivers.DRIVERS`, its ``implementation``); :func:`make_driver` builds one from it.
"""

from __future__ import annotations

import importlib
import math
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field, fields

import numpy as np

from robotsim_core.drivers import DRIVERS

from .observation import ImuHeadingOdometry, goal_in_base, observation_from_messages, yaw_of
from .wander import Wanderer

GOAL = 'goal_pose'
"""The goal's topic (geometry_msgs/PoseStamped in odom), read by every goal driver."""
GROUND_TRUTH = 'sim/ground_truth'
"""The simulator's ground truth (nav_msgs/Odometry in world), read by privileged drivers only."""
MAX_EXPERT_COMMIT = 5.0
"""Largest ``expert_commit`` (m) taken: a detour longer than that is no longer "about as short"."""
DAGGER_EXPERT_SHARE = 0.3
"""The share of a DAgger run's decisions its expert's label drives unless told otherwise (``--expert-share``)."""


@dataclass(frozen=True)
class RunOptions:
    """How a recorded run's driver works beyond its name and file: the options of ``robotsim dataset generate``
    that change the bytes of its episodes. Each field is one option, named once here (``applies``: to drivers
    running a policy file, with the expert in them, or DAgger only): its command-line flag
    (``--`` and the name with dashes), its manifest setting (the field's name, written only when not the
    default, so manifests from before an option existed and datasets made without it read the same), the
    ``--resume`` command that repeats it and the policy's provenance all come from this table. Picklable:
    each worker gets it whole."""
    shield: bool = field(default=False, metadata={'applies': 'policy'})
    """A policy driver's commands go through its velocity shield (robotsim_learning.shield), as the policy node
    with ``shield:=true``."""
    expert_commit: float = field(default=0.0, metadata={'applies': 'expert'})
    """The expert's ``ExpertConfig.commit_margin`` (m, 0 ... :data:`MAX_EXPERT_COMMIT`), in a driver with the
    expert in it."""
    expert_memoryless: bool = field(default=False, metadata={'applies': 'expert'})
    """The expert's ``ExpertConfig.memoryless`` (it plans again at every command), in a driver with the expert in
    it."""
    expert_share: float = field(default=DAGGER_EXPERT_SHARE, metadata={'applies': 'dagger'})
    """DAgger only: the share of decisions (0 ... 1) that the expert's label drives instead of the policy's command
    (0: the policy drives every decision, the expert only labels; seeded per run)."""

    @staticmethod
    def flag(name: str) -> str:
        return '--' + name.replace('_', '-')

    def settings(self) -> dict:
        """The manifest settings: the fields that are not at their default."""
        return {f.name: getattr(self, f.name) for f in fields(self) if getattr(self, f.name) != f.default}

    @classmethod
    def from_settings(cls, settings: dict) -> RunOptions:
        """The options a manifest's settings name; a value of the wrong type (a hand-edited manifest) is the
        default, as an absent one."""
        found = {}
        for f in fields(cls):
            value = settings.get(f.name)
            if isinstance(f.default, bool) and value is True:
                found[f.name] = True
            elif (not isinstance(f.default, bool) and isinstance(value, (int, float)) and not isinstance(value, bool)
                  and math.isfinite(value)):
                found[f.name] = float(value)
        return cls(**found)

    def arguments(self) -> list[str]:
        """The command-line options that give these settings (the ``--resume`` command repeats them)."""
        words: list[str] = []
        for name, value in self.settings().items():
            words += [self.flag(name)] if value is True else [self.flag(name), f'{value:g}']
        return words

    def check(self, name: str, option: str = '--driver') -> None:
        """ValueError, one line naming the flag, when a value is out of range or the driver ``name`` (NAME or
        NAME:FILE of the driver table) has no use for it."""
        base = name.partition(':')[0]
        cls = driver_class(base, option)
        if not math.isfinite(self.expert_commit) or not 0.0 <= self.expert_commit <= MAX_EXPERT_COMMIT:
            raise ValueError(f'--expert-commit: expected 0 ... {MAX_EXPERT_COMMIT:g} m, got {self.expert_commit!r}')
        if not math.isfinite(self.expert_share) or not 0.0 <= self.expert_share <= 1.0:
            raise ValueError(f'--expert-share: expected 0 ... 1, got {self.expert_share!r}')
        expert = f'the drivers with the expert in them ({", ".join(n for n in DRIVERS if _has_expert(n))})'
        applies = {'policy': (DRIVERS[base].argument == 'policy', 'a driver that runs a policy file'),
                   'expert': (cls.has_expert, expert),
                   'dagger': (issubclass(cls, DaggerDriver), 'the DAgger driver (dagger)')}
        for f in fields(self):
            taken, who = applies[f.metadata['applies']]
            if getattr(self, f.name) != f.default and not taken:
                raise ValueError(f'{self.flag(f.name)}: applies only to {who}, not {option} {base}')


@dataclass
class Observation:
    """What a driver sees at one control instant."""
    stamp_ns: int
    """Sim (or robot) time, ns."""
    latest: dict[str, object]
    """Newest message per topic, by relative name ('scan', 'odom', 'imu/data', 'camera/image_raw',
    'goal_pose', ...): the messages the ROS nodes receive, as ROS message objects."""
    updated: set[str]
    """Topics with a new message since the driver's previous call."""
    ground_truth: object | None = None
    """Privileged drivers only: the latest /sim/ground_truth (nav_msgs/Odometry in 'world')."""
    world: object | None = None
    """Privileged drivers only: the world description (robotsim_core.description.world_spec.WorldSpec)."""
    goal_in_world: tuple[float, ...] | None = None
    """Privileged drivers only: (x, y[, yaw]) of the goal in 'world'."""


@dataclass
class DriveContext:
    """What a driver may know of the run it starts."""
    robot: Callable[[], object]
    """The robot's description (robotsim_core.description.RobotModel), built when asked for."""
    seed: int = 0
    """The run's seed: a driver's own random choices flow from it."""


class Driver:
    """Base class of the drivers (subclass it; the driver table names the subclass)."""
    name = 'driver'
    privileged = False
    """True: the observation carries ground truth and the world (simulation-only drivers, e.g. the expert)."""
    rate = 10.0
    """Hz of sim time at which :meth:`act` is called."""
    has_expert = False
    """True: the privileged expert decides or labels in it, and its constructor takes ``expert_commit`` (m)."""
    status = ''
    """Why the driver does not drive now ('goal reached', 'no collision-free path ...'), '' while it drives."""

    @property
    def inputs(self) -> tuple[str, ...]:
        """The topics it reads, each of which must be recent for it to drive (besides ``goal_pose``)."""
        return ()

    def describe(self) -> str:
        """One line on what drives (the driver node logs it at start)."""
        return DRIVERS[self.name].summary

    def reset(self, context: DriveContext) -> None:
        """A new run starts (a privileged driver may read the context's robot; others should not need it)."""
        self.status = ''

    def act(self, observation: Observation) -> tuple[float, float] | None:
        """The base command now, or None to give up."""
        raise NotImplementedError


def _goal_xy(observation: Observation) -> tuple[float, float] | None:
    goal = observation.latest.get(GOAL)
    return None if goal is None else (goal.pose.position.x, goal.pose.position.y)


class WanderDriver(Driver):
    """The demo driver of `make sim`: reactive lidar wandering (ignores the goal)."""
    name = 'wander'

    @property
    def inputs(self) -> tuple[str, ...]:
        return ('scan',)

    def reset(self, context: DriveContext) -> None:
        super().reset(context)
        self.wanderer = Wanderer()
        self.last = (0.0, 0.0)

    def act(self, observation: Observation) -> tuple[float, float]:
        scan = observation.latest.get('scan')
        if scan is None:
            command = (0.0, 0.0)
        elif 'scan' in observation.updated:
            command = self.wanderer.command(np.asarray(scan.ranges, dtype=np.float64), scan.angle_min,
                                            scan.angle_increment)
        else:
            command = self.last
        self.last = command
        return command


class ExpertDriver(Driver):
    """The privileged expert (simulation only): plans on the known world from ground truth to the goal."""
    name = 'expert'
    privileged = True
    has_expert = True
    rate = 20.0

    def __init__(self, expert_commit: float = 0.0, expert_memoryless: bool = False):
        self.commit_margin = float(expert_commit)
        """The expert's ``ExpertConfig.commit_margin`` (m; 0: it never commits to a turn the robot is making)."""
        self.memoryless = bool(expert_memoryless)
        """The expert's ``ExpertConfig.memoryless`` (True: it plans again from where the robot is at every command)."""

    @property
    def inputs(self) -> tuple[str, ...]:
        return (GROUND_TRUTH,)

    def reset(self, context: DriveContext) -> None:
        super().reset(context)
        self.model = context.robot()
        self.expert = self.world = None

    def act(self, observation: Observation) -> tuple[float, float] | None:
        from robotsim_core.geometry import quat_to_yaw

        from .expert import Expert, ExpertConfig
        if self.expert is None or self.world is not observation.world:
            self.expert = Expert(observation.world, self.model, ExpertConfig(commit_margin=self.commit_margin,
                                                                          memoryless=self.memoryless))
            self.world = observation.world
        truth = observation.ground_truth
        if truth is None or observation.goal_in_world is None:
            return 0.0, 0.0
        q = truth.pose.pose.orientation
        pose = (truth.pose.pose.position.x, truth.pose.pose.position.y, quat_to_yaw(q.w, q.x, q.y, q.z))
        x, y = observation.goal_in_world[:2]
        linear, angular, status = self.expert.command(pose, (x, y), truth.twist.twist.angular.z)
        if status == 'no_path':
            self.status = f'no collision-free path to the goal ({x:.2f}, {y:.2f}) in world'
            return None
        self.status = 'goal reached' if status == 'reached' else ''
        return linear, angular


class PolicyDriver(Driver):
    """A trained ONNX policy (``--driver policy --policy FILE``, ``driver:=policy policy:=FILE``): the robot's contract
    topics and the goal, nothing of the simulator. ``robot`` (a name or YAML path) checks the file fits that
    robot; ``goal_tolerance`` > 0 stops it within that distance of the goal (by its own pose estimate); ``shield``
    puts every command through a :class:`~robotsim_learning.shield.VelocityShield` and a robot stuck in front of an
    obstacle through its :class:`~robotsim_learning.shield.StallRecovery` (the context's
    robot, else ``robot``) reading the same scan."""
    name = 'policy'
    rate = 10.0

    def __init__(self, path: str = '', providers: tuple[str, ...] = ('CPUExecutionProvider',),
                 robot: str | None = None, goal_tolerance: float = 0.0, shield: bool = False):
        from .policy_runtime import PolicyFileError, PolicyRuntime, policy_for_robot
        if not path:
            raise PolicyFileError(f"{self.name}: expected the path of an ONNX policy file ({self.name}:FILE), got ''")
        self.runtime = policy_for_robot(path, robot, providers) if robot else PolicyRuntime(path, providers)
        self.path, self.providers, self.robot = path, providers, robot
        self.goal_tolerance = goal_tolerance
        self.use_shield = bool(shield)
        self.shield = None
        self.status = ''

    def describe(self) -> str:
        return (f'policy {self.path} ({self.runtime.spec.size} inputs) on {", ".join(self.providers)}'
                + (', through the velocity shield (with stall recovery)' if self.use_shield else ''))

    @property
    def inputs(self) -> tuple[str, ...]:
        spec = self.runtime.spec
        scan = spec.uses_scan or self.use_shield  # the shield reads the scan a camera-only policy does not
        return (('scan',) if scan else ()) + (('camera/image_raw',) if spec.uses_image else ()) + ('odom',) + \
            (('imu/data',) if spec.uses_imu else ())

    def reset(self, context: DriveContext) -> None:
        super().reset(context)
        self.images, self.odometry = deque(maxlen=5), deque(maxlen=20)
        self.estimate = ImuHeadingOdometry() if self.runtime.spec.uses_imu else None
        self.memory = self.runtime.spec.route_memory()
        self.runtime.reset(context.seed)  # committed to nothing; a sampling policy's draws from the run's seed
        self.goal = None
        """The goal (x, y in odom) of the last decision: a new one starts the turn commitment afresh."""
        if self.use_shield and self.shield is None:
            from .shield import StallRecovery, VelocityShield
            model = context.robot()
            if model is None:
                from robotsim_core.description import load_robot
                model = load_robot(self.robot or 'rover')
            self.shield = VelocityShield.for_robot(model, self.rate)
            self.recovery = StallRecovery(self.shield, model.drive.max_linear_speed, model.drive.max_yaw_rate)
        if self.shield is not None:
            self.recovery.reset()

    def act(self, observation: Observation) -> tuple[float, float]:
        from .observation import decision_state, stamp_seconds
        from .policy_runtime import InferenceError
        latest = observation.latest
        if self.estimate is not None and 'imu/data' in observation.updated:
            self.estimate.add_imu(latest['imu/data'])
        for name, queue in (('camera/image_raw', self.images), ('odom', self.odometry)):
            if name in observation.updated:
                queue.append(latest[name])
        if self.estimate is not None and 'odom' in observation.updated:
            self.estimate.add_odometry(latest['odom'])
        scan, goal = latest.get('scan'), _goal_xy(observation)
        if goal is not None and goal != self.goal:
            if self.goal is not None:
                self.runtime.reset()  # the turn held on the way to the last goal is not one toward this goal
            self.goal = goal
        pose = self.estimate.pose() if self.estimate is not None else None
        if (scan is None and 'scan' in self.inputs) or goal is None or not self.odometry \
                or (self.runtime.spec.uses_image and not self.images) or (self.estimate is not None and pose is None):
            self.status = self.estimate.problem if self.estimate is not None and pose is None else ''
            return 0.0, 0.0
        _, _, here = decision_state(self.runtime.spec, scan, self.images, self.odometry, pose)
        if self.goal_tolerance > 0:
            if math.hypot(*goal_in_base(goal, here)) <= self.goal_tolerance:
                self.status = 'goal reached'
                return 0.0, 0.0
        try:
            command = self.runtime.act(observation_from_messages(self.runtime.spec, scan, self.images, self.odometry,
                                                                 goal, pose, self.runtime.perceive, self.memory))
        except (InferenceError, ValueError) as error:
            self.status = f'inference failed: {error}'
            return 0.0, 0.0  # a failed inference stops the robot
        self.status = ''
        if self.shield is None:
            return command
        twist = self.odometry[-1].twist.twist
        moving, turning = twist.linear.x, twist.angular.z
        sent = self.shield.filter(command, scan, moving=moving, turning=turning)
        goal_base = goal_in_base(goal, here)
        recovering = self.recovery.command(stamp_seconds(scan.header.stamp), here, moving, scan,
                                           math.atan2(goal_base[1], goal_base[0]), turning)
        return sent if recovering is None else recovering


class StraightDriver(Driver):
    """The straight-to-goal baseline: odometry and the goal only, obstacles ignored."""
    name = 'straight'
    rate = 10.0

    @property
    def inputs(self) -> tuple[str, ...]:
        return ('odom',)

    def reset(self, context: DriveContext) -> None:
        from .straight import StraightToGoal
        super().reset(context)
        self.driver = StraightToGoal()

    def act(self, observation: Observation) -> tuple[float, float]:
        odometry, goal = observation.latest.get('odom'), _goal_xy(observation)
        if odometry is None or goal is None:
            return 0.0, 0.0
        pose = odometry.pose.pose
        return self.driver.command((pose.position.x, pose.position.y, yaw_of(pose.orientation)), goal)


class DaggerDriver(PolicyDriver):
    """DAgger (``--driver dagger --policy FILE``): the policy drives, the expert labels every decision with what it
    would have commanded (recorded on /expert/cmd_vel), so training sees the states the policy itself
    reaches. With probability ``expert_share`` (seeded per run) a decision is the expert's."""
    name = 'dagger'
    privileged = True
    has_expert = True
    labels = True

    def __init__(self, path: str = '', providers: tuple[str, ...] = ('CPUExecutionProvider',),
                 robot: str | None = None, goal_tolerance: float = 0.0, shield: bool = False,
                 expert_commit: float = 0.0, expert_memoryless: bool = False,
                 expert_share: float = DAGGER_EXPERT_SHARE):
        super().__init__(path, providers, robot, goal_tolerance, shield)
        self.expert_commit = float(expert_commit)
        self.expert_memoryless = bool(expert_memoryless)
        self.expert_share = float(expert_share)
        """The share of decisions the expert's label drives (:attr:`RunOptions.expert_share`)."""

    @property
    def inputs(self) -> tuple[str, ...]:
        return super().inputs + (GROUND_TRUTH,)

    def reset(self, context: DriveContext) -> None:
        super().reset(context)
        self.expert = ExpertDriver(self.expert_commit, self.expert_memoryless)
        self.expert.reset(context)
        self.choices = np.random.default_rng([context.seed, 7])  # the run's own, reproducible stream
        self.label = None

    def act(self, observation: Observation) -> tuple[float, float] | None:
        policy_command = super().act(observation)
        self.label = self.expert.act(observation)
        if self.label is None:
            self.status = self.expert.status
            return None  # the expert sees no way to the goal: the episode ends as 'gave_up'
        return self.label if self.choices.random() < self.expert_share else policy_command


def driver_class(name: str, option: str = '--driver') -> type[Driver]:
    """The class the driver table names for ``name`` (ValueError naming ``option``: not a driver of the base)."""
    info = DRIVERS.get(name)
    if info is None or not info.implementation:
        known = ', '.join(n for n, i in DRIVERS.items() if i.implementation)
        raise ValueError(f'{option}: unknown driver {name!r}; expected one of {known}')
    module, _, attribute = info.implementation.partition(':')
    return getattr(importlib.import_module(module), attribute)


def make_driver(name: str, option: str = '--driver', run: RunOptions = RunOptions(), **options) -> Driver:
    """``NAME`` or ``NAME:ARGUMENT`` (a driver's file, e.g. ``policy:policy.onnx``): a plain string, so worker
    processes started afresh build the same driver. ``run``: the :class:`RunOptions` (checked against the driver:
    ValueError naming the flag); ``options`` go to a driver that takes an argument (the policy's ``providers``,
    ``robot``, ``goal_tolerance``); errors name ``option``."""
    base, _, argument = name.partition(':')
    cls = driver_class(base, option)
    run.check(name, option)
    extra = {'expert_commit': run.expert_commit, 'expert_memoryless': run.expert_memoryless} if cls.has_expert else {}
    if issubclass(cls, DaggerDriver):
        extra['expert_share'] = run.expert_share
    if DRIVERS[base].argument:
        if not argument:
            raise ValueError(f'{option} {base}: expected {base}:FILE with an ONNX policy file')
        return cls(argument, **options, shield=run.shield, **extra)
    if argument:
        raise ValueError(f'{option} {base}: takes no argument, got {name!r}')
    return cls(**extra)


def _has_expert(name: str) -> bool:
    try:
        return driver_class(name).has_expert
    except (ValueError, ImportError, AttributeError):
        return False
