"""A policy file at run time (ROS-free): onnxruntime inference with the checks a robot needs.

Refuses at load, with one line, a file that is missing, is not ONNX, was not written by robotsim's
exporter (no observation spec), holds a corrupt observation spec (the line names the metadata key and
the field) or does not fit the robot; at every step, an observation of the wrong
size and a non-finite command (NaN must never reach /cmd_vel).
"""

from __future__ import annotations

import dataclasses
import json
import math
import os
import time
from collections import deque

import numpy as np

from robotsim_core.output_files import file_sha256

from .observation import ObservationSpec
from .policy_model import (ONNX_INPUT, ONNX_OUTPUT, PREVIOUS_INPUT, SPEC_KEY, UNIFORM_INPUT, previous_commands,
                           uniform_draws)


class PolicyFileError(ValueError):
    """The policy file cannot drive this robot (one line: what was expected)."""


class InferenceError(RuntimeError):
    """One inference failed or gave a non-finite command."""


def _integer(value, low: int) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= low


def _finite(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


_SPEC_FIELDS = {  # every ObservationSpec field: (check, what was expected)
    'scan_samples': (lambda v: _integer(v, 0), 'an integer >= 0'),
    'scan_range_max': (lambda v: isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)
                       and v > 0, 'a finite number > 0'),
    'sectors': (lambda v: _integer(v, 0), 'an integer >= 0 (0: no scan observed)'),
    'image_width': (lambda v: _integer(v, 0), 'an integer >= 0'),
    'image_height': (lambda v: _integer(v, 0), 'an integer >= 0'),
    'image_sectors': (lambda v: isinstance(v, list) and len(v) == 2 and all(_integer(n, 1) for n in v),
                      'a list of 2 integers >= 1 (rows, columns)'),
    'heading': (lambda v: v in ('odometry', 'imu'), "'odometry' or 'imu'"),
    'twist': (lambda v: isinstance(v, bool), 'true or false'),
    'corridors': (lambda v: isinstance(v, list) and len(v) <= 64 and all(_finite(b) and abs(b) <= math.pi for b in v),
                  'a list of at most 64 bearings (rad, -pi ... pi)'),
    'corridor_half_width': (lambda v: _finite(v) and v >= 0, 'a finite number >= 0'),
    'corridor_length': (lambda v: _finite(v) and v > 0, 'a finite number > 0'),
    'scan_angle_min': (_finite, 'a finite number'),
    'scan_angle_increment': (_finite, 'a finite number'),
    'scan_origin': (lambda v: isinstance(v, list) and len(v) == 2 and all(_finite(n) for n in v),
                    'a list of 2 finite numbers (x, y)'),
    'perception': (lambda v: isinstance(v, str) and (v == '' or (len(v) == 64 and all(c in '0123456789abcdef'
                                                                                       for c in v))),
                   "'' or the 64 hex digits of a sha256"),
    'perception_classes': (lambda v: isinstance(v, list) and len(v) <= 16 and all(isinstance(n, str) for n in v),
                           'a list of at most 16 class names'),
    'route_directions': (lambda v: _integer(v, 0) and v <= 64 and v % 2 == 0,
                         'an even integer 0 ... 64 (0: no route observed)'),
    'route_radius': (lambda v: _finite(v) and 0 < v <= 5, 'a number > 0 and <= 5 (m)'),
    'route_cell': (lambda v: _finite(v) and 0.01 <= v <= 1, 'a number 0.01 ... 1 (m)'),
    'route_clearance': (lambda v: _finite(v) and 0 <= v <= 5, 'a number 0 ... 5 (m)'),
    'route_berth': (lambda v: _finite(v) and 0 <= v <= 5, 'a number 0 ... 5 (m)'),
    'route_waypoint': (lambda v: _finite(v) and 0 <= v <= 5, 'a number 0 ... 5 (m; 0: the goal\'s own bearing)'),
}
assert set(_SPEC_FIELDS) == {f.name for f in dataclasses.fields(ObservationSpec)}, 'a new field needs its check here'


