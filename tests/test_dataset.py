"""Datasets (issue 11): randomisation, fast-path episodes as bags, manifest, verify, resume, prune,
engines with identical bytes, LeRobot v2.1 export read back with pyarrow. Real MuJoCo, real bags,
real worker processes; the `robotsim` command line as a user runs it."""

from __future__ import annotations

import io
import json
import math
import os
import shlex
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
import yaml

from robotsim_learning.randomization import Randomizer, load_randomization
from robotsim_sim.scene import load_world
from bag_readers import foxglove_counts
from rostest_helpers import WORKSPACE, _die_with_parent

SMALL_COURSE = WORKSPACE / 'tests' / 'data' / 'datasets' / 'small_course.yaml'
SHIPPED_SPEC = WORKSPACE / 'config' / 'randomization' / 'room_obstacles.yaml'


def robotsim(*args: str, timeout: float = 600, check: bool = False) -> subprocess.CompletedProcess:
    completed = subprocess.run([sys.executable, '-m', 'robotsim.cli', *args], capture_output=True, text=True,
                               timeout=timeout)
    if check and completed.returncode != 0:
        raise AssertionError(f'robotsim {" ".join(args)} exited {completed.returncode}\n{completed.stderr}')
    return completed


def manifest(folder: Path) -> dict:
    return json.loads((folder / 'dataset.json').read_text())


def hashes(folder: Path) -> dict[int, str]:
    return {entry['index']: entry['sha256'] for entry in manifest(folder)['episodes']}


# ------------------------------------------------------------------------------------------ randomisation
def test_same_seed_gives_byte_identical_worlds_and_records_every_draw(tmp_path):
    spec = load_randomization(str(SHIPPED_SPEC))
    first, again, other_seed = Randomizer(spec, 11), Randomizer(spec, 11), Randomizer(spec, 12)
    worlds = set()
    for index in range(8):
        scenario = first.scenario(index)
        repeat = again.scenario(index)
        assert (scenario.world_yaml, scenario.robot_yaml, scenario.drawn) == \
               (repeat.world_yaml, repeat.robot_yaml, repeat.drawn)
        assert other_seed.scenario(index).world_yaml != scenario.world_yaml
        worlds.add(scenario.world_yaml)
        # The YAML is a valid world and robot, and carries exactly the recorded values.
        path = tmp_path / f'world_{index}.yaml'
        path.write_text(scenario.world_yaml)
        world = load_world(str(path))
        drawn = scenario.drawn
        assert world.floor.friction == drawn['floor.friction']
        assert list(world.floor.rgba[:3]) == drawn['floor.rgb']
        assert (world.spawn.xyz[0], world.spawn.xyz[1], world.spawn.yaw) == \
               (drawn['spawn.x'], drawn['spawn.y'], drawn['spawn.yaw'])
        obstacles = world.boxes + world.cylinders
        assert len(obstacles) == drawn['obstacles.count']
        assert spec.obstacles.count[0] <= len(obstacles) <= spec.obstacles.count[1]
        robot = yaml.safe_load(scenario.robot_yaml)
        assert robot['sensors'][0]['noise_stddev'] == drawn['sensors.laser.noise_stddev']
        assert robot['base']['mass'] == round(2.5 * drawn['robot.mass_scale'], 4)
        # Never overlapping the spawn or the goal; the goal far enough.
        for point in (scenario.spawn, scenario.goal):
            for obstacle in obstacles:
                reach = obstacle.radius if hasattr(obstacle, 'radius') else math.hypot(*obstacle.size[:2]) / 2
                assert math.dist(point[:2], obstacle.position[:2]) - reach >= spec.poses.robot_radius
        assert math.dist(scenario.spawn[:2], scenario.goal[:2]) >= spec.poses.goal_min_distance
    assert len(worlds) == 8


