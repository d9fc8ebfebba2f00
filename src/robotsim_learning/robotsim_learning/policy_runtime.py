"""A policy file at run time (ROS-free): onnxruntime inference with the checks a robot needs.

Refuses at load, with one line, a file that is missing, is not ONNX, was not written by robotsim's
exporter (no observation spec) or does not fit the robot; at every step, an observation of the wrong
size and a non-finite command (NaN must never reach /cmd_vel).
"""

from __future__ import annotations

import os

import numpy as np

from .observation import ObservationSpec
from .policy_model import ONNX_INPUT, ONNX_OUTPUT, SPEC_KEY


class PolicyFileError(ValueError):
    """The policy file cannot drive this robot (one line: what was expected)."""


class InferenceError(RuntimeError):
    """One inference failed or gave a non-finite command."""


class PolicyRuntime:
    def __init__(self, path: str, providers: tuple[str, ...] = ('CPUExecutionProvider',)):
        import onnxruntime

        if not os.path.isfile(path):
            raise PolicyFileError(f'{path}: policy file not found (expected an ONNX file from robotsim policy train)')
        available = onnxruntime.get_available_providers()
        unknown = [p for p in providers if p not in available]
        if unknown:
            raise PolicyFileError(f'{path}: execution provider {", ".join(unknown)} not available here '
                                  f'(expected one of {", ".join(available)})')
        options = onnxruntime.SessionOptions()
        options.intra_op_num_threads = 1  # a small network: threads cost more than they give
        options.log_severity_level = 3
        try:
            self.session = onnxruntime.InferenceSession(path, options, providers=list(providers))
        except Exception as error:  # onnxruntime raises its own exception types for unreadable models
            first = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
            raise PolicyFileError(f'{path}: not a readable ONNX model ({first[:200]})') from None
        metadata = self.session.get_modelmeta().custom_metadata_map
        if SPEC_KEY not in metadata:
            raise PolicyFileError(f'{path}: no {SPEC_KEY} metadata (expected a policy exported by robotsim policy train)')
        self.spec = ObservationSpec.from_json(metadata[SPEC_KEY])
        inputs = {i.name: i for i in self.session.get_inputs()}
        outputs = [o.name for o in self.session.get_outputs()]
        if ONNX_INPUT not in inputs or ONNX_OUTPUT not in outputs or inputs[ONNX_INPUT].shape[-1] != self.spec.size:
            raise PolicyFileError(f'{path}: expected input {ONNX_INPUT!r} of {self.spec.size} values and output '
                                  f'{ONNX_OUTPUT!r}, got inputs {list(inputs)} outputs {outputs}')
        self.path = path

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
        try:
            command = self.session.run([ONNX_OUTPUT], {ONNX_INPUT: observation})[0][0]
        except Exception as error:
            raise InferenceError(f'inference failed: {error}') from None
        if not np.isfinite(command).all():
            raise InferenceError(f'the network returned a non-finite command {command.tolist()}')
        return float(command[0]), float(command[1])

    def act_batch(self, observations: np.ndarray) -> np.ndarray:
        return self.session.run([ONNX_OUTPUT], {ONNX_INPUT: np.asarray(observations, dtype=np.float32)})[0]
