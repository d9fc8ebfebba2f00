"""Live browser view benchmark: what `view:=true` with a browser looking costs the simulator.

The simulator bringup with the default sensor set (the rover in the room, cameras on, firmware in the
loop, the wanderer driving: `robotsim launch sim demo:=true`) runs SIM_SECONDS of sim time

  (a) without the viewer,
  (b) with the live view: the viewer node `view:=true` adds to the bringup (its executable, name and
      parameters from the bringup's graph), started by the bench on free ports (view:=true binds 8080 and
      8765, which another run on a shared machine may hold), and a headless Chromium (Debian's, driven by Playwright as the viewer
      tests do) showing the live page for the whole run,
  (c) with the viewer node alone (no page: a browser on another machine, which costs this one nothing),

in rounds a, b, c, a, b, c (the machine is shared: the spread between repeats is the noise), at
real_time_factor 1 and, as an extra row, as fast as possible (0). Every run starts paused
(`paused:=true`); the bench resumes it through /sim/pause once the graph is up and, in (b), once the page
has its first update, so the page sees the run from sim time 0.

- Achieved RTF: sim seconds per wall second between the first and the last /sim/status of the run
  (published every 0.5 s wall; the bench's only subscription, the same in every run).
- CPU used by the simulator node, the viewer node and Chromium (all its processes) during the run.
- Whether the page kept up, read back from the page (``robotsimViewer.live``): the samples of each stream it
  received per sim second against what the viewer sends at the contract's nominal rates (poses thinned to
  MAX_POSE_RATE, camera frames to the viewer's image rate); how far the page's newest sim time was behind
  the simulator's at each update (wall clocks of the page and the bench are the same machine's); and the
  topic rates the viewer node itself measured, as its status line on the page says at the end.

Run by `make bench`; with --write-readme it replaces the block between the viewer-bench markers in
README.md. Every figure is measured on this run.
"""

from __future__ import annotations

import argparse
import math
import os
import re
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from bench_sim import machine  # the machine line of the simulator benchmark (selects the GL backend first)
from readme_block import ReadmeBlockError, replace_block

WORKSPACE = Path(__file__).resolve().parents[1]
SIM_SECONDS = 20.0
REPEATS = 2
"""a, b, c rounds per pacing."""
KINDS = ('a', 'b', 'c')
"""The runs of a round, in order: (a) no viewer, (b) viewer + page, (c) the viewer node alone."""
IMAGE_RATE = 2.0
"""The viewer node's default image_rate (Hz of sim time): camera frames it sends to a page."""
START_TIMEOUT = 180.0
"""Hang guard (wall s) for a bringup to come up paused and for the page to load; a loaded machine is slow."""
CHROMIUM = '/usr/bin/chromium'
CHROMIUM_ARGS = ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking',
                 '--disable-component-update', '--disable-sync', '--no-first-run']
"""As tests/browser_helpers.py launches it (no GPU here: three.js draws through SwiftShader)."""
PAGE_STREAMS = (('base', 'sim/ground_truth', 'poses'), ('scan', 'scan', 'scans'),
                ('camera', 'camera/image_raw', 'camera frames'))
"""(key in the page's updates, contract topic, what it is) of the streams whose arrival is checked."""


class BenchError(RuntimeError):
    """The benchmark cannot run (one line)."""


