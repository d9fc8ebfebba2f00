"""``robotsim policy train DATASET --out policy.onnx``: behaviour cloning from datasets, ONNX out."""

from __future__ import annotations

import argparse
import os
import sys


HELP = 'behaviour cloning from datasets into an ONNX policy'
"""One line for ``robotsim --help`` (this module is a command: the ``robotsim.commands`` entry points)."""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument('datasets', nargs='+', metavar='DATASET',
                        help='dataset folders (robotsim dataset generate --driver expert, or --driver dagger --policy FILE)')
    parser.add_argument('--out', required=True,
                        help='the ONNX policy file to write (its folder must exist; checked before training)')
    parser.add_argument('--epochs', type=int, default=60, help='passes over the training episodes')
    parser.add_argument('--hidden', default='128,128',
                        help='hidden layer widths, comma-separated: 1 to 8 layers, each 1 ... 4096')
    parser.add_argument('--seed', type=int, default=0,
                        help='seed of initialisation, shuffling and validation split: 0 ... 2^32-1')
    parser.add_argument('--no-image', action='store_true', help='observe lidar, odometry and goal only')
    parser.add_argument('--no-scan', action='store_true',
                        help='observe the camera image, odometry and goal only: a camera-only policy, for a robot '
                             'without lidar (datasets with camera images)')
    from .policy_model import MAX_ENSEMBLE, SCHEDULES
    parser.add_argument('--lr-schedule', choices=SCHEDULES, default='constant',
                        help="Adam's step size 1e-3 throughout (constant), or decayed along a cosine to 1e-5 at the "
                             'last step (cosine)')
    parser.add_argument('--ensemble', type=int, default=1,
                        help='networks trained from different initialisations; the policy acts on their mean '
                             f'(1 ... {MAX_ENSEMBLE}, default 1)')
    parser.add_argument('--weight-decay', type=float, default=0.0,
                        help='decoupled weight decay of AdamW, 0 ... 1 (default 0: plain Adam)')
    from .policy_model import HEADS, MAX_BINS
    parser.add_argument('--head', choices=HEADS, default='tanh',
                        help='tanh: one command fitted by mean squared error (where demonstrations disagree it learns '
                             'their average); bins: the best-scoring command of a grid, fitted by cross-entropy (picks '
                             'one of disagreeing demonstrations)')
    parser.add_argument('--bins', default='9,15',
                        help=f'cells of the bins head: linear,angular, each 2 ... {MAX_BINS} (default 9,15)')
    parser.add_argument('--bin-window', default='0,0',
                        help='the bins head commands the probability-weighted mean of the cells within linear,angular '
                             "cells of the best-scoring one (default 0,0: the best cell's command)")
    from .policy_model import MAX_NEAR_WEIGHT, MAX_SAMPLE_TEMPERATURE, MAX_TURN_COMMIT, TURN_COMMIT_RATE
    parser.add_argument('--turn-commit', type=float, default=0.0, metavar='F',
                        help='the bins head holds the turn it is making: when its previous command turned faster than '
                             f'{TURN_COMMIT_RATE:g} rad/s, the cells turning the other way weigh 1/(1+F) of their '
                             f'probability when it acts (training is unchanged; 0 ... {MAX_TURN_COMMIT:g}, default 0: '
                             'none; the policy file then takes its previous command as a second input)')
    parser.add_argument('--sample-temperature', type=float, default=0.0, metavar='T',
                        help='the bins head draws its cell, each with probability proportional to p ** (1/T), instead '
                             'of taking the best one, from a generator seeded by the run (the same seed, the same '
                             f'commands; training is unchanged; 0 ... {MAX_SAMPLE_TEMPERATURE:g}, default 0: the best '
                             'cell; the policy file then takes a uniform draw as an input)')
    from .policy_model import SPOT_SPEED
    parser.add_argument('--sample-on-spot', action='store_true',
                        help='with --sample-temperature: draw the cell only while turning on the spot (the previous '
                             f'command slower than {SPOT_SPEED:g} m/s and turning faster than {TURN_COMMIT_RATE:g} '
                             'rad/s) and take the best cell everywhere else (the policy file then takes its previous '
                             'command as an input as well)')
    from .policy_model import MAX_SCAN_CHANNELS, MAX_SCAN_CONV_LAYERS, SCAN_KERNEL
    parser.add_argument('--scan-conv', default='', metavar='C1,C2,...',
                        help='circular convolutions over the scan before the hidden layers, their channels '
                             f'comma-separated (1 to {MAX_SCAN_CONV_LAYERS} layers of 1 ... {MAX_SCAN_CHANNELS}; each '
                             f'reads {SCAN_KERNEL} neighbouring sectors with stride 2, so the sectors must divide by 2 '
                             "per layer): the same weights at every bearing; exported as dense layers (default '': "
                             'none)')
    parser.add_argument('--near-weight', type=float, default=1.0,
                        help='weight in the loss of the decisions taken with an obstacle closer than --near-range '
                             f'(1 ... {MAX_NEAR_WEIGHT:g}; default 1: every decision alike)')
    parser.add_argument('--near-range', type=float, default=0.5,
                        help="nearest scan sector (m) below which a decision weighs --near-weight (default 0.5)")
    parser.add_argument('--corridors', action='store_true',
                        help='also observe how far the way is free straight ahead, toward the goal and 20 and 40 '
                             "degrees either side of it (a corridor as wide as the robot's footprint, from the scan)")
    parser.add_argument('--route', type=int, default=0, metavar='N',
                        help='also observe the way to the goal planned over a memory of what the lidar has seen: the '
                             'change of its cost to go toward N bearings around the robot and the cost to go '
                             '(an even N, 2 ... 64; default 0: no route)')
    parser.add_argument('--no-twist', action='store_true',
                        help="leave the odometry's twist out of the observation (a network imitating demonstrations "
                             'can learn from the robot\'s own motion to go on with it)')
    parser.add_argument('--waypoint', type=float, default=0.0, metavar='M',
                        help="observe the goal's bearing as that of the point M metres along the way planned over the "
                             "memory of what the lidar has seen (the goal's distance stays its own; 0 ... 5, default "
                             "0: the goal's own bearing)")
    parser.add_argument('--mirror', action='store_true',
                        help="also train on every decision's mirror image about the robot's x axis (scan, yaw rate, "
                             'goal and turn mirrored; for a robot symmetric about that axis, with --no-image)')
    parser.add_argument('--perception', default='', metavar='FILE',
                        help='train the control stage of a chained policy: the camera image is observed through this '
                             'perception model (robotsim perception train) as its floor/wall/obstacle abstraction; '
                             'the model is copied beside --out as NAME.perception.onnx (with --no-scan: no lidar)')
    parser.add_argument('--sectors', type=int, default=36,
                        help='the scan is pooled into this many equal sectors, each its nearest range (1 ... the '
                             "scan's samples; default 36)")
    parser.add_argument('--heading', choices=['imu', 'odometry'], default='imu',
                        help="the robot's heading for the goal's bearing: the IMU's orientation with the wheel "
                             "odometry's travel (default; skid-steer odometry's heading drifts), or the odometry alone")
    parser.add_argument('--no-cache', action='store_true',
                        help="decode every bag, without reading or writing the sample cache (by default each bag's "
                             'samples are kept in ~/.cache/robotsim/samples, or $ROBOTSIM_SAMPLE_CACHE, bounded by '
                             '$ROBOTSIM_SAMPLE_CACHE_BYTES, default 4 GiB, and the same bag is not decoded again)')


