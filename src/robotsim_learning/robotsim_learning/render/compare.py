"""Agreement of Blender's passes with the simulator's images of the same frame (ROS-free, numpy only).

- depth: the share of pixels where both hit something (finite depth) whose depths differ by at
  most ``tolerance`` (1 cm), and the share of pixels where exactly one of them hits;
- segmentation: intersection over union per entity id (the simulator's ids), over the pixels of
  either image labelled with it;
- line art: where the segmentation has edges. An edge pixel is one whose entity id differs from a
  4-neighbour's. ``edge_recall``: the share of edge pixels with a line pixel (coverage > 0.5) within
  ``radius`` px; ``line_precision``: the share of line pixels within ``radius`` px of an edge of
  ``reference_ids`` (the entity ids, or finer: one id per part, so that outlines between two parts
  of one entity, e.g. a wall over the floor, count as edges).
"""

from __future__ import annotations

import numpy as np

DEPTH_TOLERANCE = 0.01


def depth_agreement(blender: np.ndarray, simulator: np.ndarray, tolerance: float = DEPTH_TOLERANCE) -> dict:
    both = np.isfinite(blender) & np.isfinite(simulator)
    one = np.isfinite(blender) ^ np.isfinite(simulator)
    difference = np.abs(blender[both].astype(np.float64) - simulator[both])
    count = int(both.sum())
    return {'both_hit': count, 'within_tolerance': float((difference <= tolerance).sum() / count) if count else 1.0,
            'one_hit_only': float(one.sum() / blender.size),
            'median_abs_difference': float(np.median(difference)) if count else 0.0}


def segmentation_iou(blender: np.ndarray, simulator: np.ndarray) -> dict[int, float]:
    ious = {}
    for label in sorted(set(np.unique(blender).tolist()) | set(np.unique(simulator).tolist())):
        a, b = blender == label, simulator == label
        union = int((a | b).sum())
        ious[int(label)] = float((a & b).sum() / union) if union else 1.0
    return ious


def edges(ids: np.ndarray) -> np.ndarray:
    """Pixels whose id differs from a 4-neighbour's."""
    edge = np.zeros(ids.shape, dtype=bool)
    vertical = ids[1:, :] != ids[:-1, :]
    horizontal = ids[:, 1:] != ids[:, :-1]
    edge[1:, :] |= vertical
    edge[:-1, :] |= vertical
    edge[:, 1:] |= horizontal
    edge[:, :-1] |= horizontal
    return edge


def dilate(mask: np.ndarray, radius: int) -> np.ndarray:
    """Square dilation by ``radius`` pixels."""
    out = mask.copy()
    height, width = mask.shape
    for dy in range(-radius, radius + 1):
        for dx in range(-radius, radius + 1):
            shifted = np.zeros_like(mask)
            shifted[max(dy, 0):height + min(dy, 0), max(dx, 0):width + min(dx, 0)] = \
                mask[max(-dy, 0):height + min(-dy, 0), max(-dx, 0):width + min(-dx, 0)]
            out |= shifted
    return out


def lineart_agreement(coverage: np.ndarray, entity_ids: np.ndarray, reference_ids: np.ndarray | None = None,
                      radius: int = 1) -> dict:
    lines = coverage > 0.5
    entity_edges = edges(entity_ids)
    reference_edges = edges(reference_ids) if reference_ids is not None else entity_edges
    line_count, edge_count = int(lines.sum()), int(entity_edges.sum())
    return {'line_pixels': line_count, 'edge_pixels': edge_count,
            'edge_recall': float((entity_edges & dilate(lines, radius)).sum() / edge_count) if edge_count else 1.0,
            'line_precision': (float((lines & dilate(reference_edges, radius)).sum() / line_count)
                               if line_count else 1.0)}
