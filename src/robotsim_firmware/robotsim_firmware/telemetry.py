"""What the motor bridge makes of the MCU's telemetry, ROS-free (the bridge node does the ROS I/O).

:class:`EncoderTelemetry` is fed every TELEMETRY frame once the MCU has answered HELLO, and
told of every frame the bridge sends. For each frame it:

- detects an MCU reset (the reset fault flag appearing, or the MCU's clock going backwards) and then
  forgets what it knew of the MCU (its clock offset, the previous frame) and tells the bridge, which
  says hello again;
- accumulates the MCU's 16-bit receive counters, for the frames lost on the link;
- unwraps each encoder's 32-bit count (hal_encoder_read wraps at 2**32, either way) into a wheel angle;
- takes the base's turn since the previous frame from the gyro heading, when the MCU's gyro is ready in both;
- flags an encoder glitch: a change of measured wheel speed no motor can produce. The frame is still
  used (the MCU's speed estimate is noisy, its position count is not); glitches are counted for
  /diagnostics;
- maps the sample's MCU time onto the host clock (:class:`~robotsim_firmware.mcu_clock.McuClock`)
  and decides whether it is published: one sample per publish period, none older than the
  telemetry timeout, stamps strictly increasing.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

from . import protocol
from .mcu_clock import McuClock

IN_FLIGHT_FRAMES = 3
"""Frames sent that the MCU cannot have counted yet (in the link's buffers): not called lost."""
_COUNTER_16 = 1 << 16  # the MCU's receive counters (u16)
_COUNTER_32 = 1 << 32  # encoder counts (i32 on the wire)


def _signed32(value: int) -> int:
    """``value`` modulo 2**32 as the nearest signed step: the encoder count change between two frames."""
    return (value + (1 << 31)) % _COUNTER_32 - (1 << 31)


@dataclass(frozen=True)
class WheelSample:
    """One telemetry frame, read. Channels in wire order (channel i drives the bridge's wheel i)."""
    positions: tuple[float, ...]
    """Wheel angles (rad) from the unwrapped encoder counts."""
    velocities: tuple[float, ...]
    """Wheel speeds (rad/s) as the MCU measured them."""
    mcu_reset: bool
    """This frame showed an MCU reset (the ``on_mcu_reset`` callback has run)."""
    encoder_glitch: bool
    """A wheel's measured speed changed faster than any motor can drive it since the previous frame."""
    clock_offset_ns: int | None
    """Host time minus MCU time used for this sample; None until a sent frame's echo gives one."""
    stamp_ns: int | None
    """Host time (ns) to publish this sample at; None: not published (no clock offset yet, the
    publish period's sample already went out, stale, or not after the last published stamp)."""
    stale_age_ns: int | None
    """How old the sample was (host time, ns) when it was discarded as stale; None otherwise."""
    gyro_turn: float | None = None
    """The yaw (rad) the base turned since the previous frame by the MCU's gyro heading; None: no gyro heading in
    both frames (no gyro, its bias not known yet, the first frame after a reset)."""


class EncoderTelemetry:
    """The bridge's telemetry state across frames, sessions (reconnections) and MCU resets.

    ``channels``: driven wheels (the first channels of each frame); ``max_wheel_acceleration``
    (rad/s²): faster speed changes are glitches; ``telemetry_timeout`` (s): older samples are
    discarded; ``publish_period_us``: at most one published sample per period of MCU time;
    ``on_mcu_reset``: called when a reset is detected, after the clock is forgotten (the bridge says
    hello there; that frame is counted among those sent before the MCU restarted its counters)."""

    def __init__(self, channels: int, max_wheel_acceleration: float, telemetry_timeout: float,
                 publish_period_us: int, on_mcu_reset: Callable[[], None] = lambda: None):
        if not (isinstance(channels, int) and 1 <= channels <= protocol.CHANNELS):
            raise ValueError(f'channels: expected a whole number from 1 to {protocol.CHANNELS}, got {channels!r}')
        if not (math.isfinite(max_wheel_acceleration) and max_wheel_acceleration > 0):
            raise ValueError(f'max_wheel_acceleration: expected a finite number > 0 (rad/s²), '
                             f'got {max_wheel_acceleration!r}')
        if not (math.isfinite(telemetry_timeout) and telemetry_timeout > 0):
            raise ValueError(f'telemetry_timeout: expected a finite number > 0 (s), got {telemetry_timeout!r}')
        if not (isinstance(publish_period_us, int) and publish_period_us > 0):
            raise ValueError(f'publish_period_us: expected a whole number > 0, got {publish_period_us!r}')
        self.channels = channels
        self.max_wheel_acceleration = max_wheel_acceleration
        self.telemetry_timeout = telemetry_timeout
        self.publish_period_us = publish_period_us
        self.on_mcu_reset = on_mcu_reset
        self.clock = McuClock()
        self.last: protocol.Telemetry | None = None  # the previous frame of this session
        self.frames_sent = 0
        self.mcu_resets = 0
        self.encoder_glitches = 0
        self.stale_discarded = 0
        self._mcu_frames_offset = 0   # frames_sent when the MCU last (re)started counting
        self._mcu_frames_seen = 0     # frames the MCU received since then (unwrapped)
        self._mcu_frames_raw = 0
        # Encoder counts unwrapped across frames, sessions and resets (an MCU reset restarts the
        # count on a real board: the angle then jumps back, as the raw count does).
        self._encoder_raw: tuple[int, ...] | None = None
        self._encoder_counts: list[int] = []
        self._last_stamp_ns = -1      # stamps only ever increase, across sessions too
        self._last_publish_slot: int | None = None

    def start_session(self) -> None:
        """A new connection: nothing is known about the MCU until it answers HELLO."""
        self.last = None
        self.clock.reset()

    def sent(self, sequence: int, frame_type: int, host_ns: int) -> None:
        """The bridge queued frame (``sequence``, ``frame_type``) when its clock read ``host_ns``. A
        clock still at zero (no /clock received yet) says nothing about the offset."""
        self.frames_sent += 1
        if host_ns > 0:  # now or earlier is a valid lower bound of the send time
            self.clock.sent(sequence, frame_type, host_ns)

    def frames_lost(self) -> int:
        """Frames the MCU never saw: sent since its last reset minus what it counted (good or bad),
        less the few that may still be in flight."""
        return max(0, self.frames_sent - self._mcu_frames_offset - self._mcu_frames_seen - IN_FLIGHT_FRAMES)

    def clock_offset_ns(self) -> int | None:
        """Host time minus MCU time at the last frame's sample (None: not known yet)."""
        return self.clock.offset_ns(self.last.sample_us * 1000) if self.last else None

    def feed(self, telemetry: protocol.Telemetry, counts_per_rev: int, now_ns: int) -> WheelSample:
        """Read one frame; ``counts_per_rev`` from the MCU's HELLO_ACK, ``now_ns`` the host clock now
        (0: not known yet, nothing is published)."""
        if not (isinstance(counts_per_rev, int) and counts_per_rev > 0):
            raise ValueError(f'counts_per_rev: expected a whole number > 0 (from HELLO_ACK), got {counts_per_rev!r}')
        previous = self.last
        reset = previous is not None and (
            telemetry.faults & protocol.FAULT_RESET and not previous.faults & protocol.FAULT_RESET
            or telemetry.sample_us < previous.sample_us)
        if reset:
            self.mcu_resets += 1
            self.clock.reset()  # its clock may have restarted
            previous = None
            self.on_mcu_reset()
            self._mcu_frames_offset = self.frames_sent  # its receive counter restarted from zero
        # The MCU's receive counters are 16 bits: accumulate their increments.
        raw = (telemetry.rx_frames_ok + telemetry.rx_errors) % _COUNTER_16
        if telemetry.faults & protocol.FAULT_RESET and (previous is None or not previous.faults & protocol.FAULT_RESET):
            self._mcu_frames_seen, self._mcu_frames_raw = 0, 0
        self._mcu_frames_seen += (raw - self._mcu_frames_raw) % _COUNTER_16
        self._mcu_frames_raw = raw
        glitch = False
        if previous is not None:
            # A wheel cannot change speed by more than max_wheel_acceleration between two telemetry
            # frames: larger jumps are encoder glitches (noise, missed or extra counts).
            dt = max((telemetry.sample_us - previous.sample_us) * 1e-6, 1e-3)
            jumps = [abs(a - b) / dt for a, b in zip(telemetry.velocity, previous.velocity)]
            glitch = max(jumps[:self.channels]) > self.max_wheel_acceleration
            self.encoder_glitches += glitch
        self.last = telemetry
        counts = self._unwrap(telemetry.encoder[:self.channels])
        positions = tuple(count * 2 * math.pi / counts_per_rev for count in counts)
        velocities = tuple(telemetry.velocity[:self.channels])

        sample_ns = self.clock.on_telemetry(telemetry)
        offset = None if sample_ns is None else sample_ns - telemetry.sample_us * 1000
        stamp_ns = stale_age_ns = None
        slot = telemetry.sample_us // self.publish_period_us
        # Published: with a clock mapping, once per publish period (the contract's rate), when fresh.
        if sample_ns is not None and slot != self._last_publish_slot and now_ns != 0:
            if now_ns - sample_ns > self.telemetry_timeout * 1e9:
                self.stale_discarded += 1
                stale_age_ns = now_ns - sample_ns
            elif sample_ns > self._last_stamp_ns:
                # (after an MCU reset the new mapping may fall behind a published stamp: never repeat or reverse)
                self._last_publish_slot, self._last_stamp_ns = slot, sample_ns
                stamp_ns = sample_ns
        gyro_turn = None
        if previous is not None and telemetry.status & previous.status & protocol.STATUS_GYRO_READY:
            gyro_turn = _signed32(telemetry.heading_urad - previous.heading_urad) * 1e-6
        return WheelSample(positions, velocities, reset, glitch, offset, stamp_ns, stale_age_ns, gyro_turn)

    def _unwrap(self, raw: tuple[int, ...]) -> list[int]:
        if self._encoder_raw is None:
            self._encoder_counts = list(raw)
        else:
            for channel, (now, before) in enumerate(zip(raw, self._encoder_raw)):
                self._encoder_counts[channel] += _signed32(now - before)
        self._encoder_raw = tuple(raw)
        return self._encoder_counts
