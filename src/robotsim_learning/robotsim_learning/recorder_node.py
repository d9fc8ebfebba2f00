"""Bare-machine stand-in for ``ros2 bag record`` (rosbag2 is not on PyPI).

Subscribes to the given topics without deserializing (``raw=True``), each with the QoS its
publishers offer (best effort for sensor data, transient local for /tf_static and
/robot_description), and writes an MCAP rosbag2 bag stamped with the receive time of the node's
clock (sim time with use_sim_time, as ``ros2 bag record --use-sim-time``). Topics that appear
later are picked up by a periodic graph scan. Ctrl-C closes the bag and prints the counts.
"""

from __future__ import annotations

import sys

from rclpy.clock import Clock, ClockType
from rclpy.node import Node
from rclpy.qos import DurabilityPolicy, HistoryPolicy, QoSProfile, ReliabilityPolicy

from robotsim_core import ros_common

from .bag_writer import BagError, BagWriter


class RecorderNode(Node):
    def __init__(self):
        super().__init__('robotsim_recorder')
        self.output = self.declare_parameter('output', 'robotsim_bag').value
        self.wanted = list(self.declare_parameter('topics', ['/clock']).value)
        self.bag = BagWriter(self.output)
        self.subscriptions_by_topic = {}
        # Wall-clock graph scan: with use_sim_time a paused simulation would otherwise stop discovery.
        self.create_timer(0.5, self.discover, clock=Clock(clock_type=ClockType.STEADY_TIME))
        self.discover()
        self.get_logger().info(f'recording {len(self.wanted)} topics to {self.output} (MCAP)')

    def discover(self) -> None:
        types = dict(self.get_topic_names_and_types())
        for topic in self.wanted:
            if topic in self.subscriptions_by_topic or not types.get(topic):
                continue
            msg_type = types[topic][0]
            publishers = self.get_publishers_info_by_topic(topic)
            if not publishers:
                continue
            self.bag.add_topic(topic, msg_type)
            self.subscriptions_by_topic[topic] = self.create_subscription(
                ros_common.message_class(msg_type), topic, self._writer(topic), self._qos(publishers), raw=True)
            if len(self.subscriptions_by_topic) == len(self.wanted):
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


def main(args=None) -> int:
    return ros_common.run_node('recorder', RecorderNode, (BagError,), args, finish=RecorderNode.close)


if __name__ == '__main__':
    sys.exit(main())
