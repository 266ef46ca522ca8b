"""File writes shared by the report, the diff, the plugin and the snapshots.

:func:`write_atomic` replaces a file whole (a temporary file in the same folder, then
``os.replace``), :func:`write_all_atomic` several files all or none, Ctrl-C included;
:func:`append_text` adds a block to the end of a file, as GitHub's
``$GITHUB_STEP_SUMMARY`` expects. Both give new files the mode a plain ``open`` would:
``0o666`` less the process's umask (``0o644`` under the usual umask 022).
"""

from __future__ import annotations

import os
import tempfile
import threading
from pathlib import Path

from ._interrupt import deferred_interrupt

__all__ = ["append_text", "file_mode", "write_all_atomic", "write_atomic"]

_UMASK_LOCK = threading.Lock()


def _umask() -> int:
    """The process's umask, read without changing it where the system allows
    (``/proc/self/status`` on Linux); elsewhere set and restored at once under a lock."""
    try:
        with open("/proc/self/status", encoding="ascii") as fh:
            for line in fh:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        pass
    with _UMASK_LOCK:
        mask = os.umask(0o022)
        os.umask(mask)
    return mask


def file_mode() -> int:
    """The mode of a new file: ``0o666`` less the umask."""
    return 0o666 & ~_umask()


def write_atomic(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` through a temporary file in the same folder.

    The temporary file (which ``mkstemp`` creates with mode 0600) is given the mode of
    a new file under the umask (:func:`file_mode`), flushed to disk and renamed over
    ``path`` with ``os.replace``; on any failure, Ctrl-C included, it is removed and
    ``path`` is left as it was.
    """
    write_all_atomic({Path(path): data})


def write_all_atomic(files: dict[Path, bytes]) -> None:
    """Write several files (a report's HTML and JSON) all or none: each goes to a
    temporary file beside it (as :func:`write_atomic`), then all are renamed in one step
    that Ctrl-C does not cut (it is raised after the last rename). On any failure
    before that, the temporary files are removed and no file is changed."""
    staged: list[tuple[str, Path]] = []
    try:
        for path, data in files.items():
            _stage(Path(path), data, staged)
        with deferred_interrupt():
            while staged:
                tmp, path = staged[0]
                os.replace(tmp, path)
                staged.pop(0)
    finally:
        for tmp, _path in staged:
            if os.path.exists(tmp):
                os.unlink(tmp)


def _stage(path: Path, data: bytes, staged: list[tuple[str, Path]]) -> None:
    """``data`` in a new temporary file beside ``path``, flushed to disk and listed in
    ``staged`` in one step that Ctrl-C does not cut (the caller removes what is
    listed)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with deferred_interrupt():
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
        staged.append((tmp, path))
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fchmod(fh.fileno(), file_mode())
            os.fsync(fh.fileno())


def append_text(path: Path, text: str) -> None:
    """Append ``text`` to ``path`` (created if missing, with :func:`file_mode`).

    Not atomic by nature: the block is written with a single ``write`` call on a file
    opened in append mode, so that a reader sees it whole or not at all in practice
    (``O_APPEND``), and what the file held before is kept. A block that does not end
    with a newline gets one, and one that follows text not ending with a newline starts
    on a new line.
    """
    path = Path(path)
    if path.parent != Path():
        path.parent.mkdir(parents=True, exist_ok=True)
    block = text if text.endswith("\n") else text + "\n"
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o666)
    try:
        if os.fstat(fd).st_size and not _ends_with_newline(path):
            block = "\n" + block
        data = block.encode("utf-8")
        done = os.write(fd, data)
        while done < len(data):  # a regular file takes it whole; a pipe may not
            done += os.write(fd, data[done:])
    finally:
        os.close(fd)


def _ends_with_newline(path: Path) -> bool:
    with open(path, "rb") as fh:
        fh.seek(-1, os.SEEK_END)
        return fh.read(1) == b"\n"
