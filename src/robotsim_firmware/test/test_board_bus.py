"""Several boards on a robot's bus (ROS-free): the base controller and the power board, each its real C firmware
(host builds), exchanging frames with one physics step of latency (robotsim_firmware.board_bus).

The power board holds the motors' supply relay closed only while it hears the base's heartbeat; the base raises
FAULT_PEER_SILENT when the power board it heard goes quiet. Cutting a board's link shows both."""

from __future__ import annotations

import numpy as np
import pytest

from robotsim_firmware import protocol
from robotsim_firmware.board_bus import MAX_FRAMES_PER_STEP, BoardBus
from robotsim_firmware.in_the_loop import FirmwareInTheLoop

STEP_NS = 2_000_000


def test_a_frame_reaches_every_other_board_after_the_step_it_was_sent_in():
    bus = BoardBus(['a', 'b', 'c'])
    assert bus.exchange({'a': [(1, b'x')], 'b': [], 'c': [(3, b'z')]}) == {
        'a': [(3, b'z')], 'b': [(1, b'x'), (3, b'z')], 'c': [(1, b'x')]}
    # The order the boards report in does not matter: frames come in board order, then send order.
    assert bus.exchange({'c': [(3, b'z')], 'a': [(1, b'x'), (2, b'y')]})['b'] == [(1, b'x'), (2, b'y'), (3, b'z')]
    assert bus.links['a'].counters.sent == 3 and bus.links['a'].counters.delivered == 6


def test_link_faults_lose_frames_and_count_each_loss():
    bus = BoardBus(['a', 'b'])
    bus.links['a'].drop_every = 3
    heard = [len(bus.exchange({'a': [(1, bytes([n]))]})['b']) for n in range(9)]
    assert heard == [1, 1, 0] * 3 and bus.links['a'].counters.lost_dropped == 3
    bus.clear_faults()
    bus.links['b'].down = True  # b hears nothing and says nothing
    assert bus.exchange({'a': [(1, b'')], 'b': [(2, b'')]}) == {'a': [], 'b': []}
    assert bus.links['a'].counters.lost_link_down == 1 and bus.links['b'].counters.lost_link_down == 1
    bus.clear_faults()
    flood = bus.exchange({'a': [(1, b'')] * (MAX_FRAMES_PER_STEP + 5)})
    assert len(flood['b']) == MAX_FRAMES_PER_STEP and bus.links['a'].counters.lost_queue_full == 5
    with pytest.raises(ValueError):
        BoardBus(['a', 'a'])


class Host:
    """Stands in for the pty and the motor bridge: hello and gains, then a wheel setpoint every 20 ms."""

    def __init__(self, link):
        self.link, self.received, self.down, self.drop_every = link, bytearray(), False, 0
        self.pending = protocol.encode_frame(protocol.hello(0)) + protocol.encode_frame(
            protocol.set_gains(1, 0.3, 3.0, 0.0, 0.04, 300))
        self.elapsed = 0

    def transfer(self, to_host: bytes, dt: float) -> bytes:
        self.received += to_host
        if self.elapsed % 10 == 0:
            self.pending += protocol.encode_frame(protocol.set_velocity(self.elapsed % 256, [3.0, 3.0, 0.0, 0.0]))
        self.elapsed += 1
        sent, self.pending = self.pending, b''
        return sent

    def close(self) -> None:
        self.link.close()


def run(fil: FirmwareInTheLoop, seconds: float) -> list[np.ndarray]:
    """Step the boards (the wheels turning as the duty asks, roughly) and return every step's duties."""
    duties = []
    for _ in range(round(seconds / 2e-3)):
        duty = fil.step(fil.angles, STEP_NS)
        fil.angles = fil.angles + duty * 10.0 * 2e-3
        duties.append(duty)
    return duties


@pytest.fixture
def boards():
    fil = FirmwareInTheLoop(2, power_board=True)
    fil.link = Host(fil.link)
    fil.angles = np.zeros(2)
    yield fil
    fil.close()


def faults_seen(fil: FirmwareInTheLoop) -> list[int]:
    parser = protocol.FrameParser()
    return [m.faults for m in map(protocol.decode, parser.feed(bytes(fil.link.received)))
            if isinstance(m, protocol.Telemetry)]


def test_each_board_notices_its_peer_s_silence_when_the_link_is_cut(boards):
    run(boards, 0.3)
    assert boards.power.relay_closed and faults_seen(boards)[-1] & protocol.FAULT_PEER_SILENT == 0
    assert boards.inject('bus_down', 1) is None  # the power board's link
    duties = run(boards, 0.3)
    steps_to_open = next(i for i, d in enumerate(duties) if not d.any())
    # The power board hears no heartbeat for 100 ms: it opens the relay (the motors get no supply) ...
    assert not boards.power.relay_closed and not duties[-1].any()
    assert 0.09 <= steps_to_open * 2e-3 <= 0.12, steps_to_open
    # ... and the base, which hears no power board status either, reports its peer's silence.
    assert faults_seen(boards)[-1] & protocol.FAULT_PEER_SILENT
    lost = boards.bus.links['power'].counters.lost_link_down + boards.bus.links['base'].counters.lost_link_down
    assert lost >= 2 * 0.3 / 0.01 - 2, 'every frame the cut link did not carry is counted'
    assert boards.inject('clear') is None
    duties = run(boards, 0.1)
    assert boards.power.relay_closed and duties[-1].any() and not faults_seen(boards)[-1] & protocol.FAULT_PEER_SILENT


def test_a_lossy_link_that_still_carries_heartbeats_raises_no_fault(boards):
    assert boards.inject('bus_drop', 0, 2.0) is None  # every 2nd frame of the base's link
    run(boards, 0.5)
    counters = boards.bus.links['base'].counters
    assert boards.power.relay_closed and counters.lost_dropped == counters.sent // 2
    assert not any(f & protocol.FAULT_PEER_SILENT for f in faults_seen(boards))


def test_bus_faults_are_refused_without_a_bus_or_with_a_wrong_board(boards):
    assert 'expected a board, 0 (base), 1 (power)' in boards.inject('bus_down', 2)
    assert 'out of range' in boards.inject('bus_drop', 0, 1.0)
    plain = FirmwareInTheLoop(2)
    try:
        assert 'no board-to-board bus (start it with power_board:=true)' in plain.inject('bus_down', 0)
    finally:
        plain.close()
    with pytest.raises(ValueError, match='QEMU board port has no bus'):
        FirmwareInTheLoop(2, build='qemu', power_board=True)
