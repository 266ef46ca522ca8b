"""Inputs a forward rounds to float32 before using them (``x = np.asarray(x, np.float32)``
in a float64 layer): its output moves in jumps of float32's size, so finite differences
at float64's steps see a staircase. Such an input is differenced at float32's steps and
tolerance, as an input of a float32 output is.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from ._leaves import _Inputs, _Outputs, _split_forward
from ._result import InputResult

__all__ = ["quantized_inputs", "requantized"]

_TINY, _SMALL = 1e-11, 1e-4  # relative moves: below float32's rounding, and well above


def requantized(fwd: Callable[..., Any], prep: _Inputs, outputs: _Outputs,
                results: list[InputResult], called: Any) -> dict[int, float]:
    """After a first comparison: the float64 inputs whose check skipped kinks or failed
    and that the forward rounds to float32 (:func:`quantized_inputs`), set in
    ``called``'s ``arith`` and ``computed`` for the comparison to run again at float32's
    steps; empty (nothing to run again) otherwise. A check that passed with no kink
    costs no extra forward."""
    doubt = [i for i in prep.diff if i not in called.arith and i not in called.rounded and (
        results[i].kinks or not results[i].passed)]
    found = quantized_inputs(fwd, prep, outputs, called.notes, doubt) if doubt else {}
    called.rounded.update(found)
    called.computed.update(dict.fromkeys(found, "float32"))
    # the rounded values enter the other gradients (dW = X.T @ dZ of a forward using X
    # rounded): those failing are known to float32's rounding only
    others = [i for i in doubt if i not in found and called.computed.get(i) == "float64"]
    if found and others:
        called.computed.update(dict.fromkeys(others, "float32"))
        called.notes.append(
            f"the gradients of {', '.join(prep.tree.names[i] or 'x0' for i in others)} take "
            "the rounded input's values: compared at float32's tolerance")
    return found


def quantized_inputs(fwd: Callable[..., Any], prep: _Inputs, outputs: _Outputs,
                     notes: list[str], only: list[int]) -> dict[int, float]:
    """``leaf -> scale`` for each float64 input whose forward output does not move in
    proportion to a tiny move of it (not at all, or by a jump far larger than the move:
    rounded to float32 on the way in), while a small move does move it. ``scale`` (at
    most 1) is the size of what a move of it changes against the output's own size: its
    rounding's noise is float32's of that part (a float64 offset adds none)."""
    found = {}
    for i in only:
        x = prep.leaves[i]
        if not isinstance(x, np.ndarray) or x.dtype != np.float64 or x.size == 0:
            continue
        direction = np.random.default_rng(0).choice([-1.0, 1.0], x.shape) * (1.0 + np.abs(x))
        try:
            base, tiny, small = (_output(fwd, prep, outputs, i, s * direction)
                                 for s in (0.0, _TINY, _SMALL))
        except Exception:  # noqa: BLE001, S112 - no evidence: the check itself reports it
            continue
        big = float(np.max(np.abs(small - base), initial=0.0))
        if big * _TINY / _SMALL < 1e3 * np.finfo(np.float64).eps * float(np.max(
                np.abs(base), initial=0.0)):
            continue  # a tiny move would be lost in the output's own rounding anyway
        ratio = float(np.max(np.abs(tiny - base), initial=0.0)) / big if big > 0 else 1.0
        if big > 0 and (ratio == 0.0 or ratio > 1e3 * _TINY / _SMALL):
            moved = float(np.sqrt(np.mean((small - base) ** 2))) / _SMALL
            found[i] = min(1.0, moved / max(float(np.sqrt(np.mean(base ** 2))), 1e-300))
    if found:
        notes.append(f"the forward rounds {', '.join(prep.tree.names[i] for i in found)} "
                     "to float32 before using it (its output moves in float32's steps): "
                     "compared at float32's steps and tolerance")
    return found


def _output(fwd: Callable[..., Any], prep: _Inputs, outputs: _Outputs, i: int,
            move: np.ndarray) -> np.ndarray:
    """The forward's flat output with leaf ``i`` moved by ``move`` (put back after)."""
    saved = prep.leaves[i].copy()
    try:
        prep.leaves[i] += move
        y, _ = _split_forward(prep.call(fwd, "forward (at a perturbed input)"))
        return np.asarray(outputs.flat(y), dtype=np.float64)
    finally:
        np.copyto(prep.leaves[i], saved)
