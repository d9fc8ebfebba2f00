"""What an arm of fewer than six joints can reach: (tool point, approach axis) pairs, met by the position+axis task
(robotsim_core.arm.ik.PositionAxisTarget) on targets drawn from the arm's own reachable configurations."""

from __future__ import annotations

import math

import numpy as np
import pytest
from robotsim_core.arm.chain import ArmChain
from robotsim_core.arm.ik import PositionAxisTarget, solve_ik
from robotsim_core.description import load_robot
from robotsim_core.statistics import wilson_interval

from test_robot_import import EXAMPLE_ROBOTS, _import, needs_example_robots

TARGETS = 1000


def _met(chain: ArmChain, seed: int) -> tuple[int, list[str]]:
    rng = np.random.default_rng(seed)
    met, reasons = 0, []
    for index in range(TARGETS):
        pose = chain.forward(chain.random_positions(rng))
        result = solve_ik(chain, PositionAxisTarget(tuple(pose[:3, 3]), tuple(pose[:3, 2])), seed=index)
        met += result.success
        if not result.success:
            reasons.append(result.reason)
        else:
            reached = chain.forward(np.array(result.positions))
            assert np.linalg.norm(reached[:3, 3] - pose[:3, 3]) <= 1e-4
            assert math.acos(min(1.0, float(reached[:3, 2] @ pose[:3, 2]))) <= math.radians(0.1)
    return met, reasons


@needs_example_robots
def test_a_five_joint_arm_meets_every_reachable_point_and_approach_axis(tmp_path):
    """The SO-101 (example-robot-data, imported unedited: 5 arm joints and a gripper): 1000 targets drawn from its
    reachable configurations (seed drawn here), the lower Wilson bound of the success rate at least 99 %."""
    out = tmp_path / 'so101.yaml'
    _import(EXAMPLE_ROBOTS / 'so_arm_description' / 'urdf' / 'so101.urdf', out)
    chain = ArmChain(load_robot(str(out)))
    assert chain.dof == 5
    seed = int(np.random.SeedSequence().entropy % 2**31)
    met, reasons = _met(chain, seed)
    assert wilson_interval(met, TARGETS)[0] >= 0.99, (seed, met, reasons[:5])


def test_the_rover_s_four_joint_arm_meets_every_reachable_point_and_axis_and_no_axis_outside_its_plane():
    chain = ArmChain(load_robot('rover'))
    seed = int(np.random.SeedSequence().entropy % 2**31)
    met, reasons = _met(chain, seed)
    assert wilson_interval(met, TARGETS)[0] >= 0.99, (seed, met, reasons[:5])
    # An axis turned out of the arm's vertical plane is out of its reach: refused, not met approximately.
    rng = np.random.default_rng(seed)
    while True:
        pose = chain.forward(chain.random_positions(rng))
        sideways = np.cross(chain.pitch_axis, pose[:3, 2])
        if np.linalg.norm(sideways) > 0.5:  # the tool axis well away from the vertical
            break
    result = solve_ik(chain, PositionAxisTarget(tuple(pose[:3, 3]), tuple(pose[:3, 2] + sideways)))
    assert not result.success and result.reason.startswith(('no solution', 'unreachable along that axis')), result


@pytest.mark.parametrize('axis, expected', [((0.0, 0.0, 0.0), 'not all 0'), ((math.nan, 0.0, 1.0), 'finite'),
                                            ((1.0, 0.0), '3 finite numbers')])
def test_a_bad_axis_is_refused_naming_it(axis, expected):
    result = solve_ik(ArmChain(load_robot('rover')), PositionAxisTarget((0.1, 0.0, 0.3), axis))
    assert not result.success and result.reason.startswith('target.axis:') and expected in result.reason, result
