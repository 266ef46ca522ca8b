"""Performance budgets, measured as ratios in one run: the generic measurements.

Every timing budget measures A and B interleaved (A B A B ...) after a warm-up and
takes the median of the per-pair ratios A/B. Each side is timed on two clocks: the CPU
time of the measuring thread (:func:`time.thread_time`; with one BLAS thread the work
runs on that thread, and other processes do not move it) and the wall time
(:func:`time.perf_counter`) beside it. The figure is the CPU-time ratio. The noise is
the standard error of its median, ``1.2533 * 1.4826 * MAD / sqrt(pairs)``; a budget
*fails* only when ``median - 3 * se > threshold`` (broken beyond the noise measured in
the same run) on a machine that let the thread run. When the two clocks disagree (the
thread had the core less than 90% of the time it ran, or the wall-time ratio differs
from the CPU-time one beyond their noise), the machine was busy: a figure over its
threshold is then "not measured: machine busy (N% of a core)", never a failure.
Memory is peak traced allocations from :mod:`tracemalloc` (what NumPy and Python
allocate through the tracked allocators; not RSS, not BLAS scratch buffers).

Every budget is measured with the BLAS limited to a stated number of threads
(:data:`BUDGET_THREADS`, recorded in each result), so that a figure says what it was
measured with, and names its clock (:data:`CLOCK`).

Thresholds live in the subject's own budget table (a TOML file, ``Subject.budget_table``:
name -> ``criterion``, ``title``, ``threshold``), read with :func:`load_budgets`. The
measurements of a subject use :func:`time_pairs` (or :func:`ratio_interleaved`),
:func:`judge`, :func:`peak_memory` and :func:`gate` and return :class:`BudgetResult`
rows; a row's ``criterion`` (5 to 9) says which criterion of the report it gates.
"""

from __future__ import annotations

import gc
import math
import os
import statistics
import time
import tomllib
import tracemalloc
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from importlib.resources.abc import Traversable
from pathlib import Path
from typing import Any

from ..run._threads import blas_summary, limit_blas_threads

__all__ = [
    "BUDGET_THREADS",
    "BUSY_SHARE",
    "CLOCK",
    "BudgetResult",
    "Timing",
    "blas_summary",
    "gate",
    "judge",
    "limit_blas_threads",
    "load_budgets",
    "peak_memory",
    "ratio_interleaved",
    "time_pairs",
]

#: BLAS threads every budget is measured with.
BUDGET_THREADS = 1
#: The clock of every timing budget.
CLOCK = ("CPU time of the measuring thread (time.thread_time), one BLAS thread; wall time "
         "(time.perf_counter) beside it to see a busy machine")
#: Below this share of a core (CPU time / wall time of the timed calls), the machine was
#: busy: other processes kept the measuring thread waiting.
BUSY_SHARE = 0.9
#: Budget statuses: ``pass``, ``fail``, ``not measured`` (machine busy), ``figure``.
STATUSES = ("pass", "fail", "not measured", "figure")


def load_budgets(table: str | os.PathLike[str] | Traversable) -> dict[str, dict[str, Any]]:
    """A subject's budget table: name -> {criterion, title, threshold, ...}.

    ``table`` is the path of the TOML file (or a :mod:`importlib.resources` file of the
    subject's package). Raises :class:`ValueError` naming the file and the entry when an
    entry lacks an integer ``criterion``, a ``title`` or a positive ``threshold``.
    """
    path = table if isinstance(table, Traversable) else Path(table)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ValueError(f"budget table {table}: cannot be read ({exc})") from None
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ValueError(f"budget table {table}: not valid TOML ({exc})") from None
    for name, entry in data.items():
        ok = (isinstance(entry, dict) and isinstance(entry.get("criterion"), int)
              and isinstance(entry.get("title"), str)
              and isinstance(entry.get("threshold"), (int, float)) and entry["threshold"] > 0)
        if not ok:
            raise ValueError(f"budget table {table}: [{name}] needs an integer criterion, a "
                             "title and a positive threshold")
    return data


@dataclass
class BudgetResult:
    """One budget's figure against its threshold.

    ``status`` is ``pass``, ``fail``, ``not measured`` (over the threshold while the
    machine was busy: the figure cannot be trusted, ``note`` says why) or ``figure``
    (no gate); by default it follows ``passed`` and ``kind``. ``clock`` names what
    timed it (empty for memory).
    """

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
    status: str = ""
    clock: str = ""
    note: str = ""

    def __post_init__(self) -> None:
        if not self.status:
            self.status = "figure" if self.kind == "figure" else (
                "pass" if self.passed else "fail")
        if self.status not in STATUSES:
            raise ValueError(f"BudgetResult.status must be one of {STATUSES}, got "
                             f"{self.status!r}")
        if not self.clock and self.kind != "memory":
            self.clock = CLOCK

    @property
    def margin(self) -> float:
        """How far below the threshold the figure is (negative: over budget)."""
        return self.threshold - self.figure

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["margin"] = self.margin
        return d


