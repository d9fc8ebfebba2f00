"""Map the MCU's clock onto the host's ROS clock (ROS-free: the bridge feeds it, tests drive it).

Telemetry carries the MCU time its sample was taken at; the bridge needs that instant on its own
clock. The offset (host time minus MCU time at the same instant) is bounded from one side only by
observations that hold whatever the load:

    the host writes a frame when its clock reads h, the MCU receives it at MCU time m;
    the frame cannot arrive before it was written, so  h - m <= offset.

A host clock that lags (a /clock subscriber behind the simulator, a busy bridge) only makes h
smaller, and transport only makes m larger: either loosens the bound, neither breaks it. The
estimate is therefore the largest bound seen, which approaches the true offset from below as soon
as one frame goes through promptly. (The reverse direction, receive time minus MCU sample time,
looks like a bound too but is not one when the host clock lags: that was the 43 ms error.)

Crystals drift: the best bound is aged by MAX_DRIFT (100 ppm, a generous crystal tolerance) so it
stays a lower bound when the MCU clock runs fast; fresh bounds keep the estimate tight.
"""

from __future__ import annotations

from .protocol import Telemetry

MAX_DRIFT = 100e-6


class McuClock:
    def __init__(self):
        self.reset()

    def reset(self) -> None:
        """Forget the offset and the frames sent: the MCU rebooted (its clock restarted) or a new
        session began (an echo of an older frame could then match a reused sequence number)."""
        self._sent: dict[tuple[int, int], int] = {}  # (sequence, frame type) -> host ns when written
        self._bound_ns: int | None = None
        self._bound_mcu_ns = 0
        self._last_echo_us = None
        self.bounds = 0  # observations used since the reset

    def sent(self, sequence: int, frame_type: int, host_ns: int) -> None:
        """The bridge wrote frame (``sequence``, ``frame_type``) when its clock read ``host_ns``."""
        self._sent[(sequence & 0xFF, frame_type)] = host_ns

    def observe(self, host_ns: int, mcu_ns: int) -> None:
        """A frame written at host time ``host_ns`` arrived at MCU time ``mcu_ns``."""
        bound = host_ns - mcu_ns
        self.bounds += 1
        if self._bound_ns is None or bound >= self.offset_ns(mcu_ns):
            self._bound_ns, self._bound_mcu_ns = bound, mcu_ns

    def offset_ns(self, mcu_ns: int) -> int | None:
        """Host time minus MCU time: the best bound, aged for clock drift since it was taken."""
        if self._bound_ns is None:
            return None
        return self._bound_ns - round(MAX_DRIFT * max(0, mcu_ns - self._bound_mcu_ns))

    def on_telemetry(self, telemetry: Telemetry) -> int | None:
        """Learn from the telemetry's echo of the last host frame; return the sample's host time
        (ns), or None while no frame of this session has been echoed yet."""
        rx_us = telemetry.host_rx_sample_us
        # Only a frame that arrived after the last one used: an echo repeats in every telemetry
        # frame until the next host frame arrives, and its sequence number is reused every 256 frames.
        if telemetry.host_rx_type and (self._last_echo_us is None or rx_us > self._last_echo_us):
            self._last_echo_us = rx_us
            sent_ns = self._sent.get((telemetry.host_rx_sequence, telemetry.host_rx_type))
            if sent_ns is not None:
                self.observe(sent_ns, rx_us * 1000)
        sample_ns = telemetry.sample_us * 1000
        offset = self.offset_ns(sample_ns)
        return None if offset is None else sample_ns + offset