def test_goal_is_reachable_or_the_spec_is_refused(tmp_path):
    """A wall of obstacles between every spawn and goal is impossible: the randomiser never returns an
    unreachable layout; a spec that leaves no reachable layout is refused naming the key."""
    spec = load_randomization(str(SHIPPED_SPEC))
    randomizer = Randomizer(spec, 3)
    scenario = randomizer.scenario(0)
    wall = [{'name': 'block', 'position': [x, 0.0, 0.3], 'size': [2.0, 6.0, 0.6], 'yaw': 0.0} for x in (scenario.spawn[0],)]
    assert randomizer._reachable(scenario.spawn, scenario.goal, []) is True
    assert randomizer._reachable(scenario.spawn, scenario.goal, wall) is False  # the robot sits inside it
    crowded = tmp_path / 'crowded.yaml'
    crowded.write_text('base_world: room\nobstacles: {count: [40, 40], size: [0.5, 0.5], clearance: 0.45}\n')
    result = robotsim('dataset', 'generate', '--randomization', str(crowded), '--episodes', '1', '--out',
                      str(tmp_path / 'never'), '--no-progress')
    assert result.returncode == 2, result.stderr
    assert result.stderr.strip().count('\n') == 0 and 'Traceback' not in result.stderr
    assert 'crowded.yaml: obstacles: episode 0: no layout with the goal reachable' in result.stderr


@pytest.mark.parametrize('content, where', [
    ('base_world: room\nobstacles: {count: [3, 1]}\n', 'obstacles.count: expected [low, high] with low <= high'),
    ('base_world: room\nlight: {diffuse: [0.2, 1.5]}\n', 'light.diffuse: expected values <= 1'),
    ('base_world: room\nfloor_friction: [0.5]\n', 'floor_friction: expected a list of 2 numbers'),
    ('base_world: room\nobstacle: {count: [1, 2]}\n', 'obstacle: unknown key'),
    ('base_world: nowhere\n', 'file not found'),
])
def test_invalid_randomization_spec_is_one_line_naming_file_and_key(tmp_path, content, where):
    spec = tmp_path / 'bad.yaml'
    spec.write_text(content)
    result = robotsim('dataset', 'generate', '--randomization', str(spec), '--episodes', '1', '--out',
                      str(tmp_path / 'out'))
    assert result.returncode == 2
    line = result.stderr.strip()
    assert '\n' not in line and 'Traceback' not in line, line
    assert where in line and ('bad.yaml' in line or 'nowhere' in line), line
    assert not (tmp_path / 'out').exists() or not any((tmp_path / 'out').iterdir())


def test_unwritable_output_is_one_line(tmp_path):
    blocker = tmp_path / 'a_file'
    blocker.write_text('not a folder')
    result = robotsim('dataset', 'generate', '--randomization', str(SMALL_COURSE), '--episodes', '1',
                      '--out', str(blocker / 'dataset'))
    assert result.returncode == 2
    assert result.stderr.strip() == f'robotsim: error: --out {blocker / "dataset"}: cannot write there (Not a directory)'


