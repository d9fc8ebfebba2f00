"""Fuzzing the configs: seeded random mutations of the shipped robot and world YAML go through
what ``robotsim describe`` does (load, URDF, MJCF, MuJoCo compile; the CLI's own error handling)
and through the simulator's start-up without ROS (load the world and robot, build the
Simulation, step it). Every case must either work or be refused with exactly one line naming a
file: no traceback, no hang.

The cases run in worker subprocesses (this file run as a script), one batch after another, each
case under an alarm and each batch under a timeout. The same seed gives the same mutations; a
failure prints the case's seed so it can be replayed alone with ``-k`` or the worker.
"""

from __future__ import annotations

import contextlib
import copy
import io
import json
import math
import os
import random
import signal
import subprocess
import sys
import traceback
from pathlib import Path

import yaml

CONFIG = Path(__file__).resolve().parents[1] / 'config'
ROBOTS = [CONFIG / 'robots' / 'rover.yaml', CONFIG / 'robots' / 'racer.yaml']
WORLDS = sorted((CONFIG / 'worlds').glob('*.yaml'))
SEED = 20240913
CASES = 600
BATCHES = 4
CASE_ALARM_S = 30        # a case that takes this long is a hang (a normal one takes well under a second)
BATCH_TIMEOUT_S = 900    # generous: the machine may be loaded; the alarm above is the real bound
STEPS = 5

EXTREME_NUMBERS = [0, -1, 1e308, -1e308, math.nan, math.inf, -math.inf, 2**64, -(2**63) - 1, 10**30, 1e-9, 1e-300,
                   -0.0, 1000001, 4097, 1e6]
OTHER_TYPES = ['', 'text', True, False, None, [], {}, [1, 2], {'x': 1}, [[0.1, 0.2, 0.3]], 7, 0.5]
ALPHABET = 'abcXYZ019 _-./:\\\'"#{}[],&*!|>%@`~\t\u00e9\u4e2d\u0000'


# ----------------------------------------------------------------------------- mutations
def _paths(node, prefix=()):
    """Every (path, value) in a YAML tree, the root included."""
    yield prefix, node
    if isinstance(node, dict):
        for key, value in node.items():
            yield from _paths(value, prefix + (key,))
    elif isinstance(node, list):
        for index, value in enumerate(node):
            yield from _paths(value, prefix + (index,))


def _get(tree, path):
    for key in path:
        tree = tree[key]
    return tree


def _set(tree, path, value):
    if not path:
        return value
    _get(tree, path[:-1])[path[-1]] = value
    return tree


def _random_string(rng: random.Random) -> str:
    return ''.join(rng.choice(ALPHABET) for _ in range(rng.randint(0, 12)))


def _mutate_tree(tree, rng: random.Random) -> tuple[object, str]:
    paths = list(_paths(tree))
    operator = rng.choice(['delete', 'type', 'extreme', 'extreme', 'scale', 'scale', 'scale', 'nest', 'unnest',
                           'duplicate', 'string', 'huge_list', 'deep', 'nan_text'])
    numbers = [(p, v) for p, v in paths if isinstance(v, (int, float)) and not isinstance(v, bool)]
    # Numbers get most of the attention: a number that is still a number reaches the physics.
    path, value = rng.choice(numbers if operator in ('extreme', 'scale') and numbers else paths)
    where = '.'.join(map(str, path)) or '(top level)'
    if operator == 'scale' and path in [p for p, _ in numbers]:
        factor = rng.choice([0.0001, 0.01, 0.1, 3, 10, 100, 10000, -1, -10])
        return _set(tree, path, value * factor), f'{where} = {value!r} x {factor}'
    if operator == 'delete' and path:
        parent = _get(tree, path[:-1])
        del parent[path[-1]]
        return tree, f'delete {where}'
    if operator == 'extreme':
        number = rng.choice(EXTREME_NUMBERS)
        return _set(tree, path, number), f'{where} = {number!r}'
    if operator == 'nest':
        wrapped = [value] if rng.random() < 0.5 else {'value': value}
        return _set(tree, path, wrapped), f'{where} nested in {type(wrapped).__name__}'
    if operator == 'unnest' and isinstance(value, (list, dict)) and value:
        inner = value[0] if isinstance(value, list) else next(iter(value.values()))
        return _set(tree, path, inner), f'{where} replaced by its first item'
    if operator == 'duplicate':
        lists = [(p, v) for p, v in paths if isinstance(v, list) and v]
        if lists:
            list_path, items = rng.choice(lists)
            items.append(copy.deepcopy(rng.choice(items)))
            return tree, f'duplicate an item of {".".join(map(str, list_path)) or "(top level)"}'
    if operator == 'huge_list':
        # A list far beyond any bound (config lists hold at most 256 items): refused before it is built.
        count = rng.choice([257, 1000, 5000])
        item = value[0] if isinstance(value, list) and value else value
        return _set(tree, path, [copy.deepcopy(item) for _ in range(count)]), f'{where} = {count} copies'
    if operator == 'deep':
        depth = rng.choice([40, 120])
        for _ in range(depth):
            value = [value] if rng.random() < 0.5 else {'v': value}
        return _set(tree, path, value), f'{where} nested {depth} deep'
    if operator == 'nan_text' and numbers:
        number_path, _ = rng.choice(numbers)
        text = rng.choice(['nan', 'NaN', '.nan', '-.inf', 'inf', '1e999', '-1e999', '0x1p1024'])
        return _set(tree, number_path, text), f'{".".join(map(str, number_path))} = {text!r}'
    if operator == 'string':
        text = _random_string(rng)
        return _set(tree, path, text), f'{where} = {text!r}'
    other = copy.deepcopy(rng.choice(OTHER_TYPES))
    return _set(tree, path, other), f'{where} = {other!r}'