# ----------------------------------------------------------------------------- the simulator's RTF
class StatusWatch:
    """/sim/status (sim time, receive wall time) and the /sim/pause client, on a node spun in a thread."""

    def __init__(self):
        import rclpy
        from rclpy.executors import SingleThreadedExecutor

        from robotsim_core.ros import common as ros_common
        from robotsim_core.contract import RELIABLE_QOS, QosSpec

        self.rclpy = rclpy
        self.context = rclpy.Context()
        rclpy.init(context=self.context)
        self.node = rclpy.create_node(f'bench_viewer_{os.getpid()}', context=self.context)
        self.executor = SingleThreadedExecutor(context=self.context)
        self.executor.add_node(self.node)
        self.samples: list[tuple[float, float, bool]] = []  # (wall s by time.time(), sim s, paused)
        self.lock = threading.Lock()
        self.node.create_subscription(
            ros_common.message_class('robotsim_msgs/msg/SimStatus'), '/sim/status', self._on_status,
            ros_common.qos_profile(QosSpec(RELIABLE_QOS.reliability, RELIABLE_QOS.durability, 50)))
        from robotsim_msgs.srv import Pause
        self.pause_type = Pause
        self.pause = self.node.create_client(Pause, '/sim/pause')
        self.running = True
        self.thread = threading.Thread(target=self._spin, daemon=True)
        self.thread.start()

    def _spin(self) -> None:
        while self.running and self.context.ok():
            self.executor.spin_once(timeout_sec=0.05)

    def _on_status(self, message) -> None:
        with self.lock:
            self.samples.append((time.time(), message.sim_time.sec + message.sim_time.nanosec * 1e-9,
                                 bool(message.paused)))

    def clear(self) -> None:
        with self.lock:
            self.samples = []

    def wait_paused(self, timeout: float, alive) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline and alive():
            with self.lock:
                if any(paused for _, _, paused in self.samples):
                    return
            time.sleep(0.1)
        raise BenchError('the simulator published no paused /sim/status (see the bringup log above)')

    def resume(self) -> None:
        if not self.pause.wait_for_service(timeout_sec=30):
            raise BenchError('/sim/pause is not offered')
        future = self.pause.call_async(self.pause_type.Request(paused=False))
        deadline = time.monotonic() + 30
        while not future.done() and time.monotonic() < deadline:
            time.sleep(0.01)
        if not future.done() or not future.result().success:
            raise BenchError('/sim/pause did not resume the simulation')

    def running_samples(self) -> list[tuple[float, float]]:
        with self.lock:
            return [(wall, sim) for wall, sim, paused in self.samples if not paused]

    def close(self) -> None:
        self.running = False
        self.thread.join(timeout=5)
        self.node.destroy_node()
        self.rclpy.try_shutdown(context=self.context)


def achieved_rtf(samples: list[tuple[float, float]]) -> float:
    if len(samples) < 2 or samples[-1][0] <= samples[0][0]:
        raise BenchError(f'{len(samples)} running /sim/status messages: too few to measure the RTF')
    (wall0, sim0), (wall1, sim1) = samples[0], samples[-1]
    return (sim1 - sim0) / (wall1 - wall0)


def sim_time_at(samples: list[tuple[float, float]], wall: float) -> float | None:
    """The simulator's sim time at a wall instant, interpolated between its status messages."""
    for (w0, s0), (w1, s1) in zip(samples, samples[1:]):
        if w0 <= wall <= w1 and w1 > w0:
            return s0 + (s1 - s0) * (wall - w0) / (w1 - w0)
    return None


# ----------------------------------------------------------------------------- CPU of the processes
TICKS = os.sysconf('SC_CLK_TCK')


def process_table() -> dict[int, tuple[int, float, str]]:
    """pid -> (parent pid, CPU seconds used so far, command line) of every process readable now."""
    table = {}
    for entry in os.scandir('/proc'):
        if not entry.name.isdigit():
            continue
        try:
            stat = Path(entry.path, 'stat').read_text()
            cmdline = Path(entry.path, 'cmdline').read_bytes().replace(b'\0', b' ').decode(errors='replace')
        except OSError:
            continue
        fields = stat[stat.rindex(')') + 2:].split()  # after "pid (comm) "
        table[int(entry.name)] = (int(fields[1]), (int(fields[11]) + int(fields[12])) / TICKS, cmdline)
    return table


def descendants(table: dict, root: int) -> set[int]:
    found, frontier = set(), {root}
    while frontier:
        frontier = {pid for pid, (parent, _, _) in table.items() if parent in frontier} - found
        found |= frontier
    return found


CPU_GROUPS = (('sim_node', lambda cmd: '/robotsim_sim/sim_node' in cmd, 'launch'),
              ('viewer node', lambda cmd: '/lib/robotsim_learning/viewer ' in cmd, 'bench'),
              ('Chromium', lambda cmd: 'chromium' in cmd, 'bench'))
