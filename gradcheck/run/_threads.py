"""BLAS thread pools: what the process runs, and how to keep it to a number of threads.

Several processes on a few cores (pytest-xdist workers, the report's workers, a budget
beside another) each start one OpenBLAS thread per core by default, and the threads then
fight over the cores: on two cores two worker processes ran three times slower than with
one BLAS thread each. threadpoolctl finds the BLAS libraries loaded in the process
(NumPy's, SciPy's) and sets their thread count at run time.
"""

from __future__ import annotations

import os
from typing import Any

__all__ = ["blas_info", "blas_summary", "limit_blas_threads"]


def _load_numpy() -> None:
    # threadpoolctl acts on the libraries already loaded: load NumPy's BLAS first.
    import numpy  # noqa: F401


def limit_blas_threads(threads: int) -> Any:
    """Limit every loaded BLAS library to ``threads`` threads.

    Returns the :class:`threadpoolctl.threadpool_limits` object; call its
    ``restore_original_limits()`` (or use it as a context manager) to undo.
    ``OPENBLAS_NUM_THREADS`` and friends are set too, for processes started later.
    """
    if isinstance(threads, bool) or not isinstance(threads, int) or threads < 1:
        raise ValueError(f"threads must be a positive integer, got {threads!r}")
    from threadpoolctl import threadpool_limits

    for var in ("OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "OMP_NUM_THREADS"):
        os.environ[var] = str(threads)
    _load_numpy()
    return threadpool_limits(limits=threads, user_api="blas")


def blas_info() -> list[dict[str, Any]]:
    """The BLAS libraries of this process: library, version, core type, threads."""
    _load_numpy()
    from threadpoolctl import threadpool_info

    out = []
    for d in threadpool_info():
        if d.get("user_api") != "blas":
            continue
        out.append({
            "library": str(d.get("internal_api", "?")),
            "version": str(d.get("version", "?")),
            # OpenBLAS: the kernel family it chose for this CPU (or OPENBLAS_CORETYPE)
            "core_type": str(d.get("architecture") or "n/a"),
            "threads": int(d.get("num_threads", 0)),
        })
    return out


def blas_summary() -> str:
    """One line, for example ``openblas 0.3.31 (core type Haswell, 1 thread)``."""
    parts = []
    for d in blas_info():
        n = d["threads"]
        parts.append(f"{d['library']} {d['version']} (core type {d['core_type']}, "
                     f"{n} thread{'s' if n != 1 else ''})")
    return "; ".join(parts) or "unknown"
