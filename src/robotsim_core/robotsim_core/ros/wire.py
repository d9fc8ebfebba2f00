"""Serialized messages from a template: the publish path of the simulator's high-rate messages.

Building a ROS message in Python and handing it to rclpy costs some 12 us (each field set through a
checked property, then converted field by field to C); the simulator sends hundreds of such
messages per simulated second (IMU, odometry, TF, joint states, ground truth, /clock), which took
about as long as the physics. Most of them have the same strings and sequence lengths every time:
only numbers change. :class:`FixedLayout` serializes one prototype once, finds where its numeric
fields sit in the CDR bytes (walking the type's fields with CDR's alignment rules), and encodes each
later message by writing the numbers into a copy of that template (about 1.5 us). rclpy publishes
``bytes`` as a serialized message (``Publisher.publish`` accepts them), and the dataset writer
writes them to a bag as they are.

The bytes are those rclpy's own serializer writes for a message with the same values, except that
alignment padding is zero (rclpy leaves whatever was in memory there): the canonical form the
dataset writer has always stored (``robotsim_learning.bag_writer.canonical_cdr``), so recordings of
the node and datasets hold equal bytes for equal messages. src/robotsim_learning/test/test_wire.py holds every layout the
simulator uses to that. Little-endian CDR (XCDR1, as Fast DDS and Cyclone DDS write for ROS 2).
"""

from __future__ import annotations

import struct

from rclpy.serialization import deserialize_message, serialize_message
from rosidl_parser.definition import (AbstractGenericString, AbstractNestedType, AbstractSequence,
                                      BasicType, NamespacedType)

_FORMATS = {'double': 'd', 'float': 'f', 'int64': 'q', 'uint64': 'Q', 'int32': 'i', 'uint32': 'I',
            'int16': 'h', 'uint16': 'H', 'int8': 'b', 'uint8': 'B', 'octet': 'B', 'char': 'B', 'boolean': '?'}
"""struct format of each ROS primitive type (its size is also its CDR alignment)."""
_HEADER = 4
"""The encapsulation header before the CDR body (representation id and options)."""


