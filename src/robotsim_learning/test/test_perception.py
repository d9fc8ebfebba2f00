"""Stage 1 of a chained policy (robotsim_learning.perception): labels from MuJoCo's segmentation and depth, frames
of randomised scenarios, and the network trained on a few of them, exported to ONNX equal to its JAX forward pass."""

import numpy as np
import pytest
import yaml

from robotsim_learning.perception import CLASSES, IGNORED, class_map, shrink
from rostest_helpers import WORKSPACE

SPEC = WORKSPACE / 'config' / 'randomization' / 'room_obstacles.yaml'


def test_the_class_map_tells_floor_from_wall_by_the_height_of_the_point():
    """A level camera 0.2 m above the floor looking along the world's +x: below the horizon the depth of the floor
    (a point at height 0) is floor, above it a point 2 m away is wall; an obstacle's label is an obstacle whatever
    its depth, a pixel seeing nothing (label -1) or the robot is left out."""
    height, width, fy, cy, h = 24, 32, 20.0, 11.5, 0.2
    up = np.array([0.0, 1.0, 0.0])  # MuJoCo camera y (up) is the world's z
    rows = np.arange(height)[:, None] + np.zeros((1, width))
    depth = np.where(rows > cy, h * fy / np.maximum(rows - cy, 1e-9), 2.0)
    labels = np.zeros((height, width), dtype=np.int32)
    labels[5:8, 3:6] = 2
    labels[0, :] = -1
    labels[20:, 30:] = 1
    out = class_map(labels, depth, {0: 'world', 1: 'rover', 2: 'obstacle_3'}, 20.0, fy, 15.5, cy, h, up)
    assert np.all(out[13:20, :30] == CLASSES.index('floor'))
    assert np.all(out[1:5, :] == CLASSES.index('wall'))
    assert np.all(out[5:8, 3:6] == CLASSES.index('obstacle'))
    assert np.all(out[0] == IGNORED) and np.all(out[20:, 30:] == IGNORED)
    image = np.arange(4 * 4 * 3, dtype=np.uint8).reshape(4, 4, 3)
    small, small_labels = shrink(image, np.arange(16).reshape(4, 4), 2)
    assert small.shape == (2, 2, 3) and small[0, 0, 0] == round((0 + 3 + 12 + 15) / 4)
    assert small_labels.tolist() == [[5, 7], [13, 15]]  # each block's centre pixel


def test_frames_train_a_network_whose_onnx_graph_equals_it(tmp_path):
    pytest.importorskip('jax', reason='training needs requirements/train.txt (Python 3.11+)')
    onnxruntime = pytest.importorskip('onnxruntime')
    from robotsim_learning.perception import PerceptionConfig, capture, export_onnx, train
    from robotsim_learning.perception_scores import class_iou, majority_baseline
    frames = capture(str(SPEC), 11, 6, factor=8)
    assert frames.images.shape == (6, 30, 40, 3) and frames.labels.shape == (6, 30, 40)
    assert frames.scenarios == list(range(6))
    counts = np.bincount(frames.labels.ravel() + 1, minlength=len(CLASSES) + 1)
    assert counts[1 + CLASSES.index('floor')] > 0 and counts[1 + CLASSES.index('wall')] > 0
    again = capture(str(SPEC), 11, 2, factor=8)
    assert np.array_equal(again.images, frames.images[:2]) and np.array_equal(again.labels, frames.labels[:2])
    config = PerceptionConfig(channels=4, epochs=3, batch_size=2, seed=1)
    net = train(frames, config)
    assert np.array_equal(train(frames, config).layers[0][0], net.layers[0][0])  # seeded
    path = tmp_path / 'perception.onnx'
    export_onnx(net, str(path))
    session = onnxruntime.InferenceSession(str(path), providers=['CPUExecutionProvider'])
    classes, scores = session.run(['classes', 'scores'], {'image': frames.images})
    assert classes.shape == (6, 30, 40) and scores.shape == (6, 30, 40, len(CLASSES))
    predicted = net.predict(frames.images)
    assert np.mean(classes == predicted) > 0.999  # float rounding may flip a tie, nothing more
    iou = class_iou(predicted, frames.labels, len(CLASSES))
    baseline = class_iou(majority_baseline(frames.labels, frames.labels.shape, len(CLASSES)), frames.labels,
                         len(CLASSES))
    assert np.isfinite(iou).any() and np.isfinite(baseline).any()


def test_the_appearance_shift_changes_the_looks_only_and_leaves_the_training_ranges():
    """room_obstacles_appearance_shift: the scenarios of room_obstacles (same spawn, goal, obstacles for a seed), every
    drawn colour outside room_obstacles' range on at least one channel, the light and camera noise outside too."""
    import dataclasses

    from robotsim_learning.randomization import Randomizer, load_randomization
    folder = WORKSPACE / 'config' / 'randomization'
    training = load_randomization(str(folder / 'room_obstacles.yaml'))
    shifted = load_randomization(str(folder / 'room_obstacles_appearance_shift.yaml'))
    same = ('appearance', 'light', 'sensor_noise', 'source')
    for field in dataclasses.fields(training):
        if field.name not in same:
            assert getattr(training, field.name) == getattr(shifted, field.name), field.name
    assert dataclasses.replace(training.sensor_noise, camera_rgb_stddev=(0, 0)) == \
        dataclasses.replace(shifted.sensor_noise, camera_rgb_stddev=(0, 0))
    assert shifted.sensor_noise.camera_rgb_stddev[0] > training.sensor_noise.camera_rgb_stddev[1]

    def disjoint(a, b) -> bool:
        return a[1] < b[0] or b[1] < a[0]
    for key in ('floor_rgb', 'wall_rgb', 'object_rgb'):
        assert any(disjoint(s, t) for s, t in zip(getattr(shifted.appearance, key), getattr(training.appearance, key)))
    for key in ('elevation', 'diffuse', 'ambient'):
        assert disjoint(getattr(shifted.light, key), getattr(training.light, key)), key
    # Training has no pattern keys (the room's 0.5 m floor checker 20 % darker, flat walls and objects); the
    # shift draws none of those patterns, and finer tiles at a higher contrast.
    assert training.appearance.floor_texture is None and training.appearance.object_texture is None
    assert 'checker' not in shifted.appearance.floor_texture.patterns
    assert 'flat' not in shifted.appearance.wall_texture.patterns + shifted.appearance.object_texture.patterns
    for key in ('floor_texture', 'wall_texture', 'object_texture'):
        assert getattr(shifted.appearance, key).tile[1] < 0.5 and getattr(shifted.appearance, key).contrast[0] > 0.2
    a, b = Randomizer(training, 11), Randomizer(shifted, 11)
    for index in range(3):
        first, second = a.scenario(index), b.scenario(index)
        assert first.goal == second.goal and first.spawn == second.spawn
        looks = ('rgb', 'light', 'noise', 'texture')
        layout = {k: v for k, v in first.drawn.items() if not any(word in k for word in looks)}
        assert layout and layout == {k: v for k, v in second.drawn.items() if not any(word in k for word in looks)}
        assert any(first.drawn[k] != second.drawn[k] for k in first.drawn if 'rgb' in k)
        world = yaml.safe_load(second.world_yaml)
        assert all(surface['texture']['pattern'] != 'flat' for surface in world['walls'] + world['boxes'] +
                   world['cylinders']) and world['floor']['texture']['pattern'] != 'checker'
        assert 'texture' not in first.world_yaml
