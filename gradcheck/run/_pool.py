"""Run tasks in processes of their own, so that nothing a task does can end the run.

The verification report is a list of independent pieces of work (a layer's checks, one
model configuration, one training run...), and the code they run is the user's: code
that may raise, crash in C behind ctypes, call ``os._exit``, run out of memory or never
return. Each task runs in a forked child process (at most ``jobs`` at a time, each
limited to one BLAS thread); its result comes back as a pickle. Whatever goes wrong
becomes a :class:`Fault` in the task's place, with one of the statuses of
:data:`FAULT_STATUSES`, and the other tasks still run:

- the task raised (any exception, ``MemoryError`` and ``SystemExit`` included):
  ``error``, with the exception's type, message and the innermost frame of the user's
  code (no traceback);
- the child died before answering (a signal such as SIGSEGV or SIGKILL, ``os._exit``):
  ``crashed``, naming the signal or the exit status;
- the task ran past its time limit: ``timeout``; the child is killed.

A child per task needs no pickling of the task (a subject declared with lambdas runs
as it is) and never leaves a broken pool behind. Children ignore Ctrl-C; the parent
kills them when it is interrupted. A child is started and entered in the registry of
live children in one step that Ctrl-C cannot cut (:func:`._interrupt.deferred_interrupt`),
and whatever the registry still holds is killed at exit: the interpreter, which waits
for its non-daemonic children at exit, never waits for one. The pytest plugin's
generated subject tests run their cases through :func:`run_isolated`, the same code.
Where the platform cannot fork, tasks run in this process and only exceptions are
caught.
"""

from __future__ import annotations

import atexit
import dataclasses
import faulthandler
import importlib
import math
import multiprocessing as mp
import os
import signal
import sys
import time
import traceback
import warnings
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from multiprocessing.connection import Connection, wait
from pathlib import Path
from typing import Any

from ._interrupt import deferred_interrupt

__all__ = ["DEFAULT_CASE_TIMEOUT", "FAULT_STATUSES", "Fault", "Task", "fault_of",
           "run_isolated", "run_tasks"]

#: Seconds a case may run by default (``gradcheck report --case-timeout``): fifteen times
#: the slowest model case measured on two busy cores (20 s), room for a slower CPU.
DEFAULT_CASE_TIMEOUT = 300.0

#: The statuses a task can end with besides its own result.
FAULT_STATUSES: dict[str, str] = {
    "error": "the case raised an exception (its type, message and the innermost frame of "
             "the user's code are given)",
    "crashed": "the process running the case died before answering (a signal such as "
               "SIGSEGV, or os._exit)",
    "timeout": "the case ran past its time limit and its process was stopped",
}

_LIBRARY = str(Path(__file__).resolve().parents[1])  # the package, not this folder

#: The children this process started and has not yet killed and joined.
_LIVE: set[mp.process.BaseProcess] = set()


def _kill_live() -> None:
    """Kill and join every child still registered (at exit: after an interruption that
    came between two steps of the cleanup, the interpreter would wait for them)."""
    with deferred_interrupt():
        for proc in list(_LIVE):
            if proc.is_alive():
                proc.kill()
            proc.join()
            _LIVE.discard(proc)


atexit.register(_kill_live)  # after multiprocessing's own exit hook, so it runs first
if hasattr(os, "register_at_fork"):  # a child's registry starts empty
    os.register_at_fork(after_in_child=_LIVE.clear)


@dataclass(frozen=True)
class Fault:
    """What became of a task that gave no result.

    Attributes
    ----------
    status : str
        ``"error"``, ``"crashed"`` or ``"timeout"`` (:data:`FAULT_STATUSES`).
    message : str
        One line: the exception's type and message, the signal, or the time limit.
    type : str
        The exception's type name (status ``error``).
    where : str
        The innermost frame of the user's code, ``file:line in function``.
    signal : str
        The signal that killed the process (``"SIGSEGV"``; status ``crashed``).
    """

    status: str
    message: str
    type: str = ""
    where: str = ""
    signal: str = ""

    def describe(self) -> str:
        """``status: message`` (and where), for progress lines and test failures."""
        at = f" (at {self.where})" if self.where else ""
        return f"{self.status}: {self.message}{at}"

    def to_dict(self) -> dict[str, str]:
        return {"status": self.status, "message": self.message, "type": self.type,
                "where": self.where, "signal": self.signal}


@dataclass(frozen=True)
class Task:
    """``fn(*args)``, a label for the progress line, a cost estimate (seconds; the most
    costly start first) and its own time limit (``None``: the run's)."""

    label: str
    fn: Callable[..., Any]
    args: tuple[Any, ...] = field(default_factory=tuple)
    cost: float = 1.0
    timeout: float | None = None


