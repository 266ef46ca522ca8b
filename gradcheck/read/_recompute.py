"""A backward that calls its forward again on one of its arguments: that argument is the
forward's input.

``backward(z, grads)`` of a sigmoid whose first line is ``s = self.activate(z)`` takes
the input, not the output, in ``z``: given one or the other, it runs and is linear in
``grads`` both ways, and the two give different results, so the trial of orders alone
cannot say which. That the backward runs the forward on the array it was given says it.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ._layer_call import Protocol, ones_like, uneven
from ._protocol import clone
from ._reading import read_output
from ._tokens import OUTPUT

__all__ = ["recomputing"]


def recomputing(proto: Protocol, xs: list[Any], orders: list[list[Any]]) -> list[list[Any]]:
    """Of ``orders`` (the output gradient as None, inputs by position, the forward's
    output as :data:`OUTPUT`), those in which the backward, called on a copy after the
    forward, calls the forward again on the very array it was given as an input (not on
    one it cached: ``self.activate(self.x)`` says nothing of its argument)."""
    return [o for o in orders if _calls_forward_on_input(proto, xs, o)]


def _calls_forward_on_input(proto: Protocol, xs: list[Any], order: list[Any]) -> bool:
    places = [o for o in order if isinstance(o, int) and not isinstance(o, bool)]
    if not places or not all(o is None or o == OUTPUT or o in places for o in order):
        return False
    assert proto.draws is not None
    obj = clone(proto.layer)
    proto.draws.reset()
    seen: list[tuple[Any, ...]] = []
    try:
        out = read_output(obj, getattr(obj, proto.forward)(*clone(xs)), proto.out_path)
        real = getattr(obj, proto.forward)

        def recorded(*args: Any, **kwargs: Any) -> Any:
            seen.append(args)
            return real(*args, **kwargs)

        vars(obj)[proto.forward] = recorded
        given = [uneven(ones_like(out)) if o is None else np.array(out, copy=True) if
                 o == OUTPUT else clone(xs[o]) for o in order]
        getattr(obj, proto.backward)(*given)
    except Exception:  # noqa: BLE001 - the user's code, or an object without a __dict__
        return False
    ins = [g for g, o in zip(given, order, strict=True) if o in places]
    return any(args and any(args[0] is g for g in ins) for args in seen)  # that very array