def observation_spec_from_metadata(path: str, text: str) -> ObservationSpec:
    """The observation spec stored in a policy file's ``robotsim.observation_spec`` metadata, checked field
    by field: a PolicyFileError naming the file, the key and the field instead of a misread network input."""
    where = f'{path}: metadata {SPEC_KEY}'
    try:
        data = json.loads(text)
    except json.JSONDecodeError as error:
        raise PolicyFileError(f'{where}: expected a JSON object, got invalid JSON ({error})') from None
    except (ValueError, RecursionError) as error:
        raise PolicyFileError(f'{where}: expected a JSON object, got invalid JSON ({type(error).__name__})') from None
    if not isinstance(data, dict):
        raise PolicyFileError(f'{where}: expected a JSON object, got {type(data).__name__}')
    known = [f.name for f in dataclasses.fields(ObservationSpec)]
    for name in data:
        if name not in known:
            raise PolicyFileError(f'{where}: {name}: unknown field; expected only {", ".join(known)}')
    required = [f.name for f in dataclasses.fields(ObservationSpec)
                if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING]
    for name in required:
        if name not in data:
            raise PolicyFileError(f'{where}: {name}: missing field (expected {_SPEC_FIELDS[name][1]})')
    for name, value in data.items():
        check, expected = _SPEC_FIELDS[name]
        if not check(value):
            raise PolicyFileError(f'{where}: {name}: expected {expected}, got {json.dumps(value)[:80]}')
    for name in ('image_sectors', 'corridors', 'scan_origin', 'perception_classes'):
        if name in data:
            data[name] = tuple(data[name])
    if data.get('perception') and (not data.get('perception_classes') or not data.get('image_width')):
        raise PolicyFileError(f'{where}: perception: expected the perception classes and the camera image with it')
    return ObservationSpec(**data)


PERCEPTION_SUFFIX = '.perception.onnx'
"""A chained policy's perception model lives beside its control model: ``NAME.onnx`` and ``NAME.perception.onnx``."""


def perception_path(policy_path: str) -> str:
    """Where the perception model of the chained policy ``policy_path`` is."""
    stem = policy_path[:-len('.onnx')] if policy_path.endswith('.onnx') else policy_path
    return stem + PERCEPTION_SUFFIX


def _session(path: str, providers: tuple[str, ...], missing: str):
    """An onnxruntime session of ``path`` (PolicyFileError ``missing`` when there is no such file)."""
    import onnxruntime

    if not os.path.isfile(path):
        raise PolicyFileError(f'{path}: {missing}')
    available = onnxruntime.get_available_providers()
    unknown = [p for p in providers if p not in available]
    if unknown:
        raise PolicyFileError(f'{path}: execution provider {", ".join(unknown)} not available here '
                              f'(expected one of {", ".join(available)})')
    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads = 1  # a small network: threads cost more than they give
    options.log_severity_level = 3
    try:
        return onnxruntime.InferenceSession(path, options, providers=list(providers))
    except Exception as error:  # onnxruntime raises its own exception types for unreadable models
        first = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
        raise PolicyFileError(f'{path}: not a readable ONNX model ({first[:200]})') from None


TIMINGS = 200
"""Most recent inference durations kept per stage (for the node's latency percentiles)."""


