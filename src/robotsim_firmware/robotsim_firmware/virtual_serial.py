"""The MCU end of a pseudo-terminal: the bridge opens the other end exactly like /dev/ttyACM0.

A stable path (a symlink to /dev/pts/N, like socat's links) is created for the bridge. The link
can model the baud rate's byte budget and injected faults (drop every Nth host frame, link down).
ROS-free and simulator-free.
"""

from __future__ import annotations

import errno
import os
import termios
import tty


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
        self.path = link_path or self.device
        if link_path:
            os.makedirs(os.path.dirname(os.path.abspath(link_path)), exist_ok=True)
            if os.path.lexists(link_path):
                os.unlink(link_path)
            os.symlink(self.device, link_path)
        self.bytes_per_second = baud / 10.0  # 8N1: ten bits per byte
        self._budget = 0.0
        self._pending_out = bytearray()
        self._pending_in = bytearray()
        self.down = False
        self.drop_every = 0
        self._host_frames = 0
        self.dropped_frames = 0

    def transfer(self, to_host: bytes, dt: float) -> bytes:
        """Move one tick's bytes: ``to_host`` from the MCU out, and return what the host sent.

        At most the baud rate's worth of bytes per tick leaves the MCU; the rest waits."""
        if self.down:
            self._drain_host()  # the wire is cut: what the host sends is lost
            return b''
        self._pending_out += to_host
        self._budget = min(self._budget + self.bytes_per_second * dt, self.bytes_per_second)
        count = min(int(self._budget), len(self._pending_out))
        if count:
            try:
                written = os.write(self.master, bytes(self._pending_out[:count]))
            except OSError as error:
                if error.errno not in (errno.EAGAIN, errno.EIO):
                    raise
                written = 0  # nobody has the device open, or its buffer is full
            del self._pending_out[:written]
            self._budget -= written
        return self._filter_host(self._drain_host())

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

    def close(self) -> None:
        if self.path != self.device and os.path.islink(self.path):
            os.unlink(self.path)
        for fd in (self.master, self._slave):
            try:
                os.close(fd)
            except OSError:
                pass
