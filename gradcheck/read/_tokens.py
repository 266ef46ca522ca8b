"""The call orders a backward is tried in when its signature leaves them open: the
output gradient, the forward's second value (``A, Z = forward(A_prev, W, b)``), a dict
it fills with the parameters' gradients (``backward(x, cache, dout, gradients)``), and
the forward's inputs again, those named as the forward names them at their places.

The dict given is a :class:`Sink`: kept on the layer's copy under the argument's name,
so that what the backward writes in it is read as what it stored there.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from typing import Any

from ._observe import positional_names
from ._protocol import UserCodeError

__all__ = ["BUT_LAST", "CACHED", "DY", "FIRST_OUT", "OUTPUT", "SELF", "SINK", "Sink", "dy_part",
           "filled", "give_sinks", "order_text", "spread_cache", "token_orders"]

#: In a call order, the last of the values the forward returned (``A, Z =
#: forward(A_prev, W, b)``; ``backward(dA, A_prev, W, b, Z)``; ``h, c, cache``): the
#: others are the output.
CACHED = "<returned>[-1]"

#: The ``out_path`` of a forward returning its outputs and then a cache (``h, c, cache``).
BUT_LAST = "<returned>[:-1]"

#: In a call order, the forward's output (what it returned) as an argument of the backward.
OUTPUT = "<output>"

#: In a call order, the first of two values the forward returned (``Z, cache =
#: forward(X)``; ``backprop(Z, cache, dZ)``).
FIRST_OUT = "<returned>[0]"

#: In a call order, the gradient of the forward's output ``k`` (:func:`dy_part`).
DY = "<dy>["


def dy_part(k: int) -> str:
    return f"{DY}{k}]"

#: In a call order, a dict the backward fills with the parameters' gradients.
SINK = "<gradients>"

#: In a call order, the layer itself (``backward(X, layer, V)`` reading ``layer.A``).
SELF = "<self>"


class Sink(dict[Any, Any]):
    """A caller's gradient dict: a key read before it is set reads as 0.0, so that
    ``grads[k] += g`` stores ``g``."""

    def __missing__(self, key: Any) -> float:
        return 0.0


def token_orders(names: list[str], f_names: list[str], n: int, two: bool,
                 first: bool = False) -> list[list[Any]]:
    """Every order of a backward's ``names`` (its required arguments) made of the
    output gradient (None), a :data:`SINK`, the layer itself (:data:`SELF`), :data:`CACHED`
    when the forward returned two values (then always; with ``first``, its first value,
    :data:`FIRST_OUT`, may be given too: ``backprop(pooled, cache, dout)``), and the
    inputs ``0..n-1``: those named as the forward names them at their places, the others
    all in order or none.
    Orders without a sink or a second value are left to the plain trial; none for more
    than 6 arguments."""
    if len(names) > 6 or len(names) < 2:
        return []
    fixed = {i: f_names.index(a) for i, a in enumerate(names) if a in f_names}
    free = [i for i in range(len(names)) if i not in fixed]
    rest = [k for k in range(n) if k not in fixed.values()]
    pool: list[Any] = [None, SINK, SELF] + ([CACHED] if two else []) + (
        [FIRST_OUT] if two and first else [])
    orders = []
    for inputs in ([rest, []] if rest else [[]]):
        t = len(free) - len(inputs)
        if t < 1:
            continue
        for tokens in itertools.permutations(pool, t):
            if None not in tokens or (two and CACHED not in tokens) or (
                    not two and SINK not in tokens and SELF not in tokens):
                continue
            for at in itertools.combinations(free, len(inputs)):
                order: list[Any] = [None] * len(names)
                for i, k in fixed.items():
                    order[i] = k
                for i, k in zip(at, inputs, strict=True):
                    order[i] = k
                left = iter(tokens)
                for i in free:
                    if i not in at:
                        order[i] = next(left)
                orders.append(order)
    return orders


def order_text(order: Sequence[Any], f_names: Sequence[str] = ()) -> str:
    """A backward's call order as the note shows it: ``dout, x, the output``."""
    return ", ".join("dout" if k is None else "the output" if k == OUTPUT else
                     "the forward's last value" if k == CACHED else "the forward's first "
                     "value" if k == FIRST_OUT else "a gradient dict it "
                     "fills" if k == SINK else "the layer itself" if k == SELF else
                     f"the gradient of output {k[len(DY):-1]}" if
                     isinstance(k, str) and k.startswith(DY) else f_names[k] if
                     isinstance(k, int) and k < len(f_names) else f"x{k}" for k in order)


