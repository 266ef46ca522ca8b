"""The one environment probe: versions, CPU, BLAS and its core type and threads, commit."""

from __future__ import annotations

import os
import platform
import subprocess  # noqa: S404 - only to ask git for the commit, fixed arguments
from pathlib import Path

__all__ = ["cpu_model", "environment", "git_commit", "versions"]


def git_commit(where: Path | None = None) -> str:
    """The commit checked out in the git working tree holding ``where`` (a file or a
    folder; default: the current folder): the code under test, not gradcheck's own.
    ``"none (not in a git repository)"`` outside one, ``"unknown"`` without git."""
    folder = Path(where or Path.cwd()).resolve()
    folder = folder if folder.is_dir() else folder.parent
    try:
        out = subprocess.run(  # noqa: S603
            ["git", "rev-parse", "HEAD"],  # noqa: S607
            capture_output=True, text=True, timeout=5, check=False, cwd=folder,
        )
    except (OSError, subprocess.SubprocessError):
        return "unknown"
    if out.returncode != 0:
        return "none (not in a git repository)"
    return out.stdout.strip() or "unknown"


def cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def environment() -> dict[str, str]:
    """Versions and machine facts for the report."""
    import numpy as np
    import scipy

    from .._version import __version__
    from ..run._threads import blas_info, blas_summary

    blas = blas_info()
    return {
        "gradcheck": __version__,
        "python": platform.python_version(),
        "numpy": np.__version__,
        "blas": blas_summary(),
        # one name per core type (NumPy's and SciPy's OpenBLAS usually agree)
        "blas_core_type": ", ".join(dict.fromkeys(d["core_type"] for d in blas)) or "unknown",
        "blas_threads": ", ".join(str(d["threads"]) for d in blas) or "unknown",
        "scipy": scipy.__version__,
        "platform": platform.platform(),
        "cpu": cpu_model(),
        "cores": str(os.cpu_count()),
        "git_commit": git_commit(),
    }


def versions() -> dict[str, str]:
    """The library versions a snapshot records."""
    env = environment()
    return {k: env[k] for k in ("gradcheck", "numpy", "scipy", "python")}
