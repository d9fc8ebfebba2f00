"""Where the simulator node's time goes: sim_node under cProfile, as fast as possible, no subscriber.

Runs the node in this process for ``--seconds`` of sim time (one rover, cameras off; then the
two_rovers fleet with default sensors) and prints, per run, the wall time of each part of the physics
thread's loop as a share of the whole: physics (mj_step, mj_forward, controllers), sensor models,
waiting for camera captures (they render in threads of their own, which cProfile does not see),
building messages, publishing (rclpy serialisation + DDS write), /clock, executor spins. cProfile slows
Python code more than C code, so the Python parts are overstated by some tens of percent: read the
shares, not the absolute times. Run by `make bench`; --markdown prints a README table.
"""

from __future__ import annotations

import argparse
import cProfile
import os
import pstats
import sys
from pathlib import Path

os.environ.setdefault('ROS_AUTOMATIC_DISCOVERY_RANGE', 'LOCALHOST')
os.environ.setdefault('ROS_DOMAIN_ID', str(200 + os.getpid() % 30))

PARTS = {
    # part -> (file suffix, function name) entries whose cumulative times add up (none calls another)
    'physics (mj_step, mj_forward, controllers)': [('', '<built-in method mujoco._functions.mj_step>'),
                                                   ('', '<built-in method mujoco._functions.mj_forward>'),
                                                   ('simulation.py', '_apply_controls')],
    'sensor models (lidar, IMU, encoders; cameras: copying the state)': [
        ('lidar.py', 'measure'), ('imu.py', 'measure'), ('camera.py', 'measure'), ('simulation.py', '_joint_states'),
        ('simulation.py', '_base_state'), ('capture.py', 'start')],
    'waiting for a camera capture (rendered in its own thread)': [('capture.py', 'collect')],
    'building messages': [('robot_messages.py', 'build')],
    'publishing (serialise + write)': [('publisher.py', 'publish')],
    'executor spins (services, subscriptions)': [('executors.py', 'spin_once')],
}


def profile(arguments: list[str]) -> tuple[float, dict[str, float]]:
    from robotsim_sim.ros.sim_node import main
    profiler = cProfile.Profile()
    profiler.runcall(main, ['sim_node', '--ros-args', '-p', 'real_time_factor:=0.0', *arguments])
    stats = pstats.Stats(profiler).stats
    run = next(value[3] for key, value in stats.items() if key[0].endswith('sim_node.py') and key[2] == 'run')

    def cumulative(suffix: str, function: str) -> float:
        return sum(value[3] for key, value in stats.items()
                   if key[2] == function and (key[0].endswith(suffix) if suffix else key[0] == '~'))
    parts = {part: sum(cumulative(*entry) for entry in entries) for part, entries in PARTS.items()}
    clock = cumulative('sim_node.py', 'publish_clock')
    rest = run - sum(parts.values())
    ordered = {}
    for part, seconds in parts.items():
        ordered[part] = seconds
        if part.startswith('publishing'):
            ordered['of which /clock'] = clock
    ordered['the rest of the loop'] = rest
    return run, ordered


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument('--seconds', type=float, default=10.0, help='sim seconds per run')
    parser.add_argument('--markdown', action='store_true')
    parser.add_argument('--write-readme', action='store_true', help="replace README.md's node-profile block")
    args = parser.parse_args()
    runs = {'one rover, cameras off': ['-p', f'duration:={args.seconds}', '-p', 'cameras:=false'],
            'two rovers, default sensors': ['-p', f'duration:={args.seconds}', '-p', 'fleet:=two_rovers']}
    results = {name: profile(arguments) for name, arguments in runs.items()}
    names = list(results)
    rows = list(next(iter(results.values()))[1])
    if args.markdown or args.write_readme:
        lines = ['| part of the loop | ' + ' | '.join(names) + ' |', '|---|' + '---|' * len(names)]
        for row in rows:
            lines.append(f'| {row} | ' + ' | '.join(f'{100 * results[n][1][row] / results[n][0]:.0f} %' for n in names)
                         + ' |')
        lines.append('| wall time under the profiler per simulated second | '
                     + ' | '.join(f'{1000 * results[n][0] / args.seconds:.0f} ms' for n in names) + ' |')
        print('\n'.join(lines))
        if args.write_readme:
            sys.path.insert(0, str(Path(__file__).resolve().parent))
            from readme_block import replace_block
            replace_block(Path(__file__).resolve().parents[1] / 'README.md', 'node-profile', '\n'.join(lines))
    else:
        for name, (run, parts) in results.items():
            print(f'{name}: {run:.2f} s under cProfile for {args.seconds:g} s of sim time')
            for part, seconds in parts.items():
                print(f'  {part:48s} {seconds:6.2f} s  {100 * seconds / run:5.1f} %')
    return 0


if __name__ == '__main__':
    sys.exit(main())
