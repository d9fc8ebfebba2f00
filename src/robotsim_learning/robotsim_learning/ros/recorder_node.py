"""Bare-machine stand-in for ``ros2 bag record`` (rosbag2 is not on PyPI).

Subscribes to the given topics without deserializing (``raw=True``), each with the QoS its
publishers offer (best effort for sensor data, transient local for /tf_static and
/robot_description), and writes an MCAP rosbag2 bag stamped with the receive time of the node's
clock (sim time with use_sim_time, as ``ros2 bag record --use-sim-time``). Topics that appear
later are picked up by a periodic graph scan; while some wanted topic has no publisher, a warning
names it every few seconds, so a recording never misses a topic silently. ``command_topics`` (the
robots' commands: cmd_vel, goal_pose, ...) are recorded too, from when a publisher appears, without
warnings and without holding the start: a teleop may start later or never.

The start of a run: with ``resume_simulation`` (a robotsim_msgs/Pause service, e.g. /sim/pause) the
simulator was started paused for this recorder, which resumes it once every wanted topic is
subscribed and matched, so the bag begins at sim time 0.

Crash safety (see :mod:`.bag_writer`): messages are on disk within ``flush_period`` s and
metadata.yaml always describes what is; Ctrl-C, SIGTERM and SIGHUP close the bag properly; after
a SIGKILL ``robotsim bag repair`` rebuilds the MCAP footer.
"""

from __future__ import annotations

import signal
import sys
import time

from rclpy.clock import Clock, ClockType
from rclpy.node import Node
from rclpy.qos import DurabilityPolicy, HistoryPolicy, QoSProfile, ReliabilityPolicy
from rosbags.interfaces import Qos, QosDurability, QosHistory, QosLiveliness, QosReliability, QosTime

from robotsim_core.ros import common as ros_common
from robotsim_msgs.srv import Pause

from ..bag_writer import FLUSH_PERIOD, BagError, BagWriter

TICK = 0.25
"""Wall seconds between graph scans, flush checks and start checks."""
MATCH_GRACE = 1.0
"""Wall seconds between our subscriptions matching every publisher and resuming the simulation:
the publishers learn of our subscriptions in the same discovery exchange, but not at the same
instant, and a reliable publisher delivers only to subscriptions it already knows."""
FIRST_WARNING, WARNING_PERIOD = 5.0, 10.0
"""Wall seconds after start of the first warning about topics without publisher, and between warnings."""
RESUME_TIMEOUT = 30.0
"""Wall seconds after which the simulation is resumed even though some topics never appeared (with
a warning naming them), rather than holding the run forever."""


def _enum(kind, value):
    try:
        return kind(int(value))
    except ValueError:
        return kind.UNKNOWN


def _qos_time(duration) -> QosTime:
    return QosTime(*divmod(duration.nanoseconds, 1_000_000_000))  # infinite -> rmw's {9223372036, 854775807}


def offered_qos(publishers) -> list[Qos]:
    """The publishers' QoS profiles as rosbag2 stores them in a bag (``offered_qos_profiles``)."""
    return [Qos(_enum(QosHistory, q.history), q.depth, _enum(QosReliability, q.reliability),
                _enum(QosDurability, q.durability), _qos_time(q.deadline), _qos_time(q.lifespan),
                _enum(QosLiveliness, q.liveliness), _qos_time(q.liveliness_lease_duration),
                bool(q.avoid_ros_namespace_conventions))
            for q in (p.qos_profile for p in publishers)]


