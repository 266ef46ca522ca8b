"""Ctrl-C at a known moment: steps that an interruption must not cut in two.

Python raises ``KeyboardInterrupt`` between any two bytecodes of the main thread. A
step such as "start a process and put it where the cleanup will find it", or "rename
the HTML and the JSON of a report", must happen whole or not at all: cut in two, it
leaves a process that nothing kills (and that the interpreter waits for at exit) or
half a report. :func:`deferred_interrupt` runs such a step with SIGINT recorded instead
of raised, and raises ``KeyboardInterrupt`` right after it. :func:`sigint_blocked`
starts a process that must never see Ctrl-C (a ``spawn`` worker, whose start-up would
print a traceback): the signal mask is inherited through ``exec``.
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

__all__ = ["deferred_interrupt", "sigint_blocked"]


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
