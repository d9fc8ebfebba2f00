"""Throttling of rejection warnings per reason (ROS-free).

A flood of one bad input (NaN commands at 50 Hz) must not fill the log, yet a different bad input
arriving during that flood must still be reported: throttling by call site (as rclpy's
``throttle_duration_sec`` does) hid every other reason logged from the same line.
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass


@dataclass
class _ReasonState:
    last_logged: float
    suppressed: int = 0


class PerReasonThrottle:
    """Admits the first warning of every distinct reason, then at most one per ``period`` seconds
    per reason. Remembers at most ``max_reasons`` reasons (least recently seen forgotten first), so
    reasons that carry request data (unknown joint names) cannot grow it without bound."""

    def __init__(self, period: float = 2.0, max_reasons: int = 256):
        self.period = period
        self.max_reasons = max_reasons
        self._reasons: OrderedDict[str, _ReasonState] = OrderedDict()

    def admit(self, reason: str, now: float) -> int | None:
        """None: do not log this one. Otherwise log it; the value is how many warnings of this
        reason were suppressed since the last one logged."""
        state = self._reasons.get(reason)
        if state is None:
            self._reasons[reason] = _ReasonState(now)
            if len(self._reasons) > self.max_reasons:
                self._reasons.popitem(last=False)
            return 0
        self._reasons.move_to_end(reason)
        if now - state.last_logged < self.period:
            state.suppressed += 1
            return None
        suppressed, state.suppressed, state.last_logged = state.suppressed, 0, now
        return suppressed