class PerceptionStage:
    """Stage 1 of a chained policy: owns the onnxruntime session of a perception model (``robotsim perception
    train``) and turns a camera image into its class map, timing every call. ``sha256``, when given, is the model the
    control stage was trained with: any other file is refused (a retrained perception model changes what the
    control stage sees)."""

    def __init__(self, path: str, providers: tuple[str, ...] = ('CPUExecutionProvider',), sha256: str = '',
                 classes: tuple[str, ...] = ()):
        from .perception import CLASSES_KEY, FACTOR_KEY, ONNX_INPUT as IMAGE, ONNX_OUTPUT as CLASS_MAP
        missing = ('perception model not found (expected the ONNX file of robotsim perception train; a chained policy '
                   'keeps it beside its control model)')
        if not os.path.isfile(path):
            raise PolicyFileError(f'{path}: {missing}')
        found = file_sha256(path)
        if sha256 and found != sha256:
            raise PolicyFileError(f'{path}: not the perception model the policy was trained with (expected sha256 '
                                  f'{sha256[:12]}..., got {found[:12]}...)')
        self.session = _session(path, providers, missing)
        metadata = self.session.get_modelmeta().custom_metadata_map
        factor = metadata.get(FACTOR_KEY, '')
        if CLASSES_KEY not in metadata or not factor.isdigit() or not 1 <= int(factor) <= 16:
            raise PolicyFileError(f'{path}: metadata {CLASSES_KEY} and {FACTOR_KEY} (1 ... 16): expected a perception '
                                  f'model exported by robotsim perception train, got {sorted(metadata)}')
        self.classes = tuple(metadata[CLASSES_KEY].split(','))
        if classes and self.classes != tuple(classes):
            raise PolicyFileError(f'{path}: classes {self.classes}: expected {tuple(classes)}')
        self.factor, self.path = int(factor), path
        self.sha256 = found
        self._input, self._output = IMAGE, CLASS_MAP
        self.seconds: deque[float] = deque(maxlen=TIMINGS)

    def __call__(self, rgb: np.ndarray) -> np.ndarray:
        """The (h, w) class map of one (H, W, 3) uint8 camera image."""
        from .perception import shrink_image
        started = time.perf_counter()
        small = shrink_image(np.asarray(rgb, dtype=np.uint8), self.factor)
        classes = self.session.run([self._output], {self._input: small[None]})[0][0]
        self.seconds.append(time.perf_counter() - started)
        return classes


