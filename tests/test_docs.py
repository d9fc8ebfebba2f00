"""The documentation: a short README front page whose links, make targets and commands are real, pages that
speak of the project and not of how it was made, reference pages generated from the code and current, a
Sphinx (MyST) build with warnings as errors, the README's quick start run as written, and the linter."""

from __future__ import annotations

import os
import re
import subprocess
import sys

import pytest

from rostest_helpers import VENV
from test_layering import WORKSPACE

README = WORKSPACE / 'README.md'
DOCS = WORKSPACE / 'docs'
PAGES = sorted(DOCS.glob('**/*.md'))
INTERNAL_WORDS = re.compile(r'\b(the [a-z-]+ issue|issues? [0-9]+|the issue|issue\'s|these machines|this session|'
                            r'found by a review|here)\b', re.IGNORECASE)
"""Words of how the project was made, not of what it is (a reader has no issue tracker and no 'here')."""


def _section(text: str, heading: str) -> str:
    return text.split(f'\n{heading}\n', 1)[1].split('\n## ', 1)[0]


def test_the_readme_is_a_front_page_whose_links_and_targets_exist():
    text = README.read_text(encoding='utf-8')
    assert len(text.splitlines()) <= 150, 'README.md: at most 150 lines (the rest belongs in docs/)'
    links = re.findall(r'\]\(([^)#]+)(?:#[^)]*)?\)', text)
    assert len(links) >= 15, links
    for link in links:
        if not link.startswith(('http://', 'https://')):
            assert (WORKSPACE / link).exists(), f'README.md links to {link}, which does not exist'
    make_targets = set(re.findall(r'^([a-z][a-z-]*):', (WORKSPACE / 'Makefile').read_text(), re.MULTILINE))
    for target in set(re.findall(r'`make ([a-z][a-z-]*)', text)):
        assert target in make_targets, f'README.md names `make {target}`, which the Makefile does not have'
    assert (WORKSPACE / 'LICENSE').read_text().lstrip().startswith('Apache License')


def test_every_page_is_in_the_table_of_contents_and_speaks_of_the_project():
    for page in PAGES:  # in the toctree of docs/index.md, or of its own folder's index.md
        own = page.parent / 'index.md'
        index = own if own.is_file() and page != own else DOCS / 'index.md'
        name = page.relative_to(index.parent).with_suffix('').as_posix()
        assert page == DOCS / 'index.md' or re.search(rf'^{re.escape(name)}$', index.read_text(encoding='utf-8'),
                                                      re.MULTILINE), f'{page.relative_to(WORKSPACE)} is in no toctree'

    for path in [README, *PAGES]:
        if path.parent.name == 'reference':
            continue  # generated from the code's help texts, where 'write the URDF here' means the option's path
        for number, line in enumerate(path.read_text(encoding='utf-8').splitlines(), 1):
            found = INTERNAL_WORDS.search(line)
            assert not found, f'{path.relative_to(WORKSPACE)}:{number}: {found.group(0)!r}: {line.strip()}'


def documented_commands() -> list[tuple[str, str]]:
    """(where, command) of every ``robotsim ...`` line in a code block of the README and the docs (continuation
    lines joined, comments dropped), except synopsis lines (``[OPTIONAL]``, ``a|b``, ``...``)."""
    import shlex
    found = []
    for path in [README, *PAGES]:
        if path.parent.name == 'reference':
            continue
        block, pending = False, ''
        for number, line in enumerate(path.read_text(encoding='utf-8').splitlines(), 1):
            if line.lstrip().startswith('```'):
                block, pending = not block, ''
                continue
            if not block:
                continue
            line = pending + ' ' + line.strip() if pending else line.strip()
            if line.endswith('\\'):
                pending = line[:-1]
                continue
            pending = ''
            command = re.split(r'\s{3,}| # ', line)[0].strip()  # a synopsis' description, a comment
            if command.startswith('robotsim ') and not re.search(r'\[|\||\.\.\.', command):
                found.append((f'{path.relative_to(WORKSPACE)}:{number}', shlex.split(command)[1:]))
    return found


def test_every_documented_command_is_accepted_by_the_parser():
    """Every concrete ``robotsim`` command the README, the guides and the tutorials show parses with the real
    command line (old spellings too would: they are refused here), so a renamed option cannot linger in a page."""
    from robotsim.cli import RENAMED, build_parser

    commands = documented_commands()
    assert len(commands) > 30, commands
    problems = []
    for where, words in commands:
        if any(tuple(words[:len(old)]) == old for old in RENAMED) or '--engine' in words and words[0] == 'dataset' \
                or any(word.startswith('--driver') and ':' in word for word in words):
            problems.append(f'{where}: an old spelling: robotsim {" ".join(words)}')
            continue
        parser = build_parser()
        try:
            args, extras = parser.parse_known_args(words)
        except SystemExit:
            problems.append(f'{where}: refused: robotsim {" ".join(words)}')
            continue
        if extras:
            problems.append(f'{where}: not accepted {extras}: robotsim {" ".join(words)}')
    assert not problems, '\n'.join(problems)
    # The check refuses what the parser refuses.
    parser = build_parser()
    with pytest.raises(SystemExit):
        parser.parse_args(['dataset', 'generate', '--out', 'x'])


