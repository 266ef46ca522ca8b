"""Hypothesis strategies for layer inputs: well-conditioned ones, and ones at kinks.

``layer_inputs`` draws finite arrays of moderate size, where finite differences are
well-conditioned; ``at_kinks`` draws arrays whose elements sit within a tiny distance of
a non-differentiable point (ReLU's 0, a clipping bound), where a naive checker cries
wolf. Both respect the dtype: float32 elements are drawn as float32 values.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal

import numpy as np
from hypothesis import strategies as st
from hypothesis.extra.numpy import array_shapes, arrays

__all__ = ["at_kinks", "layer_inputs", "shapes"]


def shapes(*, min_dims: int = 1, max_dims: int = 3, max_side: int = 5) -> st.SearchStrategy[
        tuple[int, ...]]:
    """Array shapes with every side in ``[1, max_side]``."""
    return array_shapes(min_dims=min_dims, max_dims=max_dims, min_side=1, max_side=max_side)


def layer_inputs(shape: tuple[int, ...] | st.SearchStrategy[tuple[int, ...]],
                 dtype: str = "float64", *, bound: float = 3.0) -> st.SearchStrategy[Any]:
    """Finite arrays with elements in ``[-bound, bound]`` (no NaN, no Inf)."""
    width: Literal[32, 64] = 32 if np.dtype(dtype) == np.float32 else 64
    return arrays(np.dtype(dtype), shape, elements=st.floats(
        -bound, bound, allow_nan=False, allow_infinity=False, width=width))


def at_kinks(shape: tuple[int, ...] | st.SearchStrategy[tuple[int, ...]],
             dtype: str = "float64", *, kinks: Sequence[float] = (0.0,),
             spread: float = 1e-7) -> st.SearchStrategy[Any]:
    """Arrays whose elements lie within ``spread`` of one of ``kinks``."""
    width: Literal[32, 64] = 32 if np.dtype(dtype) == np.float32 else 64
    offsets = st.floats(-spread, spread, allow_nan=False, width=width)
    elements = st.builds(lambda k, o: k + o, st.sampled_from(list(kinks)), offsets)
    return arrays(np.dtype(dtype), shape, elements=elements)
