"""A layer whose parameters' gradients are computed only inside its step: ``backward``
keeps the output gradient (``self.grads = error``) and returns the input's, and
``fit(lr, weight_decay)`` computes each parameter's gradient from what was kept and steps
it. The step is called right after the backward, with 1.0 for its step size and 0.0 for
its other numbers, and each parameter's gradient is read as minus its change.
"""

from __future__ import annotations

import inspect
from typing import Any

import numpy as np

from ._discovery import Param, get_path, no_grad
from ._layer_call import Protocol, ones_like, times, uneven
from ._observe import IO_NAMED, positional_names
from ._protocol import UserCodeError
from ._reading import probe

__all__ = ["step_after"]


def step_after(proto: Protocol, xs: list[Any], left: list[str], found: list[Param]
               ) -> list[Param]:
    """The parameters ``left`` (the output depends on them, no gradient was found) read
    through the one public method, neither the forward nor the backward, taking one to
    three numbers, that called right after the backward with 1.0 in one place and 0.0 in
    the others changes every one of them, twice as much for 2.0 there or for twice the
    output gradient, and none of them given 0.0 everywhere; ``proto.then`` and
    ``proto.stepped`` are set, with a note. ``[]`` when there is none, or several, or
    when gradients were found stored (``found``: read after the step, which may zero
    them)."""
    if proto.then is not None or proto.draws is None or any(isinstance(p.grad, str) for p in
                                                             found):
        return []  # (a step zeroing the gradients it applies would empty those read)
    hits = [t for name in _candidates(proto) for t in _places(proto, xs, left, name)]
    if len(hits) != 1:
        return []
    proto.then = hits[0]
    proto.stepped = [*proto.stepped, *left]
    name, numbers = hits[0].split(":")
    proto.note(f"{type(proto.layer).__name__}.{name}({numbers}), called right after the "
               f"backward, computes the gradients of {', '.join(left)} and steps them: "
               "their gradients are read as minus that change")
    return [Param(p, p, no_grad) for p in left]


def _candidates(proto: Protocol) -> list[str]:
    out = []
    for name in dir(type(proto.layer)):
        static = inspect.getattr_static(type(proto.layer), name, None)
        if name.startswith("_") or IO_NAMED.match(name) or name in (
                proto.forward, proto.backward) or not callable(static):
            continue
        wants = positional_names(getattr(proto.layer, name), required=True)
        if wants is not None and 1 <= len(wants) <= 3:
            out.append(name)
    return out[:6]


def _places(proto: Protocol, xs: list[Any], left: list[str], name: str) -> list[str]:
    k = len(positional_names(getattr(proto.layer, name), required=True) or [])

    def then(j: int, a: float) -> str:
        return f"{name}:" + ",".join(str(a) if i == j else "0.0" for i in range(k))

    base = _changes(proto, xs, left, then(-1, 0.0), 1.0)
    if base is None or any(np.any(c) for c in base):
        return []
    out = []
    for j in range(k):
        one, two, steep = (_changes(proto, xs, left, then(j, a), g) for a, g in (
            (1.0, 1.0), (2.0, 1.0), (1.0, 2.0)))
        if one is not None and two is not None and steep is not None and all(
                np.any(c) and np.allclose(2 * c, d, rtol=1e-6, atol=1e-12) and np.allclose(
                    2 * c, e, rtol=1e-6, atol=1e-12) for c, d, e in zip(one, two, steep,
                                                                        strict=True)):
            out.append(then(j, 1.0))
    return out


def _changes(proto: Protocol, xs: list[Any], left: list[str], then: str, g: float
             ) -> list[np.ndarray] | None:
    """The change of each array of ``left`` over a forward, the backward given ``g``
    times an uneven output gradient, and the step ``then``; None when a call raised."""
    assert proto.draws is not None
    try:
        got = probe(proto.layer, proto.forward, proto.backward, xs, proto.draws,
                    (proto.style, proto.order), proto.out_path,
                    lambda o: times(uneven(ones_like(o)), g), then)
        return [np.asarray(get_path(got.after, p), dtype=np.float64) - np.asarray(
            get_path(got.init, p), dtype=np.float64) for p in left]
    except (UserCodeError, ValueError, TypeError, KeyError, IndexError):
        return None
