"""The parent's side of a ``gradcheck diff`` worker: :class:`Worker` starts a revision's
process (:func:`gradcheck.diff._diffworker.serve`), sends it requests, and stops it on a
fault, a time limit or an interruption; :func:`relabelled` names the revisions' temporary
folders ``BASE:``/``HEAD:`` in what comes back."""

from __future__ import annotations

import math
import multiprocessing as mp
import time
from pathlib import Path
from typing import Any

from ..run._interrupt import deferred_interrupt, sigint_blocked, tracker_running
from ..run._pool import Fault, _death
from ._diffworker import WorkerError, serve

__all__ = ["Worker", "WorkerFault", "relabelled"]


class WorkerFault(Exception):
    """The worker died or ran past the time limit while serving a request; ``fault``
    says which (a :class:`gradcheck.run._pool.Fault`, status ``crashed`` or ``timeout``).
    The process is gone: :meth:`Worker.restart` starts another."""

    def __init__(self, label: str, fault: Fault) -> None:
        super().__init__(f"{label}: {fault.describe()}")
        self.label = label
        self.fault = fault


# -- the parent's side ---------------------------------------------------------------------------
class Worker:
    """A spawned process serving one revision (``label``: ``BASE`` or ``HEAD``).

    ``timeout`` (seconds, ``None``: none) limits every request: a worker that has not
    answered by then is killed and the request ends in :class:`WorkerFault`, as does
    one that dies while serving it. The requests that set its state up (``load``,
    ``prepare``, ``pin``) are replayed by :meth:`restart`.
    """

    def __init__(self, label: str, root: Path, cwd: Path, spec: str,
                 repo: Path, timeout: float | None = None) -> None:
        self.label = label
        self.timeout = None if timeout is None or math.isinf(timeout) else timeout
        self._args = (root, cwd, spec, repo)
        #: Folder prefix -> label, applied to every string of an answer: the temporary
        #: folders of the revisions are named ``BASE:``/``HEAD:`` (they are removed).
        self.relabel: dict[str, str] = {}
        self._setup: list[tuple[str, tuple[Any, ...]]] = []
        self._last: tuple[str, tuple[Any, ...]] = ("", ())
        self._start()

    def _start(self) -> None:
        import gradcheck

        ctx = mp.get_context("spawn")
        root, cwd, spec, repo = self._args
        here = str(Path(gradcheck.__file__).resolve().parent)
        # Started whole or not at all, and with SIGINT blocked, which the new interpreter
        # inherits: Ctrl-C stops the parent, and the parent stops the worker.
        with deferred_interrupt():
            tracker_running()  # not inside sigint_blocked: starting it unblocks SIGINT
            self.conn, child = ctx.Pipe()
            self.proc = ctx.Process(
                target=serve, name=f"gradcheck-diff-{self.label}", daemon=True,
                args=(child, str(root), str(cwd), spec, str(repo), here))
            try:
                with sigint_blocked():
                    self.proc.start()
            finally:
                child.close()
                if self.proc.pid is None:
                    self.conn.close()
        self._sent = time.monotonic()

    def restart(self) -> None:
        """A new process in the place of a dead or stopped one, in the same state."""
        self.close()
        self._start()
        for op, args in self._setup:
            self.conn.send((op, args))
            self._sent = time.monotonic()
            self.recv(setup=True)

    def send(self, op: str, *args: Any) -> None:
        if op in ("load", "prepare", "pin"):
            self._setup.append((op, args))
        self._last = (op, args)
        self.conn.send((op, args))
        self._sent = time.monotonic()

    def _fault(self, fault: Fault) -> WorkerFault:
        """Stop the process; a request that set state up is not replayed."""
        if self._setup and self._setup[-1] is self._last:
            self._setup.pop()
        self.close(politely=False)
        return WorkerFault(self.label, fault)

    def recv(self, setup: bool = False) -> Any:
        """The answer to the last request; :class:`WorkerFault` when the worker died or
        ran past the time limit (counted from the request), :class:`WorkerError` when
        the request failed in the worker. The requests that set a worker up (``setup``:
        loading the subject, preparing its cases) are no case: the case time limit is
        not theirs (a busy machine may take longer to start an interpreter)."""
        limit = None if setup else self.timeout
        while not self.conn.poll(3600.0 if limit is None else
                                 min(max(self._sent + limit - time.monotonic(), 0.0), 3600.0)):
            if limit is not None and self._sent + limit <= time.monotonic():
                raise self._fault(Fault("timeout", f"the case ran past its time limit of "
                                                   f"{limit:g} s and was stopped"))
        try:
            status, value = self.conn.recv()
        except (EOFError, ConnectionError):
            self.proc.join(2)
            raise self._fault(_death(self.proc.exitcode)) from None
        if status != "ok":
            raise WorkerError(relabelled(f"{self.label}: {value}", self.relabel))
        return relabelled(value, self.relabel)

    def call(self, op: str, *args: Any) -> Any:
        self.send(op, *args)
        return self.recv(setup=op in ("load", "prepare", "pin"))

    def close(self, politely: bool = True) -> None:
        """Stop the process: politely (asked to leave, then by force after 2 s), or at
        once (``politely=False``: a fault, an interruption)."""
        with deferred_interrupt():
            if politely and self.proc.is_alive():
                try:
                    self.conn.send(None)
                except (OSError, ValueError):
                    pass
                self.proc.join(2)
            if self.proc.is_alive():
                self.proc.kill()
            self.proc.join()
            self.conn.close()


def relabelled(value: Any, labels: dict[str, str]) -> Any:
    """``value`` with every folder prefix of ``labels`` in its strings replaced by its
    label (``/tmp/gradcheck-diff-x/tree/`` -> ``BASE:``); arrays are left as they are."""
    if not labels:
        return value
    if isinstance(value, str):
        for prefix, label in labels.items():
            value = value.replace(prefix, label)
        return value
    if isinstance(value, dict):  # "file": a path the parent uses, kept as it is
        return {k: v if k == "file" else relabelled(v, labels) for k, v in value.items()}
    if type(value) in (list, tuple):
        return type(value)(relabelled(v, labels) for v in value)
    return value
