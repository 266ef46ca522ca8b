"""Performance budgets, measured as ratios in one run: the generic measurements.

Every timing budget measures A and B interleaved (A B A B ...) after a warm-up and
takes the median of the per-pair ratios A/B. The noise is the standard error of that
median, ``1.2533 * 1.4826 * MAD / sqrt(pairs)``; a budget *fails* only when
``median - 3 * se > threshold`` (broken beyond the noise measured in the same run).
Memory is peak traced allocations from :mod:`tracemalloc` (what NumPy and Python
allocate through the tracked allocators; not RSS, not BLAS scratch buffers).

Every budget is measured with the BLAS limited to a stated number of threads
(:data:`BUDGET_THREADS`, recorded in each result), so that a figure says what it was
measured with.

Thresholds live in ``budgets.toml`` next to this module. The measurements of a subject
(the reference model's: ``model.measure``) use :func:`ratio_interleaved`,
:func:`peak_memory` and :func:`gate` and return :class:`BudgetResult` rows.
"""

from __future__ import annotations

import gc
import math
import statistics
import time
import tomllib
import tracemalloc
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from importlib import resources
from typing import Any

from ._threads import blas_summary, limit_blas_threads

__all__ = [
    "BUDGET_THREADS",
    "BudgetResult",
    "blas_summary",
    "gate",
    "limit_blas_threads",
    "load_budgets",
    "peak_memory",
    "ratio_interleaved",
]

#: BLAS threads every budget is measured with.
BUDGET_THREADS = 1


def load_budgets() -> dict[str, dict[str, Any]]:
    """The budgets table: name -> {criterion, title, threshold}."""
    text = resources.files("gradcheck").joinpath("budgets.toml").read_text(encoding="utf-8")
    return tomllib.loads(text)


@dataclass
class BudgetResult:
    """One budget's figure against its threshold."""

    name: str
    criterion: int
    title: str
    config: str
    dtype: str
    figure: float
    threshold: float
    noise: float
    passed: bool
    pairs: int = 0
    kind: str = "ratio"
    details: dict[str, Any] = field(default_factory=dict)

    @property
    def margin(self) -> float:
        """How far below the threshold the figure is (negative: over budget)."""
        return self.threshold - self.figure

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["margin"] = self.margin
        return d


def ratio_interleaved(
    a: Callable[[], Any], b: Callable[[], Any], *, pairs: int, warmup: int = 2
) -> tuple[float, float, list[float]]:
    """Time ``a`` and ``b`` in turn (A B A B ...) and return the median of the per-pair
    ratios ``time(a) / time(b)``, its standard error and the ratios.

    Parameters
    ----------
    a, b : callable
        The two things to compare; each call is timed with ``time.perf_counter``.
    pairs : int
        Timed pairs, after ``warmup`` untimed ones.

    Notes
    -----
    Interleaving puts both sides under the same machine state (frequency, other load),
    so the ratio holds across machines where absolute times do not. The standard error
    of the median is ``1.2533 * 1.4826 * MAD / sqrt(pairs)``.
    """
    for _ in range(warmup):
        a()
        b()
    ratios = []
    for _ in range(pairs):
        t0 = time.perf_counter()
        a()
        t1 = time.perf_counter()
        b()
        t2 = time.perf_counter()
        ratios.append((t1 - t0) / max(t2 - t1, 1e-12))
    med = statistics.median(ratios)
    mad = statistics.median(abs(r - med) for r in ratios)
    se = 1.2533 * 1.4826 * mad / math.sqrt(len(ratios))
    return med, se, ratios


def gate(median: float, se: float, threshold: float) -> bool:
    """Within budget unless the median exceeds ``threshold`` by more than 3 standard
    errors."""
    return not (median - 3.0 * se > threshold)


def peak_memory(fn: Callable[[], Any]) -> tuple[int, Any]:
    """Peak traced bytes above the baseline while ``fn`` runs (its result kept)."""
    gc.collect()
    tracemalloc.reset_peak()
    base = tracemalloc.get_traced_memory()[0]
    out = fn()
    peak = tracemalloc.get_traced_memory()[1] - base
    return peak, out