def test_the_cli_at_a_glance_names_real_commands():
    from robotsim.cli import build_parser

    commands = next(action for action in build_parser()._actions if action.dest == 'command').choices
    glance = _section(README.read_text(encoding='utf-8'), '## The command line at a glance')
    named = set(re.findall(r'^robotsim ([a-z]+)', glance, re.MULTILINE))
    assert named == set(commands), (named ^ set(commands))


def test_the_reference_pages_are_generated_from_the_code_and_current(tmp_path):
    run = subprocess.run([sys.executable, str(DOCS / 'generate_reference.py'), '--check'],
                         capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr
    cli = (DOCS / 'reference' / 'cli.md').read_text(encoding='utf-8')
    for words in ('robotsim dataset', 'robotsim arm reach', 'robotsim launch', '--episodes'):
        assert words in cli, words
    launch = (DOCS / 'reference' / 'launch.md').read_text(encoding='utf-8')
    from robotsim.bringup import launch_arguments
    for name, _, _ in launch_arguments():
        assert f'| `{name}` |' in launch, name
    # A stale page is found: the check compares, it does not only regenerate.
    stale = tmp_path / 'docs'
    (stale / 'reference').mkdir(parents=True)
    (stale / 'generate_reference.py').write_text((DOCS / 'generate_reference.py').read_text())
    for page in ('cli.md', 'launch.md', 'config.md', 'topics.md'):
        (stale / 'reference' / page).write_text((DOCS / 'reference' / page).read_text())
    (stale / 'reference' / 'launch.md').write_text(launch.replace('| `seed` |', '| `old_seed` |'))
    run = subprocess.run([sys.executable, str(stale / 'generate_reference.py'), '--check'],
                         capture_output=True, text=True, timeout=300)
    assert run.returncode == 1 and 'launch.md' in run.stderr and 'cli.md' not in run.stderr, run.stderr


@pytest.mark.skipif(sys.version_info < (3, 11), reason='Sphinx 9 and MyST 5 (requirements/docs.txt) need Python >= 3.11')
def test_the_docs_build_with_sphinx_and_warnings_as_errors(tmp_path):
    out = tmp_path / 'html'
    run = subprocess.run([sys.executable, '-m', 'sphinx', '-W', '--keep-going', '-q', '-b', 'html', str(DOCS), str(out)],
                         capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stdout + run.stderr
    for page in PAGES:
        assert (out / page.relative_to(DOCS).with_suffix('.html')).exists(), page
    cli = (out / 'reference' / 'cli.html').read_text(encoding='utf-8')
    assert 'id="robotsim-arm-reach"' in cli and '<span class="pre">--episodes</span>' in cli
    # A broken cross-reference fails the build (warnings are errors).
    broken = tmp_path / 'broken'
    broken.mkdir()
    for name in ('conf.py', 'index.md'):
        (broken / name).write_text((DOCS / name).read_text())
    (broken / 'index.md').write_text('# x\n\nSee [the missing page](missing.md).\n')
    run = subprocess.run([sys.executable, '-m', 'sphinx', '-W', '-q', '-b', 'html', str(broken), str(tmp_path / 'b')],
                         capture_output=True, text=True, timeout=600)
    assert run.returncode != 0 and 'missing' in run.stderr, run.stderr


def test_the_python_sources_pass_the_linter():
    ruff = VENV / 'bin' / 'ruff'
    if not ruff.exists():
        pytest.skip('ruff is installed by make test (requirements/test.txt)')
    run = subprocess.run([str(ruff), 'check', '--no-cache', 'src', 'tests', 'bench', 'docs', 'launch', 'scripts'],
                         cwd=WORKSPACE, capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stdout + run.stderr


def test_the_quick_start_runs_as_written():
    """The README's bare-machine quick start, line by line in one shell, in this clone (the `git clone` and
    `cd` lines are the only ones not run: the clone is this one)."""
    block = re.search(r'```bash\n(.*?)```', _section(README.read_text(encoding='utf-8'), '## Quick start'), re.S).group(1)
    commands = [line.split('  #')[0].strip() for line in block.splitlines()
                if line.strip() and not line.startswith(('git clone', 'cd '))]
    assert any(command.startswith('make sim') for command in commands), commands
    for stale in ('run_report.png', 'out/rover.urdf', 'out/rover.xml'):
        (WORKSPACE / stale).unlink(missing_ok=True)
    script = 'set -euo pipefail\n' + '\n'.join(commands) + '\n'
    run = subprocess.run(['bash', '-c', script], cwd=WORKSPACE, capture_output=True, text=True, timeout=900,
                         env={**os.environ, 'MAKEFLAGS': ''})
    assert run.returncode == 0, run.stdout[-4000:] + run.stderr[-4000:]
    assert (WORKSPACE / 'run_report.png').stat().st_size > 10_000, run.stdout[-2000:]
    assert '<robot name="rover"' in (WORKSPACE / 'out' / 'rover.urdf').read_text()
    assert '<mujoco' in (WORKSPACE / 'out' / 'rover.xml').read_text()
