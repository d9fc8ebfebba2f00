"""Scores of a structural abstraction of a camera frame against its label (ROS-free, NumPy only).

A perception stage turns a camera frame into a structural abstraction: a map of segmentation classes (floor, wall,
obstacle, ...) or an ink map (line art: True where a line is drawn). Both are scored here on held-out frames, each
always beside its trivial baseline and both strictly and with a pixel tolerance, so a number never stands alone:

- **per-class IoU** of class maps: |predicted AND true| / |predicted OR true| over every pixel of every frame, per
  class; the baseline paints every pixel with the class most frequent in the labels it is given (``all
  background``);
- **ink F1** of ink maps: the harmonic mean of precision (drawn pixels that are ink in the label) and recall (ink
  pixels of the label that are drawn); the baseline is the blank page (nothing drawn: F1 0).

With a tolerance of t pixels a predicted pixel counts as right when the label has its class within t pixels
(Chebyshev distance: the 3 x 3 neighbourhood for t = 1), and a label pixel as found when the prediction has its
class within t pixels; a line drawn one pixel off, or a boundary between two classes shifted by one, costs nothing.
The tolerant IoU is the IoU that goes with the tolerant F1, F1 / (2 - F1), which for t = 0 is the strict IoU.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

MAX_TOLERANCE = 8
"""Largest pixel tolerance scored (a wider one says little about a structural abstraction)."""


def dilate(mask: np.ndarray, pixels: int) -> np.ndarray:
    """``mask`` (..., H, W) grown by ``pixels`` in every direction (a (2p+1) x (2p+1) square neighbourhood)."""
    if not 0 <= pixels <= MAX_TOLERANCE:
        raise ValueError(f'tolerance: expected 0 ... {MAX_TOLERANCE} pixels, got {pixels}')
    mask = np.asarray(mask, dtype=bool)
    if pixels == 0:
        return mask
    height, width = mask.shape[-2:]
    padded = np.pad(mask, [(0, 0)] * (mask.ndim - 2) + [(pixels, pixels), (pixels, pixels)])
    grown = np.zeros_like(mask)
    for dy in range(2 * pixels + 1):
        for dx in range(2 * pixels + 1):
            grown |= padded[..., dy:dy + height, dx:dx + width]
    return grown


@dataclass(frozen=True)
class MatchCounts:
    """Pixel counts of one class (or of ink) over a set of frames."""
    predicted: int
    """Pixels predicted as the class."""
    true: int
    """Pixels of the class in the labels."""
    predicted_right: int
    """Predicted pixels with the class in the label within the tolerance."""
    true_found: int
    """Label pixels with the class predicted within the tolerance."""

    @property
    def precision(self) -> float:
        return self.predicted_right / self.predicted if self.predicted else float('nan')

    @property
    def recall(self) -> float:
        return self.true_found / self.true if self.true else float('nan')

    @property
    def f1(self) -> float:
        """Harmonic mean of precision and recall; 0 when nothing is predicted or nothing found, NaN when the class
        is in neither the prediction nor the labels."""
        if not self.predicted and not self.true:
            return float('nan')
        if not self.predicted_right or not self.true_found:
            return 0.0
        precision, recall = self.precision, self.recall
        return 2 * precision * recall / (precision + recall)

    @property
    def iou(self) -> float:
        f1 = self.f1
        return f1 / (2 - f1) if f1 == f1 else f1


def match(predicted: np.ndarray, true: np.ndarray, tolerance: int = 0) -> MatchCounts:
    """Counts of two boolean maps of the same shape (..., H, W), matched within ``tolerance`` pixels."""
    predicted, true = np.asarray(predicted, dtype=bool), np.asarray(true, dtype=bool)
    if predicted.shape != true.shape:
        raise ValueError(f'expected a prediction of the label\'s shape {true.shape}, got {predicted.shape}')
    return MatchCounts(int(predicted.sum()), int(true.sum()), int((predicted & dilate(true, tolerance)).sum()),
                       int((true & dilate(predicted, tolerance)).sum()))


def class_iou(predicted: np.ndarray, true: np.ndarray, classes: int, tolerance: int = 0) -> np.ndarray:
    """IoU (classes,) of class maps (..., H, W) of integers 0 ... classes-1 (label pixels outside that range, such
    as -1 for nothing rendered, are left out of the score); NaN for a class in neither."""
    predicted, true = np.asarray(predicted), np.asarray(true)
    if predicted.shape != true.shape:
        raise ValueError(f'expected a prediction of the label\'s shape {true.shape}, got {predicted.shape}')
    scored = (true >= 0) & (true < classes)
    return np.array([match((predicted == c) & scored, (true == c) & scored, tolerance).iou for c in range(classes)])


def majority_baseline(train_labels: np.ndarray, shape: tuple[int, ...], classes: int) -> np.ndarray:
    """The 'all background' prediction: every pixel the class most frequent in ``train_labels``."""
    counts = np.bincount(np.asarray(train_labels)[(train_labels >= 0) & (train_labels < classes)].ravel(),
                         minlength=classes)
    return np.full(shape, int(np.argmax(counts)), dtype=np.int64)


def ink_f1(predicted: np.ndarray, true: np.ndarray, tolerance: int = 0) -> float:
    """F1 of ink maps (True: a line); the blank page (nothing drawn) scores 0 on any label with ink."""
    return match(predicted, true, tolerance).f1


def segmentation_table(predicted: np.ndarray, true: np.ndarray, baseline: np.ndarray, names: list[str],
                       tolerance: int = 1) -> str:
    """Markdown table: per class and their mean, the prediction's and the baseline's IoU, strict and within
    ``tolerance`` pixels, all four side by side."""
    columns = [class_iou(predicted, true, len(names), 0), class_iou(predicted, true, len(names), tolerance),
               class_iou(baseline, true, len(names), 0), class_iou(baseline, true, len(names), tolerance)]
    lines = [f'| class | IoU | IoU within {tolerance} px | baseline IoU | baseline within {tolerance} px |',
             '|---|---|---|---|---|']
    for index, name in enumerate(names):
        lines.append(f'| {name} | ' + ' | '.join(_percent(column[index]) for column in columns) + ' |')
    lines.append('| mean (classes present) | ' + ' | '.join(_percent(np.nanmean(column)) if np.isfinite(column).any()
                                                            else 'n/a' for column in columns) + ' |')
    return '\n'.join(lines)


def _percent(value: float) -> str:
    return 'n/a' if value != value else f'{100 * value:.1f} %'
