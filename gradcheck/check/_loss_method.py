"""A network whose forward takes the data alone, its loss a method of its own, and its
backward the targets (``_forward(X)``, ``_compute_loss(y, y_hat)``, ``_backward(X, y)``
stepping the weights; ``forward(X)``, ``compute_loss(logits, y)``, ``backward(y)``), given
to :func:`gradcheck.check_layer` as ``check_layer(net, X, y)``: the forward refused the
targets, so the reading is the chain its training loop runs, observed on copies.

- The forward takes ``k`` required arguments, fewer than the inputs given: the inputs
  after the ``k``-th are the targets.
- The loss is the one method of the object named as a loss or a cost (``loss``,
  ``cost``, ``error``, ``entropy``, ``mse``...: a metric, ``mae`` or ``accuracy``, also
  turns the output into a number), besides the forward, that given the
  forward's output (an array) and the targets, in one order, returns one finite number
  that moves when the output moves, and changes none of the arrays the object held (a
  training step does). When both orders give numbers that differ, the name of the
  method's argument at the targets' place says which (``y``, ``labels``, ``target``);
  else there is no reading.
- The check then runs on a copy of the object whose class adds one method: the forward
  then the loss, taking the forward's arguments and the targets under the loss's names
  for them, so that a backward taking ``(X, y)`` or ``(y)`` is read as a loss's
  gradient, as it is for a loss layer.
"""

from __future__ import annotations

import inspect
import re
from typing import Any

import numpy as np

from ..read._discovery import is_float_array
from ..read._observe import float_state, positional_names
from ..read._protocol import clone

__all__ = ["loss_method_chain"]

#: Method names that say "a loss": a metric (``mae``, ``accuracy``, ``score``) also turns
#: the output and the targets into a number, and which one the backward differentiates
#: cannot be observed.
_LOSS = re.compile(r"loss|cost|error|objective|criterion|entropy|nll|likelihood|mse|bce|"
                   r"hinge|divergence|kl|energy|penalty", re.I)
#: Argument names that say "the targets".
_TARGETS = re.compile(r"(y|t|ys|y_?true|y_?train|targets?|labels?|truth|gt|expected|"
                      r"desired|answers?|one_?hot)", re.I)
_CALLED = re.compile(r"takes (\d+) positional arguments? but (\d+) were given")


def loss_method_chain(layer: Any, inputs: tuple[Any, ...], error: dict[str, str] | None
                      ) -> tuple[Any, str, str] | None:
    """``(copy, forward name, note)`` for the chain above, when the forward ``error``
    names refused the inputs as too many; None when no such reading is observed."""
    if not error or error.get("type") != "TypeError" or not _CALLED.search(
            error.get("message", "")) or "." not in error.get("in", ""):
        return None
    f_name = error["in"].rsplit(".", 1)[-1]
    fwd = getattr(layer, f_name, None)
    names = positional_names(fwd, required=True) if callable(fwd) else None
    if not names or len(names) >= len(inputs):
        return None
    k = len(names)
    data, targets = inputs[:k], inputs[k:]
    try:
        obj = clone(layer)
        with np.errstate(all="ignore"):
            out = getattr(obj, f_name)(*clone(data))
    except Exception:  # noqa: BLE001 - no reading: the original error stands
        return None
    if not is_float_array(out):
        return None
    found = _loss_methods(obj, f_name, out, targets)
    if len(found) != 1:
        return None
    loss, first = found[0]
    made = _chained(layer, f_name, loss, first, names, targets)
    if made is None:
        return None
    order = "(output, targets)" if first else "(targets, output)"
    return made, _CHAIN, (
        f"{type(layer).__name__}.{f_name} takes {k} of the {len(inputs)} inputs; the rest "
        f"are the targets of {loss}{order}, the one method that turns its output into a "
        f"number: checked as {f_name} then {loss}, the backward as that loss's gradient")


