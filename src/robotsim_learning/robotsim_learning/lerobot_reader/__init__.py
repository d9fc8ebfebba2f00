"""The real LeRobot loader on an exported dataset, in its own cached environment (``robotsim dataset
check-lerobot``, ``make lerobot-setup``). ROS-free; nothing of lerobot is imported here.

lerobot pulls PyTorch, which stays out of the workspace venv: the pins (``requirements.txt`` beside this
file) are installed into ``~/.cache/robotsim/lerobot-0.4.4-py3.11/`` (``ROBOTSIM_LEROBOT_ENV``
overrides) on first use, and ``lerobot_side.py`` runs there as a child process, offline, with its
Hugging Face caches inside that environment.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from ..consumer_env import ConsumerEnvironment, ConsumerSetupError

LEROBOT_VERSION = '0.4.4'
SETUP_COMMAND = 'make lerobot-setup'
SCRIPT = Path(__file__).with_name('lerobot_side.py')
LEROBOT = ConsumerEnvironment(
    title=f'LeRobot {LEROBOT_VERSION}', folder=f'lerobot-{LEROBOT_VERSION}-py3.11',
    requirements=Path(__file__).with_name('requirements.txt'),
    check='import lerobot; from lerobot.datasets.lerobot_dataset import LeRobotDataset; print(lerobot.__version__)',
    version=LEROBOT_VERSION, setup_command=SETUP_COMMAND, env_variable='ROBOTSIM_LEROBOT_ENV',
    python_variable='ROBOTSIM_LEROBOT_PYTHON', size_note='with PyTorch 2.14.1: about 6 GB on disk',
    pip_check=False, extra_environment={'HF_HUB_OFFLINE': '1', 'HF_DATASETS_OFFLINE': '1'})


def read_with_lerobot(dataset: str | Path, out: str | Path, install: bool = True, log=None) -> dict:
    """Open ``dataset`` with ``LeRobotDataset`` in the LeRobot environment and iterate every frame; returns
    the summary lerobot_side.py wrote (its arrays are in ``out/samples.npz``). Raises ConsumerSetupError
    (one line) when the environment cannot be installed or lerobot refuses the dataset."""
    python = LEROBOT.ensure(install, log, prefix='robotsim dataset')
    environment = LEROBOT.child_environment()
    environment['HF_HOME'] = str(LEROBOT.directory() / 'hf-home')  # its caches stay inside the environment
    result = subprocess.run([str(python), str(SCRIPT), str(dataset), str(out)], capture_output=True, text=True,
                            env=environment, stdin=subprocess.DEVNULL)
    if result.returncode != 0:
        lines = result.stderr.strip().splitlines() or ['no output']
        raise ConsumerSetupError(lines[-1])
    return json.loads((Path(out) / 'summary.json').read_text())
