"""``robotsim perception train --out perception.onnx``: stage 1 of a chained policy, from the simulator's own labels.

Frames of scenarios 0 ... N-1 of a randomisation spec train the network (``robotsim_learning.perception``); frames
of the next M scenarios, never trained on, score it: per-class IoU strict and within one pixel beside the
all-background baseline (``robotsim_learning.perception_scores``), printed and written with sample frames as a
picture beside the ONNX file.
"""

from __future__ import annotations

import argparse
import os
import sys

HELP = 'train the perception stage: camera frame -> floor/wall/obstacle map (ONNX), scored on held-out frames'
"""One line for ``robotsim --help`` (this module is a command: the ``robotsim.commands`` entry points)."""
DEFAULT_SPEC = 'room_obstacles.yaml'


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument('--out', required=True, help='the ONNX file to write (its folder must exist)')
    parser.add_argument('--randomization', default='',
                        help=f'randomisation spec YAML whose scenarios give the frames (default: {DEFAULT_SPEC})')
    parser.add_argument('--seed', type=int, default=0, help='seed of the scenarios and of training (0 ... 2^32-1)')
    parser.add_argument('--frames', type=int, default=400, help='training frames, one per scenario (default 400)')
    parser.add_argument('--held-out', type=int, default=100,
                        help='frames of the following scenarios that score the network (default 100)')
    parser.add_argument('--epochs', type=int, default=30, help='passes over the training frames (default 30)')
    parser.add_argument('--channels', type=int, default=16, help='channels of each convolution (default 16)')
    parser.add_argument('--factor', type=int, default=4,
                        help='frames are shrunk by this factor (default 4: 320x240 -> 80x60)')
    parser.add_argument('--shifted', default='', metavar='SPEC',
                        help='also score on the held-out scenarios of this randomisation spec (e.g. '
                             'room_obstacles_appearance_shift.yaml: looks outside the training ranges); its picture '
                             'is written as NAME.shifted.png')


def _problem(args: argparse.Namespace) -> str:
    from .perception import MAX_FRAMES
    if not 1 <= args.frames <= MAX_FRAMES:
        return f'--frames: expected 1 ... {MAX_FRAMES}, got {args.frames}'
    if not 1 <= args.held_out <= MAX_FRAMES:
        return f'--held-out: expected 1 ... {MAX_FRAMES}, got {args.held_out}'
    if not 1 <= args.epochs <= 1000:
        return f'--epochs: expected 1 ... 1000, got {args.epochs}'
    if not 1 <= args.channels <= 256:
        return f'--channels: expected 1 ... 256, got {args.channels}'
    if not 1 <= args.factor <= 16:
        return f'--factor: expected 1 ... 16, got {args.factor}'
    if not 0 <= args.seed < 2**32:
        return f'--seed: expected 0 ... 2^32-1, got {args.seed}'
    folder = os.path.dirname(os.path.abspath(args.out))
    if not args.out or os.path.isdir(args.out) or not os.path.isdir(folder):
        return f'--out {args.out}: expected an ONNX file to write in an existing folder'
    for option, value in (('--randomization', args.randomization), ('--shifted', args.shifted)):
        if value and not os.path.isfile(value):
            return f'{option} {value}: file not found (expected a randomisation spec YAML)'
    return ''


