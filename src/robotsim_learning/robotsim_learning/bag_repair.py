"""``robotsim bag repair BAG``: make an interrupted MCAP rosbag2 recording readable again.

A recorder that dies without closing its bag (SIGKILL, a crash, a full disk) leaves an MCAP file
without its summary and footer, possibly ending in half a record, and perhaps no or a stale
``metadata.yaml``. Readers that need the footer (rosbags, random access in ``ros2 bag play``)
refuse it. The repair reads the file record by record from the start, keeps every *complete*
message (also those of a chunk cut off by the crash, when the chunk is uncompressed, as the
robotsim recorder writes them), and writes a new bag with rosbags' Writer: a valid MCAP with
summary and footer and a ``metadata.yaml`` with the message counts, duration, topics, types, type
hashes and the publishers' offered QoS (from the MCAP channel records, where rosbag2 keeps them).
The damaged file is kept beside it as ``<name>.before-repair``.

ROS-free (rosbags and PyYAML). MCAP format: https://mcap.dev/spec
"""

from __future__ import annotations

import os
import shutil
import struct
from dataclasses import dataclass, field
from pathlib import Path

import yaml
from rosbags.rosbag2 import StoragePlugin, Writer
from rosbags.rosbag2.errors import ReaderError
from rosbags.rosbag2.storage_mcap import decompress, get_qos
from rosbags.typesys import Stores, get_types_from_msg, get_typestore

from .bag_writer import BAG_VERSION
from .mcap_crc import seal_summary_crc, write_chunk_crcs

MAGIC = b'\x89MCAP0\r\n'
OP_HEADER, OP_FOOTER, OP_SCHEMA, OP_CHANNEL, OP_MESSAGE, OP_CHUNK, OP_DATA_END = 0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x0F
RECORD_PREFIX = 9  # opcode (1 byte) + record length (8 bytes)
FOOTER_LENGTH = 20  # summary start, summary offset start (8 bytes each), summary CRC (4)


class BagRepairError(RuntimeError):
    """The path is not a bag that can be repaired; the message is one line for the user."""


@dataclass
class Schema:
    name: str
    encoding: str
    data: str


@dataclass
class Channel:
    id: int
    schema_id: int
    topic: str
    message_encoding: str
    metadata: bytes


@dataclass
class ScanResult:
    """What a linear read of an MCAP file found."""
    messages: int = 0
    channels_used: set[int] = field(default_factory=set)
    first_ns: int | None = None
    last_ns: int | None = None
    complete: bool = False
    """The file ends with a footer after the data section (it was closed properly)."""
    dropped_bytes: int = 0
    """Bytes at the end of the file that do not form a complete record (cut off by the crash)."""
    bad_chunks: int = 0
    """Chunks whose contents failed their size or checksum test (skipped)."""


def _string(body: memoryview, offset: int) -> tuple[str, int]:
    (length,) = struct.unpack_from('<I', body, offset)
    end = offset + 4 + length
    if end > len(body):
        raise ValueError('string runs past its record')
    return bytes(body[offset + 4:end]).decode(), end


