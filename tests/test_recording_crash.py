"""Crash-safe recording: a bag survives its recorder's death, `robotsim bag repair` rebuilds what a
SIGKILL leaves, a hang-up or SIGTERM closes the bag properly, and a recording starts with the run.

The first tests are ROS-free (real bags written by BagWriter, cut and repaired on disk); the
others run real bringups (simulator, state publisher, recorder) through the bare launcher."""

from __future__ import annotations

import fcntl
import os
import pty
import random
import select
import shutil
import signal
import subprocess
import termios
import threading
import time
from collections import Counter, defaultdict
from pathlib import Path

import pytest
import yaml
from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy
from rclpy.serialization import deserialize_message
from rosbags.highlevel import AnyReader
from rosbags.interfaces import Qos, QosDurability, QosHistory, QosLiveliness, QosReliability, QosTime
from rosbags.typesys import Stores, get_typestore

from robotsim.bringup import config_from_arguments, fleet_of, recorded_topics
from robotsim_core.contract import WORLD_TOPICS, resolve_topic, robot_contract
from robotsim_core.description import load_robot
from robotsim_core.ros.common import message_class
from robotsim_learning.bag_repair import repair_bag
from robotsim_learning.bag_writer import BagWriter
from robotsim_msgs.srv import Pause
from bag_readers import foxglove_counts
from rostest_helpers import (Launch, NodeProcess, Observer, _die_with_parent, assert_recorded_everything_published,
                             published_counts)

STORE = get_typestore(Stores.ROS2_KILTED)
SECOND = 1_000_000_000


# ----------------------------------------------------------------------------- ROS-free
class StepClock:
    """A wall clock the test advances, so the writer's time-based flushes fall at known messages."""

    def __init__(self):
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def cdr(msg_type: str, message) -> bytes:
    return bytes(STORE.serialize_cdr(message, msg_type))


def clock_message(ns: int) -> bytes:
    Time = STORE.types['builtin_interfaces/msg/Time']
    return cdr('rosgraph_msgs/msg/Clock', STORE.types['rosgraph_msgs/msg/Clock'](clock=Time(sec=ns // SECOND,
                                                                                            nanosec=ns % SECOND)))


def text_message(text: str) -> bytes:
    return cdr('std_msgs/msg/String', STORE.types['std_msgs/msg/String'](data=text))


BEST_EFFORT_OFFER = Qos(QosHistory.UNKNOWN, 0, QosReliability.BEST_EFFORT, QosDurability.VOLATILE,
                        QosTime(9223372036, 854775807), QosTime(9223372036, 854775807), QosLiveliness.AUTOMATIC,
                        QosTime(9223372036, 854775807), False)


def write_test_bag(path: Path, messages: int = 600, seed: int = 3):
    """A bag of /clock, a /text topic with seeded random sizes (some records far larger than the
    file buffer) and /status (a robotsim_msgs type); time-based flushes every 37 messages.
    Returns (written [(topic, ns, bytes)], flushes [(file size, messages on disk)], metadata after each flush)."""
    rng = random.Random(seed)
    clock = StepClock()
    writer = BagWriter(str(path), flush_period=0.5, clock=clock)
    writer.add_topic('/clock', 'rosgraph_msgs/msg/Clock')
    writer.add_topic('/text', 'std_msgs/msg/String', [BEST_EFFORT_OFFER])
    writer.add_topic('/status', 'robotsim_msgs/msg/SimStatus')
    status_type = 'robotsim_msgs/msg/SimStatus'
    written, flushes, documents = [], [], []
    mcap = path / f'{path.name}.mcap'
    for index in range(messages):
        ns = index * 2_000_000  # 2 ms apart: the bag-time bound (0.5 s) never triggers, the wall clock does
        if index % 5 == 0:
            topic, data = '/text', text_message('x' * rng.choice([1, 50, 3000, 20000]))
        elif index % 97 == 0:
            status = writer.typestore.types[status_type](  # registered by the writer from the installed .msg
                sim_time=STORE.types['builtin_interfaces/msg/Time'](sec=0, nanosec=ns), real_time_factor=1.0,
                target_real_time_factor=1.0, paused=False, step_count=index, physics_timestep=0.002, seed=3)
            topic, data = '/status', bytes(writer.typestore.serialize_cdr(status, status_type))
        else:
            topic, data = '/clock', clock_message(ns)
        if index % 37 == 36:
            clock.now += 0.5  # the oldest unwritten message is now half a second old: this write flushes
        writer.write(topic, ns, data)
        written.append((topic, ns, data))
        if index % 37 == 36:
            flushes.append((mcap.stat().st_size, len(written)))
            documents.append(yaml.safe_load((path / 'metadata.yaml').read_text()))
    writer.close()
    return written, flushes, documents


