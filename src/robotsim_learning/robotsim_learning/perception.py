"""Stage 1 of a chained policy, ROS-free: camera frames with their structural abstraction as labels, and a small
convolutional network that predicts the abstraction from the frame.

The abstraction is a map of :data:`CLASSES` per pixel: the drivable floor, walls, obstacles. Its labels come from
the simulator, not from a person: MuJoCo's segmentation names the entity every pixel sees (the floor and the walls
share the static world's label, each obstacle has its own) and the depth image tells the floor from the walls (a
point of the static world within :data:`FLOOR_HEIGHT` of the ground is floor). Pixels that see the robot itself
or nothing are left out of training and scoring (:data:`IGNORED`).

Frames (:func:`capture`) are taken at the spawn pose of scenarios of a randomisation spec, each with its own
drawn appearance (floor, wall and object colours, lighting), and shrunk by block averaging (the labels by the
block's centre pixel) to a size a CPU network trains on in minutes. The network (:func:`train`) is a stack of
3 x 3 convolutions with growing dilation (a 31-pixel receptive field at full resolution, no down-sampling, so the
map keeps the frame's size) and a 1 x 1 convolution to one score per class, trained by cross-entropy with JAX and
optax; :func:`export_onnx` writes it as one ONNX graph (``Conv`` with dilations, ``ArgMax``) whose output is the
class map, checked against the JAX forward pass in the tests.
"""

from __future__ import annotations

import dataclasses
import math
import time
from dataclasses import dataclass, field

import numpy as np

CLASSES = ('floor', 'wall', 'obstacle')
"""The classes of the abstraction, in label order."""
IGNORED = -1
"""Label of a pixel that sees the robot itself or nothing."""
FLOOR_HEIGHT = 0.03
"""A pixel of the static world whose point is lower than this (m) is floor, else wall."""
MAX_FRAMES = 20000
"""Most frames :func:`capture` takes in one call."""
ONNX_INPUT, ONNX_OUTPUT, ONNX_SCORES = 'image', 'classes', 'scores'
CLASSES_KEY, FACTOR_KEY = 'robotsim.perception_classes', 'robotsim.perception_factor'
"""Metadata of a perception model: its classes (comma-separated, output order) and the shrink factor of its input."""


@dataclass
class FrameSet:
    """Frames and their labels, all the same size."""
    images: np.ndarray
    """(N, H, W, 3) uint8 RGB."""
    labels: np.ndarray
    """(N, H, W) int8: index into :data:`CLASSES`, or :data:`IGNORED`."""
    scenarios: list[int] = field(default_factory=list)
    """The scenario index of each frame."""
    factor: int = 1
    """The camera frames were shrunk by this factor (:func:`shrink_image`)."""


def class_map(entity_labels: np.ndarray, depth: np.ndarray, names: dict[int, str], fx: float, fy: float,
              cx: float, cy: float, camera_z: float, up: np.ndarray) -> np.ndarray:
    """:data:`CLASSES` per pixel from a segmentation image (entity label per pixel, -1 none), the depth image
    (REP 118, metres along the optical axis) of a camera ``camera_z`` above the floor whose MuJoCo camera axes
    (x right, y up, looking along -z) have world-z components ``up`` (the third row of its rotation), and the
    entity names by label."""
    height, width = entity_labels.shape
    rows = np.arange(height, dtype=np.float64)[:, None]
    columns = np.arange(width, dtype=np.float64)[None, :]
    finite = np.isfinite(depth)
    d = np.where(finite, depth, 0.0)
    point_z = camera_z + up[0] * d * (columns - cx) / fx - up[1] * d * (rows - cy) / fy - up[2] * d
    out = np.full(entity_labels.shape, IGNORED, dtype=np.int8)
    world = [label for label, name in names.items() if name == 'world']
    obstacles = [label for label, name in names.items() if name.startswith('obstacle')]
    static = np.isin(entity_labels, world) & finite
    out[static & (point_z < FLOOR_HEIGHT)] = CLASSES.index('floor')
    out[static & (point_z >= FLOOR_HEIGHT)] = CLASSES.index('wall')
    out[np.isin(entity_labels, obstacles)] = CLASSES.index('obstacle')
    return out


