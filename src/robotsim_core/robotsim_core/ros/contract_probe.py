"""The ROS side of ``robotsim contract check``: watch a live graph, then evaluate it.

Subscribes to every contract topic with the contract's QoS (a publisher with incompatible QoS
then delivers nothing, and the check says so), records types, frame ids and stamps, collects
the TF tree, and hands everything to :mod:`robotsim_core.contract_check`. Works against the
simulator (reference time: /clock) and the real robot (reference time: the wall clock).
"""

from __future__ import annotations

import struct
import time

from ..contract import Contract, QosSpec, resolve_topic
from ..contract_check import TopicObservation, evaluate


def probe(contract: Contract, duration: float, namespace: str = '', frame_prefix: str = '',
          include_sim_only: bool = True):
    import rclpy
    from rclpy.qos import DurabilityPolicy, ReliabilityPolicy

    from .common import message_class, qos_profile

    context = rclpy.Context()
    rclpy.init(context=context)
    node = rclpy.create_node('robotsim_contract_check', context=context)
    executor = rclpy.executors.SingleThreadedExecutor(context=context)
    executor.add_node(node)
    observations: dict[str, TopicObservation] = {}
    tf_edges: set[tuple[str, str]] = set()
    latest_clock = [None]

    def record_header(name):
        def callback(raw: bytes):
            # CDR: 4-byte encapsulation, then header.stamp (i32 sec, u32 nanosec), header.frame_id
            # (u32 length incl. NUL, chars). Reading it from the bytes keeps up with camera streams.
            little = raw[1] == 1
            order = '<' if little else '>'
            sec, nanosec, length = struct.unpack_from(order + 'iII', raw, 4)
            seen = observations[name]
            seen.count += 1
            seen.frame_ids.add(raw[16:16 + length - 1].decode('utf-8', 'replace'))
            seen.stamps_ns.append(sec * 1_000_000_000 + nanosec)
        return callback

    def record(name):
        def callback(message):
            seen = observations[name]
            seen.count += 1
            if name.endswith('/clock'):
                latest_clock[0] = message.clock.sec * 1_000_000_000 + message.clock.nanosec
            if name.endswith(('/tf', '/tf_static')):
                tf_edges.update((t.header.frame_id, t.child_frame_id) for t in message.transforms)
        return callback

    for topic in contract.topics:
        if topic.sim_only and not include_sim_only and topic.name != 'clock':
            continue
        name = resolve_topic(namespace, topic.name)
        observations[name] = TopicObservation()
        msg_type = message_class(topic.type)
        # The contract's reliability and durability (an incompatible publisher then delivers
        # nothing), with a deep queue so a busy probe does not drop what it came to count.
        qos = qos_profile(topic.qos)
        qos.depth = max(qos.depth, 100)
        if next(iter(msg_type.get_fields_and_field_types()), '') == 'header':
            node.create_subscription(msg_type, name, record_header(name), qos, raw=True)
        else:
            node.create_subscription(msg_type, name, record(name), qos)
    try:
        deadline = time.monotonic() + duration
        while time.monotonic() < deadline:
            executor.spin_once(timeout_sec=0.05)
        graph = dict(node.get_topic_names_and_types())
        for name, seen in observations.items():
            seen.types = [t for t in graph.get(name, [])]
            for info in node.get_publishers_info_by_topic(name):
                q = info.qos_profile
                seen.publisher_qos.append(QosSpec(
                    'reliable' if q.reliability == ReliabilityPolicy.RELIABLE else 'best_effort',
                    'transient_local' if q.durability == DurabilityPolicy.TRANSIENT_LOCAL else 'volatile', q.depth))
        wall_ns = time.time_ns()
    finally:
        executor.shutdown()
        node.destroy_node()
        rclpy.shutdown(context=context)
    reference = latest_clock[0] if latest_clock[0] is not None else wall_ns
    clock = observations.get('/clock')
    if clock is not None and not include_sim_only:
        del observations['/clock']
    return evaluate(contract, observations, tf_edges, reference, namespace, frame_prefix, include_sim_only)
