"""Replace one marked block of README.md (``<!-- NAME:start -->`` ... ``<!-- NAME:end -->``): how the
policy benchmark and the evaluation table write their figures (the rest of the file is left as it is)."""

from __future__ import annotations

from pathlib import Path


class ReadmeBlockError(ValueError):
    """The README has no single block of that name (one line: what was expected)."""


def replace_block(readme: Path, name: str, block: str) -> None:
    start, end = f'<!-- {name}:start -->', f'<!-- {name}:end -->'
    try:
        text = Path(readme).read_text(encoding='utf-8')
    except OSError as error:
        raise ReadmeBlockError(f'{readme}: cannot read ({error.strerror})') from None
    if text.count(start) != 1 or text.count(end) != 1 or text.index(start) > text.index(end):
        raise ReadmeBlockError(f'{readme}: expected one {start} ... {end} block')
    head, rest = text.split(start, 1)
    _, tail = rest.split(end, 1)
    Path(readme).write_text(f'{head}{start}\n{block}\n{end}{tail}', encoding='utf-8')