def _mutate_text(text: str, rng: random.Random) -> tuple[str, str]:
    """Mutations only the text can carry: a repeated line (a duplicate key), a cut, stray characters."""
    lines = text.splitlines()
    index = rng.randrange(len(lines))
    operator = rng.choice(['repeat', 'cut', 'insert'])
    if operator == 'repeat':
        lines.insert(index, lines[index])
        return '\n'.join(lines) + '\n', f'line {index + 1} repeated'
    if operator == 'cut':
        cut = rng.randrange(len(text))
        return text[:cut], f'cut at character {cut}'
    stray = _random_string(rng)
    lines[index] = lines[index] + stray
    return '\n'.join(lines) + '\n', f'{stray!r} appended to line {index + 1}'


def make_case(index: int) -> dict:
    """Case ``index``: which file is mutated and its mutated text, from SEED and index only."""
    rng = random.Random(f'{SEED}-{index}')
    mutate_robot = index % 2 == 0
    source = ROBOTS[(index // 2) % len(ROBOTS)] if mutate_robot else WORLDS[(index // 2) % len(WORLDS)]
    tree = yaml.safe_load(source.read_text())
    changes = []
    for _ in range(rng.choice([1, 1, 1, 2, 3])):
        tree, change = _mutate_tree(tree, rng)
        changes.append(change)
    text = yaml.safe_dump(tree, allow_unicode=True, sort_keys=False)
    if rng.random() < 0.15:
        text, change = _mutate_text(text, rng)
        changes.append(change)
    return {'index': index, 'kind': 'robot' if mutate_robot else 'world', 'base': source.name, 'text': text,
            'changes': changes,
            # Firmware in the loop for some cases: its start-up path refuses what it cannot drive.
            'firmware': rng.random() < 0.1}


# ----------------------------------------------------------------------------- worker
class _Hang(Exception):
    pass


def _on_alarm(signum, frame):
    raise _Hang()


def run_case(case: dict, directory: Path) -> dict:
    """Describe + simulator start-up of one case, in this process; the outcome as a dict."""
    from robotsim.cli import main as robotsim_cli
    from robotsim_core.description import load_robot
    from robotsim_core.errors import DescriptionError
    from robotsim_sim.scene import RobotPlacement, load_world
    from robotsim_sim.simulation import SimOptions, Simulation

    directory.mkdir(parents=True, exist_ok=True)
    robot_path, world_path = directory / 'robot.yaml', directory / 'world.yaml'
    mutated = robot_path if case['kind'] == 'robot' else world_path
    mutated.write_text(case['text'], encoding='utf-8')
    if case['kind'] == 'robot':
        world_path.write_text((CONFIG / 'worlds' / 'room.yaml').read_text())
    else:
        robot_path.write_text((CONFIG / 'robots' / 'rover.yaml').read_text())
    outcome = {'index': case['index'], 'files': [str(robot_path), str(world_path)]}
    if case['kind'] == 'robot':
        stdout, stderr = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(stdout), contextlib.redirect_stderr(stderr):
            status = robotsim_cli(['describe', str(robot_path)])
        outcome['describe'] = {'status': status, 'stderr': stderr.getvalue()}
    simulation = None
    try:
        simulation = Simulation(load_world(str(world_path)), [RobotPlacement(load_robot(str(robot_path)))],
                                SimOptions(firmware=case['firmware'],
                                           serial_links=[str(directory / 'ttyMCU')] if case['firmware'] else None))
        for _ in range(STEPS):
            simulation.step()
        outcome['start'] = {'status': 'ran', 'time_ns': simulation.time_ns}
    except DescriptionError as error:
        outcome['start'] = {'status': 'refused', 'message': str(error)}
    finally:
        if simulation is not None:
            simulation.close()
    return outcome


def worker(first: int, count: int, directory: str) -> None:
    """Run cases first..first+count-1; one JSON line per case on stdout (stdout of the code under
    test goes to stderr so the protocol stays clean)."""
    from robotsim_sensors.gl_backend import select_gl_backend
    select_gl_backend()
    protocol = os.fdopen(os.dup(sys.stdout.fileno()), 'w', buffering=1)
    os.dup2(sys.stderr.fileno(), sys.stdout.fileno())
    signal.signal(signal.SIGALRM, _on_alarm)
    for index in range(first, first + count):
        case = make_case(index)
        protocol.write(json.dumps({'started': index}) + '\n')
        signal.alarm(CASE_ALARM_S)
        try:
            outcome = run_case(case, Path(directory) / f'case{index}')
        except _Hang:
            outcome = {'index': index, 'crash': f'hang: still running after {CASE_ALARM_S} s'}
        except BaseException:  # noqa: B036 - every escape is a finding, SystemExit included
            outcome = {'index': index, 'crash': traceback.format_exc()}
        finally:
            signal.alarm(0)
        protocol.write(json.dumps(outcome) + '\n')


# ----------------------------------------------------------------------------- checks
def problems_of(outcome: dict) -> list[str]:
    """Why an outcome breaks the rules (empty when it is fine)."""
    found = []
    if 'crash' in outcome:
        return [f'crashed: {outcome["crash"]}']
    describe = outcome.get('describe')
    if describe is not None:
        lines = describe['stderr'].strip().splitlines()
        if describe['status'] not in (0, 2):
            found.append(f'describe exited {describe["status"]}')
        if describe['status'] == 2 and (len(lines) != 1 or not lines[0].startswith('robotsim: error: ')
                                        or 'Traceback' in describe['stderr']):
            found.append(f'describe refusal is not one line: {describe["stderr"]!r}')
        if describe['status'] == 0 and describe['stderr'].strip():
            found.append(f'describe succeeded but wrote to stderr: {describe["stderr"]!r}')
    start = outcome['start']
    if start['status'] == 'refused':
        message = start['message']
        if '\n' in message or not message.strip():
            found.append(f'start-up refusal is not one line: {message!r}')
        elif not any(message.startswith(f'{path}: ') for path in outcome['files']):
            found.append(f'start-up refusal names no file: {message!r}')
    elif start['time_ns'] <= 0:
        found.append('the simulation ran but its time did not advance')
    return found


def run_batch(first: int, count: int, directory: Path) -> tuple[list[dict], str]:
    # cwd: MuJoCo writes MUJOCO_LOG.TXT into the working directory when it warns.
    completed = subprocess.run([sys.executable, str(Path(__file__).resolve()), 'worker', str(first), str(count),
                                str(directory)], capture_output=True, text=True, timeout=BATCH_TIMEOUT_S, cwd=directory)
    outcomes = [json.loads(line) for line in completed.stdout.splitlines() if line.startswith('{')]
    finished = {o['index'] for o in outcomes if 'index' in o}
    started = [o['started'] for o in outcomes if 'started' in o]
    for index in started:
        if index not in finished:  # the worker died inside this case (e.g. a C-level abort)
            outcomes.append({'index': index, 'crash': f'worker exited {completed.returncode} in this case; '
                                                      f'stderr tail: {completed.stderr[-2000:]}'})
    return [o for o in outcomes if 'index' in o], completed.stderr


def test_mutations_are_deterministic():
    assert [make_case(i) for i in (0, 1, 77)] == [make_case(i) for i in (0, 1, 77)]
    assert make_case(0)['text'] != make_case(2)['text']


def test_mutated_configs_run_or_are_refused_in_one_line(tmp_path):
    per_batch = math.ceil(CASES / BATCHES)
    outcomes = []
    for first in range(0, CASES, per_batch):
        batch, _ = run_batch(first, min(per_batch, CASES - first), tmp_path)
        outcomes += batch
    assert sorted(o['index'] for o in outcomes) == list(range(CASES)), 'some cases never ran'
    failures = []
    for outcome in sorted(outcomes, key=lambda o: o['index']):
        for problem in problems_of(outcome):
            case = make_case(outcome['index'])
            failures.append(f'case {case["index"]} ({case["kind"]} {case["base"]}: {"; ".join(case["changes"])}): '
                            f'{problem}')
    assert not failures, f'{len(failures)} of {CASES} cases failed:\n' + '\n'.join(failures[:20])
    # The fuzzer must reach both outcomes and both paths, or it proves nothing.
    statuses = [o['start']['status'] for o in outcomes]
    assert statuses.count('ran') >= CASES // 10 and statuses.count('refused') >= CASES // 10, statuses
    assert sum(1 for o in outcomes if o.get('describe', {}).get('status') == 2) >= CASES // 10


if __name__ == '__main__' and len(sys.argv) == 5 and sys.argv[1] == 'worker':
    worker(int(sys.argv[2]), int(sys.argv[3]), sys.argv[4])