def give_sinks(method: Any, order: list[Any], args: list[Any]) -> list[Any]:
    """``args`` with a fresh :class:`Sink` at each :data:`SINK` place, kept on the
    method's object under the argument's name (``_`` before it while that is taken)."""
    if SINK not in order:
        return args
    names = positional_names(method) or []
    obj = getattr(method, "__self__", None)
    out = list(args)
    for i, k in enumerate(order):
        if k != SINK:
            continue
        out[i] = sink = Sink()
        name = names[i] if i < len(names) else "gradients"
        while obj is not None and hasattr(obj, name):
            name = "_" + name
        if obj is not None:
            setattr(obj, name, sink)
    return out


def filled(layer: Any) -> bool:
    """Whether a :class:`Sink` kept on ``layer`` holds something."""
    return any(isinstance(v, Sink) and v for v in getattr(layer, "__dict__", {}).values())


def spread_cache(proto: Any, run: Any, out: Any) -> tuple[Any, Any]:
    """One probe of the backward and the output it differentiates. A forward returning
    outputs and then a cache (``h, c, cache``) whose backward takes one gradient per
    value (``backward(dh, dc, cache)``): when, given a gradient for each, its results
    are not linear in them, it is called with the outputs' gradients and the cache
    itself, and read so when its results are linear then."""
    if proto.style != "spread" or not isinstance(out, tuple) or len(out) < 3 or \
            proto.out_path is not None:
        return run(1.0), out
    try:  # given a "gradient" in the cache's place, it may raise: no evidence either
        first, raised = run(1.0), None
    except UserCodeError as exc:
        first, raised = None, exc
    if first is not None and _linear(first, run, 2.0):
        return first, out
    saved = (proto.style, list(proto.order), proto.out_path)
    proto.style, proto.out_path = "inputs", BUT_LAST
    grads, cached = [dy_part(k) for k in range(len(out) - 1)], None
    for order in (grads + [CACHED], grads[:1] + [CACHED] + grads[1:]):  # (dh, dc, cache),
        proto.order = order  # or (dh, cache, dc=None): backward(dh_seq, caches, dC_final)
        try:
            tried = run(1.0)
        except Exception:  # noqa: BLE001 - not this reading: the plain one stands
            tried = None
        if tried is not None and _linear(tried, run, 2.0):
            cached = tried
            break
    if cached is None:
        proto.style, proto.order, proto.out_path = saved
        if raised is not None:
            raise raised
        return first, out
    proto.notes = [t for t in proto.notes if "separate arguments" not in t]
    what = type(proto.layer).__name__
    proto.note(f"{what}.{proto.forward} returns {len(out) - 1} outputs and then a cache, and "
               f"{what}.{proto.backward} takes their gradients and that cache: called so"
               + ("" if proto.order[-1] == CACHED else ", the cache second"))
    return cached, out[:-1]


def _linear(first: Any, run: Any, scale: float) -> bool:
    """Whether ``run(scale)`` gives ``scale`` times ``first`` (False if it raises)."""
    from ._reading import linear  # noqa: PLC0415 - _reading imports this module
    try:
        return linear(first, run(scale))
    except Exception:  # noqa: BLE001 - no evidence of linearity
        return False
