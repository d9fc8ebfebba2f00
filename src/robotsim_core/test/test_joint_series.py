"""JointSeries: /joint_states of several publishers, merged by joint name."""

import numpy as np
import pytest

from robotsim_core.joint_series import MAX_JOINTS, JointSeries


def test_publishers_with_subsets_and_backward_stamps_merge_by_name():
    series = JointSeries()
    # The arm's publisher at 0, 20, 40 ms; the wheels' publisher lagging, its stamps interleaved backwards.
    series.add(0, ['shoulder', 'elbow'], [0.0, 1.0])
    series.add(15_000_000, ['wheel_l', 'wheel_r'], [1.5, -1.5])
    series.add(20_000_000, ['shoulder', 'elbow'], [0.2, 1.2])
    series.add(5_000_000, ['wheel_l', 'wheel_r'], [0.5, -0.5])
    series.add(40_000_000, ['shoulder', 'elbow'], [0.4, 1.4])
    assert series.names == ['shoulder', 'elbow', 'wheel_l', 'wheel_r']
    stamps, positions = series.samples('wheel_l')
    assert stamps.tolist() == [5_000_000, 15_000_000] and positions.tolist() == [0.5, 1.5]
    # Each joint interpolates on its own samples: the wheel at 10 ms lies between its own two samples,
    # not between the arm's messages (which carry no wheel).
    assert series.at(10_000_000, ['wheel_l', 'shoulder']) == pytest.approx([1.0, 0.1])
    grid = series.resample([0, 30_000_000])
    assert grid.shape == (2, 4)
    assert grid[1].tolist() == pytest.approx([0.3, 1.3, 1.5, -1.5])  # held after the wheels' last sample
    assert series.stamps().tolist() == [0, 5_000_000, 15_000_000, 20_000_000, 40_000_000]


def test_short_position_arrays_and_non_finite_values_are_skipped():
    series = JointSeries()
    series.add(0, ['a', 'b'], [1.0])            # JointState allows fewer positions than names
    series.add(1, ['a'], [float('nan')])
    assert series.names == ['a'] and series.samples('a')[1].tolist() == [1.0]
    assert not JointSeries()
    assert np.array_equal(JointSeries().stamps(), np.zeros(0, dtype=np.int64))


def test_the_number_of_joints_is_bounded():
    series = JointSeries()
    series.add(0, [f'j{i}' for i in range(MAX_JOINTS)], [0.0] * MAX_JOINTS)
    with pytest.raises(ValueError, match='distinct joint names'):
        series.add(1, ['one_more'], [0.0])
