"""Subjects written to misbehave, for suites/test_faults.py (and ``gradcheck report``).

``SUBJECT`` has a healthy layer case and one case per fault a user's code can commit:
a segfault in C code reached through ctypes, a forward that never returns, a forward
that raises, a layer object that breaks the naming conventions
(``LayerConventionError``), ``os._exit`` and a real ``MemoryError``. Each faulty case is
float32 only, so that the generated tests' float64 property test does not meet them.
It also declares one timed budget (criterion 6), so that a report of it shows how a
budget reads on a busy machine. ``WRONG`` has a wrong bias gradient and nothing else.
``HANG`` has only the hanging case and writes the pid of the process running it to
``$GRADCHECK_HANG_PIDFILE``.

``SPAWNING`` starts processes of its own in a case and in its budgets (as a user's
multiprocessing pool or the PyTorch yardstick does); ``BROKEN_PHASES`` has a healthy
case, budgets that raise and a snapshot case that raises: faults of the phases after
the cases.
"""

from __future__ import annotations

import ctypes
import os
import time
from typing import Any

import numpy as np

from gradcheck import LayerCase, Subject
from gradcheck.report.budgets import BudgetResult, judge, time_pairs

F32 = ("float32",)


def fwd(x: np.ndarray, W: np.ndarray) -> tuple[np.ndarray, Any]:
    return x @ W, (x, W)


def bwd(dy: np.ndarray, cache: Any) -> tuple[np.ndarray, np.ndarray]:
    x, W = cache
    return dy @ W.T, x.T @ dy


def inputs(rng: np.random.Generator, dt: np.dtype) -> list[np.ndarray]:
    return [rng.standard_normal((3, 4)).astype(dt), rng.standard_normal((4, 2)).astype(dt)]


def segfault_fwd(x: np.ndarray, W: np.ndarray) -> Any:
    ctypes.string_at(0)  # reads address 0 in C: SIGSEGV
    return fwd(x, W)


def hang_fwd(x: np.ndarray, W: np.ndarray) -> Any:
    pidfile = os.environ.get("GRADCHECK_HANG_PIDFILE")
    if pidfile:
        with open(pidfile, "w") as fh:
            fh.write(str(os.getpid()))
    time.sleep(3600)
    return fwd(x, W)


def raising_fwd(x: np.ndarray, W: np.ndarray) -> Any:
    raise RuntimeError("this forward is broken on purpose")


def exiting_fwd(x: np.ndarray, W: np.ndarray) -> Any:
    os._exit(3)


def hungry_fwd(x: np.ndarray, W: np.ndarray) -> Any:
    big = np.empty(2**62, dtype=np.uint8)  # MemoryError: no machine has 4 EiB
    return fwd(x + big[:1], W)


class NoGradients:
    """A layer with a weight but no gradient by any known name: LayerConventionError."""

    def __init__(self) -> None:
        self.W = np.ones((4, 2), dtype=np.float32)

    def forward(self, x: np.ndarray) -> np.ndarray:
        return x @ self.W

    def backward(self, dout: np.ndarray) -> np.ndarray:
        return dout @ self.W.T


def _spin(n: int) -> None:
    x = np.ones(100)
    for _ in range(n):
        x = np.sqrt(x * x + 1.0)


#: Its budget table: one entry, gating criterion 6.
TABLE = {"backward_cost": {"criterion": 6, "title": "twice some work / once", "threshold": 2.0}}


def budgets(level: str) -> list[BudgetResult]:
    """A timed budget: twice some work over once (criterion 6 of its table)."""
    timing = time_pairs(lambda: _spin(600), lambda: _spin(300), pairs=7, warmup=1)
    return [judge("backward_cost", TABLE, "spin", "float64", timing)]


_STARTED_IN: set[int] = set()


