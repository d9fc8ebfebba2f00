"""Build and load the firmware's host build (the real C firmware with the simulator's HAL).

The C sources are installed with this package (share/robotsim_firmware/firmware). The shared
library is compiled with the system C compiler into a cache folder keyed by the sources' hash,
so an edit to the firmware rebuilds it and an unchanged one loads at once.
"""

from __future__ import annotations

import ctypes
import hashlib
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

from robotsim_core.drive import MCU_MOTOR_CHANNELS as CHANNELS  # noqa: E402  (one value for C and Python)
UART_BUFFER = 4096
BUS_QUEUE = 32      # HOST_BUS_QUEUE (firmware/host/host_bus.h)
BUS_MAX_DATA = 8    # BUS_MAX_DATA (firmware/src/bus.h)


class HostBusFrame(ctypes.Structure):
    """Mirror of struct host_bus_frame (firmware/host/host_bus.h)."""

    _fields_ = [('id', ctypes.c_uint16), ('len', ctypes.c_uint8), ('data', ctypes.c_uint8 * BUS_MAX_DATA)]


class HostBus(ctypes.Structure):
    """Mirror of struct host_bus: a board's port on the board-to-board bus (robotsim_firmware.board_bus)."""

    _fields_ = [('tx_count', ctypes.c_uint32), ('tx_overflows', ctypes.c_uint32), ('rx_count', ctypes.c_uint32),
                ('rx_read', ctypes.c_uint32), ('tx', HostBusFrame * BUS_QUEUE), ('rx', HostBusFrame * BUS_QUEUE)]

    def sent(self) -> list[tuple[int, bytes]]:
        """The frames (id, data) the board sent since the last call."""
        frames = [(f.id, bytes(f.data[:f.len])) for f in self.tx[:min(self.tx_count, BUS_QUEUE)]]
        self.tx_count = 0
        return frames

    def deliver(self, frames: list[tuple[int, bytes]]) -> int:
        """Hand the board these frames for its next step (the older ones it has not read are replaced);
        returns how many fitted."""
        taken = frames[:BUS_QUEUE]
        for slot, (frame_id, data) in zip(self.rx, taken):
            slot.id, slot.len = frame_id, len(data)
            slot.data[:len(data)] = list(data)
        self.rx_count, self.rx_read = len(taken), 0
        return len(taken)


class HostPlant(ctypes.Structure):
    """Mirror of struct host_plant (firmware/host/host_plant.h)."""

    _fields_ = [('encoder', ctypes.c_int32 * CHANNELS), ('duty', ctypes.c_float * CHANNELS),
                ('brake', ctypes.c_uint8 * CHANNELS), ('fault_led', ctypes.c_uint8),
                ('gyro_present', ctypes.c_uint8), ('gyro', ctypes.c_int16),
                ('time_ns', ctypes.c_uint64), ('loops', ctypes.c_uint64), ('remainder_ns', ctypes.c_uint64),
                ('rx_head', ctypes.c_uint32), ('rx_tail', ctypes.c_uint32),
                ('tx_head', ctypes.c_uint32), ('tx_tail', ctypes.c_uint32), ('tx_dropped', ctypes.c_uint32),
                ('rx', ctypes.c_uint8 * UART_BUFFER), ('tx', ctypes.c_uint8 * UART_BUFFER), ('bus', HostBus),
                ('radio', HostBus), ('radio_node', ctypes.c_uint8)]


class FirmwareBuildError(RuntimeError):
    pass


def firmware_source_dir() -> Path:
    """The firmware sources: installed share dir, else the source tree."""
    try:
        from ament_index_python.packages import get_package_share_directory
        installed = Path(get_package_share_directory('robotsim_firmware')) / 'firmware'
        if installed.is_dir():
            return installed
    except Exception:  # no ament index (plain source checkout)
        pass
    return Path(__file__).resolve().parents[1] / 'firmware'


HOST_BUILDS = {
    'base': (('src/firmware.c', 'src/protocol.c', 'host/host_hal.c'), ('src', 'host'), 'librobotsim_fw_host'),
    'power': (('power/power_board.c', 'power/host_power.c', 'src/protocol.c'), ('src', 'host', 'power'),
              'librobotsim_power_host'),
}
"""Per board: its host build's C files, include folders and library name (under the firmware folder)."""


