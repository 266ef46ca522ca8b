"""The order of a backward taking a function's inputs again and the output gradient under
names of its own (``maxpool_backprop(inp, kernel, d_L_d_out)`` of ``maxpool(input,
sampling_field)``), found by trial."""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import numpy as np

from ._protocol import ProtocolError

__all__ = ["array_leaves", "by_returned_names", "order_by_trial", "placed_by_names"]


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


def by_returned_names(fwd: Callable[..., Any], f_names: list[str], b_names: list[str],
                      out: Any) -> list[int | None] | None:
    """The backward's arguments, for a forward returning its output and values it
    computed on the way, ``return H, A_tilde, A_hat``, whose backward takes some of its
    inputs and of those values by their names and the output's gradient under the
    output's name with a gradient's affix (``backward_hidden(A, W, dH, A_tilde, A_hat)``
    of ``forward_hidden(X, A, W)``): indices into the inputs followed by the values after
    the output, None for the gradient; None when the names do not say so."""
    if not (isinstance(out, tuple) and len(out) >= 2 and isinstance(out[0], np.ndarray)
            and out[0].dtype.kind == "f"):
        return None
    from ._flat import returned_names  # (it reads source as this module does)
    from ._observe import grad_stem
    names = returned_names(fwd, len(out))
    if names is None or "" in names or len(set(names)) != len(names):
        return None
    later = {n: len(f_names) + j for j, n in enumerate(names[1:])}
    if any(n in f_names for n in later):  # X = X - X.mean(0); return H, Z, X: which X?
        return None
    if len(out) == 2 and not any(b in f_names for b in b_names):
        return None  # (out, cache) with backward(dout, cache): the protocol's own form
    odd = [b for b in b_names if b not in f_names and b not in later]
    if len(odd) != 1 or grad_stem(odd[0]) != names[0].lower() or odd[0].lower() == \
            names[0].lower() or not any(b in later for b in b_names):
        return None
    return [None if b == odd[0] else f_names.index(b) if b in f_names else later[b]
            for b in b_names]


def placed_by_names(bwd: Callable[..., Any], f_names: list[str], grads: Any,
                    wanted: list[int] | None = None) -> tuple[Any, str]:
    """The gradients a backward returned, one per forward input in the forward's order,
    and a note, when its code returns them under names that are ``d`` + those inputs'
    names (``return dW, dX`` for ``f(X, W)``); ``grads`` as they were and no note
    otherwise. None for an input ``wanted`` (every input without ``wrt=``) is a
    ``bad-protocol`` (a constant and a forgotten gradient look alike: ``return dW, dX``
    for ``f(X, A, W)``)."""
    from ._flat import returned_names
    from ._observe import grad_stem
    if not isinstance(grads, tuple) or not grads:
        return grads, ""
    names = returned_names(bwd, len(grads))
    low = [f.lower() for f in f_names]
    stems = [grad_stem(n) for n in names or []]
    if names is None or any(s not in low or s == n.lower() for s, n in zip(
            stems, names, strict=True)) or len(set(stems)) != len(stems):
        return grads, ""
    placed: list[Any] = [None] * len(f_names)
    for s, g in zip(stems, grads, strict=True):
        placed[low.index(s)] = g
    none = [f for k, (f, g) in enumerate(zip(f_names, placed, strict=True))
            if g is None and (wanted is None or k in wanted)]  # (wrt= leaves the others out)
    if none:  # a constant, or a gradient forgotten: not observed
        raise ProtocolError("bad-protocol", (
            f"the backward returns {', '.join(names or [])}, by their names the gradients of "
            f"{', '.join(f for f, g in zip(f_names, placed, strict=True) if g is not None)}, "
            f"and none for {', '.join(none)}: a constant, or a gradient forgotten? Return "
            f"None in its place for a constant, or pass wrt= naming the others"))
    return tuple(placed), (f"the backward returns {', '.join(names or [])}: placed by their "
                           "names")