def _where(exc: BaseException) -> str:
    """The innermost frame outside gradcheck and the standard library's machinery."""
    frames = traceback.extract_tb(exc.__traceback__)
    user = [f for f in frames if not f.filename.startswith(_LIBRARY)
            and "multiprocessing" not in f.filename]
    if not user:  # raised by gradcheck itself (a declaration mistake): the message says it
        return ""
    f = user[-1]
    return f"{f.filename}:{f.lineno} in {f.name}"


def fault_of(exc: BaseException) -> Fault:
    """The ``error`` fault of an exception: type, message, innermost user frame."""
    name = type(exc).__name__
    text = str(exc).strip().splitlines()
    return Fault("error", f"{name}: {text[0]}" if text else name, name, _where(exc))


def _child(conn: Connection, fn: Callable[..., Any], args: tuple[Any, ...],
           threads: int | None) -> None:
    """Body of a child process: run the task, send ``("ok", result)`` or a fault."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the parent handles Ctrl-C
    if faulthandler.is_enabled():  # a crash is reported as a status, not a stack dump
        faulthandler.disable()
    before = set(sys.modules)
    try:
        if threads is not None:
            from ._threads import limit_blas_threads

            limit_blas_threads(threads)
        out: tuple[str, Any] = ("ok", fn(*args))
    except BaseException as exc:  # every way a task can fail becomes its status
        out = ("fault", fault_of(exc))
    if getattr(out[1], "exception", None) is not None:
        out[1].exception = None  # a user's exception may not survive pickling
    loaded = _own_modules_since(before)
    try:
        conn.send((*out, loaded))
    except Exception as exc:  # an unpicklable result
        conn.send(("fault", Fault("error", f"the result could not be sent back: "
                                           f"{type(exc).__name__}: {exc}"), loaded))
    conn.close()


def _own_modules_since(before: set[str]) -> list[str]:
    """The modules of gradcheck itself a child imported (its lazy imports)."""
    return [name for name in list(sys.modules) if name not in before
            and (name == "gradcheck" or name.startswith("gradcheck."))]


def _adopt(names: list[str]) -> None:
    """Import in this process the modules of gradcheck a child imported, so that the
    next child forked finds them loaded instead of compiling and running them again
    (the checker's modules are imported lazily, on first use). Only gradcheck's own
    modules, never a user's; one that fails to import here is left to the children."""
    for name in names:
        if name not in sys.modules:
            try:
                importlib.import_module(name)
            except Exception:  # noqa: S110 - an optimisation only: the child imports it
                pass


def _death(exitcode: int | None) -> Fault:
    if exitcode is not None and exitcode < 0:
        try:
            name = signal.Signals(-exitcode).name
        except ValueError:
            name = f"signal {-exitcode}"
        what = signal.strsignal(-exitcode) or name
        return Fault("crashed", f"the process running the case was killed by {name} "
                                f"({what})", signal=name)
    return Fault("crashed", f"the process running the case exited with status {exitcode} "
                            "before returning a result (os._exit, or exit() in C code)")


class _Running:
    """One task in its child process."""

    def __init__(self, task: Task, limit: float | None, threads: int | None) -> None:
        ctx = mp.get_context("fork")
        # Not daemonic: a task may start processes of its own (a user's multiprocessing
        # pool, the PyTorch yardstick's workers), which a daemonic process may not. The
        # child is started and registered in one step Ctrl-C cannot cut, and is killed
        # and joined whatever happens (kill(), run_tasks' finally, _kill_live at exit).
        with deferred_interrupt():
            self.conn, child_end = ctx.Pipe(duplex=False)
            self.proc = ctx.Process(target=_child,
                                    args=(child_end, task.fn, task.args, threads),
                                    daemon=False)
            try:
                with warnings.catch_warnings():
                    # Python 3.12+ warns when a process with threads (pytest-xdist's,
                    # BLAS's) forks. The child runs one case and leaves with os._exit; a
                    # child that deadlocked all the same would end as a timeout.
                    warnings.filterwarnings("ignore", message=r".*use of fork\(\) may lead to",
                                            category=DeprecationWarning)
                    self.proc.start()
                _LIVE.add(self.proc)
            finally:
                child_end.close()
                if self.proc.pid is None:  # it did not start: nothing to kill
                    self.conn.close()
        self.limit = None if limit is None or math.isinf(limit) else limit  # inf: none
        self.t0 = time.monotonic()

    def poll(self) -> tuple[str, Any] | None:
        """The outcome once there is one: a result, a fault; ``None`` while running."""
        if self.conn.poll():
            try:
                kind, value, loaded = self.conn.recv()
                msg = kind, value
                _adopt(loaded)
            except (EOFError, OSError):  # died before or while answering
                self.proc.join()
                msg = "fault", _death(self.proc.exitcode)
            except Exception as exc:  # the parent cannot rebuild the result
                msg = "fault", Fault("error", f"the result could not be read back: "
                                              f"{type(exc).__name__}: {exc}")
            self.proc.join(1)  # it has answered: whatever it still does is not waited for
            self.kill()
            return msg
        if not self.proc.is_alive():
            if self.conn.poll():  # answered just before exiting
                return self.poll()
            self.kill()
            return "fault", _death(self.proc.exitcode)
        if self.limit is not None and time.monotonic() - self.t0 > self.limit:
            self.kill()
            return "fault", Fault("timeout", f"the case ran past its time limit of "
                                             f"{self.limit:g} s and was stopped")
        return None

    def deadline(self) -> float | None:
        return None if self.limit is None else self.t0 + self.limit

    def kill(self) -> None:
        with deferred_interrupt():
            if self.proc.is_alive():
                self.proc.kill()
            self.proc.join()
            _LIVE.discard(self.proc)
            self.conn.close()


def run_tasks(tasks: Sequence[Task], *, jobs: int, say: Callable[[str], None],
              timeout: float | None = None, threads: int | None = 1) -> list[Any]:
    """Run every task and return their results (or :class:`Fault`) in task order.

    At most ``jobs`` children run at a time, the most costly task first, each with
    ``threads`` BLAS threads (``None``: as this process). ``timeout`` is the time limit
    of a task that states none (seconds; ``None`` or ``inf``: no limit). An
    interruption (Ctrl-C) kills the children and is raised here.
    """
    if jobs < 1:
        raise ValueError(f"jobs must be >= 1, got {jobs}")
    if "fork" not in mp.get_all_start_methods():
        return [_run_here(t, say) for t in tasks]
    results: list[Any] = [None] * len(tasks)
    pending = deque(sorted(range(len(tasks)), key=lambda k: -tasks[k].cost))
    running: dict[int, _Running] = {}
    done = 0
    try:
        while pending or running:
            while pending and len(running) < jobs:
                k = pending.popleft()
                t = tasks[k]
                with deferred_interrupt():  # started is running: the finally kills it
                    running[k] = _Running(t, t.timeout if t.timeout is not None else timeout,
                                          threads)
            _wait(list(running.values()))
            for k, r in list(running.items()):
                out = r.poll()
                if out is None:
                    continue
                del running[k]
                done += 1
                results[k] = out[1]
                state = f": {out[1].describe()}" if out[0] == "fault" else (
                    f": {out[1].status}" if getattr(out[1], "passed", True) is False else "")
                say(f"{tasks[k].label}{state} ({time.monotonic() - r.t0:.1f} s; "
                    f"{done}/{len(tasks)} done)")
    finally:
        with deferred_interrupt():  # a second Ctrl-C does not leave the others running
            for r in running.values():
                r.kill()
    return results


def _wait(running: list[_Running]) -> None:
    """Until a child answers or ends, or the nearest time limit passes."""
    deadlines = [d for d in (r.deadline() for r in running) if d is not None]
    left = max(0.0, min(deadlines) - time.monotonic()) + 0.01 if deadlines else None
    if left is not None:  # a huge limit (1e12 s) overflows the selector: wake up hourly
        left = min(left, 3600.0)
    wait([r.conn for r in running] + [r.proc.sentinel for r in running], timeout=left)


def _run_here(task: Task, say: Callable[[str], None]) -> Any:
    say(task.label)
    try:
        return task.fn(*task.args)
    except Exception as exc:
        return fault_of(exc)


def run_isolated(fn: Callable[..., Any], *args: Any, timeout: float | None = None,
                 threads: int | None = None) -> Any:
    """``fn(*args)`` in a child process: its result, or a :class:`Fault`.

    The checks ``fn`` makes are recorded in the child and handed to this process's
    recorder (:mod:`._recording`) with their purpose, as if they had run here."""
    from ..check._recording import purpose, record

    label = getattr(fn, "__name__", "task")
    out = run_tasks([Task(label, _recorded, (fn, *args))], jobs=1, say=lambda _s: None,
                    timeout=timeout, threads=threads)[0]
    if isinstance(out, Fault):
        return out
    value, records = out
    for result, why in records:
        with purpose(why):
            record(result)
    return value


def _recorded(fn: Callable[..., Any], *args: Any) -> tuple[Any, list[tuple[Any, str]]]:
    """``fn(*args)`` and the ``(result, purpose)`` of every check it recorded."""
    from ..check._recording import recording_to

    records: list[tuple[Any, str]] = []

    def keep(result: Any, why: str) -> None:
        if getattr(result, "exception", None) is not None:  # may not survive pickling
            result = dataclasses.replace(result, exception=None)
        records.append((result, why))

    with recording_to(keep):
        value = fn(*args)
    return value, records
