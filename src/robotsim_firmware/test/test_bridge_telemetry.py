"""The motor bridge's telemetry reading (robotsim_firmware/telemetry.py), ROS-free: encoder and
receive-counter wrap-around, MCU resets, encoder glitches, the MCU clock offset and which samples
are published. Frames are packed from the layout in docs/serial_protocol.md and decoded by the
bridge's own decoder, or sent by the real firmware (host build) at the end."""

from __future__ import annotations

import math
import struct

import pytest

from robotsim_firmware import protocol
from robotsim_firmware.host_library import HostFirmware
from robotsim_firmware.telemetry import IN_FLIGHT_FRAMES, EncoderTelemetry

COUNTS_PER_REV = 8192
# TELEMETRY body, docs/serial_protocol.md: u32 ms, i32 encoder[4], f32 velocity[4], i16 duty[4], u16 status,
# u16 faults, u16 frames ok, u16 receive errors, u32 µs, u32 µs of the last host frame, u8 its sequence, u8 its type,
# f32 gyro yaw rate, i32 gyro heading (µrad).
TELEMETRY_BODY = struct.Struct('<I4i4f4hHHHHIIBBfi')


def wrap32(count: int) -> int:
    """An unbounded encoder count as the MCU's i32 register holds it."""
    return (count + 2**31) % 2**32 - 2**31


def frame(sample_us: int, encoder=(0, 0, 0, 0), velocity=(0.0, 0.0, 0.0, 0.0), faults: int = 0, rx_ok: int = 0,
          rx_errors: int = 0, echo_us: int = 0, echo_sequence: int = 0, echo_type: int = 0, status: int = 0,
          yaw_rate: float = 0.0, heading_urad: int = 0) -> protocol.Telemetry:
    """One TELEMETRY frame as the MCU sends it, through the bridge's decoder."""
    body = TELEMETRY_BODY.pack(sample_us // 1000 % 2**32, *(wrap32(c) for c in encoder), *velocity, 0, 0, 0, 0,
                               status, faults, rx_ok % 2**16, rx_errors % 2**16, sample_us % 2**32, echo_us % 2**32,
                               echo_sequence, echo_type, yaw_rate, wrap32(heading_urad))
    telemetry = protocol.decode(bytes([protocol.TELEMETRY, 0]) + body)
    assert isinstance(telemetry, protocol.Telemetry) and telemetry.sample_us == sample_us
    return telemetry


def reader(**overrides) -> EncoderTelemetry:
    arguments = {'channels': 2, 'max_wheel_acceleration': 1000.0, 'telemetry_timeout': 0.5,
                 'publish_period_us': 20_000, **overrides}
    return EncoderTelemetry(**arguments)


def angle(count: int) -> float:
    return count * 2 * math.pi / COUNTS_PER_REV


# ---------------------------------------------------------------- wrap-around

def test_encoder_counts_unwrap_across_the_32_bit_wrap_in_both_directions():
    """hal_encoder_read wraps at 2**32: one wheel drives forward through +2**31, the other backward
    through -2**31; their angles go on smoothly, far from the jump of 2**32 counts a raw read makes."""
    telemetry = reader()
    step = 700  # counts per 10 ms frame (about 5 rev/s)
    forward, backward = 2**31 - 5 * step, -2**31 + 5 * step
    positions = []
    for k in range(12):
        counts = (forward + k * step, backward - k * step)
        sample = telemetry.feed(frame(10_000 * k, encoder=(*counts, 0, 0)), COUNTS_PER_REV, 0)
        assert sample.positions == (angle(counts[0]), angle(counts[1])), k
        positions.append(sample.positions)
    assert frame(50_000, encoder=(forward + 5 * step, 0, 0, 0)).encoder[0] < 0  # the raw count did wrap
    assert all(b[0] - a[0] == pytest.approx(angle(step)) and b[1] - a[1] == pytest.approx(-angle(step))
               for a, b in zip(positions, positions[1:]))
    # Short of a wrap the angle is exactly what the raw count gives (the bridge's output is unchanged there).
    fresh = reader()
    assert fresh.feed(frame(0, encoder=(123456, -654321, 0, 0)), COUNTS_PER_REV, 0).positions == (
        123456 * 2 * math.pi / COUNTS_PER_REV, -654321 * 2 * math.pi / COUNTS_PER_REV)


