"""Ctrl-C at a known moment: steps that an interruption must not cut in two.

Python raises ``KeyboardInterrupt`` between any two bytecodes of the main thread. A
step such as "start a process and put it where the cleanup will find it", or "rename
the HTML and the JSON of a report", must happen whole or not at all: cut in two, it
leaves a process that nothing kills (and that the interpreter waits for at exit) or
half a report. :func:`deferred_interrupt` runs such a step with SIGINT recorded instead
of raised, and raises ``KeyboardInterrupt`` right after it. :func:`sigint_blocked`
starts a process that must never see Ctrl-C (a ``spawn`` worker, whose start-up would
print a traceback): the signal mask is inherited through ``exec``.

multiprocessing's ``spawn`` starts a resource tracker process with the first worker;
starting it unblocks SIGINT in the calling thread, and it outlives the command that
started it (it ends when it reads the end of its pipe, a moment after). Before blocking
SIGINT, :func:`tracker_running` starts it; :func:`stop_tracker` ends it, waiting for it.
"""

from __future__ import annotations

import os
import signal
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

__all__ = ["deferred_interrupt", "sigint_blocked", "stop_tracker", "tracker_running"]


def _main_thread() -> bool:
    return threading.current_thread() is threading.main_thread()


@contextmanager
def deferred_interrupt() -> Iterator[None]:
    """Run the ``with`` block with SIGINT recorded; once it is done, the handler that
    was in place is called for a recorded SIGINT (the default one raises
    ``KeyboardInterrupt``; an enclosing ``deferred_interrupt`` records it in turn).
    Outside the main thread, or where SIGINT is ignored, it changes nothing."""
    previous = signal.getsignal(signal.SIGINT) if _main_thread() else None
    if not callable(previous):
        yield
        return
    hits: list[Any] = []

    def record(signum: int, frame: Any) -> None:
        hits.append((signum, frame))

    signal.signal(signal.SIGINT, record)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)
        if hits:
            previous(*hits[0])


@contextmanager
def sigint_blocked() -> Iterator[None]:
    """Block SIGINT in this thread for the ``with`` block: a process started inside
    inherits the mask and never gets Ctrl-C (its parent stops it). A SIGINT that
    arrives meanwhile is delivered when the block ends (use inside
    :func:`deferred_interrupt`)."""
    if not _main_thread() or not hasattr(signal, "pthread_sigmask"):
        yield
        return
    old = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, old)


def tracker_running() -> None:
    """Start multiprocessing's resource tracker now, if it is not running. Starting it
    (``ResourceTracker.ensure_running``, which a ``spawn`` start calls) unblocks SIGINT
    in this thread: inside :func:`sigint_blocked`, the worker spawned right after would
    get Ctrl-C during its start-up and print a traceback."""
    from multiprocessing import resource_tracker

    resource_tracker.ensure_running()


def stop_tracker(limit: float = 1.0) -> None:
    """End the resource tracker this process started and wait for it (killed after
    ``limit`` seconds), so that no process of the command is left when it ends. Call
    once the spawned processes are stopped: the tracker ends when every copy of its
    pipe is closed. It is started again by the next ``spawn`` (nothing registered in it
    is lost: gradcheck's workers register nothing)."""
    from multiprocessing import resource_tracker

    tracker = resource_tracker._resource_tracker  # noqa: SLF001 - no public stop
    lock = getattr(tracker, "_lock", None)
    if lock is None or not hasattr(tracker, "_fd") or not hasattr(tracker, "_pid"):
        return
    with deferred_interrupt(), lock:
        fd, pid = tracker._fd, tracker._pid  # noqa: SLF001
        if fd is None:
            return
        tracker._fd = tracker._pid = None  # noqa: SLF001
        os.close(fd)  # the tracker reads the end of its pipe and ends
        if pid is not None:
            _reap(pid, limit)


def _reap(pid: int, limit: float) -> None:
    """Wait for child ``pid`` to end; kill it after ``limit`` seconds."""
    deadline = time.monotonic() + limit
    try:
        while os.waitpid(pid, os.WNOHANG) == (0, 0):
            if time.monotonic() > deadline:
                os.kill(pid, signal.SIGKILL)
                os.waitpid(pid, 0)
                return
            time.sleep(0.005)
    except ChildProcessError:  # reaped already
        pass