"""(name, command-line test, whose descendants: the bringup's or this bench's) of the processes whose CPU
time is reported."""


class CpuMeter:
    """CPU seconds each group of processes used from start() on, sampled while they live (a process that has
    exited can no longer be read, so its last reading stands)."""

    def __init__(self, launcher_pid: int):
        self.roots = {'launch': launcher_pid, 'bench': os.getpid()}
        self.first: dict[int, float] = {}
        self.last: dict[int, tuple[str, float]] = {}

    def _read(self) -> dict[int, tuple[str, float]]:
        table = process_table()
        trees = {name: descendants(table, pid) for name, pid in self.roots.items()}
        found = {}
        for name, matches, tree in CPU_GROUPS:
            for pid in trees[tree]:
                if matches(table[pid][2]):
                    found[pid] = (name, table[pid][1])
        return found

    def start(self) -> None:
        self.first = {pid: cpu for pid, (_, cpu) in self._read().items()}

    def sample(self) -> None:
        self.last.update(self._read())

    def used(self) -> dict[str, float]:
        totals = {name: 0.0 for name, _, _ in CPU_GROUPS}
        for pid, (name, cpu) in self.last.items():
            totals[name] += cpu - self.first.get(pid, 0.0)
        return totals


# ----------------------------------------------------------------------------- one run
def stop(process: subprocess.Popen) -> None:
    """Ctrl-C the launcher's process group (the launcher forwards it to its nodes), then SIGKILL."""
    if process.poll() is not None:
        return
    try:
        os.killpg(process.pid, signal.SIGINT)
        process.wait(timeout=20)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait()
    except ProcessLookupError:
        pass


