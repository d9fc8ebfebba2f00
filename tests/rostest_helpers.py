"""Helpers for integration tests: start robotsim nodes as real subprocesses and observe them
with a plain rclpy node in the test process."""

from __future__ import annotations

import ctypes
import math
import os
import re
import signal
import subprocess
import sys
import threading
import time
from collections import defaultdict
from pathlib import Path

import rclpy
from rclpy.executors import SingleThreadedExecutor
from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy

from robotsim_core.processes import interrupt  # noqa: F401  (tests stop processes as the launcher does)

WORKSPACE = Path(__file__).resolve().parents[1]
VENV = Path(os.environ.get('ROBOTSIM_VENV') or WORKSPACE / '.venv')
"""The distro's venv (scripts/distro.sh: .venv for Kilted, .venv-jazzy for Jazzy)."""
INSTALL = Path(os.environ.get('ROBOTSIM_INSTALL') or WORKSPACE / 'install')
"""The distro's colcon install tree."""
BUILD = Path(os.environ.get('ROBOTSIM_BUILD') or WORKSPACE / 'build')
"""The distro's colcon build tree."""
DISTRO = os.environ.get('ROBOTSIM_DISTRO', 'kilted')


def _die_with_parent() -> None:
    PR_SET_PDEATHSIG = 1
    ctypes.CDLL('libc.so.6', use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
    # A child starts with the signal state a user's shell gives it, whatever this test process's threads and
    # earlier tests left: nothing blocked (a mask survives exec), Ctrl-C and SIGTERM not ignored.
    signal.pthread_sigmask(signal.SIG_SETMASK, set())
    for number in (signal.SIGINT, signal.SIGTERM):
        signal.signal(number, signal.SIG_DFL)


def signal_state(pid: int) -> str:
    """What /proc says of a process's signals and threads (for a test whose process did not stop on Ctrl-C)."""
    try:
        status = Path(f'/proc/{pid}/status').read_text()
        lines = [line for line in status.splitlines() if line.startswith(('State', 'Sig', 'Shd', 'Threads'))]
        for task in sorted(Path(f'/proc/{pid}/task').iterdir()):
            stat = (task / 'stat').read_text().rsplit(')', 1)[1].split()
            wchan = (task / 'wchan').read_text() if (task / 'wchan').exists() else '?'
            lines.append(f'thread {task.name}: state {stat[0]}, wchan {wchan}')
        return '; '.join(lines)
    except OSError as error:
        return f'no /proc state ({error})'


def executable(package: str, name: str) -> str:
    return str(INSTALL / package / 'lib' / package / name)




def wait_until_it_catches_sigint(process: subprocess.Popen, timeout: float = 60.0) -> None:
    """Wait until ``process`` has a handler for SIGINT (/proc/PID/status SigCgt), or has exited. A signal sent
    earlier is lost without trace on a loaded machine: between fork and exec the child still runs this test
    process's Python, whose C-level handler only notes the signal for an interpreter that exec then replaces."""
    deadline = time.monotonic() + timeout
    bit = 1 << (signal.SIGINT - 1)
    while process.poll() is None and time.monotonic() < deadline:
        try:
            status = Path(f'/proc/{process.pid}/status').read_text()
        except OSError:
            return
        caught = re.search(r'^SigCgt:\s*([0-9a-fA-F]+)', status, re.M)
        try:  # before exec the child's command line is still this process's
            exec_done = Path(f'/proc/{process.pid}/cmdline').read_bytes() != Path('/proc/self/cmdline').read_bytes()
        except OSError:
            return
        if exec_done and caught and int(caught.group(1), 16) & bit:
            return
        time.sleep(0.02)


class NodeProcess:
    """A robotsim node in its own process; stopped with SIGINT (then SIGKILL) on exit."""

    def __init__(self, package: str, name: str, params: dict | None = None, namespace: str = ''):
        args = [executable(package, name), '--ros-args']
        for key, value in (params or {}).items():
            text = str(value).lower() if isinstance(value, bool) else str(value)
            args += ['-p', f'{key}:={text}']
        if namespace:
            args += ['-r', f'__ns:=/{namespace}']
        self.log_path = Path(os.environ.get('PYTEST_TMPDIR', '/tmp')) / f'{name}-{os.getpid()}-{time.monotonic_ns()}.log'
        self.log = open(self.log_path, 'w+')
        # If the test process dies (even by abort), the kernel stops the node too: no orphans
        # left to load the machine for the tests after.
        self.process = subprocess.Popen(args, stdout=self.log, stderr=subprocess.STDOUT, text=True,
                                        preexec_fn=_die_with_parent)

    def output(self) -> str:
        if not self.log.closed:
            self.log.flush()
        return self.log_path.read_text()

    def stop(self) -> int:
        """Ctrl-C; a node still there after 30 s prints its threads' stacks into its log (SIGUSR1,
        see run_node) before it is killed, so a hung stop says where it hung."""
        if self.process.poll() is None:
            wait_until_it_catches_sigint(self.process)
            self.process.send_signal(signal.SIGINT)
            try:
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.process.send_signal(signal.SIGUSR1)
                time.sleep(2)
                self.process.kill()
                self.process.wait()
        self.log.close()
        return self.process.returncode

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.stop()


SENSOR = QoSProfile(depth=50, reliability=ReliabilityPolicy.BEST_EFFORT)
RELIABLE = QoSProfile(depth=200, reliability=ReliabilityPolicy.RELIABLE)
LATCHED = QoSProfile(depth=1, reliability=ReliabilityPolicy.RELIABLE, durability=DurabilityPolicy.TRANSIENT_LOCAL)


class Observer:
    """A plain rclpy node that records every message on the topics it is told to watch."""

    def __init__(self, name: str = 'observer'):
        # A context of its own (its own DDS participant): topic types and leftovers from other
        # observers in this test process cannot interfere.
        self.context = rclpy.Context()
        rclpy.init(context=self.context)
        self.node = rclpy.create_node(f'{name}_{os.getpid()}', context=self.context)
        self.executor = SingleThreadedExecutor(context=self.context)
        self.executor.add_node(self.node)
        self.messages: dict[str, list] = defaultdict(list)
        self.watched: set[str] = set()
        self.clients: dict = {}

    def watch(self, topic: str, msg_type, qos=RELIABLE, raw: bool = False) -> None:
        """Record ``topic`` (``raw``: the serialized bytes as they came off the wire); watching a
        topic twice keeps the first subscription (no double counting)."""
        if topic in self.watched:
            return
        self.watched.add(topic)
        self.node.create_subscription(msg_type, topic, lambda msg, t=topic: self.messages[t].append(msg), qos,
                                      raw=raw)

    def spin_until(self, condition, timeout: float = 20.0) -> bool:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if condition():
                return True
            self.executor.spin_once(timeout_sec=0.05)
        return condition()

    def drain(self, quiet: float = 0.5, limit: float = 15.0) -> None:
        """Take what is still queued (publishers stopped): spin until nothing arrived for ``quiet`` s, at most
        ``limit`` s. A loaded observer takes queued messages topic by topic, so one topic's newest message can be
        taken while an older one of another topic still waits."""
        deadline = time.monotonic() + limit
        total, since = sum(map(len, self.messages.values())), time.monotonic()
        while time.monotonic() < min(deadline, since + quiet):
            self.executor.spin_once(timeout_sec=0.02)
            if (now := sum(map(len, self.messages.values()))) != total:
                total, since = now, time.monotonic()

    def spin_for(self, seconds: float) -> None:
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            self.executor.spin_once(timeout_sec=0.02)

    def call(self, srv_type, name: str, request, timeout: float = 30.0, resend_every: float | None = None,
             context=lambda: ''):
        """The response to ``request`` on service ``name`` within ``timeout`` s (wall clock).

        ``resend_every``: for requests that are safe to repeat (a plan, a query), send the request
        again after that many seconds without an answer. A server that has not yet discovered a
        fresh client's response reader drops its answer (DDS matches the two directions of a
        service separately, and ``wait_for_service`` only sees the request side); on a loaded
        machine that window lasts seconds. The first answer to any copy is returned.
        ``context``: called for the failure message (e.g. the server's log)."""
        # One client per service, kept for the observer's life (destroying a client the executor
        # still waits on aborts the process).
        client = self.clients.get(name) or self.clients.setdefault(name, self.node.create_client(srv_type, name))
        assert client.wait_for_service(timeout_sec=timeout), f'service {name} not available\n{context()}'
        deadline = time.monotonic() + timeout
        futures = []
        while time.monotonic() < deadline:
            futures.append(client.call_async(request))
            wait = deadline - time.monotonic() if resend_every is None else min(resend_every, deadline - time.monotonic())
            self.spin_until(lambda: any(future.done() for future in futures), max(wait, 0.0))
            answered = [future for future in futures if future.done()]
            if answered:
                return answered[0].result()
        raise AssertionError(f'service {name} did not answer {len(futures)} request(s) within {timeout:g} s\n{context()}')

    def of_node(self, query: str, node: str, namespace: str = '/', timeout: float = 60.0) -> list:
        """What the graph query ``query`` (e.g. ``get_subscriber_names_and_types_by_node``) says of ``node``, once
        the node is in this observer's graph: a node's endpoints (a service answering, a topic matched) can be
        discovered before its participant information, and rclpy's by-node queries raise for a node not yet known."""
        assert self.spin_until(lambda: (node, namespace) in self.node.get_node_names_and_namespaces(), timeout), \
            f'node {namespace.rstrip("/")}/{node} not in the graph within {timeout:g} s'
        return getattr(self.node, query)(node, namespace)

    def close(self) -> None:
        self.executor.shutdown()
        self.node.destroy_node()
        rclpy.shutdown(context=self.context)


def stamp_seconds(stamp) -> float:
    return stamp.sec + stamp.nanosec * 1e-9


def yaw_of(q) -> float:
    return math.atan2(2 * (q.w * q.z + q.x * q.y), 1 - 2 * (q.y * q.y + q.z * q.z))


def wait_until_publishing(topic: str, msg_type, count: int = 10, timeout: float = 90) -> None:
    """Return once ``topic`` has delivered ``count`` messages (the robot is up: simulator and bridge
    take a moment to start)."""
    obs = Observer('wait_until_publishing')
    try:
        obs.watch(topic, msg_type, RELIABLE)
        assert obs.spin_until(lambda: len(obs.messages[topic]) >= count, timeout), f'{topic} never came up'
    finally:
        obs.close()


class Launch:
    """A bringup (`robotsim launch ...` or scripts/run-sim.sh) in a subprocess, its output collected live."""

    def __init__(self, args: list[str], env: dict | None = None, session: bool = False):
        """``session``: in a session and process group of its own, as a terminal starts a command (so a test can
        send Ctrl-C to the whole group, as the terminal does)."""
        self.process = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                                        env={**os.environ, **(env or {})}, preexec_fn=_die_with_parent,
                                        start_new_session=session)
        self.lines: list[str] = []
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self):
        for line in self.process.stdout:
            self.lines.append(line.rstrip('\n'))

    @property
    def text(self) -> str:
        return '\n'.join(self.lines)

    def wait_for(self, pattern: str, timeout: float) -> re.Match:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for line in list(self.lines):
                if (match := re.search(pattern, line)):
                    return match
            if self.process.poll() is not None and not self.reader.is_alive():
                break
            time.sleep(0.1)
        raise AssertionError(f'no line matching {pattern!r} in:\n{self.text}')

    def pid_of(self, label: str) -> int:
        return int(self.wait_for(rf'started {re.escape(label)} \(.*pid (\d+)\)', 30).group(1))

    def finish(self, timeout: float = 60) -> int:
        code = self.process.wait(timeout=timeout)
        self.reader.join(timeout=5)
        return code

    def stop(self):
        wait_until_it_catches_sigint(self.process)
        self.process.send_signal(signal.SIGINT)
        try:
            self.process.wait(timeout=30)
        except subprocess.TimeoutExpired:  # said in self.text: what the process was doing when Ctrl-C did not stop it
            self.lines.append(f'[test harness] no exit within 30 s of Ctrl-C: {signal_state(self.process.pid)}')
            self.process.kill()
            self.process.wait()


