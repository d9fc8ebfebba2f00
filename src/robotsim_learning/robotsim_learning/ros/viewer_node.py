"""The live browser view (ROS adapter): ``robotsim view --live`` and ``view:=true`` on the launchers.

Subscribes (raw, with the contract's QoS) to the robot's topics, takes what they queued every
:data:`BROADCAST_PERIOD` wall seconds (not a callback per message: at some 600 messages a second that
bookkeeping was most of the node's CPU, which the simulator beside it misses; ``make bench`` measures it with
``bench/bench_viewer.py``), and serves, from one small local server:

- ``GET /``: the viewer page of :mod:`robotsim_core.viewer.page` (robot and world as glTF inlined), which
  opens ``/ws``;
- ``/ws``: a WebSocket on which, every :data:`BROADCAST_PERIOD` wall seconds, it sends what arrived since
  (the replay page's scene data, in the same shape, appended by the page), plus a status line with the
  sim time, the simulator's real-time factor and the received topic rates. A page that connects late gets
  the newest ``window`` seconds first. Poses are kept at most :data:`~robotsim_core.viewer.bag_scene.MAX_POSE_RATE`
  Hz and camera frames at ``image_rate`` Hz (JPEG, only while a page is connected), so a browser keeps up
  whatever the simulator publishes.
- optionally the Foxglove WebSocket protocol (``foxglove-sdk``) on ``foxglove_port``
  (both servers: :mod:`robotsim_learning.viewer_servers`): every subscribed topic
  forwarded (in the same batches) as its CDR bytes with its ``ros2msg`` schema, so Foxglove decodes ROS messages itself
  (``config/foxglove/robotsim.json`` is a layout for it). Latched topics (``/tf_static``,
  ``/robot_description``) are sent again every :data:`LATCHED_REPEAT` s for clients that join later.

Servers bind to 127.0.0.1 unless ``host`` says otherwise; a port in use is one line and exit status 2.
"""

from __future__ import annotations

import collections
import json
import math
import struct
import sys
import threading

import numpy as np
import rclpy
from rclpy.exceptions import InvalidHandle
from rclpy.node import Node
from rclpy.serialization import deserialize_message

from robotsim_core.ros.distro import SubscriptionEventCallbacks
from robotsim_core.ros import common as ros_common
from robotsim_core.contract import RELIABLE_QOS, QosSpec, robot_contract
from robotsim_core.description import load_robot
from robotsim_core.errors import DescriptionError
from robotsim_core.viewer.bag_scene import (MAX_POSE_RATE, Thinner, encode_image, encode_scan, joint_table,
                                            pose7, pose_matrix, stamp_seconds, strip_prefix)
from robotsim_core.viewer.gltf import build_scene, scene_glb
from robotsim_core.viewer.page import render_page

from ..viewer_servers import FoxgloveBridge, PageServer, ServerError

BROADCAST_PERIOD = 0.1
"""Wall seconds between two updates sent to the pages."""
LATCHED_REPEAT = 2.0
"""Wall seconds between re-sends of latched topics to Foxglove."""
RATE_WINDOW = 3.0
"""Sim seconds over which the shown topic rates are measured."""
VIEWED = ('clock', 'tf', 'tf_static', 'joint_states', 'sim/ground_truth', 'odom', 'scan', 'camera/image_raw',
          'goal_pose', 'sim/status', 'robot_description', 'imu/data', 'camera/camera_info')
"""Contract topics the live view subscribes to (those the robot offers), in the order a poll takes them:
/clock first (the newest sim time), ground truth before odometry (the odometry trail is anchored at it)."""
INTAKE_RTF = 20.0
"""Each subscription holds the messages of one poll (BROADCAST_PERIOD wall s) of a simulation running up to
this many times real time at the topic's nominal rate (its queue depth); beyond, the oldest are dropped."""
CAMERA_DEPTH = 4
"""Queue depth of the camera subscription: the page gets image_rate frames a second, the rest is dropped."""
HEADER_FIRST = frozenset({'sensor_msgs/msg/Image', 'sensor_msgs/msg/Imu', 'sensor_msgs/msg/CameraInfo'})
"""Types, not deserialised here, whose first field is a std_msgs/Header: the stamp is read from the CDR bytes."""
GOAL_TYPE = 'geometry_msgs/msg/PoseStamped'


