"""The MCU image itself in the loop: the firmware built for a Netduino Plus 2 (STM32F405) runs under
``qemu-system-arm -M netduinoplus2`` and the simulator meets it at register level (ROS-free).

What crosses, and how (QEMU 7.2, Debian 12; ``firmware/mcu/board_netduinoplus2.c`` has the board side):

- **Serial.** The image's USART1 is QEMU's first serial port, on a Unix socket this class reads and
  writes: bytes the firmware writes to USART1's data register come out of it; bytes written into it
  raise the USART's receive interrupt. QEMU's I/O thread delivers them in wall time, so the count of bytes
  sent so far is written into the image's ``board_rx_expected``, and the loop resumed next waits until its
  receive interrupt has taken that many before the firmware runs: what each loop receives is fixed by the
  simulator, not by the host's scheduling. QEMU ignores the baud rate register, so the wire is modelled
  here: BRR is read at boot, and when the rate it gives differs from the link's by more than
  :data:`BAUD_TOLERANCE` the bytes are framing errors on both sides (nothing intelligible crosses).
- **Time.** The core runs under ``-icount`` (a fixed number of ns per instruction: its timing does not
  depend on the host). The firmware runs one control loop per SysTick tick; loop k starts at
  ``k x (SYST_RVR + 1) / SYSCLK`` of sim time (SysTick's reload register, read at boot), so a wrong SysTick
  divisor runs the loop at a wrong rate in sim time, as on the board. At every ``board_sync_stride``-th loop (the
  loops of one physics step) the image calls one of two empty functions, alternately (found through its debug
  descriptor, :data:`DEBUG_INFO_ADDRESS`); breakpoints on both stop the core there, where the simulator steps the
  physics to that loop's instant. (QEMU's stub has no step-over: the core is stepped off the breakpoint it stopped
  on before it resumes.)
- **PWM.** The duty of each motor is read from the timers' compare registers: (CCR(IN1) - CCR(IN2)) /
  (ARR + 1) of TIM3 (motors 0, 1) and TIM4 (motors 2, 3); both inputs full is the brake.
- **Encoders and gyro.** No QEMU timer counts encoder edges and no gyro sits on its SPI bus: the counts and the
  gyro's raw z are written into the image's ``board_inputs`` through the gdb stub before each loop that reads them.

Everything goes through QEMU's gdb stub (the remote serial protocol, :class:`GdbRemote`) on a Unix socket
of a private folder; QEMU dies with the process that started it.
"""

from __future__ import annotations

import ctypes
import hashlib
import os
import shutil
import signal
import socket
import struct
import subprocess
import tempfile
import time
from pathlib import Path

from robotsim_core.drive import MCU_MOTOR_CHANNELS as CHANNELS

from .host_library import FirmwareBuildError, firmware_source_dir

QEMU = 'qemu-system-arm'
MACHINE = 'netduinoplus2'
SYSCLK_HZ = 168_000_000          # the STM32F405's SYSCLK as QEMU emulates it (fixed; RCC is not emulated)
APB2_HZ = 84_000_000             # USART1's clock on the board (SYSCLK / 2)
APB1_TIMER_HZ = 84_000_000       # TIM3/TIM4's clock on the board
DEBUG_INFO_VERSION = 6  # 6: board_inputs (the encoders, then the gyro's raw z) where 5 had board_encoders
DEBUG_INFO_ADDRESS = 0x08000188  # the image's debug descriptor: right after its 98-entry vector table
DEBUG_INFO_MAGIC = 0x52534D31    # "RSM1"
USART1_BRR = 0x40011008
SYST_RVR = 0xE000E014
PWM_TIMERS = (0x40000400, 0x40000800)  # TIM3, TIM4
BAUD_TOLERANCE = 0.025           # a UART receiver tolerates about 2.5 % between the two ends' rates
ICOUNT_SHIFT = 3                 # 2**3 = 8 ns of virtual time per instruction (125 MIPS, near a 168 MHz M4)
START_TIMEOUT = 20.0             # wall s for QEMU to start and the image to reach its first loop
STOP_TIMEOUT = 10.0              # wall s for one loop (the image hangs or crashed when it takes longer)
COUNTS_PER_REV = 8192            # FW_COUNTS_PER_REV (firmware/src/firmware.h), as HELLO_ACK reports it
MAX_RX_BYTES = 4096              # host bytes waiting for the MCU at most (a real USB CDC buffer is smaller)


