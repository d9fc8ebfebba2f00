"""rosbag2 MCAP writing without rosbag2: serialized CDR messages in, a bag ``ros2 bag info`` reads out.

ROS-free (uses ``rosbags``). Message definitions come from the rosbags type store for standard
types; a package's own types (robotsim_msgs) are read from its installed ``.msg`` files so
that the bag is self-describing.

Crash safety: a recorder can die without closing the bag (SIGKILL, power loss of the process).
rosbags keeps up to 1 MiB of messages in memory before it writes a chunk, which at the simulator's
data rates is several seconds, and writes the bag's ``metadata.yaml`` only at close. So the
pending chunk is closed and handed to the kernel at least every ``flush_period`` (wall time, and
also once it spans that much bag time), and ``metadata.yaml`` is rewritten after each flush to
describe exactly what is on disk. A killed recording then loses at most the last
``flush_period``; its MCAP has no summary/footer, which ``robotsim bag repair`` rebuilds.
"""

from __future__ import annotations

import os
import re
import struct
import time
import weakref
from pathlib import Path

import yaml
from rosbags.interfaces import Qos
from rosbags.rosbag2 import CompressionMode, StoragePlugin, Writer
from rosbags.rosbag2.metadata import dump_qos_v9
from rosbags.rosbag2.storage_mcap import McapWriter
from rosbags.typesys import Stores, get_types_from_msg, get_typestore

from .mcap_crc import seal_summary_crc, write_chunk_crcs

BAG_VERSION = 9
"""rosbag2 metadata version written (Jazzy and later)."""
FLUSH_PERIOD = 0.5
"""Seconds a written message may stay in memory before it is on disk (at most 1 s is promised)."""
_MESSAGE_RECORD = struct.Struct('<BQHIQQ')
_CHUNK_SIZE = 2**20
"""rosbags closes the pending chunk once it holds more than this many bytes."""


class BagError(RuntimeError):
    """The bag cannot be written (the folder exists, a type has no definition...)."""


def _message_definition_file(msg_type: str) -> Path | None:
    package, _, name = msg_type.split('/')
    for prefix in filter(None, os.environ.get('AMENT_PREFIX_PATH', '').split(os.pathsep)):
        candidate = Path(prefix, 'share', package, 'msg', f'{name}.msg')
        if candidate.is_file():
            return candidate
    return None


def rosbag2_metadata(mcap_name: str, connections, counts: dict[int, int], start_ns: int | None,
                     end_ns: int | None) -> dict:
    """The ``metadata.yaml`` document of a one-file MCAP bag, field for field as rosbags' Writer
    writes it at close (so a bag described while recording reads the same as a closed one).

    ``connections``: rosbags Connections; ``counts``: messages per connection id; ``start_ns`` /
    ``end_ns``: first and last message time (None when the bag holds no message yet).
    """
    count = sum(counts.get(c.id, 0) for c in connections)
    start = start_ns if start_ns is not None else 2**63 - 1  # what rosbags writes for an empty bag
    duration = max(0, (end_ns or 0) - start)
    return {'rosbag2_bagfile_information': {
        'version': BAG_VERSION,
        'storage_identifier': 'mcap',
        'relative_file_paths': [mcap_name],
        'duration': {'nanoseconds': duration},
        'starting_time': {'nanoseconds_since_epoch': start},
        'message_count': count,
        'topics_with_message_count': [
            {'topic_metadata': {'name': c.topic, 'type': c.msgtype,
                                'serialization_format': c.ext.serialization_format,
                                'offered_qos_profiles': dump_qos_v9(c.ext.offered_qos_profiles),
                                'type_description_hash': c.digest},
             'message_count': counts.get(c.id, 0)}
            for c in connections],
        'compression_format': '',
        'compression_mode': '',
        'files': [{'path': mcap_name, 'starting_time': {'nanoseconds_since_epoch': start},
                   'duration': {'nanoseconds': duration}, 'message_count': count}],
        'custom_data': None,
        'ros_distro': 'rosbags',
    }}


def write_metadata(bag: Path, document: dict) -> None:
    """Replace ``bag/metadata.yaml`` atomically: a reader never sees half a file."""
    temporary = bag / 'metadata.yaml.tmp'
    temporary.write_text(yaml.safe_dump(document, sort_keys=False), encoding='utf-8')
    temporary.replace(bag / 'metadata.yaml')


MAX_NESTED_TYPES = 64
"""Message types one topic's type may pull in from the ament index at most (its nested messages)."""