class PolicyRuntime:
    """A policy file's onnxruntime session (owned), and for a chained policy its :class:`PerceptionStage`
    (``self.perceive``, owned; None otherwise). ``seconds`` times the control stage's inferences. A policy with a
    turn commitment or one that draws only while turning on the spot (``commits``: the file takes
    ``previous_cmd_vel``) is given its own previous command by :meth:`act`; :meth:`reset` forgets it (at the start
    of every episode). A policy that draws its cell
    (``samples``: the file takes ``uniform``) is given one number in [0, 1) per decision by :meth:`act` from the
    runtime's generator (owned, ``seed`` at construction, a new one at every :meth:`reset` given a seed)."""

    def __init__(self, path: str, providers: tuple[str, ...] = ('CPUExecutionProvider',), seed: int = 0):
        self.session = _session(path, providers, 'policy file not found (expected an ONNX file from robotsim policy train)')
        metadata = self.session.get_modelmeta().custom_metadata_map
        if SPEC_KEY not in metadata:
            raise PolicyFileError(f'{path}: no {SPEC_KEY} metadata (expected a policy exported by robotsim policy train)')
        self.spec = observation_spec_from_metadata(path, metadata[SPEC_KEY])
        inputs = {i.name: i for i in self.session.get_inputs()}
        outputs = [o.name for o in self.session.get_outputs()]
        shape = inputs[ONNX_INPUT].shape if ONNX_INPUT in inputs else []
        previous = inputs[PREVIOUS_INPUT].shape if PREVIOUS_INPUT in inputs else [2]
        uniform = inputs[UNIFORM_INPUT].shape if UNIFORM_INPUT in inputs else [1]
        if ONNX_OUTPUT not in outputs or not shape or shape[-1] != self.spec.size or previous[-1] != 2 \
                or uniform[-1] != 1 or set(inputs) - {ONNX_INPUT, PREVIOUS_INPUT, UNIFORM_INPUT}:
            raise PolicyFileError(f'{path}: expected input {ONNX_INPUT!r} of {self.spec.size} values (and '
                                  f'{PREVIOUS_INPUT!r} of 2, {UNIFORM_INPUT!r} of 1) and output {ONNX_OUTPUT!r}, got '
                                  f'inputs {list(inputs)} outputs {outputs}')
        self.commits = PREVIOUS_INPUT in inputs
        self.samples = UNIFORM_INPUT in inputs
        self.previous = np.zeros((1, 2), np.float32)
        self.random = np.random.default_rng(seed)
        self.path = path
        self.seconds: deque[float] = deque(maxlen=TIMINGS)
        self.perceive = PerceptionStage(perception_path(path), providers, self.spec.perception,
                                        self.spec.perception_classes) if self.spec.uses_perception else None

    def reset(self, seed: int | None = None) -> None:
        """Forget the previous command (a policy with a turn commitment starts an episode committed to nothing);
        with a ``seed``, draw from a generator of that seed from now on (a run's draws repeat with its seed)."""
        self.previous = np.zeros((1, 2), np.float32)
        if seed is not None:
            self.random = np.random.default_rng(seed)

    def feed(self, observations: np.ndarray, previous: np.ndarray, uniform: np.ndarray) -> dict:
        """The session's inputs for (batch, size) observations, (batch, 2) previous commands and (batch, 1) draws."""
        feed = {ONNX_INPUT: observations}
        if self.commits:
            feed[PREVIOUS_INPUT] = previous
        if self.samples:
            feed[UNIFORM_INPUT] = uniform
        return feed

    def check_fits(self, robot_spec: ObservationSpec) -> None:
        problem = self.spec.mismatch(robot_spec)
        if problem:
            raise PolicyFileError(f'{self.path}: {problem} (a policy is trained for one robot configuration)')

    def act(self, observation: np.ndarray) -> tuple[float, float]:
        """(linear.x, angular.z) for one observation; InferenceError instead of a non-finite command."""
        observation = np.asarray(observation, dtype=np.float32).reshape(1, -1)
        if observation.shape[1] != self.spec.size:
            raise InferenceError(f'expected an observation of {self.spec.size} values, got {observation.shape[1]}')
        if not np.isfinite(observation).all():
            raise InferenceError('observation holds NaN or Inf')
        uniform = self.random.random((1, 1), dtype=np.float32) if self.samples else None
        started = time.perf_counter()
        try:
            command = self.session.run([ONNX_OUTPUT], self.feed(observation, self.previous, uniform))[0][0]
        except Exception as error:
            raise InferenceError(f'inference failed: {error}') from None
        self.seconds.append(time.perf_counter() - started)
        if not np.isfinite(command).all():
            raise InferenceError(f'the network returned a non-finite command {command.tolist()}')
        self.previous = np.asarray(command, np.float32).reshape(1, 2)
        return float(command[0]), float(command[1])

    def act_batch(self, observations: np.ndarray, previous: np.ndarray | None = None,
                  uniform: np.ndarray | None = None) -> np.ndarray:
        """Commands for (batch, size) observations, each with its own previous command (batch, 2; None: zeros)
        and draw (batch, 1; None: 0.5 each), keeping nothing."""
        observations = np.asarray(observations, dtype=np.float32)
        return self.session.run([ONNX_OUTPUT], self.feed(observations, previous_commands(previous, len(observations)),
                                                         uniform_draws(uniform, len(observations))))[0]


def policy_for_robot(path: str, robot: str, providers: tuple[str, ...] = ('CPUExecutionProvider',)) -> PolicyRuntime:
    """The policy in ``path`` loaded and checked against ``robot`` (a name or YAML path): what the policy
    node does at its start, and what both launchers do before any node starts."""
    from robotsim_core.description import load_robot

    from .observation import spec_for_robot

    runtime = PolicyRuntime(path, providers)
    try:
        robot_spec = spec_for_robot(load_robot(robot), runtime.spec.sectors, image=runtime.spec.uses_image,
                                    heading=runtime.spec.heading)
    except ValueError as error:  # the robot has no lidar to feed the policy
        raise PolicyFileError(f'{path}: {error}') from None
    runtime.check_fits(robot_spec)
    return runtime