def read_bag(path: Path) -> list[tuple[str, int, bytes]]:
    with AnyReader([path]) as reader:
        return [(connection.topic, timestamp, bytes(data)) for connection, timestamp, data in reader.messages()]


def test_a_cut_off_bag_is_repaired_to_every_complete_message_on_disk(tmp_path):
    """Cut a bag at seeded random byte offsets (as a SIGKILL mid-write leaves it), drop its
    metadata.yaml, repair: the bag reads back as exactly the first N messages written, with N at
    least what the last flush before the cut had put on disk (and the messages of a cut-off chunk
    whose records are complete)."""
    written, flushes, _ = write_test_bag(tmp_path / 'full')
    assert len(flushes) >= 15
    original = (tmp_path / 'full' / 'full.mcap').read_bytes()
    rng = random.Random(11)
    cuts = [size for size, _ in flushes[::4]] + [rng.randrange(flushes[0][0], flushes[-1][0]) for _ in range(25)]
    partial_chunk_recoveries = 0
    for index, cut in enumerate(cuts):
        bag = tmp_path / f'cut{index}'
        bag.mkdir()
        (bag / 'full.mcap').write_bytes(original[:cut])
        report = repair_bag(bag)
        assert report.startswith(f'{bag}: recovered ') and 'no footer' in report and 'metadata.yaml was missing' in report
        recovered = read_bag(bag)
        on_disk = max(count for size, count in flushes if size <= cut)
        next_flush = min([count for size, count in flushes if size > cut] or [len(written)])
        assert on_disk <= len(recovered) <= next_flush, (cut, on_disk, len(recovered), next_flush)
        assert recovered == written[:len(recovered)], cut  # the same messages, bytes and times, in order
        partial_chunk_recoveries += len(recovered) > on_disk
        if cut in (size for size, _ in flushes):
            assert len(recovered) == on_disk, cut  # a cut at a flush loses nothing that was flushed
        metadata = yaml.safe_load((bag / 'metadata.yaml').read_text())['rosbag2_bagfile_information']
        counts = Counter(topic for topic, _, _ in recovered)
        assert metadata['message_count'] == len(recovered)
        assert {t['topic_metadata']['name']: t['message_count'] for t in metadata['topics_with_message_count']} == \
            {topic: counts.get(topic, 0) for topic in ('/clock', '/text', '/status')}
        assert metadata['duration']['nanoseconds'] == recovered[-1][1] - recovered[0][1]
        assert (bag / 'full.mcap.before-repair').read_bytes() == original[:cut]  # the damaged file is kept
    assert partial_chunk_recoveries > 0, 'no cut recovered the complete messages of a cut-off chunk'


def test_metadata_describes_what_is_on_disk_and_repair_rebuilds_it_as_written(tmp_path):
    written, flushes, documents = write_test_bag(tmp_path / 'bag', messages=37 * 6)  # ends on a flush
    for (_, count), document in zip(flushes, documents):
        assert document['rosbag2_bagfile_information']['message_count'] == count
    final = yaml.safe_load((tmp_path / 'bag' / 'metadata.yaml').read_text())
    assert documents[-1] == final  # kept current while recording = what rosbags writes at close

    repaired = tmp_path / 'repaired'
    shutil.copytree(tmp_path / 'bag', repaired)
    assert repair_bag(repaired).endswith('nothing to repair')  # intact: left alone
    (repaired / 'metadata.yaml').unlink()
    assert 'metadata.yaml was missing' in repair_bag(repaired)
    rebuilt = yaml.safe_load((repaired / 'metadata.yaml').read_text())['rosbag2_bagfile_information']
    final = final['rosbag2_bagfile_information']
    for key in ('relative_file_paths', 'files'):
        rebuilt.pop(key), final.pop(key)  # the file now carries the folder's name
    assert rebuilt == final  # counts, duration, types, type hashes (also robotsim_msgs), offered QoS
    text_topic = next(t for t in rebuilt['topics_with_message_count'] if t['topic_metadata']['name'] == '/text')
    assert text_topic['topic_metadata']['offered_qos_profiles'][0]['reliability'] == 'best_effort'
    assert read_bag(repaired) == written


