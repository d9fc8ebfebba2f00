"""Child processes the way every robotsim tool runs them (the launcher, the ROS-graph evaluation): each in a
session of its own that dies with its parent, stopped by Ctrl-C and, if it does not stop, SIGKILL; and the worker
processes of a pool (dataset generation, evaluation, training's bag readers), which end with the process that
started them, and with its run when that stops early (:func:`pool_results`)."""

from __future__ import annotations

import ctypes
import os
import signal
import subprocess


def interrupt(process: subprocess.Popen, timeout: float) -> None:
    """Ctrl-C a process (a clean rclpy shutdown, or a launcher stopping its nodes); SIGKILL if it is still
    there after ``timeout`` s."""
    if process.poll() is None:
        process.send_signal(signal.SIGINT)
        try:
            process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def _signal_on_parent_death(signum: int) -> None:
    ctypes.CDLL('libc.so.6', use_errno=True).prctl(1, signum)  # PR_SET_PDEATHSIG


def die_with_parent() -> None:
    os.setsid()  # Ctrl-C in the terminal reaches the launcher only; it forwards it once
    _signal_on_parent_death(signal.SIGKILL)


def exit_with_parent(parent: int) -> None:
    """A process pool's initializer (``initializer=exit_with_parent, initargs=(os.getpid(),)``): the worker gets
    SIGTERM when the process that started it dies, however it dies (SIGKILL included), and exits at once when that
    has already happened. Without it the workers of a killed ``robotsim dataset generate`` or ``policy eval`` went on
    with the episodes already queued to them, writing into the output folder a resumed run was about to fill."""
    _signal_on_parent_death(signal.SIGTERM)
    if os.getppid() != parent:
        os._exit(1)


def pool_results(function, tasks: list[tuple], workers: int, initializer=None, initargs: tuple = ()):
    """Yield ``function(*task)`` for each task as it finishes, from ``workers`` spawned processes (a fresh interpreter
    each: MuJoCo's GL context and rclpy do not survive fork), each started with ``initializer(*initargs)``.

    Stopping early (Ctrl-C, an error, the caller closing the generator) cancels the tasks not started and ends the
    workers (SIGTERM) before it returns: the executor alone would wait for the tasks they run and hold queued.
    Seen: ``robotsim policy eval`` given Ctrl-C in its main process only went on launching the graph for the
    episodes already queued to its workers."""
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor, as_completed
    pool = ProcessPoolExecutor(max_workers=workers, mp_context=multiprocessing.get_context('spawn'),
                               initializer=initializer, initargs=initargs)
    futures = []
    try:
        futures = [pool.submit(function, *task) for task in tasks]
        for future in as_completed(futures):
            yield future.result()
    except BaseException:
        for future in futures:
            future.cancel()
        # The executor keeps its worker processes in _processes (CPython 3.8 ... 3.14); the public API can only wait.
        for process in list((getattr(pool, '_processes', None) or {}).values()):
            if process.is_alive():
                process.terminate()
        raise
    finally:
        pool.shutdown(wait=True, cancel_futures=True)
