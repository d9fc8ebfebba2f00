"""The MCU end of a pseudo-terminal: the bridge opens the other end exactly like /dev/ttyACM0.

A stable path (a symlink to /dev/pts/N, like socat's links) is created for the bridge. The link
can model the baud rate's byte budget and injected faults (drop every Nth host frame, link down).
ROS-free and simulator-free: the motor bridge imports :func:`unowned_pty_reason` from here.

Ownership. A simulator killed with SIGKILL cannot remove its link, and the kernel later hands its
/dev/pts/N to an unrelated terminal. So the link comes with an owner file beside it
(``<link>.owner``: the simulator's pid and its pty) on which the simulator holds an exclusive
``flock`` for its whole life; the kernel drops that lock when the process dies, however it dies.
A bridge opens a pseudo-terminal only while a live owner vouches for exactly that pty. A real
serial device (/dev/ttyACM0) is no pseudo-terminal and needs no owner.

Device buffering (a USB CDC device): while the host does not read, the device cannot send; its
small transmit FIFO keeps the newest whole frames and drops the oldest. The device sends only
while the kernel holds nothing unread for the host (as USB sends only when the host asks), so at
most one FIFO's worth waits in the kernel: a bridge that connects late reads current data.

Time. Bytes from the host reach the MCU at the baud rate (ten bits a byte, 8N1) from the sim-time
instant they arrive at the link. Free running, they arrive at the tick the link finds them in the
pty: when the bridge process got the CPU decides that tick. In lockstep (:attr:`PtyLink.lockstep`)
they arrive only at :meth:`PtyLink.sync`, which the simulator calls at the start of every setpoint
period of the bridge (robotsim_firmware.base_commands.SETPOINT_PERIOD, on /clock): once the MCU has
answered a HELLO, the link waits for the host's SET_GAINS before that period's /clock goes out; once
the host sends setpoints, it waits after /clock for that period's SET_VELOCITY (its sequence byte the
period's number: one numbered for the period before came too late and is dropped). Each wait takes in
the host's bytes up to the frame it waited for; later bytes arrive at the next period. So what the
MCU receives, and when in sim time, depends on what the bridge sends, never on when it ran. A
bridge that does not answer within :data:`LOCKSTEP_TIMEOUT` (wall) s leaves the link free running
(said once) until its setpoints come again.
"""

from __future__ import annotations

import errno
import fcntl
import os
import select
import termios
import time
import tty

from . import protocol

OWNER_SUFFIX = '.owner'
DEVICE_FIFO_BYTES = 1024      # the MCU's USB transmit FIFO: about 15 telemetry frames (150 ms)
CLAIM_TIMEOUT = 2.0           # s: a bridge's ownership probe holds the owner file's lock only briefly
PTY_SLAVE_MAJORS = range(136, 144)  # Linux Unix98 pty slaves (/dev/pts/N)
LOCKSTEP_TIMEOUT = 5.0        # wall s a lockstep link waits for the host's frame (a loaded machine's bridge too)
NUDGE_PERIOD = 1.0            # wall s between repeats of the period's /clock while waiting (a best-effort /clock lost)
MAX_HELD_BYTES = 64 * 1024    # host bytes read past a waited-for frame, kept for the next period (bounded)


class LinkInUseError(RuntimeError):
    """Another live simulator owns this serial link path."""


def owner_path(link_path: str) -> str:
    return link_path + OWNER_SUFFIX


def is_pseudo_terminal(path: str) -> bool:
    try:
        rdev = os.stat(path).st_rdev
    except OSError:
        return False
    return os.path.realpath(path).startswith('/dev/pts/') or os.major(rdev) in PTY_SLAVE_MAJORS


def unowned_pty_reason(path: str) -> str | None:
    """Why the bridge must not open ``path`` (None: open it).

    A path that is no pseudo-terminal (a real serial device, or nothing yet) is left to the
    caller. A pseudo-terminal must be vouched for by a live owner: its owner file locked by a
    running simulator and naming this very pty. This never writes to, reads from or changes the
    terminal itself."""
    if not is_pseudo_terminal(path):
        return None
    device = os.path.realpath(path)
    owner = owner_path(path)
    try:
        fd = os.open(owner, os.O_RDONLY)
    except OSError:
        return (f'{path} -> {device} is a pseudo-terminal no simulator owns (no {owner}): '
                f'a stale link? not opening it')
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            pass  # held by its live owner
        else:
            fcntl.flock(fd, fcntl.LOCK_UN)
            return (f'{path} -> {device} is a pseudo-terminal whose simulator is gone ({owner} is not held): '
                    f'a stale link? not opening it')
        fields = os.read(fd, 4096).decode(errors='replace').split()
    finally:
        os.close(fd)
    if len(fields) != 2 or fields[1] != device:
        return f'{path} -> {device} is not the pseudo-terminal its simulator owns ({" ".join(fields) or "starting"})'
    return None