def published_counts(run: Launch, timeout: float = 5) -> dict[str, int]:
    """topic -> messages the simulator says it published (its report line at exit), plus what each motor
    bridge says it published (firmware in the loop: it publishes /joint_states beside the simulator)."""
    line = run.wait_for(r'robotsim_sim.*published messages: (.*)', timeout).group(1)
    counts = {topic: int(count) for topic, count in re.findall(r'(/[\w/]+) (\d+)', line)}
    for bridge in re.findall(r'\[motor_bridge\] published messages: (.*)', run.text):
        for topic, count in re.findall(r'(/[\w/]+) (\d+)', bridge):
            counts[topic] = counts.get(topic, 0) + int(count)
    return counts


def assert_recorded_everything_published(recorded: dict[str, int], published: dict[str, int]) -> None:
    """A bag (``recorded``: topic -> message count) holds every message the simulator published."""
    assert set(published) <= set(recorded), (published, recorded)
    for topic, count in published.items():
        if topic == '/tf':  # the state publisher adds its own /tf messages
            assert recorded[topic] >= count, (topic, recorded[topic], count)
        elif topic == '/sim/status':  # a wall-time status, also sent before the recorder subscribed
            assert 0 < recorded[topic] <= count, (topic, recorded[topic], count)
        else:
            assert recorded[topic] == count, (topic, recorded[topic], count)


