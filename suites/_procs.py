"""Processes a test starts: none outlives it (its session is killed, waited for, and its
pipes closed whatever the test's outcome)."""

from __future__ import annotations

import os
import signal
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any


@contextmanager
def session(argv: list[str], **kwargs: Any) -> Iterator[subprocess.Popen]:
    """``Popen(argv, **kwargs)`` in a session (and process group) of its own. On
    leaving, every process of that group still alive (the command's workers included)
    is killed, the command is waited for and its pipes are closed."""
    with subprocess.Popen(argv, start_new_session=True, preexec_fn=_as_a_terminal_would,
                          **kwargs) as proc:
        try:
            yield proc
        finally:
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):  # nothing of it is left
                pass
            proc.wait()


def _as_a_terminal_would() -> None:
    """In the child, before ``exec``: SIGINT at its default and unblocked, as a shell
    starts a foreground command, whatever this test process's own disposition and mask
    (both are inherited through ``exec``; an ignored SIGINT stays ignored in Python)."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})


def alive_in_group(pgid: int) -> list[int]:
    """The processes of group ``pgid`` that are alive (zombies not counted), read from
    ``/proc``."""
    pids = []
    for entry in Path("/proc").iterdir():
        try:
            stat = (entry / "stat").read_text() if entry.name.isdigit() else ""
        except OSError:  # it ended meanwhile
            continue
        fields = stat[stat.rindex(")") + 2:].split() if stat else []
        if fields and int(fields[2]) == pgid and fields[0] != "Z":
            pids.append(int(entry.name))
    return pids