def test_full_disk_stops_with_one_line_and_keeps_finished_episodes_verifiable(tmp_path):
    """A real full file system (ENOSPC from the kernel, nothing simulated): a tmpfs of about 2.5
    episodes, mounted in a private mount namespace (``unshare``: as root, or as a user where user
    namespaces are allowed; the host's mounts never change), under a 2-worker generation of 6."""
    from robotsim_core.output_files import file_sha256
    from robotsim_learning.ros.episode import run_episode

    unshare = shutil.which('unshare')
    if unshare is None:
        pytest.skip('needs unshare (util-linux) for a private tmpfs')
    namespace = [unshare, '--mount'] + ([] if os.geteuid() == 0 else ['--map-root-user'])
    disk = tmp_path / 'disk'
    disk.mkdir()
    probe = subprocess.run(namespace + ['mount', '-t', 'tmpfs', '-o', 'size=1m', 'tmpfs', str(disk)],
                           capture_output=True, text=True, timeout=60)
    if probe.returncode != 0:
        pytest.skip(f'cannot mount a tmpfs in a private mount namespace here: {probe.stderr.strip()}')

    # Episode 0 as the generator will write it: its size sets the disk's, its hash is the reference.
    reference = tmp_path / 'reference' / 'episode_000000'  # the bag's name is inside its MCAP file
    reference.parent.mkdir()
    run_episode(Randomizer(load_randomization(str(SMALL_COURSE)), 5), 0, str(reference), 'wander')
    episode_bytes = sum(f.stat().st_size for f in reference.iterdir())
    out = disk / 'dataset'
    cli = f'{shlex.quote(sys.executable)} -m robotsim.cli dataset'
    generate = (f'{cli} generate --randomization {shlex.quote(str(SMALL_COURSE))} --episodes 6 --seed 5 --workers 2 '
                f'--out {shlex.quote(str(out))} --no-progress')
    script = f'''
        cd {shlex.quote(str(tmp_path))}
        mount -t tmpfs -o size={int(2.5 * episode_bytes)} tmpfs {shlex.quote(str(disk))} || exit 99
        {generate} 2> full.err; echo $? > full.rc
        {cli} verify {shlex.quote(str(out))} > full_verify.out 2>&1; echo $? > full_verify.rc
        cp {shlex.quote(str(out / 'dataset.json'))} full.json
        ls {shlex.quote(str(out))} > full.ls
        {generate} --resume 2> still_full.err; echo $? > still_full.rc
        ls -a {shlex.quote(str(out))} > still_full.ls
        mount -o remount,size=64m {shlex.quote(str(disk))}
        {generate} --resume 2> resumed.err; echo $? > resumed.rc
        {cli} verify {shlex.quote(str(out))} > resumed_verify.out 2>&1; echo $? > resumed_verify.rc
        cp {shlex.quote(str(out / 'dataset.json'))} resumed.json
    '''
    ran = subprocess.run(namespace + ['bash', '-c', script], capture_output=True, text=True, timeout=900)
    assert ran.returncode == 0, ran.stderr

    def read(name: str) -> str:
        return (tmp_path / name).read_text()

    # The full disk: exit 2 and one line saying so; the episodes the manifest lists verify.
    error = read('full.err').strip()
    assert read('full.rc').strip() == '2', error
    assert '\n' not in error and 'Traceback' not in error, error
    full = json.loads(read('full.json'))
    kept = len(full['episodes'])
    assert 1 <= kept < 6, f'expected the disk to fill after 1 to 5 episodes; the manifest lists {kept}'
    assert error == (f'robotsim: error: --out {out}: disk full while writing an episode; stopped. The {kept} finished '
                     f'episode(s) are intact (robotsim dataset verify {out}); free space, then rerun with --resume')
    # The finished episodes verify; the dataset is reported incomplete (exit 1), with how to complete it.
    assert read('full_verify.rc').strip() == '1', read('full_verify.out')
    assert read('full_verify.out').startswith(f'robotsim dataset verify: INCOMPLETE {out}: {kept} of 6 episodes '
                                              'generated'), read('full_verify.out')
    assert read('full_verify.out').count('\n') == 1 and '; the listed ones verify; ' in read('full_verify.out')
    assert read('full_verify.out').rstrip().endswith(f'--out {out} --resume'), read('full_verify.out')
    # With two workers either episode may finish first: each listed one is the episode run alone, byte for byte.
    for entry in full['episodes']:
        name = f"episode_{entry['index']:06d}"
        alone = tmp_path / 'reference' / name
        if not alone.exists():
            run_episode(Randomizer(load_randomization(str(SMALL_COURSE)), 5), entry['index'], str(alone), 'wander')
        assert entry['sha256'] == file_sha256(alone / f'{name}.mcap'), name
    listed = {e['bag'] for e in full['episodes']}
    assert listed <= set(read('full.ls').split())

    # --resume while the disk is still full: the same one line, and nothing left behind that would block the next.
    assert read('still_full.rc').strip() == '2', read('still_full.err')
    assert 'disk full' in read('still_full.err') and '\n' not in read('still_full.err').strip(), read('still_full.err')
    assert '.write-test' not in read('still_full.ls').split(), read('still_full.ls')
    # Space freed: --resume completes the dataset around the finished episodes, which stay as they were.
    assert read('resumed.rc').strip() == '0', read('resumed.err')
    assert f'{6 - kept} episode(s) generated' in read('resumed.err')
    assert read('resumed_verify.rc').strip() == '0', read('resumed_verify.out')
    resumed = json.loads(read('resumed.json'))
    assert [e['index'] for e in resumed['episodes']] == list(range(6))
    assert {e['index']: e['sha256'] for e in full['episodes']}.items() <= {e['index']: e['sha256'] for e in
                                                                          resumed['episodes']}.items()


