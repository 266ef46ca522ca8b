"""Find the first operation that produced a non-finite value.

The model checks its output with one ``isfinite`` pass; only when it fails does it run
its forward once more with a probe (:func:`raise_at_first_non_finite`) that sees every
parameter and intermediate in order and names where NaN/Inf first appeared, like
PyTorch's anomaly detection but at no cost on the normal path. The forward is the
model's own (``probe=`` of :func:`gradcheck_model.block.block_forward` and of the transformer's
forward); nothing here repeats it, and this module imports no part of the model.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

__all__ = ["NonFiniteValueError", "all_finite", "locate_forward", "raise_at_first_non_finite"]


class NonFiniteValueError(FloatingPointError):
    """NaN/Inf appeared; ``layer`` and ``op`` say where it appeared first.

    Attributes
    ----------
    layer : str
        ``"embedding"``, ``"blocks.1"``, ``"ln_f"``, ``"head"``, ``"loss"``, or a
        parameter name.
    op : str
        The operation, for example ``"attention softmax"`` or ``"parameter"``.
    where : str
        ``"forward"`` or ``"backward"``.
    """

    def __init__(self, layer: str, op: str, where: str, detail: str = "") -> None:
        self.layer, self.op, self.where = layer, op, where
        msg = f"non-finite value (NaN/Inf) in the {where} pass: first at {layer}, {op}"
        super().__init__(msg + (f" ({detail})" if detail else ""))


def all_finite(*arrays: Any) -> bool:
    """Whether every array is free of NaN and Inf."""
    return all(bool(np.isfinite(a).all()) for a in arrays)


def _count(a: np.ndarray) -> str:
    bad = int(a.size - np.count_nonzero(np.isfinite(a)))
    return f"{bad} of {a.size} values"


def raise_at_first_non_finite(layer: str, op: str, value: np.ndarray) -> None:
    """A forward probe (see :data:`gradcheck_model.block.Probe`): raise at the first NaN/Inf."""
    if not all_finite(value):
        raise NonFiniteValueError(layer, op, "forward", _count(np.asarray(value)))


def locate_forward(run: Callable[[Callable[[str, str, np.ndarray], None]], Any]
                   ) -> NonFiniteValueError:
    """Run the model's own forward once more, ``run(probe)``, with a probe that stops
    at the first non-finite parameter or intermediate; return the error naming it."""
    with np.errstate(all="ignore"):
        try:
            run(raise_at_first_non_finite)
        except NonFiniteValueError as exc:
            return exc
    return NonFiniteValueError("model", "unknown operation", "forward")
