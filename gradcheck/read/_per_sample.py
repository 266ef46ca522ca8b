"""Per-sample gradients: a backward that stores, for a parameter of two or more axes,
one gradient per sample, ``(N, *W.shape)`` with ``N`` the batch (an einsum or a batched
``@`` of ``dout`` and the input, which the update then sums). The gradient is their sum
over the batch axis, read so with a note. A parameter of one axis is left out: ``db =
dout`` of shape ``(N, n)`` for a bias ``(n,)`` is the classic sum forgotten, and stays
the ``shape-mismatch`` it is.
"""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["per_sample", "per_sample_note", "summed_per_sample"]


def _batch(xs: list[Any]) -> int | None:
    """The first input's length along its first axis (None for no array input)."""
    first = xs[0] if xs else None
    return first.shape[0] if isinstance(first, np.ndarray) and first.ndim >= 1 else None


def per_sample(g: Any, shape: tuple[int, ...], xs: list[Any]) -> bool:
    """Whether ``g`` is one gradient per sample for an array of ``shape``."""
    n = _batch(xs)
    return (isinstance(g, np.ndarray) and g.dtype.kind == "f" and len(shape) >= 2 and n is
            not None and n > 1 and g.shape == (n, *shape))


def per_sample_note(name: str, g: np.ndarray) -> str:
    return (f"the gradient of {name} is stored per sample, shape {g.shape}: checked as "
            "its sum over the batch axis (the update sums it)")


def summed_per_sample(cands: dict[str, Any], arrays: dict[str, Any],
                      xs: list[Any]) -> dict[str, Any]:
    """``cands`` (stored arrays) with those that are one gradient per sample for one of
    ``arrays`` (by shape) summed over the batch axis, for matching gradients to arrays."""
    shapes = {np.shape(a) for a in arrays.values() if isinstance(a, np.ndarray)}
    return {k: v.sum(axis=0) if any(per_sample(v, s, xs) for s in shapes) else v
            for k, v in cands.items()}