def _out_problem(out: str) -> str:
    """'' when the policy file can be written at ``out``, else what was expected (checked before training, so
    a typo does not cost the training)."""
    if not out:
        return "expected the ONNX policy file to write, got ''"
    if os.path.isdir(out):
        return f'is a folder; expected the ONNX policy file to write (e.g. {os.path.join(out, "policy.onnx")})'
    folder = os.path.dirname(os.path.abspath(out))
    if not os.path.isdir(folder):
        return f'folder {folder} does not exist; expected the policy file in an existing folder'
    if not os.access(folder, os.W_OK | os.X_OK):
        return f'cannot write in folder {folder} (permission denied)'
    if os.path.exists(out) and not os.access(out, os.W_OK):
        return 'the file exists and is read-only'
    return ''


def _bins(text: str) -> tuple[int, ...]:
    """``--bins`` or ``--bin-window`` as cell counts (empty when it is not comma-separated integers)."""
    try:
        return tuple(int(count) for count in text.split(','))
    except ValueError:
        return ()


def _argument_problem(args: argparse.Namespace) -> str:
    """The first bad argument as '--name: what was expected', or ''."""
    from .policy_model import HIDDEN_EXPECTED, MAX_ENSEMBLE, SEED_LIMIT, hidden_fits

    if args.epochs < 1:
        return f'--epochs: expected a positive integer, got {args.epochs}'
    try:
        hidden = tuple(int(width) for width in args.hidden.split(','))
    except ValueError:
        hidden = ()
    if not hidden_fits(hidden):
        return f'--hidden: expected {HIDDEN_EXPECTED}, got {args.hidden!r}'
    if not 0 <= args.seed < SEED_LIMIT:
        return f'--seed: expected 0 ... 2^32-1, got {args.seed}'
    if not 1 <= args.ensemble <= MAX_ENSEMBLE:
        return f'--ensemble: expected 1 ... {MAX_ENSEMBLE} networks, got {args.ensemble}'
    if not 0.0 <= args.weight_decay <= 1.0:
        return f'--weight-decay: expected 0 ... 1, got {args.weight_decay}'
    from .policy_model import MAX_BINS
    bins = _bins(args.bins)
    if len(bins) != 2 or not all(2 <= count <= MAX_BINS for count in bins):
        return f'--bins: expected linear,angular cell counts, each 2 ... {MAX_BINS}, got {args.bins!r}'
    window = _bins(args.bin_window)
    if len(window) != 2 or not all(0 <= count <= MAX_BINS for count in window):
        return f'--bin-window: expected linear,angular cell counts, each 0 ... {MAX_BINS}, got {args.bin_window!r}'
    from .policy_model import MAX_TURN_COMMIT
    if not 0.0 <= args.turn_commit <= MAX_TURN_COMMIT:
        return f'--turn-commit: expected 0 ... {MAX_TURN_COMMIT:g}, got {args.turn_commit:g}'
    if args.turn_commit and args.head != 'bins':
        return f'--turn-commit: applies to the bins head (--head bins), got --head {args.head}'
    from .policy_model import MAX_SAMPLE_TEMPERATURE
    if not 0.0 <= args.sample_temperature <= MAX_SAMPLE_TEMPERATURE:
        return f'--sample-temperature: expected 0 ... {MAX_SAMPLE_TEMPERATURE:g}, got {args.sample_temperature:g}'
    if args.sample_temperature and args.head != 'bins':
        return f'--sample-temperature: applies to the bins head (--head bins), got --head {args.head}'
    if args.sample_on_spot and not args.sample_temperature:
        return '--sample-on-spot: applies to a policy that draws its cell (--sample-temperature T > 0), got none'
    if window != (0, 0) and args.head != 'bins':
        return f'--bin-window: applies to the bins head (--head bins), got --head {args.head}'
    if args.scan_conv:
        from .policy_model import scan_conv_fits
        channels = _bins(args.scan_conv)
        problem = scan_conv_fits(channels, args.sectors) if channels else f'channel counts, got {args.scan_conv!r}'
        if problem:
            return f'--scan-conv: expected {problem}'
        if args.no_scan:
            return '--scan-conv: convolutions over the scan: expected it without --no-scan'
    if args.no_scan and args.no_image:
        return '--no-scan: expected the camera image observed with it (not --no-image): a policy must see something'
    if args.no_scan and args.corridors:
        return '--corridors: measured on the scan: expected it without --no-scan'
    if args.route and (args.route < 2 or args.route % 2 or args.route > 64):
        return f'--route: expected an even number of bearings 2 ... 64 (0: no route), got {args.route}'
    if not 0 <= args.waypoint <= 5:
        return f'--waypoint: expected 0 ... 5 m, got {args.waypoint:g}'
    if args.no_scan and (args.route or args.waypoint):
        return '--route: planned over what the lidar has seen: expected it without --no-scan'
    if args.perception and args.no_image:
        return '--perception: the perception stage sees the camera image: expected it without --no-image'
    if args.perception and not os.path.isfile(args.perception):
        return f'--perception: {args.perception}: file not found (expected an ONNX file of robotsim perception train)'
    from .policy_model import MAX_NEAR_WEIGHT
    if not 1.0 <= args.near_weight <= MAX_NEAR_WEIGHT:
        return f'--near-weight: expected 1 ... {MAX_NEAR_WEIGHT:g}, got {args.near_weight}'
    if not 0.0 < args.near_range <= 100.0:
        return f'--near-range: expected a range in metres, 0 < r <= 100, got {args.near_range}'
    if not 1 <= args.sectors <= 4096:
        return f"--sectors: expected 1 ... 4096 (and at most the scan's samples), got {args.sectors}"
    problem = _out_problem(args.out)
    if problem:
        return f'--out {args.out}: {problem}'
    return ''


