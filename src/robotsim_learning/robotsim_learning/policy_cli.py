"""``robotsim policy train DATASET --out policy.onnx`` (the robotsim CLI hands ``policy`` commands here)."""

from __future__ import annotations

import argparse
import sys


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument('action', choices=['train'], help='train: behaviour cloning from a dataset, ONNX out')
    parser.add_argument('datasets', nargs='+', metavar='DATASET',
                        help='dataset folders (robotsim dataset generate --driver expert, or dagger:POLICY)')
    parser.add_argument('--out', required=True, help='the ONNX policy file to write')
    parser.add_argument('--epochs', type=int, default=60, help='passes over the training episodes')
    parser.add_argument('--hidden', default='128,128', help='hidden layer widths, comma-separated')
    parser.add_argument('--seed', type=int, default=0, help='seed of initialisation, shuffling and validation split')
    parser.add_argument('--no-image', action='store_true', help='observe lidar, odometry and goal only')
    parser.add_argument('--heading', choices=['imu', 'odometry'], default='imu',
                        help="the robot's heading for the goal's bearing: the IMU's orientation with the wheel "
                             "odometry's travel (default; skid-steer odometry's heading drifts), or the odometry alone")


def run(args: argparse.Namespace) -> int:
    try:
        from .policy_model import TrainConfig
        from .policy_training import TrainingDataError, train_from_dataset
        import jax  # noqa: F401  (present only with requirements/train.txt)
    except ImportError as error:
        print(f'robotsim policy: error: training needs requirements/train.txt ({error})', file=sys.stderr)
        return 2
    try:
        hidden = tuple(int(width) for width in args.hidden.split(','))
        if not hidden or min(hidden) < 1 or args.epochs < 1:
            raise ValueError
    except ValueError:
        print(f'robotsim policy: error: --hidden/--epochs: expected positive integers, got {args.hidden!r}, '
              f'{args.epochs}', file=sys.stderr)
        return 2
    bar = None

    def progress(epoch: int, epochs: int, train_loss: float, validation_loss: float) -> None:
        nonlocal bar
        if bar is None:
            from tqdm import tqdm
            bar = tqdm(total=epochs, desc='training', unit='epoch', file=sys.stderr)
        bar.update(1)
        bar.set_postfix(train=f'{train_loss:.4f}', validation=f'{validation_loss:.4f}')

    try:
        report = train_from_dataset(args.datasets, args.out, TrainConfig(hidden=hidden, epochs=args.epochs,
                                                                        seed=args.seed),
                                    image=not args.no_image, progress=progress, heading=args.heading)
    except TrainingDataError as error:
        print(f'robotsim policy: error: {error}', file=sys.stderr)
        return 2
    finally:
        if bar is not None:
            bar.close()
    print(f"wrote {args.out}: {report['episodes']} episodes, {report['samples']} samples; validation loss "
          f"{report['validation_loss']:.4f} vs {report['mean_baseline_loss']:.4f} predicting the mean action; "
          f"training {report['seconds']:.1f} s ({report['total_seconds']:.1f} s with reading the bags)")
    return 0
