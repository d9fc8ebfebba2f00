"""Checking a live graph against the robot's contract (ROS-free evaluation).

``robotsim contract check`` (ros/contract_probe.py) watches the topics for a while and hands its
observations here; this module decides, per topic and per TF link, what passes and why not, and
formats the table. The same evaluation serves the simulator here and the real robot on the Jetson.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field

from .contract import Contract, QosSpec, resolve_frame, resolve_topic

RATE_TOLERANCE = 0.3          # measured rate within +-30 % of nominal
TIME_DOMAIN_TOLERANCE = 5.0   # s: stamps this close to the reference clock are in its time domain


@dataclass
class TopicObservation:
    types: list[str] = field(default_factory=list)        # types advertised on the graph
    publisher_qos: list[QosSpec] = field(default_factory=list)
    frame_ids: set[str] = field(default_factory=set)
    stamps_ns: list[int] = field(default_factory=list)    # header stamps, in arrival order
    count: int = 0


@dataclass
class CheckRow:
    item: str
    ok: bool
    detail: str


def _connected(edges: set[tuple[str, str]], parent: str, child: str) -> bool:
    """Is ``child`` reachable from ``parent`` going down the TF tree?"""
    children: dict[str, set[str]] = {}
    for p, c in edges:
        children.setdefault(p, set()).add(c)
    seen, queue = {parent}, deque([parent])
    while queue:
        frame = queue.popleft()
        if frame == child:
            return True
        for nxt in children.get(frame, ()):
            if nxt not in seen:
                seen.add(nxt)
                queue.append(nxt)
    return False


def evaluate(contract: Contract, observations: dict[str, TopicObservation], tf_edges: set[tuple[str, str]],
             reference_time_ns: int | None, namespace: str = '', frame_prefix: str = '',
             include_sim_only: bool = True) -> list[CheckRow]:
    """One row per contract topic and per required TF link. ``reference_time_ns`` is the latest
    /clock (simulation) or the wall time (real robot): header stamps must lie near it."""
    rows = []
    for topic in contract.topics:
        if topic.sim_only and not include_sim_only:
            continue
        name = resolve_topic(namespace, topic.name)
        seen = observations.get(name, TopicObservation())
        problems = []
        if not seen.types:
            rows.append(CheckRow(name, False, 'missing: no publisher'))
            continue
        if topic.type not in seen.types:
            problems.append(f'type {", ".join(seen.types)}, expected {topic.type}')
        if seen.publisher_qos and all(q.reliability != topic.qos.reliability or q.durability != topic.qos.durability
                                      for q in seen.publisher_qos):
            q = seen.publisher_qos[0]
            problems.append(f'QoS {q.reliability}/{q.durability}, expected {topic.qos.reliability}/{topic.qos.durability}')
        if seen.count == 0:
            problems.append('no message received')
        expected_frame = resolve_frame(frame_prefix, topic.frame_id)
        if expected_frame and seen.frame_ids and seen.frame_ids != {expected_frame}:
            problems.append(f'frame_id {", ".join(sorted(seen.frame_ids))}, expected {expected_frame}')
        stamps = seen.stamps_ns
        rate_text = ''
        publishers = len(seen.publisher_qos)
        if topic.rate > 0 and publishers > 1:
            # Interleaved publishers (joint states from the arm and from the motor bridge) cannot
            # be told apart by stamp alone.
            rate_text = f'{publishers} publishers, rate not checked'
        elif topic.rate > 0 and len(stamps) >= 3:
            # A low percentile of the stamp intervals: a best-effort message lost on the way only
            # lengthens an interval, so drops (common under load) do not read as a slow publisher,
            # while the percentile still tolerates stamp jitter.
            intervals = sorted(b - a for a, b in zip(stamps, stamps[1:]) if b > a)
            typical = intervals[len(intervals) // 10] * 1e-9 if intervals else 0.0
            rate = 1.0 / typical if typical > 0 else float('inf')
            rate_text = f'{rate:.1f} Hz'
            if abs(rate - topic.rate) > RATE_TOLERANCE * topic.rate:
                problems.append(f'rate {rate:.1f} Hz, expected {topic.rate:g} Hz +-{RATE_TOLERANCE:.0%}')
        elif topic.rate > 0 and seen.count and stamps:
            problems.append(f'only {len(stamps)} messages: rate unknown (expected {topic.rate:g} Hz)')
        # With several publishers (e.g. joint states from the arm driver and the motor bridge)
        # their messages interleave: order is only meaningful for a single publisher.
        if publishers <= 1 and any(b < a for a, b in zip(stamps, stamps[1:])):
            problems.append('stamps go backwards')
        if stamps and reference_time_ns is not None and \
                abs(stamps[-1] - reference_time_ns) * 1e-9 > TIME_DOMAIN_TOLERANCE:
            problems.append(f'stamps {stamps[-1] * 1e-9:.1f} s are not in the reference time domain '
                            f'({reference_time_ns * 1e-9:.1f} s)')
        detail = '; '.join(problems) if problems else ', '.join(
            x for x in (topic.type, expected_frame and f'frame {expected_frame}', rate_text) if x)
        rows.append(CheckRow(name, not problems, detail))
    for parent, child in contract.frames:
        parent, child = frame_prefix + parent, frame_prefix + child
        ok = _connected(tf_edges, parent, child)
        rows.append(CheckRow(f'tf {parent} -> {child}', ok, 'connected' if ok else 'not connected on /tf, /tf_static'))
    return rows


def format_table(rows: list[CheckRow]) -> str:
    width = max(len(r.item) for r in rows)
    lines = [f'{"PASS" if r.ok else "FAIL"}  {r.item.ljust(width)}  {r.detail}' for r in rows]
    failed = sum(not r.ok for r in rows)
    lines.append(f'{len(rows) - failed} of {len(rows)} checks pass' + ('' if not failed else f' ({failed} fail)'))
    return '\n'.join(lines)
