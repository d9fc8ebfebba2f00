"""Behaviour cloning (ROS-free): an MLP from observations to /cmd_vel, trained with JAX + optax on the
CPU, exported as ONNX for onnxruntime (the policy node; TensorRT on the Jetson).

The network: normalise the observation (training-set mean and standard deviation), hidden layers
with ReLU, and one of two heads. ``tanh``: one command, a tanh output scaled to the robot's speed limits, fitted
by mean squared error. ``bins``: a score for each command of a grid over the demonstrated range, fitted by
cross-entropy against the demonstrated command (spread over its neighbouring cells); the policy takes the
best-scoring command. Where demonstrations disagree from the same observation (around an obstacle on the left or
on the right) the tanh head learns their average, which can be to stand still; the bins head picks one of them.
Either way a command never exceeds what the robot may do. Training is seeded (parameter initialisation, shuffling,
validation split) and runs on the CPU, so the same data and seed give the same weights. JAX and optax are imported only here
(``requirements/train.txt``); the policy node needs onnxruntime alone.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np

from .observation import ObservationSpec

ONNX_INPUT = 'observation'
ONNX_OUTPUT = 'cmd_vel'
PREVIOUS_INPUT = 'previous_cmd_vel'
"""The second input of a policy with a turn commitment (:attr:`TrainConfig.turn_commit`) or one that draws only
while turning on the spot (:attr:`TrainConfig.sample_on_spot`): its own previous command [batch, 2] (zeros at the
start of an episode)."""
UNIFORM_INPUT = 'uniform'
"""The input of a policy that samples its cell (:attr:`TrainConfig.sample_temperature`): one number in [0, 1) per
row [batch, 1], drawn by the runtime from its seeded generator; the cell is where that number falls in the
cumulative distribution of the tempered cell probabilities."""
ONNX_OPSET = 17
ONNX_IR_VERSION = 9
SPEC_KEY = 'robotsim.observation_spec'
MAX_HIDDEN_LAYERS = 8
"""Most hidden layers a policy may have (``--hidden``)."""
MAX_LAYER_WIDTH = 4096
"""Widest hidden layer (``--hidden``): 8 layers of 4096 train in about 2 GB (weights, gradients, Adam's moments);
wider ones exhaust the memory of the machines this runs on (and a Jetson's) before training starts."""
SEED_LIMIT = 2**32
"""Training seeds are 0 ... 2^32-1: JAX's PRNGKey keeps 32 bits, so a larger seed would repeat a smaller one's
initialisation."""


HIDDEN_EXPECTED = f'1 to {MAX_HIDDEN_LAYERS} comma-separated layer widths, each 1 ... {MAX_LAYER_WIDTH}'


def hidden_fits(hidden) -> bool:
    """Whether ``hidden`` is a usable sequence of hidden layer widths (:data:`HIDDEN_EXPECTED`)."""
    return 1 <= len(hidden) <= MAX_HIDDEN_LAYERS and all(
        isinstance(width, int) and not isinstance(width, bool) and 1 <= width <= MAX_LAYER_WIDTH for width in hidden)


MAX_ENSEMBLE = 16
"""Networks of an ensemble at most."""
SCHEDULES = ('constant', 'cosine')
"""The learning-rate schedules of :class:`TrainConfig`."""
HEADS = ('tanh', 'bins')
"""The output heads of :class:`TrainConfig` (the module's docstring says how they differ)."""
MAX_BINS = 64
"""Most cells per axis of the bins head's grid."""
MAX_SCAN_CONV_LAYERS = 4
"""Most convolutions over the scan (:attr:`TrainConfig.scan_conv`)."""
MAX_SCAN_CHANNELS = 64
"""Most channels of a convolution over the scan."""
SCAN_KERNEL = 5
"""Neighbouring sectors each convolution over the scan reads, centred on its own (stride 2: each halves the sectors)."""
MAX_NEAR_WEIGHT = 100.0
"""Largest weight of a sample next to an obstacle (:attr:`TrainConfig.near_weight`)."""
MAX_TURN_COMMIT = 100.0
"""Largest :attr:`TrainConfig.turn_commit`."""
TURN_COMMIT_RATE = 0.2
"""rad/s: a previous command turning faster than this is a turn the policy is making (its commitment holds it)."""
SPOT_SPEED = 0.1
"""m/s: a previous command slower than this and turning faster than :data:`TURN_COMMIT_RATE` is a turn on the spot
(:attr:`TrainConfig.sample_on_spot`)."""
MAX_SAMPLE_TEMPERATURE = 10.0
"""Largest :attr:`TrainConfig.sample_temperature`."""
SMALLEST_PROBABILITY = 1e-30
"""Cell probabilities are raised to at least this before their logarithm (a sampling policy's tempering)."""


@dataclass
class TrainConfig:
    hidden: tuple[int, ...] = (128, 128)
    """Widths of the hidden layers: 1 to :data:`MAX_HIDDEN_LAYERS` layers of 1 ... :data:`MAX_LAYER_WIDTH`."""
    learning_rate: float = 1e-3
    """Adam step size (at the start, with the cosine schedule)."""
    weight_decay: float = 0.0
    """Decoupled weight decay (AdamW) per step, relative to the step size; 0: plain Adam."""
    schedule: str = 'constant'
    """'constant': the step size throughout; 'cosine': decayed along a cosine to 1 % of it at the last step."""
    epochs: int = 60
    """Passes over the training split."""
    batch_size: int = 256
    """Samples per gradient step."""
    validation_fraction: float = 0.2
    """Share of the samples held out (by episode when episode ids are given) to report the loss on."""
    seed: int = 0
    """Seed of the initialisation, the shuffling and the validation split: 0 ... 2^32-1 (:data:`SEED_LIMIT`)."""
    ensemble: int = 1
    """Networks trained on the same samples from different initialisations and orders; the policy's action is their
    mean (one ONNX graph; with the bins head, the best command of their mean scores). 1 ... :data:`MAX_ENSEMBLE`."""
    head: str = 'tanh'
    """'tanh' (one command, mean squared error) or 'bins' (the best of a grid of commands, cross-entropy)."""
    bins: tuple[int, int] = (9, 15)
    """Cells of the bins head's grid: linear speeds x turn rates, each evenly spaced from the smallest to the largest
    demonstrated value; 2 ... :data:`MAX_BINS` each."""
    bin_window: tuple[int, int] = (0, 0)
    """Cells either side of the best-scoring one (linear, angular) whose commands the bins head averages, each
    weighed by its probability: (0, 0) takes the best cell's command; (1, 1) the mean over the 3 x 3 cells around it,
    a command between the grid's cells that moves smoothly as the scores do and still follows one of disagreeing
    demonstrations (the best cell's). 0 ... :data:`MAX_BINS` each."""
    near_weight: float = 1.0
    """Weight in the loss of a sample whose nearest scan sector is closer than ``near_range`` (others weigh 1):
    the decisions next to an obstacle, a few in a hundred of the demonstrations, are the ones a collision follows
    from. 1 ... :data:`MAX_NEAR_WEIGHT`; 1: every sample alike."""
    near_range: float = 0.5
    """Range (m) of the nearest scan sector below which a sample weighs ``near_weight``."""
    scan_conv: tuple[int, ...] = ()
    """Channels of circular convolutions over the scan's sectors before the hidden layers, each reading
    :data:`SCAN_KERNEL` neighbouring sectors with stride 2, then ReLU: one set of weights recognises the same
    obstacle shape at every bearing, where a dense first layer learns each bearing on its own from the samples that
    had something there. The scan's sectors share one mean and standard deviation, and the rest of the observation
    passes beside the convolutions unchanged. Exported as dense layers (the kernels tiled into their matrices), so
    the ONNX file and its runtimes are those of any policy. () none; else 1 ... :data:`MAX_SCAN_CONV_LAYERS` layers
    of 1 ... :data:`MAX_SCAN_CHANNELS` channels, the scan's sectors divisible by 2 per layer."""
    turn_commit: float = 0.0
    """The bins head's commitment to the turn it is making, applied when it acts (training is unchanged): when its
    previous command turned faster than :data:`TURN_COMMIT_RATE`, the cells that turn the other way weigh
    1 / (1 + turn_commit) of their probability in choosing the best cell and in the window's mean. Where the network
    is torn between the two ways round an obstacle (its probabilities flip from one side to the other as the robot
    turns) the robot keeps its turn instead of turning on the spot one way and the other; a confident choice of the
    other way still wins. The policy file then takes its previous command as a second input
    (:data:`PREVIOUS_INPUT`). 0 ... :data:`MAX_TURN_COMMIT`; 0: none."""
    sample_temperature: float = 0.0
    """The bins head draws its cell instead of taking the best-scoring one, applied when it acts (training is
    unchanged): cell k with probability proportional to p_k ** (1 / sample_temperature) (1: the network's own
    probabilities; toward 0: the best cell), then the window's mean around the drawn cell as around the best one. A
    deterministic network in a state it maps to a turn on the spot can turn on the spot until the episode ends (its
    observation comes back round with the robot); a draw now and then of a command it gives less weight leaves such
    a loop. The draws come from the runtime's generator, seeded by the run (:meth:`PolicyRuntime.reset`), so the same
    seed gives the same commands; the policy file takes them as an input (:data:`UNIFORM_INPUT`).
    0 ... :data:`MAX_SAMPLE_TEMPERATURE`; 0: the best cell."""
    sample_on_spot: bool = False
    """With :attr:`sample_temperature`: draw the cell only while turning on the spot (the previous command slower
    than :data:`SPOT_SPEED` and turning faster than :data:`TURN_COMMIT_RATE`), and take the best cell everywhere
    else. The loops a draw ends are turns on the spot; a draw while driving past an obstacle can take a cell toward
    it. The policy file then takes its previous command as an input as well (:data:`PREVIOUS_INPUT`)."""


@dataclass
class TrainedPolicy:
    spec: ObservationSpec
    layers: list[tuple[np.ndarray, np.ndarray]]
    """(weights (in, out), bias (out,)) per layer, float32."""
    mean: np.ndarray
    std: np.ndarray
    action_scale: np.ndarray
    """(max linear m/s, max angular rad/s): the tanh output is scaled by these."""
    report: dict = field(default_factory=dict)
    members: list = field(default_factory=list)
    """The further networks of an ensemble, each a list like ``layers``: the action is the mean of every network's."""
    bin_actions: np.ndarray | None = None
    """(K, 2) float32 commands of the bins head's grid, in the order of the last layer's outputs; None: tanh head."""
    bins: tuple[int, int] = (0, 0)
    """(linear, angular) cells of the bins head's grid."""
    bin_window: tuple[int, int] = (0, 0)
    """:attr:`TrainConfig.bin_window`: the cells around the best one the command is the probability-weighted mean of."""
    turn_commit: float = 0.0
    """:attr:`TrainConfig.turn_commit` (bins head only)."""
    sample_temperature: float = 0.0
    """:attr:`TrainConfig.sample_temperature` (bins head only)."""
    sample_on_spot: bool = False
    """:attr:`TrainConfig.sample_on_spot` (with :attr:`sample_temperature` only)."""

    @property
    def window_mask(self) -> np.ndarray | None:
        """(K, K) float32: row k is 1 for the cells within :attr:`bin_window` of cell k (the grid is linear-major:
        cell = linear index x angular cells + angular index); None when the best cell's command is taken."""
        if self.bin_actions is None or tuple(self.bin_window) == (0, 0):
            return None
        return window_mask(self.bins, self.bin_window)

    @property
    def networks(self) -> list:
        return [self.layers, *self.members]

    @property
    def commits(self) -> bool:
        """Whether the policy holds its turn (:attr:`turn_commit`): it then takes its previous command."""
        return self.bin_actions is not None and self.turn_commit > 0

    @property
    def draws_on_spot(self) -> bool:
        """Whether the policy draws its cell only while turning on the spot (:attr:`sample_on_spot`)."""
        return self.samples and self.sample_on_spot

    @property
    def takes_previous(self) -> bool:
        """Whether the policy file takes its previous command (:data:`PREVIOUS_INPUT`): a turn commitment's or a
        draw on the spot's."""
        return self.commits or self.draws_on_spot

    @property
    def decodes_logits(self) -> bool:
        """Whether the bins head takes one network's best logit as it is: no ensemble's mean, window, commitment or
        draw needs its probabilities."""
        return len(self.networks) == 1 and tuple(self.bin_window) == (0, 0) and not self.commits and not self.samples

    @property
    def samples(self) -> bool:
        """Whether the policy draws its cell (:attr:`sample_temperature`): it then takes a uniform draw per row."""
        return self.bin_actions is not None and self.sample_temperature > 0

    def act(self, observations: np.ndarray, previous: np.ndarray | None = None,
            uniform: np.ndarray | None = None) -> np.ndarray:
        """The network(s) in NumPy float32 (the reference the ONNX export is checked against); ``previous``: the
        (batch, 2) previous commands a policy with a turn commitment holds its turn by (None: zeros); ``uniform``:
        the (batch, 1) draws in [0, 1) a sampling policy chooses its cells by (None: 0.5 each); a policy that draws
        only while turning on the spot takes its best cell where ``previous`` is not such a turn."""
        outputs = []
        mask = self.window_mask
        for layers in self.networks:
            x = (np.asarray(observations, dtype=np.float32) - self.mean) / self.std
            for index, (weights, bias) in enumerate(layers):
                x = x @ weights + bias
                if index < len(layers) - 1:
                    x = np.maximum(x, 0.0)
            if self.bin_actions is None:
                outputs.append(np.tanh(x) * self.action_scale)
            elif self.decodes_logits:
                outputs.append(x)  # one network: the best score is the best logit
            else:
                z = np.exp(x - x.max(axis=-1, keepdims=True))
                outputs.append(z / z.sum(axis=-1, keepdims=True))
        combined = np.mean(outputs, axis=0)
        if self.bin_actions is None:
            return combined.astype(np.float32)
        if self.commits:
            combined = combined * commitment_weights(np, previous_commands(previous, len(combined)), self.bin_actions,
                                                     self.turn_commit)
        cells = sampled_cells(np, combined, uniform_draws(uniform, len(combined)), self.sample_temperature) \
            if self.samples else np.argmax(combined, axis=-1)
        if self.draws_on_spot:
            spot = on_spot(np, previous_commands(previous, len(combined)))
            cells = np.where(spot, cells, np.argmax(combined, axis=-1))
        if mask is None:
            return self.bin_actions[cells].astype(np.float32)
        return window_command(np, combined, mask, self.bin_actions, cells).astype(np.float32)


def previous_commands(previous, count: int) -> np.ndarray:
    """(count, 2) float32 previous commands of a turn commitment's input: ``previous`` reshaped, None: zeros."""
    return np.zeros((count, 2), np.float32) if previous is None else np.asarray(previous, np.float32).reshape(count, 2)


def uniform_draws(uniform, count: int) -> np.ndarray:
    """(count, 1) float32 draws of a sampling policy's input: ``uniform`` reshaped, None: 0.5 each."""
    return np.full((count, 1), 0.5, np.float32) if uniform is None else np.asarray(uniform, np.float32).reshape(count, 1)


def sampled_cells(xp, probabilities, uniform, temperature: float):
    """(batch,) cells drawn for :attr:`TrainConfig.sample_temperature`: where each row's draw in [0, 1) (batch, 1)
    falls in the cumulative distribution of its probabilities tempered, p ** (1 / temperature) normalised
    (``xp``: numpy or jax.numpy; the ONNX export builds the same graph)."""
    logarithms = xp.log(xp.maximum(probabilities, np.float32(SMALLEST_PROBABILITY)))
    tempered = xp.exp((logarithms - xp.max(logarithms, axis=-1, keepdims=True)) / np.float32(temperature))
    cumulative = xp.cumsum(tempered, axis=-1) / xp.sum(tempered, axis=-1, keepdims=True)
    below = xp.sum((cumulative < xp.asarray(uniform)).astype(np.int32), axis=-1)
    return xp.minimum(below, probabilities.shape[-1] - 1)


def on_spot(xp, previous):
    """(batch,) whether each previous command (batch, 2) turned on the spot: slower than :data:`SPOT_SPEED` and
    turning faster than :data:`TURN_COMMIT_RATE` (``xp``: numpy or jax.numpy; the ONNX export builds the same graph)."""
    return (xp.abs(previous[:, 0]) < SPOT_SPEED) & (xp.abs(previous[:, 1]) > TURN_COMMIT_RATE)


def commitment_weights(xp, previous, bin_actions: np.ndarray, turn_commit: float):
    """(batch, K) weights of the bins head's cell probabilities for :attr:`TrainConfig.turn_commit`: 1, and
    1 / (1 + turn_commit) for the cells turning against a previous command (batch, 2) that turned faster than
    :data:`TURN_COMMIT_RATE` (``xp``: numpy or jax.numpy; the ONNX export builds the same graph)."""
    turn = previous[:, 1:2]
    turning = (xp.abs(turn) > TURN_COMMIT_RATE).astype(np.float32)
    against = (xp.sign(turn) * xp.sign(xp.asarray(bin_actions)[:, 1])[None, :] < 0).astype(np.float32)
    return 1.0 - against * turning * np.float32(turn_commit / (1.0 + turn_commit))


def act_jax(policy: TrainedPolicy, observations: np.ndarray, previous: np.ndarray | None = None,
            uniform: np.ndarray | None = None) -> np.ndarray:
    """The network evaluated by the training framework (JAX), for checking the ONNX export."""
    import jax
    import jax.numpy as jnp

    outputs = []
    mask = policy.window_mask
    for layers in policy.networks:
        x = (jnp.asarray(observations, jnp.float32) - policy.mean) / policy.std
        for index, (weights, bias) in enumerate(layers):
            x = x @ weights + bias
            if index < len(layers) - 1:
                x = jax.nn.relu(x)
        if policy.bin_actions is None:
            outputs.append(jnp.tanh(x) * policy.action_scale)
        else:
            outputs.append(x if policy.decodes_logits else jax.nn.softmax(x, axis=-1))
    combined = jnp.mean(jnp.stack(outputs), axis=0)
    if policy.bin_actions is None:
        return np.asarray(combined)
    if policy.commits:
        combined = combined * commitment_weights(jnp, jnp.asarray(previous_commands(previous, len(combined))),
                                                 policy.bin_actions, policy.turn_commit)
    cells = sampled_cells(jnp, combined, jnp.asarray(uniform_draws(uniform, len(combined))),
                          policy.sample_temperature) if policy.samples else jnp.argmax(combined, axis=-1)
    if policy.draws_on_spot:
        spot = on_spot(jnp, jnp.asarray(previous_commands(previous, len(combined))))
        cells = jnp.where(spot, cells, jnp.argmax(combined, axis=-1))
    if mask is None:
        return policy.bin_actions[np.asarray(cells)]
    return np.asarray(window_command(jnp, combined, mask, policy.bin_actions, cells))


def window_command(xp, probabilities, mask: np.ndarray, bin_actions: np.ndarray, cells=None):
    """The bins head's command with a window: the probability-weighted mean of the commands of the cells ``mask``
    puts around each row's cell, ``cells`` (batch,) or the best one (``xp``: numpy or jax.numpy; the ONNX export
    builds the same graph)."""
    cells = xp.argmax(probabilities, axis=-1) if cells is None else cells
    weights = probabilities * xp.asarray(mask)[cells]
    return (weights @ xp.asarray(bin_actions)) / xp.sum(weights, axis=-1, keepdims=True)


def window_mask(bins, window) -> np.ndarray:
    """(K, K) float32 for a grid of ``bins`` (linear, angular) cells: row k is 1 for the cells within ``window``
    (linear, angular) cells of cell k."""
    linear, angular = np.divmod(np.arange(bins[0] * bins[1]), bins[1])
    return ((np.abs(linear[:, None] - linear[None, :]) <= window[0])
            & (np.abs(angular[:, None] - angular[None, :]) <= window[1])).astype(np.float32)


def conv_taps(positions: int, kernel: int = SCAN_KERNEL) -> np.ndarray:
    """(positions // 2, kernel) int: the input position tap j of output position p reads,
    (2 p + j - kernel // 2) mod positions (a circular convolution of stride 2: the scan closes on itself)."""
    return np.remainder(2 * np.arange(positions // 2)[:, None] + np.arange(kernel)[None, :] - kernel // 2, positions)


def conv_selection(positions: int, kernel: int = SCAN_KERNEL) -> np.ndarray:
    """(positions // 2, positions, kernel) float32 of 0 and 1: :func:`conv_taps` as a selection tensor."""
    taps = conv_taps(positions, kernel)
    selection = np.zeros((len(taps), positions, kernel), dtype=np.float32)
    selection[np.arange(len(taps))[:, None], taps, np.arange(kernel)[None, :]] = 1.0
    return selection


def conv_as_dense(xp, kernel, bias, positions: int, rest: int, first: bool):
    """One convolution over the scan as a dense layer: (weights (in, out), bias (out,)). Its input is the scan
    (``positions`` x input channels, channel fastest) then, for the ``first`` layer, the ``rest`` other observation
    values, else those values twice (+ and -, which the ReLU between layers keeps); its output is the convolution's
    (positions // 2 x output channels) then the rest as + and -."""
    selection = xp.asarray(conv_selection(positions, kernel.shape[0]))
    out, c_in, c_out = positions // 2, kernel.shape[1], kernel.shape[2]
    weights = xp.einsum('pqj,jio->qipo', selection, kernel).reshape(positions * c_in, out * c_out)
    passed = np.concatenate([np.eye(rest), -np.eye(rest)], axis=1) if first else np.eye(2 * rest)
    passed = xp.asarray(passed.astype(np.float32))
    top = xp.concatenate([weights, xp.zeros((positions * c_in, 2 * rest), dtype=weights.dtype)], axis=1)
    bottom = xp.concatenate([xp.zeros((passed.shape[0], out * c_out), dtype=weights.dtype), passed], axis=1)
    return (xp.concatenate([top, bottom], axis=0),
            xp.concatenate([xp.tile(bias, out), xp.zeros((2 * rest,), dtype=weights.dtype)]))


def scan_conv_fits(scan_conv, sectors: int) -> str:
    """'' when ``scan_conv`` (:attr:`TrainConfig.scan_conv`) fits a scan of ``sectors``, else what was expected."""
    scan_conv = tuple(scan_conv)
    if not scan_conv:
        return ''
    if not (len(scan_conv) <= MAX_SCAN_CONV_LAYERS and all(
            isinstance(c, int) and not isinstance(c, bool) and 1 <= c <= MAX_SCAN_CHANNELS for c in scan_conv)):
        return (f'1 to {MAX_SCAN_CONV_LAYERS} comma-separated channel counts, each 1 ... {MAX_SCAN_CHANNELS}, '
                f'got {list(scan_conv)}')
    if sectors < SCAN_KERNEL or sectors % 2 ** len(scan_conv) or sectors // 2 ** len(scan_conv) < 1:
        return (f'a scan whose sectors ({sectors}) are at least {SCAN_KERNEL} and divisible by '
                f'{2 ** len(scan_conv)} ({len(scan_conv)} convolutions of stride 2)')
    return ''


def bin_grid(actions: np.ndarray, bins: tuple[int, int], scale: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(linear centres, angular centres) of the bins head: evenly spaced over the demonstrated range of each command
    (within the robot's limits; a range of one value is widened to the limits)."""
    centres = []
    for axis, count in enumerate(bins):
        low, high = float(actions[:, axis].min()), float(actions[:, axis].max())
        low, high = max(low, -float(scale[axis])), min(high, float(scale[axis]))
        if high - low < 1e-6:
            low, high = -float(scale[axis]), float(scale[axis])
        centres.append(np.linspace(low, high, count).astype(np.float32))
    return centres[0], centres[1]


def _split(count: int, episodes: np.ndarray | None, fraction: float, rng: np.random.Generator):
    """Indices of (train, validation): whole episodes are held out when their ids are known, so the
    validation loss measures generalisation to unseen runs rather than to neighbouring frames."""
    if episodes is None:
        order = rng.permutation(count)
        cut = max(1, int(round(count * fraction)))
        return np.sort(order[cut:]), np.sort(order[:cut])
    ids = np.unique(episodes)
    held = rng.choice(ids, size=max(1, int(round(len(ids) * fraction))), replace=False)
    validation = np.isin(episodes, held)
    return np.flatnonzero(~validation), np.flatnonzero(validation)


def train(observations: np.ndarray, actions: np.ndarray, spec: ObservationSpec, action_scale: tuple[float, float],
          config: TrainConfig | None = None, episodes: np.ndarray | None = None, progress=None) -> TrainedPolicy:
    """Fit the network to (observation, action) pairs by mean squared error; ``progress(epoch, epochs,
    train_loss, validation_loss)`` is called after each epoch."""
    import jax
    import jax.numpy as jnp
    import optax

    config = config or TrainConfig()
    if not hidden_fits(tuple(config.hidden)):
        raise ValueError(f'hidden: expected {HIDDEN_EXPECTED}, got {list(config.hidden)}')
    if not 0 <= config.seed < SEED_LIMIT:
        raise ValueError(f'seed: expected 0 ... 2^32-1, got {config.seed}')
    observations = np.asarray(observations, dtype=np.float32)
    actions = np.asarray(actions, dtype=np.float32)
    if observations.ndim != 2 or observations.shape[1] != spec.size:
        raise ValueError(f'expected observations of {spec.size} values, got shape {observations.shape}')
    if not (np.isfinite(observations).all() and np.isfinite(actions).all()):
        raise ValueError('observations and actions must be finite')
    rng = np.random.default_rng(config.seed)
    train_index, validation_index = _split(len(observations), episodes, config.validation_fraction, rng)
    mean = observations[train_index].mean(axis=0)
    std = np.maximum(observations[train_index].std(axis=0), 1e-3).astype(np.float32)
    scale = np.asarray(action_scale, dtype=np.float32)
    scan_conv = tuple(config.scan_conv)
    if scan_conv:
        problem = scan_conv_fits(scan_conv, spec.sectors if spec.uses_scan else 0)
        if problem:
            raise ValueError(f'scan_conv: expected {problem}')
        scan = observations[train_index, :spec.sectors]
        mean[:spec.sectors] = scan.mean()   # one convolution reads every bearing alike
        std[:spec.sectors] = max(float(scan.std()), 1e-3)

    if config.head not in HEADS:
        raise ValueError(f'head: expected one of {", ".join(HEADS)}, got {config.head!r}')
    bins = tuple(config.bins)
    if config.head == 'bins' and not (len(bins) == 2 and all(isinstance(b, int) and 2 <= b <= MAX_BINS
                                                             for b in bins)):
        raise ValueError(f'bins: expected 2 cell counts (linear, angular), each 2 ... {MAX_BINS}, got {list(bins)}')
    window = tuple(config.bin_window)
    if not (len(window) == 2 and all(isinstance(w, int) and 0 <= w <= MAX_BINS for w in window)):
        raise ValueError(f'bin_window: expected 2 cell counts (linear, angular), each 0 ... {MAX_BINS}, got '
                         f'{list(window)}')
    bin_actions = mask = None
    if config.head == 'bins':
        linear_centres, angular_centres = bin_grid(actions[train_index], bins, scale)
        bin_actions = np.stack(np.meshgrid(linear_centres, angular_centres, indexing='ij'), axis=-1).reshape(-1, 2)
        # A demonstrated command counts for the cells around it: a Gaussian of half a cell's width on each axis.
        widths = [max(float(c[1] - c[0]), 1e-6) * 0.5 for c in (linear_centres, angular_centres)]
        mask = window_mask(bins, window) if window != (0, 0) else None
    rest = spec.size - spec.sectors if scan_conv else 0
    conv_out = (spec.sectors // 2 ** len(scan_conv)) * scan_conv[-1] + rest if scan_conv else spec.size
    sizes = [conv_out, *config.hidden, 2 if bin_actions is None else len(bin_actions)]

    taps = [conv_taps(spec.sectors // 2 ** layer) for layer in range(len(scan_conv))]
    """Per convolution, (output positions, taps): the input position each tap of each output reads."""

    def dense(p):
        """The network as dense (weights, bias) layers, as exported (numpy): each convolution over the scan
        expanded with the rest of the observation passed beside it as + and -, and the first hidden layer reading
        both (its rows for - negated). ``p``: the convolutions' (kernel (taps, in, out), bias (out,)) first."""
        layers, positions = [], spec.sectors
        for index, (kernel, bias) in enumerate(p[:len(scan_conv)]):
            layers.append(conv_as_dense(np, np.asarray(kernel), np.asarray(bias), positions, rest, index == 0))
            positions //= 2
        hidden = [(np.asarray(w), np.asarray(b)) for w, b in p[len(scan_conv):]]
        if scan_conv:
            weights, bias = hidden[0]
            cut = weights.shape[0] - rest
            hidden[0] = (np.concatenate([weights, -weights[cut:]], axis=0), bias)
        return layers + hidden
    if not 0.0 <= config.turn_commit <= MAX_TURN_COMMIT or (config.turn_commit and config.head != 'bins'):
        raise ValueError(f'turn_commit: expected 0 ... {MAX_TURN_COMMIT:g} (the bins head only), got '
                         f'{config.turn_commit} with head {config.head!r}')
    if not 0.0 <= config.sample_temperature <= MAX_SAMPLE_TEMPERATURE or (config.sample_temperature
                                                                           and config.head != 'bins'):
        raise ValueError(f'sample_temperature: expected 0 ... {MAX_SAMPLE_TEMPERATURE:g} (the bins head only), got '
                         f'{config.sample_temperature} with head {config.head!r}')
    if config.sample_on_spot and not config.sample_temperature:
        raise ValueError('sample_on_spot: applies to a policy that draws its cell (sample_temperature > 0), got '
                         'sample_temperature 0')
    if not (1.0 <= config.near_weight <= MAX_NEAR_WEIGHT and config.near_range > 0):
        raise ValueError(f'near_weight: expected 1 ... {MAX_NEAR_WEIGHT:g} and near_range > 0, got '
                         f'{config.near_weight}, {config.near_range}')
    # The pooled scan comes first (ObservationSpec.names); without one nothing is near.
    nearest = observations[:, :spec.sectors].min(axis=1) if spec.uses_scan else np.full(len(observations), np.inf)
    sample_weights = np.where(nearest < config.near_range, config.near_weight, 1.0).astype(np.float32)

    def logits(p, x):
        x = (x - mean) / std
        if scan_conv:  # the convolutions over the scan, the rest of the observation beside their output
            h = x[:, :spec.sectors, None]
            for (kernel, bias), index in zip(p[:len(scan_conv)], taps):
                h = jax.nn.relu(jnp.einsum('bpji,jio->bpo', h[:, index], kernel) + bias)
            x = jnp.concatenate([h.reshape(len(x), -1), x[:, spec.sectors:]], axis=1)
            p = p[len(scan_conv):]
        for index, (weights, bias) in enumerate(p):
            x = x @ weights + bias
            if index < len(p) - 1:
                x = jax.nn.relu(x)
        return x

    def forward(p, x):
        z = logits(p, x)
        if bin_actions is None:
            return jnp.tanh(z) * scale
        if mask is None:
            return jnp.asarray(bin_actions)[jnp.argmax(z, axis=-1)]
        return window_command(jnp, jax.nn.softmax(z, axis=-1), mask, bin_actions)

    def targets(y):
        """(batch, K) probabilities of the grid's cells for demonstrated commands y (batch, 2)."""
        axes = []
        for axis, centres in enumerate((linear_centres, angular_centres)):
            w = jnp.exp(-0.5 * ((y[:, axis:axis + 1] - centres[None, :]) / widths[axis]) ** 2)
            axes.append(w / jnp.sum(w, axis=-1, keepdims=True))
        return (axes[0][:, :, None] * axes[1][:, None, :]).reshape(len(y), -1)

    def squared_error(p, x, y):
        return jnp.mean(((forward(p, x) - y) / scale) ** 2)  # each action relative to its limit

    def loss(p, x, y, w):
        """The weighted mean over the batch of each sample's squared error (tanh) or cross-entropy (bins)."""
        if bin_actions is None:
            each = jnp.mean(((forward(p, x) - y) / scale) ** 2, axis=-1)
        else:
            each = -jnp.sum(targets(y) * jax.nn.log_softmax(logits(p, x), axis=-1), axis=-1)
        return jnp.sum(w * each) / jnp.sum(w)

    if config.schedule not in SCHEDULES:
        raise ValueError(f'schedule: expected one of {", ".join(SCHEDULES)}, got {config.schedule!r}')
    if not 0.0 <= config.weight_decay <= 1.0:
        raise ValueError(f'weight_decay: expected 0 ... 1, got {config.weight_decay}')
    if not 1 <= config.ensemble <= MAX_ENSEMBLE:
        raise ValueError(f'ensemble: expected 1 ... {MAX_ENSEMBLE} networks, got {config.ensemble}')
    steps = config.epochs * -(-len(train_index) // config.batch_size)
    rate = config.learning_rate if config.schedule == 'constant' else \
        optax.cosine_decay_schedule(config.learning_rate, max(steps, 1), alpha=0.01)
    optimiser = optax.adamw(rate, weight_decay=config.weight_decay) if config.weight_decay > 0 else optax.adam(rate)

    @jax.jit
    def step(p, s, x, y, w):
        value, grads = jax.value_and_grad(loss)(p, x, y, w)
        updates, s = optimiser.update(grads, s, p)
        return optax.apply_updates(p, updates), s, value

    evaluate = jax.jit(loss)
    command_error = jax.jit(squared_error)
    x_val, y_val = observations[validation_index], actions[validation_index]
    w_val = sample_weights[validation_index]
    started = time.monotonic()
    train_loss = validation_loss = float('nan')
    networks, params_of = [], []
    for member in range(config.ensemble):
        # Member 0 is the single network of the same seed; the others start and shuffle from their own streams.
        key = jax.random.PRNGKey(config.seed) if member == 0 else jax.random.fold_in(jax.random.PRNGKey(config.seed),
                                                                                   member)
        order_rng = rng if member == 0 else np.random.default_rng([config.seed, member])
        params = []
        for c_in, c_out in zip((1, *scan_conv), scan_conv):
            key, sub = jax.random.split(key)
            params.append((jax.random.normal(sub, (SCAN_KERNEL, c_in, c_out), jnp.float32)
                           * jnp.sqrt(2.0 / (SCAN_KERNEL * c_in)), jnp.zeros((c_out,), jnp.float32)))
        for fan_in, fan_out in zip(sizes, sizes[1:]):
            key, sub = jax.random.split(key)
            params.append((jax.random.normal(sub, (fan_in, fan_out), jnp.float32) * jnp.sqrt(2.0 / fan_in),
                           jnp.zeros((fan_out,), jnp.float32)))
        state = optimiser.init(params)
        for epoch in range(config.epochs):
            order = train_index[order_rng.permutation(len(train_index))]
            losses = []
            for start in range(0, len(order), config.batch_size):
                batch = order[start:start + config.batch_size]
                params, state, value = step(params, state, observations[batch], actions[batch],
                                            sample_weights[batch])
                losses.append(float(value))
            train_loss = float(np.mean(losses))
            validation_loss = float(evaluate(params, x_val, y_val, w_val))
            if progress is not None:
                progress(member * config.epochs + epoch + 1, config.ensemble * config.epochs, train_loss,
                         validation_loss)
        params_of.append(params)
        networks.append([(w.astype(np.float32), b.astype(np.float32)) for w, b in dense(params)])
    # The predict-the-mean baseline: what the loss is without looking at the observation.
    baseline = float(np.mean(((actions[train_index].mean(axis=0) - y_val) / scale) ** 2))
    extra = {}
    if bin_actions is not None:
        # Reported like the tanh head's: the squared error of the commands taken (cross-entropy kept beside it).
        extra = {'validation_cross_entropy': validation_loss, 'train_cross_entropy': train_loss,
                 'bins': list(bins), 'bin_window': list(window)}
    policy = TrainedPolicy(spec, networks[0], mean.astype(np.float32), std, scale, members=networks[1:],
                           bin_actions=bin_actions, bins=bins, bin_window=window, turn_commit=float(config.turn_commit),
                           sample_temperature=float(config.sample_temperature),
                           sample_on_spot=bool(config.sample_on_spot))
    if bin_actions is not None or config.near_weight != 1.0:
        # Every sample alike, as the predict-the-mean baseline: a weighted loss is not comparable with it.
        validation_loss = float(command_error(params_of[0], x_val, y_val))
        train_loss = float(command_error(params_of[0], observations[train_index], actions[train_index]))
    if config.ensemble > 1:  # the ensemble's losses: the mean action of its networks
        validation_loss = float(np.mean(((policy.act(x_val) - y_val) / scale) ** 2))
        train_loss = float(np.mean(((policy.act(observations[train_index]) - actions[train_index]) / scale) ** 2))
    policy.report = {
        **extra, 'train_loss': train_loss, 'validation_loss': validation_loss, 'mean_baseline_loss': baseline,
        'train_samples': int(len(train_index)), 'validation_samples': int(len(validation_index)),
        'seconds': time.monotonic() - started, 'epochs': config.epochs, 'seed': config.seed,
        'hidden': list(config.hidden), 'schedule': config.schedule, 'weight_decay': config.weight_decay,
        'ensemble': config.ensemble, 'head': config.head}
    if config.turn_commit:
        policy.report.update(turn_commit=float(config.turn_commit))
    if config.sample_temperature:
        policy.report.update(sample_temperature=float(config.sample_temperature))
    if config.sample_on_spot:
        policy.report.update(sample_on_spot=True)
    if scan_conv:
        policy.report.update(scan_conv=list(scan_conv), scan_kernel=SCAN_KERNEL)
    if config.near_weight != 1.0:
        policy.report.update(near_weight=config.near_weight, near_range=config.near_range,
                             near_samples=int(np.count_nonzero(sample_weights[train_index] > 1.0)))
    return policy


WALL_CLOCK_KEYS = ('seconds', 'total_seconds', 'cached_episodes')
"""Report entries the file does not keep: how long training took and how many episodes' samples came from the
sample cache are the machine's, not the policy's (the same datasets, configuration and seed give the same file)."""


def stored_report(report: dict) -> dict:
    return {key: value for key, value in report.items() if key not in WALL_CLOCK_KEYS}


def export_onnx(policy: TrainedPolicy, path: str, description: str = '') -> None:
    """Write the network as ONNX: observation [batch, size] float32 -> cmd_vel [batch, 2] (linear.x,
    angular.z), with a turn commitment previous_cmd_vel [batch, 2] beside the observation, with sampling uniform
    [batch, 1]; the observation spec and the training report are stored as metadata."""
    import json

    import onnx
    from onnx import TensorProto, helper, numpy_helper

    initializers = [numpy_helper.from_array(policy.mean, 'mean'), numpy_helper.from_array(policy.std, 'std'),
                    numpy_helper.from_array(policy.action_scale, 'action_scale')]
    binned = policy.bin_actions is not None
    if binned:
        initializers.append(numpy_helper.from_array(np.asarray(policy.bin_actions, np.float32), 'bin_actions'))
    nodes = [helper.make_node('Sub', [ONNX_INPUT, 'mean'], ['centred']),
             helper.make_node('Div', ['centred', 'std'], ['x0'])]
    outputs = []
    for member, layers in enumerate(policy.networks):
        prefix = f'm{member}_' if member else ''  # a single network keeps the names it always had
        for index, (weights, bias) in enumerate(layers):
            initializers += [numpy_helper.from_array(weights, f'{prefix}w{index}'),
                             numpy_helper.from_array(bias, f'{prefix}b{index}')]
            source = 'x0' if index == 0 else f'{prefix}x{index}'
            nodes.append(helper.make_node('Gemm', [source, f'{prefix}w{index}', f'{prefix}b{index}'],
                                          [f'{prefix}z{index}']))
            if index < len(layers) - 1:
                nodes.append(helper.make_node('Relu', [f'{prefix}z{index}'], [f'{prefix}x{index + 1}']))
        last = len(layers) - 1
        if binned:  # scores: the logits of one network, the softmax of each of an ensemble's
            output = f'{prefix}z{last}' if len(policy.networks) == 1 else f'{prefix}scores'
            if len(policy.networks) > 1:
                nodes.append(helper.make_node('Softmax', [f'{prefix}z{last}'], [output], axis=-1))
            outputs.append(output)
            continue
        output = ONNX_OUTPUT if len(policy.networks) == 1 else f'{prefix}action'
        nodes += [helper.make_node('Tanh', [f'{prefix}z{last}'], [f'{prefix}unit_action']),
                  helper.make_node('Mul', [f'{prefix}unit_action', 'action_scale'], [output])]
        outputs.append(output)
    if binned:
        scores = outputs[0]
        if len(outputs) > 1:
            nodes.append(helper.make_node('Mean', outputs, ['mean_scores']))
            scores = 'mean_scores'
        mask = policy.window_mask
        logits = len(outputs) == 1  # one network's scores are its logits, an ensemble's its mean probabilities
        if logits and (policy.commits or policy.samples):
            nodes.append(helper.make_node('Softmax', [scores], ['probabilities'], axis=-1))
            scores, logits = 'probabilities', False
        if policy.commits:  # the cells turning against the previous command's turn weigh less (commitment_weights)
            initializers += [
                numpy_helper.from_array(np.array([1], np.int64), 'turn_index'),
                numpy_helper.from_array(np.array(TURN_COMMIT_RATE, np.float32), 'turn_commit_rate'),
                numpy_helper.from_array(np.sign(np.asarray(policy.bin_actions, np.float32)[:, 1]), 'cell_turn_sign'),
                numpy_helper.from_array(np.array(0.0, np.float32), 'zero'),
                numpy_helper.from_array(np.array(1.0, np.float32), 'one'),
                numpy_helper.from_array(np.array(policy.turn_commit / (1.0 + policy.turn_commit), np.float32),
                                        'against_cut')]
            nodes += [helper.make_node('Gather', [PREVIOUS_INPUT, 'turn_index'], ['previous_turn'], axis=1),
                      helper.make_node('Abs', ['previous_turn'], ['previous_rate']),
                      helper.make_node('Greater', ['previous_rate', 'turn_commit_rate'], ['is_turning']),
                      helper.make_node('Cast', ['is_turning'], ['turning'], to=TensorProto.FLOAT),
                      helper.make_node('Sign', ['previous_turn'], ['previous_sign']),
                      helper.make_node('Mul', ['previous_sign', 'cell_turn_sign'], ['turn_agreement']),
                      helper.make_node('Less', ['turn_agreement', 'zero'], ['is_against']),
                      helper.make_node('Cast', ['is_against'], ['against'], to=TensorProto.FLOAT),
                      helper.make_node('Mul', ['against', 'turning'], ['held_against']),
                      helper.make_node('Mul', ['held_against', 'against_cut'], ['cut']),
                      helper.make_node('Sub', ['one', 'cut'], ['commitment']),
                      helper.make_node('Mul', [scores, 'commitment'], ['committed'])]
            scores = 'committed'
        if policy.samples:  # the cell the draw falls on in the tempered probabilities' cumulative sum (sampled_cells)
            initializers += [
                numpy_helper.from_array(np.array(SMALLEST_PROBABILITY, np.float32), 'smallest_probability'),
                numpy_helper.from_array(np.array(policy.sample_temperature, np.float32), 'sample_temperature'),
                numpy_helper.from_array(np.array(1, np.int64), 'cumulative_axis'),
                numpy_helper.from_array(np.array([1], np.int64), 'draw_axis'),
                numpy_helper.from_array(np.array(len(policy.bin_actions) - 1, np.int64), 'last_cell')]
            nodes += [helper.make_node('Max', [scores, 'smallest_probability'], ['floored']),
                      helper.make_node('Log', ['floored'], ['log_probabilities']),
                      helper.make_node('ReduceMax', ['log_probabilities'], ['log_highest'], axes=[1], keepdims=1),
                      helper.make_node('Sub', ['log_probabilities', 'log_highest'], ['log_relative']),
                      helper.make_node('Div', ['log_relative', 'sample_temperature'], ['log_tempered']),
                      helper.make_node('Exp', ['log_tempered'], ['tempered']),
                      helper.make_node('CumSum', ['tempered', 'cumulative_axis'], ['tempered_sum']),
                      helper.make_node('ReduceSum', ['tempered', 'draw_axis'], ['tempered_total'], keepdims=1),
                      helper.make_node('Div', ['tempered_sum', 'tempered_total'], ['cumulative']),
                      helper.make_node('Less', ['cumulative', UNIFORM_INPUT], ['is_below']),
                      helper.make_node('Cast', ['is_below'], ['below'], to=TensorProto.INT64),
                      helper.make_node('ReduceSum', ['below', 'draw_axis'], ['cells_below'], keepdims=0),
                      helper.make_node('Min', ['cells_below', 'last_cell'], ['drawn_bin' if policy.draws_on_spot
                                                                             else 'best_bin'])]
            if policy.draws_on_spot:  # the drawn cell while turning on the spot, the best one elsewhere (on_spot)
                initializers += [
                    numpy_helper.from_array(np.array([0], np.int64), 'spot_speed_index'),
                    numpy_helper.from_array(np.array([1], np.int64), 'spot_turn_index'),
                    numpy_helper.from_array(np.array(SPOT_SPEED, np.float32), 'spot_speed'),
                    numpy_helper.from_array(np.array(TURN_COMMIT_RATE, np.float32), 'spot_turn_rate'),
                    numpy_helper.from_array(np.array([1], np.int64), 'spot_axis')]
                nodes += [helper.make_node('Gather', [PREVIOUS_INPUT, 'spot_speed_index'], ['spot_previous_speed'],
                                           axis=1),
                          helper.make_node('Abs', ['spot_previous_speed'], ['spot_previous_pace']),
                          helper.make_node('Less', ['spot_previous_pace', 'spot_speed'], ['is_slow']),
                          helper.make_node('Gather', [PREVIOUS_INPUT, 'spot_turn_index'], ['spot_previous_turn'],
                                           axis=1),
                          helper.make_node('Abs', ['spot_previous_turn'], ['spot_previous_rate']),
                          helper.make_node('Greater', ['spot_previous_rate', 'spot_turn_rate'], ['is_spot_turning']),
                          helper.make_node('And', ['is_slow', 'is_spot_turning'], ['is_on_spot_column']),
                          helper.make_node('Squeeze', ['is_on_spot_column', 'spot_axis'], ['is_on_spot']),
                          helper.make_node('ArgMax', [scores], ['highest_bin'], axis=1, keepdims=0),
                          helper.make_node('Where', ['is_on_spot', 'drawn_bin', 'highest_bin'], ['best_bin'])]
        else:
            nodes.append(helper.make_node('ArgMax', [scores], ['best_bin'], axis=1, keepdims=0))
        if mask is None:
            nodes.append(helper.make_node('Gather', ['bin_actions', 'best_bin'], [ONNX_OUTPUT], axis=0))
        else:  # the probability-weighted mean of the commands of the cells around the best one
            probabilities = scores
            if logits:
                nodes.append(helper.make_node('Softmax', [scores], ['probabilities'], axis=-1))
                probabilities = 'probabilities'
            initializers += [numpy_helper.from_array(mask, 'bin_window'),
                             numpy_helper.from_array(np.array([1], np.int64), 'cell_axis')]
            nodes += [helper.make_node('Gather', ['bin_window', 'best_bin'], ['near_best'], axis=0),
                      helper.make_node('Mul', [probabilities, 'near_best'], ['window_weights']),
                      helper.make_node('MatMul', ['window_weights', 'bin_actions'], ['weighted_sum']),
                      helper.make_node('ReduceSum', ['window_weights', 'cell_axis'], ['window_total'], keepdims=1),
                      helper.make_node('Div', ['weighted_sum', 'window_total'], [ONNX_OUTPUT])]
    elif len(outputs) > 1:
        nodes.append(helper.make_node('Mean', outputs, [ONNX_OUTPUT]))
    graph = helper.make_graph(
        nodes, 'robotsim_policy',
        [helper.make_tensor_value_info(ONNX_INPUT, TensorProto.FLOAT, ['batch', policy.spec.size])]
        + ([helper.make_tensor_value_info(PREVIOUS_INPUT, TensorProto.FLOAT, ['batch', 2])]
           if policy.takes_previous else [])
        + ([helper.make_tensor_value_info(UNIFORM_INPUT, TensorProto.FLOAT, ['batch', 1])] if policy.samples else []),
        [helper.make_tensor_value_info(ONNX_OUTPUT, TensorProto.FLOAT, ['batch', 2])], initializers)
    # IR version 9 (ONNX 1.15): read by every onnxruntime and TensorRT a Jetson may carry.
    model = helper.make_model(graph, producer_name='robotsim', opset_imports=[helper.make_opsetid('', ONNX_OPSET)],
                              ir_version=ONNX_IR_VERSION)
    model.doc_string = description or 'robotsim behaviour-cloning policy: observation -> cmd_vel (linear.x, angular.z)'
    helper.set_model_props(model, {SPEC_KEY: policy.spec.to_json(),
                                   'robotsim.training': json.dumps(stored_report(policy.report), sort_keys=True)})
    onnx.checker.check_model(model)
    onnx.save(model, path)