class QemuError(RuntimeError):
    """QEMU is missing, the image does not boot, or it stopped answering: one line saying which."""


def _elf_cache() -> Path:
    return Path(os.environ.get('XDG_CACHE_HOME', Path.home() / '.cache')) / 'robotsim' / 'firmware'


def build_qemu_image(board_cflags: str = '', source_dir: Path | None = None, cache_dir: Path | None = None) -> Path:
    """The image for QEMU (``make qemu``), cached by the sources' hash and ``board_cflags``."""
    source_dir = source_dir or firmware_source_dir()
    files = sorted(p for p in source_dir.rglob('*') if p.suffix in ('.c', '.h', '.ld') or p.name == 'Makefile')
    digest = hashlib.sha256(board_cflags.encode())
    for path in files:
        digest.update(path.relative_to(source_dir).as_posix().encode() + path.read_bytes())
    cache_dir = cache_dir or _elf_cache()
    target = cache_dir / f'robotsim_fw_qemu-{digest.hexdigest()[:16]}.elf'
    if target.is_file():
        return target
    if shutil.which('arm-none-eabi-gcc') is None:
        raise FirmwareBuildError('arm-none-eabi-gcc missing: the MCU image needs it (Debian: gcc-arm-none-eabi, '
                                 'libnewlib-arm-none-eabi; scripts/setup.sh installs them)')
    cache_dir.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix='robotsim-fw-build-') as build:
        result = subprocess.run(['make', '-s', '-C', str(source_dir), 'qemu', f'BUILD={build}',
                                 f'BOARD_CFLAGS={board_cflags}'], capture_output=True, text=True)
        if result.returncode != 0:
            raise FirmwareBuildError(f'MCU image build failed: {result.stderr.strip()}')
        partial = target.with_suffix(f'.{os.getpid()}.tmp')
        shutil.copyfile(Path(build) / 'robotsim_fw_qemu.elf', partial)
        os.replace(partial, target)
    return target


class GdbRemote:
    """A client of the gdb remote serial protocol (the commands QEMU's stub answers that this needs)."""

    def __init__(self, sock: socket.socket, timeout: float = STOP_TIMEOUT):
        self.sock = sock
        self.timeout = timeout
        """Wall s an answer may take (a core running to its next stop included)."""
        self._buffer = b''  # (QEMU 7.2 has no no-ack mode: every packet is acknowledged with '+')

    def _send(self, data: bytes) -> None:
        self.sock.sendall(b'$%s#%02x' % (data, sum(data) % 256))

    def _receive(self, timeout: float) -> bytes:
        deadline = time.monotonic() + timeout
        while True:
            start = self._buffer.find(b'$')
            end = self._buffer.find(b'#', start)
            if start >= 0 and end >= 0 and len(self._buffer) >= end + 3:
                packet = self._buffer[start + 1:end]
                self._buffer = self._buffer[end + 3:]
                self.sock.sendall(b'+')
                return _run_length_decode(packet)
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise TimeoutError
            self.sock.settimeout(remaining)
            chunk = self.sock.recv(4096)
            if not chunk:
                raise ConnectionError('QEMU closed its gdb stub')
            self._buffer += chunk

    def command(self, data: bytes, timeout: float | None = None) -> bytes:
        timeout = self.timeout if timeout is None else timeout
        try:
            self._send(data)
            return self._receive(timeout)
        except (TimeoutError, ConnectionError, OSError) as error:
            raise QemuError(f"QEMU's gdb stub did not answer within {timeout:g} s of wall time (the image hangs, "
                            f'crashed, or QEMU stopped: {type(error).__name__})') from None

    def read(self, address: int, length: int) -> bytes:
        reply = self.command(b'm%x,%x' % (address, length))
        if reply.startswith(b'E') or len(reply) != 2 * length:
            raise QemuError(f'QEMU gdb stub: reading {length} bytes at 0x{address:08x} failed ({reply[:8]!r})')
        return bytes.fromhex(reply.decode())

    def write(self, address: int, data: bytes) -> None:
        reply = self.command(b'M%x,%x:%s' % (address, len(data), data.hex().encode()))
        if reply != b'OK':
            raise QemuError(f'QEMU gdb stub: writing at 0x{address:08x} failed ({reply[:8]!r})')

    def breakpoint(self, address: int, on: bool = True) -> None:
        if self.command(b'%s0,%x,2' % (b'Z' if on else b'z', address)) != b'OK':
            raise QemuError(f'QEMU gdb stub: no breakpoint at 0x{address:08x}')

    def resume(self, timeout: float | None = None) -> bytes:
        """Continue until the next stop; its stop reply."""
        return self.command(b'c', timeout)

    def monitor(self, text: str) -> None:
        self.command(b'qRcmd,' + text.encode().hex().encode())


