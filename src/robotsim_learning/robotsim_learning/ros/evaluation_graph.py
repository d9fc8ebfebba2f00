"""One evaluation episode through the ROS graph: the scenario's world and robot written to files, the bare
launcher started on them (simulator node + the driver node as deployed, built-in base control, held
paused until the driver is listening), ``/sim/ground_truth`` fed to an :class:`EpisodeTracker`, and
the launch stopped with Ctrl-C when the outcome is decided.

Pacing: in lockstep (the default) the simulator waits for the driver's command at each decision, so the run is the
same at any real-time factor and load. Without it, ``real_time_factor`` 0 (as fast as possible) is only a fair
test when the driver keeps up in sim time. Signs that it did not: the ``/cmd_vel`` messages, counted over the
episode's sim time, fall short of the driver's nominal rate; or the driver node's ticks (its line at exit) include
stops for a stale input, or more than a moment of waiting for an input's first message (the machine's load held the
policy's inputs back; the zero commands it sent meanwhile count as /cmd_vel, not as decisions). Either way the
caller runs the episode again, slower.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from dataclasses import dataclass

from ..evaluation import EpisodeTracker, SharedDomainError, WorldObstacles, footprint
from ..randomization import Scenario

KEEPS_UP = 0.9
"""A driver keeps up in sim time when /cmd_vel arrives at no less than this fraction of its nominal rate."""
SIMULATION_MARGIN = 30.0
"""Sim seconds the simulator runs past an episode's timeout before it stops by itself."""
START_TIMEOUT = 300.0
"""Wall seconds for the bringup to come up (a loaded 2-core machine starts a Python node in seconds)."""
RESUME_RETRY = 5.0
"""Wall seconds the evaluation waits for the simulator to answer its unpause request before it asks again."""
STOP_TIMEOUT = 30.0
"""Wall seconds the launcher gets to stop its nodes after Ctrl-C before it is killed."""
STALL_TIMEOUT = 120.0
"""Wall seconds without a new ground-truth pose after which a running episode is an ``error`` (stalled): in lockstep
the simulator waits for a driver that stopped answering (a node hung, a data connection discovery matched but never
made), and sim time stands still, so its own duration would never end it."""
ALONE_WAIT = 30.0
"""Wall seconds a second /clock publisher on an episode's ROS domain is given to leave (a killed simulator's DDS
participant stays listed until its lease, 10-20 s by the RMW's defaults, runs out) before the evaluation stops."""


class EvaluationError(RuntimeError):
    """The evaluation cannot go on (one line)."""


TICK_REPORT = re.compile(r'ticks (\d+): decided (\d+), stale input (\d+), waiting for inputs (\d+), standing still (\d+)')
"""The driver node's line at exit (robotsim_learning.ros.driver_node.DriverNode.tick_report)."""
WAITING_ALLOWANCE = 3
"""Ticks a driver may wait for its inputs' first messages when time starts (a 10 Hz scan, a 15 Hz camera) before
waiting says the machine's load held the inputs back."""


def driver_ticks(log_path: str) -> dict[str, int] | None:
    """The driver node's tick counts (decided, stale, waiting, still) from the launch log; None when it did not
    print them (it was killed)."""
    try:
        with open(log_path, encoding='utf-8', errors='replace') as stream:
            found = [match for line in stream if (match := TICK_REPORT.search(line))]
    except OSError:
        return None
    if not found:
        return None
    _, decided, stale, waiting, still = map(int, found[-1].groups())
    return {'decided': decided, 'stale': stale, 'waiting': waiting, 'still': still}


