"""The recording hook: who receives every check's result.

A recorder is a callable that takes a :class:`~gradcheck.CheckResult`. The pytest plugin
installs one for its session with :func:`install_recorder` and removes it with
:func:`remove_recorder`; every ``check_*`` call hands its result to the innermost
installed recorder through :func:`record`. Nothing else listens.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ._result import CheckResult

__all__ = ["install_recorder", "record", "remove_recorder"]

Recorder = Callable[["CheckResult"], None]


class _Recorders:
    """A stack of recorders (nested pytest sessions, as in pytester, stack up)."""

    def __init__(self) -> None:
        self._stack: list[Recorder] = []
        self._lock = threading.Lock()

    def push(self, recorder: Recorder) -> None:
        with self._lock:
            self._stack.append(recorder)

    def remove(self, recorder: Recorder) -> None:
        with self._lock:
            if recorder in self._stack:
                self._stack.remove(recorder)

    def top(self) -> Recorder | None:
        with self._lock:
            return self._stack[-1] if self._stack else None


_RECORDERS = _Recorders()


def install_recorder(recorder: Recorder) -> None:
    """Send every result from now on to ``recorder`` (until it is removed)."""
    if not callable(recorder):
        raise TypeError(f"recorder must be callable, got {type(recorder).__name__}")
    _RECORDERS.push(recorder)


def remove_recorder(recorder: Recorder) -> None:
    """Stop sending results to ``recorder``; the previous one (if any) receives them."""
    _RECORDERS.remove(recorder)


def record(result: CheckResult) -> None:
    """Hand ``result`` to the innermost installed recorder, if there is one."""
    recorder = _RECORDERS.top()
    if recorder is not None:
        recorder(result)