def _run_length_decode(packet: bytes) -> bytes:
    if b'*' not in packet:
        return packet
    out = bytearray()
    i = 0
    while i < len(packet):
        if packet[i:i + 1] == b'*' and out:
            out += out[-1:] * (packet[i + 1] - 29)
            i += 2
        else:
            out.append(packet[i])
            i += 1
    return bytes(out)


_PRCTL = ctypes.CDLL(None, use_errno=True).prctl  # resolved here: the child of a fork must not load libraries
PR_SET_PDEATHSIG = 1


def _die_with_parent() -> None:
    _PRCTL(PR_SET_PDEATHSIG, signal.SIGKILL)  # QEMU dies with the simulator, however it dies


class QemuPlant:
    """What the simulator reads and writes of the board each loop (the host build's ``host_plant`` shape)."""

    def __init__(self):
        self.encoder = [0] * CHANNELS
        self.duty = [0.0] * CHANNELS
        self.brake = [1] * CHANNELS
        self.gyro_present = 1  # (the image always reads board_inputs.gyro)
        self.gyro = 0


class QemuFirmware:
    """One Netduino Plus 2 under QEMU running the firmware image; the same interface as
    :class:`robotsim_firmware.host_library.HostFirmware` (``plant``, ``receive``, ``transmitted``, ``advance``,
    ``reset``). Owns the QEMU process and its private socket folder; :meth:`close` ends both."""

    def __init__(self, image: Path | None = None, baud: int = 115200, qemu: str = QEMU,
                 icount_shift: int = ICOUNT_SHIFT, start_timeout: float = START_TIMEOUT,
                 stop_timeout: float = STOP_TIMEOUT):
        if shutil.which(qemu) is None:
            raise QemuError(f'{qemu} not found: the MCU image runs under QEMU (Debian: qemu-system-arm)')
        self.image = Path(image) if image is not None else build_qemu_image()
        if not self.image.is_file():
            raise QemuError(f'{self.image}: no such MCU image')
        self.baud = baud
        self.start_timeout, self.stop_timeout = start_timeout, stop_timeout
        self.plant = QemuPlant()
        self.counts_per_rev = COUNTS_PER_REV
        self.loop_hz = 0
        self.baud_problem: str | None = None
        """Why nothing crosses the serial wire (a baud rate mismatch), if so."""
        self.loops = 0
        self._folder = tempfile.mkdtemp(prefix='robotsim-qemu-')
        self._process: subprocess.Popen | None = None
        self.gdb: GdbRemote | None = None
        self._uart: socket.socket | None = None
        try:
            self._start(qemu, icount_shift)
            self.reset()
        except BaseException:
            self.close()
            raise

    def _start(self, qemu: str, icount_shift: int) -> None:
        gdb_path, uart_path = os.path.join(self._folder, 'gdb'), os.path.join(self._folder, 'uart')
        command = [qemu, '-M', MACHINE, '-kernel', str(self.image), '-nodefaults', '-display', 'none',
                   '-monitor', 'none', '-S', '-icount', f'shift={icount_shift},sleep=off',
                   '-chardev', f'socket,id=gdb,path={gdb_path},server=on,wait=off', '-gdb', 'chardev:gdb',
                   '-chardev', f'socket,id=uart,path={uart_path},server=on,wait=off', '-serial', 'chardev:uart']
        self._log = open(os.path.join(self._folder, 'qemu.log'), 'w+b')
        self._process = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=self._log, stderr=self._log,
                                         preexec_fn=_die_with_parent)
        deadline = time.monotonic() + self.start_timeout
        while not (os.path.exists(gdb_path) and os.path.exists(uart_path)):
            if self._process.poll() is not None:
                raise QemuError(f'{self.image.name}: QEMU exited ({self._process.returncode}): {self._qemu_says()}')
            if time.monotonic() > deadline:
                raise QemuError(f'{self.image.name}: QEMU did not open its sockets within {self.start_timeout:.0f} s')
            time.sleep(0.02)
        gdb_socket = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        gdb_socket.connect(gdb_path)
        self.gdb = GdbRemote(gdb_socket, self.stop_timeout)
        self._uart = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self._uart.connect(uart_path)
        self._uart.setblocking(False)
        info = struct.unpack('<10I', self.gdb.read(DEBUG_INFO_ADDRESS, 40))
        if info[0] != DEBUG_INFO_MAGIC or info[1] != DEBUG_INFO_VERSION:
            raise QemuError(f'{self.image.name}: no robotsim debug descriptor at 0x{DEBUG_INFO_ADDRESS:08x} '
                            '(not an image of firmware/mcu built for this board?)')
        self._sync_points = (info[2] & ~1, info[3] & ~1)  # board_sync_even, board_sync_odd (Thumb bit off)
        self._encoders, self._rx_expected, self._boot, self._stride_address = info[4], info[6], info[8] & ~1, info[9]
        self._stride: int | None = None  # loops between stops (None: not set since the last reset)
        self._armed = False  # breakpoints on both sync points

    def _arm(self, on: bool) -> None:
        """Breakpoints on both sync points (kept in place: QEMU retranslates code at every change of breakpoints, which
        costs more than stepping off one)."""
        if self._armed != on:
            for address in self._sync_points:
                self.gdb.breakpoint(address, on)
            self._armed = on

    def _qemu_says(self) -> str:
        self._log.seek(0)
        text = self._log.read().decode(errors='replace').strip().splitlines()
        return text[-1] if text else 'no output'

    def _stop_at_next_loop(self, timeout: float | None = None) -> None:
        timeout = self.stop_timeout if timeout is None else timeout
        try:
            reply = self.gdb.resume(timeout)
        except QemuError:
            raise QemuError(f'{self.image.name}: the image did not reach its next control loop within {timeout:g} s '
                            f'of wall time (it hangs, crashed, or QEMU stopped; QEMU says: {self._qemu_says()})') from None
        if not reply.startswith((b'T05', b'S05')):
            raise QemuError(f'{self.image.name}: QEMU stopped the core unexpectedly ({reply[:16]!r})')

    def reset(self) -> None:
        """Power-on reset: the core restarts the image and runs to its first control loop."""
        # Stop once before the firmware starts: its fw_init takes the speed loop's baseline from the encoders,
        # which must read where the wheels are (a reboot mid-drive, or after a world reset).
        self._arm(False)
        self.gdb.breakpoint(self._boot)
        self.gdb.monitor('system_reset')
        self._transmitted = []
        self._stop_at_next_loop(self.start_timeout)
        self.gdb.breakpoint(self._boot, on=False)
        self._write_encoders()
        self._arm(True)
        self._stop_at_next_loop(self.start_timeout)
        self._stride = None  # (the reboot set board_sync_stride back to 1)
        ticks = self._register(0)  # r0: the sync point's argument, the loop's number
        if ticks != 0:
            raise QemuError(f'{self.image.name}: the first stop was loop {ticks}, expected loop 0')
        self.loops = 0
        reload = struct.unpack('<I', self.gdb.read(SYST_RVR, 4))[0]
        if reload == 0:
            raise QemuError(f'{self.image.name}: SysTick not running at the first control loop (SYST_RVR = 0)')
        self.tick_cycles = reload + 1
        self.loop_hz = SYSCLK_HZ / self.tick_cycles
        brr = struct.unpack('<I', self.gdb.read(USART1_BRR, 4))[0] & 0xFFFF
        mcu_baud = APB2_HZ / brr if brr else 0.0
        self.mcu_baud = mcu_baud
        self.baud_problem = None
        if abs(mcu_baud / self.baud - 1.0) > BAUD_TOLERANCE:
            self.baud_problem = (f'baud rate mismatch: the MCU\'s USART1 runs at {mcu_baud:.0f} baud (BRR {brr}), the '
                                 f'link at {self.baud}: every byte is a framing error')
        self.time_ns = 0
        self._rx_sent = 0
        self.gdb.write(self._rx_expected, struct.pack('<I', 0))  # a simulator is here: loops wait for host bytes
        self._pwm_read()
        self.transmitted()  # (anything sent before the reset belongs to the old boot)

    def _register(self, number: int) -> int:
        reply = self.gdb.command(b'g')  # (QEMU 7.2's stub reads all core registers, not one: 'p' is empty)
        return struct.unpack('<I', bytes.fromhex(reply[8 * number:8 * number + 8].decode()))[0]

    def loop_time_ns(self, loop: int) -> int:
        """When control loop ``loop`` starts, in ns of the core's time since boot (SysTick's period)."""
        return loop * self.tick_cycles * 1_000_000_000 // SYSCLK_HZ

    def advance(self, dt_ns: int) -> int:
        """Run the loops that start before ``dt_ns`` more of sim time has passed; the loops run. The core stops only
        where a physics tick starts: with ticks of n loops, at every n-th loop (the image's board_sync_stride)."""
        self._write_encoders()
        self.time_ns += dt_ns
        end = self.loops
        while self.loop_time_ns(end) < self.time_ns:
            end += 1
        ran = end - self.loops
        if ran:
            if self._stride is None:
                self._set_stride(ran)
            elif ran % self._stride or self.loops % self._stride:
                self._set_stride(1)  # a tick of another length: a stop at every loop from here on
            while self.loops < end:
                self._resume_to(self.loops + self._stride)
        self._pwm_read()
        return ran

    def _set_stride(self, stride: int) -> None:
        self.gdb.write(self._stride_address, struct.pack('<I', stride))
        self._stride = stride

    def _resume_to(self, loop: int) -> None:
        """From the stop at ``self.loops``, run to the start of ``loop`` (the next multiple of the stride): one step off
        the breakpoint the core stopped on (the stub has no step-over), then on to the next sync point."""
        self.gdb.command(b's')
        self._stop_at_next_loop()
        self._transmitted.append(self._drain())  # (QEMU blocks on a serial socket nobody reads)
        self.loops = loop

    def _write_encoders(self) -> None:
        counts = [int(c) for c in self.plant.encoder]
        self.gdb.write(self._encoders, struct.pack(f'<{CHANNELS}ii', *counts, int(self.plant.gyro)))

    def _pwm_read(self) -> None:
        for index, base in enumerate(PWM_TIMERS):
            registers = struct.unpack('<17I', self.gdb.read(base, 0x44))
            arr, ccr = registers[0x2C // 4], registers[0x34 // 4:0x44 // 4]
            full = (arr & 0xFFFF) + 1
            for motor in range(2):
                forward, reverse = ccr[2 * motor], ccr[2 * motor + 1]
                channel = 2 * index + motor
                self.plant.brake[channel] = int(forward >= full and reverse >= full)
                duty = 0.0 if self.plant.brake[channel] else (min(forward, full) - min(reverse, full)) / full
                self.plant.duty[channel] = duty
        self.pwm_hz = APB1_TIMER_HZ / full  # (PSC read separately would refine this; the port uses PSC 0)

    def receive(self, data: bytes) -> int:
        """Host bytes onto the MCU's USART1 receive line; returns how many were taken."""
        if self.baud_problem or not data:
            return len(data)  # lost on the wire as framing errors
        data = data[:MAX_RX_BYTES]
        try:
            sent = self._uart.send(data)
        except BlockingIOError:
            return 0
        self._rx_sent = (self._rx_sent + sent) % 2**32
        self.gdb.write(self._rx_expected, struct.pack('<I', self._rx_sent))
        return sent

    def transmitted(self) -> bytes:
        """Bytes the MCU has written to USART1 since the last call."""
        data = b''.join(self._transmitted) + self._drain()
        self._transmitted = []
        return b'' if self.baud_problem else data

    def _drain(self) -> bytes:
        chunks = []
        while True:
            try:
                chunk = self._uart.recv(65536)
            except BlockingIOError:
                break
            if not chunk:
                break
            chunks.append(chunk)
        return b''.join(chunks)

    def close(self) -> None:
        for closable in (self._uart, self.gdb.sock if self.gdb else None):
            if closable is not None:
                closable.close()
        if self._process is not None and self._process.poll() is None:
            self._process.kill()
            self._process.wait()
        if getattr(self, '_log', None) is not None:
            self._log.close()
        shutil.rmtree(self._folder, ignore_errors=True)
