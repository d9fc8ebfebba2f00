"""The bag writer's fast paths give the bytes of the slow, obvious ones (ROS-free apart from the
message types): zeroing CDR padding by walking the message layout equals a rosbags deserialize and
serialize round trip, and writing message records straight into the pending MCAP chunk equals a
plain rosbags Writer, byte for byte."""

from __future__ import annotations

import array
import math
import random

import numpy as np
import pytest
from builtin_interfaces.msg import Time
from geometry_msgs.msg import PoseStamped, TransformStamped, Twist
from nav_msgs.msg import Odometry
from rclpy.serialization import serialize_message
from rosbags.rosbag2 import StoragePlugin, Writer
from rosbags.serde import SerdeError
from rosbags.typesys import Stores, get_typestore
from sensor_msgs.msg import CameraInfo, Image, Imu, JointState, LaserScan, PointCloud2, PointField
from std_msgs.msg import String
from tf2_msgs.msg import TFMessage

from robotsim_learning import bag_writer
from robotsim_learning.bag_writer import BAG_VERSION, BagWriter, canonical_cdr, canonical_cdr_round_trip
from robotsim_learning.mcap_crc import crc_problem, seal_summary_crc, write_chunk_crcs

STORE = get_typestore(Stores.ROS2_KILTED)


def type_name(message) -> str:
    return f'{type(message).__module__.split(".")[0]}/msg/{type(message).__name__}'


def sample_messages(rng: random.Random) -> list:
    """Every message type the simulator and the dataset generator write, with seeded contents and
    frame ids of every length modulo 8 (so each alignment gap size occurs)."""
    def stamp() -> Time:
        return Time(sec=rng.randrange(2**31), nanosec=rng.randrange(10**9))

    def frame() -> str:
        return 'f' * rng.randrange(0, 12)

    out = []
    for _ in range(8):
        image = Image(height=3, width=rng.randrange(1, 6), encoding=rng.choice(['rgb8', '32FC1', 'mono8x']),
                      is_bigendian=0)
        image.header.stamp, image.header.frame_id = stamp(), frame()
        image.step = image.width * 3
        image.data = array.array('B', bytes(rng.randrange(256) for _ in range(image.height * image.step)))
        info = CameraInfo(height=48, width=64, distortion_model=rng.choice(['plumb_bob', 'equidistant']))
        info.header.stamp, info.header.frame_id = stamp(), frame()
        info.d = [rng.random() for _ in range(rng.choice([0, 4, 5]))]  # an empty sequence before fixed arrays
        info.k = [rng.random() for _ in range(9)]
        scan = LaserScan(angle_min=-math.pi, angle_increment=0.01, range_min=0.1, range_max=rng.random() * 30)
        scan.header.stamp, scan.header.frame_id = stamp(), frame()
        scan.ranges = array.array('f', [rng.random() for _ in range(rng.randrange(0, 40))])
        scan.intensities = array.array('f', [rng.random() for _ in range(rng.choice([0, 3]))])
        cloud = PointCloud2(height=1, width=2, point_step=12, row_step=24, is_dense=True)
        cloud.header.stamp, cloud.header.frame_id = stamp(), frame()
        cloud.fields = [PointField(name=name * rng.randrange(1, 4), offset=4 * i, datatype=PointField.FLOAT32, count=1)
                        for i, name in enumerate('xyz')]
        cloud.data = array.array('B', bytes(rng.randrange(256) for _ in range(24)))
        imu = Imu()
        imu.header.stamp, imu.header.frame_id = stamp(), frame()
        imu.orientation.w, imu.angular_velocity.z = rng.random(), rng.random()
        imu.orientation_covariance = [rng.random() for _ in range(9)]
        odometry = Odometry(child_frame_id=frame())
        odometry.header.stamp, odometry.header.frame_id = stamp(), frame()
        odometry.pose.pose.position.x, odometry.twist.twist.angular.z = rng.random(), rng.random()
        transforms = []
        for _ in range(rng.randrange(0, 3)):
            transform = TransformStamped(child_frame_id=frame())
            transform.header.stamp, transform.header.frame_id = stamp(), frame()
            transform.transform.translation.x = rng.random()
            transforms.append(transform)
        joints = JointState(name=[frame() for _ in range(rng.randrange(0, 4))])
        joints.header.stamp, joints.header.frame_id = stamp(), frame()
        # No empty float64 sequence: rclpy then sizes the data 4 bytes beyond its end (aligning the
        # empty sequence), more than rosbags reads, so not even the round trip takes it; the simulator
        # never writes one.
        joints.position, joints.velocity, joints.effort = (
            array.array('d', [rng.random() for _ in joints.name] or [0.0]) for _ in range(3))
        goal = PoseStamped()
        goal.header.stamp, goal.header.frame_id = stamp(), frame()
        goal.pose.position.x = rng.random()
        command = Twist()
        command.linear.x = rng.random()
        out += [image, info, scan, cloud, imu, odometry, TFMessage(transforms=transforms), joints, goal, command,
                String(data=frame())]
    return out