@dataclass
class GraphEpisode:
    tracker: EpisodeTracker
    obstacles: WorldObstacles
    outcome: str
    command_rate: float          # /cmd_vel messages per sim second
    nominal_rate: float
    wall_seconds: float
    log: str
    ticks: dict[str, int] | None = None
    """The driver node's ticks: decided on fresh inputs, stopped for a stale input, waiting for an input's first
    message, standing still by its own choice (None: not reported)."""
    lockstep: bool = False
    """The simulator waited for the driver's command at each decision (launch argument lockstep:=true)."""
    lost_poses: int = 0
    """Gaps in the ground truth received (a pose the outcome might hang on never came): the episode is run again."""

    @property
    def stale_ticks(self) -> int:
        return self.ticks['stale'] if self.ticks else 0

    @property
    def waiting_ticks(self) -> int:
        return self.ticks['waiting'] if self.ticks else 0

    @property
    def kept_up(self) -> bool:
        """The driver decided at its rate on fresh inputs throughout: the outcome is the driver's, not the load's. The
        zero commands a node sends while an input is stale or missing count as /cmd_vel, not as decisions."""
        if self.lockstep:  # every decision on the messages of its instant, at any pace: nothing to keep up with
            return self.ticks is not None
        return (self.command_rate >= KEEPS_UP * self.nominal_rate and self.ticks is not None
                and self.stale_ticks == 0 and self.waiting_ticks <= WAITING_ALLOWANCE)


def nominal_command_rate(driver: str, model) -> float:
    """Hz (sim time) at which the driver node publishes /cmd_vel: the driver's own rate (the bringup leaves it)."""
    from ..driving import driver_class
    return float(driver_class(driver).rate)


class GraphObserver:
    """The evaluation's own rclpy node (a context of its own): ground truth, /cmd_vel, the pause service."""

    def __init__(self):
        import rclpy
        from geometry_msgs.msg import Twist
        from nav_msgs.msg import Odometry
        from rclpy.executors import SingleThreadedExecutor
        from rclpy.qos import QoSProfile, ReliabilityPolicy

        from robotsim_msgs.srv import Pause
        self.context = rclpy.Context()
        rclpy.init(context=self.context)
        self.node = rclpy.create_node(f'robotsim_evaluate_{os.getpid()}', context=self.context)
        self.executor = SingleThreadedExecutor(context=self.context)
        self.executor.add_node(self.node)
        # Deep queues: at real_time_factor 0 ground truth arrives at hundreds of messages per wall second,
        # and a reliable reader that falls behind must not lose the poses that decide the outcome.
        reliable = QoSProfile(depth=5000, reliability=ReliabilityPolicy.RELIABLE)
        self.poses: list = []
        self.commands = 0
        self.node.create_subscription(Odometry, '/sim/ground_truth', self.poses.append, reliable)
        self.node.create_subscription(Twist, '/cmd_vel', self._on_command, reliable)
        self.pause = self.node.create_client(Pause, '/sim/pause')
        self.Pause = Pause

    def _on_command(self, _message) -> None:
        self.commands += 1

    def reset(self) -> None:
        self.poses.clear()
        self.commands = 0

    def spin(self, seconds: float = 0.05) -> None:
        self.executor.spin_once(timeout_sec=seconds)

    def drain(self, quiet: float = 1.0) -> bool:
        """Take queued messages until none came for ``quiet`` wall seconds; True when some did."""
        before, last = len(self.poses), time.monotonic()
        while time.monotonic() - last < quiet:
            count = len(self.poses)
            self.spin(0.05)
            if len(self.poses) != count:
                last = time.monotonic()
        return len(self.poses) > before

    def resume(self, alive) -> bool:
        """Unpause the simulator; the request is sent again every RESUME_RETRY s until one is answered (it is
        idempotent): a service that reads as ready may not yet have matched the client's reply reader, and drops its
        answer (seen once, on a loaded machine with four launches beside each other: 60 s without a reply)."""
        futures = []
        deadline = time.monotonic() + 60
        while alive() and time.monotonic() < deadline and not any(f.done() for f in futures):
            futures.append(self.pause.call_async(self.Pause.Request(paused=False)))
            retry = time.monotonic() + RESUME_RETRY
            while not futures[-1].done() and alive() and time.monotonic() < min(retry, deadline):
                self.spin()
        return any(f.done() and f.result().success for f in futures)

    def close(self) -> None:
        """Shut the node and its context down (once: a second call does nothing)."""
        import rclpy
        if not self.context.ok():
            return
        self.executor.shutdown()
        self.node.destroy_node()
        rclpy.shutdown(context=self.context)


def _inputs_of(driver: str, uses_image: bool) -> list[tuple[str, int]]:
    """(topic, subscribers expected) that show the driver node is listening (ours counted too)."""
    if driver == 'expert':
        return [('/sim/ground_truth', 2)]
    if driver == 'policy':
        return [('/scan', 1), ('/odom', 1)] + ([('/camera/image_raw', 1)] if uses_image else [])
    return [('/odom', 1)] if driver == 'straight' else [('/scan', 1)]


