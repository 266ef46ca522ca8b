"""The recording hook: who receives every check's result, with no module-global state.

A recorder is a callable that takes a :class:`~gradcheck.CheckResult` and the purpose of
the check (``"check"``, or ``"fuzz"`` for a NaN/Inf fuzz check that must end with a named
status). The pytest plugin hands each test its recorder with :func:`recording_to` for
the time the test runs; every ``check_*`` call made in that context passes its result to
it through :func:`record`. Both live in context variables: nested pytest sessions (as in
pytester) and threads of their own do not see each other's recorder. A check run in a
thread the test starts is recorded only if the thread runs in a copy of the test's
context (``contextvars.copy_context().run``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ._result import CheckResult

__all__ = ["PURPOSES", "purpose", "record", "recording_to"]

Recorder = Callable[["CheckResult", str], None]

#: What a recorded check was for.
PURPOSES = ("check", "fuzz")

_RECORDER: ContextVar[Recorder | None] = ContextVar("gradcheck_recorder", default=None)
_PURPOSE: ContextVar[str] = ContextVar("gradcheck_purpose", default="check")


@contextmanager
def _bound(var: ContextVar[Any], value: Any) -> Iterator[None]:
    """``var`` set to ``value`` inside the ``with`` block, put back after."""
    token = var.set(value)
    try:
        yield
    finally:
        var.reset(token)


@contextmanager
def recording_to(recorder: Recorder) -> Iterator[None]:
    """Send the result of every check made inside the ``with`` block to ``recorder``."""
    if not callable(recorder):
        raise TypeError(f"recorder must be callable, got {type(recorder).__name__}")
    with _bound(_RECORDER, recorder):
        yield


@contextmanager
def purpose(name: str) -> Iterator[None]:
    """Mark the checks made inside the ``with`` block as made for ``name`` (``"fuzz"``)."""
    if name not in PURPOSES:
        raise ValueError(f"purpose must be one of {', '.join(PURPOSES)}; got {name!r}")
    with _bound(_PURPOSE, name):
        yield


def record(result: CheckResult) -> None:
    """Hand ``result`` to the recorder of the current context, if there is one."""
    recorder = _RECORDER.get()
    if recorder is not None:
        recorder(result, _PURPOSE.get())