_CHAIN = "forward_then_loss"


def _loss_methods(obj: Any, f_name: str, out: np.ndarray, targets: tuple[Any, ...]
                  ) -> list[tuple[str, bool]]:
    """(name, output first) of each method that reads as the loss (module docstring)."""
    found = []
    for name in dir(type(obj)):
        fn = inspect.getattr_static(type(obj), name, None)
        if name.startswith("__") or name == f_name or not inspect.isfunction(fn) or \
                not _LOSS.search(name):
            continue
        method = getattr(obj, name)
        need = positional_names(method, required=True)
        every = positional_names(method)
        if need is None or every is None or not len(need) <= 1 + len(targets) <= len(every):
            continue
        orders = {True: _number(obj, name, (out, *targets), out),
                  False: _number(obj, name, (*targets, out), out)}
        got = {o: v for o, v in orders.items() if v is not None}
        if len(got) == 2 and not np.isclose(got[True], got[False], rtol=1e-12, atol=0.0):
            named = [o for o in got if _TARGETS.fullmatch(every[1] if o else every[0])]
            got = {o: got[o] for o in named} if len(named) == 1 else {}
        if got:
            found.append((name, True in got))
    return found


def _number(obj: Any, name: str, args: tuple[Any, ...], out: np.ndarray) -> float | None:
    """What ``obj.name(*args)`` returns on a copy when it is one finite number, moving
    when the output (in ``args``) moves, the arrays the object held left as they were."""
    def call(a: tuple[Any, ...]) -> Any:
        o = clone(obj)
        before = float_state(o)
        with np.errstate(all="ignore"):
            v = getattr(o, name)(*clone(a))
        now = float_state(o)
        if any(p in now and not np.array_equal(now[p][1], old) for p, (_, old) in
               before.items()):
            raise ValueError("it changed the arrays held")  # a training step
        return v

    try:
        v = call(args)
        moved = call(tuple(out * 1.01 + 0.01 if a is out else a for a in args))
    except Exception:  # noqa: BLE001 - not the loss
        return None
    num = _scalar(v)
    other = _scalar(moved)
    if num is None or other is None or not np.isfinite(num) or num == other:
        return None
    return num


def _scalar(v: Any) -> float | None:
    if isinstance(v, bool) or not isinstance(v, (int, float, np.number, np.ndarray)):
        return None
    a = np.asarray(v)
    return float(a.reshape(())) if a.size == 1 and a.dtype.kind in "fiu" else None


def _chained(layer: Any, f_name: str, loss: str, first: bool, names: list[str],
             targets: tuple[Any, ...]) -> Any:
    """A copy of ``layer`` whose class adds the forward-then-loss method, its arguments
    named as the forward's and the loss's targets; None when the class cannot be
    extended (``__slots__``, a built-in type)."""
    cls = type(layer)
    every = positional_names(getattr(layer, loss)) or []
    t_names = every[1:1 + len(targets)] if first else every[:len(targets)]
    t_names = [n if n not in names else f"{n}_target" for n in t_names]
    k = len(names)

    def forward_then_loss(self: Any, *args: Any) -> Any:
        out = getattr(cls, f_name)(self, *args[:k])
        rest = args[k:]
        return getattr(cls, loss)(self, *((out, *rest) if first else (*rest, out)))

    p = inspect.Parameter
    forward_then_loss.__signature__ = inspect.Signature(  # type: ignore[attr-defined]
        [p("self", p.POSITIONAL_OR_KEYWORD)] + [p(n, p.POSITIONAL_OR_KEYWORD) for n in
                                                [*names, *t_names]])
    try:
        made = type(cls.__name__, (cls,), {_CHAIN: forward_then_loss,
                                           "__module__": cls.__module__,
                                           "__qualname__": cls.__qualname__})
        obj = clone(layer)
        obj.__class__ = made
    except TypeError:
        return None
    return obj
