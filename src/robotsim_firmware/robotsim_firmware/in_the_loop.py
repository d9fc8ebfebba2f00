"""Firmware in the loop (ROS-free): the real C firmware drives simulated wheels.

Each physics tick: the wheel angles become encoder counts (with any injected encoder fault), the base's yaw rate
the raw reading of the base board's gyro (:class:`BoardGyro`: bias and noise from the seed),
the serial link moves the tick's bytes between the pty and the MCU, the firmware runs for
exactly the tick's sim time, and its PWM duties go back to the motors.

In lockstep (``lockstep=True``) the caller brackets the /clock of every setpoint period of the
bridge with :meth:`FirmwareInTheLoop.before_clock` and :meth:`FirmwareInTheLoop.after_clock`, where
the link waits for the bridge's frames (robotsim_firmware.virtual_serial): the bridge's scheduling
then cannot change what the MCU receives, nor when in sim time.
"""

from __future__ import annotations

import math
import sys

import numpy as np

from . import protocol
from .board_bus import BoardBus, BusLink
from .host_library import CHANNELS, HostFirmware
from .power_board import PowerBoard
from .virtual_serial import PtyLink

BUILDS = ('host', 'qemu')
"""Which firmware build runs in the loop: the host build (a shared library the simulator calls, HAL = the plant) or
the MCU image under QEMU (robotsim_firmware.qemu_board: registers, interrupts and the core's own time)."""

FAULTS = ('encoder_stuck', 'encoder_noise', 'motor_dead', 'link_drop', 'link_down', 'mcu_reset', 'bus_down', 'bus_drop',
          'radio_down', 'radio_drop', 'clear')
BUS_BOARDS = ('base', 'power')
"""The boards on the bus of a robot with a power board; a bus fault's ``channel`` picks one by its index."""
RADIO_MAX_NODES = 16
"""Robots the fleet radio tells apart (RADIO_MAX_PEERS, firmware/src/bus.h)."""
MAX_LINK_DROP_EVERY = 1_000_000  # one lost frame in a million: about six hours of 50 Hz setpoints


def wrap_int32(value: int) -> int:
    return (value + 2**31) % 2**32 - 2**31


class BoardGyro:
    """The base board's yaw-rate gyro (an ICM-20602 class MEMS part at +-500 deg/s) as the simulator feeds the
    firmware: the base's true yaw rate, scaled by a sensitivity error and shifted by a zero-rate offset both drawn
    once per power-on from the seed (within the datasheet's initial tolerances, +-1 % and +-1 deg/s), plus white
    noise (0.004 deg/s/sqrt(Hz) over its 250 Hz bandwidth: 0.063 deg/s a sample), quantised to its 16-bit counts
    and clipped at full scale. Not modelled: temperature drift, cross-axis sensitivity, non-linearity. Owns its
    random generator."""

    BIAS_DPS = 1.0
    SCALE_TOLERANCE = 0.01
    NOISE_DPS = 0.063

    def __init__(self, seed: int = 0):
        self.reset(seed)

    def reset(self, seed: int) -> None:
        self.rng = np.random.default_rng([seed, 0x6779726F])  # a stream of its own: encoder noise draws do not shift it
        self.bias_dps = float(self.rng.uniform(-self.BIAS_DPS, self.BIAS_DPS))
        self.scale = 1.0 + float(self.rng.uniform(-self.SCALE_TOLERANCE, self.SCALE_TOLERANCE))

    def raw(self, yaw_rate: float) -> int:
        """The reading (counts) for a true yaw rate (rad/s about the board's z)."""
        dps = math.degrees(yaw_rate) * self.scale + self.bias_dps + self.NOISE_DPS * float(self.rng.standard_normal())
        return int(min(max(round(dps * protocol.GYRO_LSB_PER_DPS), -32768), 32767))