class LinkOwner:
    """The simulator's claim on a link path: the owner lock, then the symlink replaced atomically."""

    def __init__(self, link_path: str, device: str):
        self.link_path, self.device = link_path, device
        self.lock_path = owner_path(link_path)
        os.makedirs(os.path.dirname(os.path.abspath(link_path)), exist_ok=True)
        self.fd = self._lock()
        os.ftruncate(self.fd, 0)
        os.write(self.fd, f'{os.getpid()} {device}\n'.encode())
        # A stale link (or one being read right now) is replaced in one rename: a bridge sees the
        # old target or the new one, never a missing or half-made link.
        temporary = f'{link_path}.{os.getpid()}.tmp'
        if os.path.lexists(temporary):
            os.unlink(temporary)
        os.symlink(device, temporary)
        os.replace(temporary, link_path)

    def _lock(self) -> int:
        deadline = time.monotonic() + CLAIM_TIMEOUT
        while True:
            fd = os.open(self.lock_path, os.O_RDWR | os.O_CREAT, 0o644)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                holder = os.read(fd, 4096).decode(errors='replace').split()
                os.close(fd)
                if time.monotonic() > deadline:
                    raise LinkInUseError(f'serial link {self.link_path} is in use by a running simulator'
                                         f'{" (pid " + holder[0] + ")" if holder else ""}') from None
                time.sleep(0.05)
                continue
            try:
                same_file = os.fstat(fd).st_ino == os.stat(self.lock_path).st_ino
            except FileNotFoundError:
                same_file = False
            if same_file:
                return fd
            os.close(fd)  # its previous owner removed it between our open and our lock: start over

    def release(self) -> None:
        try:
            if os.path.islink(self.link_path) and os.readlink(self.link_path) == self.device:
                os.unlink(self.link_path)
            os.unlink(self.lock_path)  # while still holding the lock: a newcomer then makes a new file
        except OSError:
            pass
        os.close(self.fd)