def run_graph_episode(observer: GraphObserver, scenario: Scenario, spec, driver: str, folder: str,
                      real_time_factor: float, policy: str = '', uses_image: bool = False,
                      shield: bool = False, lockstep: bool = True) -> GraphEpisode:
    """Run one episode of ``scenario`` with ``driver`` through ``robotsim launch sim`` (files and the
    launch log in ``folder``); ``shield``: the policy node's velocity shield on (``shield:=true``); ``lockstep``:
    the simulator waits for each of the driver's decisions (``lockstep:=true``), so the outcome is the same at any
    real-time factor and load."""
    from robotsim_core.contract import robot_contract
    from robotsim_core.description import load_robot
    from robotsim_core.processes import die_with_parent  # own session + dies with us: Ctrl-C goes to it once
    from robotsim_sim.scene import load_world

    from .episode import goal_in_odom
    started = time.monotonic()
    os.makedirs(folder, exist_ok=True)
    world_path, robot_path = os.path.join(folder, 'world.yaml'), os.path.join(folder, 'robot.yaml')
    for path, text in ((world_path, scenario.world_yaml), (robot_path, scenario.robot_yaml)):
        with open(path, 'w', encoding='utf-8') as stream:
            stream.write(text)
    model = load_robot(robot_path)
    obstacles = WorldObstacles(load_world(world_path))
    tracker = EpisodeTracker(tuple(scenario.goal[:2]), spec.goal_tolerance, spec.episode_duration, obstacles,
                             footprint(model))
    goal = goal_in_odom(scenario.spawn, scenario.goal)
    arguments = [f'world:={world_path}', f'robot:={robot_path}', 'firmware:=false', f'driver:={driver}',
                 f'goal:={goal[0]!r},{goal[1]!r}', f'seed:={scenario.sim_seed}', f'lockstep:={str(lockstep).lower()}',
                 f'real_time_factor:={real_time_factor:g}', f'cameras:={str(driver == "policy" and uses_image).lower()}',
                 # The simulator ends the run itself after the timeout: bounded even if we stall. The margin keeps
                 # it publishing while a loaded evaluator catches up (as fast as possible, it runs far ahead of
                 # us, and what it had not delivered when it exits is lost); we stop it once we have decided.
                 f'duration:={spec.episode_duration + SIMULATION_MARGIN:g}', 'paused:=true']
    if driver == 'policy':
        arguments += [f'policy:={os.path.abspath(policy)}', f'shield:={str(shield).lower()}']
    log_path = os.path.join(folder, 'launch.log')
    with open(log_path, 'w', encoding='utf-8') as log:
        log.write('robotsim launch sim ' + ' '.join(arguments) + '\n')
        log.flush()
        process = subprocess.Popen([sys.executable, '-m', 'robotsim.cli', 'launch', 'sim', *arguments],
                                   stdout=log, stderr=subprocess.STDOUT, preexec_fn=die_with_parent)
        period = 1.0 / next(topic.rate for topic in robot_contract(model).topics if topic.name == 'sim/ground_truth')
        try:
            outcome, lost, why = _drive(observer, process, tracker, driver, uses_image, period)
        finally:
            _stop(process)
        if why:
            log.write(f'[evaluation] {why}\n')  # the log's last line: what the evaluation saw go wrong
    elapsed = tracker.end_time
    nominal = nominal_command_rate(driver, model)
    # In lockstep the simulator does not step past a decision without its command: the rate is the nominal one by
    # construction (and /cmd_vel carries TwistStamped then, which the observer does not count).
    rate = nominal if lockstep else observer.commands / elapsed if elapsed > 0 else 0.0
    return GraphEpisode(tracker, obstacles, outcome, rate, nominal, time.monotonic() - started, log_path,
                        driver_ticks(log_path), lockstep, lost)


