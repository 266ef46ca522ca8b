"""``gradcheck diff HEAD~1`` on the reference model, in a scratch git repository.

Run it as a plain script (no pytest)::

    python examples/diff_reference.py            # the default level
    python examples/diff_reference.py --quick    # what the suites run

It copies the reference model (``model/``) into a new git repository in a temporary
folder, commits it, then commits a one-line change that every gradient check passes
but that moves the model's numbers (LayerNorm's ``eps`` from 1e-5 to 1e-3), and runs
``gradcheck diff HEAD~1 --subject model.subject:REFERENCE`` there (the copy's own
subject, importing the copy's code). Every check stays ``ok -> ok``; the command exits 1
and names the drift: the ``layernorm`` outputs and gradients, and the snapshot cases,
each with its worst index. The folder is removed afterwards. The exit status
of this script is the command's.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import gradcheck_model as model

#: The one-line change: consistent forward and backward, other numbers.
GOOD = "eps: float = 1e-5"
BAD = "eps: float = 1e-3"


def _git(repo: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=repo, check=True, capture_output=True)  # noqa: S603, S607


def scratch_repository(folder: Path) -> Path:
    """A git repository holding the reference model: a commit, then the change."""
    repo = folder / "repo"
    shutil.copytree(Path(model.__file__).resolve().parent, repo / "model",
                    ignore=shutil.ignore_patterns("__pycache__"))
    _git(repo, "init", "-q")
    _git(repo, "config", "user.email", "example@example.com")
    _git(repo, "config", "user.name", "example")
    _git(repo, "add", "model")
    _git(repo, "commit", "-qm", "the reference model")
    layernorm = repo / "model" / "layernorm.py"
    text = layernorm.read_text()
    if GOOD not in text:
        raise SystemExit(f"{layernorm}: the line to break is not there: {GOOD!r}")
    layernorm.write_text(text.replace(GOOD, BAD, 1))
    _git(repo, "commit", "-qam", "layernorm: a larger eps")
    return repo


def main(argv: list[str]) -> int:
    with tempfile.TemporaryDirectory(prefix="gradcheck-example-") as tmp:
        repo = scratch_repository(Path(tmp))
        # the scratch repository's own copy of the model (model/), not the installed
        # gradcheck_model: the code under test is the repository's at each revision
        spec = ["--subject", "model.subject:REFERENCE"]
        cmd = [sys.executable, "-m", "gradcheck.cli", "diff", "HEAD~1", *spec, *argv]
        print("$ gradcheck diff HEAD~1", *spec, *argv, flush=True)
        return subprocess.run(cmd, cwd=repo, check=False).returncode  # noqa: S603


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
