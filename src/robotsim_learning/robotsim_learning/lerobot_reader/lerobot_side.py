"""Runs ONLY in the LeRobot environment (see __init__.py): opens an exported dataset with the real
``LeRobotDataset``, offline, iterates every frame as a training loop would, and writes what it read.

    python lerobot_side.py DATASET_ROOT OUT_DIR

Writes ``OUT_DIR/summary.json`` (lerobot's version, episodes, frames, fps, features, camera keys, the
task of every episode, each frame's episode and frame index) and ``OUT_DIR/samples.npz`` (every
non-image feature of every frame, as lerobot returns it; the camera image of a few frames, as float
CHW in [0, 1]). Exit status 1 with one line on stderr when lerobot refuses the dataset.
"""

import json
import os
import sys

os.environ.setdefault('HF_HUB_OFFLINE', '1')  # never the hub: the dataset is local


def main(root: str, out: str) -> int:
    import numpy as np
    import torch
    import lerobot
    from lerobot.datasets.lerobot_dataset import LeRobotDataset

    try:
        dataset = LeRobotDataset('robotsim/export', root=root)
    except Exception as error:  # whatever lerobot raises is the finding
        print(f'lerobot {lerobot.__version__} refuses {root}: {type(error).__name__}: '
              f'{" ".join(str(error).split())[:400]}', file=sys.stderr)
        return 1
    cameras = list(dataset.meta.camera_keys)
    vectors = [key for key, feature in dataset.features.items() if feature['dtype'] not in ('image', 'video')]
    columns = {key: [] for key in vectors}
    tasks, image_samples = {}, {}
    sampled = set(np.linspace(0, len(dataset) - 1, num=min(5, len(dataset)), dtype=int).tolist())
    for index in range(len(dataset)):  # every frame, through __getitem__ as a DataLoader does
        item = dataset[index]
        if int(item['index']) != index:
            print(f'frame {index}: lerobot returned index {int(item["index"])}', file=sys.stderr)
            return 1
        for key in vectors:
            columns[key].append(np.asarray(item[key], dtype=np.float64).reshape(-1))
        tasks.setdefault(int(item['episode_index']), item['task'])
        for key in cameras:
            image = item[key]
            if image.dtype != torch.float32 or image.ndim != 3 or image.shape[0] != 3:
                print(f'frame {index}: {key} is {tuple(image.shape)} {image.dtype}, expected float32 (3, H, W)',
                      file=sys.stderr)
                return 1
            if index in sampled:
                image_samples[f'{key}@{index}'] = image.numpy()
    batch = next(iter(torch.utils.data.DataLoader(dataset, batch_size=4, shuffle=False, num_workers=0)))
    arrays = {f'column:{key}': np.stack(values) for key, values in columns.items()}
    arrays.update({f'image:{key}': value for key, value in image_samples.items()})
    os.makedirs(out, exist_ok=True)
    np.savez(os.path.join(out, 'samples.npz'), **arrays)
    summary = {'lerobot': lerobot.__version__, 'torch': torch.__version__, 'episodes': dataset.num_episodes,
               'frames': len(dataset), 'fps': dataset.fps, 'features': dataset.features, 'camera_keys': cameras,
               'tasks': {str(k): v for k, v in sorted(tasks.items())}, 'sampled_images': sorted(sampled),
               'batch_shapes': {k: list(v.shape) for k, v in batch.items() if hasattr(v, 'shape')},
               'stats_keys': sorted(dataset.meta.stats) if dataset.meta.stats else []}
    with open(os.path.join(out, 'summary.json'), 'w') as stream:
        json.dump(summary, stream, indent=1)
    print(f'lerobot {lerobot.__version__}: {dataset.num_episodes} episodes, {len(dataset)} frames at {dataset.fps} fps '
          f'read', flush=True)
    return 0


if __name__ == '__main__':
    if len(sys.argv) != 3:
        print(__doc__, file=sys.stderr)
        sys.exit(2)
    sys.exit(main(sys.argv[1], sys.argv[2]))
