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
from ._observe import positional_names
from ._protocol import UserCodeError
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
            got.ret.shape not in {np.shape(x) for x in xs if is_float_array(x)}):
        proto.out_path = was
        return None
    return order