def start_a_process() -> None:
    """Start and join a child process once per process, as a multiprocessing pool or the
    PyTorch yardstick does (a daemonic process may not)."""
    import multiprocessing as mp

    if os.getpid() in _STARTED_IN:
        return
    p = mp.get_context("fork").Process(target=int)
    p.start()
    p.join()
    if p.exitcode != 0:
        raise RuntimeError(f"the child process exited with {p.exitcode}")
    _STARTED_IN.add(os.getpid())


def spawning_fwd(x: np.ndarray, W: np.ndarray) -> Any:
    start_a_process()
    return fwd(x, W)


def spawning_budgets(level: str) -> list[BudgetResult]:
    """Budgets that start a process; their verdict is not what the suite tests (timing
    never decides a functional test), so the threshold is far from the figure (~2)."""
    start_a_process()
    timing = time_pairs(lambda: _spin(600), lambda: _spin(300), pairs=7, warmup=1)
    return [judge("backward_cost", TABLE, "spin", "float64", timing, threshold=50.0)]


def broken_budgets(level: str) -> list[BudgetResult]:
    raise RuntimeError("these budgets are broken on purpose")


def broken_snapshot() -> tuple[dict[str, np.ndarray], dict[str, Any]]:
    raise ValueError("this snapshot case is broken on purpose")


FAULTS = {"segfault": segfault_fwd, "hang": hang_fwd, "raises": raising_fwd,
          "exits": exiting_fwd, "memory": hungry_fwd}

SUBJECT = Subject(
    name="faulty layers",
    layers=[LayerCase("healthy", inputs=inputs, fwd=fwd, bwd=bwd)]
    + [LayerCase(name, inputs=inputs, fwd=f, bwd=bwd, dtypes=F32) for name, f in FAULTS.items()]
    + [LayerCase("convention", inputs=lambda rng, dt: [rng.standard_normal((3, 4)).astype(dt)],
                 layer=lambda rng, dt: NoGradients(), dtypes=F32)],
    budgets=budgets,
)

HANG = Subject(name="a hanging layer",
               layers=[LayerCase("hang", inputs=inputs, fwd=hang_fwd, bwd=bwd, dtypes=F32)])

SPAWNING = Subject(
    name="a layer and budgets that start processes",
    layers=[LayerCase("spawning", inputs=inputs, fwd=spawning_fwd, bwd=bwd)],
    budgets=spawning_budgets,
    # declared so that a report reads the test run's results (never run by the suites)
    test_commands=[["{python}", "-m", "pytest", "suites/test_faults.py"]],
)

BROKEN_PHASES = Subject(
    name="budgets and a snapshot case that raise",
    layers=[LayerCase("healthy", inputs=inputs, fwd=fwd, bwd=bwd)],
    budgets=broken_budgets,
    snapshot_cases={"broken": broken_snapshot},
)


def linear_forward(x: np.ndarray, W: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, Any]:
    return x @ W + b, (x, W)


def linear_backward(dy: np.ndarray, cache: Any) -> tuple[np.ndarray, ...]:
    x, W = cache
    return dy @ W.T, x.T @ dy, dy.sum(axis=0)


def linear_backward_db_doubled(dy: np.ndarray, cache: Any) -> tuple[np.ndarray, ...]:
    dx, dW, db = linear_backward(dy, cache)
    return dx, dW, 2 * db  # the bug: a factor of 2 in the bias gradient


def linear_inputs(rng: np.random.Generator, dt: np.dtype) -> list[np.ndarray]:
    return [rng.standard_normal((4, 3)).astype(dt), rng.standard_normal((3, 2)).astype(dt),
            rng.standard_normal(2).astype(dt)]


#: A wrong backward, nothing else: a correct linear layer and one whose bias gradient is
#: doubled (float64 only), for the FAIL report a user sees (suites/test_report.py).
WRONG = Subject(name="a wrong bias gradient", layers=[
    LayerCase("linear", linear_inputs, linear_forward, linear_backward, dtypes=("float64",)),
    LayerCase("linear (db doubled)", linear_inputs, linear_forward, linear_backward_db_doubled,
              dtypes=("float64",)),
])