class ViewerNode(Node):
    def __init__(self, **overrides):
        from rclpy.parameter import Parameter
        super().__init__('robotsim_viewer', parameter_overrides=[Parameter(k, value=v) for k, v in overrides.items()])
        robot = ros_common.checked_parameter(self, 'robot', 'rover')
        world_name = ros_common.checked_parameter(self, 'world', 'room')
        self.namespace = ros_common.checked_parameter(self, 'robot_namespace', '').strip('/')
        host = ros_common.checked_parameter(self, 'host', '127.0.0.1')
        port = ros_common.checked_parameter(self, 'port', 8080, 0, 65535)
        foxglove_port = ros_common.checked_parameter(self, 'foxglove_port', 8765, 0, 65535)
        self.image_rate = ros_common.checked_parameter(self, 'image_rate', 2.0, 0.1, 30.0)
        self.window = ros_common.checked_parameter(self, 'window', 60.0, 1.0, 3600.0)
        self.prefix = f'{self.namespace}/' if self.namespace else ''
        self.model = load_robot(robot)
        world = None
        if world_name:
            from robotsim_sim.scene import load_world, resolve_world_path
            world = load_world(resolve_world_path(world_name))
        title = f'live: {self.model.name}' + (f' in {world.name}' if world else '')
        page_data = {'title': title, 'robot': self.model.name, 'world': world.name if world else None,
                     'root_link': self.model.tree.root(), 'joints': joint_table(self.model), 'duration': 0.0,
                     'start': 0.0, 'fixed_frame': 'world', 'tf': {}, 'tf_static': {}, 'notes': [],
                     'live': {'path': '/ws', 'window': self.window}}
        page = render_page(page_data, scene_glb(build_scene(self.model, world)), title).encode('utf-8')
        self.pages = PageServer(host, port, page, self.get_logger())
        self.foxglove = None
        if foxglove_port:
            try:
                self.foxglove = FoxgloveBridge(host, foxglove_port, f'robotsim {self.model.name}')
            except ServerError:
                self.pages.close()
                raise
        self.url = f'http://{host}:{self.pages.port}/'
        self._reset_pending()
        self.lock = threading.Lock()
        self.thin = Thinner(MAX_POSE_RATE)
        self.thin_images = Thinner(self.image_rate)
        self.latest = 0.0
        self.seen_truth = False
        self.odom_anchor = None
        self.last_truth = None
        self.recent_truth: collections.deque = collections.deque(maxlen=64)  # (stamp, pose) to anchor odometry
        self.joint_names: list[str] = []
        self.scan_info = None
        self.rtf = None
        self.stamps: dict[str, collections.deque] = collections.defaultdict(collections.deque)
        self.latched: dict[str, tuple[str, bytes]] = {}
        # The subscriptions belong to a second node that no executor spins: the broadcast timer takes what
        # they queued every BROADCAST_PERIOD. A callback per message (some 600 a second with the default
        # sensors) cost the executor's wait-set bookkeeping each time: most of this node's CPU, which the
        # simulator on the same machine misses (bench/bench_viewer.py). No global arguments: the launcher's
        # node-name remap is this node's, and topic names here are absolute.
        self.intake = rclpy.create_node(f'{self.get_name()}_intake', context=self.context,
                                        use_global_arguments=False, start_parameter_services=False)
        self.intakes: list[tuple] = []
        contract = robot_contract(self.model)
        offered = {topic.name: topic for topic in contract.topics}
        no_events = SubscriptionEventCallbacks(use_default_callbacks=False)  # nobody would handle them
        for name in VIEWED:
            spec = offered.get(name)
            if spec is None and name != 'goal_pose':
                continue
            msg_type = spec.type if spec else GOAL_TYPE
            qos = spec.qos if spec else RELIABLE_QOS
            rate = spec.rate if spec else 0.0
            depth = (1 if name == 'clock' else CAMERA_DEPTH if msg_type == 'sensor_msgs/msg/Image'
                     else max(qos.depth, 10, math.ceil(rate * BROADCAST_PERIOD * INTAKE_RTF)))
            topic = f'/{self.namespace}/{name}' if self.namespace and name != 'clock' else f'/{name}'
            subscription = self.intake.create_subscription(
                ros_common.message_class(msg_type), topic, lambda data: None,
                ros_common.qos_profile(QosSpec(qos.reliability, qos.durability, depth)), raw=True,
                event_callbacks=no_events)
            self.intakes.append((subscription, topic, name, msg_type))
        self.create_timer(BROADCAST_PERIOD, self._broadcast, clock=_wall_clock())
        if self.foxglove:
            self.create_timer(LATCHED_REPEAT, self._repeat_latched, clock=_wall_clock())
        foxglove_text = f'; Foxglove: ws://{host}:{foxglove_port}' if self.foxglove else ''
        self.get_logger().info(f'live view: {self.url}{foxglove_text}')
        print(f'[robotsim view] open {self.url} in a browser{foxglove_text}', flush=True)

    # ---------------------------------------------------------------- receiving
    def _reset_pending(self) -> None:
        self.pending: dict = {}

    def _poll(self) -> None:
        """Take every message the subscriptions queued since the last poll."""
        for subscription, topic, name, msg_type in self.intakes:
            while True:
                try:
                    with subscription.handle:
                        taken = subscription.handle.take_message(subscription.msg_type, True)
                except InvalidHandle:  # shutting down
                    return
                if taken is None:
                    break
                self._on_message(topic, name, msg_type, taken[0])

    def _on_message(self, topic: str, name: str, msg_type: str, data: bytes) -> None:
        stamp = header_stamp(data) if msg_type in HEADER_FIRST else None
        if name == 'clock':
            message = deserialize_message(data, ros_common.message_class(msg_type))
            self.latest = max(self.latest, message.clock.sec + message.clock.nanosec * 1e-9)
        if self.foxglove is not None:
            self.foxglove.log(topic, msg_type, data, int((self.latest if stamp is None else stamp) * 1e9))
            if name in ('tf_static', 'robot_description'):
                self.latched[topic] = (msg_type, bytes(data))
        if name == 'clock':
            return
        if name in ('robot_description', 'imu/data', 'camera/camera_info'):
            self._count(name, stamp)
            return
        if name == 'camera/image_raw':
            self._count(name, stamp)
            if not self.pages.clients or not self.thin_images.keep('camera', self.latest if stamp is None else stamp):
                return  # frames are decoded and encoded only while a page looks, at image_rate
        message = deserialize_message(data, ros_common.message_class(msg_type))
        header = getattr(message, 'header', None)
        t = stamp_seconds(header) if header is not None else None
        if name != 'camera/image_raw':
            self._count(name, t)
        with self.lock:
            self._take(name, message, t)

    def _count(self, name: str, t: float | None) -> None:
        stamps = self.stamps[name]
        stamps.append(self.latest if t is None else t)
        while stamps and stamps[0] < stamps[-1] - RATE_WINDOW:
            stamps.popleft()

    def _series(self, key: str, **fixed) -> dict:
        series = self.pending.get(key)
        if series is None:
            series = self.pending[key] = {**fixed}
        return series

    def _take(self, name: str, message, t: float | None) -> None:
        if t is not None:
            self.latest = max(self.latest, t)
        if name == 'sim/status':
            self.rtf = message.real_time_factor
        elif name == 'sim/ground_truth':
            self.seen_truth = True
            pose = pose7(message.pose.pose.position, message.pose.pose.orientation)
            self.last_truth = pose
            self.recent_truth.append((t, pose))
            if self.thin.keep('truth', t):
                series = self._series('base', source=f'/{self.prefix}sim/ground_truth', t=[], pose=[],
                                      frame=strip_prefix(message.child_frame_id, self.prefix))
                series['t'].append(round(t, 6))
                series['pose'].append(pose)
        elif name == 'odom':
            pose = pose7(message.pose.pose.position, message.pose.pose.orientation)
            if self.odom_anchor is None:
                truth = self._truth_at(t)
                self.odom_anchor = pose_matrix(truth) @ np.linalg.inv(pose_matrix(pose)) if truth else np.eye(4)
            if self.thin.keep('odom', t):
                point = self.odom_anchor @ np.array([pose[0], pose[1], pose[2], 1.0])
                trail = self._series('odom_trail', t=[], xyz=[])
                trail['t'].append(round(t, 6))
                trail['xyz'].append([round(float(v), 5) for v in point[:3]])
                if not self.seen_truth:
                    series = self._series('base', source=f'/{self.prefix}odom', t=[], pose=[],
                                          frame=self.model.tree.root())
                    series['t'].append(round(t, 6))
                    series['pose'].append(pose)
        elif name == 'tf':
            for transform in message.transforms:
                child = strip_prefix(transform.child_frame_id, self.prefix)
                parent = strip_prefix(transform.header.frame_id, self.prefix)
                if child == self.model.tree.root():
                    continue  # the base is placed by ground truth or odometry
                edge_t = stamp_seconds(transform.header)
                if not self.thin.keep(('tf', child), edge_t):
                    continue
                edge = self._series('tf', ).setdefault(child, {'parent': parent, 't': [], 'pose': []})
                edge['t'].append(round(edge_t, 6))
                edge['pose'].append(pose7(transform.transform.translation, transform.transform.rotation))
        elif name == 'joint_states':
            if not self.joint_names:
                self.joint_names = list(message.name)
            if self.thin.keep('joint_states', t):
                values = dict(zip(message.name, message.position))
                states = self._series('joint_states', names=self.joint_names, t=[], position=[])
                states['t'].append(round(t, 6))
                states['position'].append([round(float(values.get(n, 0.0)), 5) for n in self.joint_names])
        elif name == 'scan':
            if self.scan_info is None:
                self.scan_info = {'frame': strip_prefix(message.header.frame_id, self.prefix),
                                  'angle_min': float(message.angle_min),
                                  'angle_increment': float(message.angle_increment),
                                  'range_min': float(message.range_min), 'range_max': float(message.range_max),
                                  'count': len(message.ranges)}
            if len(message.ranges) == self.scan_info['count']:
                scan = self._series('scan', **self.scan_info, t=[], ranges=[])
                scan['t'].append(round(t, 6))
                scan['ranges'].append(encode_scan(message.ranges, message.range_min, self.scan_info['range_max']))
        elif name == 'camera/image_raw':
            frame = encode_image(message)
            if frame is not None:
                camera = self._series('camera', topic=f'/{self.prefix}camera/image_raw', t=[], frames=[])
                camera['t'].append(round(t, 6))
                camera['frames'].append(frame)
        elif name == 'goal_pose':
            position = np.array([message.pose.position.x, message.pose.position.y, message.pose.position.z, 1.0])
            if strip_prefix(message.header.frame_id, self.prefix) == 'odom' and self.odom_anchor is not None:
                position = self.odom_anchor @ position
            self.pending['goal'] = {'frame': 'world', 'xyz': [round(float(v), 5) for v in position[:3]]}

    def _truth_at(self, t: float) -> list | None:
        """The ground-truth pose stamped nearest ``t`` among the recent ones (a poll takes ground truth before
        odometry, so the one of the odometry's own stamp is there), else None."""
        if not self.recent_truth:
            return None
        return min(self.recent_truth, key=lambda item: abs(item[0] - t))[1]

    # ---------------------------------------------------------------- sending
    def status_text(self) -> str:
        lines = [f'sim time {self.latest:8.2f} s   RTF ' + (f'{self.rtf:.2f}' if self.rtf is not None else '-')]
        for name in VIEWED:
            stamps = self.stamps.get(name)
            if name in ('clock', 'goal_pose', 'tf_static', 'robot_description') or not stamps:
                continue
            span = stamps[-1] - stamps[0]
            rate = (len(stamps) - 1) / span if span > 0 else 0.0
            lines.append(f'/{self.prefix}{name:<22} {rate:6.1f} Hz')
        return '\n'.join(lines)

    def _broadcast(self) -> None:
        self._poll()
        if self.foxglove is not None:
            self.foxglove.time(int(self.latest * 1e9))
        with self.lock:
            pending, self.pending = self.pending, {}
        update = {'time': round(self.latest, 6), 'start': 0.0, 'status': self.status_text()}
        if pending:
            update['append'] = pending
        self.pages.publish(self.latest, json.dumps(update, separators=(',', ':'), allow_nan=False), self.window)

    def _repeat_latched(self) -> None:
        for topic, (msg_type, data) in list(self.latched.items()):
            self.foxglove.log(topic, msg_type, data, int(self.latest * 1e9))

    def close(self) -> None:
        self.pages.close()
        if self.foxglove is not None:
            self.foxglove.close()
        self.intake.destroy_node()


