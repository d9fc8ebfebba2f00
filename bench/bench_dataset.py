"""Dataset generation benchmark: episodes per hour and simulated seconds per wall second per worker,
for the fast path (`robotsim dataset generate`, in-process simulation core, no DDS) and for the ROS
graph path (`robotsim launch sim record:=true` with the wanderer, as fast as possible).

Default sensors (rover: 360-beam lidar 10 Hz, 320x240 RGB-D 15 Hz, IMU 100 Hz), 20 s episodes of
config/randomization/room_obstacles.yaml, one worker. Run by `make bench`; with --write-readme it
replaces the block between the dataset-bench markers in the documentation. Every figure is measured on this
run; a shared 2-core machine varies by some percent between runs.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path

WORKSPACE = Path(__file__).resolve().parents[1]
SPEC = WORKSPACE / 'config' / 'randomization' / 'room_obstacles.yaml'
EPISODES = 6
TARGET_RTF = 8.0


def fast_path(folder: Path) -> tuple[float, float, float, float, float]:
    """(episodes/hour and simulated s per wall s of the whole generation, the same two inside the
    worker's episodes, MB per episode) of a 1-worker generation. The whole-generation figure includes the
    worker's start-up (imports, model compilation, renderer) and each bag's SHA-256; the per-episode one
    (the manifest's ``wall_seconds``: simulate, render, write the bag) is what a long generation tends to."""
    from robotsim_learning.dataset import generate
    started = time.monotonic()
    manifest = generate(str(SPEC), str(folder), EPISODES, seed=0, driver='wander', workers=1, progress=False)
    wall = time.monotonic() - started
    simulated = sum(e['duration'] for e in manifest['episodes'])
    in_episodes = sum(e['wall_seconds'] for e in manifest['episodes'])
    size = sum(e['bytes'] for e in manifest['episodes']) / len(manifest['episodes']) / 1e6
    return EPISODES / wall * 3600, simulated / wall, EPISODES / in_episodes * 3600, simulated / in_episodes, size


def ros_graph(folder: Path) -> tuple[float, float]:
    """(episodes/hour, simulated s per wall s) of the bringup recording one 20 s episode of the same
    world, robot and seed (wall time of the whole launch: start-up, recording, shutdown)."""
    from robotsim_learning.randomization import Randomizer, load_randomization
    spec = load_randomization(str(SPEC))
    scenario = Randomizer(spec, 0).scenario(0)
    (folder / 'world.yaml').write_text(scenario.world_yaml)
    (folder / 'robot.yaml').write_text(scenario.robot_yaml)
    started = time.monotonic()
    completed = subprocess.run(['robotsim', 'launch', 'sim', f'robot:={folder / "robot.yaml"}',
                                f'world:={folder / "world.yaml"}', f'seed:={scenario.sim_seed}', 'record:=true',
                                f'bag:={folder / "bag"}', 'demo:=true', 'firmware:=false', 'real_time_factor:=0',
                                f'duration:={spec.episode_duration}'], capture_output=True, text=True, timeout=600)
    wall = time.monotonic() - started
    if completed.returncode != 0:
        raise SystemExit(f'bench_dataset: the ROS graph run failed:\n{completed.stdout[-3000:]}')
    return 3600 / wall, spec.episode_duration / wall


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument('--write-readme', action='store_true')
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        fast_rate, fast_rtf, episode_rate, episode_rtf, size = fast_path(Path(scratch, 'fast'))
        Path(scratch, 'ros').mkdir()
        ros_rate, ros_rtf = ros_graph(Path(scratch, 'ros'))
    rows = [(f'fast path (`robotsim dataset generate`, 1 worker, {EPISODES} episodes, whole run)', f'{fast_rate:.0f}',
             f'{fast_rtf:.1f}', ''),
            ('fast path, inside the episodes (simulate, render, write; no start-up or hashing)',
             f'{episode_rate:.0f}', f'{episode_rtf:.1f}',
             f'>= {TARGET_RTF:g} ({"met" if episode_rtf >= TARGET_RTF else "not met"})'),
            ('ROS graph (`robotsim launch sim record:=true demo:=true real_time_factor:=0`, 1 episode)',
             f'{ros_rate:.0f}', f'{ros_rtf:.1f}', '')]
    table = ['| path | episodes per hour | simulated s per wall s | target |', '|---|---|---|---|']
    table += [f'| {a} | {b} | {c} | {d} |' for a, b, c, d in rows]
    block = (f'Measured by `make bench` on {time.strftime("%Y-%m-%d")} (this machine, see above): 20 s episodes of '
             f'`config/randomization/room_obstacles.yaml`, default sensors (320x240 RGB-D at 15 Hz), the wanderer, one '
             f'worker; {size:.0f} MB of bag per fast-path episode.\n\n' + '\n'.join(table))
    print(block)
    if args.write_readme:
        sys.path.insert(0, str(Path(__file__).resolve().parent))
        from readme_block import replace_block
        print(f'{replace_block(WORKSPACE / "README.md", "dataset-bench", block)} updated')
    return 0


if __name__ == '__main__':
    sys.exit(main())
