"""The documented workflow end to end, through the documented commands only, each step reading the files
the one before wrote (small sizes; outcomes, shapes and values, never speed):

    robotsim launch sim record:=true          the defaults: rover, firmware in the loop
    robotsim view BAG --out page.html         no --world/--robot: the bag knows them
    robotsim render BAG --out DIR             the same; /joint_states of two publishers merged
    robotsim dataset generate --driver expert
    robotsim dataset export --format lerobot
    robotsim dataset check-lerobot            the real LeRobot loads every frame
    robotsim policy train DATASET
    robotsim policy eval --policy POLICY
"""

from __future__ import annotations

import csv
import json
import subprocess
import sys

import pytest

from bag_readers import foxglove_counts
from browser_helpers import chromium, open_viewer
from rostest_helpers import WORKSPACE, Launch

DATASETS = WORKSPACE / 'tests' / 'data' / 'datasets'


def robotsim(*args: str, timeout: float = 900) -> subprocess.CompletedProcess:
    completed = subprocess.run([sys.executable, '-m', 'robotsim.cli', *args], capture_output=True, text=True,
                               timeout=timeout)
    assert completed.returncode == 0, f'robotsim {" ".join(args)} exited {completed.returncode}:\n' \
                                      f'{completed.stdout[-3000:]}\n{completed.stderr[-3000:]}'
    return completed


def test_record_view_render_dataset_lerobot_train_evaluate(tmp_path):
    pytest.importorskip('jax', reason='training needs requirements/train.txt')
    # 1. A default recording.
    bag = tmp_path / 'recording'
    run = Launch(['robotsim', 'launch', 'sim', 'record:=true', f'bag:={bag}', 'demo:=true', 'duration:=6'])
    try:
        assert run.finish(timeout=300) == 0, run.text[-4000:]
    finally:
        run.stop()
    assert 'firmware in the loop' in run.text
    counts = foxglove_counts(bag)
    assert counts['/joint_states'] > counts['/sim/ground_truth']  # the simulator's and the motor bridge's

    # 2. Its replay page: world and robot drawn, nothing missing.
    page_file = tmp_path / 'recording.html'
    robotsim('view', str(bag), '--out', str(page_file))
    with chromium() as browser:
        page, log = open_viewer(browser, page_file.as_uri())
        assert page.evaluate('robotsimViewer.notes') == [] and page.evaluate('robotsimViewer.errors') == []
        assert 'toy_box' in page.evaluate('robotsimViewer.linkNames()')  # the room's free box, from the bag
        assert log.errors == [], log.errors

    # 3. Its Blender render.
    render = tmp_path / 'render'
    robotsim('render', str(bag), '--out', str(render), '--engine', 'workbench', '--passes', 'rgb', '--every', '30',
             '--limit', '2')
    document = json.loads((render / 'render.json').read_text())
    assert len(document['frames']) == 2

    # 4. An expert dataset, 5. exported for LeRobot, 6. read by the real LeRobot.
    dataset = tmp_path / 'dataset'
    robotsim('dataset', 'generate', '--randomization', str(DATASETS / 'expert_course.yaml'), '--episodes', '2',
             '--seed', '21', '--driver', 'expert', '--out', str(dataset), '--no-progress')
    assert 'verify: OK' in robotsim('dataset', 'verify', str(dataset)).stdout
    lerobot = tmp_path / 'lerobot'
    robotsim('dataset', 'export', str(dataset), '--format', 'lerobot', '--out', str(lerobot))
    checked = robotsim('dataset', 'check-lerobot', str(lerobot)).stdout
    info = json.loads((lerobot / 'meta' / 'info.json').read_text())
    assert checked.startswith(f'robotsim dataset check-lerobot: OK {lerobot}: lerobot 0.4.4 LeRobotDataset read every '
                              f'frame: {info["total_episodes"]} episodes, {info["total_frames"]} frames at 10 fps'), checked
    assert "drive to the goal pose without collisions" in checked

    # 7. A policy trained on the dataset, 8. evaluated in closed loop through the ROS graph.
    policy = tmp_path / 'policy.onnx'
    robotsim('policy', 'train', str(dataset), '--out', str(policy), '--epochs', '3', '--hidden', '32,32', '--seed', '1')
    evaluation = tmp_path / 'evaluation'
    robotsim('policy', 'eval', '--driver', 'policy', '--policy', str(policy), '--episodes', '1', '--seed', '4242',
             '--randomization', str(DATASETS / 'expert_course.yaml'), '--baselines', '', '--shield', 'on',
             '--out', str(evaluation), '--no-progress', timeout=1200)
    with open(evaluation / 'episodes.csv', newline='') as stream:
        rows = list(csv.DictReader(stream))
    assert [row['driver'] for row in rows] == ['policy+shield']
    assert 'shield limited' in (evaluation / 'episodes' / 'policy+shield-0' / 'launch.log').read_text()
    assert rows[0]['outcome'] in ('success', 'collision', 'timeout') and float(rows[0]['command_rate']) > 0
