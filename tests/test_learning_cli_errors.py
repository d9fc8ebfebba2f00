"""Bad input to `robotsim policy train`, `robotsim policy eval`, policy files and randomisation specs: one line
naming the file, key, argument or field and what was expected, exit status 2, no traceback, nothing of the
user's data overwritten, and refused before the long work (training, episodes) starts."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys

import pytest

from rostest_helpers import WORKSPACE, executable

SPEC = WORKSPACE / 'config' / 'randomization' / 'room_obstacles.yaml'
SHIPPED_POLICY = WORKSPACE / 'config' / 'policies' / 'rover_goal_reaching.onnx'
SPEC_KEY = 'robotsim.observation_spec'


def robotsim(*args: str, timeout: float = 600) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, '-m', 'robotsim.cli', *args], capture_output=True, text=True,
                          timeout=timeout)


def one_line(completed: subprocess.CompletedProcess, prefix: str) -> str:
    """The refusal's only line (exit 2, no traceback; the progress bar of reading the bags, when the refusal
    comes from what they hold, is not a line of it)."""
    assert completed.returncode == 2, (completed.returncode, completed.stdout, completed.stderr)
    assert 'Traceback' not in completed.stderr, completed.stderr
    lines = [line for line in completed.stderr.strip().splitlines()
             if line.strip() and not line.startswith('reading the bags:')]
    assert len(lines) == 1 and lines[0].startswith(prefix), completed.stderr
    return lines[0]


@pytest.fixture(scope='module')
def lidar_dataset(tmp_path_factory):
    """Two expert episodes without cameras (a few MB, about a second)."""
    pytest.importorskip('jax', reason='training needs requirements/train.txt (Python 3.11+)')
    out = tmp_path_factory.mktemp('lidar') / 'dataset'
    completed = robotsim('dataset', 'generate', '--randomization', str(SPEC), '--episodes', '2', '--driver', 'expert',
                         '--no-cameras', '--out', str(out), '--no-progress')
    assert completed.returncode == 0, completed.stderr
    return out


# ----------------------------------------------------------------------------- robotsim policy train
TRAIN_CASES = {
    'out in a missing folder': (lambda tmp: ['--out', str(tmp / 'nowhere' / 'p.onnx')],
                                '--out {tmp}/nowhere/p.onnx: folder {tmp}/nowhere does not exist'),
    'out is a folder': (lambda tmp: ['--out', str(tmp)], '--out {tmp}: is a folder; expected the ONNX policy file'),
    'negative seed': (lambda tmp: ['--out', str(tmp / 'p.onnx'), '--seed', '-1'],
                      '--seed: expected 0 ... 2^32-1, got -1'),
    'seed beyond 32 bits': (lambda tmp: ['--out', str(tmp / 'p.onnx'), '--seed', str(2**32)],
                            f'--seed: expected 0 ... 2^32-1, got {2**32}'),
    'huge layers': (lambda tmp: ['--out', str(tmp / 'p.onnx'), '--hidden', '100000,100000'],
                    "--hidden: expected 1 to 8 comma-separated layer widths, each 1 ... 4096, got '100000,100000'"),
    'too many layers': (lambda tmp: ['--out', str(tmp / 'p.onnx'), '--hidden', ','.join(['8'] * 9)],
                        '--hidden: expected 1 to 8 comma-separated layer widths'),
    'an empty ensemble': (lambda tmp: ['--out', str(tmp / 'p.onnx'), '--ensemble', '0'],
                          '--ensemble: expected 1 ... 16 networks, got 0'),
    'weight decay above 1': (lambda tmp: ['--out', str(tmp / 'p.onnx'), '--weight-decay', '2'],
                             '--weight-decay: expected 0 ... 1, got 2.0'),
    'a bins grid of one cell': (lambda tmp: ['--out', str(tmp / 'p.onnx'), '--head', 'bins', '--bins', '1,9'],
                                "--bins: expected linear,angular cell counts, each 2 ... 64, got '1,9'"),
    'a bins window that is negative': (lambda tmp: ['--out', str(tmp / 'p.onnx'), '--head', 'bins', '--bin-window=-1,1'],
                                       "--bin-window: expected linear,angular cell counts, each 0 ... 64, got '-1,1'"),
    'a bins window for the tanh head': (lambda tmp: ['--out', str(tmp / 'p.onnx'), '--bin-window', '1,1'],
                                        '--bin-window: applies to the bins head (--head bins), got --head tanh'),
    'a turn commitment out of range': (lambda tmp: ['--out', str(tmp / 'p.onnx'), '--head', 'bins', '--turn-commit',
                                                    '-1'], '--turn-commit: expected 0 ... 100, got -1'),
    'a turn commitment for the tanh head': (lambda tmp: ['--out', str(tmp / 'p.onnx'), '--turn-commit', '1'],
                                            '--turn-commit: applies to the bins head (--head bins), got --head tanh'),
    'a sampling temperature out of range': (lambda tmp: ['--out', str(tmp / 'p.onnx'), '--head', 'bins',
                                                         '--sample-temperature', 'nan'],
                                            '--sample-temperature: expected 0 ... 10, got nan'),
    'a sampling temperature for the tanh head': (lambda tmp: ['--out', str(tmp / 'p.onnx'), '--sample-temperature', '1'],
                                                 '--sample-temperature: applies to the bins head (--head bins), got '
                                                 '--head tanh'),
    'a draw on the spot without a temperature': (lambda tmp: ['--out', str(tmp / 'p.onnx'), '--head', 'bins',
                                                              '--sample-on-spot'],
                                                 '--sample-on-spot: applies to a policy that draws its cell '
                                                 '(--sample-temperature T > 0), got none'),
    'scan convolutions that do not divide the sectors': (
        lambda tmp: ['--out', str(tmp / 'p.onnx'), '--sectors', '36', '--scan-conv', '8,8,8'],
        '--scan-conv: expected a scan whose sectors (36) are at least 5 and divisible by 8 (3 convolutions of '
        'stride 2)'),
    'scan convolutions that are not channel counts': (
        lambda tmp: ['--out', str(tmp / 'p.onnx'), '--scan-conv', 'wide'],
        "--scan-conv: expected channel counts, got 'wide'"),
    'scan convolutions without a scan': (
        lambda tmp: ['--out', str(tmp / 'p.onnx'), '--no-scan', '--scan-conv', '8'],
        '--scan-conv: convolutions over the scan: expected it without --no-scan'),
    'a bins grid that is not numbers': (lambda tmp: ['--out', str(tmp / 'p.onnx'), '--bins', 'nine'],
                                        "--bins: expected linear,angular cell counts, each 2 ... 64, got 'nine'"),
    'neither scan nor image': (lambda tmp: ['--out', str(tmp / 'p.onnx'), '--no-scan', '--no-image'],
                               '--no-scan: expected the camera image observed with it (not --no-image): a policy '
                               'must see something'),
    'a near weight below 1': (lambda tmp: ['--out', str(tmp / 'p.onnx'), '--near-weight', '0.5'],
                              '--near-weight: expected 1 ... 100, got 0.5'),
    'a negative near range': (lambda tmp: ['--out', str(tmp / 'p.onnx'), '--near-range', '-1'],
                              '--near-range: expected a range in metres, 0 < r <= 100, got -1.0'),
}


@pytest.mark.parametrize('case', sorted(TRAIN_CASES))
def test_policy_train_refuses_bad_arguments_before_training(case, lidar_dataset, tmp_path):
    arguments, expected = TRAIN_CASES[case]
    completed = robotsim('policy', 'train', str(lidar_dataset), *arguments(tmp_path), '--epochs', '2',
                         '--no-image')
    line = one_line(completed, 'robotsim policy: error: ')
    assert expected.format(tmp=tmp_path) in line, line
    assert 'epoch' not in completed.stderr  # no progress bar: refused before training started
    assert not (tmp_path / 'p.onnx').exists()


def test_policy_train_refuses_a_dataset_given_twice(lidar_dataset, tmp_path):
    for second in (str(lidar_dataset), f'{lidar_dataset}/.'):
        completed = robotsim('policy', 'train', str(lidar_dataset), second, '--out', str(tmp_path / 'p.onnx'),
                             '--epochs', '2', '--hidden', '8', '--no-image')
        line = one_line(completed, f'robotsim policy: error: DATASET {second}: given twice')
        assert f'the same folder as {lidar_dataset}' in line and 'expected each dataset once' in line, line
        assert 'epoch' not in completed.stderr and not (tmp_path / 'p.onnx').exists()


def test_policy_train_names_the_missing_camera_image(lidar_dataset, tmp_path):
    """The rover has a camera: a policy observing its image cannot learn from a --no-cameras dataset."""
    completed = robotsim('policy', 'train', str(lidar_dataset), '--out', str(tmp_path / 'p.onnx'), '--epochs', '2',
                         '--hidden', '8')
    line = one_line(completed, f'robotsim policy: error: {lidar_dataset}: generated with --no-cameras')
    assert '/camera/image_raw' in line and '--no-image' in line, line
    assert 'epoch' not in completed.stderr and not (tmp_path / 'p.onnx').exists()
    # A manifest that does not say how it was generated (cameras not recorded): the bags are read, and the
    # line names the topic they lack.
    unrecorded = tmp_path / 'unrecorded'
    shutil.copytree(lidar_dataset, unrecorded)
    manifest = json.loads((unrecorded / 'dataset.json').read_text())
    del manifest['settings']['cameras']
    (unrecorded / 'dataset.json').write_text(json.dumps(manifest))
    completed = robotsim('policy', 'train', str(unrecorded), '--out', str(tmp_path / 'p.onnx'), '--epochs', '2',
                         '--hidden', '8')
    line = one_line(completed, f'robotsim policy: error: {unrecorded}: only 0 samples')
    assert line.endswith('the bags have no /camera/image_raw: train with --no-image to observe lidar, odometry '
                         'and goal only'), line
    assert not (tmp_path / 'p.onnx').exists()
    # What the lines suggest works.
    completed = robotsim('policy', 'train', str(lidar_dataset), '--out', str(tmp_path / 'p.onnx'), '--epochs', '2',
                         '--hidden', '8', '--no-image')
    assert completed.returncode == 0, completed.stderr
    assert (tmp_path / 'p.onnx').is_file()


# ----------------------------------------------------------------------------- corrupt policy files
def corrupt_policy(path, change) -> None:
    """The shipped policy with its observation spec metadata rewritten by ``change(text) -> text``."""
    import onnx
    model = onnx.load(str(SHIPPED_POLICY))
    for prop in model.metadata_props:
        if prop.key == SPEC_KEY:
            prop.value = change(prop.value)
    onnx.save(model, str(path))


def _with(**fields):
    return lambda text: json.dumps({**json.loads(text), **fields})


METADATA_CASES = {
    'invalid JSON': (lambda text: text[:10], 'expected a JSON object, got invalid JSON'),
    'sectors not a number': (_with(sectors='abc'),
                             'sectors: expected an integer >= 0 (0: no scan observed), got "abc"'),
    'unknown field': (_with(beams=360), 'beams: unknown field; expected only scan_samples'),
}


def test_a_rewritten_but_valid_spec_still_loads(tmp_path):
    from robotsim_learning.policy_runtime import PolicyRuntime
    path = tmp_path / 'same.onnx'
    corrupt_policy(path, lambda text: text)
    assert PolicyRuntime(str(path)).spec.sectors == 72  # the shipped policy's


@pytest.mark.parametrize('entry', ['evaluate', 'dataset generate', 'policy node'])
@pytest.mark.parametrize('case', sorted(METADATA_CASES))
def test_corrupt_observation_spec_metadata_is_one_line(case, entry, tmp_path):
    change, expected = METADATA_CASES[case]
    policy = tmp_path / 'corrupt.onnx'
    corrupt_policy(policy, change)
    out = tmp_path / 'out'
    if entry == 'evaluate':
        completed = robotsim('policy', 'eval', '--policy', str(policy), '--seed', '9', '--episodes', '1', '--baselines', '',
                             '--out', str(out), '--no-progress')
        prefix = 'robotsim policy eval: error: --policy: '
    elif entry == 'dataset generate':
        completed = robotsim('dataset', 'generate', '--randomization', str(SPEC), '--episodes', '1', '--driver',
                             'policy', '--policy', str(policy), '--out', str(out), '--no-progress')
        prefix = 'robotsim: error: '
    else:  # the node a bringup with driver:=policy policy:=FILE starts
        completed = subprocess.run([executable('robotsim_learning', 'policy'), '--ros-args', '-p',
                                    f'policy:={policy}'], capture_output=True, text=True, timeout=120)
        prefix = 'policy: error: '
    line = one_line(completed, prefix)
    assert f'{policy}: metadata {SPEC_KEY}: {expected}' in line, line
    assert not out.exists() or not any(out.iterdir())


# ----------------------------------------------------------------------------- robotsim policy eval --out
def test_evaluate_refuses_an_earlier_evaluation_folder(tmp_path):
    out = tmp_path / 'evaluation'
    (out / 'episodes' / 'expert-0').mkdir(parents=True)
    (out / 'episodes.csv').write_text('driver,seed\nexpert,9\n')
    (out / 'episodes' / 'expert-0' / 'trajectory.csv').write_text('t,x,y,yaw\n')
    completed = robotsim('policy', 'eval', '--driver', 'expert', '--baselines', '', '--seed', '9', '--episodes', '1',
                         '--out', str(out), '--no-progress')
    line = one_line(completed, f'robotsim policy eval: error: --out {out}: holds an earlier evaluation '
                               '(episodes.csv, episodes/)')
    assert 'choose another --out or remove this one' in line, line
    assert (out / 'episodes.csv').read_text() == 'driver,seed\nexpert,9\n'
    assert sorted(p.name for p in out.iterdir()) == ['episodes', 'episodes.csv']
    assert [p.name for p in (out / 'episodes').iterdir()] == ['expert-0']


@pytest.mark.parametrize('content', ['nothing', 'a run record'])
def test_evaluate_accepts_an_out_folder_without_an_evaluation(content, tmp_path):
    """An empty folder, or one holding what a wrapper wrote first (bench/evaluation_table.py's run.json), passes
    the --out check: the refusal is the next argument's (a missing policy)."""
    out = tmp_path / 'evaluation'
    out.mkdir()
    if content == 'a run record':
        (out / 'run.json').write_text('{}\n')
    completed = robotsim('policy', 'eval', '--policy', str(tmp_path / 'missing.onnx'), '--seed', '9', '--episodes', '1',
                         '--out', str(out), '--no-progress')
    one_line(completed, f'robotsim policy eval: error: --policy: {tmp_path / "missing.onnx"}: policy file not found')


@pytest.mark.parametrize('where', ['a file', 'below a file'])
def test_evaluate_out_that_cannot_be_a_folder_is_one_line(where, tmp_path):
    blocker = tmp_path / 'a_file'
    blocker.write_text('keep me\n')
    out = blocker if where == 'a file' else blocker / 'evaluation'
    completed = robotsim('policy', 'eval', '--driver', 'expert', '--baselines', '', '--seed', '9', '--episodes', '1',
                         '--out', str(out), '--no-progress')
    line = one_line(completed, f'robotsim policy eval: error: --out {out}: ')
    assert ('exists and is not a folder' if where == 'a file' else f'{blocker} is not a folder') in line, line
    assert blocker.read_text() == 'keep me\n'


# ----------------------------------------------------------------------------- randomisation specs
@pytest.mark.parametrize('key, exists', [('robot', 'rover'), ('base_world', 'room')])
@pytest.mark.parametrize('command', ['dataset generate', 'evaluate'])
def test_unknown_robot_or_world_in_a_spec_names_the_spec_and_key(key, exists, command, tmp_path):
    text = SPEC.read_text()
    spec = tmp_path / 'course.yaml'
    spec.write_text('\n'.join(f'{key}: nosuch' if line.startswith(f'{key}:') else line
                              for line in text.splitlines()) + '\n')
    assert f'{key}: nosuch' in spec.read_text()
    out = tmp_path / 'out'
    if command == 'dataset generate':
        completed = robotsim('dataset', 'generate', '--randomization', str(spec), '--episodes', '1', '--driver',
                             'expert', '--out', str(out), '--no-progress')
        prefix = 'robotsim: error: '
    else:
        completed = robotsim('policy', 'eval', '--driver', 'expert', '--baselines', '', '--randomization', str(spec),
                             '--seed', '9', '--episodes', '1', '--out', str(out), '--no-progress')
        prefix = 'robotsim policy eval: error: '
    line = one_line(completed, f"{prefix}{spec}: {key}: 'nosuch': file not found")
    assert 'one of ' in line and exists in line.split('one of ')[1].split(', '), line
    assert not out.exists() or not any(out.iterdir())


# ----------------------------------------------------------------------------- command names
def test_policy_commands_are_registered_and_the_old_spelling_says_the_new_one():
    """Commands come from the robotsim.commands entry points (robotsim_learning registers its own); the
    evaluation is `robotsim policy eval` beside `robotsim policy train`, and `robotsim evaluate` still runs after
    one line naming the new spelling."""
    from robotsim.cli import _registered_commands
    words = [name for name, _ in _registered_commands()]
    assert {('dataset',), ('policy', 'train'), ('policy', 'eval'), ('view',), ('render',)} <= set(words), words
    old = robotsim('evaluate', '--driver', 'expert', '--baselines', 'teleop', '--seed', '9', '--episodes', '1')
    lines = old.stderr.strip().splitlines()
    assert old.returncode == 2 and len(lines) == 2, old.stderr
    assert lines[0] == "robotsim: 'evaluate' is now 'robotsim policy eval'; the old spelling goes in the next release"
    assert lines[1].startswith('robotsim policy eval: error: --baselines: '), lines


def test_evaluate_without_a_seed_draws_one_and_prints_it(tmp_path):
    """Two runs draw two seeds (the chance of the same one is 2^-31), each printed with how to run it again."""
    seeds = []
    for run in range(2):
        blocker = tmp_path / f'file{run}'
        blocker.write_text('')
        completed = robotsim('policy', 'eval', '--driver', 'expert', '--baselines', '', '--episodes', '1',
                             '--out', str(blocker), '--no-progress')
        assert completed.returncode == 2, completed.stderr
        match = re.fullmatch(r'seed (\d+) \(drawn at evaluation time; --seed \1 runs these scenarios again\)\n',
                             completed.stdout)
        assert match, completed.stdout
        seeds.append(int(match.group(1)))
    assert seeds[0] != seeds[1]


def test_a_drawn_seed_is_never_a_training_seed(monkeypatch):
    import secrets

    from robotsim_learning.evaluation_cli import drawn_seed
    draws = iter([5000, 8853, 77])  # the shipped policy's training seeds come first: redrawn
    monkeypatch.setattr(secrets, 'randbelow', lambda bound: next(draws))
    assert drawn_seed(str(WORKSPACE / 'config' / 'policies' / 'rover_goal_reaching.onnx')) == 77


PERCEPTION_CASES = {
    'no frames': (['--frames', '0'], '--frames: expected 1 ... 20000, got 0'),
    'a factor too large': (['--factor', '32'], '--factor: expected 1 ... 16, got 32'),
    'a missing spec': (['--randomization', 'nowhere.yaml'],
                       '--randomization nowhere.yaml: file not found (expected a randomisation spec YAML)'),
    'an out folder that does not exist': (['--out', 'no/such/folder/p.onnx'],
                                          '--out no/such/folder/p.onnx: expected an ONNX file to write in an '
                                          'existing folder'),
}


@pytest.mark.parametrize('case', sorted(PERCEPTION_CASES))
def test_perception_train_refuses_bad_arguments_in_one_line(case, tmp_path):
    arguments, expected = PERCEPTION_CASES[case]
    if '--out' not in arguments:
        arguments = ['--out', str(tmp_path / 'p.onnx'), *arguments]
    line = one_line(robotsim('perception', 'train', *arguments), 'robotsim perception: error: ')
    assert line.endswith(expected), line
    assert not (tmp_path / 'p.onnx').exists()
