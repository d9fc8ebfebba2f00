"""Policy benchmark: inference latency of the shipped ONNX policy on this CPU, and closed-loop evaluation
episodes per hour through the ROS graph beside the fast path.

1. Episodes of the policy driver on the fast path (`robotsim dataset generate --driver policy --policy FILE
   --no-cameras`, in-process simulation core, one worker; cameras only if the policy looks at images) on
   held-out scenarios: episodes per hour.
2. From those recorded bags, every decision the policy node would take (each /scan with the odometry,
   images and goal received so far, deserialised into the rclpy messages the node gets): onnxruntime
   inference alone (batch 1, the node's session options from PolicyRuntime: CPU, one intra-op thread), and
   the node's whole per-decision path (observation_from_messages + PolicyRuntime.act, what its
   /diagnostics latency measures), p50/p99 over N calls after a warm-up.
3. `robotsim policy eval` with the policy alone (no baselines) on the same scenarios: every episode a
   launch of the simulator node and the policy node; episodes per hour of the whole command and the
   real-time factor its auto pacing chose (from episodes.csv).

Episodes end at success, collision or timeout, so episodes per hour depend on the policy's outcomes;
both paths run the same scenarios and their outcomes are printed beside the rate. Run by `make bench`;
with --write-readme it replaces the block between the policy-bench markers in README.md. Every figure is
measured on this run; a shared 2-core machine varies by some percent between runs.
"""

from __future__ import annotations

import argparse
import csv
import hashlib
import os
import re
import subprocess
import sys
import tempfile
import time
from collections import Counter, deque
from pathlib import Path

import numpy as np

from bench_sim import machine  # the machine line of the simulator benchmark (selects the GL backend first)
from readme_block import ReadmeBlockError, replace_block

WORKSPACE = Path(__file__).resolve().parents[1]
SPEC = WORKSPACE / 'config' / 'randomization' / 'room_obstacles.yaml'
POLICY = WORKSPACE / 'config' / 'policies' / 'rover_goal_reaching.onnx'
SEED = 2000
"""Held-out scenarios: the shipped policy's datasets used seeds 1000 and 3000 (config/policies/README.md)."""
EPISODES = 3
CALLS = 2000
WARM_UP = 200
ODOMETRY_KEPT, IMAGES_KEPT = 20, 5
"""How many odometry and image messages the policy node keeps to pair with a scan (its deques)."""


def shown(path: Path) -> str:
    try:
        return str(path.resolve().relative_to(WORKSPACE))
    except ValueError:
        return str(path)