def _drive(observer: GraphObserver, process: subprocess.Popen, tracker: EpisodeTracker, driver: str,
           uses_image: bool, period: float) -> tuple[str, int, str]:
    """(outcome, gaps in the ground truth: consecutive poses more than 1.5 ``period`` apart, why an ``error``)."""
    from ..observation import stamp_seconds, yaw_of
    lost, last = 0, None

    def alive() -> bool:
        return process.poll() is None
    deadline = time.monotonic() + START_TIMEOUT
    inputs = _inputs_of(driver, uses_image)
    node = observer.node
    while not (observer.pause.service_is_ready() and node.count_publishers('/cmd_vel') >= 1
               and all(node.count_subscribers(topic) >= count for topic, count in inputs)):
        if not alive() or time.monotonic() > deadline:
            return 'error', lost, ('the bringup ended before its nodes came up' if not alive() else
                                   f'the bringup did not come up within {START_TIMEOUT:g} s')
        observer.spin(0.1)
    # Discovery has matched the endpoints; give the data connections a moment before time starts.
    settle = time.monotonic() + 1.0
    while time.monotonic() < settle:
        observer.spin(0.05)
    _check_alone(observer)
    observer.reset()  # the simulator is still paused: whatever came before is the previous episode's
    if not observer.resume(alive):
        return 'error', lost, 'the simulator could not be resumed (/sim/pause)'
    taken = 0
    # The simulator stops itself SIMULATION_MARGIN after the timeout: the launch ending is the wall-time bound;
    # this backstop only catches a simulator that hangs (50 wall seconds per sim second is far below any pace seen).
    stuck = time.monotonic() + 60 + 50 * tracker.duration
    progress = time.monotonic()
    while time.monotonic() < stuck and time.monotonic() - progress < STALL_TIMEOUT:
        while taken < len(observer.poses):
            message = observer.poses[taken]
            taken += 1
            progress = time.monotonic()
            pose, stamp = message.pose.pose, stamp_seconds(message.header.stamp)
            lost += last is not None and stamp - last > 1.5 * period
            last = stamp
            outcome = tracker.update(stamp,
                                     (pose.position.x, pose.position.y, yaw_of(pose.orientation)))
            if outcome is not None:
                _check_alone(observer)  # another graph that came up during the episode
                return outcome, lost, ''
        if not alive() and taken == len(observer.poses):
            # The simulator ended (its duration): take what is still queued before calling it an error.
            if not observer.drain():
                return 'error', lost, 'the bringup ended before the episode did'
            continue
        observer.spin(0.05)
    if time.monotonic() - progress >= STALL_TIMEOUT:
        return 'error', lost, f'stalled: no ground-truth pose for {STALL_TIMEOUT:g} wall seconds'
    return 'error', lost, f'still running after {60 + 50 * tracker.duration:g} wall seconds'


def _check_alone(observer: GraphObserver) -> None:
    """Raise :class:`SharedDomainError` when the episode's ROS domain has more than its own simulator's /clock.
    Seen: two evaluations started on the same ROS_DOMAIN_ID each read the other's ground truth (goals "reached" at
    0.002 s of sim time, paths of 541 m, collisions on robots that had not moved). A second publisher is given
    ALONE_WAIT to go: the previous episode's simulator, if it had to be killed, stays in the graph until its DDS
    lease runs out."""
    deadline = time.monotonic() + ALONE_WAIT
    while (clocks := observer.node.count_publishers('/clock')) > 1 and time.monotonic() < deadline:
        observer.spin(0.2)
    if clocks > 1:
        domain = os.environ.get('ROS_DOMAIN_ID', '0') or '0'
        raise SharedDomainError(
            f'ROS domain {domain}: {clocks} publishers of /clock, expected this episode\'s simulator alone (another '
            'simulator or evaluation runs on the same domain, and their messages would mix); an evaluation with W '
            'workers takes ROS_DOMAIN_ID ... ROS_DOMAIN_ID+W-1: give it a range no other graph uses')


def _stop(process: subprocess.Popen) -> None:
    """Ctrl-C semantics: SIGINT (the launcher stops its nodes), SIGKILL after STOP_TIMEOUT (its nodes die
    with it)."""
    from robotsim_core.processes import interrupt
    interrupt(process, STOP_TIMEOUT)


def last_lines(path: str, count: int = 3) -> str:
    try:
        with open(path, encoding='utf-8', errors='replace') as stream:
            return ' | '.join(line.strip() for line in stream.readlines()[-count:])
    except OSError:
        return ''
