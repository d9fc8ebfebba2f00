"""What a recording was made in: the world and robot descriptions, carried inside the bag. ROS-free.

The simulator publishes one latched ``std_msgs/String`` on ``/sim/scenario`` (recorded like every
simulator topic; a dataset episode writes it too): a YAML document with the world file's and each
robot file's text, where each was read from, the robot's namespace and the seed. ``robotsim view BAG``
and ``robotsim render BAG`` read it, so a recording needs no ``--world``/``--robot``.

A description's relative references (a world's MJCF ``include``, an overlay's URDF and meshes) are
resolved beside the file it was read from: when that file still holds the recorded text, it is used
where it is; otherwise the recorded text is written to a file of its own, which serves every
self-contained description (the shipped robots and worlds, dataset episodes' drawn worlds).
"""

from __future__ import annotations

import atexit
import os
import shutil
import tempfile
from pathlib import Path

import yaml
from robotsim_core.contract import SCENARIO_TOPIC as TOPIC

TYPE = 'std_msgs/msg/String'
FORMAT, VERSION = 'robotsim-scenario', 1
MAX_TEXT = 16 * 2**20
"""Bytes of description text a scenario may hold (the shipped files are a few kB)."""


class ScenarioError(ValueError):
    """One line: the bag, the field, and what was expected."""


def scenario_text(world_path: str, robots: list[tuple[str, str]], seed: int, relative_to: str | None = None,
                  randomization: dict | None = None) -> str:
    """The scenario of a run: ``robots`` is (namespace, robot file path) per robot, in fleet order. Paths
    are stored absolute, or relative to ``relative_to`` (a dataset episode: its files lie beside its bag,
    and its bytes must not depend on where the dataset is). ``randomization``: for a dataset episode, its
    draw (index, spawn, goal, every drawn value), kept under that key."""
    def entry(path: str) -> dict:
        stored = os.path.relpath(path, relative_to) if relative_to else os.path.abspath(path)
        return {'path': stored, 'text': Path(path).read_text(encoding='utf-8')}

    document = {'format': FORMAT, 'version': VERSION, 'seed': int(seed), 'world': entry(world_path),
                'robots': [{'namespace': namespace, **entry(path)} for namespace, path in robots]}
    if randomization is not None:
        document['randomization'] = randomization
    return yaml.safe_dump(document, sort_keys=False, width=1000)


def read_scenario(bag: Path) -> dict | None:
    """The scenario recorded in ``bag`` (a rosbag2 folder), or None when it has none."""
    from rosbags.highlevel import AnyReader

    with AnyReader([Path(bag)]) as reader:
        connections = [c for c in reader.connections if c.topic == TOPIC]
        if not connections:  # (rosbags reads every topic when given none)
            return None
        for connection, _, raw in reader.messages(connections=connections):
            text = reader.deserialize(raw, connection.msgtype).data
            return parse_scenario(text, f'{bag}: {TOPIC}')
    return None


def parse_scenario(text: str, where: str) -> dict:
    if len(text) > MAX_TEXT:
        raise ScenarioError(f'{where}: {len(text)} bytes, expected at most {MAX_TEXT}')
    try:
        document = yaml.safe_load(text)
    except yaml.YAMLError as error:
        raise ScenarioError(f'{where}: not YAML ({" ".join(str(error).split())[:160]})') from None
    if not isinstance(document, dict) or document.get('format') != FORMAT:
        raise ScenarioError(f'{where}: expected a {FORMAT} document')
    for key, check in (('world', lambda v: isinstance(v, dict)), ('robots', lambda v: isinstance(v, list) and v)):
        if not check(document.get(key)):
            raise ScenarioError(f'{where}: {key}: missing or malformed')
    for index, entry in enumerate([document['world'], *document['robots']]):
        if not isinstance(entry, dict) or not isinstance(entry.get('text'), str) or not isinstance(entry.get('path'), str):
            raise ScenarioError(f'{where}: {"world" if index == 0 else f"robots[{index - 1}]"}: expected path and text')
    return document


def description_file(entry: dict, bag_folder: Path, folder: str, name: str) -> str:
    """A file holding ``entry``'s text: where it was read from (a relative path: beside the bag) when that
    file is unchanged, else a copy named ``name`` in ``folder``."""
    original = os.path.join(bag_folder, entry['path'])
    try:
        if Path(original).read_text(encoding='utf-8') == entry['text']:
            return original
    except (OSError, UnicodeDecodeError):
        pass
    copy = os.path.join(folder, name)
    Path(copy).write_text(entry['text'], encoding='utf-8')
    return copy


def scenario_files(scenario: dict, bag: Path, namespace: str = '') -> tuple[str, str]:
    """(world file, robot file) of the run recorded in ``bag``, for the robot in ``namespace`` (the first
    robot when no robot has it). Copies go into a temporary folder removed when the process exits."""
    folder = tempfile.mkdtemp(prefix='robotsim-scenario-')
    atexit.register(shutil.rmtree, folder, True)
    robots = scenario['robots']
    robot = next((r for r in robots if r.get('namespace', '') == namespace.strip('/')), robots[0])
    bag_folder = Path(bag).parent if Path(bag).is_file() else Path(bag)
    return (description_file(scenario['world'], bag_folder, folder, 'world.yaml'),
            description_file(robot, bag_folder, folder, 'robot.yaml'))
