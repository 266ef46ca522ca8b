"""Another method read as the backward, or ``__call__`` as the forward, when the check
under the methods first found fails in a way that points to them: a backward that does
nothing (a base class's ``pass``), one taking settings with defaults only (a step), a
backward needing what ``__call__`` sets around its call of the forward."""

from __future__ import annotations

import inspect
from typing import Any

import numpy as np

from ..read._layer_call import cotangent_named
from ..read._observe import (
    FORWARD_NAMED,
    backward_named,
    float_state,
    method_pair,
    positional_names,
    stored,
)
from ..read._protocol import clone
from ..read._takers import one_taker
from ._result import CheckResult

__all__ = ["call_first", "ignores_gradient", "step_named_backward", "storing_forward",
           "stub_backward"]


def stub_backward(layer: Any, inputs: tuple[Any, ...], res: CheckResult,
                   forward: str | None) -> tuple[str, str, str] | None:
    """When the method read as the backward does nothing, after a forward on a copy
    (returns None, stores and changes nothing: a base class's ``pass``), it and the one
    other method named as a backward (``jacobian_backward``); None otherwise."""
    if res.status not in ("error", "bad-protocol"):
        return None
    try:
        f, b, _ = method_pair(layer, forward, None, inputs)
        obj = clone(layer)
        with np.errstate(all="ignore"):
            out = getattr(obj, f)(*clone(inputs))
            before = float_state(obj)
            takes = positional_names(getattr(obj, b), required=True) != []
            ret = getattr(obj, b)(*[np.ones_like(np.asarray(out, dtype=np.float64))] * takes)
    except Exception:  # noqa: BLE001 - no evidence: the first result stays
        return None
    if ret is not None or stored(before, obj):
        return None
    others = [n for n in dir(type(layer)) if not n.startswith("_") and n != b and
              backward_named(n) and callable(getattr(layer, n, None))]
    if len(others) == 1:
        return (b, others[0], f"does nothing (returns None, stores nothing): {others[0]}(), "
                "the one other method named as a backward, checked as the backward")
    other = "" if others else one_taker(layer, f, inputs, skip=b)  # SGD(error) beside a
    code = getattr(getattr(getattr(layer, f), "__func__", None), "__code__", None)
    other = "" if code is not None and other in code.co_names else other  # (no helper the
    # forward calls itself: center(v), a symmetric smooth(v))
    return (b, other, f"does nothing (returns None, stores nothing): {other}(), the one "  # no-op
            "other method taking one argument whose results after the forward are linear in "
            "it, checked as the backward") if other else None


def step_named_backward(layer: Any, inputs: tuple[Any, ...], res: CheckResult,
                         forward: str | None) -> tuple[str, str, str] | None:
    """When the method read as the backward failed and takes only numbers with defaults
    (``backward(alpha=1e-5, weight_decay=4e-4)``: an optimizer step), it and the one
    other method taking one argument whose results, after the forward, are linear in it
    (``gradient(eta)``); None otherwise."""
    if res.status not in ("error", "bad-protocol"):
        return None
    try:
        f, b, _ = method_pair(layer, forward, None, inputs)
        params = list(inspect.signature(getattr(layer, b)).parameters.values())
    except (TypeError, ValueError):
        return None
    if not params or any(p.default is p.empty or type(p.default) not in (int, float)
                         for p in params) or cotangent_named(params[0].name) or \
            params[0].default == 1:  # backward(dout=1.0): an output gradient, unit
        return None
    other = one_taker(layer, f, inputs, skip=b)
    return (b, other, "takes settings with defaults only (a step), not an output gradient: "
            f"{other}(), linear in its argument after the forward, checked as the backward"
            ) if other else None


