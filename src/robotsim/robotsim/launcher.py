"""Bare-machine launcher: runs a :func:`robotsim.bringup.node_graph` as processes.

For machines without the ``launch`` package (the PyPI wheels do not ship it). Like ``ros2
launch``: each node is started from ``<prefix>/lib/<package>/<executable>`` found through
AMENT_PREFIX_PATH, with its node name, namespace, parameters (a params file, so any value type
survives) and remappings; its output is prefixed ``[name]``; Ctrl-C / SIGTERM / SIGHUP are forwarded;
when a required node exits, everything stops and the launcher returns that node's status
(non-zero if it failed).
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time

import yaml

from robotsim_core.processes import die_with_parent

from .bringup import NodeSpec, find_executable


class LaunchError(RuntimeError):
    """A node of the graph cannot be started (executable not installed)."""


def params_document(spec: NodeSpec) -> dict:
    """The node's parameters as a ROS 2 params file (``/**`` matches the node whatever its namespace)."""
    return {'/**': {'ros__parameters': dict(spec.parameters)}}


def command_line(spec: NodeSpec, executable: str, params_file: str) -> list[str]:
    args = [executable, *spec.arguments, '--ros-args', '-r', f'__node:={spec.name}']
    if spec.namespace:
        args += ['-r', f'__ns:=/{spec.namespace.strip("/")}']
    if spec.parameters:
        args += ['--params-file', params_file]
    for source, target in spec.remappings:
        args += ['-r', f'{source}:={target}']
    return args


class _Running:
    def __init__(self, spec: NodeSpec, process: subprocess.Popen):
        self.spec, self.process = spec, process
        self.pump = threading.Thread(target=self._prefix_output, daemon=True)
        self.pump.start()

    def _prefix_output(self) -> None:
        tag = f'[{self.spec.label}] '
        for line in self.process.stdout:
            try:
                sys.stdout.write(tag + line if line.endswith('\n') else tag + line + '\n')
                sys.stdout.flush()
            except OSError:  # the terminal hung up: keep draining, or the node blocks on a full pipe
                pass


def say(message: str) -> None:
    try:
        print(f'[robotsim] {message}', flush=True)
    except OSError:  # the terminal hung up (SIGHUP): stopping the nodes cleanly matters more
        pass


def launch(nodes: list[NodeSpec], stop_timeout: float = 10.0) -> int:
    """Run ``nodes`` until a required one exits or a signal arrives; return the exit status."""
    plan, missing = [], []
    for spec in nodes:
        path = find_executable(spec.package, spec.executable)
        if path is None:
            if spec.optional:
                say(f'{spec.package}/{spec.executable} is not installed: {spec.label} not started')
            else:
                missing.append(f'{spec.package}/{spec.executable} (node {spec.label})')
            continue
        plan.append((spec, path))
    if missing:
        # Every missing one at once, and before anything starts: nothing is left running half-up.
        raise LaunchError(f'not installed (no executable under AMENT_PREFIX_PATH; is the package built and sourced?): '
                          f'{", ".join(missing)}')
    run_dir = tempfile.mkdtemp(prefix='robotsim-launch-')
    running: list[_Running] = []
    stop_requested = threading.Event()

    def on_signal(signum, _frame):
        if not stop_requested.is_set():
            say(f'{signal.Signals(signum).name}: stopping {len(running)} nodes')
        stop_requested.set()

    # SIGHUP: the terminal or SSH session went away; stop as cleanly as on Ctrl-C (bags get closed).
    previous = {sig: signal.signal(sig, on_signal) for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)}
    status = 0
    reported, failed = set(), []
    try:
        for index, (spec, path) in enumerate(plan):
            params_file = os.path.join(run_dir, f'{index:02d}_{spec.name}.yaml')
            with open(params_file, 'w', encoding='utf-8') as stream:
                yaml.safe_dump(params_document(spec), stream)
            process = subprocess.Popen(command_line(spec, path, params_file), stdout=subprocess.PIPE,
                                       stderr=subprocess.STDOUT, text=True, bufsize=1, preexec_fn=die_with_parent)
            running.append(_Running(spec, process))
            say(f'started {spec.label} ({spec.package}/{spec.executable}, pid {process.pid})')
        while not stop_requested.is_set():
            for item in running:
                code = item.process.poll()
                if code is None or item in reported:
                    continue
                reported.add(item)
                if item.spec.required:
                    say(f'required node {item.spec.label} exited with status {code}: shutting down')
                    status = code if code > 0 else (1 if code < 0 else 0)
                    stop_requested.set()
                else:
                    say(f'node {item.spec.label} exited with status {code}')
                    if code != 0:
                        failed.append(f'{item.spec.label} (status {code})')
            stop_requested.wait(0.1)
    finally:
        _stop_all(running, stop_timeout)
        # A node that refused to start (exit 2: bad input, a port in use) while it was still tearing down when a
        # required node ended the bringup: its status came after the last poll, not from the stop signals.
        failed += [f'{item.spec.label} (status 2)' for item in running
                   if item not in reported and not item.spec.required and item.process.returncode == 2]
        if failed:
            # Said again last, where it is seen: a node that could not start (a viewer whose port is in
            # use) while the others ran on.
            say(f'nodes that failed while the bringup ran: {", ".join(failed)}')
        for sig, handler in previous.items():
            signal.signal(sig, handler)
        shutil.rmtree(run_dir, ignore_errors=True)  # the params files, read by the nodes at start
    return status


def _stop_all(running: list[_Running], timeout: float) -> None:
    """SIGINT (a clean rclpy shutdown) to every node, then SIGTERM, then SIGKILL."""
    for signum, grace in ((signal.SIGINT, timeout), (signal.SIGTERM, 3.0), (signal.SIGKILL, 3.0)):
        alive = [item for item in running if item.process.poll() is None]
        if not alive:
            break
        for item in alive:
            try:
                item.process.send_signal(signum)
            except ProcessLookupError:
                pass
        deadline = time.monotonic() + grace
        for item in alive:
            try:
                item.process.wait(timeout=max(0.0, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                pass
        if signum != signal.SIGINT:
            say(f'sent {signal.Signals(signum).name} to {", ".join(i.spec.label for i in alive)}')
    for item in running:
        item.pump.join(timeout=1.0)
