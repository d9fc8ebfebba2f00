"""The bridge's side of the base-controller serial protocol (docs/serial_protocol.md).

Frames are COBS(payload + CRC-16/CCITT-FALSE, little-endian) followed by 0x00; a payload is
type (u8), sequence (u8), body. This module is pure Python (no ROS, no simulator) so the
motor bridge can run unchanged on the Jetson.
"""

from __future__ import annotations

import math
import struct
from dataclasses import dataclass

PROTOCOL_VERSION = 3
# 2: telemetry carries the MCU's microsecond clock and its last host frame's arrival
# 3: SET_VELOCITY carries the commanded yaw rate, SET_YAW_LOOP, telemetry carries the gyro's yaw rate and heading
MAX_PAYLOAD = 96
MAX_WATCHDOG_MS = 0xFFFF  # SET_GAINS carries the watchdog time as u16 milliseconds
from robotsim_core.drive import MCU_MOTOR_CHANNELS as CHANNELS  # noqa: E402  (one value for C and Python)
MAX_GAIN = 1e4  # the firmware ignores a SET_GAINS frame with a gain outside [0, MAX_GAIN] (FW_MAX_GAIN)
MAX_YAW_COEFFICIENT = 1e3  # ... and a SET_YAW_LOOP frame with a coefficient beyond it (FW_MAX_COEFFICIENT)
GYRO_LSB_PER_DPS = 65.5  # FW_GYRO_LSB_PER_DPS: the base board's gyro counts per deg/s (+-500 deg/s full scale)

HELLO, SET_VELOCITY, SET_GAINS, SET_YAW_LOOP = 0x01, 0x02, 0x03, 0x04
HELLO_ACK, TELEMETRY, FAULT = 0x81, 0x83, 0x84

STATUS_HELLO_DONE, STATUS_WATCHDOG_BRAKING, STATUS_SETPOINT_ACTIVE, STATUS_GYRO_READY, STATUS_YAW_LOOP = 1, 2, 4, 8, 16
FAULT_ENCODER_STALL, FAULT_RESET, FAULT_PEER_SILENT, FAULT_FLEET_SILENT = 1, 2, 4, 8
FAULT_NAMES = {FAULT_ENCODER_STALL: 'encoder stall (stuck encoder or dead motor)', FAULT_RESET: 'MCU reset',
               FAULT_PEER_SILENT: 'a board on the bus went silent (the power board)',
               FAULT_FLEET_SILENT: 'a robot of the fleet went silent on the radio'}

_TELEMETRY = struct.Struct('<I4i4f4hHHHHIIBBfi')
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
    parser resynchronises at the next 0x00 delimiter.

    A receiver that joins a running stream (opening a port, flushing its input) may start in the middle
    of some frame: until the first delimiter it takes bytes without counting an error, since that
    fragment was never meant for it: ``synchronised=False``. When those bytes are a whole valid frame
    (COBS and CRC; the receiver joined at a frame's start, as a host that opened the port before the
    device sent anything) the frame is kept: a device's first frame is often the answer to the host's
    HELLO."""

    MAX_FRAME = MAX_PAYLOAD + 2 + (MAX_PAYLOAD + 2) // 254 + 2

    def __init__(self, synchronised: bool = True):
        self.buffer = bytearray()
        self.overflow = False
        self.frames_ok = 0
        self.errors = 0
        self.synchronised = synchronised
        self._joined = bytearray()  # unsynchronised: the bytes before the first delimiter (at most MAX_FRAME)

    def feed(self, data: bytes) -> list[bytes]:
        payloads = []
        if not self.synchronised:
            start = data.find(0)
            head = data if start < 0 else data[:start]
            self._joined += head[:max(0, self.MAX_FRAME + 1 - len(self._joined))]
            if start < 0:
                return payloads
            self.synchronised = True
            if len(self._joined) <= self.MAX_FRAME and (payload := self._decode(bytes(self._joined))) is not None:
                self.frames_ok += 1
                payloads.append(payload)
            self._joined.clear()
            data = data[start + 1:]
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
        payload = self._decode(bytes(self.buffer))
        if payload is None:
            self.errors += 1
            return None
        self.frames_ok += 1
        return payload

    @staticmethod
    def _decode(frame: bytes) -> bytes | None:
        """The payload of one frame's bytes (without its delimiter), or None when it is no valid frame."""
        decoded = cobs_decode(frame)
        if decoded is None or len(decoded) < 4 or len(decoded) - 2 > MAX_PAYLOAD:
            return None
        payload, (crc,) = decoded[:-2], struct.unpack('<H', decoded[-2:])
        return payload if crc16(payload) == crc else None


# ---------------------------------------------------------------------- messages