def run(args: argparse.Namespace) -> int:
    problem = _problem(args)
    if problem:
        print(f'robotsim perception: error: {problem}', file=sys.stderr)
        return 2
    try:
        import jax  # noqa: F401  (present only with requirements/train.txt)
    except ImportError as error:
        print(f'robotsim perception: error: training needs requirements/train.txt ({error})', file=sys.stderr)
        return 2
    from tqdm import tqdm

    from robotsim_core.description.load import share_path

    from .perception import CLASSES, PerceptionConfig, capture, export_onnx, train
    from .perception_scores import majority_baseline, segmentation_table
    spec = args.randomization or share_path('config', 'randomization', DEFAULT_SPEC)
    frames = {}
    sets = [('training', spec, 0, args.frames), ('held-out', spec, args.frames, args.held_out)]
    if args.shifted:
        sets.append(('shifted', args.shifted, args.frames, args.held_out))
    for name, source, first, count in sets:
        with tqdm(total=count, desc=f'{name} frames', unit='frame', file=sys.stderr) as bar:
            frames[name] = capture(source, args.seed, count, args.factor, first,
                                   progress=lambda done, total: bar.update(done - bar.n))
    with tqdm(total=args.epochs, desc='training', unit='epoch', file=sys.stderr) as bar:
        def progress(epoch, epochs, loss):
            bar.update(1)
            bar.set_postfix(loss=f'{loss:.4f}')
        net = train(frames['training'], PerceptionConfig(channels=args.channels, epochs=args.epochs, seed=args.seed),
                    progress)
    held = frames['held-out']
    predicted = net.predict(held.images)
    baseline = majority_baseline(frames['training'].labels, held.labels.shape, len(CLASSES))
    table = segmentation_table(predicted, held.labels, baseline, list(CLASSES), tolerance=1)
    export_onnx(net, args.out)
    picture = os.path.splitext(args.out)[0] + '.png'
    _picture(held, predicted, picture, f'{os.path.basename(args.out)}: held-out frames of '
                                       f'{os.path.basename(spec)}, seed {args.seed}')
    print(f'held-out frames {args.frames}-{args.frames + args.held_out - 1} of {os.path.basename(spec)} '
          f'(seed {args.seed}); baseline: every pixel the most frequent training class')
    print(table)
    if args.shifted:
        shifted = frames['shifted']
        predicted = net.predict(shifted.images)
        baseline = majority_baseline(frames['training'].labels, shifted.labels.shape, len(CLASSES))
        _picture(shifted, predicted, os.path.splitext(args.out)[0] + '.shifted.png',
                 f'{os.path.basename(args.out)}: held-out frames of {os.path.basename(args.shifted)}, seed {args.seed}')
        print(f'the same scenarios of {os.path.basename(args.shifted)} (appearance outside the training ranges)')
        print(segmentation_table(predicted, shifted.labels, baseline, list(CLASSES), tolerance=1))
    print(f'wrote {args.out} ({len(frames["training"].images)} training frames, {args.epochs} epochs, '
          f'{net.report["seconds"]:.0f} s) and {picture}')
    return 0


def _picture(frames, predicted, path: str, title: str, count: int = 6) -> None:
    """Sample held-out frames: the camera frame, its label and the prediction, a column each."""
    import matplotlib
    matplotlib.use('Agg')
    import matplotlib.pyplot as plt
    from matplotlib.colors import ListedColormap
    from matplotlib.patches import Patch

    from .perception import CLASSES
    colours = ['#ffffff', '#b5651d', '#8a8a8a', '#1f77b4']  # nothing, floor, wall, obstacle
    cmap = ListedColormap(colours)
    count = min(count, len(frames.images))
    figure, axes = plt.subplots(count, 3, figsize=(7.5, 1.9 * count + 0.8), squeeze=False)
    for row in range(count):
        axes[row, 0].imshow(frames.images[row])
        axes[row, 1].imshow(frames.labels[row] + 1, cmap=cmap, vmin=0, vmax=3, interpolation='nearest')
        axes[row, 2].imshow(predicted[row] + 1, cmap=cmap, vmin=0, vmax=3, interpolation='nearest')
        for column in range(3):
            axes[row, column].set_xticks([])
            axes[row, column].set_yticks([])
        axes[row, 0].set_ylabel(f'scenario {frames.scenarios[row]}', fontsize=8)
    for column, name in enumerate(('camera frame', 'label (simulator)', 'prediction')):
        axes[0, column].set_title(name, fontsize=9)
    figure.legend(handles=[Patch(color=colours[i + 1], label=name) for i, name in enumerate(CLASSES)]
                  + [Patch(color=colours[0], label='not scored (robot, nothing)', ec='black')],
                  loc='lower center', ncol=4, fontsize=8)
    figure.suptitle(title, fontsize=9)
    figure.tight_layout(rect=(0, 0.05, 1, 0.97))
    figure.savefig(path, dpi=90)
    plt.close(figure)
