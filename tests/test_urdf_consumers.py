"""What `robotsim describe --urdf` writes loads with the robot's mass in the URDF consumers users run:
PyBullet 3.2.7 and Drake 1.51.1 (their own cached environment, bench/peers), Pinocchio and MuJoCo.

URDF consumers give a link without ``<inertial>`` a mass of their own (PyBullet 1 kg: the rover's five
frame links once made it 8.5 kg instead of 3.5 kg), so every link of a generated description carries
one, a milligram for frames."""

from __future__ import annotations

import sys
from pathlib import Path

import mujoco
import pytest

from robotsim_core.description import load_robot
from robotsim_core.description.mjcf import robot_to_mjcf
from robotsim_core.description.urdf import tree_to_urdf

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / 'bench' / 'peers'))
from environment import run_peer  # noqa: E402

SPECIFIED = {'rover': 3.5, 'racer': 3.9, 'scout': 4.8}
"""kg: each shipped robot's mass as its YAML specifies it (base + wheels + arm)."""
FRAMES_AT_MOST = 1e-4
"""kg: what the frame links may add in all."""


@pytest.fixture(scope='module')
def urdfs(tmp_path_factory) -> dict[str, Path]:
    folder = tmp_path_factory.mktemp('urdf')
    paths = {}
    for robot in SPECIFIED:
        paths[robot] = folder / f'{robot}.urdf'
        paths[robot].write_text(tree_to_urdf(load_robot(robot).tree))
    return paths


def test_every_link_the_description_writes_has_an_inertial(urdfs):
    import xml.etree.ElementTree as ET
    for robot, path in urdfs.items():
        bare = [link.get('name') for link in ET.parse(path).getroot().iter('link') if link.find('inertial') is None]
        assert not bare, f'{robot}: links without <inertial> (URDF consumers give them a mass of their own): {bare}'


def test_pybullet_drake_pinocchio_and_mujoco_load_each_robot_at_its_mass(urdfs):
    pin = pytest.importorskip('pinocchio', reason='test-only dependency: ROBOTSIM_TEST_DEPS=1 scripts/setup.sh')
    peers = run_peer('masses.py', *map(str, urdfs.values()))
    for robot, path in urdfs.items():
        model = load_robot(robot)
        mj = mujoco.MjModel.from_xml_string(robot_to_mjcf(model))
        masses = {'mujoco': float(mj.body_subtreemass[0]),
                  'pinocchio': sum(inertia.mass for inertia in pin.buildModelFromUrdf(str(path)).inertias),
                  **peers[str(path)]}
        for consumer, mass in masses.items():
            assert SPECIFIED[robot] - 1e-9 <= mass <= SPECIFIED[robot] + FRAMES_AT_MOST, \
                f'{robot}: {consumer} loads {mass:.6f} kg, specified {SPECIFIED[robot]} kg ({masses})'
