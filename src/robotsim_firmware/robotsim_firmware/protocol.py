"""The bridge's side of the base-controller serial protocol (docs/serial_protocol.md).

Frames are COBS(payload + CRC-16/CCITT-FALSE, little-endian) followed by 0x00; a payload is
type (u8), sequence (u8), body. This module is pure Python (no ROS, no simulator) so the
motor bridge can run unchanged on the Jetson.
"""

from __future__ import annotations

import math
import struct
from dataclasses import dataclass

PROTOCOL_VERSION = 1
MAX_PAYLOAD = 96
CHANNELS = 4

HELLO, SET_VELOCITY, SET_GAINS = 0x01, 0x02, 0x03
HELLO_ACK, TELEMETRY, FAULT = 0x81, 0x83, 0x84

STATUS_HELLO_DONE, STATUS_WATCHDOG_BRAKING, STATUS_SETPOINT_ACTIVE = 1, 2, 4
FAULT_ENCODER_STALL, FAULT_RESET = 1, 2
FAULT_NAMES = {FAULT_ENCODER_STALL: 'encoder stall (stuck encoder or dead motor)', FAULT_RESET: 'MCU reset'}

_TELEMETRY = struct.Struct('<I4i4f4hHHHH')
_HELLO_ACK = struct.Struct('<BBBBBHI')


def crc16(data: bytes) -> int:
    crc = 0xFFFF
    for byte in data:
        crc ^= byte << 8
        for _ in range(8):
            crc = ((crc << 1) ^ 0x1021) & 0xFFFF if crc & 0x8000 else (crc << 1) & 0xFFFF
    return crc


def cobs_encode(data: bytes) -> bytes:
    out, block = bytearray(), bytearray()
    for byte in data:
        if byte == 0:
            out += bytes([len(block) + 1]) + block
            block.clear()
        else:
            block.append(byte)
            if len(block) == 254:
                out += b'\xff' + block
                block.clear()
    out += bytes([len(block) + 1]) + block
    return bytes(out)


def cobs_decode(data: bytes) -> bytes | None:
    out, index = bytearray(), 0
    while index < len(data):
        code = data[index]
        index += 1
        if code == 0 or index + code - 1 > len(data):
            return None
        out += data[index:index + code - 1]
        index += code - 1
        if code != 0xFF and index < len(data):
            out.append(0)
    return bytes(out)


def encode_frame(payload: bytes) -> bytes:
    if len(payload) > MAX_PAYLOAD:
        raise ValueError(f'payload of {len(payload)} bytes exceeds {MAX_PAYLOAD}')
    return cobs_encode(payload + struct.pack('<H', crc16(payload))) + b'\x00'


class FrameParser:
    """Streaming decoder: bytes in, valid payloads out; malformed frames are counted and the
    parser resynchronises at the next 0x00 delimiter."""

    MAX_FRAME = MAX_PAYLOAD + 2 + (MAX_PAYLOAD + 2) // 254 + 2

    def __init__(self):
        self.buffer = bytearray()
        self.overflow = False
        self.frames_ok = 0
        self.errors = 0

    def feed(self, data: bytes) -> list[bytes]:
        payloads = []
        for byte in data:
            if byte == 0:
                payload = self._finish()
                if payload is not None:
                    payloads.append(payload)
                self.buffer.clear()
                self.overflow = False
            elif len(self.buffer) < self.MAX_FRAME:
                self.buffer.append(byte)
            else:
                self.overflow = True
        return payloads

    def _finish(self) -> bytes | None:
        if self.overflow:
            self.errors += 1
            return None
        if not self.buffer:
            return None  # idle delimiters
        decoded = cobs_decode(bytes(self.buffer))
        if decoded is None or len(decoded) < 4 or len(decoded) - 2 > MAX_PAYLOAD:
            self.errors += 1
            return None
        payload, (crc,) = decoded[:-2], struct.unpack('<H', decoded[-2:])
        if crc16(payload) != crc:
            self.errors += 1
            return None
        self.frames_ok += 1
        return payload


# ---------------------------------------------------------------------- messages

def hello(sequence: int) -> bytes:
    return bytes([HELLO, sequence & 0xFF, PROTOCOL_VERSION])


def set_velocity(sequence: int, wheel_speeds: list[float]) -> bytes:
    speeds = list(wheel_speeds) + [0.0] * (CHANNELS - len(wheel_speeds))
    if not all(math.isfinite(v) for v in speeds):
        raise ValueError('wheel speeds must be finite')
    return bytes([SET_VELOCITY, sequence & 0xFF]) + struct.pack('<4f', *speeds[:CHANNELS])


def set_gains(sequence: int, kp: float, ki: float, kd: float, kff: float, watchdog_ms: int) -> bytes:
    return bytes([SET_GAINS, sequence & 0xFF]) + struct.pack('<4fH', kp, ki, kd, kff, watchdog_ms)


@dataclass
class HelloAck:
    protocol: int
    version: str
    channels: int
    loop_hz: int
    counts_per_rev: int


@dataclass
class Telemetry:
    time_ms: int
    encoder: tuple[int, ...]
    velocity: tuple[float, ...]
    duty: tuple[float, ...]
    status: int
    faults: int
    rx_frames_ok: int
    rx_errors: int


@dataclass
class Fault:
    faults: int
    channel: int


def decode(payload: bytes):
    """A payload -> HelloAck | Telemetry | Fault | None (unknown type or wrong length)."""
    kind, body = payload[0], payload[2:]
    if kind == HELLO_ACK and len(body) >= _HELLO_ACK.size:
        protocol, major, minor, patch, channels, loop_hz, counts = _HELLO_ACK.unpack_from(body)
        return HelloAck(protocol, f'{major}.{minor}.{patch}', channels, loop_hz, counts)
    if kind == TELEMETRY and len(body) >= _TELEMETRY.size:
        v = _TELEMETRY.unpack_from(body)
        return Telemetry(v[0], v[1:5], v[5:9], tuple(d / 32767.0 for d in v[9:13]), *v[13:17])
    if kind == FAULT and len(body) >= 3:
        faults, channel = struct.unpack_from('<HB', body)
        return Fault(faults, channel)
    return None