def run_cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(['robotsim', *args], capture_output=True, text=True, timeout=60)


def test_bag_repair_refuses_what_is_not_a_bag_in_one_line(tmp_path):
    (tmp_path / 'file.txt').write_text('hello')
    (tmp_path / 'empty').mkdir()
    (tmp_path / 'garbage').mkdir()
    (tmp_path / 'garbage' / 'garbage.mcap').write_bytes(random.Random(5).randbytes(5000))
    (tmp_path / 'only_header').mkdir()
    write_test_bag(tmp_path / 'source', messages=40)
    (tmp_path / 'only_header' / 'x.mcap').write_bytes((tmp_path / 'source' / 'source.mcap').read_bytes()[:60])
    cases = {'missing': 'no such folder', 'file.txt': 'not a bag folder', 'empty': 'no .mcap file',
             'garbage': 'not an MCAP file', 'only_header': 'no complete message'}
    for name, expected in cases.items():
        result = run_cli('bag', 'repair', str(tmp_path / name))
        assert result.returncode == 2, (name, result)
        lines = result.stderr.strip().splitlines()
        assert len(lines) == 1 and expected in lines[0] and name in lines[0] and 'Traceback' not in result.stderr, \
            (name, result.stderr)
    result = run_cli('bag', 'repair')
    assert result.returncode == 2 and 'bag' in result.stderr  # argparse: the missing argument is named
    for name, expected in {'missing': 'no such folder', 'garbage': 'no metadata.yaml'}.items():
        result = run_cli('bag', 'info', str(tmp_path / name))
        lines = result.stderr.strip().splitlines()
        assert result.returncode == 2 and len(lines) == 1 and expected in lines[0], (name, result.stderr)
    assert f'robotsim bag repair {tmp_path / "garbage"}' in lines[0]


def test_bag_info_lists_what_the_metadata_and_the_file_hold(tmp_path):
    """``robotsim bag info`` as ``ros2 bag info`` prints it: per topic its type and count, and the total."""
    write_test_bag(tmp_path / 'bag', messages=40)
    result = run_cli('bag', 'info', str(tmp_path / 'bag'))
    assert result.returncode == 0, result.stderr
    metadata = yaml.safe_load((tmp_path / 'bag' / 'metadata.yaml').read_text())['rosbag2_bagfile_information']
    assert f"Messages:          {metadata['message_count']}" in result.stdout, result.stdout
    for topic in metadata['topics_with_message_count']:
        name, kind = topic['topic_metadata']['name'], topic['topic_metadata']['type']
        line = next(line for line in result.stdout.splitlines() if f'Topic: {name} ' in line)
        assert f'Type: {kind} | Count: {topic["message_count"]} | Serialization Format: cdr' in line, line


# ----------------------------------------------------------------------------- live bringups
def stamp_ns(topic: str, msg_type: str, raw: bytes) -> int | None:
    """The sim time a message was published at (None: not part of the comparison)."""
    message = deserialize_message(raw, message_class(msg_type))
    if msg_type == 'robotsim_msgs/msg/SimStatus':
        # A wall-time status, sent also while the simulation was held paused, before every subscriber joined.
        return None if message.paused else message.sim_time.sec * SECOND + message.sim_time.nanosec
    stamp = (message.clock if msg_type == 'rosgraph_msgs/msg/Clock' else
             message.transforms[0].header.stamp if msg_type == 'tf2_msgs/msg/TFMessage' else
             message.header.stamp if hasattr(message, 'header') else None)
    return 0 if stamp is None else stamp.sec * SECOND + stamp.nanosec  # latched Strings: sent at start


