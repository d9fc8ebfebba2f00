"""CRC-32 checksums in the MCAP files robotsim writes, and their check. ROS-free.

rosbags (the pinned version) writes every MCAP CRC field as 0, which the MCAP specification allows
("not computed"); readers then cannot tell a flipped bit from data. robotsim's bags carry:

- each chunk's ``uncompressed_crc`` (CRC-32 of the chunk's records), set when the chunk is written,
  so a killed recording's chunks are checked too;
- the footer's ``summary_crc`` (CRC-32 from the start of the summary section through the footer's
  ``summary_offset_start``), set when the bag is closed.

The data section's CRC (in ``DataEnd``) stays 0: it would cost a second read of the whole file at
close, and the chunk CRCs already cover every message. :func:`crc_problem` checks both kinds through
the ``mcap`` library (Foxglove's reader), which verifies chunk CRCs as it decompresses.
"""

from __future__ import annotations

import struct
import zlib
from pathlib import Path

MAGIC = b'\x89MCAP0\r\n'
_FOOTER = struct.Struct('<BQQQI')  # opcode 0x02, length 20, summary_start, summary_offset_start, summary_crc
_CHUNK_CRC_OFFSET = 1 + 8 + 8 + 8 + 8  # opcode, length, message start/end time, uncompressed size


def write_chunk_crcs(storage) -> None:
    """Make a rosbags ``McapWriter`` write each chunk's CRC: its ``close_chunk`` (called by rosbags
    and by robotsim's writer alike) is wrapped on this instance; the CRC field is filled in place
    once the chunk record is in the file."""
    close_chunk = storage.close_chunk

    def close_chunk_with_crc() -> None:
        crc = zlib.crc32(storage.chunk.bio.getbuffer())
        start = storage.bio.tell()
        close_chunk()
        end = storage.bio.tell()
        storage.bio.seek(start + _CHUNK_CRC_OFFSET)
        storage.bio.write(struct.pack('<I', crc))
        storage.bio.seek(end)

    storage.close_chunk = close_chunk_with_crc


def seal_summary_crc(mcap: Path) -> None:
    """Fill the footer's summary CRC of a closed MCAP file (reads the summary section only)."""
    with open(mcap, 'r+b') as stream:
        stream.seek(-(_FOOTER.size + len(MAGIC)), 2)
        footer_at = stream.tell()
        opcode, length, summary_start, summary_offset_start, _ = _FOOTER.unpack(stream.read(_FOOTER.size))
        if opcode != 0x02 or length != 20 or not 0 < summary_start <= footer_at:
            raise ValueError(f'{mcap}: no MCAP footer with a summary section at its end')
        stream.seek(summary_start)
        crc = zlib.crc32(stream.read(footer_at - summary_start))
        crc = zlib.crc32(_FOOTER.pack(opcode, length, summary_start, summary_offset_start, 0)[:-4], crc)
        stream.seek(footer_at + _FOOTER.size - 4)
        stream.write(struct.pack('<I', crc))


def crc_problem(mcap: Path) -> str | None:
    """What is wrong with the CRCs of ``mcap`` (one line), or None: every chunk CRC is written and
    correct (the ``mcap`` library checks them while reading every record) and so is the summary CRC."""
    from mcap.exceptions import McapError
    from mcap.records import Chunk
    from mcap.stream_reader import StreamReader, breakup_chunk

    without = 0
    try:
        with open(mcap, 'rb') as stream:
            for record in StreamReader(stream, emit_chunks=True, validate_crcs=True).records:
                if isinstance(record, Chunk):
                    if record.uncompressed_crc == 0:
                        without += 1
                    else:
                        breakup_chunk(record, validate_crc=True)  # raises on a CRC that differs
    except (McapError, ValueError, EOFError, struct.error) as error:
        return f'{mcap.name}: {type(error).__name__}: {" ".join(str(error).split())}'
    if without:
        return f'{mcap.name}: {without} chunks without a CRC'
    return _summary_crc_problem(mcap)


def _summary_crc_problem(mcap: Path) -> str | None:
    with open(mcap, 'rb') as stream:
        stream.seek(-(_FOOTER.size + len(MAGIC)), 2)
        footer_at = stream.tell()
        opcode, length, summary_start, summary_offset_start, stored = _FOOTER.unpack(stream.read(_FOOTER.size))
        if opcode != 0x02 or not 0 < summary_start <= footer_at:
            return f'{mcap.name}: no footer with a summary section (an interrupted recording: robotsim bag repair)'
        stream.seek(summary_start)
        crc = zlib.crc32(stream.read(footer_at - summary_start))
    crc = zlib.crc32(_FOOTER.pack(opcode, length, summary_start, summary_offset_start, 0)[:-4], crc)
    if stored == 0:
        return f'{mcap.name}: the summary has no CRC'
    if stored != crc:
        return f'{mcap.name}: summary CRC {stored:#010x} differs from its content\'s {crc:#010x} (the file was changed)'
    return None