class FirmwareInTheLoop:
    def __init__(self, channels: int, link_path: str | None = None, seed: int = 0, baud: int = 115200,
                 lockstep: bool = False, build: str = 'host', image: str = '', power_board: bool = False):
        if not 1 <= channels <= CHANNELS:
            raise ValueError(f'the firmware drives 1 to {CHANNELS} wheels, the robot has {channels} driven wheels')
        if build not in BUILDS:
            raise ValueError(f'firmware build {build!r}: expected one of {", ".join(BUILDS)}')
        if power_board and build != 'host':
            raise ValueError('power_board: the board-to-board bus runs with the host build (firmware:=true); the '
                             "QEMU board port has no bus (QEMU 7.2's STM32F405 emulates no CAN)")
        self.channels = channels
        self.build = build
        self.failure: str | None = None
        """Why the MCU stopped running (the QEMU image hung or QEMU died); None while it runs."""
        if build == 'qemu':
            from .qemu_board import QemuFirmware
            self.mcu = QemuFirmware(image or None, baud=baud)
        else:
            self.mcu = HostFirmware()
        try:
            self.link = PtyLink(link_path, baud)
        except BaseException:
            getattr(self.mcu, 'close', lambda: None)()
            raise
        self.gyro = BoardGyro(seed)
        """The base board's gyro (its yaw rate feeds the firmware's yaw loop and heading)."""
        self.power: PowerBoard | None = PowerBoard() if power_board else None
        """The robot's power board (its motors' supply relay), on the bus with the base controller; None: none."""
        self.bus = BoardBus(list(BUS_BOARDS)) if power_board else None
        self._inbox: dict[str, list] = {name: [] for name in BUS_BOARDS}
        self.radio_link: BusLink | None = None
        """This robot's link to the fleet radio (the simulation's FleetRadio owns it); None: no fleet radio."""
        self.radio_inbox: list[tuple[int, bytes]] = []
        """What the fleet radio delivered after the last step (handed to the MCU at the start of the next)."""
        self._load = 0.0
        self.link.lockstep = lockstep
        self.counts_per_radian = self.mcu.counts_per_rev / (2 * math.pi)
        self.reset(seed)

    @property
    def device_path(self) -> str:
        return self.link.path

    def reset(self, seed: int = 0, wheel_angles: np.ndarray | None = None) -> None:
        """Power-on: the MCU reboots, injected faults are cleared, encoder noise restarts from the seed.

        ``wheel_angles``: where the wheels are at the reboot (after a world reset, where the reset put them).
        The firmware takes its speed estimate's baseline from the encoders at boot, so they must read the
        wheels' new angles then, not the ones before the reset: otherwise the first loops see the jump
        back as a wheel spinning impossibly fast (a false encoder glitch on the bridge)."""
        self.rng = np.random.default_rng(seed)
        self.gyro.reset(seed)
        self.stuck: dict[int, int] = {}
        self.noise: dict[int, int] = {}
        self.dead: set[int] = set()
        self.link.down, self.link.drop_every = False, 0
        if wheel_angles is not None:
            self._write_encoders(wheel_angles)
        self._reboot()
        self.radio_inbox = []
        if self.radio_link is not None:
            self.radio_link.clear_faults()
        if self.power is not None:
            self.power.reset()
            self.bus.clear_faults()
            self._inbox = {name: [] for name in BUS_BOARDS}

    def _reboot(self) -> None:
        self.mcu.reset()
        if isinstance(self.link, PtyLink):  # (the odometry trials put an in-process bridge there)
            self.link.mcu_rebooted()

    @property
    def lockstep(self) -> bool:
        return isinstance(self.link, PtyLink) and self.link.lockstep

    def before_clock(self) -> str | None:
        """A setpoint period starts (its /clock not out yet): the link's waits for the bridge that do not
        depend on /clock. Why the link left lockstep, if it did."""
        return self.link.before_clock() if self.lockstep else None

    def after_clock(self, nudge=lambda: None, period: int | None = None) -> str | None:
        """The period's /clock is out: the link waits for the bridge's setpoint of ``period`` (its number:
        /clock time // SETPOINT_PERIOD; ``nudge()`` repeats the /clock meanwhile). Why it left lockstep, if
        it did."""
        return self.link.after_clock(nudge=nudge, period=period) if self.lockstep else None

    def _write_encoders(self, wheel_angles: np.ndarray) -> None:
        """The wheel angles as the MCU's encoder registers count them (with any injected encoder fault)."""
        plant = self.mcu.plant
        for channel in range(self.channels):
            count = wrap_int32(math.floor(wheel_angles[channel] * self.counts_per_radian))
            if channel in self.stuck:
                count = self.stuck[channel]
            elif channel in self.noise:
                amplitude = self.noise[channel]
                count = wrap_int32(count + int(self.rng.integers(-amplitude, amplitude + 1)))
            plant.encoder[channel] = count

    def step(self, wheel_angles: np.ndarray, dt_ns: int, yaw_rate: float = 0.0) -> np.ndarray:
        """One physics tick: ``wheel_angles`` (rad) and the base's ``yaw_rate`` (rad/s about its z) in, the
        motors' duties out."""
        plant = self.mcu.plant
        if self.failure is not None:  # a dead MCU drives nothing: the motors' inputs are low, the wheels coast
            self.link.transfer(b'', dt_ns * 1e-9)
            return np.zeros(self.channels)
        plant.gyro_present, plant.gyro = 1, self.gyro.raw(yaw_rate)
        self._write_encoders(wheel_angles)
        from_host = self.link.transfer(self.mcu.transmitted(), dt_ns * 1e-9)
        if from_host:
            self.mcu.receive(from_host)
        if self.radio_link is not None:
            self.mcu.plant.radio.deliver(self.radio_inbox)
            self.radio_inbox = []
        if self.power is not None:  # what the bus delivered after the last step, then this step on both boards
            self.mcu.plant.bus.deliver(self._inbox['base'])
            self.power.bus.deliver(self._inbox['power'])
            self.power.advance(dt_ns, self._load)
        try:
            self.mcu.advance(dt_ns)
        except RuntimeError as error:  # (QemuError: the image hangs, crashed, or QEMU died)
            self.failure = str(error)
            print(f'robotsim_firmware: {error}; the MCU is dead from here on (its motors coast)', file=sys.stderr,
                  flush=True)
            return np.zeros(self.channels)
        duties = np.array([plant.duty[channel] for channel in range(self.channels)])
        for channel in self.dead:
            duties[channel] = 0.0
        if self.power is not None:
            self._inbox = self.bus.exchange({'base': self.mcu.plant.bus.sent(), 'power': self.power.bus.sent()})
            if not self.power.relay_closed:
                duties[:] = 0.0  # the relay cut the motors' supply
            self._load = float(np.abs(duties).sum())
        return duties

    def value_range(self, fault: str) -> tuple[int, int, str]:
        """(lowest, highest, meaning) of the ``value`` a fault accepts; faults without a value take 0."""
        if fault == 'encoder_noise':  # beyond one wheel revolution of noise an encoder reads garbage
            return 1, int(self.mcu.counts_per_rev), 'counts of noise amplitude'
        if fault == 'link_drop':
            return 2, MAX_LINK_DROP_EVERY, 'every value-th host frame is lost'
        if fault == 'bus_drop':
            return 2, MAX_LINK_DROP_EVERY, "every value-th frame of the board's bus link is lost"
        if fault == 'radio_drop':
            return 2, MAX_LINK_DROP_EVERY, "every value-th frame this robot sends on the fleet radio is lost"
        return 0, 0, f'{fault} takes no value'

    def inject(self, fault: str, channel: int = 0, value: float = 0.0) -> str | None:
        """Apply a fault; returns an error message for a bad request (nothing changes then)."""
        if fault not in FAULTS:
            return f'unknown fault {fault!r}; expected one of {", ".join(FAULTS)}'
        if fault in ('encoder_stuck', 'encoder_noise', 'motor_dead') and not 0 <= channel < self.channels:
            return f'channel {channel} out of range 0..{self.channels - 1}'
        if fault in ('bus_down', 'bus_drop'):
            if self.bus is None:
                return f'{fault}: this robot has no board-to-board bus (start it with power_board:=true)'
            if not 0 <= channel < len(BUS_BOARDS):
                return (f'{fault}: channel {channel} out of range: expected a board, '
                        + ', '.join(f'{i} ({name})' for i, name in enumerate(BUS_BOARDS)))
        if fault in ('radio_down', 'radio_drop') and self.radio_link is None:
            return (f'{fault}: this robot has no fleet radio (a fleet of at least two robots with the firmware, '
                    'host build, has one)')
        low, high, unit = self.value_range(fault)
        # NaN fails every comparison, so it lands here too (as do Inf and 1e300): refused before int().
        if not (low <= value <= high and float(value).is_integer()):
            accepted = f'a whole number from {low} to {high} ({unit})' if high > low else f'{low} ({unit})'
            return f'{fault}: value {value!r} out of range: expected {accepted}'
        if fault == 'encoder_stuck':
            self.stuck[channel] = int(self.mcu.plant.encoder[channel])
        elif fault == 'encoder_noise':
            self.noise[channel] = int(value)
        elif fault == 'motor_dead':
            self.dead.add(channel)
        elif fault == 'link_drop':
            self.link.drop_every = int(value)
        elif fault == 'link_down':
            self.link.down = True
        elif fault == 'mcu_reset':
            self._reboot()
        elif fault == 'bus_down':
            self.bus.links[BUS_BOARDS[channel]].down = True
        elif fault == 'bus_drop':
            self.bus.links[BUS_BOARDS[channel]].drop_every = int(value)
        elif fault == 'radio_down':
            self.radio_link.down = True
        elif fault == 'radio_drop':
            self.radio_link.drop_every = int(value)
        else:
            self.stuck.clear()
            self.noise.clear()
            self.dead.clear()
            self.link.down, self.link.drop_every = False, 0
            if self.bus is not None:
                self.bus.clear_faults()
            if self.radio_link is not None:
                self.radio_link.clear_faults()
        return None

    def close(self) -> None:
        self.link.close()
        getattr(self.mcu, 'close', lambda: None)()  # (the QEMU process; the host build is a library)
