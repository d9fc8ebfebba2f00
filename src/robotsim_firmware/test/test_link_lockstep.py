"""The serial link in lockstep (robotsim_firmware.virtual_serial): the real firmware (host build) in the loop
and a host in another thread that answers over the pseudo-terminal like the motor bridge (HELLO on connect,
SET_GAINS on the MCU's HELLO_ACK, a SET_VELOCITY at every setpoint period's clock), each answer after a
random delay. Whatever the host's delays, the MCU's PWM duties are the same at every tick: when the host
ran cannot change what the MCU receives, nor when; a host that reads the MCU's HELLO_ACK before the /clock
published just before it, and so sends a setpoint for a period already simulated, changes nothing either. A
host that stops answering takes the link out of lockstep once, with a reason, and the loop goes on."""

from __future__ import annotations

import math
import os
import queue
import random
import threading
import time
import tty

import numpy as np

from robotsim_firmware import protocol
from robotsim_firmware.in_the_loop import FirmwareInTheLoop

STEP_NS = 2_000_000
PERIOD_TICKS = 10  # 20 ms setpoint period / 2 ms physics step


class Host(threading.Thread):
    """A bridge stand-in: answers after random delays (seeded), reading and writing the pty's other end."""

    def __init__(self, path: str, delay_seed: int, answer_setpoints: bool = True, late_clock: bool = False):
        super().__init__(daemon=True)
        self.fd = os.open(path, os.O_RDWR | os.O_NOCTTY | os.O_NONBLOCK)
        tty.setraw(self.fd)
        self.random = random.Random(delay_seed)
        self.clocks: queue.Queue = queue.Queue()
        self.answer_setpoints = answer_setpoints
        self.late_clock = late_clock
        """Take the MCU's HELLO_ACK before the /clock sent just before it (as a bridge whose executor ran its
        serial poll before its /clock subscription on a loaded machine): its first setpoint is then for the
        period the MCU answered in, which the simulation has already run."""
        self.in_session = False
        self.sequence = 0
        self.stop = threading.Event()
        self.write(protocol.hello(0))

    def write(self, payload: bytes) -> None:
        time.sleep(self.random.uniform(0.0, 0.01))  # the host's scheduling
        if payload[0] != protocol.SET_VELOCITY:  # (a setpoint's sequence byte is its period's number, as the bridge's)
            self.sequence = (self.sequence + 1) & 0xFF
            payload = payload[:1] + bytes([self.sequence]) + payload[2:]
        os.write(self.fd, protocol.encode_frame(payload))

    def run(self) -> None:
        parser = protocol.FrameParser(synchronised=False)
        while not self.stop.is_set():
            try:
                data = os.read(self.fd, 4096)
            except BlockingIOError:
                data = b''
            for payload in parser.feed(data):
                if payload[0] == protocol.HELLO_ACK:
                    self.write(protocol.set_gains(0, 0.3, 3.0, 0.0, 0.05, 300))
                    self.in_session = True
                    # As the bridge: no setpoint for the clocks it has seen by its handshake (its period's).
                    while not self.late_clock and not self.clocks.empty():
                        self.clocks.get()
            if self.late_clock and not self.in_session:
                time.sleep(0.001)  # the clocks wait: the one before the HELLO_ACK is taken after it
                continue
            try:
                t = self.clocks.get(timeout=0.001)
            except queue.Empty:
                continue
            if self.in_session and self.answer_setpoints:
                speed = 4.0 * math.sin(t * 3.0)
                self.write(protocol.set_velocity(round(t / (STEP_NS * PERIOD_TICKS * 1e-9)) & 0xFF, [speed, -0.5 * speed]))

    def close(self) -> None:
        self.stop.set()
        self.join(timeout=5)
        os.close(self.fd)


def run_loop(delay_seed: int, ticks: int = 400, answer_setpoints: bool = True,
             late_clock: bool = False) -> tuple[np.ndarray, list[str], int]:
    fil = FirmwareInTheLoop(2, seed=3, lockstep=True)
    host = Host(fil.device_path, delay_seed, answer_setpoints, late_clock)
    host.start()
    angles, duties, problems = np.zeros(2), [], []
    try:
        for tick in range(1, ticks + 1):
            duty = fil.step(angles, STEP_NS)
            duties.append(duty.copy())
            angles = angles + 20.0 * duty * STEP_NS * 1e-9  # a crude motor: enough to close the loop
            if tick % PERIOD_TICKS == 0:
                problems += filter(None, [fil.before_clock()])
                host.clocks.put(tick * STEP_NS * 1e-9)  # the period's /clock
                problems += filter(None, [fil.after_clock(period=tick // PERIOD_TICKS)])
        stale = fil.link.stale_setpoints
    finally:
        host.close()
        fil.close()
    return np.array(duties), problems, stale


def test_the_hosts_scheduling_does_not_change_what_the_mcu_does():
    first, problems, stale = run_loop(delay_seed=1)
    assert problems == [] and stale == 0
    assert np.abs(first[-100:]).max() > 0.05  # the setpoints drove the motors
    second, problems, stale = run_loop(delay_seed=2)
    assert problems == [] and stale == 0
    assert np.array_equal(first, second)


def test_a_setpoint_sent_late_for_a_period_already_run_changes_nothing():
    """The handshake race: the host takes the MCU's answer before the /clock published just before it, so its
    first setpoint is numbered for that period, sent after the link already ran it. The link drops it; the
    MCU's duties are those of a host that took the clock first."""
    prompt, problems, stale = run_loop(delay_seed=1)
    assert problems == [] and stale == 0
    late, problems, stale = run_loop(delay_seed=1, late_clock=True)
    assert problems == [] and stale == 1
    assert np.array_equal(prompt, late)


def test_a_host_that_stops_answering_leaves_lockstep_once_and_the_loop_goes_on():
    duties, problems, _ = run_loop(delay_seed=1, ticks=200, answer_setpoints=False)
    # It sent SET_GAINS, so the link waits for its first setpoint; after LOCKSTEP_TIMEOUT it says why and
    # runs free (no wait at the periods after).
    assert len(problems) == 1 and problems[0].startswith('link not in lockstep: no SET_VELOCITY'), problems
    assert len(duties) == 200
