"""Bad input to `robotsim dataset generate|verify|export`: one line naming the file, key, argument
or option and what was expected, exit status 2, no traceback, and nothing of the user's data lost.
Also: verify names an incomplete dataset (exit 1). The `robotsim` command line as a user runs it, on
tiny datasets (1-2 episodes of 5 s, no cameras)."""

from __future__ import annotations

import json
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from rostest_helpers import run_measuring_peak_rss
from test_dataset import SMALL_COURSE, kill_generation_mid_episode

CLI = [sys.executable, '-m', 'robotsim.cli']


def robotsim(*args: str, timeout: float = 300) -> subprocess.CompletedProcess:
    return subprocess.run([*CLI, *map(str, args)], capture_output=True, text=True, timeout=timeout)


def generate(out: Path, *extra: str, episodes: int = 1) -> subprocess.CompletedProcess:
    return robotsim('dataset', 'generate', '--randomization', SMALL_COURSE, '--episodes', episodes, '--no-cameras',
                    '--no-progress', '--out', out, *extra)


def error_line(completed: subprocess.CompletedProcess) -> str:
    """The one `robotsim: error: ...` line of a refused command (exit 2, no traceback)."""
    assert completed.returncode == 2, (completed.returncode, completed.stdout, completed.stderr)
    assert 'Traceback' not in completed.stderr, completed.stderr
    lines = completed.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith('robotsim: error: '), completed.stderr
    return lines[0]


def snapshot(folder: Path) -> dict[str, bytes | None]:
    """Every file and folder under ``folder`` with its content: what must not change."""
    return {str(p.relative_to(folder)): (p.read_bytes() if p.is_file() else None) for p in sorted(folder.rglob('*'))}


@pytest.fixture(scope='module')
def dataset(tmp_path_factory) -> Path:
    """A complete 2-episode dataset (copy it before changing anything)."""
    out = tmp_path_factory.mktemp('datasets') / 'two'
    completed = generate(out, episodes=2)
    assert completed.returncode == 0, completed.stderr
    return out


def copy_of(dataset: Path, tmp_path: Path, name: str = 'copy') -> Path:
    target = tmp_path / name
    shutil.copytree(dataset, target)
    return target


def manifest(folder: Path) -> dict:
    return json.loads((folder / 'dataset.json').read_text())


# ------------------------------------------------------------------------ 1: generate into a foreign folder
def _user_episode_folder(out: Path, dataset: Path) -> None:
    (out / 'episode_000000').mkdir(parents=True)
    (out / 'episode_000000' / 'mydata.txt').write_text('precious\n')


def _dataset_without_manifest(out: Path, dataset: Path) -> None:
    shutil.copytree(dataset, out)
    (out / 'dataset.json').unlink()


def _loose_file(out: Path, dataset: Path) -> None:
    out.mkdir()
    (out / 'notes.txt').write_text('mine\n')


@pytest.mark.parametrize('resume', [False, True], ids=['fresh', 'resume'])
@pytest.mark.parametrize('setup', [_user_episode_folder, _dataset_without_manifest, _loose_file],
                         ids=['user-episode-folder', 'dataset-without-manifest', 'loose-file'])
def test_generate_refuses_a_non_empty_folder_that_is_not_a_dataset(tmp_path, dataset, setup, resume):
    out = tmp_path / 'out'
    setup(out, dataset)
    before = snapshot(out)
    line = error_line(generate(out, *(['--resume'] if resume else [])))
    assert line.startswith(f'robotsim: error: --out {out}: exists, is not empty'), line
    assert 'holds no dataset.json; expected a new or empty folder, or a dataset folder to --resume' in line, line
    assert snapshot(out) == before


def test_resume_completes_a_real_dataset_and_keeps_foreign_files_in_episode_folders(tmp_path, dataset):
    # A dataset whose manifest does not list episode 1 (killed between moving it into place and
    # listing it): --resume regenerates it, unless that folder holds something the generator never writes.
    out = copy_of(dataset, tmp_path)
    shortened = manifest(out)
    shortened['episodes'] = shortened['episodes'][:1]
    (out / 'dataset.json').write_text(json.dumps(shortened))
    (out / 'episode_000001' / 'mine.txt').write_text('mine\n')
    before = snapshot(out)
    line = error_line(generate(out, '--resume', episodes=2))
    assert f'--out {out}: episode_000001 is not listed in {out / "dataset.json"} and holds mine.txt' in line, line
    assert snapshot(out) == before
    (out / 'episode_000001' / 'mine.txt').unlink()
    resumed = generate(out, '--resume', episodes=2)
    assert resumed.returncode == 0, resumed.stderr
    assert '1 episode(s) generated' in resumed.stderr
    assert [e['sha256'] for e in manifest(out)['episodes']] == [e['sha256'] for e in manifest(dataset)['episodes']]
    assert robotsim('dataset', 'verify', out).returncode == 0
    # A generation killed during its first episode (nothing but .partial/) is taken over.
    killed_early = tmp_path / 'killed_early'
    (killed_early / '.partial' / 'episode_000000').mkdir(parents=True)
    taken_over = generate(killed_early, '--resume')
    assert taken_over.returncode == 0, taken_over.stderr
    assert sorted(p.name for p in killed_early.iterdir()) == ['dataset.json', 'episode_000000']