def test_the_mcu_receive_counters_unwrap_past_65535():
    """The MCU counts received frames (good and bad) in two u16 fields: 1400 frames of telemetry with
    50 host frames each pass 65535; the frames lost stay the ones the MCU never counted."""
    telemetry = reader()
    received_ok = errors = lost = 0
    telemetry.feed(frame(0, faults=protocol.FAULT_RESET), COUNTS_PER_REV, 0)  # the MCU's boot: counting from 0
    for k in range(1, 1400):
        for _ in range(50):
            telemetry.sent(k & 0xFF, protocol.SET_VELOCITY, 0)
        dropped = 20 if k in (300, 1320) else 0  # one loss on each side of the wrap
        received_ok += 50 - dropped - (k % 7 == 0)
        errors += k % 7 == 0  # a corrupted frame is counted, not lost
        lost += dropped
        telemetry.feed(frame(10_000 * k, rx_ok=received_ok, rx_errors=errors), COUNTS_PER_REV, 0)
        if k == 1000:
            assert telemetry.frames_lost() == 20 - IN_FLIGHT_FRAMES
    assert received_ok + errors > 65536 and received_ok > 65536  # both wrapped
    assert telemetry.frames_lost() == lost - IN_FLIGHT_FRAMES == 37


# ---------------------------------------------------------------- resets

def test_an_mcu_reset_is_detected_by_its_flag_or_by_its_clock_going_back():
    said_hello = []
    telemetry = reader()
    telemetry.on_mcu_reset = lambda: (said_hello.append(True), telemetry.sent(1, protocol.HELLO, 0))
    # A session may start on a freshly booted MCU (flag set, no previous frame): no reset.
    assert not telemetry.feed(frame(0, faults=protocol.FAULT_RESET), COUNTS_PER_REV, 0).mcu_reset
    assert not telemetry.feed(frame(10_000, faults=protocol.FAULT_RESET), COUNTS_PER_REV, 0).mcu_reset  # still set
    assert not telemetry.feed(frame(20_000), COUNTS_PER_REV, 0).mcu_reset  # cleared by our HELLO
    for _ in range(30):
        telemetry.sent(2, protocol.SET_VELOCITY, 0)
    telemetry.feed(frame(30_000, rx_ok=30), COUNTS_PER_REV, 0)
    # The flag reappears: the MCU rebooted (its counters restarted) and the bridge says hello.
    sample = telemetry.feed(frame(40_000, faults=protocol.FAULT_RESET, rx_ok=0), COUNTS_PER_REV, 0)
    assert sample.mcu_reset and said_hello == [True] and telemetry.mcu_resets == 1
    assert not telemetry.feed(frame(50_000, faults=protocol.FAULT_RESET, rx_ok=1), COUNTS_PER_REV, 0).mcu_reset
    # The MCU's counter restarted (it has seen our hello only): the 31 frames sent before are not lost.
    assert telemetry.frames_lost() == 0
    # A reboot the flag missed (the next HELLO cleared it in between): the MCU's clock went back.
    telemetry.feed(frame(60_000, rx_ok=1), COUNTS_PER_REV, 0)
    sample = telemetry.feed(frame(5_000, rx_ok=1), COUNTS_PER_REV, 0)
    assert sample.mcu_reset and said_hello == [True, True] and telemetry.mcu_resets == 2
    # A new session (reconnection) is not a reset: nothing to compare with.
    telemetry.start_session()
    assert not telemetry.feed(frame(1_000, rx_ok=1), COUNTS_PER_REV, 0).mcu_reset


def test_a_reset_forgets_the_clock_offset_and_stamps_never_go_back():
    telemetry = reader()
    offset_ns = 5_000_000_000
    telemetry.sent(1, protocol.HELLO, 1_000_000 * 1000 + offset_ns)
    sample = telemetry.feed(frame(1_000_000, echo_us=1_000_000, echo_sequence=1, echo_type=protocol.HELLO),
                            COUNTS_PER_REV, 1_000_000 * 1000 + offset_ns)
    assert sample.clock_offset_ns == offset_ns and sample.stamp_ns == 1_000_000 * 1000 + offset_ns
    published = sample.stamp_ns
    # The MCU reboots; its clock restarts at 0 and the new echo maps it 0.5 ms behind the last stamp.
    sample = telemetry.feed(frame(0, faults=protocol.FAULT_RESET), COUNTS_PER_REV, published + 1_000_000)
    assert sample.mcu_reset and sample.clock_offset_ns is None and sample.stamp_ns is None
    assert telemetry.clock_offset_ns() is None
    telemetry.sent(2, protocol.HELLO, published - 500_000)
    sample = telemetry.feed(frame(0, faults=protocol.FAULT_RESET, echo_us=0, echo_sequence=2,
                                  echo_type=protocol.HELLO), COUNTS_PER_REV, published + 1_000_000)
    assert sample.clock_offset_ns == published - 500_000 and sample.stamp_ns is None  # would go back
    sample = telemetry.feed(frame(20_000, echo_us=0, echo_sequence=2, echo_type=protocol.HELLO), COUNTS_PER_REV,
                            published + 21_000_000)
    assert sample.stamp_ns is not None and sample.stamp_ns > published


