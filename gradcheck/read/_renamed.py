"""The order of a backward taking a function's inputs again and the output gradient under
names of its own (``maxpool_backprop(inp, kernel, d_L_d_out)`` of ``maxpool(input,
sampling_field)``), found by trial."""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import numpy as np

from ._protocol import ProtocolError

__all__ = ["array_leaves", "order_by_trial"]


def array_leaves(x: Any) -> list[np.ndarray]:
    """The arrays in ``x`` (an array, or lists, tuples and dicts of them), in order."""
    if isinstance(x, np.ndarray):
        return [x]
    x = list(x.values()) if isinstance(x, dict) else x
    return [a for v in x for a in array_leaves(v)] if isinstance(x, (list, tuple)) else []


def order_by_trial(bwd: Callable[..., Any], args: tuple[Any, ...], out: np.ndarray
                   ) -> bool | None:
    """Whether a backward taking the forward's inputs again and the output gradient under
    other names takes the gradient first (``False``: last): the one order in which it runs
    on copies, returns arrays, and twice the gradient gives twice the result; none or both
    a ``bad-protocol``; for one input, None unless so for it alone, or the forward's
    output in its place gives the same (``relu_prime(dA, Z)``; not ``sigmoid_back(delta,
    A)``, which differs: which it takes is not observed)."""
    dy = np.random.default_rng(0).standard_normal(out.shape).astype(out.dtype)

    def fits(first: bool, values: tuple[Any, ...] = args) -> list[np.ndarray] | None:
        def call(d: np.ndarray) -> list[np.ndarray]:
            given = copy.deepcopy(values)
            got = bwd(d, *given) if first else bwd(*given, d)
            return array_leaves(got)
        try:
            one, two = call(dy), call(2 * dy)
        except Exception:  # noqa: BLE001 - the user's code, in an order it may not take
            return None
        return one if bool(one) and len(one) == len(two) and all(
            a.shape == b.shape and a.dtype.kind == "f" and np.all(np.isfinite(a)) and
            np.allclose(2 * a, b, rtol=1e-6, atol=1e-12) for a, b in zip(one, two, strict=True)
        ) else None
    got = {o: fits(o) for o in (False, True)}
    last, first = got[False] is not None, got[True] is not None
    if len(args) == 1 and (last == first or any(_differs(fits(o, (out,)), got[first]) for o in (
            False, True))):
        return None
    if last != first:
        return first
    raise ProtocolError("bad-protocol", (
        f"the forward returns its output alone and the backward takes {len(args) + 1} "
        "arguments, the forward's inputs again and the output gradient under other names; "
        f"{'both orders run' if last else 'in neither order does it run'} and give results "
        "linear in the gradient: give it the protocol's form, fwd = lambda *a: (f(*a), a); "
        "bwd = lambda dy, a: f_backward(*a, dy)"))


def _differs(a: list[np.ndarray] | None, b: list[np.ndarray] | None) -> bool:
    """Whether results ``a`` (None: none) exist and are not ``b``'s."""
    return a is not None and (b is None or len(a) != len(b) or not all(
        u.shape == v.shape and np.allclose(u, v, rtol=1e-12, atol=0) for u, v in zip(
            a, b, strict=True)))