# ------------------------------------------------------------------------------------------ a corpus end to end
def kill_generation_mid_episode(out: Path, arguments: list[str], finished: int, writing: int = 1,
                                signum: int = signal.SIGKILL) -> set[int]:
    """Start ``robotsim dataset generate ARGUMENTS --out OUT`` and SIGKILL it (or send it ``signum``, to its main
    process only) once ``finished`` episodes are in the manifest and ``writing`` more are being written
    (half-written episodes left under .partial/); the processes it had started, as they were then."""
    process = subprocess.Popen([sys.executable, '-m', 'robotsim.cli', 'dataset', 'generate', *arguments,
                                '--out', str(out), '--no-progress'],
                               stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                               preexec_fn=_die_with_parent)  # Ctrl-C not ignored, whatever started the tests
    deadline = time.monotonic() + 300
    children: set[int] = set()
    try:
        while time.monotonic() < deadline and process.poll() is None:
            partial = list((out / '.partial').glob('episode_*/*.mcap')) if (out / '.partial').is_dir() else []
            done = len(manifest(out)['episodes']) if (out / 'dataset.json').is_file() else 0
            if done >= finished and len(partial) >= writing:
                children = _children(process.pid)
                process.send_signal(signum)
                break
            time.sleep(0.005)
        if signum != signal.SIGKILL:
            process.wait(timeout=120)  # no speed assumed: an episode of the small course takes seconds
    finally:
        process.kill()
        process.wait()
    if signum == signal.SIGINT:
        stderr = process.stderr.read()
        assert process.returncode == 130 and f'interrupted; the finished episodes are in {out}' in stderr, stderr
    else:
        assert process.returncode == -signal.SIGKILL, \
            f'the generation ended before it could be killed: {process.stderr.read()}'
    return children


def _children(pid: int) -> set[int]:
    found = set()
    for task in Path(f'/proc/{pid}/task').iterdir():
        found |= {int(child) for child in (task / 'children').read_text().split()}
    return found


def _alive(pid: int) -> bool:
    try:
        return Path(f'/proc/{pid}/stat').read_text().rsplit(')', 1)[1].split()[0] != 'Z'
    except FileNotFoundError:
        return False


def test_a_generation_killed_in_its_first_episode_is_incomplete_with_the_resume_command(tmp_path):
    out = tmp_path / 'killed_in_the_first'
    kill_generation_mid_episode(out, ['--randomization', str(SMALL_COURSE), '--episodes', '2', '--seed', '5'],
                                finished=0)
    verified = robotsim('dataset', 'verify', str(out))
    assert verified.returncode == 1, verified.stdout + verified.stderr
    line = verified.stdout.strip()
    assert line.startswith(f'robotsim dataset verify: INCOMPLETE {out}: 0 of 2 episodes generated (episode_000000 '
                           'half-written in .partial/)'), line
    assert line.endswith(f'--out {out} --resume'), line
    resumed = robotsim(*shlex.split(line.split('Complete it with: ', 1)[1])[1:], check=True)
    assert '2 episode(s) generated' in resumed.stderr
    assert robotsim('dataset', 'verify', str(out)).returncode == 0


def test_the_workers_of_a_killed_generation_stop_with_it(tmp_path):
    """SIGKILL a 2-worker generation while both workers record an episode: its workers end with it (they get
    SIGTERM from the kernel, robotsim_core.processes.exit_with_parent) and finish no episode after it died. Without
    that they went on with the episodes already queued to them, writing into the folder a --resume would fill."""
    out = tmp_path / 'killed'
    workers = kill_generation_mid_episode(out, ['--randomization', str(SMALL_COURSE), '--episodes', '6', '--seed', '5',
                                                '--workers', '2', '--no-cameras'], finished=0, writing=2)
    finished = sorted(p.name for p in out.glob('episode_*'))
    assert len(workers) >= 2, workers  # the pool's workers (and its resource tracker)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and any(_alive(pid) for pid in workers):
        time.sleep(0.05)
    assert not [pid for pid in workers if _alive(pid)], 'a worker outlived the generation'
    assert sorted(p.name for p in out.glob('episode_*')) == finished, 'an episode was finished after the kill'
    assert len(list((out / '.partial').glob('episode_*'))) >= 2