def wait_for_line(log: Path, pattern: str, process: subprocess.Popen, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if re.search(pattern, log.read_text(errors='replace'), re.M):
            return
        if process.poll() is not None:
            break
        time.sleep(0.2)
    raise BenchError(f'{log.name}: no line {pattern!r} (log: {log})')


def viewer_command(port: int, foxglove_port: int, scratch: Path) -> list[str]:
    """The viewer node as `robotsim launch sim view:=true` starts it (executable, node name, parameters from
    the bringup's graph), on the given ports."""
    import yaml

    from robotsim.bringup import graph_for
    from robotsim.launcher import command_line, find_executable, params_document

    spec = next(node for node in graph_for('sim', {'view': 'true', 'demo': 'true'}) if node.executable == 'viewer')
    spec.parameters = {**spec.parameters, 'port': port, 'foxglove_port': foxglove_port}
    executable = find_executable(spec.package, spec.executable)
    if executable is None:
        raise BenchError(f'{spec.package} {spec.executable} is not installed (scripts/build.sh)')
    params = scratch / f'viewer-{port}.yaml'
    params.write_text(yaml.safe_dump(params_document(spec)))
    return command_line(spec, executable, str(params))


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(('127.0.0.1', 0))
        return probe.getsockname()[1]


def run(view: bool, rtf: float, watch: StatusWatch, browser, scratch: Path, label: str) -> dict:
    """One run: the bringup (started paused), in (b) the viewer node and the page, resumed, until it ends."""
    log = scratch / f'{label}.log'
    load = os.getloadavg()[0]  # what else the machine is doing (1-minute load average at the start)
    command = ['robotsim', 'launch', 'sim', 'demo:=true', 'paused:=true', f'real_time_factor:={rtf:g}',
               f'duration:={SIM_SECONDS:g}']
    watch.clear()
    with open(log, 'w') as output:
        process = subprocess.Popen(command, stdout=output, stderr=subprocess.STDOUT, start_new_session=True)
    viewer, page = None, None
    try:
        watch.wait_paused(START_TIMEOUT, lambda: process.poll() is None)
        if view:
            # The node `view:=true` adds to the bringup, on free ports: view:=true binds 8080 and 8765, which
            # another run on a shared machine may hold.
            port = free_port()
            viewer_log = scratch / f'{label}-viewer.log'
            with open(viewer_log, 'w') as output:
                viewer = subprocess.Popen(viewer_command(port, free_port(), scratch), stdout=output,
                                          stderr=subprocess.STDOUT, start_new_session=True)
            wait_for_line(viewer_log, rf'open http://127\.0\.0\.1:{port}/ in a browser', viewer, START_TIMEOUT)
        if view and browser is not None:
            page = browser.new_page(viewport={'width': 1280, 'height': 800})
            errors: list[str] = []
            page.on('pageerror', lambda error: errors.append(str(error)))
            page.on('console', lambda message: errors.append(message.text) if message.type == 'error' else None)
            page.goto(f'http://127.0.0.1:{port}/')
            page.wait_for_function('window.robotsimViewer && window.robotsimViewer.live && '
                                   'window.robotsimViewer.live.updates > 0', timeout=START_TIMEOUT * 1000)
        else:
            time.sleep(2.0)  # as long as (b) takes to load its page, roughly: the other nodes settle alike
        cpu = CpuMeter(process.pid)
        cpu.start()
        watch.resume()
        started = time.monotonic()
        hang_guard = 60 + SIM_SECONDS / (rtf if rtf > 0 else 0.5) * 4
        while process.poll() is None:  # the simulator stops at `duration`, and the bringup with it
            if time.monotonic() - started > hang_guard:
                raise BenchError(f'{label}: the run did not end within {hang_guard:.0f} s (log: {log})')
            cpu.sample()
            time.sleep(0.5)
        wall = time.monotonic() - started
        samples = watch.running_samples()
        ended = re.search(r'simulated ([\d.]+) s in', log.read_text(errors='replace'))  # sim_node's last word
        result = {'label': label, 'load': load, 'rtf': achieved_rtf(samples),
                  'sim_end': float(ended[1]) if ended else samples[-1][1],
                  'cpu': {name: used / wall for name, used in cpu.used().items()}}
        if page is not None:
            result.update(page_figures(page, samples))
            result['page_errors'] = errors
        return result
    finally:
        if page is not None:
            page.close()
        stop(process)
        if viewer is not None:
            stop(viewer)


def page_figures(page, samples: list[tuple[float, float]]) -> dict:
    live = page.evaluate('window.robotsimViewer.live')
    status = page.inner_text('#status')
    arrivals = [(wall_ms / 1000, sim) for wall_ms, sim in live['arrivals']]
    running = [(wall, sim) for wall, sim in arrivals if sim > 0]
    lags = [expected - sim for wall, sim in running
            if (expected := sim_time_at(samples, wall)) is not None]
    gaps = [b[0] - a[0] for a, b in zip(arrivals, arrivals[1:])]
    span = running[-1][1] - running[0][1] if len(running) > 1 else 0.0
    return {'updates': live['updates'], 'characters': live['characters'], 'samples': live['samples'],
            'page_span': span, 'page_end': running[-1][1] if running else 0.0,
            'lag_median': statistics.median(lags) if lags else math.nan, 'lag_max': max(lags) if lags else math.nan,
            'gap_max': max(gaps) if gaps else math.nan, 'viewer_status': status}


# ----------------------------------------------------------------------------- nominal rates
def nominal_page_rates() -> dict[str, float]:
    """Samples per sim second the viewer sends a page at the contract's nominal rates: a stream thinned to
    ``cap`` Hz keeps every ceil(rate / cap)-th message."""
    from robotsim_core.contract import robot_contract
    from robotsim_core.description import load_robot
    from robotsim_core.viewer.bag_scene import MAX_POSE_RATE

    rates = {topic.name: topic.rate for topic in robot_contract(load_robot('rover')).topics}

    def thinned(rate: float, cap: float) -> float:
        return rate / math.ceil(rate / cap - 1e-9) if rate > cap else rate
    return {'base': thinned(rates['sim/ground_truth'], MAX_POSE_RATE), 'scan': rates['scan'],
            'camera': thinned(rates['camera/image_raw'], IMAGE_RATE),
            **{f'topic:{name}': rate for name, rate in rates.items()}}


def viewer_rates(status: str) -> dict[str, float]:
    """The viewer node's own measured rates from its status text ('/scan   10.0 Hz')."""
    return {name: float(rate) for name, rate in re.findall(r'^/(\S+)\s+([\d.]+) Hz$', status, re.M)}


# ----------------------------------------------------------------------------- report
def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument('--write-readme', action='store_true', help='replace the viewer-bench block in README.md')
    parser.add_argument('--repeats', type=int, default=REPEATS, help='a, b, c rounds per pacing')
    parser.add_argument('--pacing', default='1,0', help='real_time_factor values, comma separated (0: as fast as '
                        'possible)')
    args = parser.parse_args()
    try:
        pacings = [float(value) for value in args.pacing.split(',')]
    except ValueError:
        print(f'bench_viewer: --pacing: expected comma-separated numbers, got {args.pacing!r}', file=sys.stderr)
        return 2
    # The browser is a test-only dependency: without it `make bench` goes on, saying what was not measured.
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        print('bench_viewer: skipped: Playwright is not installed (ROBOTSIM_TEST_DEPS=1 scripts/setup.sh installs '
              'it); the README block is left as it was', file=sys.stderr)
        return 0
    if not Path(CHROMIUM).exists():
        print(f"bench_viewer: skipped: Debian's chromium is not at {CHROMIUM} (ROBOTSIM_TEST_DEPS=1 scripts/setup.sh "
              'installs it); the README block is left as it was', file=sys.stderr)
        return 0
    os.environ['ROS_AUTOMATIC_DISCOVERY_RANGE'] = 'LOCALHOST'
    os.environ['ROS_DOMAIN_ID'] = str(200 + os.getpid() % 30)  # clear of the workspace's own domain (make sim)
    print(f'machine: {machine()}', flush=True)
    nominal = nominal_page_rates()
    results: dict[float, dict[str, list[dict]]] = {}
    watch = StatusWatch()
    try:
        with tempfile.TemporaryDirectory() as scratch, sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
            try:
                for rtf in pacings:
                    runs = results.setdefault(rtf, {kind: [] for kind in KINDS})
                    for repeat in range(args.repeats):
                        for kind in KINDS:
                            label = f'rtf{rtf:g}-{kind}{repeat + 1}'
                            result = run(kind in ('b', 'c'), rtf, watch, browser if kind == 'b' else None,
                                         Path(scratch), label)
                            result.update(kind=f'{kind}{repeat + 1}', order=sum(map(len, runs.values())))
                            runs[kind].append(result)
                            extra = ''
                            if kind == 'b':
                                extra = (f', page: {result["updates"]} updates, samples {result["samples"]}, '
                                         f'lag median {result["lag_median"]:.3f} s max {result["lag_max"]:.3f} s, '
                                         f'errors {result["page_errors"]}')
                            cores = ', '.join(f'{name} {share:.2f}' for name, share in result['cpu'].items())
                            print(f'{label}: RTF {result["rtf"]:.3f}, CPU cores used: {cores}{extra}', flush=True)
            finally:
                browser.close()
    except BenchError as error:
        print(f'bench_viewer: {error}', file=sys.stderr)
        return 1
    finally:
        watch.close()
    block = report(results, nominal)
    print(block)
    if args.write_readme:
        try:
            written = replace_block(WORKSPACE / 'README.md', 'viewer-bench', block)
        except ReadmeBlockError as error:
            print(f'bench_viewer: {error}', file=sys.stderr)
            return 1
        print(f'{written} updated')
    return 0


def pacing_name(rtf: float) -> str:
    return 'as fast as possible (0)' if rtf == 0 else f'{rtf:g}'


def report(results: dict[float, dict[str, list[dict]]], nominal: dict[str, float]) -> str:
    summary, runs_table, page_rows = [], [], []
    for rtf, runs in results.items():
        rates = {kind: [r['rtf'] for r in runs[kind]] for kind in KINDS}
        shown = {kind: ', '.join(f'{v:.3f}' for v in values) for kind, values in rates.items()}
        ratio = {kind: statistics.mean(rates[kind]) / statistics.mean(rates['a']) for kind in ('b', 'c')}
        target = '>= 0.9' if rtf == 1 else '(extra row)'
        summary.append(f'| {pacing_name(rtf)} | {shown["a"]} | {shown["b"]} | **{ratio["b"]:.3f}** | {shown["c"]} '
                       f'| {ratio["c"]:.3f} | {target} |')
        for result in sorted((r for kind in KINDS for r in runs[kind]), key=lambda r: r['order']):
            cpu = result['cpu']
            runs_table.append(f'| {pacing_name(rtf)}, {result["kind"]} | {result["load"]:.1f} | {result["rtf"]:.3f} '
                              f'| {cpu["sim_node"]:.2f} | {cpu["viewer node"]:.2f} | {cpu["Chromium"]:.2f} |')
        for result in runs['b']:
            span = result['page_span']
            received = ', '.join(
                f'{what} {result["samples"].get(key, 0) / span:.1f}/{nominal[key]:.3g}' if span > 0 else f'{what} -'
                for key, _, what in PAGE_STREAMS)
            measured = viewer_rates(result['viewer_status'])
            seen = ', '.join(f'/{name} {measured[name]:.1f}/{nominal["topic:" + name]:.3g}'
                             for _, name, _ in PAGE_STREAMS if name in measured)
            page_rows.append(
                f'| {pacing_name(rtf)}, {result["kind"]} | {result["page_end"]:.2f} of {result["sim_end"]:.2f} '
                f'| {received} | {result["lag_median"]:.2f} / {result["lag_max"]:.2f} | {result["gap_max"]:.2f} '
                f'| {seen} | {len(result["page_errors"])} |')
    lines = [
        f'Measured by `make bench` (`bench/bench_viewer.py`) on {time.strftime("%Y-%m-%d")} (this machine, see '
        f'above): `robotsim launch sim demo:=true` (the rover in the room, default sensors with cameras, firmware '
        f'in the loop, the wanderer) for {SIM_SECONDS:g} s of sim time: (a) without the viewer, (b) with the '
        'viewer node of `view:=true` (as the bringup starts it, on free ports) and a headless Chromium '
        '(Debian\'s; no GPU: SwiftShader draws with the CPU) showing the live page for the whole run, (c) with '
        'the viewer node alone (the browser on another machine); in rounds a, b, c. Achieved RTF: sim seconds per '
        'wall second between the first and the last /sim/status of the run. The machine is shared with other '
        'jobs: the load average and the spread between repeats show the noise.',
        '', '| real_time_factor | RTF (a) no viewer | RTF (b) viewer + browser | mean (b) / mean (a) '
        '| RTF (c) viewer node alone | mean (c) / mean (a) | target for (b) / (a) |',
        '|---|---|---|---|---|---|---|', *summary,
        '', 'Each run, in order, with the CPU its processes used (cores: CPU seconds per wall second of the run):',
        '', '| run | load average at start | RTF | sim_node | viewer node | Chromium (all its processes) |',
        '|---|---|---|---|---|---|', *runs_table,
        '', 'What the page received in (b), read back from it (`robotsimViewer.live`): samples per sim second '
        'against what the viewer sends at nominal rates (poses thinned to 30 Hz, camera frames at its image rate '
        f'{IMAGE_RATE:g} Hz); how far the page\'s newest sim time was behind the simulator\'s at each update '
        '(median / max; the simulator\'s from /sim/status as the bench received it, so it carries the bench\'s own '
        'delays: negative when those were longer); the largest wall gap between updates (sent every 0.1 s); the '
        'topic rates the viewer node measured over its last 3 s of sim time (its status line on the page), against '
        'nominal.',
        '', '| run | page\'s sim time at the end (s) of the run\'s | received per sim s / nominal '
        '| lag median / max (sim s) | largest gap (wall s) | viewer node received (Hz) / nominal '
        '| page errors |',
        '|---|---|---|---|---|---|---|', *page_rows]
    return '\n'.join(lines)


if __name__ == '__main__':
    sys.exit(main())
