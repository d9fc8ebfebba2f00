"""Replace one marked block (``<!-- NAME:start -->`` ... ``<!-- NAME:end -->``) of the documentation: how
``make bench``, the policy benchmark and the evaluation table write their figures (the rest of the file is
left as it is). The block may sit in README.md or in any page under docs/ beside it: it is found by name,
so a page can move without touching the scripts that write into it."""

from __future__ import annotations

from pathlib import Path


class ReadmeBlockError(ValueError):
    """No single block of that name (one line: what was expected)."""


def _holder(readme: Path, start: str) -> Path:
    """``readme`` if it holds the block, else the one page of the docs/ folder beside it that does."""
    readme = Path(readme)
    try:
        if start in readme.read_text(encoding='utf-8'):
            return readme
    except OSError as error:
        raise ReadmeBlockError(f'{readme}: cannot read ({error.strerror})') from None
    pages = [page for page in sorted((readme.parent / 'docs').glob('**/*.md'))
             if start in page.read_text(encoding='utf-8')]
    if len(pages) != 1:
        raise ReadmeBlockError(f'{readme}: expected one {start} block in it or in one page of docs/, '
                               f'found {len(pages)} pages')
    return pages[0]


def replace_block(readme: Path, name: str, block: str) -> Path:
    """Write ``block`` between the markers; returns the file written."""
    start, end = f'<!-- {name}:start -->', f'<!-- {name}:end -->'
    path = _holder(readme, start)
    text = path.read_text(encoding='utf-8')
    if text.count(start) != 1 or text.count(end) != 1 or text.index(start) > text.index(end):
        raise ReadmeBlockError(f'{path}: expected one {start} ... {end} block')
    head, rest = text.split(start, 1)
    _, tail = rest.split(end, 1)
    path.write_text(f'{head}{start}\n{block}\n{end}{tail}', encoding='utf-8')
    return path
