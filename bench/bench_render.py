"""Per-frame render time of ``robotsim render`` at the recorded resolution, per engine and sample count.

    python bench/bench_render.py [--episode EPISODE_FOLDER] [--frames 4] [--out out/bench-render]

Without --episode, generates one 20 s episode of config/randomization/room_obstacles.yaml (seed 0:
the rover's 320x240 camera). Each engine/sample setting renders the RGB pass of the same --frames
frames (spread over the episode); the geometry passes (depth, segmentation, line art: one Cycles
sample at each pixel centre) are timed once. Prints a Markdown table: the first frame (EEVEE compiles
its shaders then) and the mean of the following frames, and writes it with the raw rows to
OUT/summary.json.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import time
from pathlib import Path

WORKSPACE = Path(__file__).resolve().parents[1]
SETTINGS = [('cycles', 1), ('cycles', 4), ('cycles', 16), ('cycles', 64), ('eevee', 1), ('eevee', 8),
            ('eevee', 16), ('workbench', 1), ('workbench', 8)]


def robotsim(*args: str) -> None:
    subprocess.run([sys.executable, '-m', 'robotsim.cli', *args], check=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--episode', help='a dataset episode folder (default: generate one)')
    parser.add_argument('--frames', type=int, default=4)
    parser.add_argument('--out', default=str(WORKSPACE / 'out' / 'bench-render'))
    args = parser.parse_args()
    out = Path(args.out)
    episode = Path(args.episode) if args.episode else out / 'dataset' / 'episode_000000'
    if not episode.is_dir():
        robotsim('dataset', 'generate', '--randomization', str(WORKSPACE / 'config/randomization/room_obstacles.yaml'),
                 '--episodes', '1', '--seed', '0', '--out', str(out / 'dataset'), '--no-progress')
    every = str(max(1, 300 // args.frames))  # 301 frames at 15 Hz in a 20 s episode
    rows = []
    for engine, samples in SETTINGS + [('geometry', 1)]:
        target = out / f'{engine}-{samples}'
        passes = 'depth,seg,lineart' if engine == 'geometry' else 'rgb'
        started = time.monotonic()
        robotsim('render', str(episode), '--out', str(target), '--engine', 'cycles' if engine == 'geometry' else engine,
                 '--samples', str(samples), '--passes', passes, '--every', every, '--limit', str(args.frames))
        document = json.loads((target / 'render.json').read_text())
        seconds = [sum(frame['seconds'].values()) for frame in document['frames']]
        rows.append({'engine': engine, 'samples': samples, 'first': seconds[0],
                     'following': sum(seconds[1:]) / max(1, len(seconds) - 1), 'frames': seconds,
                     'wall': time.monotonic() - started, 'resolution': [document['camera']['width'],
                                                                         document['camera']['height']]})
        print(f'{engine} {samples}: first {seconds[0]:.2f} s, then {rows[-1]["following"]:.2f} s per frame', flush=True)
    machine = {'cpus': os.cpu_count(), 'machine': platform.machine(), 'python': platform.python_version(),
               'date': time.strftime('%Y-%m-%d')}
    (out / 'summary.json').write_text(json.dumps({'machine': machine, 'rows': rows}, indent=1) + '\n')
    print('| pass | engine | samples | first frame (s) | per following frame (s) |\n|---|---|---|---|---|')
    for row in rows:
        what = 'depth + seg + line art' if row['engine'] == 'geometry' else 'RGB'
        engine = 'Cycles, 1 sample at pixel centres' if row['engine'] == 'geometry' else row['engine']
        print(f"| {what} | {engine} | {row['samples']} | {row['first']:.2f} | {row['following']:.2f} |")
    return 0


if __name__ == '__main__':
    sys.exit(main())
