"""A robot's board-to-board bus (ROS-free): CAN-like frames (an id, up to 8 bytes) that every board hears but
the one that sent them, with one physics step of latency.

Each physics step every board runs for the step's sim time; then :meth:`BoardBus.exchange` takes what each sent
and hands it to the others for the next step. So a frame is delivered when every board has reached the same
virtual time, whichever order the boards were stepped in, and the result does not depend on that order.

Faults, per board's link to the bus (``down``: nothing in or out; ``drop_every`` N: every Nth frame the board
sends is lost). Every frame not delivered is counted, per link and why (:class:`LinkCounters`)."""

from __future__ import annotations

from dataclasses import dataclass, field

MAX_FRAMES_PER_STEP = 32
"""Frames a board can take per step (its receive queue, HOST_BUS_QUEUE); more are lost and counted."""


@dataclass
class LinkCounters:
    """What happened to the frames of one board's link."""

    sent: int = 0
    """Frames the board put on its link."""
    delivered: int = 0
    """Frame deliveries to other boards (a frame heard by two boards counts twice)."""
    lost_link_down: int = 0
    """Deliveries lost to a link down: the frames this board sent while its link was down (once each), and those
    that could not reach a board whose link was down (once per such board)."""
    lost_dropped: int = 0
    """Frames lost to ``drop_every``."""
    lost_queue_full: int = 0
    """Deliveries lost because the receiving board's queue for the step was full."""


@dataclass
class BusLink:
    """One board's attachment to the bus and its faults."""

    name: str
    down: bool = False
    drop_every: int = 0
    counters: LinkCounters = field(default_factory=LinkCounters)
    _sent_since_drop: int = 0

    def clear_faults(self) -> None:
        self.down, self.drop_every, self._sent_since_drop = False, 0, 0


class BoardBus:
    """Owns the links of a robot's boards (the boards themselves are their owners')."""

    def __init__(self, boards: list[str]):
        if len(set(boards)) != len(boards) or not boards:
            raise ValueError(f'board names must be unique and at least one, got {boards}')
        self.links = {name: BusLink(name) for name in boards}

    def exchange(self, sent: dict[str, list[tuple[int, bytes]]]) -> dict[str, list[tuple[int, bytes]]]:
        """Every board has run this step and ``sent`` holds what each sent. Returns what each must be handed for
        its next step (what the others sent, in board order, then send order)."""
        on_the_bus: list[tuple[str, tuple[int, bytes]]] = []
        for name, link in self.links.items():
            for frame in sent.get(name, []):
                link.counters.sent += 1
                if link.down:
                    link.counters.lost_link_down += 1
                    continue
                link._sent_since_drop += 1
                if link.drop_every and link._sent_since_drop % link.drop_every == 0:
                    link.counters.lost_dropped += 1
                    continue
                on_the_bus.append((name, frame))
        incoming: dict[str, list[tuple[int, bytes]]] = {}
        for name, link in self.links.items():
            heard = [(sender, frame) for sender, frame in on_the_bus if sender != name]
            if link.down:
                for sender, _ in heard:
                    self.links[sender].counters.lost_link_down += 1
                heard = []
            for sender, _ in heard[MAX_FRAMES_PER_STEP:]:
                self.links[sender].counters.lost_queue_full += 1
            heard = heard[:MAX_FRAMES_PER_STEP]
            for sender, _ in heard:
                self.links[sender].counters.delivered += 1
            incoming[name] = [frame for _, frame in heard]
        return incoming

    def clear_faults(self) -> None:
        for link in self.links.values():
            link.clear_faults()
