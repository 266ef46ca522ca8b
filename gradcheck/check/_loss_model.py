"""A model checked through its loss and its gradients, both taking every input given:
``compute_loss(X, y)`` beside ``compute_gradients(X, y)`` returning ``(grad_w, grad_b)``
(or a dict of ``dW``..., or storing ``dweights`` on its layers), with no method named as
a forward or a backward (``predict(X)`` beside them): given to
:func:`gradcheck.check_layer` as ``check_layer(model, X, y)``.

Observed on copies, never by the names alone:

- the loss is the one method named as a loss that takes as many arguments as there are
  inputs and, given them, returns one finite number that moves when the first float
  input moves, changing none of the arrays the model holds (a training step does);
- the gradients are the one other method named as a gradient (``grad``, ``backward``,
  ``backprop``, ``deriv``) that takes as many arguments, and, run after the
  loss on the same copy, returns gradients (a tuple, a list or a dict) or returns
  nothing and stores arrays, without changing the arrays the model holds.

The check is the loss as the forward and the gradients as its backward, given the
inputs again (a loss's gradient, the inputs data held constant unless it returns
theirs). A tuple or dict returned under names that are, less a gradient affix, those of
arrays or float scalars the model holds (``grad_w`` for ``w``, ``db`` for ``bias``), is
kept beside them as ``<name>_grad`` and read there.
"""

from __future__ import annotations

import re
from typing import Any

import numpy as np

from ..read._discovery import is_float_array, is_float_scalar
from ..read._flat import returned_names
from ..read._layout import abbreviates
from ..read._observe import IO_NAMED, float_state, grad_stem, positional_names
from ..read._protocol import clone
from ._loss_method import _named_as_loss, _number, _signed, with_methods

__all__ = ["loss_model"]

_GRADIENT = re.compile(r"grad|backward|backprop|deriv", re.I)


def loss_model(layer: Any, inputs: tuple[Any, ...]) -> tuple[Any, str, str, str] | None:
    """``(copy, loss name, gradients name, note)`` of the reading above; None when it
    is not observed (no such pair, or several)."""
    n = len(inputs)
    if n < 1 or not hasattr(layer, "__dict__"):
        return None
    losses = [m for m in _named_as_loss(layer, "") if not _GRADIENT.search(m)
              and _takes(layer, m, n) and _number(layer, m, tuple(inputs), None) is not None]
    if len(losses) != 1:
        return None
    loss = losses[0]
    found = [m for m in _named_gradients(layer, loss) if _takes(layer, m, n)
             and _gives(layer, loss, m, inputs)]
    if len(found) != 1:
        return None
    made = _joined(layer, loss, found[0])
    if made is None:
        return None
    return made, loss, found[0], (
        f"{type(layer).__name__} has no forward or backward by name; {loss}, the one "
        f"method named as a loss that takes the {n} inputs and returns a number, is "
        f"checked as the forward, and {found[0]}, the one named as a gradient that takes "
        "them too, as its backward")


def _takes(obj: Any, name: str, n: int) -> bool:
    need = positional_names(getattr(obj, name), required=True)
    every = positional_names(getattr(obj, name))
    return need is not None and every is not None and len(need) <= n <= len(every)


def _named_gradients(obj: Any, loss: str) -> list[str]:
    cls = type(obj)
    return [m for m in dir(cls) if not m.startswith("__") and m != loss
            and not IO_NAMED.match(m) and callable(getattr(cls, m, None)) and _GRADIENT.search(m)]


def _gives(obj: Any, loss: str, name: str, inputs: tuple[Any, ...]) -> bool:
    """Whether ``obj.name(*inputs)``, run on a copy after its loss, returns gradients or
    stores arrays, changing none of the arrays the copy held."""
    o = clone(obj)
    try:
        with np.errstate(all="ignore"):
            getattr(o, loss)(*clone(inputs))
            before = float_state(o)
            got = getattr(o, name)(*clone(inputs))
    except (Exception, SystemExit):  # noqa: BLE001 - not this method (exit() in it too)
        return False
    now = float_state(o)
    if any(p in now and not np.array_equal(now[p][1], old) for p, (_, old) in before.items()):
        return False  # a training step
    if got is None:
        return any(p not in before for p in now)
    items = list(got.values() if isinstance(got, dict) else got if isinstance(
        got, (tuple, list)) else [got])  # (a bare number is a metric's: accuracy_delta)
    return any(is_float_array(v) for v in items) and all(
        is_float_array(v) or is_float_scalar(v) for v in items) and (
        is_float_array(got) or _keys(o, getattr(type(o), name), got) is not None)


def _joined(layer: Any, loss: str, grads: str) -> Any:
    """A copy of ``layer`` whose class calls ``grads`` under the loss's argument names
    and keeps what it returns by name beside the arrays it holds; None when the class
    cannot be extended."""
    cls = type(layer)
    names = positional_names(getattr(layer, loss), required=True) or []

    def gradients(self: Any, *xs: Any) -> Any:
        got = getattr(cls, grads)(self, *xs)
        return _kept(self, getattr(cls, grads), got)

    return with_methods(layer, {grads: _signed(gradients, list(names))})


def _kept(obj: Any, method: Any, got: Any) -> Any:
    """What ``method`` returned, kept beside what ``obj`` holds as ``<name>_grad`` when
    :func:`_keys` names every item; then None is returned."""
    keys = _keys(obj, method, got)
    if keys is None:
        return got
    held = vars(obj)
    for k, v in zip(keys, got.values() if isinstance(got, dict) else got, strict=True):
        setattr(obj, f"{k}_grad", type(held[k])(v) if is_float_scalar(held[k]) else v)
    return None


def _keys(obj: Any, method: Any, got: Any) -> list[str] | None:
    """The names of what ``obj`` holds that the items of ``got`` (a tuple, a list or a
    dict) are the gradients of, each named (by the code returning it, or a dict's key)
    as the gradient of a different float array or float scalar of its shape; None when
    not every item is (unnamed items are not placed by their order)."""
    if isinstance(got, dict):
        said, items = [str(k) for k in got], list(got.values())
    elif isinstance(got, (tuple, list)) and got:
        said, items = returned_names(method, len(got)) or [], list(got)
    else:
        return None
    held = {k: v for k, v in vars(obj).items() if is_float_array(v) or is_float_scalar(v)}
    keys = [_owner(s, held) for s in said]
    if len(keys) != len(items) or None in keys or len(set(keys)) != len(keys) or not all(
            np.shape(held[k]) == np.shape(v) for k, v in zip(keys, items, strict=True)):
        return None
    return [k for k in keys if k is not None]


def _owner(said: str, held: dict[str, Any]) -> str | None:
    """The one name held that ``said`` names less a gradient affix (``grad_w``: ``w``,
    ``weights``), exactly or abbreviated."""
    stem = grad_stem(said)
    if stem == said.lower():
        return None  # no gradient affix: no name to go by
    exact = [k for k in held if k.lower().lstrip("_") == stem]
    if exact:
        return exact[0] if len(exact) == 1 else None
    short = [k for k in held if abbreviates(stem, k.lower().lstrip("_"))]
    return short[0] if len(short) == 1 else None
