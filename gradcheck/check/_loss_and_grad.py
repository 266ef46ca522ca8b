"""A network whose forward takes the data alone, and one method taking the targets that
returns the loss beside its gradient (``forward_pass(x)`` then ``get_loss(true_class)
-> (x_grads, loss)``; ``forward(x)`` then ``backwards(true_class) -> (loss, grads)``),
given to :func:`gradcheck.check_layer` as ``check_layer(net, x, y)``.

- The forward takes ``k`` required arguments, fewer than the inputs given: the inputs
  after the ``k``-th are the targets.
- The method is the one of the object, besides the forward, named as a loss or a
  gradient, taking the targets alone, that after the forward returns a tuple holding
  exactly one finite number, moving when the data moves, beside float arrays.
- The check runs on a copy of the object whose class adds two methods: the forward then
  that method's number (the output checked), and that method again returning the rest,
  read as that number's gradient (``backward(y)`` of a loss).
"""

from __future__ import annotations

import inspect
from typing import Any

import numpy as np

from ..read._discovery import is_float_array
from ..read._observe import FORWARD_NAMED, positional_names
from ..read._protocol import clone
from ._loss_method import (
    _BACKWARD_NAMED,
    _LOSS,
    _others,
    _refused,
    _scalar,
    _signed,
    with_methods,
)

__all__ = ["loss_and_gradient"]

_FORWARD, _BACK = "forward_then_loss", "gradient_of_the_loss"


def loss_and_gradient(layer: Any, inputs: tuple[Any, ...], error: dict[str, str] | None
                      ) -> tuple[Any, str, str, str, int] | None:
    """``(copy, forward name, backward name, note, len(inputs))`` for the reading above;
    None when it is not observed. The forward is the method ``error`` says refused the
    targets, or, with no error, the one method named as a forward (when none is named
    as a backward)."""
    f_name = _refused(error) if error is not None else _one_forward(layer)
    if f_name is None or not callable(fwd := getattr(layer, f_name, None)):
        return None
    names = positional_names(fwd, required=True)
    if not names or len(names) >= len(inputs):
        return None
    k = len(names)
    found = []
    for m, need in _others(layer, f_name):
        every = positional_names(getattr(layer, m)) or []
        if (_LOSS.search(m) or _BACKWARD_NAMED.search(m)) and \
                len(need) <= len(inputs) - k <= len(every):
            at = _number_at(layer, f_name, m, inputs[:k], inputs[k:])
            if at is not None:
                found.append((m, at, every[:len(inputs) - k]))
    if len(found) != 1:
        return None
    m, at, t_names = found[0]
    made = _made(layer, f_name, m, at, names, [n if n not in names else f"{n}_target"
                                              for n in t_names])
    if made is None:
        return None
    return made, _FORWARD, _BACK, (
        f"{type(layer).__name__}.{f_name} takes {k} of the {len(inputs)} inputs; the rest "
        f"are the targets of {m}(), which returns the loss (its item {at}) beside its "
        f"gradient: checked as {f_name} then that loss, the rest {m}() returns as its "
        "gradient"), len(inputs)


def _one_forward(layer: Any) -> str | None:
    """The one public method of ``layer``'s class named as a forward."""
    found = [n for n in dir(type(layer)) if not n.startswith("_") and FORWARD_NAMED.search(n)
             and inspect.isfunction(inspect.getattr_static(type(layer), n, None))]
    return found[0] if len(found) == 1 else None


def _number_at(layer: Any, f_name: str, m: str, data: tuple[Any, ...],
               targets: tuple[Any, ...]) -> int | None:
    """The place of the one finite number in what ``m(*targets)`` returns after the
    forward, beside float arrays, when it moves with the data smoothly (a small move of
    the data, twice as large, moves it about twice as far: no count of hits, no
    accuracy) and ``m`` leaves what the forward computes as it was (no step); else None."""
    def call(xs: tuple[Any, ...], again: bool = False) -> Any:
        obj = clone(layer)
        with np.errstate(all="ignore"):
            out = np.array(getattr(obj, f_name)(*clone(xs)), dtype=float, copy=True)
            got = getattr(obj, m)(*clone(targets))
            if again and not np.array_equal(np.asarray(getattr(obj, f_name)(*clone(
                    xs)), dtype=float), out, equal_nan=True):
                raise ValueError("it steps the weights")  # its loss is not this forward's
        return got

    try:
        got = call(data, again=True)
        if not isinstance(got, (tuple, list)) or len(got) < 2:
            return None
        nums = [i for i, v in enumerate(got) if _scalar(v) is not None]
        rest = [v for i, v in enumerate(got) if i not in nums]
        if len(nums) != 1 or not np.isfinite(_scalar(got[nums[0]]) or np.nan) or not all(
                is_float_array(v) or isinstance(v, (list, tuple)) and v and all(
                    is_float_array(a) for a in v) for v in rest):
            return None
        j = next((i for i, x in enumerate(data) if is_float_array(x)), None)
        if j is None:
            return None
        v = np.random.default_rng(0).standard_normal(np.shape(data[j]))
        moved = [_scalar(call(tuple(x + h * v if i == j else x for i, x in enumerate(
            data)))[nums[0]]) for h in (1e-4, 2e-4)]
    except (Exception, SystemExit):  # noqa: BLE001 - not this reading
        return None
    a = _scalar(got[nums[0]])
    if a is None or None in moved:
        return None
    one, two = moved[0] - a, moved[1] - a  # type: ignore[operator]
    return nums[0] if one != 0 and abs(two - 2 * one) <= 0.1 * abs(2 * one) else None


def _made(layer: Any, f_name: str, m: str, at: int, names: list[str],
          t_names: list[str]) -> Any:
    """A copy of ``layer`` whose class adds the two methods of the module docstring."""
    cls, k = type(layer), len(names)

    def forward_then_loss(self: Any, *xs: Any) -> Any:
        getattr(cls, f_name)(self, *xs[:k])
        return getattr(cls, m)(self, *xs[k:])[at]

    def gradient_of_the_loss(self: Any, *targets: Any) -> Any:
        got = getattr(cls, m)(self, *targets)
        rest = [v for i, v in enumerate(got) if i != at]
        return rest[0] if len(rest) == 1 else tuple(rest)

    forward_then_loss.gradcheck_targets = k  # type: ignore[attr-defined]
    methods = {_FORWARD: _signed(forward_then_loss, [*names, *t_names]),
               _BACK: _signed(gradient_of_the_loss, t_names)}
    return with_methods(layer, methods)