# ---------------------------------------------------------------- glitches

def test_an_implausible_wheel_acceleration_is_flagged_as_a_glitch():
    """Counted (for /diagnostics) and flagged; the frame is still read, as the bridge always did."""
    telemetry = reader(max_wheel_acceleration=1000.0)  # rad/s² on the driven channels
    assert not telemetry.feed(frame(0, velocity=(5.0, 5.0, 0.0, 0.0)), COUNTS_PER_REV, 0).encoder_glitch
    # 9 rad/s more in 10 ms: 900 rad/s², plausible.
    assert not telemetry.feed(frame(10_000, velocity=(14.0, 5.0, 0.0, 0.0)), COUNTS_PER_REV, 0).encoder_glitch
    # 12 rad/s less in 10 ms on the second wheel: 1200 rad/s², a glitch.
    sample = telemetry.feed(frame(20_000, encoder=(800, 900, 0, 0), velocity=(14.0, -7.0, 0.0, 0.0)),
                            COUNTS_PER_REV, 0)
    assert sample.encoder_glitch and telemetry.encoder_glitches == 1
    assert sample.positions == (angle(800), angle(900)) and sample.velocities == (14.0, -7.0)
    # Channels beyond the driven wheels are not looked at.
    assert not telemetry.feed(frame(30_000, velocity=(14.0, -7.0, 500.0, 0.0)), COUNTS_PER_REV, 0).encoder_glitch
    # The acceleration is over the frames' own spacing (a late frame may change more).
    assert not telemetry.feed(frame(130_000, velocity=(100.0, -7.0, 0.0, 0.0)), COUNTS_PER_REV, 0).encoder_glitch
    assert telemetry.encoder_glitches == 1


# ---------------------------------------------------------------- clock offset and publishing

