"""A network whose forward takes the data alone, whose loss and the loss's gradient are
methods of its own taking the output and the targets, and whose backward takes that
gradient (``forward(X)``, ``compute_loss(A, Y)``, ``compute_loss_gradient(A, Y)``,
``backward(dLoss)``), given to :func:`gradcheck.check_layer` as ``check_layer(net, X,
Y)``: the training loop's chain, observed on copies.

- The loss is found as :func:`._loss_method.loss_method_chain` finds it (the forward
  refused the targets, one method named as a loss turns the output into a number).
- The loss's gradient is the one other method named as a gradient (``grad``,
  ``deriv``, ``prime``) taking the loss's arguments that, given the output and the
  targets in the loss's order, returns a float array of the output's shape.
- The backward takes one argument, not a target.

The check is the forward then the loss, on the data alone (the targets held in the
copy checked, constants), and, as that loss's gradient, the backward given what the
loss's gradient method returns for the output this forward made.
"""

from __future__ import annotations

import re
from typing import Any

import numpy as np

from ..read._discovery import get_path, is_float_array
from ..read._observe import method_pair, positional_names
from ..read._protocol import clone
from ..read._transposed import STEP_SIZE
from ._loss_method import _others, _signed, with_methods

__all__ = ["through_loss_gradient"]

_GRADIENT = re.compile(r"grad|deriv|prime|backward|backprop", re.I)
_CHAIN, _BACK = "forward_then_loss", "backward_through_loss"


def through_loss_gradient(layer: Any, f_name: str, loss: tuple[str, bool],
                          data: tuple[Any, ...], targets: tuple[Any, ...], out: Any,
                          t_names: list[str]) -> tuple[Any, str, str, str, int] | None:
    """``(copy, forward name, backward name, note, how many inputs it takes: the
    data's)`` of the reading above; None when it is not observed."""
    l_name, first = loss
    try:
        b_name = method_pair(layer, f_name, None, data)[1]
    except Exception:  # noqa: BLE001 - no backward found: no such reading
        return None
    taken = positional_names(getattr(layer, b_name), required=True)
    step = taken is not None and len(taken) == 2 and bool(STEP_SIZE.match(taken[1]))
    if taken is None or len(taken) != 1 + step or taken[0] in t_names:
        return None  # (backward(dA, learning_rate): given 1.0, its change read)
    need = len(positional_names(get_path(layer, l_name), required=True) or [])
    fits = [name for name, args in _others(layer, f_name) if name not in (l_name, b_name)
            and _GRADIENT.search(name) and len(args) == need
            and _gives_gradient(layer, name, out, targets, first)]
    if len(fits) != 1:
        return None
    made = _joined(layer, f_name, (l_name, first), fits[0], b_name,
                   positional_names(getattr(layer, f_name), required=True) or [], targets,
                   (1.0,) if step else ())
    if made is None:
        return None
    return made, _CHAIN, _BACK, (
        f"{type(layer).__name__}.{f_name} takes {len(data)} of the "
        f"{len(data) + len(targets)} inputs; the rest are the targets of {l_name}, the one "
        f"method that turns its output into a number, held constant: checked as {f_name} "
        f"then {l_name}, the backward as {b_name} given what {fits[0]} returns for that "
        "output"), len(data)


def _gives_gradient(obj: Any, name: str, out: Any, targets: tuple[Any, ...],
                    first: bool) -> bool:
    """Whether ``obj.name`` returns a float array of the output's shape, on a copy."""
    args = (out, *targets) if first else (*targets, out)
    try:
        with np.errstate(all="ignore"):
            got = getattr(clone(obj), name)(*clone(args))
    except (Exception, SystemExit):  # noqa: BLE001 - not this method (exit() in it too)
        return False
    return is_float_array(got) and np.shape(got) == np.shape(out)


def _joined(layer: Any, f_name: str, loss: tuple[str, bool], grad: str, back: str,
            args: list[str], targets: tuple[Any, ...], step: tuple[float, ...] = ()) -> Any:
    """A copy of ``layer`` whose class adds the forward-then-loss method, the targets
    held in it, keeping its output (in a function, which no reading takes for an array),
    and the backward, taking nothing, given the loss's gradient for that output; None
    when the class cannot be extended."""
    cls, (l_name, first) = type(layer), loss
    held = clone(targets)

    def loss_args(out: Any) -> tuple[Any, ...]:
        rest = clone(held)
        return (out, *rest) if first else (*rest, out)

    def forward_then_loss(self: Any, *xs: Any) -> Any:
        out = getattr(cls, f_name)(self, *xs)
        self._gradcheck_loss_output = lambda: out
        return get_path(self, l_name)(*loss_args(out))  # (a held loss: loss.calculate)

    def backward_through_loss(self: Any) -> Any:
        out = self._gradcheck_loss_output()
        return getattr(cls, back)(self, getattr(cls, grad)(self, *loss_args(out)), *step)

    return with_methods(layer, {_CHAIN: _signed(forward_then_loss, args),
                                _BACK: _signed(backward_through_loss, [])})