def _median_se(values: list[float]) -> tuple[float, float]:
    med = statistics.median(values)
    mad = statistics.median(abs(v - med) for v in values)
    return med, 1.2533 * 1.4826 * mad / math.sqrt(len(values))


@dataclass(frozen=True)
class Timing:
    """A ratio A/B timed side by side on two clocks.

    ``cpu`` and ``wall`` are the medians of the per-pair ratios of thread CPU time and
    of wall time, ``cpu_se``/``wall_se`` their standard errors, ``share`` the median
    share of a core the measuring thread had while timed (CPU time / wall time).
    """

    cpu: float
    cpu_se: float
    wall: float
    wall_se: float
    share: float
    pairs: int
    ratios: list[float]

    @classmethod
    def of(cls, cpu_a: list[float], cpu_b: list[float], wall_a: list[float],
           wall_b: list[float]) -> Timing:
        """From per-call times of each side (same length, paired in order)."""
        cr = [a / max(b, 1e-12) for a, b in zip(cpu_a, cpu_b, strict=True)]
        wr = [a / max(b, 1e-12) for a, b in zip(wall_a, wall_b, strict=True)]
        shares = [c / max(w, 1e-12) for c, w in zip(cpu_a + cpu_b, wall_a + wall_b,
                                                     strict=True)]
        cpu, cpu_se = _median_se(cr)
        wall, wall_se = _median_se(wr)
        return cls(cpu, cpu_se, wall, wall_se, statistics.median(shares), len(cr), cr)

    @property
    def busy(self) -> bool:
        """The clocks disagree beyond the noise: other processes took the core."""
        apart = abs(self.wall - self.cpu) > 3 * math.hypot(self.cpu_se, self.wall_se) \
            + 0.05 * abs(self.cpu)
        return self.share < BUSY_SHARE or apart

    def details(self) -> dict[str, Any]:
        return {"clock": CLOCK, "cpu_ratio": self.cpu, "wall_ratio": self.wall,
                "wall_se": self.wall_se, "core_share": self.share, "busy": self.busy}


def time_pairs(a: Callable[[], Any], b: Callable[[], Any], *, pairs: int,
               warmup: int = 2) -> Timing:
    """Time ``a`` and ``b`` in turn (A B A B ...) after ``warmup`` untimed pairs, on the
    thread's CPU clock and the wall clock.

    Notes
    -----
    Interleaving puts both sides under the same machine state (frequency, caches), so
    the ratio holds across machines where absolute times do not; the thread's CPU time
    leaves out the time other processes held the core.
    """
    for _ in range(warmup):
        a()
        b()
    cpu: tuple[list[float], list[float]] = ([], [])
    wall: tuple[list[float], list[float]] = ([], [])
    for _ in range(pairs):
        for k, fn in enumerate((a, b)):
            c0, w0 = time.thread_time(), time.perf_counter()
            fn()
            wall[k].append(time.perf_counter() - w0)
            cpu[k].append(time.thread_time() - c0)
    return Timing.of(cpu[0], cpu[1], wall[0], wall[1])


def ratio_interleaved(
    a: Callable[[], Any], b: Callable[[], Any], *, pairs: int, warmup: int = 2
) -> tuple[float, float, list[float]]:
    """:func:`time_pairs` as ``(median CPU-time ratio, its standard error, ratios)``."""
    t = time_pairs(a, b, pairs=pairs, warmup=warmup)
    return t.cpu, t.cpu_se, t.ratios


def judge(name: str, table: dict[str, Any], config: str, dtype: str, timing: Timing, *,
          threshold: float | None = None, ok: bool = True, scale: float = 1.0,
          details: dict[str, Any] | None = None) -> BudgetResult:
    """The verdict of a timed budget: ``pass`` within the threshold (and ``ok``: the
    work timed was correct), ``not measured`` over it on a busy machine, else ``fail``.

    The figure is the CPU-time ratio times ``scale`` (a ratio per token, per step: both
    clocks' ratios and the noise are scaled alike); ``threshold`` replaces the table's.
    """
    t = table[name]
    thr = float(t["threshold"] if threshold is None else threshold)
    fig, se = timing.cpu * scale, timing.cpu_se * scale
    within = gate(fig, se, thr)
    status, note = "pass", ""
    if not ok:
        status = "fail"
    elif not within and timing.busy:
        status, note = "not measured", (f"not measured: machine busy "
                                        f"({100 * timing.share:.0f}% of a core)")
    elif not within:
        status = "fail"
    clocks = timing.details()
    clocks.update(wall_ratio=timing.wall * scale, wall_se=timing.wall_se * scale)
    return BudgetResult(name, t["criterion"], t["title"], config, dtype, fig, thr, se,
                        status == "pass", timing.pairs, details={**clocks, **(details or {})},
                        status=status, note=note)


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
