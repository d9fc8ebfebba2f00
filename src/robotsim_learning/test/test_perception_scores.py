"""Scores of structural abstractions (robotsim_learning.perception_scores): IoU and ink F1 on maps whose right
answer is known by hand, the one-pixel tolerance, and the trivial baselines."""

import math

import numpy as np
import pytest

from robotsim_learning.perception_scores import (class_iou, dilate, ink_f1, majority_baseline, match,
                                                 segmentation_table)


def test_iou_of_hand_made_class_maps():
    true = np.zeros((4, 6), dtype=int)
    true[:, 3:] = 1                      # left half floor (0), right half wall (1)
    predicted = true.copy()
    predicted[:, 3] = 0                  # one column of wall called floor
    iou = class_iou(predicted, true, 3)
    assert iou[0] == pytest.approx(12 / 16) and iou[1] == pytest.approx(8 / 12)
    assert math.isnan(iou[2])            # a class in neither map is not scored
    # Within one pixel the shifted boundary costs nothing.
    assert np.allclose(class_iou(predicted, true, 2, tolerance=1), 1.0)
    # Pixels the label leaves unrendered (-1) are out of the score.
    true[0, 0] = -1
    predicted[0, 0] = 1
    assert class_iou(predicted, true, 2)[0] == pytest.approx(11 / 15)


def test_ink_f1_strict_and_one_pixel_off():
    true = np.zeros((1, 8, 8), dtype=bool)
    true[0, 4, 1:7] = True               # a horizontal line of 6 pixels
    shifted = np.roll(true, 1, axis=1)   # drawn one row lower
    assert ink_f1(true, true) == 1.0
    assert ink_f1(shifted, true) == 0.0 and ink_f1(shifted, true, tolerance=1) == 1.0
    half = true.copy()
    half[0, 4, 4:] = False               # half the line: precision 1, recall 1/2
    counts = match(half, true)
    assert (counts.precision, counts.recall) == (1.0, 0.5) and counts.f1 == pytest.approx(2 / 3)
    assert counts.iou == pytest.approx(0.5)  # F1 / (2 - F1) is the strict IoU
    assert ink_f1(np.zeros_like(true), true) == 0.0  # the blank page
    assert math.isnan(ink_f1(np.zeros_like(true), np.zeros_like(true)))


def test_baseline_dilation_and_refusals():
    labels = np.array([[[0, 0, 1], [2, 0, 0]]])
    assert np.all(majority_baseline(labels, (2, 2, 3), 3) == 0)
    mask = np.zeros((5, 5), dtype=bool)
    mask[2, 2] = True
    assert dilate(mask, 1).sum() == 9 and dilate(mask, 2).sum() == 25 and dilate(mask, 0).sum() == 1
    with pytest.raises(ValueError, match='tolerance: expected 0 ... 8 pixels, got 9'):
        dilate(mask, 9)
    with pytest.raises(ValueError, match=r"expected a prediction of the label's shape \(5, 5\), got \(4, 5\)"):
        match(mask[:4], mask)
    true = np.zeros((2, 4, 4), dtype=int)
    true[:, 2:] = 1
    table = segmentation_table(true, true, majority_baseline(true, true.shape, 2), ['floor', 'wall'])
    assert '| floor | 100.0 % | 100.0 % | 50.0 % | 75.0 % |' in table  # column 2 is within 1 px of floor
    assert '| wall | 100.0 % | 100.0 % | 0.0 % | 0.0 % |' in table
    assert 'IoU within 1 px' in table and '| mean (classes present) | 100.0 % | 100.0 % | 25.0 % | 37.5 % |' in table
