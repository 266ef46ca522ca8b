"""Run independent tasks in worker processes, each with one BLAS thread.

The verification report is a list of independent pieces of work (a layer's checks, one
model configuration, one training run...). On a machine with a few cores they run in
``jobs`` spawned processes; each worker limits its BLAS to one thread, so that the
workers do not oversubscribe the cores. Results come back as pickles of plain objects.
"""

from __future__ import annotations

import concurrent.futures as cf
import multiprocessing as mp
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

__all__ = ["Task", "run_tasks"]


@dataclass(frozen=True)
class Task:
    """``fn(*args)``, a label for the progress line and a cost estimate (seconds)."""

    label: str
    fn: Callable[..., Any]
    args: tuple[Any, ...] = field(default_factory=tuple)
    cost: float = 1.0


def _init_worker(threads: int) -> None:
    from ._threads import limit_blas_threads

    limit_blas_threads(threads)


def run_tasks(
    tasks: Sequence[Task], *, jobs: int, say: Callable[[str], None]
) -> list[Any]:
    """Run every task and return their results in the order of ``tasks``.

    ``jobs == 1`` runs them here, one after another (BLAS threads unchanged); more runs
    them in that many spawned processes with one BLAS thread each, the most costly
    first. An exception in a task is raised here, after the pool has stopped.
    """
    if jobs < 1:
        raise ValueError(f"jobs must be >= 1, got {jobs}")
    results: list[Any] = [None] * len(tasks)
    if jobs == 1:
        for k, t in enumerate(tasks):
            say(t.label)
            results[k] = t.fn(*t.args)
        return results
    order = sorted(range(len(tasks)), key=lambda k: -tasks[k].cost)
    ctx = mp.get_context("spawn")
    with cf.ProcessPoolExecutor(max_workers=jobs, mp_context=ctx, initializer=_init_worker,
                                initargs=(1,)) as pool:
        futures = {pool.submit(tasks[k].fn, *tasks[k].args): k for k in order}
        for done, fut in enumerate(cf.as_completed(futures), start=1):
            k = futures[fut]
            results[k] = fut.result()
            say(f"{tasks[k].label} ({done}/{len(tasks)} done)")
    return results