def build_host_library(source_dir: Path | None = None, cache_dir: Path | None = None, board: str = 'base') -> Path:
    """The host build of ``board``'s firmware (HOST_BUILDS), compiled into a cache keyed by its sources' hash."""
    source_dir = source_dir or firmware_source_dir()
    sources, includes, name = HOST_BUILDS[board]
    files = sorted(p for p in source_dir.rglob('*') if p.suffix in ('.c', '.h') and 'mcu' not in p.parts)
    digest = hashlib.sha256(board.encode())
    for path in files:
        digest.update(path.relative_to(source_dir).as_posix().encode() + path.read_bytes())
    cache_dir = cache_dir or Path(os.environ.get('XDG_CACHE_HOME', Path.home() / '.cache')) / 'robotsim' / 'firmware'
    target = cache_dir / f'{name}-{digest.hexdigest()[:16]}.so'
    if target.is_file():
        return target
    compiler = os.environ.get('CC', 'cc')
    if shutil.which(compiler) is None:
        raise FirmwareBuildError(f'no C compiler {compiler!r} to build the firmware host library '
                                 '(Debian: build-essential; scripts/setup.sh installs it)')
    cache_dir.mkdir(parents=True, exist_ok=True)
    partial = target.with_suffix(f'.{os.getpid()}.tmp')
    command = [compiler, '-std=c99', '-O2', '-Wall', '-Wextra', '-Werror', '-fPIC', '-shared',
               *(f'-I{source_dir / folder}' for folder in includes), '-o', str(partial),
               *(str(source_dir / source) for source in sources)]
    result = subprocess.run(command, capture_output=True, text=True)
    if result.returncode != 0:
        raise FirmwareBuildError(f'firmware host build failed:\n{" ".join(command)}\n{result.stderr}')
    os.replace(partial, target)
    return target


def load_private_copy(path: Path) -> ctypes.CDLL:
    """The library at ``path`` loaded from a private copy: the firmware keeps its state in C globals and dlopen
    shares a loaded path, so every MCU (one per simulated board) gets a copy of its own."""
    with tempfile.TemporaryDirectory(prefix='robotsim-fw-') as folder:
        private = Path(folder) / path.name
        shutil.copyfile(path, private)
        return ctypes.CDLL(str(private), mode=os.RTLD_LOCAL)


class HostFirmware:
    """One MCU running the real firmware; the simulator drives its clock and its plant."""

    def __init__(self, library: Path | None = None):
        self._lib = load_private_copy(library or build_host_library())
        self._lib.fw_host_plant.restype = ctypes.POINTER(HostPlant)
        self._lib.fw_host_advance.restype = ctypes.c_uint32
        self._lib.fw_host_advance.argtypes = [ctypes.c_uint64]
        self._lib.fw_host_loop_hz.restype = ctypes.c_uint32
        self._lib.fw_host_counts_per_rev.restype = ctypes.c_uint32
        self._lib.fw_host_parser_feed.restype = ctypes.c_uint32
        self._lib.fw_host_parser_feed.argtypes = [ctypes.c_char_p, ctypes.c_size_t, ctypes.POINTER(ctypes.c_uint32)]
        self._lib.fw_host_parser_last.restype = ctypes.c_size_t
        self._lib.fw_host_parser_last.argtypes = [ctypes.POINTER(ctypes.c_char), ctypes.c_size_t]
        self._lib.fw_host_encode.restype = ctypes.c_size_t
        # Output buffers as POINTER(c_char): a c_char_p argument would be passed as a copy.
        self._lib.fw_host_encode.argtypes = [ctypes.c_char_p, ctypes.c_size_t, ctypes.POINTER(ctypes.c_char), ctypes.c_size_t]
        self.plant = self._lib.fw_host_plant().contents
        self.loop_hz = self._lib.fw_host_loop_hz()
        self.counts_per_rev = self._lib.fw_host_counts_per_rev()
        self.reset()

    def reset(self) -> None:
        """Power-on reset of the MCU (its clock keeps the sim's time)."""
        self._lib.fw_host_reset()

    def advance(self, dt_ns: int) -> int:
        return self._lib.fw_host_advance(dt_ns)

    def receive(self, data: bytes) -> int:
        """Bytes arriving on the MCU's UART; returns how many fitted in its receive ring."""
        plant, accepted = self.plant, 0
        for byte in data:
            nxt = (plant.rx_head + 1) % UART_BUFFER
            if nxt == plant.rx_tail:
                break
            plant.rx[plant.rx_head] = byte
            plant.rx_head = nxt
            accepted += 1
        return accepted

    def transmitted(self) -> bytes:
        """Bytes the MCU has sent since the last call."""
        plant = self.plant
        head, tail = plant.tx_head, plant.tx_tail
        if head == tail:
            return b''
        start = ctypes.addressof(plant.tx)
        if head > tail:
            data = ctypes.string_at(start + tail, head - tail)
        else:  # the ring wrapped
            data = ctypes.string_at(start + tail, UART_BUFFER - tail) + ctypes.string_at(start, head)
        plant.tx_tail = head
        return data

    # Protocol test hooks (the firmware's own parser and encoder).
    def parser_reset(self) -> None:
        self._lib.fw_host_parser_reset()

    def parser_feed(self, data: bytes) -> tuple[int, int]:
        errors = ctypes.c_uint32()
        frames = self._lib.fw_host_parser_feed(data, len(data), ctypes.byref(errors))
        return frames, errors.value

    def parser_last(self) -> bytes:
        buffer = ctypes.create_string_buffer(128)
        length = self._lib.fw_host_parser_last(buffer, 128)  # before reading buffer.raw
        return buffer.raw[:length]

    def encode(self, payload: bytes) -> bytes:
        buffer = ctypes.create_string_buffer(256)
        length = self._lib.fw_host_encode(payload, len(payload), buffer, 256)  # before reading buffer.raw
        return buffer.raw[:length]