def call_first(layer: Any, inputs: tuple[Any, ...], res: CheckResult) -> bool:
    """Whether the backward raised on an attribute the layer lacks (or a key its dict
    lacks: ``self.local_grads['x']`` of a ``local_grads = {}`` filled by ``__call__``)
    while the layer's own ``__call__`` (one it defines), returning what ``forward``
    returns on copies, could set it around its call of the forward."""
    err = res.error or {}
    missing = (err.get("type") == "AttributeError" and "has no attribute" in err.get(
        "message", "")) or err.get("type") == "KeyError"
    if not (res.status == "error" and missing and any(
                "__call__" in vars(c) and "forward" in vars(c) for c in type(layer).__mro__
                if c is not object)):
        return False
    try:
        with np.errstate(all="ignore"):
            a = clone(layer)(*clone(inputs))
            b = clone(layer).forward(*clone(inputs))
    except Exception:  # noqa: BLE001 - no evidence: the error stays
        return False
    a, b = np.asarray(a), np.asarray(b)  # (a loss's __call__ returns a float)
    return a.dtype.kind == b.dtype.kind == "f" and a.shape == b.shape and bool(
        np.array_equal(a, b))


def storing_forward(layer: Any, inputs: tuple[Any, ...], res: CheckResult
                    ) -> tuple[str, str] | None:
    """When the backward raised after the forward first read, the one other method named
    as a forward that, on copies, returns the same output and stores arrays that one
    does not (``zStoreForwardPropagate`` beside ``forwardPropagate``: the backward reads
    ``self.prevZ``): its name and the note saying so; None otherwise."""
    err = res.error or {}
    try:
        f, b, _ = method_pair(layer, None, None, inputs)
    except (TypeError, ValueError, AttributeError):
        return None
    if res.status != "error" or err.get("in") != f"{type(layer).__name__}.{b}":
        return None
    try:
        out, kept = _run_stored(layer, f, inputs)
    except Exception:  # noqa: BLE001 - no evidence: the error stays
        return None
    found = []
    for g in dir(type(layer)):
        if g.startswith("_") or g in (f, b) or not FORWARD_NAMED.search(g) or \
                not inspect.isfunction(inspect.getattr_static(type(layer), g, None)):
            continue
        try:
            other, more = _run_stored(layer, g, inputs)
        except Exception:  # noqa: BLE001, S112 - not this one
            continue
        if np.shape(other) == np.shape(out) and np.array_equal(
                np.asarray(other, dtype=float), np.asarray(out, dtype=float)) and \
                set(more) - set(kept):
            found.append(g)
    if len(found) != 1:
        return None
    return found[0], (f"{b} raised after {f}, which stores nothing it needs; {found[0]}, the "
                      f"one other method named as a forward, returns what {f} returns and "
                      "stores more: checked as the forward")


def _run_stored(layer: Any, name: str, inputs: tuple[Any, ...]) -> tuple[Any, dict[str, Any]]:
    """What ``name(*inputs)`` returns on a copy of ``layer``, and what it stored there."""
    obj = clone(layer)
    before = float_state(obj)
    with np.errstate(all="ignore"):
        out = getattr(obj, name)(*clone(inputs))
    return out, stored(before, obj)


def ignores_gradient(layer: Any, inputs: tuple[Any, ...]) -> bool:
    """Whether the backward, after the forward on copies, returns the same array for two
    output gradients while its argument is not named as one (``backward(X)`` returning
    the Jacobian ``W.T`` its caller multiplies by): what it returns is no input
    gradient to compare."""
    try:
        f, b, _ = method_pair(layer, None, None, inputs)
        names = positional_names(getattr(layer, b), required=True) or []
        if len(names) != 1 or cotangent_named(names[0]):
            return False
        got = []
        for scale in (1.0, 2.0):
            obj = clone(layer)
            with np.errstate(all="ignore"):
                out = getattr(obj, f)(*clone(inputs))
                got.append(getattr(obj, b)(np.full(np.shape(out), scale)))
    except Exception:  # noqa: BLE001 - no evidence either way
        return False
    return all(isinstance(g, np.ndarray) for g in got) and got[0].shape == got[1].shape and \
        bool(np.any(got[0])) and bool(np.array_equal(got[0], got[1]))