def shrink_image(image: np.ndarray, factor: int) -> np.ndarray:
    """An (H, W, 3) uint8 image block-averaged by ``factor`` (rounded; rows and columns past the last whole block
    dropped): what the perception network sees, in training and on the robot."""
    height, width = image.shape[0] // factor * factor, image.shape[1] // factor * factor
    blocks = image[:height, :width].reshape(height // factor, factor, width // factor, factor, 3)
    return np.round(blocks.astype(np.float64).mean(axis=(1, 3))).astype(np.uint8)


def shrink(image: np.ndarray, labels: np.ndarray, factor: int) -> tuple[np.ndarray, np.ndarray]:
    """The image block-averaged by ``factor`` and the labels sampled at each block's centre."""
    height, width = labels.shape[0] // factor * factor, labels.shape[1] // factor * factor
    return shrink_image(image, factor), labels[factor // 2:height:factor, factor // 2:width:factor]


def capture(spec_path: str, seed: int, count: int, factor: int = 4, first: int = 0, progress=None) -> FrameSet:
    """One frame of the robot's first RGB camera at the spawn pose of each of scenarios ``first`` ...
    ``first + count - 1`` of ``Randomizer(spec, seed)``, shrunk by ``factor``, with its class map."""
    import tempfile

    from robotsim_core.description import load_robot
    from robotsim_sensors.camera import intrinsics
    from robotsim_sim.scene import RobotPlacement, load_world
    from robotsim_sim.simulation import SimOptions, Simulation

    from .randomization import Randomizer, load_randomization
    if not 1 <= count <= MAX_FRAMES:
        raise ValueError(f'count: expected 1 ... {MAX_FRAMES} frames, got {count}')
    if not 1 <= factor <= 16:
        raise ValueError(f'factor: expected 1 ... 16, got {factor}')
    randomizer = Randomizer(load_randomization(spec_path), seed)
    images, labels, scenarios = [], [], []
    with tempfile.TemporaryDirectory(prefix='robotsim-frames-') as folder:
        for index in range(first, first + count):
            scenario = randomizer.scenario(index)
            world_path, robot_path = scenario.write(folder)
            model = load_robot(robot_path)
            camera = next((s for s in model.sensors if s.type == 'camera' and 'rgb' in s.spec.images), None)
            if camera is None:
                raise ValueError(f'{spec_path}: robot {model.name} has no RGB camera to take frames with')
            spec = dataclasses.replace(camera.spec, images=['rgb', 'depth', 'segmentation'])
            model.sensors[model.sensors.index(camera)] = dataclasses.replace(camera, spec=spec)
            sim = Simulation(load_world(world_path), [RobotPlacement(model)],
                             SimOptions(seed=scenario.sim_seed, cameras=True))
            try:
                reading = None
                while reading is None:
                    events = sim.step()
                    if sim.time > 0.3:
                        events += sim.flush()
                    for event in events:
                        if event.channel == camera.name and getattr(event.reading, 'segmentation', None) is not None:
                            reading = event.reading
                    if reading is None and sim.time > 2.0:
                        raise RuntimeError(f'scenario {index}: no camera frame within 2 s of simulated time')
                mujoco_camera = sim.model.camera(camera.name).id
                camera_z = float(sim.data.cam_xpos[mujoco_camera][2])
                up = sim.data.cam_xmat[mujoco_camera].reshape(3, 3)[2]
                fx, fy, cx, cy = intrinsics(spec)
                classes = class_map(reading.segmentation, reading.depth, sim.labels, fx, fy, cx, cy, camera_z, up)
            finally:
                sim.close()
            small, small_labels = shrink(reading.rgb, classes, factor)
            images.append(small)
            labels.append(small_labels)
            scenarios.append(index)
            if progress is not None:
                progress(index - first + 1, count)
    return FrameSet(np.stack(images), np.stack(labels), scenarios, factor)


# ----------------------------------------------------------------------------------------------------- network
DILATIONS = (1, 2, 4, 8)
"""Dilation of each 3 x 3 convolution: a receptive field of 31 pixels."""


@dataclass
class PerceptionConfig:
    channels: int = 16
    """Feature channels of every 3 x 3 convolution."""
    epochs: int = 30
    """Passes over the training frames."""
    batch_size: int = 8
    """Frames per gradient step."""
    learning_rate: float = 3e-3
    """Adam's step size."""
    seed: int = 0
    """Seed of the initialisation and the frame order."""


@dataclass
class PerceptionNet:
    """Convolution weights (kernel (kh, kw, in, out), bias (out,)) per layer and the input normalisation."""
    layers: list[tuple[np.ndarray, np.ndarray]]
    mean: np.ndarray
    """(3,) mean RGB of the training frames (0 ... 1)."""
    std: np.ndarray
    """(3,) their standard deviation."""
    report: dict = field(default_factory=dict)
    factor: int = 1
    """Camera frames are shrunk by this factor before the network (:func:`shrink_image`)."""

    def predict(self, images: np.ndarray) -> np.ndarray:
        """Class maps (N, H, W) of (N, H, W, 3) uint8 frames (NumPy, through JAX's forward pass)."""
        import jax.numpy as jnp
        return np.asarray(jnp.argmax(_forward([(jnp.asarray(w), jnp.asarray(b)) for w, b in self.layers],
                                              _normalise(images, self.mean, self.std)), axis=-1))


def _normalise(images, mean, std):
    return (np.asarray(images, dtype=np.float32) / 255.0 - mean) / std


def _forward(params, x):
    import jax
    for index, (kernel, bias) in enumerate(params):
        dilation = DILATIONS[index] if index < len(DILATIONS) else 1
        pad = dilation * (kernel.shape[0] // 2)
        x = jax.lax.conv_general_dilated(x, kernel, (1, 1), [(pad, pad), (pad, pad)], rhs_dilation=(dilation,) * 2,
                                         dimension_numbers=('NHWC', 'HWIO', 'NHWC')) + bias
        if index < len(params) - 1:
            x = jax.nn.relu(x)
    return x


def train(frames: FrameSet, config: PerceptionConfig | None = None, progress=None) -> PerceptionNet:
    """Fit the network to ``frames`` by cross-entropy over the labelled pixels (seeded: same frames and config,
    same weights)."""
    import jax
    import jax.numpy as jnp
    import optax

    config = config or PerceptionConfig()
    if len(frames.images) < 1:
        raise ValueError('expected at least one frame to train on')
    started = time.monotonic()
    pixels = frames.images.reshape(-1, 3).astype(np.float32) / 255.0
    mean, std = pixels.mean(axis=0), np.maximum(pixels.std(axis=0), 1e-3).astype(np.float32)
    key = jax.random.PRNGKey(config.seed)
    sizes = [3] + [config.channels] * len(DILATIONS)
    params = []
    for fan_in, fan_out in zip(sizes, sizes[1:]):
        key, sub = jax.random.split(key)
        params.append((jax.random.normal(sub, (3, 3, fan_in, fan_out)) * math.sqrt(2.0 / (9 * fan_in)),
                       jnp.zeros(fan_out)))
    key, sub = jax.random.split(key)
    params.append((jax.random.normal(sub, (1, 1, config.channels, len(CLASSES))) * math.sqrt(1.0 / config.channels),
                   jnp.zeros(len(CLASSES))))
    optimiser = optax.adam(config.learning_rate)
    state = optimiser.init(params)

    def loss(p, x, y):
        logits = _forward(p, x)
        known = y >= 0
        each = optax.softmax_cross_entropy_with_integer_labels(logits, jnp.maximum(y, 0))
        return jnp.sum(jnp.where(known, each, 0.0)) / jnp.maximum(jnp.sum(known), 1)

    @jax.jit
    def step(p, s, x, y):
        value, grads = jax.value_and_grad(loss)(p, x, y)
        updates, s = optimiser.update(grads, s, p)
        return optax.apply_updates(p, updates), s, value

    x_all = _normalise(frames.images, mean, std)
    y_all = frames.labels.astype(np.int32)
    rng = np.random.default_rng(config.seed)
    value = float('nan')
    for epoch in range(config.epochs):
        order = rng.permutation(len(x_all))
        losses = []
        for start in range(0, len(order), config.batch_size):
            batch = order[start:start + config.batch_size]
            params, state, value = step(params, state, x_all[batch], y_all[batch])
            losses.append(float(value))
        value = float(np.mean(losses))
        if progress is not None:
            progress(epoch + 1, config.epochs, value)
    layers = [(np.asarray(w, dtype=np.float32), np.asarray(b, dtype=np.float32)) for w, b in params]
    return PerceptionNet(layers, mean.astype(np.float32), std, {
        'train_loss': value, 'frames': int(len(frames.images)), 'epochs': config.epochs, 'seed': config.seed,
        'channels': config.channels, 'seconds': time.monotonic() - started}, frames.factor)


def export_onnx(net: PerceptionNet, path: str) -> None:
    """The network as one ONNX graph: ``image`` (N, H, W, 3) uint8 in (frames shrunk by the net's factor, which
    :data:`FACTOR_KEY` records), ``classes`` (N, H, W) int64 and ``scores`` (N, H, W, classes) float out."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    nodes = [helper.make_node('Cast', [ONNX_INPUT], ['rgb'], to=TensorProto.FLOAT),
             helper.make_node('Sub', ['rgb', 'mean255'], ['centred']),
             helper.make_node('Div', ['centred', 'std255'], ['normalised']),
             helper.make_node('Transpose', ['normalised'], ['x0'], perm=[0, 3, 1, 2])]
    initializers = [numpy_helper.from_array(net.mean * 255.0, 'mean255'),
                    numpy_helper.from_array(net.std * 255.0, 'std255')]
    for index, (kernel, bias) in enumerate(net.layers):
        dilation = DILATIONS[index] if index < len(DILATIONS) else 1
        pad = dilation * (kernel.shape[0] // 2)
        initializers += [numpy_helper.from_array(np.ascontiguousarray(kernel.transpose(3, 2, 0, 1)), f'w{index}'),
                         numpy_helper.from_array(bias, f'b{index}')]
        out = f'c{index}'
        nodes.append(helper.make_node('Conv', [f'x{index}', f'w{index}', f'b{index}'], [out],
                                      dilations=[dilation, dilation], pads=[pad, pad, pad, pad]))
        if index < len(net.layers) - 1:
            nodes.append(helper.make_node('Relu', [out], [f'x{index + 1}']))
    nodes += [helper.make_node('Transpose', [f'c{len(net.layers) - 1}'], [ONNX_SCORES], perm=[0, 2, 3, 1]),
              helper.make_node('ArgMax', [ONNX_SCORES], [ONNX_OUTPUT], axis=3, keepdims=0)]
    graph = helper.make_graph(
        nodes, 'robotsim_perception', [helper.make_tensor_value_info(ONNX_INPUT, TensorProto.UINT8,
                                                                     ['N', 'H', 'W', 3])],
        [helper.make_tensor_value_info(ONNX_OUTPUT, TensorProto.INT64, ['N', 'H', 'W']),
         helper.make_tensor_value_info(ONNX_SCORES, TensorProto.FLOAT, ['N', 'H', 'W', len(CLASSES)])],
        initializers)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid('', 17)], ir_version=9,
                              producer_name='robotsim')
    for key, value in ((CLASSES_KEY, ','.join(CLASSES)), (FACTOR_KEY, str(net.factor)),
                       ('robotsim.perception_report', repr({k: v for k, v in net.report.items()
                                                             if k != 'seconds'}))):
        entry = model.metadata_props.add()
        entry.key, entry.value = key, value
    onnx.checker.check_model(model)
    onnx.save(model, path)
