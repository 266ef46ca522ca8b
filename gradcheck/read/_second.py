"""A parameter's gradient that the backward puts in two places: stored on the layer
(``self.dW``) and returned (``dX, {"W": ...}``, ``dX, [dW, db]``), or stored and written
in a gradient dict its caller passes (``grads["W"]``); never a momentum's or a cache's
array named like a gradient (``v['dW']``). Whichever one the caller's optimizer reads must
be right, so when the two differ the second is checked too, as a parameter of its own
(``W (returned 'dW')``): the wrong one fails, where it is.
"""

from __future__ import annotations

import re
from typing import Any

import numpy as np

from ._discovery import Param, is_float_array, try_path
from ._flat import FLAT
from ._layer_call import Protocol
from ._observe import grad_of, grads_holder, last_name
from ._split import split_return
from ._tokens import Sink

__all__ = ["second_places"]


def second_places(proto: Protocol, first: Any) -> None:
    """Adds to ``proto.params`` a twin of each parameter whose gradient the first
    backward also left, different, in a second place named for it (of the same object:
    ``l2.dW`` is no place of ``l1.W``'s; nor the place another parameter is read at)."""
    keys = proto.returned[1] if proto.returned is not None else {}
    part = _returned_part(proto, first.ret)
    split = _matched(proto, first.ret) if part else {}
    taken = {q.grad for q in proto.params if isinstance(q.grad, str)}
    for p in list(proto.params):
        if not isinstance(p.value, str):
            continue
        shape = np.shape(try_path(proto.layer, p.value))
        primary, own = _primary(p, keys, part, first)
        if primary is None:
            continue
        places: dict[str, tuple[Any, Any]] = {  # a name grad_of reads -> (key, value)
            f"grads[{k!r}]": (k, v) for k, v in part.items() if k != own}
        places |= {path: (None, v) for path, v in first.stored.items() if path not in taken
                   and path not in p.also and _owner(path) == _owner(p.value)
                   and _gradient_place(first.after, path)}
        matched = {f"grads[{k!r}]" for q, k in split.items() if q == p.value and k != own}
        for where, (key, value) in places.items():
            if not is_float_array(value) or (where not in matched and grad_of(
                    p.value, shape, {where: value}) is None) or value.size != primary.size \
                    or np.array_equal(value.reshape(primary.shape), primary):
                continue
            twin = f"{p.name} (returned {key!r})" if key is not None else f"{p.name} (at {where})"
            if key is not None:
                keys[twin] = key
            proto.params.append(Param(twin, p.value, _none if key is not None else where))
            first_place = p.grad if own is None else f"returned {own!r}"
            proto.note(f"the gradient of {p.name} is in two places that differ, {first_place} "
                       f"and {twin[len(p.name) + 2:-1]}: both are checked, the second as {twin}")


def _gradient_place(layer: Any, path: str) -> bool:
    """Whether ``path`` is a place for gradients: an attribute of the layer's own
    (``self.W_grad``), an item of a gradient dict it was given, or of a container named
    for gradients (``self.grads['W']``); not a momentum's (``self.v['dW']``)."""
    holder = _holder(path)
    if holder == path:
        return True
    return isinstance(try_path(layer, holder), Sink) or grads_holder(last_name(holder))


def _holder(path: str) -> str:
    """The container a path's last key belongs to (``grads`` for ``grads['W']``)."""
    return re.sub(r"\[[^\]]*\]$", "", path)


def _owner(path: str) -> str:
    """The object a path's last attribute belongs to (``l1`` for ``l1.grads['W']``)."""
    plain = re.sub(r"(\[[^\]]*\])+$", "", path)  # its own keys off: grads['W'] is grads
    return plain.rsplit(".", 1)[0] if "." in plain else ""


def _returned_part(proto: Protocol, ret: Any) -> dict[Any, Any]:
    """The gradients the backward returned beside the input gradients, by key (a
    list's by index)."""
    if proto.returned is None or proto.returned[0] == FLAT or not isinstance(
            ret, (tuple, list)) or proto.returned[0] >= len(ret):
        return {}
    part = ret[proto.returned[0]]
    return part if isinstance(part, dict) else dict(enumerate(part)) if isinstance(
        part, (list, tuple)) else {}


def _matched(proto: Protocol, ret: Any) -> dict[str, Any]:
    """``param path -> key`` of every gradient the returned part holds, as the reading
    of returns matches them (``[dW, db]`` beside ``self.params = [W, b]``)."""
    assert proto.returned is not None
    split = split_return(ret, proto.layer, proto.n_inputs)
    return split[1] if split is not None and split[0] == proto.returned[0] else {}


def _primary(p: Param, keys: dict[str, Any], part: dict[Any, Any], first: Any
             ) -> tuple[Any, Any]:
    """The gradient of ``p`` as the check reads it from the first backward, and its
    key when it is read from what the backward returned."""
    if p.name in keys:
        got = part.get(keys[p.name])
        return (np.asarray(got), keys[p.name]) if is_float_array(got) else (None, None)
    if isinstance(p.grad, str):
        got = first.stored.get(p.grad, try_path(first.after, p.grad))
        return (got, None) if is_float_array(got) else (None, None)
    return None, None


def _none(layer: Any) -> None:
    return None