class PtyLink:
    def __init__(self, link_path: str | None = None, baud: int = 115200):
        self.master, self._slave = os.openpty()
        # Raw mode on the device side: no echo, no line discipline (a USB CDC ACM port behaves so).
        tty.setraw(self._slave)
        attributes = termios.tcgetattr(self._slave)
        speed = getattr(termios, f'B{baud}', termios.B115200)
        attributes[4] = attributes[5] = speed
        termios.tcsetattr(self._slave, termios.TCSANOW, attributes)
        os.set_blocking(self.master, False)
        self.device = os.ttyname(self._slave)
        self._host_input = select.poll()  # the host side's unread input (the sim's own fd, never read)
        self._host_input.register(self._slave, select.POLLIN)
        self.path = link_path or self.device
        self.owner = None
        if link_path:
            try:
                self.owner = LinkOwner(link_path, self.device)
            except BaseException:
                self._close_fds()
                raise
        self.bytes_per_second = baud / 10.0  # 8N1: ten bits per byte
        self._budget = 0.0
        self._pending_out = bytearray()
        self._mid_frame = False  # the last byte written was inside a frame: its rest must follow
        self._pending_in = bytearray()
        self.down = False
        self.drop_every = 0
        self._host_frames = 0
        self.dropped_frames = 0
        self.unread_frames_dropped = 0  # frames to the host the device FIFO dropped (nobody reading)
        self.lockstep = False
        """Host bytes arrive at :meth:`sync` only (see the module docstring); False: at any tick."""
        self._arrived = bytearray()      # at the link: to the MCU at the baud rate
        self._in_budget = 0.0
        self._held = bytearray()         # read from the pty past a waited-for frame: arrives at the next sync
        self._host_readable = select.poll()  # the host's bytes for the MCU (on the master)
        self._host_readable.register(self.master, select.POLLIN)
        self._to_host = protocol.FrameParser()  # the MCU's frames as written: a HELLO_ACK is answered by SET_GAINS
        self._awaiting_gains = False
        self._host_sends_setpoints = False
        self._mcu_rebooted = False   # an MCU reset while the host sent setpoints: its next telemetry shows it
        self._awaiting_hello = False  # ... and the host answers that telemetry with HELLO
        self.lockstep_misses = 0
        """Syncs at which the host's frame did not come within LOCKSTEP_TIMEOUT."""
        self.stale_setpoints = 0
        """SET_VELOCITY frames numbered for the period before the one waited for, dropped (:meth:`after_clock`)."""

    def transfer(self, to_host: bytes, dt: float) -> bytes:
        """Move one tick's bytes: ``to_host`` from the MCU out, and return what the host sent.

        At most the baud rate's worth of bytes per tick leaves the MCU; the rest waits in the
        device FIFO, and while the host does not read, the FIFO keeps only the newest frames."""
        if self.down:
            self._drain_host()  # the wire is cut: what the host sends is lost
            self._held.clear()
            self._arrived.clear()
            return b''
        self._pending_out += to_host
        self._budget = min(self._budget + self.bytes_per_second * dt, self.bytes_per_second)
        # In lockstep the host reads at every sync (it answers there): no wall-time gate on sending.
        gated = not self.lockstep and self._unread_by_host()
        count = 0 if gated else min(int(self._budget), len(self._pending_out))
        if count:
            try:
                written = os.write(self.master, bytes(self._pending_out[:count]))
            except OSError as error:
                if error.errno not in (errno.EAGAIN, errno.EIO):
                    raise
                written = 0  # the pty's buffer is full
            if written:
                self._mid_frame = self._pending_out[written - 1] != 0
                if self.lockstep:
                    kinds = {payload[0] for payload in self._to_host.feed(bytes(self._pending_out[:written]))}
                    self._awaiting_gains = self._awaiting_gains or protocol.HELLO_ACK in kinds
                    if self._mcu_rebooted and protocol.TELEMETRY in kinds:
                        self._mcu_rebooted, self._awaiting_hello = False, True
            del self._pending_out[:written]
            self._budget -= written
        self._bound_fifo()
        if not self.lockstep:
            self._arrive(self._drain_host())
        return self._deliver(dt)

    def _arrive(self, data: bytes) -> None:
        self._arrived += self._filter_host(data)

    def _deliver(self, dt: float) -> bytes:
        """What reaches the MCU this tick: the arrived bytes, at most the baud rate's worth (an idle
        line saves nothing up)."""
        if not self._arrived:
            self._in_budget = 0.0
            return b''
        self._in_budget += self.bytes_per_second * dt
        count = min(int(self._in_budget), len(self._arrived))
        self._in_budget -= count
        out = bytes(self._arrived[:count])
        del self._arrived[:count]
        if not self._arrived:
            self._in_budget = 0.0
        return out

    # ------------------------------------------------------------------ lockstep
    def mcu_rebooted(self) -> None:
        """The MCU has just reset. A host in session notices it in the next telemetry and says HELLO
        again: in lockstep the next sync after that telemetry waits for the HELLO."""
        self._mcu_rebooted = self.lockstep and self._host_sends_setpoints
        self._awaiting_hello = False

    def before_clock(self, timeout: float = LOCKSTEP_TIMEOUT) -> str | None:
        """A setpoint period starts, its /clock not sent yet: when the MCU's telemetry has shown the host
        a reset, wait for its HELLO; when the MCU has answered a HELLO since the last sync, wait for the
        host's SET_GAINS (the bridge sends it on reading the answer, and from then on a setpoint every
        period). Neither depends on /clock. Returns why the link left lockstep, if it did."""
        if not self.lockstep or self.down:
            return None
        if self._awaiting_hello:
            self._awaiting_hello = False
            if not self._receive_through(protocol.HELLO, timeout):
                self._host_sends_setpoints = False
                self.lockstep_misses += 1
                return (f'link not in lockstep: no HELLO from the host within {timeout:g} s of the telemetry '
                        'after an MCU reset; its bytes arrive as they come until its setpoints do')
        if not self._awaiting_gains:
            return None
        self._awaiting_gains = False
        if self._receive_through(protocol.SET_GAINS, timeout):
            self._host_sends_setpoints = True
            return None
        self._host_sends_setpoints = False
        self.lockstep_misses += 1
        return (f'link not in lockstep: no SET_GAINS from the host within {timeout:g} s of the MCU\'s HELLO_ACK; '
                'its bytes arrive as they come until its setpoints do')

    def after_clock(self, timeout: float = LOCKSTEP_TIMEOUT, nudge=lambda: None, period: int | None = None) -> str | None:
        """The period's /clock is out: wait for the host's SET_VELOCITY of this period (once it sends
        setpoints); otherwise take what the host has sent by now. ``nudge()`` sends the period's /clock
        again, every NUDGE_PERIOD of waiting (time sources take /clock best effort: one can be lost).
        ``period``: the period's number (/clock time // SETPOINT_PERIOD). The bridge gives each setpoint the
        number of the period it is for as its sequence byte (mod 256); a setpoint numbered for the period
        before, sent late (a bridge that read the MCU's HELLO_ACK before the /clock published just before
        it), is for a period already simulated: it is dropped (:attr:`stale_setpoints`) instead of being
        taken as this period's. Returns why the link left lockstep, if it did."""
        if not self.lockstep:
            return None
        if self.down:
            self._drain_host()
            self._held.clear()
            return None
        if self._host_sends_setpoints:
            stale = None if period is None else (period - 1) & 0xFF
            if self._receive_through(protocol.SET_VELOCITY, timeout, nudge, stale):
                return None
            self._host_sends_setpoints = False
            self.lockstep_misses += 1
            return (f'link not in lockstep: no SET_VELOCITY from the host within {timeout:g} s of /clock; '
                    'its bytes arrive as they come until its setpoints do')
        self._held += self._drain_host()
        taken = bytes(self._held)
        self._held.clear()
        self._arrive(taken)
        self._host_sends_setpoints = any(p[0] == protocol.SET_VELOCITY for p in protocol.FrameParser().feed(taken))
        return None

    def _receive_through(self, kind: int, timeout: float, nudge=lambda: None, stale: int | None = None) -> bool:
        """Wait (at most ``timeout`` wall s) until a whole frame of ``kind`` has come from the host; the
        bytes up to its end arrive now, the rest waits for the next sync. False: it did not come (what
        did arrives now). ``nudge()`` is called every NUDGE_PERIOD of waiting. Frames of ``kind`` with the
        sequence byte ``stale`` are dropped on the way."""
        deadline = time.monotonic() + timeout
        next_nudge = time.monotonic() + NUDGE_PERIOD
        while True:
            if time.monotonic() >= next_nudge:
                nudge()
                next_nudge += NUDGE_PERIOD
            end = self._end_of_frame(kind, stale)
            if end is not None:
                self._arrive(bytes(self._held[:end]))
                del self._held[:end]
                return True
            remaining = deadline - time.monotonic()
            if remaining <= 0 or len(self._held) > MAX_HELD_BYTES:
                self._arrive(bytes(self._held))
                self._held.clear()
                return False
            if self._host_readable.poll(max(1, min(100, int(remaining * 1000)))):
                self._held += self._drain_host()

    def _end_of_frame(self, kind: int, stale: int | None = None) -> int | None:
        """The end (after its delimiter) of the first whole, valid frame of ``kind`` in the held bytes; frames
        of ``kind`` with the sequence byte ``stale`` before it are taken out of the held bytes."""
        start = 0
        while (end := self._held.find(0, start)) >= 0:
            payloads = protocol.FrameParser().feed(bytes(self._held[start:end + 1]))
            if payloads and payloads[0][0] == kind:
                if payloads[0][1] != stale:  # (a valid payload holds its type and sequence bytes at least)
                    return end + 1
                del self._held[start:end + 1]
                self.stale_setpoints += 1
                continue
            start = end + 1
        return None

    def _unread_by_host(self) -> bool:
        """Whether bytes wait in the kernel for the bridge to read. (poll() on a tty first completes
        the kernel's asynchronous hand-over of written bytes when it sees none yet, so this is
        exact; TIOCINQ misses bytes still being handed over.)"""
        return bool(self._host_input.poll(0))

    def _bound_fifo(self) -> None:
        """Drop the oldest whole frames beyond DEVICE_FIFO_BYTES, never the rest of a frame whose
        start is already on the wire (the host would get a corrupted frame)."""
        if len(self._pending_out) <= DEVICE_FIFO_BYTES:
            return
        keep = 0
        if self._mid_frame:  # the head of the FIFO is the rest of a frame already partly sent
            end = self._pending_out.find(0)
            keep = end + 1 if end >= 0 else len(self._pending_out)
        cut = keep
        while len(self._pending_out) - (cut - keep) > DEVICE_FIFO_BYTES:
            end = self._pending_out.find(0, cut)
            if end < 0:
                break
            cut = end + 1
            self.unread_frames_dropped += 1
        del self._pending_out[keep:cut]

    def _drain_host(self) -> bytes:
        chunks = []
        while True:
            try:
                chunk = os.read(self.master, 4096)
            except OSError as error:
                if error.errno in (errno.EAGAIN, errno.EIO):  # nothing to read / device not open
                    break
                raise
            if not chunk:
                break
            chunks.append(chunk)
        return b''.join(chunks)

    def _filter_host(self, data: bytes) -> bytes:
        if not self.drop_every:
            return data
        out = bytearray()
        self._pending_in += data
        while True:
            end = self._pending_in.find(0)
            if end < 0:
                break
            frame = bytes(self._pending_in[:end + 1])
            del self._pending_in[:end + 1]
            self._host_frames += 1
            if self._host_frames % self.drop_every == 0:
                self.dropped_frames += 1
                continue
            out += frame
        return bytes(out)

    def _close_fds(self) -> None:
        for fd in (self.master, self._slave):
            try:
                os.close(fd)
            except OSError:
                pass

    def close(self) -> None:
        if self.owner is not None:
            self.owner.release()
            self.owner = None
        self._close_fds()