class RecorderNode(Node):
    def __init__(self):
        super().__init__('robotsim_recorder')
        self.output = self.declare_parameter('output', 'robotsim_bag').value
        self.wanted = list(self.declare_parameter('topics', ['/clock']).value)
        # [''] rather than []: rclpy cannot tell an empty list's type.
        self.commands = [topic for topic in self.declare_parameter('command_topics', ['']).value
                         if topic and topic not in self.wanted]
        self.resume_service = self.declare_parameter('resume_simulation', '').value
        self.bag = BagWriter(self.output, float(self.declare_parameter('flush_period', FLUSH_PERIOD).value))
        self.subscriptions_by_topic = {}
        self.started = time.monotonic()
        self.next_warning = self.started + FIRST_WARNING
        self.matched_since: float | None = None
        self.resume_client = None
        self.resume_requested = False
        # Wall-clock timer: with use_sim_time a paused simulation would otherwise stop it.
        self.create_timer(TICK, self.tick, clock=Clock(clock_type=ClockType.STEADY_TIME))
        self.discover()
        self.get_logger().info(f'recording {len(self.wanted)} topics to {self.output} (MCAP)'
                               + (f', and {len(self.commands)} command topics once published' if self.commands else '')
                               + (f'; the simulation resumes ({self.resume_service}) once all are subscribed'
                                  if self.resume_service else ''))

    def tick(self) -> None:
        self.discover()
        self.bag.flush_if_due()
        now = time.monotonic()
        missing = [topic for topic in self.wanted if topic not in self.subscriptions_by_topic]
        if missing and now >= self.next_warning:
            self.next_warning = now + WARNING_PERIOD
            self.get_logger().warning(f'not recording {len(missing)} of {len(self.wanted)} topics yet (no publisher '
                                      f'seen for {now - self.started:.0f} s): {", ".join(missing)}')
        if self.resume_service and not self.resume_requested:
            self.resume_when_ready(now, missing)

    def resume_when_ready(self, now: float, missing: list[str]) -> None:
        """Release the held simulation once every wanted topic is subscribed and matched (or give up
        waiting for missing topics after RESUME_TIMEOUT, naming them)."""
        if self.resume_client is None:
            self.resume_client = self.create_client(Pause, self.resume_service)
        matched = not missing and all(self.subscriptions_by_topic[topic].get_publisher_count() > 0
                                      for topic in self.wanted)
        if matched:
            self.matched_since = self.matched_since or now
        ready = matched and now - self.matched_since >= MATCH_GRACE
        timed_out = now - self.started >= RESUME_TIMEOUT
        if not (ready or timed_out) or not self.resume_client.service_is_ready():
            return
        if not ready:
            self.get_logger().warning(f'resuming the simulation without {", ".join(missing) or "matched publishers"} '
                                      f'after {RESUME_TIMEOUT:.0f} s: the start of those topics is not recorded')
        self.resume_requested = True
        future = self.resume_client.call_async(Pause.Request(paused=False))
        future.add_done_callback(self._resumed)

    def _resumed(self, future) -> None:
        response = future.result()
        if response is not None and response.success:
            self.get_logger().info(f'resumed the simulation ({self.resume_service}): recording from its start')
        else:
            self.get_logger().error(f'{self.resume_service} refused to resume the simulation: '
                                    f'{getattr(response, "message", "no response")}')

    def discover(self) -> None:
        types = dict(self.get_topic_names_and_types())
        for topic in self.wanted + self.commands:
            if topic in self.subscriptions_by_topic or not types.get(topic):
                continue
            msg_type = types[topic][0]
            publishers = self.get_publishers_info_by_topic(topic)
            if not publishers:
                continue
            self.bag.add_topic(topic, msg_type, offered_qos(publishers))
            self.subscriptions_by_topic[topic] = self.create_subscription(
                ros_common.message_class(msg_type), topic, self._writer(topic), self._qos(publishers), raw=True)
            if topic in self.commands:
                self.get_logger().info(f'recording the command topic {topic} ({msg_type})')
            elif all(wanted in self.subscriptions_by_topic for wanted in self.wanted):
                self.get_logger().info(f'subscribed to all {len(self.wanted)} topics')

    @staticmethod
    def _qos(publishers) -> QoSProfile:
        """Match what is offered: reliable only if every publisher is; transient local if all are."""
        reliable = all(p.qos_profile.reliability == ReliabilityPolicy.RELIABLE for p in publishers)
        latched = all(p.qos_profile.durability == DurabilityPolicy.TRANSIENT_LOCAL for p in publishers)
        return QoSProfile(history=HistoryPolicy.KEEP_LAST, depth=1000,
                          reliability=ReliabilityPolicy.RELIABLE if reliable else ReliabilityPolicy.BEST_EFFORT,
                          durability=DurabilityPolicy.TRANSIENT_LOCAL if latched else DurabilityPolicy.VOLATILE)

    def _writer(self, topic: str):
        def callback(data: bytes) -> None:
            self.bag.write(topic, self.get_clock().now().nanoseconds, data)
        return callback

    def close(self) -> None:
        self.bag.close()
        counts = ', '.join(f'{topic} {count}' for topic, count in sorted(self.bag.counts.items()))
        print(f'[recorder] wrote {self.output}: {counts}', flush=True)


STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
DRAIN_QUIET = 0.5
"""After a stop signal, keep receiving until no message arrived for this long (s) ..."""
DRAIN_LIMIT = 3.0
"""... or for at most this long: a bringup stops all its nodes at once, and what the publishers sent
just before they stopped is still queued for this recorder."""


def spin_then_drain(node: RecorderNode) -> None:
    """Spin until SIGINT, SIGTERM or SIGHUP (a hung-up terminal), then drain what is already queued.

    rclpy's own handler would shut the context down at the signal, dropping every queued message;
    these handlers (installed after rclpy's, so they replace it) only ask the loop to stop."""
    from rclpy.executors import SingleThreadedExecutor

    stop_requested = []
    for signum in STOP_SIGNALS:
        signal.signal(signum, lambda received, _frame: stop_requested.append(received))
    executor = SingleThreadedExecutor()
    executor.add_node(node)
    while not stop_requested:
        executor.spin_once(timeout_sec=0.1)
    last_total, last_change = node.bag.total_messages(), time.monotonic()
    deadline = last_change + DRAIN_LIMIT
    while time.monotonic() < min(deadline, last_change + DRAIN_QUIET):
        executor.spin_once(timeout_sec=0.05)
        if node.bag.total_messages() != last_total:
            last_total, last_change = node.bag.total_messages(), time.monotonic()


def main(args=None) -> int:
    return ros_common.run_node('recorder', RecorderNode, (BagError,), args, run=spin_then_drain,
                               finish=RecorderNode.close)


if __name__ == '__main__':
    sys.exit(main())