def test_the_clock_offset_comes_from_echoes_and_one_fresh_sample_per_period_is_published():
    telemetry = reader(telemetry_timeout=0.5, publish_period_us=20_000)
    offset_ns = 3_000_000_000
    host = lambda mcu_us: mcu_us * 1000 + offset_ns  # noqa: E731  (the true host time of an MCU instant)
    # No echo of a frame of ours yet: no offset, nothing published.
    assert telemetry.feed(frame(0), COUNTS_PER_REV, host(0)).stamp_ns is None
    # A frame written while the host clock read 0 (no /clock yet) is counted, but its echo says nothing.
    telemetry.sent(6, protocol.SET_VELOCITY, 0)
    sample = telemetry.feed(frame(2_000, echo_us=1_000, echo_sequence=6, echo_type=protocol.SET_VELOCITY),
                            COUNTS_PER_REV, host(2_000))
    assert telemetry.frames_sent == 1 and sample.clock_offset_ns is None and sample.stamp_ns is None
    # SET_VELOCITY 7 written at host time host(3000) - 2 ms (the host clock lags), received at MCU 3000 µs.
    telemetry.sent(7, protocol.SET_VELOCITY, host(3_000) - 2_000_000)
    echo = {'echo_us': 3_000, 'echo_sequence': 7, 'echo_type': protocol.SET_VELOCITY}
    sample = telemetry.feed(frame(10_000, **echo), COUNTS_PER_REV, host(10_000))
    # A lower bound (never a stamp in the future), aged by 100 ppm over the 7 ms since the frame arrived.
    assert sample.clock_offset_ns == offset_ns - 2_000_000 - 700
    assert sample.stamp_ns == 10_000_000 + offset_ns - 2_000_700
    assert telemetry.clock_offset_ns() == sample.clock_offset_ns
    # An echo of the wrong frame type, or of a sequence we never sent, teaches nothing.
    telemetry.sent(8, protocol.HELLO, host(14_000))
    sample = telemetry.feed(frame(15_000, echo_us=14_000, echo_sequence=8, echo_type=protocol.SET_VELOCITY),
                            COUNTS_PER_REV, host(15_000))
    assert sample.clock_offset_ns == offset_ns - 2_000_000 - 1_200  # the same bound, 12 ms old
    # A prompt frame tightens the bound to the true offset.
    telemetry.sent(9, protocol.SET_VELOCITY, host(18_000))
    stamps = []
    for k in range(2, 12):  # 100 Hz telemetry, 50 Hz publishing: one sample per 20 ms of MCU time
        sample = telemetry.feed(frame(10_000 * k, echo_us=18_000, echo_sequence=9, echo_type=protocol.SET_VELOCITY),
                                COUNTS_PER_REV, host(10_000 * k))
        assert sample.clock_offset_ns == offset_ns - (10_000 * k - 18_000) // 10  # aged 100 ppm since the echo
        stamps.append(sample.stamp_ns)
    # 20, 40, ... ms each open a publish period; 30, 50, ... ms fall in one already published.
    assert [s is not None for s in stamps] == [True, False] * 5
    published = [s for s in stamps if s is not None]
    assert all(b > a for a, b in zip(published, published[1:]))
    # A sample older than telemetry_timeout by the mapping is discarded and counted.
    sample = telemetry.feed(frame(120_000, echo_us=18_000, echo_sequence=9, echo_type=protocol.SET_VELOCITY),
                            COUNTS_PER_REV, host(120_000) + 600_000_000)
    assert sample.stamp_ns is None and telemetry.stale_discarded == 1
    assert sample.stale_age_ns == 600_000_000 + (120_000 - 18_000) // 10
    # The host clock at zero (no /clock yet): nothing is published.
    assert telemetry.feed(frame(140_000), COUNTS_PER_REV, 0).stamp_ns is None


def test_bad_arguments_are_one_line_naming_the_field():
    for overrides, expected in [({'channels': 0}, 'channels: expected a whole number from 1 to 4, got 0'),
                                ({'channels': 5}, 'channels'),
                                ({'max_wheel_acceleration': float('nan')}, 'max_wheel_acceleration'),
                                ({'telemetry_timeout': 0.0}, 'telemetry_timeout'),
                                ({'publish_period_us': 20.0}, 'publish_period_us')]:
        with pytest.raises(ValueError) as error:
            reader(**overrides)
        assert str(error.value).startswith(expected) and '\n' not in str(error.value)
    with pytest.raises(ValueError, match=r'^counts_per_rev: expected a whole number > 0 \(from HELLO_ACK\), got 0$'):
        reader().feed(frame(0), 0, 0)


# ---------------------------------------------------------------- with the real firmware

OFFSET_NS = 7_000_000_000  # host clock minus MCU clock


class BridgeSide:
    """What bridge_node does on the link, without ROS: HELLO, setpoints every 20 ms, telemetry fed to
    EncoderTelemetry; the real C firmware (host build) on the other side, its encoders driven here."""

    def __init__(self):
        self.firmware = HostFirmware()
        self.firmware.transmitted()
        self.parser = protocol.FrameParser()
        self.sequence = 0
        self.counts_per_rev = 0
        self.resets = 0
        self.telemetry = EncoderTelemetry(2, 1000.0, 0.5, 20_000, on_mcu_reset=self.on_mcu_reset)
        self.counts = [2**31 - 2000, -2**31 + 2000]  # unbounded; 250 ms from the wrap at 8 counts/ms
        for channel, count in enumerate(self.counts):  # the encoders' counts when the MCU boots
            self.firmware.plant.encoder[channel] = wrap32(count)
        self.firmware.reset()
        self.counts_at_us: dict[int, tuple[int, int]] = {}
        self.samples = []
        self.drop_setpoints = False
        self.write(protocol.hello(self.next_sequence()))

    def next_sequence(self) -> int:
        self.sequence = (self.sequence + 1) & 0xFF
        return self.sequence

    def write(self, payload: bytes, deliver: bool = True) -> None:
        self.telemetry.sent(payload[1], payload[0], self.firmware.plant.time_ns + OFFSET_NS)
        if deliver:
            assert self.firmware.receive(protocol.encode_frame(payload)) > 0

    def on_mcu_reset(self) -> None:
        self.resets += 1
        self.write(protocol.hello(self.next_sequence()))

    def run(self, milliseconds: int, steps=(8, -8)) -> None:
        plant = self.firmware.plant
        for _ in range(milliseconds):
            now_us = plant.time_ns // 1000
            if now_us % 20_000 == 0 and self.counts_per_rev:
                self.write(protocol.set_velocity(self.next_sequence(), [0.0] * 4), deliver=not self.drop_setpoints)
            for channel, step in enumerate(steps):
                self.counts[channel] += step
                plant.encoder[channel] = wrap32(self.counts[channel])
            self.counts_at_us[now_us] = tuple(self.counts)
            self.firmware.advance(1_000_000)
            for payload in self.parser.feed(self.firmware.transmitted()):
                message = protocol.decode(payload)
                if isinstance(message, protocol.HelloAck):
                    self.counts_per_rev = message.counts_per_rev
                elif isinstance(message, protocol.Telemetry) and self.counts_per_rev:
                    sample = self.telemetry.feed(message, self.counts_per_rev, plant.time_ns + OFFSET_NS)
                    self.samples.append((message, sample))


