"""Loopback only, at the packet level: during a bringup, no RTPS (DDS) packet leaves on any interface but
loopback. tcpdump captures, on every other interface, UDP datagrams whose payload starts with the RTPS
magic ("RTPS") for the whole run, and on the loopback interface as the control (the same filter sees the
run's own discovery traffic there, so a capture that sees nothing elsewhere is not a capture that sees
nothing at all). What keeps it so: ROS_AUTOMATIC_DISCOVERY_RANGE=LOCALHOST and the Fast DDS profile
(config/dds/fastdds_localhost.xml: shared memory, and UDP on 127.0.0.1 only, no built-in transports).
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import time
from pathlib import Path

import pytest

from rostest_helpers import Launch

RTPS = 'udp and udp[8:4] = 0x52545053'  # the 4 bytes after the UDP header: "RTPS"

needs_tcpdump = pytest.mark.skipif(shutil.which('tcpdump') is None or os.geteuid() != 0,
                                   reason='tcpdump (requirements/debian-test.txt) and root are needed to capture')


def interfaces() -> list[str]:
    """The interfaces that are up (IFF_UP in their flags): those a packet could leave by."""
    up = []
    for name in sorted(os.listdir('/sys/class/net')):
        try:
            flags = int((Path('/sys/class/net') / name / 'flags').read_text(), 16)
        except (OSError, ValueError):
            continue
        if flags & 0x1:
            up.append(name)
    return up


def capture(interface: str, out: Path) -> subprocess.Popen:
    process = subprocess.Popen(['tcpdump', '-i', interface, '-n', '-U', '-w', str(out), RTPS],
                               stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    return process


def packets(pcap: Path) -> int:
    read = subprocess.run(['tcpdump', '-n', '-r', str(pcap)], capture_output=True, text=True, timeout=60)
    return len([line for line in read.stdout.splitlines() if line.strip()])


@needs_tcpdump
def test_no_rtps_packet_leaves_the_loopback_interface(tmp_path):
    names = interfaces()
    assert 'lo' in names
    captures = {name: (tmp_path / f'{name}.pcap') for name in names}
    running = {name: capture(name, path) for name, path in captures.items()}
    try:
        time.sleep(1.0)  # tcpdump listening on every interface
        for name, process in running.items():
            assert process.poll() is None, f'tcpdump on {name}: {process.stderr.read()}'
        run = Launch(['robotsim', 'launch', 'sim', 'duration:=4', 'cameras:=false', 'demo:=true'])
        try:
            assert run.finish(timeout=240) == 0, run.text
        finally:
            run.stop()
        time.sleep(0.5)
    finally:
        for process in running.values():
            process.send_signal(signal.SIGINT)
        for process in running.values():
            process.wait(timeout=30)
    seen = {name: packets(path) for name, path in captures.items()}
    assert seen['lo'] > 0, f'the capture saw no RTPS packet on loopback either: it proves nothing ({seen})'
    outside = {name: count for name, count in seen.items() if name != 'lo' and count}
    assert not outside, f'RTPS packets left the machine: {outside}'