def recording_topics(arguments: dict[str, str]) -> dict[str, tuple[str, QoSProfile]]:
    """topic -> (type, a QoS that receives all of it) for what a bringup with ``arguments`` records."""
    config = config_from_arguments(arguments)
    specs = {resolve_topic('', t.name): t for t in (*robot_contract(load_robot(config.robot)).topics, *WORLD_TOPICS)}
    out = {}
    for topic, msg_type in recorded_topics(config, fleet_of(config)):
        qos = specs[topic].qos
        out[topic] = (msg_type, QoSProfile(
            depth=1000, reliability=ReliabilityPolicy.RELIABLE if qos.reliability == 'reliable'
            else ReliabilityPolicy.BEST_EFFORT, durability=DurabilityPolicy.TRANSIENT_LOCAL
            if qos.durability == 'transient_local' else DurabilityPolicy.VOLATILE))
    return out


def launch_arguments(arguments: dict[str, str]) -> list[str]:
    return ['robotsim', 'launch', 'sim', *(f'{key}:={value}' for key, value in arguments.items())]


def latest_clock_ns(obs: Observer) -> int:
    return stamp_ns('/clock', 'rosgraph_msgs/msg/Clock', obs.messages['/clock'][-1]) if obs.messages['/clock'] else -1


def bag_by_topic(bag: Path) -> dict[str, list[bytes]]:
    out = defaultdict(list)
    for topic, _, data in read_bag(bag):
        out[topic].append(data)
    return out


def test_a_sigkilled_recorder_leaves_a_bag_that_repair_recovers_to_the_last_second(tmp_path):
    """A live recorder is SIGKILLed mid-run. A reference subscriber in the test, which receives
    everything the simulator publishes (checked against the simulator's own counts), says what was
    published; after `robotsim bag repair` the bag holds every message stamped more than 1 s before
    the kill, and nothing that was not published."""
    bag = tmp_path / 'bag'
    # Without cameras: about 100 kB per second, so a writer that waits for a full 1 MiB chunk (as
    # rosbags does) would hold the last ~9 s in memory; with images a chunk fills in a fraction of a second.
    arguments = {'record': 'true', 'bag': str(bag), 'paused': 'true', 'firmware': 'false', 'cameras': 'false'}
    topics = recording_topics(arguments)
    obs = Observer('crash_reference')
    run = Launch(launch_arguments(arguments))
    try:
        for topic, (msg_type, qos) in topics.items():
            obs.watch(topic, message_class(msg_type), qos, raw=True)
        recorder = run.pid_of('robotsim_recorder')
        run.wait_for(r'\[robotsim_recorder\].*subscribed to all \d+ topics', 90)
        assert obs.spin_until(lambda: all(s.get_publisher_count() > 0 for s in obs.node.subscriptions), 60)
        obs.spin_for(1.0)  # as the recorder does before it resumes: publishers learn of the subscriptions
        assert obs.call(Pause, '/sim/pause', Pause.Request(paused=False), timeout=20).success
        assert obs.spin_until(lambda: latest_clock_ns(obs) >= 6 * SECOND, 120), run.text
        assert (bag / 'metadata.yaml').is_file()  # written early, kept current
        killed_at = latest_clock_ns(obs)
        os.kill(recorder, signal.SIGKILL)
        # The launcher stops the bringup (a required node died); the reference keeps listening to the end.
        assert obs.spin_until(lambda: run.process.poll() is not None, 90), run.text
        assert run.finish(timeout=30) != 0 and 'required node robotsim_recorder exited with status -9' in run.text
    finally:
        obs.close()
        run.stop()

    # The reference is complete: it received all the simulator counted. The launcher stopped the
    # simulator with SIGINT, which can land between a publish and its count: one uncounted message.
    published = published_counts(run)
    for topic, count in published.items():
        received = len(obs.messages[topic])
        if topic == '/tf':  # the state publisher's too
            assert received >= count, (topic, received, count)
        elif topic != '/sim/status':  # wall-time status: also before the reference subscribed
            assert count <= received <= count + 1, (topic, received, count)
    with pytest.raises(Exception):  # no MCAP footer: readers that need one refuse the bag
        read_bag(bag)
    repaired = run_cli('bag', 'repair', str(bag))
    assert repaired.returncode == 0 and len(repaired.stdout.strip().splitlines()) == 1, repaired
    assert 'no footer' in repaired.stdout, repaired.stdout
    recorded = bag_by_topic(bag)
    metadata = yaml.safe_load((bag / 'metadata.yaml').read_text())['rosbag2_bagfile_information']
    assert {t['topic_metadata']['name']: t['message_count'] for t in metadata['topics_with_message_count']} == \
        {topic: len(messages) for topic, messages in recorded.items()}
    assert foxglove_counts(bag) == {topic: len(messages) for topic, messages in recorded.items()}  # the repaired bag
    offered = {t['topic_metadata']['name']: t['topic_metadata']['offered_qos_profiles'][0]
               for t in metadata['topics_with_message_count']}
    assert offered['/scan']['reliability'] == 'best_effort' and offered['/odom']['reliability'] == 'reliable'
    assert offered['/tf_static']['durability'] == 'transient_local'
    deadline = killed_at - SECOND
    for topic, (msg_type, _) in topics.items():
        published_stamps = [(raw, stamp_ns(topic, msg_type, raw)) for raw in obs.messages[topic]]
        before = Counter(raw for raw, stamp in published_stamps if stamp is not None and stamp < deadline)
        in_bag = Counter(raw for raw in recorded.get(topic, []) if stamp_ns(topic, msg_type, raw) is not None)
        assert before, topic
        missing = before - in_bag
        assert not missing, f'{topic}: {sum(missing.values())} of {sum(before.values())} messages stamped ' \
                            f'before {deadline * 1e-9:.2f} s (the kill at {killed_at * 1e-9:.2f} s) are not in the bag'
        assert not in_bag - Counter(raw for raw, stamp in published_stamps if stamp is not None), \
            f'{topic}: the bag holds messages nobody published'