def sha256_prefix(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()[:12]


def outcomes(values) -> str:
    counts = Counter(values)
    return ', '.join(f'{counts[name]} {name}' for name in ('success', 'collision', 'timeout', 'gave_up', 'error')
                     if counts[name])


# ----------------------------------------------------------------------------- fast path
def fast_path(policy: Path, folder: Path, episodes: int, seed: int, cameras: bool) -> dict:
    from robotsim_learning.dataset import generate
    started = time.monotonic()
    manifest = generate(str(SPEC), str(folder), episodes, seed=seed, driver=f'policy:{policy}', workers=1,
                        cameras=cameras, progress=False)
    wall = time.monotonic() - started
    simulated = sum(entry['duration'] for entry in manifest['episodes'])
    return {'rate': episodes / wall * 3600, 'rtf': simulated / wall, 'mean_episode': simulated / episodes,
            'outcomes': outcomes(entry['outcome'] for entry in manifest['episodes']),
            'bags': [folder / entry['bag'] for entry in manifest['episodes'] if entry.get('bag')]}


# ----------------------------------------------------------------------------- decisions from the bags
def recorded_decisions(bags: list[Path], spec) -> list[tuple]:
    """(scan, images, odometries, goal xy in odom, pose) at every recorded /scan once a goal and odometry
    exist: what the policy node holds when it decides, as the rclpy messages it receives. ``pose``: the
    node's IMU-heading estimate for a policy whose heading comes from the IMU, else None (the odometry's)."""
    from rclpy.serialization import deserialize_message
    from rosbags.highlevel import AnyReader

    from robotsim_core.ros.common import message_class
    uses_imu = getattr(spec, 'uses_imu', False)
    topics = {'/scan', '/odom', '/goal_pose', *(['/camera/image_raw'] if spec.uses_image else []),
              *(['/imu/data'] if uses_imu else [])}
    decisions = []
    for bag in bags:
        images, odometries, goal = deque(maxlen=IMAGES_KEPT), deque(maxlen=ODOMETRY_KEPT), None
        estimate = None
        if uses_imu:
            from robotsim_learning.observation import ImuHeadingOdometry
            estimate = ImuHeadingOdometry()  # fed as the node's callbacks feed it
        with AnyReader([bag]) as reader:
            connections = [c for c in reader.connections if c.topic in topics]
            classes = {c.topic: message_class(c.msgtype) for c in connections}
            for connection, _, raw in reader.messages(connections=connections):
                message = deserialize_message(bytes(raw), classes[connection.topic])
                if connection.topic == '/odom':
                    odometries.append(message)
                    if estimate is not None:
                        estimate.add_odometry(message)
                elif connection.topic == '/imu/data':
                    estimate.add_imu(message)
                elif connection.topic == '/camera/image_raw':
                    images.append(message)
                elif connection.topic == '/goal_pose':
                    goal = (message.pose.position.x, message.pose.position.y)
                elif goal is not None and odometries and (images or not spec.uses_image):
                    pose = estimate.pose() if estimate is not None else None
                    if estimate is None or pose is not None:
                        decisions.append((message, deque(images, IMAGES_KEPT), deque(odometries, ODOMETRY_KEPT),
                                          goal, pose))
    if not decisions:
        raise SystemExit('bench_policy: the recorded episodes hold no decision (no /scan after a goal and odometry)')
    return decisions


def observation_at(spec, decision: tuple):
    """The node's call: the IMU-heading pose passed only when there is one."""
    from robotsim_learning.observation import observation_from_messages
    scan, images, odometries, goal, pose = decision
    return observation_from_messages(spec, scan, images, odometries, goal, *([] if pose is None else [pose]))


def microseconds(samples: list[float]) -> tuple[float, float]:
    p50, p99 = np.percentile(np.array(samples) * 1e6, [50, 99])
    return float(p50), float(p99)


def latencies(runtime, decisions: list[tuple], calls: int) -> dict:
    """p50/p99 (us) of inference alone and of the node's per-decision path, cycling through the decisions."""
    from robotsim_learning.policy_model import ONNX_OUTPUT
    spec, session = runtime.spec, runtime.session
    inputs = [observation_at(spec, decision).reshape(1, -1) for decision in decisions]
    previous = np.zeros((1, 2), np.float32)  # a policy with a turn commitment also takes its previous command
    for index in range(WARM_UP):
        session.run([ONNX_OUTPUT], runtime.feed(inputs[index % len(inputs)], previous))
    inference = []
    for index in range(calls):
        feed = runtime.feed(inputs[index % len(inputs)], previous)
        started = time.perf_counter()
        session.run([ONNX_OUTPUT], feed)
        inference.append(time.perf_counter() - started)
    decision_times = []
    for index in range(WARM_UP + calls):
        decision = decisions[index % len(decisions)]
        started = time.perf_counter()
        runtime.act(observation_at(spec, decision))
        if index >= WARM_UP:
            decision_times.append(time.perf_counter() - started)
    return {'inference': microseconds(inference), 'decision': microseconds(decision_times)}


# ----------------------------------------------------------------------------- ROS graph
def ros_graph(policy: Path, folder: Path, episodes: int, seed: int) -> dict:
    """`robotsim policy eval` with the policy alone: episodes per hour of the whole command (every launch's
    start-up and shutdown included, and an episode run again when the pacing falls back to 1.0)."""
    env = {**os.environ, 'ROS_AUTOMATIC_DISCOVERY_RANGE': 'LOCALHOST',
           'ROS_DOMAIN_ID': str(200 + os.getpid() % 30)}  # clear of the workspace's own domain (a running make sim)
    command = [sys.executable, '-m', 'robotsim.cli', 'policy', 'eval', '--driver', 'policy', '--policy', str(policy),
               '--episodes', str(episodes), '--seed', str(seed), '--randomization', str(SPEC), '--baselines', '',
               '--out', str(folder), '--no-progress']
    started = time.monotonic()
    completed = subprocess.run(command, capture_output=True, text=True, env=env, timeout=3600)
    wall = time.monotonic() - started
    if completed.returncode != 0:
        raise SystemExit(f'bench_policy: robotsim policy eval failed ({completed.returncode}):\n'
                         f'{completed.stdout[-2000:]}\n{completed.stderr[-2000:]}')
    with open(folder / 'episodes.csv', newline='', encoding='utf-8') as stream:
        rows = list(csv.DictReader(stream))
    simulated = sum(float(row['sim_time']) for row in rows)
    # The pacing's verdict on the first episode at real_time_factor 0 (the CSV holds the re-run's rate).
    verdict = re.search(r'^policy: /cmd_vel at ([\d.]+) Hz of sim time \(nominal ([\d.]+)\) at real_time_factor 0: '
                        r'(keeps up|falls behind)', completed.stdout, re.M)
    pacing = Counter(f"{float(row['real_time_factor']):g}" for row in rows)
    return {'rate': len(rows) / wall * 3600, 'rtf': simulated / wall, 'mean_episode': simulated / len(rows),
            'outcomes': outcomes(row['outcome'] for row in rows),
            'pacing': ', '.join(f"{'0 (as fast as possible)' if rtf == '0' else rtf} for {count} of {len(rows)}"
                                for rtf, count in sorted(pacing.items())),
            'verdict': (f'as fast as possible, /cmd_vel at {verdict[1]} of {verdict[2]} Hz of sim time: {verdict[3]}'
                        if verdict else 'the pacing printed no verdict')}


# ----------------------------------------------------------------------------- report
def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument('--write-readme', action='store_true', help='replace the policy-bench block in README.md')
    parser.add_argument('--policy', type=Path, default=POLICY, help='the ONNX policy (default: the shipped one)')
    parser.add_argument('--episodes', type=int, default=EPISODES, help='episodes per path')
    parser.add_argument('--seed', type=int, default=SEED, help='held-out scenario seed')
    parser.add_argument('--calls', type=int, default=CALLS, help='timed calls per latency figure (after a warm-up)')
    args = parser.parse_args()
    import onnxruntime

    from robotsim_learning.policy_runtime import PolicyFileError, PolicyRuntime
    try:
        runtime = PolicyRuntime(str(args.policy))  # exactly the node's session (providers, threads)
    except PolicyFileError as error:
        print(f'bench_policy: --policy: {error}', file=sys.stderr)
        return 2
    uses_image = runtime.spec.uses_image
    threads = runtime.session.get_session_options().intra_op_num_threads
    print(f'machine: {machine()}', flush=True)
    with tempfile.TemporaryDirectory() as scratch:
        fast = fast_path(args.policy, Path(scratch, 'fast'), args.episodes, args.seed, cameras=uses_image)
        print(f'fast path: {fast["rate"]:.0f} episodes/h ({fast["outcomes"]})', flush=True)
        decisions = recorded_decisions(fast['bags'], runtime.spec)
        timing = latencies(runtime, decisions, args.calls)
        print(f'inference p50/p99 {timing["inference"][0]:.0f}/{timing["inference"][1]:.0f} us; decision '
              f'{timing["decision"][0]:.0f}/{timing["decision"][1]:.0f} us', flush=True)
        graph = ros_graph(args.policy, Path(scratch, 'evaluation'), args.episodes, args.seed)
        print(f'ROS graph: {graph["rate"]:.0f} episodes/h ({graph["outcomes"]}), pacing {graph["pacing"]}', flush=True)

    latency_rows = [
        ('policy inference: onnxruntime `session.run`, batch 1', timing['inference']),
        ("one decision of the policy node: `observation_from_messages` + `PolicyRuntime.act` (its /diagnostics "
         'latency)', timing['decision'])]
    cameras = 'cameras on (the policy looks at images)' if uses_image else '`--no-cameras`'
    episode_rows = [
        ('ROS graph: `robotsim policy eval --driver policy --baselines \'\'` (a launch per episode)', graph['rate'],
         graph['rtf'], graph['mean_episode'], graph['outcomes'],
         f"{graph['pacing']} (auto; first episode {graph['verdict']})"),
        (f'fast path: `robotsim dataset generate --driver policy --policy FILE` {cameras}, 1 worker', fast['rate'],
         fast['rtf'], fast['mean_episode'], fast['outcomes'], 'as fast as possible')]
    lines = [
        f'Measured by `make bench` on {time.strftime("%Y-%m-%d")} (this machine, see above): policy '
        f'`{shown(args.policy)}` (sha256 `{sha256_prefix(args.policy)}`, {runtime.spec.size} inputs, heading from '
        f"{getattr(runtime.spec, 'heading', 'odometry')}), onnxruntime "
        f'{onnxruntime.__version__}, {", ".join(runtime.session.get_providers())}, {threads} intra-op thread (the '
        f"node's session); latencies over {args.calls} calls after {WARM_UP} warm-up calls, on the decisions "
        f'recorded in the fast-path episodes below.',
        '', '| measure | p50 | p99 |', '|---|---|---|',
        *(f'| {label} | {p50:.0f} us | {p99:.0f} us |' for label, (p50, p99) in latency_rows),
        '', f'Closed-loop episodes of the policy, {args.episodes} held-out scenarios of '
        f'`{shown(SPEC)}` (seed {args.seed}, the same on both paths; an episode ends at success, collision or '
        'timeout, so the rate depends on the outcomes):', '',
        '| path | episodes per hour | simulated s per wall s | mean episode (sim s) | outcomes | real-time factor |',
        '|---|---|---|---|---|---|',
        *(f'| {label} | {rate:.0f} | {rtf:.1f} | {mean:.1f} | {result} | {pacing} |'
          for label, rate, rtf, mean, result, pacing in episode_rows)]
    block = '\n'.join(lines)
    print(block)
    if args.write_readme:
        try:
            written = replace_block(WORKSPACE / 'README.md', 'policy-bench', block)
        except ReadmeBlockError as error:
            print(f'bench_policy: {error}', file=sys.stderr)
            return 1
        print(f'{written} updated')
    return 0


if __name__ == '__main__':
    sys.exit(main())