class McapScanner:
    """Reads an MCAP file front to back and reports schemas, channels and complete messages to
    ``on_schema(id, Schema)``, ``on_channel(Channel)`` and ``on_message(channel_id, log_time, data)``."""

    def __init__(self, path: Path, on_schema=None, on_channel=None, on_message=None):
        self.path = path
        self.on_schema, self.on_channel, self.on_message = on_schema, on_channel, on_message
        self.schemas: dict[int, Schema] = {}
        self.channels: dict[int, Channel] = {}
        self.result = ScanResult()

    def scan(self) -> ScanResult:
        with open(self.path, 'rb') as stream:
            if stream.read(len(MAGIC)) != MAGIC:
                raise BagRepairError(f'{self.path}: not an MCAP file (it does not start with the MCAP magic bytes)')
            size = os.fstat(stream.fileno()).st_size
            offset = len(MAGIC)
            while offset + RECORD_PREFIX <= size:
                stream.seek(offset)
                op, length = struct.unpack('<BQ', stream.read(RECORD_PREFIX))
                available = size - offset - RECORD_PREFIX
                if op == OP_DATA_END or op == OP_FOOTER:
                    self.result.complete = self._has_footer(stream, size)
                    return self.result
                if length > available:  # the record the crash cut off
                    if op == OP_CHUNK:
                        self._chunk(memoryview(stream.read(available)), truncated=True)
                    self.result.dropped_bytes = size - offset
                    return self.result
                body = memoryview(stream.read(length))
                if op == OP_CHUNK:
                    self._chunk(body, truncated=False)
                else:
                    self._record(op, body)
                offset += RECORD_PREFIX + length
            self.result.dropped_bytes = size - offset
        return self.result

    @staticmethod
    def _has_footer(stream, size: int) -> bool:
        if size < len(MAGIC) * 2 + RECORD_PREFIX + FOOTER_LENGTH:
            return False
        stream.seek(size - len(MAGIC) - RECORD_PREFIX - FOOTER_LENGTH)
        tail = stream.read()
        return tail[:RECORD_PREFIX] == struct.pack('<BQ', OP_FOOTER, FOOTER_LENGTH) and tail.endswith(MAGIC)

    def _chunk(self, body: memoryview, truncated: bool) -> None:
        """A chunk record: 3 x uint64 (start, end, uncompressed size), uint32 crc, compression, records."""
        try:
            _start, _end, uncompressed_size, crc = struct.unpack_from('<QQQI', body, 0)
            compression, offset = _string(body, 28)
            (records_length,) = struct.unpack_from('<Q', body, offset)
        except (struct.error, ValueError, UnicodeDecodeError):
            if not truncated:
                self.result.bad_chunks += 1
            return
        records = body[offset + 8:offset + 8 + records_length]
        if truncated:
            if compression:  # half a compressed stream cannot be decoded
                return
        else:
            try:
                records = memoryview(decompress(bytes(records), compression, uncompressed_size, crc))
            except ReaderError:
                self.result.bad_chunks += 1
                return
        position = 0
        while position + RECORD_PREFIX <= len(records):
            op, length = struct.unpack_from('<BQ', records, position)
            end = position + RECORD_PREFIX + length
            if end > len(records):
                break  # the last record of a cut-off chunk
            self._record(op, records[position + RECORD_PREFIX:end])
            position = end

    def _record(self, op: int, body: memoryview) -> None:
        try:
            if op == OP_SCHEMA:
                (schema_id,) = struct.unpack_from('<H', body, 0)
                name, offset = _string(body, 2)
                encoding, offset = _string(body, offset)
                (length,) = struct.unpack_from('<I', body, offset)
                schema = Schema(name, encoding, bytes(body[offset + 4:offset + 4 + length]).decode())
                self.schemas[schema_id] = schema
                if self.on_schema:
                    self.on_schema(schema_id, schema)
            elif op == OP_CHANNEL:
                channel_id, schema_id = struct.unpack_from('<HH', body, 0)
                topic, offset = _string(body, 4)
                encoding, offset = _string(body, offset)
                (length,) = struct.unpack_from('<I', body, offset)
                channel = Channel(channel_id, schema_id, topic, encoding, bytes(body[offset + 4:offset + 4 + length]))
                if channel_id not in self.channels:
                    self.channels[channel_id] = channel
                    if self.on_channel:
                        self.on_channel(channel)
            elif op == OP_MESSAGE:
                channel_id, _sequence, log_time, _publish_time = struct.unpack_from('<HIQQ', body, 0)
                if channel_id not in self.channels:
                    return  # a message of a channel whose record was lost: nothing to file it under
                result = self.result
                result.messages += 1
                result.channels_used.add(channel_id)
                result.first_ns = log_time if result.first_ns is None else min(result.first_ns, log_time)
                result.last_ns = log_time if result.last_ns is None else max(result.last_ns, log_time)
                if self.on_message:
                    self.on_message(channel_id, log_time, bytes(body[22:]))
        except (struct.error, ValueError, UnicodeDecodeError):
            return  # a malformed record inside a chunk: skip it, keep the rest


def type_hash(msg_type: str, definition: str) -> str:
    """RIHS01 type hash from a ROS 2 ``.msg`` definition with its dependencies appended (as MCAP
    schemas of the ros2msg encoding carry them)."""
    store = get_typestore(Stores.EMPTY)
    store.register(get_types_from_msg(definition, msg_type))
    return store.hash_rihs01(msg_type)


def _find_mcap(bag: Path) -> Path:
    if not bag.exists():
        raise BagRepairError(f'{bag}: no such folder')
    if not bag.is_dir():
        raise BagRepairError(f'{bag}: not a bag folder (expected a folder holding one .mcap file)')
    files = sorted(p for p in bag.iterdir() if p.suffix == '.mcap' and p.is_file())
    if not files:
        raise BagRepairError(f'{bag}: no .mcap file in the folder (expected an MCAP rosbag2 bag)')
    if len(files) > 1:
        raise BagRepairError(f'{bag}: {len(files)} .mcap files ({", ".join(p.name for p in files)}); '
                             f'expected one (split bags are not supported)')
    return files[0]


