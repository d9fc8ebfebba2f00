"""``robotsim bag repair BAG``: make an interrupted MCAP rosbag2 recording readable again
(:mod:`robotsim_learning.bag_repair`)."""

from __future__ import annotations

import sys

HELP = 'rebuild the MCAP summary/footer and metadata.yaml of an interrupted recording'


def add_arguments(parser) -> None:
    parser.add_argument('bag', help='the bag folder (holding one .mcap file)')


def run(args) -> int:
    from ..bag_repair import BagRepairError, repair_bag
    try:
        print(repair_bag(args.bag))
    except BagRepairError as error:
        print(f'robotsim: error: {error}', file=sys.stderr)
        return 2
    return 0
