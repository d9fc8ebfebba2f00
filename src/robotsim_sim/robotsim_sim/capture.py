"""Rendering sensors measured in threads of their own while the physics goes on (``SimOptions.camera_threads``).

A camera capture is mostly MuJoCo's ``mjr_render`` and ``mjr_readPixels`` (with llvmpipe, the CPU
rasterising), which release Python's global lock: in a thread of its own, a capture runs beside the
physics, the other sensors and the message publishing, and two robots' cameras beside each other.
The simulator node uses it (two rovers otherwise ran their cameras one after the other on one core
of two); the dataset generator's fast path does not (its bags keep their order of messages).

What a reading holds does not change: the capture due at t copies the simulation state at t and
renders from that copy, with the sensor's own noise stream, so its pixels are those a capture in
the physics thread makes (tests compare them byte for byte). What changes is when the reading is
delivered: with the first physics step that finds it done, at the latest when that camera's next
capture is due (one capture in flight per camera), or at :meth:`CaptureThread.collect` through
``Simulation.flush``. Its stamp stays t, like a real camera's images, which arrive after their
exposure; a reset discards captures in flight.
"""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor

import mujoco


class CaptureThread:
    """One rendering sensor in its own thread, with its own GL context and renderer."""

    def __init__(self, model: mujoco.MjModel, make_renderer: Callable[[], object], make_sensor: Callable[[object], object]):
        """``make_renderer()`` and ``make_sensor(renderer)`` run in the capture thread (a GL context
        belongs to the thread that made it current)."""
        self._model = model
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix='capture')

        def build():
            renderer = make_renderer()
            return renderer, make_sensor(renderer)
        self._renderer, self.sensor = self._executor.submit(build).result()
        self._state = mujoco.MjData(model)
        self._pending: Future | None = None

    @property
    def in_flight(self) -> bool:
        return self._pending is not None

    @property
    def done(self) -> bool:
        return self._pending is not None and self._pending.done()

    def start(self, data: mujoco.MjData, rng, stamp: int) -> None:
        """Capture the state ``data`` holds now (stamp ``stamp``); the rendering goes on in the thread."""
        assert self._pending is None, 'collect the capture in flight first'
        mujoco.mj_copyData(self._state, self._model, data)
        self._pending = self._executor.submit(self.sensor.measure, self._state, rng, stamp)

    def collect(self):
        """The reading of the capture in flight (waits for it)."""
        pending, self._pending = self._pending, None
        return pending.result()

    def discard(self) -> None:
        """Wait for the capture in flight, if any, and drop it (a reset: its stamp is of the old episode)."""
        if self._pending is not None:
            self.collect()

    def run(self, function: Callable, *args):
        """Call ``function(*args)`` in the capture thread (e.g. the sensor's on_reset) and return its result."""
        return self._executor.submit(function, *args).result()

    def close(self) -> None:
        """Free the renderer in its thread and end the thread (again: nothing)."""
        if self._renderer is None:
            return
        try:
            self.discard()
        except Exception:  # noqa: BLE001 - a failed capture that is being dropped anyway: free the renderer all the same
            pass
        self._executor.submit(self._renderer.close).result()
        self._executor.shutdown()
        self._renderer = None
