"""A backward of one input returning the element-wise derivative beside the input's
gradient (``return da, dz`` with ``dz = delta * da``): both of the input's shape, only
one moving with the output gradient. Observed: given twice the output gradient, the
gradient doubles and the derivative stays as it was."""

from __future__ import annotations

from typing import Any

import numpy as np

from ._discovery import is_float_array
from ._flat import returned_names
from ._layer_call import Protocol, ones_like, times
from ._observe import positional_names
from ._reading import probe

__all__ = ["moving_item"]


def moving_item(proto: Protocol, first: Any, xs: list[Any]) -> None:
    """Sets ``proto.item`` to the one item of the tuple the backward returned (``first``:
    its probe) that doubles with the output gradient when every other one stays as it
    was, all of the one input's shape; noted. Nothing otherwise."""
    ret = first.ret
    if proto.n_inputs != 1 or not is_float_array(xs[0]) or not isinstance(ret, tuple) or len(
            ret) < 2:
        return
    if not all(is_float_array(r) and r.shape == xs[0].shape for r in ret):
        _named_item(proto, ret, xs)
        return
    assert proto.draws is not None
    try:
        second = probe(proto.layer, proto.forward, proto.backward, first.xs, proto.draws,
                       (proto.style, proto.order), proto.out_path,
                       lambda o: times(ones_like(o), 2.0), proto.then)
    except Exception:  # noqa: BLE001 - no evidence: read as before
        return
    if not isinstance(second.ret, tuple) or len(second.ret) != len(ret):
        return
    moving = [k for k, (a, b) in enumerate(zip(ret, second.ret, strict=True))
              if np.shape(b) == a.shape and a.any() and np.allclose(b, 2 * a, rtol=1e-9,
                                                                     atol=1e-300)]
    fixed = [k for k, (a, b) in enumerate(zip(ret, second.ret, strict=True))
             if np.shape(b) == a.shape and np.array_equal(a, b)]
    if len(moving) != 1 or len(fixed) != len(ret) - 1:
        return
    proto.item = moving[0]
    proto.note(f"backward returned {len(ret)} arrays of the input's shape: item {moving[0]} "
               "doubles with the output gradient, read as the input's gradient; the others "
               "do not move with it (an element-wise derivative beside it), not checked")


def _named_item(proto: Protocol, ret: tuple[Any, ...], xs: list[Any]) -> None:
    """``return da, dz`` with ``dz = 0`` (a number): the one item returned under the
    input's name with a ``d`` (``dz`` for ``forward(z)``) beside arrays of its shape that
    do not move with the output gradient is read as its gradient, a number times ones."""
    names = returned_names(getattr(proto.layer, proto.backward), len(ret))
    arg = (positional_names(getattr(proto.layer, proto.forward)) or [""])[0]
    mine = [k for k, n in enumerate(names or []) if arg and n.lower() in (
        f"d{arg}".lower(), f"d_{arg}".lower())]
    if len(mine) != 1 or not isinstance(ret[mine[0]], (int, float, np.number)) or not all(
            isinstance(r, np.ndarray) and r.shape == xs[0].shape for k, r in enumerate(ret)
            if k != mine[0]):
        return
    proto.item = mine[0]
    assert names is not None
    proto.note(f"backward returned {names[mine[0]]} = {ret[mine[0]]!r}, a number, beside "
               f"arrays of the input's shape: read as the gradient of {arg} (by its name)")