def wait_for_sim_time(seconds: float, timeout: float = 120) -> int:
    obs = Observer('sim_time')
    try:
        obs.watch('/clock', message_class('rosgraph_msgs/msg/Clock'), raw=True)
        assert obs.spin_until(lambda: latest_clock_ns(obs) >= seconds * SECOND, timeout), 'the simulation did not run'
        return latest_clock_ns(obs)
    finally:
        obs.close()


def assert_closed_bag(bag: Path, reached_ns: int) -> None:
    """The bag opens without repair, metadata.yaml agrees with it, and it holds the run up to 1 s
    before ``reached_ns`` (sim time the test saw before stopping the recorder)."""
    recorded = bag_by_topic(bag)
    metadata = yaml.safe_load((bag / 'metadata.yaml').read_text())['rosbag2_bagfile_information']
    assert metadata['message_count'] == sum(len(m) for m in recorded.values())
    assert foxglove_counts(bag) == {topic: len(messages) for topic, messages in recorded.items()}
    clocks = [stamp_ns('/clock', 'rosgraph_msgs/msg/Clock', raw) for raw in recorded['/clock']]
    assert clocks[0] == 0 and clocks[-1] >= reached_ns - SECOND, (clocks[0], clocks[-1], reached_ns)
    assert repair_bag(bag).endswith('nothing to repair')


def _controlling_terminal() -> None:
    """In the child (a new session): make its pty its controlling terminal, as a login shell's is."""
    fcntl.ioctl(0, termios.TIOCSCTTY, 0)
    _die_with_parent()


def test_a_hung_up_terminal_stops_the_bringup_and_leaves_a_closed_bag(tmp_path):
    """The launcher runs in a terminal (a pty) that goes away: the kernel hangs it up (SIGHUP, and
    its output now fails). The recorder must still close the bag: readable without repair."""
    bag = tmp_path / 'bag'
    master, slave = pty.openpty()
    process = subprocess.Popen(launch_arguments({'record': 'true', 'bag': str(bag), 'cameras': 'false',
                                                 'firmware': 'false'}),
                               stdin=slave, stdout=slave, stderr=slave, start_new_session=True,
                               preexec_fn=_controlling_terminal)
    os.close(slave)
    output, stop_reading = [], threading.Event()

    def read_terminal():
        while not stop_reading.is_set():
            if select.select([master], [], [], 0.1)[0]:
                try:
                    output.append(os.read(master, 65536).decode(errors='replace'))
                except OSError:
                    return
    reader = threading.Thread(target=read_terminal, daemon=True)
    reader.start()
    try:
        reached = wait_for_sim_time(3.0)
        text = ''.join(output)
        recorder = int(text.split('started robotsim_recorder (')[1].split('pid ')[1].split(')')[0])
    finally:
        stop_reading.set()
        reader.join(timeout=5)
        os.close(master)  # the terminal goes away
    try:
        process.wait(timeout=60)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and Path(f'/proc/{recorder}').exists():
        time.sleep(0.1)
    assert not Path(f'/proc/{recorder}').exists(), 'the recorder outlived the launcher'
    assert process.returncode == 0, process.returncode  # a stop on request, not a failure
    assert_closed_bag(bag, reached)