def _register_type(typestore, topic: str, msg_type: str) -> None:
    """Register ``msg_type`` and every message it nests (not in rosbags' Kilted store: robotsim_msgs,
    control_msgs, ros_gz_interfaces, ...) from the .msg files under AMENT_PREFIX_PATH."""
    from rosbags.typesys.base import TypesysError

    wanted = msg_type
    for _ in range(MAX_NESTED_TYPES):
        if wanted not in typestore.fielddefs:
            definition = _message_definition_file(wanted)
            if definition is None:
                raise BagError(f'{topic}: no message definition for {wanted} (package not found under AMENT_PREFIX_PATH)')
            typestore.register(get_types_from_msg(definition.read_text(), wanted))
        try:
            typestore.generate_msgdef(msg_type)  # every nested type known: done
            return
        except TypesysError as error:
            unknown = re.search(r"Type '([^']+)' is unknown", str(error))
            if unknown is None:
                raise BagError(f'{topic}: message definition of {msg_type}: {error}') from None
            wanted = unknown.group(1)
    raise BagError(f'{topic}: {msg_type} nests more than {MAX_NESTED_TYPES} message types')


def canonical_cdr(typestore, msg_type: str, data: bytes) -> bytes:
    """``data`` with its CDR alignment padding zeroed: rclpy's serializer (Fast-CDR) leaves padding
    bytes as whatever was in memory, so equal messages can differ in those bytes. The result is
    what rosbags writes for the same message (it zeroes padding): equal messages give equal bytes."""
    return bytes(canonical_cdr_view(typestore, msg_type, data))


def canonical_cdr_round_trip(typestore, msg_type: str, data: bytes) -> bytes:
    """:func:`canonical_cdr` the slow, obviously right way: deserialized and serialized again by
    rosbags. The fallback for data the padding walk does not account for, and the reference the
    tests hold the walk to."""
    return bytes(typestore.serialize_cdr(typestore.deserialize_cdr(data, msg_type), msg_type))


# Padding walk: one flattened layout per message type (from the type store's field definitions),
# then per message only the alignment gaps are zeroed in a copy: no message object is built, so
# a 300 kB image costs one copy instead of a deserialize and a serialize (the dataset fast path
# writes some 400 messages per simulated second).
_FIXED, _STRING, _SEQUENCE, _STRINGS, _MESSAGES = range(5)
_CDR_LITTLE_ENDIAN = b'\x00\x01\x00\x00'
_layouts: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()  # type store -> {type name: layout}


def _layout(typestore, msg_type: str) -> tuple:
    """``msg_type``'s fields as a flat tuple of steps: (_FIXED, alignment, size) for runs of
    primitives and fixed arrays (nested messages inlined, runs merged when no gap can fall between
    them), (_STRING,), (_SEQUENCE, element size), (_STRINGS,) and (_MESSAGES, element layout)."""
    layouts = _layouts.get(typestore)
    if layouts is None:
        layouts = _layouts[typestore] = {}
    layout = layouts.get(msg_type)
    if layout is None:
        layout = layouts[msg_type] = _make_layout(typestore, msg_type)
    return layout


def _make_layout(typestore, msg_type: str) -> tuple:
    from rosbags.interfaces import Nodetype
    from rosbags.serde.utils import SIZEMAP

    steps: list[tuple] = []

    def fixed(alignment: int, size: int) -> None:
        if steps and steps[-1][0] == _FIXED and steps[-1][1] % alignment == 0 and steps[-1][2] % alignment == 0:
            steps[-1] = (_FIXED, steps[-1][1], steps[-1][2] + size)  # already aligned: no gap between
        else:
            steps.append((_FIXED, alignment, size))

    def add(description) -> None:
        kind, detail = description
        if kind == Nodetype.NAME:
            for _, field in typestore.fielddefs[detail][1]:
                add(field)
        elif kind == Nodetype.BASE:
            if detail[0] == 'string':
                steps.append((_STRING,))
            else:
                fixed(SIZEMAP[detail[0]], SIZEMAP[detail[0]])
        elif kind == Nodetype.ARRAY:
            element, length = detail
            if element[0] == Nodetype.BASE and element[1][0] != 'string':
                if length:
                    fixed(SIZEMAP[element[1][0]], length * SIZEMAP[element[1][0]])
            else:
                for _ in range(length):
                    add(element)
        else:  # Nodetype.SEQUENCE
            element = detail[0]
            if element[0] == Nodetype.BASE:
                steps.append((_STRINGS,) if element[1][0] == 'string' else (_SEQUENCE, SIZEMAP[element[1][0]]))
            else:
                steps.append((_MESSAGES, _layout(typestore, element[1])))

    add((Nodetype.NAME, msg_type))
    return tuple(steps)


