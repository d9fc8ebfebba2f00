"""``robotsim bag info BAG``: what a rosbag2 bag holds, as ``ros2 bag info`` prints it (rosbags' reader, no ROS)."""

from __future__ import annotations

import sys
from datetime import datetime, timezone
from pathlib import Path

HELP = 'what a rosbag2 bag holds: duration, time range, messages per topic with type and serialization'


def add_arguments(parser) -> None:
    parser.add_argument('bag', help='the bag folder (holding metadata.yaml and its storage files)')


def _time(ns: int) -> str:
    stamp = datetime.fromtimestamp(ns / 1e9, tz=timezone.utc)
    return f'{stamp:%b %d %Y %H:%M:%S}.{ns % 1_000_000_000:09d} ({ns / 1e9:.9f})'


def _storage_identifier(folder: Path) -> str:
    import yaml
    info = yaml.safe_load((folder / 'metadata.yaml').read_text()).get('rosbag2_bagfile_information', {})
    return str(info.get('storage_identifier', '?'))


def describe(bag: str) -> str:
    """The report of ``robotsim bag info`` (ValueError naming the bag when it cannot be read)."""
    from rosbags.rosbag2 import Reader
    from rosbags.rosbag2.errors import ReaderError

    folder = Path(bag)
    if not folder.is_dir():
        raise ValueError(f'{bag}: no such folder; expected a rosbag2 bag folder')
    if not (folder / 'metadata.yaml').is_file():
        raise ValueError(f'{bag}: no metadata.yaml; expected a rosbag2 bag folder (an interrupted recording is made '
                         f'readable by: robotsim bag repair {bag})')
    try:
        with Reader(folder) as reader:
            connections = sorted(reader.connections, key=lambda c: c.topic)
            files = sorted(p for p in folder.iterdir() if p.suffix in ('.mcap', '.db3'))
            size = sum(p.stat().st_size for p in files)
            lines = [f'Files:             {", ".join(p.name for p in files)}',
                     f'Bag size:          {size / 2**20:.1f} MiB',
                     f'Storage id:        {_storage_identifier(folder)}',
                     f'Duration:          {reader.duration / 1e9:.9f}s']
            if reader.message_count:
                lines += [f'Start:             {_time(reader.start_time)}',
                          f'End:               {_time(reader.end_time)}']
            lines.append(f'Messages:          {reader.message_count}')
            width = max((len(c.topic) for c in connections), default=0)
            for i, c in enumerate(connections):
                lines.append(('Topic information: ' if i == 0 else ' ' * 19)
                             + f'Topic: {c.topic:<{width}} | Type: {c.msgtype} | Count: {c.msgcount} '
                             f'| Serialization Format: {c.ext.serialization_format}')
            return '\n'.join(lines)
    except (ReaderError, OSError, KeyError, ValueError, AttributeError) as error:
        raise ValueError(f'{bag}: not a readable rosbag2 bag ({error}); an interrupted recording is made readable '
                         f'by: robotsim bag repair {bag}') from None


def run(args) -> int:
    try:
        print(describe(args.bag))
    except ValueError as error:
        print(f'robotsim: error: {error}', file=sys.stderr)
        return 2
    return 0
