"""A loss layer whose forward returns its prediction beside the loss (``y_hat, loss =
forward(z, y)``) and whose backward takes the forward's inputs it needs by their names and
the prediction under a name of its own (``backward(y, y_hat)``, CMU 10-601's
``SoftMaxCrossEntropy``): the loss's backward, taking no output gradient, given the
prediction the forward returned; the output checked is the loss."""

from __future__ import annotations

from typing import Any

import numpy as np

from ._discovery import is_float_array
from ._layer_call import Protocol, ones_like
from ._observe import float_state, positional_names, stored
from ._protocol import UserCodeError, clone
from ._reading import probe
from ._tokens import CACHED, FIRST_OUT

__all__ = ["beside_loss"]


def beside_loss(proto: Protocol, xs: list[Any], exc: UserCodeError, returned: Any
                ) -> list[Any] | None:
    """The backward's order (inputs by name, the prediction at the one other place),
    ``proto.out_path`` set to the loss's place, when such a call runs and returns one
    array of a float input's shape (or nothing, storing the gradients: a whole network's
    ``NN.backward(y, y_hat)``); else None, the reading left as it was."""
    if exc.what != f"{type(proto.layer).__name__}.{proto.backward}" or proto.draws is None \
            or proto.out_path is not None or not isinstance(returned, tuple) or len(
                returned) != 2:
        return None
    arrays = [is_float_array(r) and np.ndim(r) > 0 for r in returned]
    losses = [isinstance(r, (float, np.floating)) or (isinstance(r, np.ndarray) and r.size
                                                        == 1 and r.dtype.kind == "f")
              for r in returned]
    if sorted(arrays) != [False, True] or not losses[arrays.index(False)]:
        return None
    a = arrays.index(True)
    names = positional_names(getattr(proto.layer, proto.backward), required=True) or []
    f_names = (positional_names(getattr(proto.layer, proto.forward)) or [])[:len(xs)]
    if len(names) < 2 or sum(n not in f_names for n in names) != 1:
        return None
    order = [f_names.index(n) if n in f_names else FIRST_OUT if a == 0 else CACHED
             for n in names]
    was, proto.out_path = proto.out_path, f"<returned>[{1 - a}]"
    try:
        got = probe(proto.layer, proto.forward, proto.backward, xs, proto.draws,
                    ("given", order), proto.out_path, ones_like, proto.then)
    except UserCodeError:
        got = None
    if got is None or not (got.ret is None and got.stored) and (  # (the gradients stored)
            not isinstance(got.ret, np.ndarray) or got.ret.dtype.kind != "f" or
            got.ret.shape not in {np.shape(x) for x in xs if is_float_array(x)}) or _linear(
                proto, xs, order, a):  # an output gradient (dscores) is no prediction
        proto.out_path = was
        return None
    return order


def _linear(proto: Protocol, xs: list[Any], order: list[Any], a: int) -> bool:
    """Whether the backward gives twice what it returns (or, returning nothing, stores)
    for twice the prediction it is given: then that argument is an output gradient
    (``backward(x, dscores)``, its ``dW`` with an L2 term aside), since a loss's gradient
    given its prediction is not linear in it (``y_hat - y_true``)."""
    assert proto.draws is not None
    draws = proto.draws

    def run(scale: float) -> list[np.ndarray]:
        layer, given = clone(proto.layer), clone(xs)
        draws.reset()
        pred = getattr(layer, proto.forward)(*given)[a] * scale
        before = float_state(layer)
        ret = getattr(layer, proto.backward)(*[pred if k in (FIRST_OUT, CACHED) else given[k]
                                               for k in order])
        return [ret] if isinstance(ret, np.ndarray) else list(stored(before, layer).values())
    try:
        one, two = run(1.0), run(2.0)
    except Exception:  # noqa: BLE001 - no evidence of linearity
        return False
    return len(one) == len(two) and bool(one) and all(u.shape == v.shape and np.allclose(
        2 * u, v, rtol=1e-9, atol=1e-12) for u, v in zip(one, two, strict=True))