class CpuHog:
    """A busy-loop subprocess that occupies one core (a loaded machine) for at most ``seconds``;
    stopped on exit, and by the kernel if the test process dies."""

    def __init__(self, seconds: float = 300.0):
        program = f'import time\nend = time.monotonic() + {float(seconds)}\nwhile time.monotonic() < end:\n    pass\n'
        self.process = subprocess.Popen(['python3', '-c', program], preexec_fn=_die_with_parent)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.process.kill()
        self.process.wait()


PEAK_RSS_WRAPPER = ('import resource, subprocess, sys\n'
                    'done = subprocess.run(sys.argv[1:], capture_output=True, text=True)\n'
                    'print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)\n'
                    'sys.stderr.write(done.stderr)\n'
                    'sys.exit(done.returncode)\n')


def run_measuring_peak_rss(args: list[str], timeout: float = 300) -> tuple[subprocess.CompletedProcess, int]:
    """Run ``args`` under a wrapper process of its own and return (its result, the command's peak RSS in KiB):
    a memory bound a test can assert, whatever else the test process ran before."""
    completed = subprocess.run([sys.executable, '-c', PEAK_RSS_WRAPPER, *args], capture_output=True, text=True,
                               timeout=timeout)
    return completed, int(completed.stdout.strip() or 0)