def hello(sequence: int) -> bytes:
    return bytes([HELLO, sequence & 0xFF, PROTOCOL_VERSION])


def set_velocity(sequence: int, wheel_speeds: list[float], yaw_rate: float | None = None) -> bytes:
    """Wheel speed setpoints (rad/s) and, for the firmware's yaw loop, the yaw rate (rad/s) they are meant to turn
    the base at (None: no yaw loop for this setpoint)."""
    speeds = list(wheel_speeds) + [0.0] * (CHANNELS - len(wheel_speeds))
    if not all(math.isfinite(v) for v in speeds) or (yaw_rate is not None and not math.isfinite(yaw_rate)):
        raise ValueError('wheel speeds and yaw rate must be finite')
    frame = bytes([SET_VELOCITY, sequence & 0xFF]) + struct.pack('<4f', *speeds[:CHANNELS])
    return frame if yaw_rate is None else frame + struct.pack('<f', yaw_rate)


def set_yaw_loop(sequence: int, kp: float, ki: float, coefficients: list[float]) -> bytes:
    """The firmware's yaw-rate loop: its gains (the turn it adds, rad/s, per rad/s of yaw-rate error and per rad of
    that error's integral) and each channel's share of a base turn (wheel rad/s per base rad/s)."""
    for name, gain in (('kp', kp), ('ki', ki)):
        if not (math.isfinite(gain) and 0.0 <= gain <= MAX_GAIN):
            raise ValueError(f'yaw loop gain {name}: expected a finite number from 0 to {MAX_GAIN:g}, got {gain!r}')
    shares = list(coefficients) + [0.0] * (CHANNELS - len(coefficients))
    if not all(math.isfinite(c) and abs(c) <= MAX_YAW_COEFFICIENT for c in shares):
        raise ValueError(f'yaw loop coefficients: expected finite numbers within +-{MAX_YAW_COEFFICIENT:g}, '
                         f'got {coefficients!r}')
    return bytes([SET_YAW_LOOP, sequence & 0xFF]) + struct.pack('<2f4f', kp, ki, *shares[:CHANNELS])


def set_gains(sequence: int, kp: float, ki: float, kd: float, kff: float, watchdog_ms: int) -> bytes:
    if not (isinstance(watchdog_ms, int) and 1 <= watchdog_ms <= MAX_WATCHDOG_MS):
        raise ValueError(f'watchdog_ms: expected a whole number from 1 to {MAX_WATCHDOG_MS}, got {watchdog_ms!r}')
    for name, gain in (('kp', kp), ('ki', ki), ('kd', kd), ('kff', kff)):
        if not (math.isfinite(gain) and 0.0 <= gain <= MAX_GAIN):
            raise ValueError(f'gain {name}: expected a finite number from 0 to {MAX_GAIN:g}, got {gain!r}')
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
    """One TELEMETRY frame. ``time_us``, ``host_rx_us``: low 32 bits of the MCU's microsecond clock
    (see :func:`unwrap_us`); ``host_rx_type`` 0: no host frame received since the MCU's reset."""
    time_ms: int
    encoder: tuple[int, ...]
    velocity: tuple[float, ...]
    duty: tuple[float, ...]
    status: int
    faults: int
    rx_frames_ok: int
    rx_errors: int
    time_us: int
    host_rx_us: int
    host_rx_sequence: int
    host_rx_type: int
    yaw_rate: float = 0.0
    """rad/s about the board's z from its gyro, bias removed (valid with STATUS_GYRO_READY)."""
    heading_urad: int = 0
    """The gyro's integrated yaw, microradians since the MCU's boot (signed 32 bits, wraps)."""

    @property
    def sample_us(self) -> int:
        """The MCU time (µs since its boot) the sample was taken at: the 32-bit microsecond field
        extended by the millisecond field, which wraps 1000 times later (after 49 days)."""
        return unwrap_us(self.time_us, self.time_ms * 1000)

    @property
    def host_rx_sample_us(self) -> int:
        """When the last host frame arrived, on the same clock as :attr:`sample_us` (it arrived before)."""
        sample = self.sample_us
        return sample - ((sample - self.host_rx_us) % 2**32)


def unwrap_us(low32: int, near_us: int) -> int:
    """The value congruent to ``low32`` modulo 2**32 nearest ``near_us``."""
    return near_us + ((low32 - near_us + 2**31) % 2**32) - 2**31


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
        return Telemetry(v[0], v[1:5], v[5:9], tuple(d / 32767.0 for d in v[9:13]), *v[13:23])
    if kind == FAULT and len(body) >= 3:
        faults, channel = struct.unpack_from('<HB', body)
        return Fault(faults, channel)
    return None
