"""NaN/Inf fuzzing of a subject: every floating input of every layer case, poisoned.

A NaN or an Inf in an input must end a check with a named status (``non-finite``, or
``error`` when the layer refuses the input with an exception of its own), never with a
crash of the checker and never with a pass. :func:`fuzz_subject` runs every layer case
of a subject in every dtype it lists; :func:`fuzz_layer_case` one case.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np

from .subject import LayerCase, Subject

__all__ = ["FuzzRow", "fuzz_layer_case", "fuzz_subject", "nothing_to_fuzz"]

POISONS = (np.nan, np.inf, -np.inf)
ACCEPTED = ("non-finite", "error")


@dataclass(frozen=True)
class FuzzRow:
    """One poisoned check: which case, input, element and value, and what it gave."""

    case: str
    dtype: str
    input: int | str
    index: tuple[int, ...]
    value: float
    status: str
    passed: bool
    seed: int

    @property
    def ok(self) -> bool:
        """A named status, not a pass."""
        return not self.passed and self.status in ACCEPTED

    def describe(self) -> str:
        return (f"{self.case} [{self.dtype}]: input {self.input} set to {self.value} at "
                f"{self.index} gave status {self.status!r} (passed={self.passed}); expected "
                f"one of {ACCEPTED}; seed={self.seed}")


def _poisoned(case: LayerCase, dtype: str, seed: int
              ) -> Iterator[tuple[int | str, tuple[int, ...], float, Any]]:
    """Each floating array input (of a list, tuple or dict), with one element poisoned."""
    rng = np.random.default_rng(seed)
    inputs = case.inputs(np.random.default_rng(seed), np.dtype(dtype))
    if isinstance(inputs, dict):
        keys: list[Any] = list(inputs)
    elif isinstance(inputs, (list, tuple)):
        keys = list(range(len(inputs)))
    else:
        return
    for k in keys:
        arr = np.asarray(inputs[k])
        if arr.dtype.kind != "f" or arr.size == 0:
            continue
        flat = int(rng.integers(arr.size))
        index = tuple(int(i) for i in np.unravel_index(flat, arr.shape))
        for value in POISONS:
            bad = arr.copy()
            bad[index] = value
            if isinstance(inputs, dict):
                yield k, index, float(value), {**inputs, k: bad}
            else:
                yield k, index, float(value), [bad if j == k else v
                                               for j, v in enumerate(inputs)]


def fuzz_layer_case(case: LayerCase, dtype: str, seed: int = 0) -> list[FuzzRow]:
    """Poison one element of each floating input of ``case`` with NaN, Inf and -Inf.

    Returns
    -------
    list of FuzzRow
        Three rows per floating array input (list, tuple or dict of inputs); empty when
        the case has none (nothing to fuzz: callers say so, see :func:`nothing_to_fuzz`).
    """
    from .check._recording import purpose

    with purpose("fuzz"):
        return [_fuzz_one(case, dtype, seed, k, index, value, inputs)
                for k, index, value, inputs in _poisoned(case, dtype, seed)]


def nothing_to_fuzz(case: LayerCase, dtype: str) -> str:
    """The reason given when :func:`fuzz_layer_case` finds no input to poison."""
    return (f"{case.name} [{dtype}]: no floating-point array among its inputs, nothing to "
            "poison with NaN/Inf")


def _fuzz_one(case: LayerCase, dtype: str, seed: int, k: int | str, index: tuple[int, ...],
              value: float, inputs: Any) -> FuzzRow:
    from .check._core import check_vjp
    from .check._layer import check_layer

    opts = {"seed": seed, "mode": "directional", "directions": 1, **case.options}
    if case.layer is not None:
        layer = case.layer(np.random.default_rng(seed), np.dtype(dtype))
        res = check_layer(layer, *inputs, forward=case.forward, backward=case.backward,
                          wrt=case.wrt, **opts)
    else:
        res = check_vjp(case.fwd, case.bwd, inputs, wrt=case.wrt, **opts)  # type: ignore[arg-type]
    return FuzzRow(case.name, dtype, k, index, value, res.status, res.passed, seed)


def fuzz_subject(subject: Subject, seed: int = 0) -> list[FuzzRow]:
    """:func:`fuzz_layer_case` over every layer case and dtype of ``subject``."""
    return [row for case in subject.layers for dtype in case.dtypes
            for row in fuzz_layer_case(case, dtype, seed)]