def header_stamp(data: bytes) -> float | None:
    """Sim seconds of the std_msgs/Header that opens a serialized message (CDR: a 4-byte encapsulation
    header, then the stamp's int32 sec and uint32 nanosec), without deserialising the rest; None if the
    bytes are not little- or big-endian plain CDR."""
    if len(data) < 12 or data[0] != 0 or data[1] not in (0, 1):
        return None
    sec, nanosec = struct.unpack_from('<iI' if data[1] == 1 else '>iI', data, 4)
    return sec + nanosec * 1e-9


def _wall_clock():
    from rclpy.clock import Clock, ClockType
    return Clock(clock_type=ClockType.STEADY_TIME)


def main(args=None, program: str = 'viewer', **overrides) -> int:
    return ros_common.run_node(program, lambda: ViewerNode(**overrides),
                               (ServerError, DescriptionError, ros_common.ParameterError), args,
                               finish=ViewerNode.close)


def serve(args) -> int:
    """``robotsim view --live``: the viewer node in this process, settings from the command line."""
    overrides = {'robot': args.robot or 'rover', 'world': args.world if args.world is not None else 'room',
                 'robot_namespace': args.namespace, 'host': args.host, 'port': args.port,
                 'foxglove_port': args.foxglove_port, 'image_rate': float(args.image_rate),
                 'use_sim_time': True}
    return main(None, 'robotsim', **overrides)


if __name__ == '__main__':
    sys.exit(main())