def run(args: argparse.Namespace) -> int:
    try:
        from .observation import CORRIDORS
        from .policy_model import TrainConfig
        from .policy_training import TrainingDataError, train_from_dataset
        import jax  # noqa: F401  (present only with requirements/train.txt)
    except ImportError as error:
        print(f'robotsim policy: error: training needs requirements/train.txt ({error})', file=sys.stderr)
        return 2
    problem = _argument_problem(args)
    if problem:
        print(f'robotsim policy: error: {problem}', file=sys.stderr)
        return 2
    hidden = tuple(int(width) for width in args.hidden.split(','))
    bar = reading_bar = None

    def reading(done: int, total: int, cached: int) -> None:
        nonlocal reading_bar
        if reading_bar is None:
            from tqdm import tqdm
            reading_bar = tqdm(total=total, desc='reading the bags', unit='episode', file=sys.stderr)
        reading_bar.update(1)
        reading_bar.set_postfix(cached=cached)
        if done == total:
            reading_bar.close()

    def progress(epoch: int, epochs: int, train_loss: float, validation_loss: float) -> None:
        nonlocal bar
        if bar is None:
            from tqdm import tqdm
            bar = tqdm(total=epochs, desc='training', unit='epoch', file=sys.stderr)
        bar.update(1)
        bar.set_postfix(train=f'{train_loss:.4f}', validation=f'{validation_loss:.4f}')

    try:
        report = train_from_dataset(args.datasets, args.out, TrainConfig(hidden=hidden, epochs=args.epochs,
                                                                        seed=args.seed, schedule=args.lr_schedule,
                                                                        weight_decay=args.weight_decay,
                                                                        ensemble=args.ensemble, head=args.head,
                                                                        bins=_bins(args.bins),
                                                                        bin_window=_bins(args.bin_window),
                                                                        near_weight=args.near_weight,
                                                                        turn_commit=args.turn_commit,
                                                                        sample_temperature=args.sample_temperature,
                                                                        sample_on_spot=args.sample_on_spot,
                                                                        scan_conv=_bins(args.scan_conv),
                                                                        near_range=args.near_range),
                                    image=not args.no_image, progress=progress, heading=args.heading,
                                    sectors=args.sectors, corridors=CORRIDORS if args.corridors else (),
                                    scan=not args.no_scan, perception=args.perception, mirror=args.mirror,
                                    cache=None if args.no_cache else '', reading=reading, route=args.route,
                                    waypoint=args.waypoint, twist=not args.no_twist,
                                    command=['robotsim', 'policy', 'train', *sys.argv[3:]]
                                    if sys.argv[1:3] == ['policy', 'train'] else None)
    except TrainingDataError as error:
        print(f'robotsim policy: error: {error}', file=sys.stderr)
        return 2
    finally:
        for shown in (reading_bar, bar):
            if shown is not None:
                shown.close()
    print(f"wrote {args.out}: {report['episodes']} episodes, {report['samples']} samples; validation loss "
          f"{report['validation_loss']:.4f} vs {report['mean_baseline_loss']:.4f} predicting the mean action; "
          f"training {report['seconds']:.1f} s ({report['total_seconds']:.1f} s with reading the bags, "
          f"{report['cached_episodes']} of them from the sample cache)")
    return 0