@pytest.mark.parametrize('signum', [signal.SIGHUP, signal.SIGTERM], ids=['SIGHUP', 'SIGTERM'])
def test_the_recorder_closes_its_bag_on_a_signal(tmp_path, signum):
    bag = tmp_path / 'bag'
    run = Launch(launch_arguments({'record': 'true', 'bag': str(bag), 'cameras': 'false', 'firmware': 'false'}))
    try:
        recorder = run.pid_of('robotsim_recorder')
        reached = wait_for_sim_time(3.0)
        os.kill(recorder, signum)
        assert run.finish(timeout=60) == 0, run.text
        assert 'required node robotsim_recorder exited with status 0' in run.text
        assert f'[recorder] wrote {bag}' in run.text
    finally:
        run.stop()
    assert_closed_bag(bag, reached)


def test_a_recording_starts_with_the_run(tmp_path):
    """record:=true without paused:=true: the simulation is held until the recorder has subscribed
    to every topic, so the bag starts at sim time 0 and holds every message the simulator published."""
    bag = tmp_path / 'bag'
    # The built-in base controller: the simulator publishes every recorded topic, so its counts are exact.
    run = Launch(launch_arguments({'record': 'true', 'bag': str(bag), 'firmware': 'false'}))
    try:
        wait_for_sim_time(5.0)
        # Stop the run without racing the recorder's backlog (the launcher stops all nodes at once):
        # pause, let the bag stop growing (metadata.yaml is kept current), then Ctrl-C.
        obs = Observer('pause')
        try:
            assert obs.call(Pause, '/sim/pause', Pause.Request(paused=True), timeout=20).success
        finally:
            obs.close()
        counts = []
        while len(counts) < 4 or len(set(counts[-4:])) > 1:  # unchanged for 3 flush periods and more
            assert len(counts) < 240, counts
            document = yaml.safe_load((bag / 'metadata.yaml').read_text())['rosbag2_bagfile_information']
            counts.append(sum(t['message_count'] for t in document['topics_with_message_count']
                              if t['topic_metadata']['name'] != '/sim/status'))  # statuses go on while paused
            time.sleep(0.5)
        run.process.send_signal(signal.SIGINT)
        assert run.finish(timeout=60) == 0, run.text
    finally:
        run.stop()
    assert ', paused, ' in run.text, run.text  # held at start
    assert 'resumed the simulation (/sim/pause): recording from its start' in run.text, run.text
    assert 'not recording' not in run.text, run.text  # every topic found before the run started
    with AnyReader([bag]) as reader:
        recorded = {c.topic: c.msgcount for c in reader.connections}
        first_clock = next(data for connection, _, data in reader.messages() if connection.topic == '/clock')
    assert stamp_ns('/clock', 'rosgraph_msgs/msg/Clock', bytes(first_clock)) == 0
    published = published_counts(run)
    assert_recorded_everything_published(recorded, published)
    assert published['/clock'] > 1000 and published['/camera/image_raw'] >= 70  # >= 5 s at 250 Hz and 15 Hz


def test_the_recorder_names_the_topics_it_is_not_recording_yet(tmp_path):
    """Real mode cannot hold the robot: a topic without publisher is named in a warning, not missed silently."""
    with NodeProcess('robotsim_learning', 'recorder', {'output': str(tmp_path / 'bag'),
                                                       'topics': '[/nobody/scan, /nobody/odom]'}) as recorder:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and 'not recording' not in recorder.output():
            time.sleep(0.2)
        assert recorder.stop() == 0
    warning = next(line for line in recorder.output().splitlines() if 'not recording' in line)
    assert 'WARN' in warning and '2 of 2 topics' in warning and '/nobody/scan, /nobody/odom' in warning, warning
    assert (tmp_path / 'bag' / 'metadata.yaml').is_file()
