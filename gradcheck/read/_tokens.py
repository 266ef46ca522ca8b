"""The call orders a backward is tried in when its signature leaves them open: the
output gradient, the forward's second value (``A, Z = forward(A_prev, W, b)``), a dict
it fills with the parameters' gradients (``backward(x, cache, dout, gradients)``), and
the forward's inputs again, those named as the forward names them at their places.

The dict given is a :class:`Sink`: kept on the layer's copy under the argument's name,
so that what the backward writes in it is read as what it stored there.
"""

from __future__ import annotations

import itertools
from typing import Any

from ._observe import positional_names

__all__ = ["CACHED", "SINK", "Sink", "filled", "give_sinks", "token_orders"]

#: In a call order, the second of the two values the forward returned (``A, Z =
#: forward(A_prev, W, b)``; ``backward(dA, A_prev, W, b, Z)``): its first is the output.
CACHED = "<returned>[1]"

#: In a call order, a dict the backward fills with the parameters' gradients.
SINK = "<gradients>"


class Sink(dict[Any, Any]):
    """A caller's gradient dict: a key read before it is set reads as 0.0, so that
    ``grads[k] += g`` stores ``g``."""

    def __missing__(self, key: Any) -> float:
        return 0.0


def token_orders(names: list[str], f_names: list[str], n: int, two: bool
                 ) -> list[list[Any]]:
    """Every order of a backward's ``names`` (its required arguments) made of the
    output gradient (None), a :data:`SINK`, :data:`CACHED` when the forward returned two
    values (then always), and the inputs ``0..n-1``: those named as the forward names
    them at their places, the others all in order or none. Orders without a sink or a
    second value are left to the plain trial; none for more than 6 arguments."""
    if len(names) > 6 or len(names) < 2:
        return []
    fixed = {i: f_names.index(a) for i, a in enumerate(names) if a in f_names}
    free = [i for i in range(len(names)) if i not in fixed]
    rest = [k for k in range(n) if k not in fixed.values()]
    pool: list[Any] = [None, SINK] + ([CACHED] if two else [])
    orders = []
    for inputs in ([rest, []] if rest else [[]]):
        t = len(free) - len(inputs)
        if t < 1:
            continue
        for tokens in itertools.permutations(pool, t):
            if None not in tokens or (two and CACHED not in tokens) or (
                    not two and SINK not in tokens):
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
