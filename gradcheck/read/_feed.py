"""A backward fed by another call: the output gradient goes in through one method, which
keeps it on the layer (``backward_update_gradient(delta)``, storing ``self._delta``
and adding into the weights' gradients), and the backward, taking no argument, reads it
from there (``backward()`` computing ``self._grad_input``).

Observed, not named: when a backward that takes no argument raises for a layer whose
output is no scalar (no loss), each other public method taking one argument is called on
a copy after a forward, with a random output gradient; the one method that stores an
array equal to what it was given, after which the backward runs, feeds it.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ._layer_call import Protocol, takes_no_gradient
from ._observe import float_state, positional_names, stored
from ._protocol import UserCodeError, clone
from ._reading import read_output

__all__ = ["fed_by"]


def fed_by(proto: Protocol, xs: list[Any], exc: UserCodeError) -> str | None:
    """The method that feeds the backward its output gradient, or None when there is not
    exactly one (see the module's docstring)."""
    layer = proto.layer
    backward = getattr(layer, proto.backward)
    if exc.what != f"{type(layer).__name__}.{proto.backward}" or proto.fed is not None \
            or not takes_no_gradient(backward) or proto.draws is None:
        return None
    found = [name for name in _candidates(layer, proto) if _feeds(proto, xs, name)]
    return found[0] if len(found) == 1 else None


def _candidates(layer: Any, proto: Protocol) -> list[str]:
    out = []
    for name in dir(type(layer)):
        if name.startswith("_") or name in (proto.forward, proto.backward):
            continue
        method = getattr(layer, name, None)
        if callable(method) and len(positional_names(method, required=True) or []) == 1:
            out.append(name)
    return out


def _feeds(proto: Protocol, xs: list[Any], name: str) -> bool:
    assert proto.draws is not None
    layer = clone(proto.layer)
    try:
        proto.draws.reset()
        out = read_output(layer, getattr(layer, proto.forward)(*clone(xs)), proto.out_path)
        if not isinstance(out, np.ndarray) or out.size < 2 or out.dtype.kind != "f":
            return False
        dy = np.asarray(np.random.default_rng(0).standard_normal(out.shape), dtype=out.dtype)
        before = float_state(layer)
        getattr(layer, name)(dy.copy())
        kept = any(v.shape == dy.shape and np.array_equal(v, dy)
                   for v in stored(before, layer, (), copies=False).values())
        if kept:
            getattr(layer, proto.backward)()
        return kept
    except Exception:  # noqa: BLE001 - not the method that feeds it: it raised on trying
        return False