def _zero_padding(body: memoryview, layout: tuple, pos: int) -> int:
    """Zero the alignment gaps of one message (or sequence element) starting at ``pos`` of the CDR
    body; returns where it ends. Alignment is relative to the body (after the 4-byte header); an
    empty sequence is not aligned to its element size (as rosbags and Fast-CDR do)."""
    for step in layout:
        kind = step[0]
        if kind == _FIXED:
            alignment = step[1]
            aligned = (pos + alignment - 1) & -alignment
            if aligned != pos:
                body[pos:aligned] = bytes(aligned - pos)
            pos = aligned + step[2]
            continue
        aligned = (pos + 3) & -4  # a string or sequence starts with its uint32 length
        if aligned != pos:
            body[pos:aligned] = bytes(aligned - pos)
        count = int.from_bytes(body[aligned:aligned + 4], 'little')
        pos = aligned + 4
        if kind == _STRING:
            pos += count
        elif kind == _SEQUENCE:
            if count:
                size = step[1]
                aligned = (pos + size - 1) & -size
                if aligned != pos:
                    body[pos:aligned] = bytes(aligned - pos)
                pos = aligned + count * size
        elif kind == _STRINGS:
            for _ in range(count):
                aligned = (pos + 3) & -4
                if aligned != pos:
                    body[pos:aligned] = bytes(aligned - pos)
                pos = aligned + 4 + int.from_bytes(body[aligned:aligned + 4], 'little')
        else:  # _MESSAGES
            for _ in range(count):
                pos = _zero_padding(body, step[1], pos)
        if pos > len(body):
            raise ValueError('CDR data ends early')
    return pos


def canonical_cdr_view(typestore, msg_type: str, data: bytes) -> memoryview:
    """:func:`canonical_cdr` without the final copy to ``bytes`` (what :class:`BagWriter` takes).

    The gaps are found by walking the layout; data whose walk does not end where the message does
    (up to 3 bytes of trailing padding, as rosbags' reader allows) goes the round trip instead."""
    buffer = bytearray(data)
    if buffer[:2] == _CDR_LITTLE_ENDIAN[:2]:
        body = memoryview(buffer)[4:]
        try:
            end = _zero_padding(body, _layout(typestore, msg_type), 0)
        except ValueError:
            end = None
        if end is not None and end <= len(body) <= end + 3:
            buffer[:4] = _CDR_LITTLE_ENDIAN  # rosbags writes no options (Fast-CDR may note trailing padding)
            return memoryview(buffer)[:4 + end].toreadonly()
    return memoryview(canonical_cdr_round_trip(typestore, msg_type, data))