def test_zeroing_padding_by_layout_equals_a_rosbags_round_trip(monkeypatch):
    round_trips = []
    monkeypatch.setattr(bag_writer, 'canonical_cdr_round_trip',
                        lambda *args: round_trips.append(args) or canonical_cdr_round_trip(*args))
    dirty = 0
    for message in sample_messages(random.Random(4)):
        msg_type, raw = type_name(message), serialize_message(message)
        expected = canonical_cdr_round_trip(STORE, msg_type, raw)
        assert canonical_cdr(STORE, msg_type, raw) == expected, msg_type
        dirty += raw[4:len(expected)] != expected[4:]
    assert not round_trips, f'the layout walk fell back to the round trip for {round_trips[0][1]}'
    assert dirty, 'rclpy left no padding byte dirty in any message: the comparison proved nothing'


def test_data_the_layout_does_not_describe_goes_the_round_trip():
    odometry = serialize_message(Odometry())
    for bad in (odometry + bytes(8), odometry[:40]):  # trailing bytes beyond CDR's 3 of padding; cut short
        with pytest.raises(SerdeError):
            canonical_cdr(STORE, 'nav_msgs/msg/Odometry', bad)


def test_bag_writer_writes_the_bytes_of_a_plain_rosbags_writer(tmp_path):
    """Seeded messages of three topics, many larger than a chunk, through BagWriter (straight into
    the pending chunk) and through rosbags' Writer: the same MCAP file, the same metadata.yaml."""
    rng = np.random.default_rng(9)
    topics = [('/text', 'std_msgs/msg/String'), ('/twist', 'geometry_msgs/msg/Twist'),
              ('/status', 'robotsim_msgs/msg/SimStatus')]
    sizes = [0, 13, 4000, 300_000, 1_500_000]  # chunks close after 1 MiB
    messages = [(topics[int(rng.integers(3))][0], int(time), rng.bytes(int(rng.choice(sizes))))
                for time in np.cumsum(rng.integers(0, 5_000_000, 300))]
    ours = BagWriter(str(tmp_path / 'ours' / 'bag'), flush_period=math.inf, describe_while_writing=False)
    for topic, msg_type in topics:
        ours.add_topic(topic, msg_type)
    plain = Writer(tmp_path / 'plain' / 'bag', version=BAG_VERSION, storage_plugin=StoragePlugin.MCAP)
    plain.open()
    write_chunk_crcs(plain.storage)  # what BagWriter adds to rosbags' bytes: the CRCs (checked below)
    plain_mcap = plain.storage.path
    connections = {topic: plain.add_connection(topic, msg_type, typestore=ours.typestore, offered_qos_profiles=[])
                   for topic, msg_type in topics}
    for topic, time, data in messages:
        ours.write(topic, time, data)
        plain.write(connections[topic], time, data)
    ours.close()
    plain.close()
    seal_summary_crc(plain_mcap)
    assert ours._direct
    for name in ('bag.mcap', 'metadata.yaml'):
        assert (tmp_path / 'ours' / 'bag' / name).read_bytes() == (tmp_path / 'plain' / 'bag' / name).read_bytes(), name
    assert crc_problem(tmp_path / 'ours' / 'bag' / 'bag.mcap') is None


def _bag_with_crcs(path) -> bytes:
    writer = BagWriter(str(path), flush_period=math.inf, describe_while_writing=False)
    writer.add_topic('/text', 'std_msgs/msg/String')
    for index in range(50):
        writer.write('/text', index * 1_000_000, serialize_message(String(data=f'message {index:04d}')))
        if index == 24:
            writer.flush()  # two chunks
    writer.close()
    return (path / f'{path.name}.mcap').read_bytes()


def test_chunk_and_summary_crcs_are_written_and_checked_by_foxglove_s_reader(tmp_path):
    from mcap.reader import make_reader
    from mcap.records import Chunk, Footer
    from mcap.stream_reader import StreamReader
    from mcap_ros2.decoder import DecoderFactory

    mcap = tmp_path / 'bag' / 'bag.mcap'
    original = _bag_with_crcs(tmp_path / 'bag')
    records = list(StreamReader(str(mcap), emit_chunks=True).records)
    chunks = [r for r in records if isinstance(r, Chunk)]
    assert len(chunks) == 2 and all(c.uncompressed_crc != 0 for c in chunks)
    assert next(r for r in records if isinstance(r, Footer)).summary_crc != 0
    assert crc_problem(mcap) is None
    with open(mcap, 'rb') as stream:
        decoded = [m.data for _, _, _, m in make_reader(stream, decoder_factories=[DecoderFactory()],
                                                        validate_crcs=True).iter_decoded_messages()]
    assert decoded == [f'message {index:04d}' for index in range(50)]
    # One flipped character inside a message: the chunk's CRC no longer matches (as Foxglove's reader says).
    at = original.index(b'message 0007')
    mcap.write_bytes(original[:at] + b'massage 0007' + original[at + 12:])
    problem = crc_problem(mcap)
    assert problem and 'crc validation failed in Chunk' in problem, problem
    # A changed summary (a message count in the statistics): the summary CRC no longer matches.
    summary_start = next(r for r in records if isinstance(r, Footer)).summary_start
    tampered = bytearray(original)
    tampered[summary_start + 20] ^= 0x01
    mcap.write_bytes(bytes(tampered))
    assert 'summary CRC' in crc_problem(mcap)
