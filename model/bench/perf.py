"""Process-level tuning that the training loop and the benchmarks use."""

from __future__ import annotations

import ctypes
import ctypes.util
import sys

__all__ = ["tune_allocator"]

_M_TRIM_THRESHOLD = -1
_M_MMAP_THRESHOLD = -3
_done = False


def tune_allocator(threshold: int = 1 << 30) -> bool:
    """Keep freed array memory in the heap for reuse (glibc only).

    By default glibc serves large blocks (the activations here: megabytes each) with
    ``mmap`` and gives them back with ``munmap``, so every training step pays page
    faults for memory it had a moment ago; measured on the plan's config, float64, that
    is about 40% of a training step. Raising the mmap and trim thresholds lets
    the heap keep and reuse those pages, the way deep-learning frameworks keep a caching
    allocator. The price: the process does not return its peak memory to the system.

    Returns
    -------
    bool
        Whether the setting was applied (False off glibc).
    """
    global _done
    if _done:
        return True
    if not sys.platform.startswith("linux"):
        return False
    name = ctypes.util.find_library("c")
    if not name:
        return False
    try:
        libc = ctypes.CDLL(name)
        ok = libc.mallopt(_M_MMAP_THRESHOLD, threshold) == 1
        ok = libc.mallopt(_M_TRIM_THRESHOLD, threshold) == 1 and ok
    except (OSError, AttributeError):
        return False
    _done = ok
    return ok