def test_ctrl_c_to_a_generation_s_main_process_stops_its_workers_at_once(tmp_path):
    """SIGINT to the main process only (as `kill -INT` or a supervisor sends it; a terminal's Ctrl-C reaches the
    workers too) while both workers record: it ends its workers and returns 130 without finishing an episode after
    it. Without that it waited for the episodes running and queued to its workers, and they went on writing."""
    out = tmp_path / 'interrupted'
    workers = kill_generation_mid_episode(out, ['--randomization', str(SMALL_COURSE), '--episodes', '6', '--seed',
                                                '5', '--workers', '2', '--no-cameras'], finished=0, writing=2,
                                          signum=signal.SIGINT)
    assert len(workers) >= 2, workers
    deadline = time.monotonic() + 30  # terminated before the main process returned; their exit may still be under way
    while time.monotonic() < deadline and any(_alive(pid) for pid in workers):
        time.sleep(0.1)
    assert not [pid for pid in workers if _alive(pid)], 'a worker outlived the interrupted generation'
    # The two episodes being written when the signal went are left half-written, or (a loaded machine: the
    # main process handles the signal late) the one that had run longer got finished before it did; waiting
    # for the running and queued episodes, as before, finished all six.
    finished, half = list(out.glob('episode_*')), list((out / '.partial').glob('episode_*'))
    assert len(finished) <= 1, f'episodes were finished after the interrupt: {sorted(p.name for p in finished)}'
    assert len(finished) + len(half) >= 2, (finished, half)
    verified = robotsim('dataset', 'verify', str(out))
    assert 'INCOMPLETE' in verified.stdout and '--resume' in verified.stdout, verified.stdout


def _kill_mid_way(out: Path) -> None:
    """A 1-worker generation of 6 episodes killed with two finished and the third being written."""
    kill_generation_mid_episode(out, ['--randomization', str(SMALL_COURSE), '--episodes', '6', '--seed', '5',
                                      '--workers', '1'], finished=2)


