"""Git revisions for ``gradcheck diff``: find the repository, resolve a revision, and
materialise it in a temporary folder that is removed afterwards.

A revision is written out with ``git archive`` (tracked files only, as committed) into
a folder made by :func:`tempfile.mkdtemp`: nothing of the user's working tree, index or
``.git`` changes, and no worktree entry is left behind if the process is killed. The
folder is removed on the way out of :func:`materialised`, also on Ctrl-C, SIGTERM and
exceptions.
"""

from __future__ import annotations

import shutil
import signal
import subprocess  # noqa: S404 - git with fixed arguments, no shell
import tarfile
import tempfile
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..run._interrupt import deferred_interrupt

__all__ = ["Revision", "RevisionError", "materialised", "repo_root", "resolve"]

#: Prefix of the temporary folders (tests look for leftovers by it).
TEMP_PREFIX = "gradcheck-diff-"


class RevisionError(Exception):
    """Not a git working tree, git missing, or an unknown revision; one line."""


@dataclass(frozen=True)
class Revision:
    """A resolved revision: what the user typed, the commit, and its folder."""

    name: str
    commit: str
    root: Path


def _git(cwd: Path, *args: str, binary: bool = False) -> Any:
    try:
        out = subprocess.run(["git", *args], cwd=cwd, capture_output=True,  # noqa: S603, S607
                             timeout=120, check=False, text=not binary)
    except FileNotFoundError:
        raise RevisionError("git is not installed (or not on PATH)") from None
    except subprocess.TimeoutExpired:
        raise RevisionError(f"git {' '.join(args)} did not finish in 120 s") from None
    return out


def repo_root(cwd: Path) -> Path:
    """The top folder of the git working tree that holds ``cwd``."""
    out = _git(cwd, "rev-parse", "--show-toplevel")
    if out.returncode != 0 or not out.stdout.strip():
        raise RevisionError(f"{cwd} is not inside a git working tree (run gradcheck diff "
                            "in your repository)")
    return Path(out.stdout.strip()).resolve()


def resolve(root: Path, rev: str) -> str:
    """The full commit id that ``rev`` names (a branch, ``HEAD~1``, a tag, an id)."""
    if not isinstance(rev, str) or not rev or rev.startswith("-"):
        raise RevisionError(f"not a revision: {rev!r}")
    out = _git(root, "rev-parse", "--verify", "--quiet", "--end-of-options",
               f"{rev}^{{commit}}")
    if out.returncode != 0 or not out.stdout.strip():
        raise RevisionError(f"unknown revision {rev!r} in {root} (try git fetch, or "
                            "git log --oneline to see the revisions)")
    return str(out.stdout.strip())


def _extract(root: Path, commit: str, dest: Path) -> None:
    out = _git(root, "archive", "--format=tar", commit, binary=True)
    if out.returncode != 0:
        msg = out.stderr.decode(errors="replace").strip().splitlines()
        raise RevisionError(f"git archive {commit[:12]} failed: {msg[-1] if msg else '?'}")
    tar_path = dest.with_name(dest.name + ".tar")
    tar_path.write_bytes(out.stdout)
    try:
        with tarfile.open(tar_path) as tar:
            tar.extractall(dest, filter="data")
    finally:
        tar_path.unlink(missing_ok=True)


@contextmanager
def _sigterm_as_interrupt() -> Iterator[None]:
    """Turn SIGTERM into KeyboardInterrupt while the folder exists (main thread only)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def handler(signum: int, frame: Any) -> None:
        raise KeyboardInterrupt(f"signal {signum}")

    previous = signal.signal(signal.SIGTERM, handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


@contextmanager
def materialised(root: Path, rev: str) -> Iterator[Revision]:
    """The revision ``rev`` of the repository at ``root``, written out in a temporary
    folder for the duration of the ``with`` block, then removed."""
    commit = resolve(root, rev)
    top: Path | None = None
    try:
        with deferred_interrupt():  # a folder made is a folder removed
            top = Path(tempfile.mkdtemp(prefix=TEMP_PREFIX))
        with _sigterm_as_interrupt():
            dest = top / "tree"
            dest.mkdir()
            _extract(root, commit, dest)
            yield Revision(rev, commit, dest)
    finally:
        if top is not None:
            with deferred_interrupt():  # a second Ctrl-C does not leave half of it
                shutil.rmtree(top, ignore_errors=True)
