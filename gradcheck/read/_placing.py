"""Placing the gradients a backward returned at the inputs they belong to: one array
for several inputs (the only float array's, the one not holding labels, the wrt
input's), several in an order the shapes settle, and the values that read as labels."""

from __future__ import annotations

import copy
import itertools
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from ._arg_names import target_named
from ._observe import positional_names
from ._protocol import ProtocolError

__all__ = ["Placing", "in_order", "label_like", "zero_one"]


def zero_one(x: np.ndarray) -> bool:
    """Values that read as labels of a loss: 0 and 1 only, not all 0 (one-hot rows, binary
    targets)."""
    return x.size > 0 and x.dtype.kind in "biuf" and bool(np.all((x == 0) | (x == 1))) \
        and bool(x.any())


def label_like(x: Any) -> bool:
    """Values that read as labels: whole numbers (class ids, one-hot rows, 0/1 targets);
    arrays of several shapes (a list of parameters) are none."""
    a = np.zeros(0) if isinstance(x, (list, tuple)) and len({np.shape(v) for v in x}) > 1 \
        else np.asarray(x)
    return a.size > 0 and a.dtype.kind in "biuf" and bool(np.all(a == np.round(a)))


def in_order(grads: Sequence[Any], inputs: list[Any], floating: list[int]) -> list[int] | None:
    """The one choice of float array inputs, in order, whose shapes the gradients have
    one by one (``dW1, db1, dW2, db2`` for ``X, y, W1, b1, W2, b2``): all but the first
    (the data); None if none or several fit, or another is left out (a forgotten dW1)."""
    arrays = [k for k in floating if isinstance(inputs[k], np.ndarray)]
    shapes = [np.shape(g) if isinstance(g, np.ndarray) else None for g in grads]
    if None in shapes or len(arrays) > 16 or len(grads) > len(arrays):
        return None
    fits = [list(c) for c in itertools.combinations(arrays, len(grads))
            if [np.shape(inputs[k]) for k in c] == shapes]
    if len(fits) != 1 or fits[0] != arrays[1:]:
        return None  # the one array left out is the first (the data), not a forgotten db2
    return fits[0]


class Placing:
    """The placing of a backward's gradients, for :class:`~._conventions.Conventions`
    (its inputs, their count, the float ones and the ``wrt`` ones)."""

    _n: int
    _inputs: list[Any]
    _floating: list[int]
    _wanted: list[int] | None

    _fwd: Callable[..., Any]

    def _note(self, text: str) -> None:
        raise NotImplementedError

    def _targets_named(self, pair: list[int]) -> tuple[int, int] | None:
        """``(prediction, targets)`` of two inputs when exactly one is named as a loss's
        targets (``y_true``, ``labels``); else None (the sign of a difference's gradient
        is all that tells them apart)."""
        names = positional_names(self._fwd) or []
        if len(names) < self._n:
            return None
        a, b = pair
        told = [k for k, o in ((a, b), (b, a)) if target_named(names[k], names[o])]
        return None if len(told) != 1 else (
            pair[1] if told[0] == pair[0] else pair[0], told[0])

    def _apart(self, a: int, b: int) -> bool:
        """Whether the forward's output moves with input ``a`` alone and not with inputs
        ``a`` and ``b`` moved together (an element-wise squared error of their
        difference)."""
        xs = self._inputs
        step = 1e-2 * (1.0 + np.abs(xs[a])) * np.random.default_rng(0).choice(
            [-1.0, 1.0], np.shape(xs[a]))

        def out(da: Any, db: Any) -> np.ndarray:
            args = copy.deepcopy(xs)
            args[a], args[b] = args[a] + da, args[b] + db
            y = self._fwd(*args)
            return np.asarray(y[0] if isinstance(y, tuple) else y, dtype=np.float64)

        try:
            here, both, alone = out(0, 0), out(step, step), out(step, 0)
            scale = max(1.0, float(np.max(np.abs(here))))
            return float(np.max(np.abs(both - here))) <= 1e-9 * scale < float(
                np.max(np.abs(alone - here)))
        except Exception:  # noqa: BLE001 - no evidence: no reading
            return False

    def _one_array(self, grads: Any) -> Any:
        """One array returned for several inputs: the wrt input's, the only float
        array's, or, of two, the second's when of its shape (the first the data); else an
        error."""
        n, wanted = self._n, self._wanted
        if wanted is not None and len(wanted) == 1:
            self._note(f"backward returned one array: read as the gradient of the wrt input "
                       f"{wanted[0]}")
            return self._spread([grads], wanted)
        arrays = [k for k in self._floating if isinstance(self._inputs[k], np.ndarray)]
        if wanted is None and len(self._floating) > 1 and len(arrays) == 1:
            self._note(f"backward returned one array: read as the gradient of input "
                       f"{arrays[0]}, the only float array (the float scalars are constants)")
            return self._spread([grads], arrays)
        if wanted is None and len(self._floating) == 1:
            self._note(f"backward returned one array: read as the gradient of input "
                       f"{self._floating[0]}, the only one holding a float array")
            return self._spread([grads], self._floating)
        same = [k for k in self._floating if np.shape(self._inputs[k]) == np.shape(grads)]
        soft = [k for k in same if not label_like(self._inputs[k])]
        if wanted is None and len(same) > 1 and len(soft) == 1:  # loss(logits, onehot)
            self._note(f"backward returned one array: read as the gradient of input {soft[0]}, "
                       "the only one of its shape not holding whole numbers (the targets)")
            return self._spread([grads], soft)
        shaped = in_order([grads], self._inputs, self._floating) if wanted is None else None
        if shaped is not None:  # conv_backward(x, k, dout) -> dk: the data left out alone
            self._note(f"backward returned one array for {n} inputs: read as the gradient of "
                       f"input {shaped[0]}, of its shape, the first (the data) a constant")
            return self._spread([grads], shaped)
        if wanted is None and len(same) == len(soft) == 2 and (
                pair := self._targets_named(soft)) and self._apart(*soft):
            a, b = pair  # (a: the prediction, b: the targets, by their names)
            self._note(f"backward returned one array for {n} inputs: read as the gradient of "
                       f"input {a}, the prediction; the output depends on the difference of "
                       f"it and input {b} only, whose name is a target's: a constant")
            return self._spread([grads], [a])
        raise ProtocolError("bad-protocol", f"backward returned one array for {n} inputs; "
                            "return one gradient per input (None for constants), or name "
                            "the input it belongs to with wrt=")

    def _spread(self, grads: Sequence[Any], wanted: list[int]) -> list[Any]:
        """``grads`` placed at the inputs ``wanted``; a ``bad-protocol`` when they have
        those inputs' shapes in another order (``(dgamma, dbeta, dx)`` for ``x, gamma,
        beta``): returned in another order, or each computed wrongly? Shapes cannot tell."""
        got = [np.shape(g) for g in grads if isinstance(g, np.ndarray)]
        want = [np.shape(self._inputs[k]) for k in wanted if -self._n <= k < self._n
                and isinstance(self._inputs[k], np.ndarray)]
        if len(got) == len(want) == len(grads) and got != want and sorted(got) == sorted(want):
            raise ProtocolError("bad-protocol", (
                f"backward returned gradients with the shapes of the inputs {wanted} in "
                f"another order (shapes {got} for inputs of shapes {want}): returned in "
                "another order, or each computed wrongly? Shapes cannot tell; return them "
                "in the inputs' order"))
        out: list[Any] = [None] * self._n
        for k, g in zip(wanted, grads, strict=True):
            if -self._n <= k < self._n:
                out[k] = g
        return out