def test_corpus_generate_verify_corrupt_resume_engines_export(tmp_path):
    pyarrow = pytest.importorskip('pyarrow')
    import pyarrow.parquet as pq
    from PIL import Image

    # 6 episodes x 5 s on 2 workers; verify passes.
    two = tmp_path / 'two_workers'
    result = robotsim('dataset', 'generate', '--randomization', str(SMALL_COURSE), '--episodes', '6', '--seed', '5',
                      '--workers', '2', '--out', str(two), check=True)
    assert 'episodes/hour' in result.stderr and 'simulated s per wall s' in result.stderr and 'MB in' in result.stderr
    assert '6/6' in result.stderr  # the progress bar
    data = manifest(two)
    assert data['generator_version'] and data['source_commit'] and len(data['randomization']['sha256']) == 64
    assert data['randomization']['spec']['episode_duration'] == 5.0
    # The spec as hashed: no machine path, no absent pattern keys (a spec without them hashes as it always did).
    assert 'source' not in data['randomization']['spec'] and 'floor_texture' not in data['randomization']['spec']['appearance']
    assert [e['index'] for e in data['episodes']] == list(range(6))
    for entry in data['episodes']:
        assert entry['outcome'] in ('success', 'collision', 'timeout', 'gave_up')
        assert 0 < entry['duration'] <= 5.0 and entry['drawn']['obstacles.count'] >= 2
        counts = entry['message_counts']
        assert counts['/camera/image_raw'] == counts['/camera/depth/image_raw'] > 0
        assert counts['/scan'] > 0 and counts['/cmd_vel'] > 0 and counts['/goal_pose'] > 0
        assert counts['/sim/ground_truth'] == counts['/odom'] == counts['/joint_states']
        assert foxglove_counts(two / entry['bag']) == counts  # Foxglove's reader decodes every message
        assert set(entry['files']) == {'metadata.yaml', 'robot.yaml', 'world.yaml'}
    assert robotsim('dataset', 'verify', str(two)).returncode == 0

    # Killed mid-way, then resumed: finished episodes are not redone, the half-written one is,
    # and the result is byte-identical to the 2-worker run.
    killed = tmp_path / 'killed'
    _kill_mid_way(killed)
    before = {e['index']: (e['sha256'], (killed / e['bag'] / f'{e["bag"]}.mcap').stat().st_mtime_ns)
              for e in manifest(killed)['episodes']}
    half = sorted(p.name for p in (killed / '.partial').iterdir())
    assert half and len(before) >= 2
    resumed = robotsim('dataset', 'generate', '--randomization', str(SMALL_COURSE), '--episodes', '6', '--seed', '5',
                       '--workers', '2', '--out', str(killed), '--resume', check=True)
    assert f'regenerating 1 half-written episode(s): {half[0]}' in resumed.stderr
    assert f'{6 - len(before)} episode(s) generated' in resumed.stderr
    for index, (sha, mtime) in before.items():
        name = f'episode_{index:06d}'
        assert (killed / name / f'{name}.mcap').stat().st_mtime_ns == mtime, f'{name} was redone'
    assert hashes(killed) == hashes(two)
    assert not (killed / '.partial').exists()
    assert robotsim('dataset', 'verify', str(killed)).returncode == 0
    # --resume with other settings is refused, naming them.
    other = robotsim('dataset', 'generate', '--randomization', str(SMALL_COURSE), '--episodes', '6', '--seed', '6',
                     '--out', str(killed), '--resume')
    assert other.returncode == 2 and 'seed 5 -> 6' in other.stderr

    # Ray (a local instance of 2 CPUs on 127.0.0.1): the same bytes per episode.
    pytest.importorskip('ray')
    ray_out = tmp_path / 'ray'
    robotsim('dataset', 'generate', '--randomization', str(SMALL_COURSE), '--episodes', '3', '--seed', '5',
             '--workers', '2', '--executor', 'ray', '--out', str(ray_out), '--no-progress', check=True)
    assert hashes(ray_out) == {i: sha for i, sha in hashes(two).items() if i < 3}

    # A corrupted bag: verify names that episode and exits 1.
    victim = two / 'episode_000003' / 'episode_000003.mcap'
    raw = bytearray(victim.read_bytes())
    raw[len(raw) // 2] ^= 0xFF
    victim.write_bytes(bytes(raw))
    failed = robotsim('dataset', 'verify', str(two))
    assert failed.returncode == 1
    assert failed.stdout.startswith('robotsim dataset verify: FAIL episode_000003: sha256'), failed.stdout
    # A manifest that lies about counts is found too (the hash matches; the content does not).
    lying = manifest(killed)
    lying['episodes'][1]['message_counts']['/scan'] += 1
    (killed / 'dataset.json').write_text(json.dumps(lying))
    failed = robotsim('dataset', 'verify', str(killed))
    assert failed.returncode == 1 and 'FAIL episode_000001: message counts differ' in failed.stdout
    assert '/scan' in failed.stdout
    # An edited scenario file beside an intact bag is found too.
    (killed / 'dataset.json').write_text(json.dumps(manifest(two)))  # the truthful manifest (same bytes)
    with open(killed / 'episode_000002' / 'world.yaml', 'a') as world:
        world.write('# edited\n')
    failed = robotsim('dataset', 'verify', str(killed))
    assert failed.returncode == 1, failed.stdout
    assert failed.stdout.startswith('robotsim dataset verify: FAIL episode_000002: sha256 of world.yaml differs '
                                    'from the manifest'), failed.stdout

    # Export to LeRobot v3.0 and read every declared feature back with pyarrow.
    lerobot = tmp_path / 'lerobot'
    exported = robotsim('dataset', 'export', str(ray_out), '--format', 'lerobot', '--rate', '10', '--out', str(lerobot),
                        check=True)
    assert 'max skew' in exported.stdout and 'frames rejected' in exported.stdout
    check_lerobot(lerobot, pyarrow, pq, Image, expected_episodes=3, camera=(48, 64, 3))


def check_lerobot(root: Path, pyarrow, pq, image_module, expected_episodes: int, camera, has_goal=True) -> None:
    """The LeRobot v3.0 layout read back with pyarrow (tests/test_lerobot.py has the real LeRobot read it)."""
    import pyarrow.compute as pyarrow_compute
    info = json.loads((root / 'meta' / 'info.json').read_text())
    assert info['codebase_version'] == 'v3.0' and info['total_episodes'] >= expected_episodes
    episodes = pq.read_table(root / 'meta' / 'episodes' / 'chunk-000' / 'file-000.parquet').to_pylist()
    tasks = pq.read_table(root / 'meta' / 'tasks.parquet')
    assert tasks.column('task_index').to_pylist() == list(range(tasks.num_rows)) and tasks.num_rows >= 1
    assert b'pandas' in tasks.schema.metadata  # the task text is the pandas index, as LeRobot writes it
    stats = json.loads((root / 'meta' / 'stats.json').read_text())
    features = info['features']
    expected = {'observation.state', 'observation.scan', 'observation.imu', 'action', 'timestamp', 'frame_index',
                'episode_index', 'index', 'task_index'} | ({'observation.goal'} if has_goal else set())
    if camera:
        expected.add('observation.images.camera')
    assert set(features) == expected and set(stats) == expected
    assert [e['episode_index'] for e in episodes] == list(range(info['total_episodes']))
    total = 0
    for episode in episodes:
        path = root / info['data_path'].format(chunk_index=episode['data/chunk_index'],
                                               file_index=episode['data/file_index'])
        whole = pq.read_table(path)
        assert set(whole.column_names) == set(features)
        assert b'huggingface' in whole.schema.metadata  # what makes `datasets` decode the images
        rows = whole.filter(pyarrow_compute.equal(whole.column('episode_index'), episode['episode_index']))
        assert rows.num_rows == episode['length'] == episode['dataset_to_index'] - episode['dataset_from_index'] > 0
        assert rows.column('index').to_pylist() == list(range(episode['dataset_from_index'],
                                                              episode['dataset_to_index']))
        # No gaps: the timestamps are the frame indices at the declared rate.
        assert np.allclose(rows.column('timestamp').to_numpy(), np.arange(rows.num_rows) / info['fps'], atol=1e-6)
        for name, feature in features.items():
            column = rows.column(name).to_pylist()
            if feature['dtype'] == 'image':
                for cell in column[:3] + column[-1:]:
                    pixels = np.asarray(image_module.open(io.BytesIO(cell['bytes'])))
                    assert list(pixels.shape) == feature['shape'] == list(camera)
                assert np.array(episode[f'stats/{name}/mean']).shape == (3, 1, 1)
            elif feature['dtype'] == 'float32':
                values = np.array(column, dtype=np.float64).reshape(rows.num_rows, -1)  # a scalar per row too
                assert values.shape == (rows.num_rows, feature['shape'][0])
                assert np.isfinite(values).all(), name
                assert np.allclose(episode[f'stats/{name}/max'], values.max(axis=0), rtol=1e-6)
            else:
                assert feature['dtype'] == 'int64' and pyarrow.types.is_int64(whole.schema.field(name).type)
        total += rows.num_rows
    assert total == info['total_frames']


def test_prune_drops_useless_episodes_and_keeps_the_dataset_verifiable(tmp_path):
    spec = tmp_path / 'strict.yaml'
    spec.write_text(SMALL_COURSE.read_text().replace('episode_duration: 5.0', 'episode_duration: 1.0')
                    .replace('robot: small_camera_rover.yaml', f'robot: {SMALL_COURSE.parent / "small_camera_rover.yaml"}')
                    + 'prune: {min_travel: 50.0, min_image_stddev: 0.0}\n')
    out = tmp_path / 'pruned'
    robotsim('dataset', 'generate', '--randomization', str(spec), '--episodes', '2', '--out', str(out), '--prune',
             '--no-progress', check=True)
    entries = manifest(out)['episodes']
    assert len(entries) == 2
    for entry in entries:
        assert entry['pruned'].startswith('the robot never moved') and entry['bag'] is None
    assert sorted(p.name for p in out.iterdir()) == ['dataset.json']
    assert robotsim('dataset', 'verify', str(out)).returncode == 0
    # A featureless camera: the image rule.
    spec.write_text(spec.read_text().replace('min_travel: 50.0, min_image_stddev: 0.0',
                                             'min_travel: 0.0, min_image_stddev: 1000.0'))
    out = tmp_path / 'featureless'
    robotsim('dataset', 'generate', '--randomization', str(spec), '--episodes', '1', '--out', str(out), '--prune',
             '--no-progress', check=True)
    assert manifest(out)['episodes'][0]['pruned'].startswith('featureless camera')