class BagWriter:
    """Writes (topic, type, CDR bytes, receive time in ns) to an MCAP rosbag2 bag that survives
    the writer's death: see the module docstring."""

    def __init__(self, path: str, flush_period: float = FLUSH_PERIOD, clock=time.monotonic,
                 describe_while_writing: bool = True):
        """``describe_while_writing`` False: ``metadata.yaml`` is written at close only, for a writer
        whose unfinished bag is thrown away anyway (the dataset generator redoes a half-written
        episode); rewriting it for every topic added costs some 100 ms per bag."""
        if os.path.exists(path):
            raise BagError(f'{path}: bag folder already exists; choose another bag:=... (nothing was overwritten)')
        self.path = path
        self.flush_period = flush_period
        self.describe_while_writing = describe_while_writing
        self.clock = clock
        self.typestore = get_typestore(Stores.ROS2_KILTED)
        self.writer = Writer(path, version=BAG_VERSION, storage_plugin=StoragePlugin.MCAP)
        self.writer.open()
        # rosbags' MCAP storage: its pending chunk and file are public attributes of the pinned
        # version (requirements/bare.txt); tests/test_recording_crash.py proves the flushing.
        self.storage = self.writer.storage
        if isinstance(self.storage, McapWriter):
            write_chunk_crcs(self.storage)
        self.connections = {}
        self.counts: dict[str, int] = {}
        # Messages go straight into the pending chunk (see _write_message_record) when rosbags would
        # write them there uncompressed: its MCAP storage, no compression.
        self._direct = isinstance(self.storage, McapWriter) and self.writer.compression_mode == CompressionMode.NONE
        self.flushed_at = self.clock()
        self.described: tuple[int, int] | None = None  # (messages, topics) that metadata.yaml describes
        self.flush()  # metadata.yaml from the start: even a bag killed at once describes itself

    def add_topic(self, topic: str, msg_type: str, offered_qos: list[Qos] | tuple = ()) -> None:
        """``offered_qos``: the publishers' QoS profiles, stored as rosbag2 stores them (for playback)."""
        _register_type(self.typestore, topic, msg_type)
        self.connections[topic] = self.writer.add_connection(topic, msg_type, typestore=self.typestore,
                                                             offered_qos_profiles=list(offered_qos))
        self.counts[topic] = 0
        self.flush()  # the new topic is in metadata.yaml before its first message

    def write(self, topic: str, timestamp_ns: int, data: bytes) -> None:
        self.write_parts(topic, timestamp_ns, (data,))

    def write_parts(self, topic: str, timestamp_ns: int, parts) -> None:
        """:meth:`write` of the message ``b''.join(parts)``, without joining them first (e.g. a
        message's header and its pixels, which then are copied once, into the bag)."""
        if self._direct:
            self._write_message_record(self.connections[topic], timestamp_ns, parts)
        else:
            self.writer.write(self.connections[topic], timestamp_ns, b''.join(parts))
        self.counts[topic] += 1
        chunk = self.storage.chunk
        if chunk.message_end_time - chunk.message_start_time >= self.flush_period * 1e9:
            self.flush()  # faster than real time: bound the loss in bag time too
        else:
            self.flush_if_due()

    def _write_message_record(self, connection, timestamp_ns: int, parts) -> None:
        """``self.writer.write(connection, timestamp_ns, b''.join(parts))`` byte for byte, with the MCAP
        message record's header packed at once and the data copied once, into the pending chunk (rosbags
        first copies every message into a record buffer of its own: for the 300 kB images of the
        dataset fast path, a fresh allocation and copy per message). The bookkeeping is rosbags'
        (Writer.write and McapWriter.write of the pinned version); test/test_bag_writer.py holds the
        bytes to a plain rosbags Writer's."""
        writer, storage = self.writer, self.storage
        storage.message_start_time = min(timestamp_ns, storage.message_start_time)
        storage.message_end_time = max(timestamp_ns, storage.message_end_time)
        storage.channel_stats[connection.id] += 1
        chunk = storage.chunk
        chunk.message_start_time = min(timestamp_ns, chunk.message_start_time)
        chunk.message_end_time = max(timestamp_ns, chunk.message_end_time)
        records = chunk.bio
        chunk.msgs[connection.id].append((timestamp_ns, records.tell()))
        # Message record (opcode 0x05): record length, channel id, sequence 0, log and publish time.
        size = sum(len(part) for part in parts)
        records.write(_MESSAGE_RECORD.pack(0x05, 22 + size, connection.id, 0, timestamp_ns, timestamp_ns))
        for part in parts:
            records.write(part)
        if records.tell() > _CHUNK_SIZE:
            storage.close_chunk()
        writer.counts[connection.id] += 1
        writer.min_timestamp = min(timestamp_ns, writer.min_timestamp)
        writer.max_timestamp = max(timestamp_ns, writer.max_timestamp)

    def total_messages(self) -> int:
        return sum(self.counts.values())

    def flush_if_due(self) -> None:
        """Flush when the oldest unflushed message is ``flush_period`` old (call it from a timer too,
        so a quiet topic does not keep its last messages in memory)."""
        if self.clock() - self.flushed_at >= self.flush_period:
            self.flush()

    def flush(self) -> None:
        """Put every message written so far on disk and describe them in metadata.yaml."""
        self.flushed_at = self.clock()
        if self.storage.chunk.msgs:  # a chunk with no message would carry an invalid time range
            self.storage.close_chunk()
        self.storage.bio.flush()
        if not self.describe_while_writing:
            return
        writer = self.writer
        state = (sum(writer.counts.values()), len(writer.connections))
        if state == self.described:
            return  # nothing new: metadata.yaml is current
        self.described = state
        written = state[0] > 0
        write_metadata(Path(self.path), rosbag2_metadata(
            self.storage.path.name, writer.connections, writer.counts,
            writer.min_timestamp if written else None, writer.max_timestamp if written else None))

    def close(self) -> None:
        self.writer.close()  # the MCAP summary and footer, and the final metadata.yaml
        if isinstance(self.storage, McapWriter):
            seal_summary_crc(self.storage.path)
