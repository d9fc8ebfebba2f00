"""The arm benchmark's independent check: Pinocchio's forward kinematics of each arm's original URDF."""

from __future__ import annotations

import sys

import numpy as np
import pytest
from robotsim_core.arm.chain import ArmChain
from robotsim_core.description import load_robot
from rostest_helpers import WORKSPACE

sys.path.insert(0, str(WORKSPACE / 'bench'))


@pytest.mark.parametrize('arm', ['rover', 'ur5', 'panda', 'xarm7', 'ur10'])
def test_pinocchio_on_the_original_urdf_agrees_with_the_chain_and_sees_a_wrong_joint(arm):
    pytest.importorskip('pinocchio', reason='test-only dependency: ROBOTSIM_TEST_DEPS=1 scripts/setup.sh')
    from bench_arm import PinocchioCheck

    model = load_robot(arm)
    chain = ArmChain(model)
    oracle = PinocchioCheck(model, chain)
    assert oracle.origin == 'generated URDF' if arm == 'rover' else oracle.origin.endswith('.urdf')
    rng = np.random.default_rng(4)
    for _ in range(20):
        positions = chain.random_positions(rng)
        np.testing.assert_allclose(oracle.tool_pose(positions), chain.forward(positions), atol=1e-9)
        wrong = np.array(positions, dtype=float)
        wrong[0] += 0.01  # the base joint turned by 10 mrad: the tool moves (by more than 1 um here)
        assert np.abs(oracle.tool_pose(wrong)[:3, 3] - chain.forward(positions)[:3, 3]).max() > 1e-6