def test_generate_into_an_existing_file_names_out(tmp_path):
    blocker = tmp_path / 'a_file'
    blocker.write_text('not a folder\n')
    line = error_line(generate(blocker))
    assert line.startswith(f'robotsim: error: --out {blocker}: is a file; expected a new or empty folder'), line
    assert blocker.read_text() == 'not a folder\n'


# ------------------------------------------------------------------------ 2, 5: export output folder
def _truncate(bag_file: Path) -> None:
    data = bag_file.read_bytes()
    bag_file.write_bytes(data[:len(data) // 2])


def _garble(bag_file: Path) -> None:
    data = bytearray(bag_file.read_bytes())
    for i in range(len(data) // 3, len(data) // 3 + 2000):
        data[i] ^= 0xFF
    bag_file.write_bytes(bytes(data))


@pytest.mark.parametrize('damage', [_truncate, _garble], ids=['truncated', 'garbled'])
@pytest.mark.parametrize('out_exists', [False, True], ids=['new-folder', 'empty-folder'])
def test_a_failed_export_removes_what_it_created(tmp_path, dataset, damage, out_exists):
    # Episode 0 exports (meta/ and its parquet file are written), episode 1 does not read.
    source = copy_of(dataset, tmp_path)
    damage(source / 'episode_000001' / 'episode_000001.mcap')
    out = tmp_path / 'new' / 'lerobot'
    if out_exists:
        out.mkdir(parents=True)
    for attempt in range(2):  # a retry fails the same way, not on what the first attempt left
        line = error_line(robotsim('dataset', 'export', source, '--out', out))
        assert line.startswith(f'robotsim: error: {source / "episode_000001"}: not a readable rosbag2 bag'), line
        if out_exists:
            assert out.is_dir() and not any(out.iterdir())
        else:
            assert not (tmp_path / 'new').exists()


def test_export_to_an_existing_file_names_out(tmp_path, dataset):
    blocker = tmp_path / 'passwd'
    blocker.write_text('root:x:0:0\n')
    line = error_line(robotsim('dataset', 'export', dataset, '--out', blocker))
    assert line == (f'robotsim: error: --out {blocker}: is a file; expected a new or empty folder (nothing was '
                    'overwritten)')
    assert blocker.read_text() == 'root:x:0:0\n'


# ------------------------------------------------------------------------ 3: no dataset argument
@pytest.mark.parametrize('action', ['verify', 'export'])
def test_verify_and_export_without_a_dataset_argument_is_a_usage_error(tmp_path, action):
    out = tmp_path / 'x'
    completed = robotsim('dataset', action, *(['--out', out] if action == 'export' else []))
    assert completed.returncode == 2 and completed.stderr.strip().splitlines() == [
        f'robotsim dataset {action}: error: the following arguments are required: dataset'], completed.stderr
    assert not out.exists()


# ------------------------------------------------------------------------ 4, 6: a bad dataset.json
def _no_settings(data: dict) -> str:
    data.pop('settings')
    return json.dumps(data)


def _escaping_bag(data: dict) -> str:
    data['episodes'][0]['bag'] = '../../elsewhere'
    return json.dumps(data)


MANIFESTS = {
    'list': (lambda data: '[]', 'expected a JSON object (a robotsim dataset manifest), got []'),
    'null': (lambda data: 'null', 'expected a JSON object (a robotsim dataset manifest), got null'),
    'episodes-string': (lambda data: '{"episodes": "x"}', 'episodes: expected a list of episode entries, got "x"'),
    'empty-entry': (lambda data: '{"episodes": [{}]}', 'episodes[0].index: missing required key'),
    'invalid-json': (lambda data: '{"a": "\x01"}', 'not valid JSON (Invalid control character'),
    'no-settings': (_no_settings, 'settings: missing required key'),
    'escaping-bag': (_escaping_bag, 'episodes[0].bag: expected a folder name in the dataset such as episode_000000'),
}


@pytest.mark.parametrize('command', ['verify', 'export', 'resume'])
@pytest.mark.parametrize('case', sorted(MANIFESTS))
def test_a_bad_manifest_is_one_line_naming_the_file_and_key(tmp_path, dataset, case, command):
    content, expected = MANIFESTS[case]
    folder = copy_of(dataset, tmp_path)
    (folder / 'dataset.json').write_text(content(manifest(folder)))
    before = snapshot(folder)
    out = tmp_path / 'lerobot'
    if command == 'verify':
        completed = robotsim('dataset', 'verify', folder)
    elif command == 'export':
        completed = robotsim('dataset', 'export', folder, '--out', out)
    else:
        completed = generate(folder, '--resume', episodes=2)
    line = error_line(completed)
    assert line == f'robotsim: error: {folder / "dataset.json"}: {expected}' or \
        line.startswith(f'robotsim: error: {folder / "dataset.json"}: {expected}'), line
    assert snapshot(folder) == before and not out.exists()


# ------------------------------------------------------------------------ 7: one option, its real range
@pytest.mark.parametrize('arguments, expected', [
    (['--episodes', '0'], '--episodes: expected a whole number from 1 to 100000, got 0'),
    (['--workers', '0'], '--workers: expected a whole number from 1 to 256, got 0'),
    (['--rate', '0'], '--rate: expected frames per second, more than 0 and at most 1000, got 0'),
    (['--rate', '1000.5'], '--rate: expected frames per second, more than 0 and at most 1000, got 1000.5'),
], ids=['episodes', 'workers', 'rate-0', 'rate-too-high'])
def test_an_out_of_range_option_is_named_alone_with_its_range(tmp_path, dataset, arguments, expected):
    out = tmp_path / 'out'
    if arguments[0] == '--rate':
        completed = robotsim('dataset', 'export', dataset, '--out', out, *arguments)
    else:
        completed = robotsim('dataset', 'generate', '--randomization', SMALL_COURSE, '--out', out, '--no-progress',
                             *arguments)
    assert error_line(completed) == f'robotsim: error: {expected}'
    assert not out.exists()


def test_a_huge_episode_count_is_refused_before_anything_is_allocated(tmp_path):
    """--episodes 1000000000 used to build its list of episodes first (13 GB in 33 s): now one line, within a
    memory bound (peak RSS of the command, measured by a wrapper process of its own)."""
    out = tmp_path / 'out'
    completed, peak_kib = run_measuring_peak_rss([sys.executable, '-m', 'robotsim.cli', 'dataset', 'generate',
                                                  '--randomization', str(SMALL_COURSE), '--out', str(out),
                                                  '--episodes', '1000000000', '--no-progress'])
    assert completed.returncode == 2, completed.stderr
    assert completed.stderr.strip() == ('robotsim: error: --episodes: expected a whole number from 1 to 100000, '
                                        'got 1000000000')
    assert peak_kib < 600 * 1024, f'peak RSS {peak_kib / 1024:.0f} MiB'  # the interpreter with MuJoCo loaded
    assert not out.exists()


def test_export_accepts_the_top_of_the_rate_range(tmp_path, dataset):
    out = tmp_path / 'lerobot'
    completed = robotsim('dataset', 'export', dataset, '--out', out, '--rate', '1000')
    assert completed.returncode == 0, completed.stderr
    assert json.loads((out / 'meta' / 'info.json').read_text())['fps'] == 1000


# ------------------------------------------------------------------------ 8: verify an incomplete dataset
def test_verify_reports_fewer_episodes_than_the_settings_and_how_to_complete_them(tmp_path, dataset):
    assert robotsim('dataset', 'verify', dataset).stdout.strip() == f'robotsim dataset verify: OK {dataset}'
    out = copy_of(dataset, tmp_path)
    data = manifest(out)
    data['settings']['episodes'] = 3
    (out / 'dataset.json').write_text(json.dumps(data))
    checked = robotsim('dataset', 'verify', out)
    assert checked.returncode == 1, checked.stdout
    line = checked.stdout.strip()
    assert '\n' not in line, line
    assert line.startswith(f'robotsim dataset verify: INCOMPLETE {out}: 2 of 3 episodes generated; the listed ones '
                           'verify; the generation was stopped before the end. Complete it with: '), line
    # The command it suggests completes the dataset, which then verifies.
    suggested = shlex.split(line.split('Complete it with: ', 1)[1])
    assert suggested[:3] == ['robotsim', 'dataset', 'generate'] and suggested[-1] == '--resume', suggested
    completed = subprocess.run([*CLI, *suggested[1:], '--no-progress'], capture_output=True, text=True, timeout=300)
    assert completed.returncode == 0, completed.stderr
    assert '1 episode(s) generated' in completed.stderr
    assert robotsim('dataset', 'verify', out).stdout.strip() == f'robotsim dataset verify: OK {out}'


def test_verify_reports_a_killed_generation_as_incomplete(tmp_path):
    out = tmp_path / 'killed'
    kill_generation_mid_episode(out, ['--randomization', str(SMALL_COURSE), '--episodes', '30', '--no-cameras'],
                                finished=1)
    listed = len(manifest(out)['episodes'])
    assert listed < 30
    checked = robotsim('dataset', 'verify', out)
    assert checked.returncode == 1, checked.stdout
    line = checked.stdout.strip()
    assert '\n' not in line, line
    assert line.startswith(f'robotsim dataset verify: INCOMPLETE {out}: {listed} of 30 episodes generated ('), line
    assert 'half-written in .partial/); the listed ones verify;' in line, line
    assert line.endswith(f'--episodes 30 --seed 0 --driver wander --no-cameras --out {out} --resume'), line


# ------------------------------------------------------------------------ 9: options that would be ignored
@pytest.mark.parametrize('arguments, expected', [
    (['generate', '--ray-address', '127.0.0.1:1'],
     'robotsim: error: --ray-address: applies only with --executor ray (got --executor local); nothing was done'),
    (['generate', '--executor', 'ray', '--ray-address', '127.0.0.1:1', '--workers', '2'],
     'robotsim: error: --workers: not used with --ray-address (the Ray cluster schedules the episodes on its CPUs); '
     'nothing was done'),
    (['generate', '--driver', 'wander', '--policy', 'p.onnx'],
     'robotsim: error: --policy: applies only to the drivers that take a policy file (policy, dagger), not --driver '
     'wander; nothing was done'),
    (['generate', '--format', 'lerobot'],
     'robotsim dataset generate: error: --format does not apply to generate (export only); nothing was done'),
    (['generate', '--rate', '10'],
     'robotsim dataset generate: error: --rate does not apply to generate (export only); nothing was done'),
    (['generate', '--max-skew', '0.1'],
     'robotsim dataset generate: error: --max-skew does not apply to generate (export only); nothing was done'),
    (['generate', '--format', 'lerobot', '--rate', '5'],
     'robotsim dataset generate: error: --format, --rate do not apply to generate (export only); nothing was done'),
    (['generate', 'DATASET'],
     'robotsim dataset generate: error: unexpected arguments: DATASET (see robotsim dataset generate --help)'),
    (['verify', 'DATASET', '--seed', '0'],
     'robotsim dataset verify: error: --seed does not apply to verify (generate only); nothing was done'),
    (['export', 'DATASET', '--episodes', '1'],
     'robotsim dataset export: error: --episodes does not apply to export (generate only); nothing was done'),
], ids=['ray-address-without-ray', 'workers-with-ray-address', 'policy-for-wander', 'format', 'rate', 'max-skew',
        'format-and-rate', 'positional', 'verify-seed', 'export-episodes'])
def test_an_option_that_does_not_apply_is_refused(tmp_path, dataset, arguments, expected):
    """Each verb is a subcommand of its own: another verb's option is refused in one line naming whose it is."""
    out = tmp_path / 'out'
    arguments = [str(dataset) if a == 'DATASET' else a for a in arguments]
    expected = expected.replace('DATASET', str(dataset))
    if arguments[0] == 'generate':
        arguments += ['--randomization', str(SMALL_COURSE), '--episodes', '1', '--no-cameras', '--no-progress']
    if arguments[0] != 'verify':
        arguments += ['--out', str(out)]
    completed = robotsim('dataset', *arguments, timeout=120)
    assert completed.returncode == 2 and 'Traceback' not in completed.stderr, completed.stderr
    assert completed.stderr.strip().splitlines() == [expected]
    assert not out.exists()


def test_old_spellings_run_after_one_line_naming_the_new_ones(tmp_path):
    """--engine is --executor now and --driver NAME:FILE is --driver NAME --policy FILE; both still run."""
    completed = robotsim('dataset', 'generate', '--randomization', tmp_path / 'missing.yaml', '--out', tmp_path / 'o',
                         '--engine', 'local', '--driver', f'policy:{tmp_path / "p.onnx"}')
    lines = completed.stderr.strip().splitlines()
    assert completed.returncode == 2 and len(lines) == 3, completed.stderr
    assert lines[0] == ("robotsim: '--engine' of robotsim dataset generate is now '--executor'; the old spelling goes "
                        'in the next release')
    assert lines[1] == ("robotsim: '--driver policy:FILE' is now '--driver policy --policy FILE'; the old spelling "
                        'goes in the next release')
    assert lines[2].startswith('robotsim: error: ') and 'missing.yaml' in lines[2], lines