def test_real_firmware_telemetry_through_a_wrap_a_loss_a_reset_and_a_glitch():
    link = BridgeSide()
    link.run(200)
    assert link.counts_per_rev == COUNTS_PER_REV and len(link.samples) >= 18
    offsets = [s.clock_offset_ns for _, s in link.samples[1:]]
    assert all(o is not None and -1_000_000 < o - OFFSET_NS <= 0 for o in offsets), offsets
    link.drop_setpoints = True  # ten setpoints never reach the MCU
    link.run(200)
    link.drop_setpoints = False
    assert link.telemetry.frames_lost() == 10 - IN_FLIGHT_FRAMES
    assert link.counts[0] > 2**31 and link.counts[1] < -2**31  # both encoders wrapped, in opposite directions
    link.firmware.reset()  # power-on reset (the host build keeps the MCU clock running)
    link.run(100)
    assert link.resets == 1 and link.telemetry.mcu_resets == 1
    assert not any(s.encoder_glitch for _, s in link.samples)
    before = len(link.samples)
    link.counts[0] += 3000  # extra counts in one millisecond: 2.3 rev, no motor does that
    link.run(100)
    glitches = [s.encoder_glitch for _, s in link.samples[before:]]
    assert glitches[0] and link.telemetry.encoder_glitches >= 1
    for telemetry, sample in link.samples:  # every frame's angle is the unwrapped count the MCU read
        assert sample.positions == tuple(angle(c) for c in link.counts_at_us[telemetry.sample_us])
    published = [(t.sample_us, s.stamp_ns) for t, s in link.samples if s.stamp_ns is not None]
    stamps = [stamp for _, stamp in published]
    assert all(b > a for a, b in zip(stamps, stamps[1:]))
    # One sample in each 20 ms period of the 600 ms; in the reset's, the first one after the new echo.
    assert [us // 20_000 for us, _ in published] == list(range(30))
    assert 410_000 in dict(published) and 400_000 not in dict(published)


def test_the_gyro_turn_comes_from_ready_headings_across_the_32_bit_wrap():
    """The base's turn between frames is the difference of the MCU's gyro headings (µrad, wrapping at 2**32),
    only when its gyro was ready in both; none after an MCU reset (its heading restarted at 0)."""
    ready = protocol.STATUS_GYRO_READY
    telemetry = reader()
    start = 2**31 - 300_000  # 0.3 rad before the signed 32-bit wrap
    samples = [telemetry.feed(frame(10_000 * k, status=s, heading_urad=h), COUNTS_PER_REV, 0) for k, (s, h) in
               enumerate([(0, 0), (ready, start), (ready, start + 500_000), (ready, start - 200_000), (0, start)])]
    turns = [sample.gyro_turn for sample in samples]
    assert turns[0] is None and turns[1] is None  # no previous frame; gyro not ready in the previous one
    assert turns[2] == pytest.approx(0.5) and turns[3] == pytest.approx(-0.7)  # across the wrap, both ways
    assert turns[4] is None  # not ready any more
    after_reset = telemetry.feed(frame(60_000, faults=protocol.FAULT_RESET, status=ready, heading_urad=10),
                                 COUNTS_PER_REV, 0)
    assert after_reset.mcu_reset and after_reset.gyro_turn is None
