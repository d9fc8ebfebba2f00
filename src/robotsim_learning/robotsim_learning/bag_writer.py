"""rosbag2 MCAP writing without rosbag2: serialized CDR messages in, a bag ``ros2 bag info`` reads out.

ROS-free (uses ``rosbags``). Message definitions come from the rosbags type store for standard
types; a package's own types (robotsim_msgs) are read from its installed ``.msg`` files so
that the bag is self-describing.
"""

from __future__ import annotations

import os
from pathlib import Path

from rosbags.rosbag2 import StoragePlugin, Writer
from rosbags.typesys import Stores, get_types_from_msg, get_typestore


class BagError(RuntimeError):
    """The bag cannot be written (the folder exists, a type has no definition...)."""


def _message_definition_file(msg_type: str) -> Path | None:
    package, _, name = msg_type.split('/')
    for prefix in filter(None, os.environ.get('AMENT_PREFIX_PATH', '').split(os.pathsep)):
        candidate = Path(prefix, 'share', package, 'msg', f'{name}.msg')
        if candidate.is_file():
            return candidate
    return None


class BagWriter:
    """Writes (topic, type, CDR bytes, receive time in ns) to an MCAP rosbag2 bag."""

    def __init__(self, path: str):
        if os.path.exists(path):
            raise BagError(f'{path}: bag folder already exists; choose another bag:=... (nothing was overwritten)')
        self.path = path
        self.typestore = get_typestore(Stores.ROS2_KILTED)
        self.writer = Writer(path, version=9, storage_plugin=StoragePlugin.MCAP)
        self.writer.open()
        self.connections = {}
        self.counts: dict[str, int] = {}

    def add_topic(self, topic: str, msg_type: str) -> None:
        if msg_type not in self.typestore.fielddefs:
            definition = _message_definition_file(msg_type)
            if definition is None:
                raise BagError(f'{topic}: no message definition for {msg_type} (package not found under AMENT_PREFIX_PATH)')
            self.typestore.register(get_types_from_msg(definition.read_text(), msg_type))
        self.connections[topic] = self.writer.add_connection(topic, msg_type, typestore=self.typestore)
        self.counts[topic] = 0

    def write(self, topic: str, timestamp_ns: int, data: bytes) -> None:
        self.writer.write(self.connections[topic], timestamp_ns, data)
        self.counts[topic] += 1

    def close(self) -> None:
        self.writer.close()