def _recorded_metadata(bag: Path) -> dict | None:
    """The bag's metadata.yaml (None if missing or unreadable)."""
    try:
        document = yaml.safe_load((bag / 'metadata.yaml').read_text(encoding='utf-8'))
        return document['rosbag2_bagfile_information']
    except (OSError, yaml.YAMLError, TypeError, KeyError):
        return None


def _topics(count: int) -> str:
    return f'{count} topic' if count == 1 else f'{count} topics'


def _backup_name(mcap: Path) -> Path:
    candidate, number = mcap.with_name(mcap.name + '.before-repair'), 1
    while candidate.exists():
        number += 1
        candidate = mcap.with_name(f'{mcap.name}.before-repair.{number}')
    return candidate


def repair_bag(bag_path: str | os.PathLike) -> str:
    """Repair the bag in place if it needs it; return the one-line report."""
    try:
        return _repair(Path(bag_path))
    except OSError as error:  # unreadable file, read-only folder, disk full
        raise BagRepairError(f'{error.filename or bag_path}: {error.strerror or error}') from None


def _repair(bag: Path) -> str:
    mcap = _find_mcap(bag)
    survey = McapScanner(mcap).scan()
    metadata = _recorded_metadata(bag)
    if not survey.messages:
        raise BagRepairError(f'{mcap}: no complete message in the file (nothing to recover)')
    topics = len(survey.channels_used)
    duration = (survey.last_ns - survey.first_ns) * 1e-9
    if (survey.complete and not survey.bad_chunks and metadata is not None
            and metadata.get('message_count') == survey.messages and metadata.get('relative_file_paths') == [mcap.name]):
        return f'{bag}: intact ({survey.messages} messages on {_topics(topics)}, {duration:.1f} s); nothing to repair'

    known_hashes = {t['topic_metadata']['name']: t['topic_metadata'].get('type_description_hash')
                    for t in (metadata or {}).get('topics_with_message_count') or []
                    if isinstance(t, dict) and isinstance(t.get('topic_metadata'), dict)}
    work = bag.parent / f'.{bag.name}.repair-{os.getpid()}'
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir()
    try:
        writer = Writer(work / bag.name, version=BAG_VERSION, storage_plugin=StoragePlugin.MCAP)
        writer.open()
        write_chunk_crcs(writer.storage)
        rebuilt_mcap = writer.storage.path  # rosbags drops its storage at close
        connections = {}
        scanner = McapScanner(mcap)

        def add_channel(channel: Channel) -> None:
            schema = scanner.schemas.get(channel.schema_id)
            if schema is None or schema.encoding not in ('ros2msg', 'ros2idl'):
                raise BagRepairError(f'{mcap}: topic {channel.topic}: no ROS 2 message definition '
                                     f'(schema {"missing" if schema is None else schema.encoding!r})')
            try:
                digest = type_hash(schema.name, schema.data)
            except Exception:  # an IDL or unparsable definition: the hash the recorder stored, if any
                digest = known_hashes.get(channel.topic)
                if not digest:
                    raise BagRepairError(f'{mcap}: topic {channel.topic}: cannot compute the type hash of '
                                         f'{schema.name} and metadata.yaml does not name it') from None
            connections[channel.id] = writer.add_connection(
                channel.topic, schema.name, msgdef=schema.data, rihs01=digest,
                serialization_format=channel.message_encoding, offered_qos_profiles=get_qos(channel.metadata))

        def add_message(channel_id: int, log_time: int, data: bytes) -> None:
            writer.write(connections[channel_id], log_time, data)

        scanner.on_channel, scanner.on_message = add_channel, add_message
        scanner.scan()
        writer.close()
        seal_summary_crc(rebuilt_mcap)
        backup = _backup_name(mcap)
        mcap.rename(backup)
        rebuilt = work / bag.name
        (rebuilt / f'{bag.name}.mcap').rename(bag / f'{bag.name}.mcap')
        (rebuilt / 'metadata.yaml').replace(bag / 'metadata.yaml')
    finally:
        shutil.rmtree(work, ignore_errors=True)

    damage = []
    if not survey.complete:
        damage.append('the MCAP had no footer (recording interrupted)')
    if survey.dropped_bytes:
        damage.append(f'{survey.dropped_bytes} bytes of an incomplete record at its end dropped')
    if survey.bad_chunks:
        damage.append(f'{survey.bad_chunks} corrupt chunks skipped')
    if metadata is None:
        damage.append('metadata.yaml was missing')
    elif metadata.get('message_count') != survey.messages:
        damage.append(f'metadata.yaml counted {metadata.get("message_count")} messages')
    return (f'{bag}: recovered {survey.messages} messages on {_topics(topics)} ({duration:.1f} s); '
            f'{"; ".join(damage)}; the original file is kept as {backup.name}')