def _walk(message, pos: int, prefix: str, data: bytes, numbers: dict[str, tuple[int, str, int]],
          copied: list[tuple[int, int]]) -> int:
    """Walk ``message``'s fields from body offset ``pos`` with CDR's alignment rules; returns where the
    message ends. Records ``prefix + field -> (body offset, struct format, element count)`` in
    ``numbers`` for every numeric field (an array or sequence as one entry) and in ``copied`` the
    (body offset, length) of every other byte that is not padding: strings with their length words,
    sequences' element counts. ``data`` (the serialized prototype) is read for string lengths."""
    for name, slot in zip(message.get_fields_and_field_types(), message.SLOT_TYPES):
        value = getattr(message, name)
        path = prefix + name
        if isinstance(slot, NamespacedType):
            pos = _walk(value, pos, path + '.', data, numbers, copied)
        elif isinstance(slot, BasicType):
            code = _FORMATS[slot.typename]
            size = struct.calcsize(code)
            pos = -(-pos // size) * size
            numbers[path] = (pos, code, 1)
            pos += size
        elif isinstance(slot, AbstractGenericString):
            pos = _string(pos, data, copied)
        elif isinstance(slot, AbstractNestedType):
            element = slot.value_type
            if isinstance(slot, AbstractSequence):
                pos = -(-pos // 4) * 4
                copied.append((pos, 4))
                pos += 4
            if isinstance(element, BasicType):
                code = _FORMATS[element.typename]
                size = struct.calcsize(code)
                if len(value):  # an empty sequence is not aligned to its element (as Fast-CDR writes it)
                    pos = -(-pos // size) * size
                numbers[path] = (pos, code, len(value))
                pos += size * len(value)
            elif isinstance(element, AbstractGenericString):
                for _ in value:
                    pos = _string(pos, data, copied)
            else:
                for index, item in enumerate(value):
                    pos = _walk(item, pos, f'{path}[{index}].', data, numbers, copied)
        else:
            raise TypeError(f'{path}: field type {slot!r} is not supported by the template encoder')
    return pos


def _string(pos: int, data: bytes, copied: list[tuple[int, int]]) -> int:
    pos = -(-pos // 4) * 4
    length = 4 + int.from_bytes(data[_HEADER + pos:_HEADER + pos + 4], 'little')  # the count includes the NUL
    copied.append((pos, length))
    return pos + length


class FixedLayout:
    """Encodes messages of one type whose strings and sequence lengths are those of ``prototype``:
    ``encode(*values)`` writes ``values`` into ``fields`` (dotted paths such as
    ``'header.stamp.sec'`` or ``'position'``; an array or sequence field takes as many values as
    the prototype holds elements; a nested message such as ``'header.stamp'`` stands for its numeric
    fields in order) and returns the serialized message. Every other field keeps the
    prototype's value."""

    def __init__(self, prototype, fields: list[str]):
        self.message_type = type(prototype)
        data = bytearray(serialize_message(prototype))
        if data[:2] != b'\x00\x01':
            raise ValueError(f'{self.message_type.__name__}: expected little-endian CDR from rclpy, got {bytes(data[:2])!r}')
        offsets: dict[str, tuple[int, str, int]] = {}
        copied: list[tuple[int, int]] = []
        end = _walk(prototype, 0, '', bytes(data), offsets, copied)
        # rclpy's data may run past the message: it pads the end to a multiple of 4, and sizes an empty
        # float64 sequence as if aligned (4 bytes more each, e.g. a JointState of no joints); the
        # template ends where the message does, and must read back as the prototype (checked below).
        if end > len(data) - _HEADER:
            raise ValueError(f'{self.message_type.__name__}: the layout walk ends at {end}, beyond the data '
                             f'({len(data) - _HEADER} bytes)')
        # The canonical template: padding zero, no trailing padding, no options in the header.
        template = bytearray(_HEADER + end)
        template[:_HEADER] = b'\x00\x01\x00\x00'
        spans = copied + [(offset, struct.calcsize(code) * count) for offset, code, count in offsets.values()]
        for offset, length in spans:
            template[_HEADER + offset:_HEADER + offset + length] = data[_HEADER + offset:_HEADER + offset + length]
        self.template = bytes(template)
        if deserialize_message(self.template, self.message_type) != deserialize_message(bytes(data), self.message_type):
            raise ValueError(f'{self.message_type.__name__}: the template does not read back as the prototype')
        # Consecutive fields without a gap between them are written by one struct call.
        self._runs: list[tuple[int, struct.Struct]] = []
        formats, start, next_offset = [], None, None
        leaves = []
        for field in fields:  # a nested message's path stands for its numeric fields, in order
            inside = [path for path in offsets if path.startswith(field + '.')]
            if field not in offsets and not inside:
                raise KeyError(f'{self.message_type.__name__} has no numeric field {field!r} (have: {", ".join(offsets)})')
            leaves.extend([field] if field in offsets else inside)
        for field in leaves:
            offset, code, count = offsets[field]
            if offset != next_offset:
                if formats:
                    self._runs.append((_HEADER + start, struct.Struct('<' + ''.join(formats))))
                formats, start = [], offset
            formats.append(f'{count}{code}')
            next_offset = offset + struct.calcsize(code) * count
        if formats:
            self._runs.append((_HEADER + start, struct.Struct('<' + ''.join(formats))))
        self.numeric_fields = list(offsets)
        """Every numeric field of the prototype (dotted paths, ``[i]`` for sequence elements), in order."""
        self._counts = [len(run.unpack_from(self.template, offset)) for offset, run in self._runs]
        self.size = sum(self._counts)
        """How many values :meth:`encode` takes."""

    def encode(self, *values) -> bytes:
        buffer = bytearray(self.template)
        if len(self._runs) == 1:
            offset, run = self._runs[0]
            run.pack_into(buffer, offset, *values)
        else:
            first = 0
            for (offset, run), count in zip(self._runs, self._counts):
                run.pack_into(buffer, offset, *values[first:first + count])
                first += count
        return bytes(buffer)

    def message(self, data: bytes):
        """``data`` (from :meth:`encode`) as a message object."""
        return deserialize_message(data, self.message_type)
