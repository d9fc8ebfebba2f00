"""The readers users have, on the bags robotsim writes: Foxglove's ``mcap`` library with its ROS 2
decoder (``mcap-ros2-support``), besides rosbags."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

from robotsim_learning.mcap_crc import crc_problem


def foxglove_counts(bag: Path) -> dict[str, int]:
    """Messages per topic as Foxglove's reader decodes them (every message decoded from the bag's own
    ros2msg schemas, chunk CRCs validated); the bag's CRCs are all written and correct."""
    from mcap.reader import make_reader
    from mcap_ros2.decoder import DecoderFactory

    mcaps = sorted(Path(bag).glob('*.mcap'))
    assert len(mcaps) == 1, f'{bag}: expected one MCAP file, found {[p.name for p in mcaps]}'
    assert crc_problem(mcaps[0]) is None, crc_problem(mcaps[0])
    counts: Counter = Counter()
    with open(mcaps[0], 'rb') as stream:
        reader = make_reader(stream, decoder_factories=[DecoderFactory()], validate_crcs=True)
        for _, channel, _, decoded in reader.iter_decoded_messages():
            assert decoded is not None
            counts[channel.topic] += 1
    return dict(counts)
