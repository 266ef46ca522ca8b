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

import ast
import inspect
import re
import textwrap
from collections.abc import Callable
from typing import Any

import numpy as np

from ..read._discovery import get_path, is_float_array
from ..read._flat import returned_names
from ..read._observe import (
    IO_NAMED,
    TARGET_NAMED,
    float_state,
    grad_stem,
    method_pair,
    positional_names,
)
from ..read._protocol import clone

__all__ = ["given_loss_chain", "loss_method_chain", "loss_taking_all", "with_methods"]

#: Method names that say "a loss": a metric (``mae``, ``accuracy``, ``score``) also turns
#: the output and the targets into a number, and which one the backward differentiates
#: cannot be observed.
_LOSS = re.compile(r"loss|cost|error|objective|criterion|entropy|nll|likelihood|mse|bce|"
                   r"hinge|divergence|kl|energy|penalty", re.I)
#: Argument names that say "the targets".
_TARGETS = TARGET_NAMED
_BACKWARD_NAMED = re.compile(r"back|grad|deriv|prime|delta", re.I)
_CALLED = re.compile(r"takes (\d+) positional arguments? but (\d+) were given")


def loss_method_chain(layer: Any, inputs: tuple[Any, ...], error: dict[str, str] | None,
                      through: bool = False) -> tuple[Any, str, str | None, str, int] | None:
    """``(copy, forward name, backward name or None, note, how many of the inputs it
    takes)`` for the chain above, when
    the forward ``error`` names refused the inputs as too many; None when no such
    reading is observed. With ``through``, the chain whose backward is given the loss's
    gradient method's array (:func:`._loss_through.through_loss_gradient`) instead."""
    if (f_name := _refused(error, layer, inputs)) is None:
        return None
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
    picked = _picked_output(obj, f_name, out, targets)
    if picked is None:
        return None
    loss, first, at = picked
    handed = _handed_on(layer, f_name, (loss, first, at), data, targets, out)
    if through or handed is not None:  # a backward taking the loss's gradient's array is
        return handed if through else None  # never handed the loss's own output gradient
    said = _backward_names(layer, f_name, names, data, len(targets))  # backward(targets):
    made = _chained(layer, f_name, (loss, first, at), names, targets,  # under its names
                    1 if at is None else len(out), said if said and all(
                        _TARGETS.fullmatch(n) for n in said) else None)
    if made is None:
        return None
    order = "(output, targets)" if first else "(targets, output)"
    part = "" if at is None else f" (its output {at} of {len(out)})"
    return (*made, f"{type(layer).__name__}.{f_name} takes {k} of the {len(inputs)} inputs; "
            f"the rest are the targets of {loss}{order}{part}, the one method that turns "
            f"its output into a number: checked as {f_name} then {loss}, the backward as "
            "that loss's gradient" + ("" if made[2] is None else (
                ", given the forward's output by name" if at is None else
                f", given the forward's {len(out)} outputs after the inputs")), len(inputs))


def given_loss_chain(layer: Any, inputs: tuple[Any, ...], forward: str | None,
                     loss: Callable[..., Any]) -> tuple[Any, str, str | None, str]:
    """``(copy, forward name, backward name or None, note)`` of the chain of the forward
    and the loss the user gave (``check_layer(net, X, y, loss=fn)``, ``fn(output, y)``):
    the forward takes the first inputs, ``fn`` its output (the last of several that
    ``fn`` takes, of the targets' shape) and the rest. A ``TypeError`` when the forward
    takes every input (no targets are left for the loss) or ``fn`` gives no number."""
    why = ""
    for k in range(1, len(inputs)):
        try:
            f_name = method_pair(layer, forward, None, inputs[:k])[0]
        except Exception as exc:  # noqa: BLE001 - not with k inputs
            why = why or str(exc)
            continue
        if len(positional_names(getattr(layer, f_name), required=True) or []) == k:
            break
    else:
        raise TypeError("check_layer: loss= is the loss of a forward taking fewer inputs "
                        f"than the {len(inputs)} given (the rest its targets); " + (
                            f"read with fewer: {why}" if why else
                            f"{type(layer).__name__}'s forward takes them all"))
    data, targets = inputs[:k], inputs[k:]
    with np.errstate(all="ignore"):
        out = getattr(clone(layer), f_name)(*clone(data))
    outs = list(enumerate(out)) if isinstance(out, (tuple, list)) else [(None, out)]
    fit = [at for at, o in outs if _scalar(_try(loss, o, targets)) is not None]
    if len(fit) > 1:
        fit = [at for at in fit if np.shape(out[at]) == np.shape(targets[0])]
    sure, fit = len(fit) == 1, fit[-1:]  # (several: the last, no backward by names)
    if len(fit) != 1:
        raise TypeError(f"check_layer: loss= gave no number for the output of "
                        f"{type(layer).__name__}.{f_name} and the targets "
                        "(it is called as loss(output, *targets))")
    names = list(positional_names(getattr(layer, f_name), required=True) or [])
    made = _chained(layer, f_name, (loss, True, fit[0]), names, targets,
                    1 if fit[0] is None else len(out), _backward_names(layer, f_name, names,
                                                                       data, len(targets)),
                    by_names=sure)
    if made is None:
        raise TypeError(f"check_layer: loss= cannot be joined to {type(layer).__name__} "
                        "(its class cannot be extended)")
    part = "" if fit[0] is None else f" (its output {fit[0]} of {len(out)})"
    return (*made, f"{type(layer).__name__}.{f_name} takes {k} of the {len(inputs)} "
            f"inputs, the loss given (loss=) its output{part} and the rest: checked as one, "
            "the backward as that loss's gradient")


def _backward_names(layer: Any, f_name: str, names: list[str], data: tuple[Any, ...],
                    n: int) -> list[str] | None:
    """The names the backward gives the targets: its first ``n`` required arguments
    that are not the forward's (``y_onehot`` of ``backward(y_onehot)``)."""
    try:
        b_name = method_pair(layer, f_name, None, data)[1]
    except Exception:  # noqa: BLE001 - no backward found: the loss's own names
        return None
    extra = [a for a in positional_names(getattr(layer, b_name), required=True) or []
             if a not in names]
    return extra[:n] if len(extra) >= n else None


def _try(fn: Callable[..., Any], out: Any, targets: tuple[Any, ...]) -> Any:
    try:
        with np.errstate(all="ignore"):
            return fn(clone(out), *clone(targets))
    except (Exception, SystemExit):  # noqa: BLE001 - not this output (exit() too)
        return None


def _picked_output(obj: Any, f_name: str, out: Any, targets: tuple[Any, ...]
                   ) -> tuple[str, bool, int | None] | None:
    """(loss method, output first, which output) of the one loss found for the
    forward's output, or for one of the outputs it returns (of the targets' shape
    when several would do)."""
    if is_float_array(out):
        cands: list[tuple[int | None, Any]] = [(None, out)]
    elif isinstance(out, (tuple, list)) and 1 < len(out) <= 8 and all(
            is_float_array(o) for o in out):
        cands = list(enumerate(out))
    else:
        return None
    found = [(loss, first, at) for at, o in cands
             for loss, first in _loss_methods(obj, f_name, o, targets)]
    if len(found) > 1 and cands[0][0] is not None:  # the loss of a network's output
        found = [f for f in found if f[2] is not None and _every_element(  # depends on
            obj, f, out[f[2]], targets)]  # every element of it (not on those a clip cuts)
    if len(found) > 1 and cands[0][0] is not None:
        found = [f for f in found if f[2] is not None and np.shape(out[f[2]]) == np.shape(
            targets[0])]
    return found[0] if len(found) == 1 else None


def _every_element(obj: Any, found: tuple[str, bool, int | None], o: np.ndarray,
                   targets: tuple[Any, ...]) -> bool:
    """Whether the loss moves when any one element of the output ``o`` moves (the first
    200 of them): a clip (``np.clip(y_pred, eps, 1 - eps)``) given a pre-activation
    holds it still for the elements outside."""
    name, first = found[0], found[1]

    def value(a: np.ndarray) -> Any:
        with np.errstate(all="ignore"):
            return get_path(clone(obj), name)(*((a, *targets) if first else (*targets, a)))

    try:
        base = _scalar(value(o))
        for i in range(min(o.size, 200)):
            moved = np.array(o, dtype=np.float64, copy=True)
            moved.flat[i] += 1e-4 * (abs(moved.flat[i]) + 1.0)
            if _scalar(value(moved.astype(o.dtype))) == base:
                return False
    except (Exception, SystemExit):  # noqa: BLE001 - no evidence (exit() in it too)
        return False
    return True


_CHAIN = "forward_then_loss"


def loss_taking_all(layer: Any, inputs: tuple[Any, ...], error: dict[str, str] | None
                    ) -> tuple[str, str] | None:
    """``(name, note)`` of the one method named as a loss that takes every input given,
    the forward's under the forward's names, and returns one finite number, running the
    forward itself (``compute_loss(X, Y)``
    beside ``forward(X)`` and a ``backward()`` that starts from the loss), when the
    forward refused the inputs as too many; None otherwise. It is then checked as the
    forward."""
    if (f_name := _refused(error)) is None:
        return None
    fwd = getattr(layer, f_name, None)
    f_names = (positional_names(fwd, required=True) if callable(fwd) else None) or ["?"]
    found = []
    for name in _named_as_loss(layer, f_name):
        need = positional_names(getattr(layer, name), required=True)
        if need is not None and len(need) == len(inputs) and need[:len(f_names)] == \
                f_names and _number(layer, name, tuple(inputs), None) is not None:
            found.append(name)  # (its arguments the forward's by name: bce(y_hat, y) not)
    if len(found) != 1:
        return None
    return found[0], (f"{type(layer).__name__}.{f_name} takes fewer than the {len(inputs)} "
                      f"inputs; {found[0]}, the one method named as a loss that takes them "
                      "all and returns a number, checked as the forward")


def _refused(error: dict[str, str] | None, layer: Any = None,
             inputs: tuple[Any, ...] = ()) -> str | None:
    """The name of the method whose ``error`` says it was given more arguments than it
    takes (the forward refusing the targets), or that raised given float arrays for
    flags (``_forward(X, training=True)`` handed ``y``: ``if training and ...`` raised);
    None for any other error."""
    if not error or "." not in error.get("in", ""):
        return None
    name = error["in"].rsplit(".", 1)[-1]
    if error.get("type") == "TypeError" and _CALLED.search(error.get("message", "")):
        return name
    fn = getattr(layer, name, None) if layer is not None else None
    try:
        ps = [p for p in inspect.signature(fn).parameters.values() if p.kind in (
            p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)] if callable(fn) else []
    except (TypeError, ValueError):
        return None
    need = [p for p in ps if p.default is p.empty]
    flags = ps[len(need):len(inputs)]
    return name if need and len(need) < len(inputs) <= len(ps) and all(
        isinstance(p.default, bool) for p in flags) and all(
        is_float_array(x) for x in inputs[len(need):]) else None


def _handed_on(layer: Any, f_name: str, loss: tuple[Any, bool, int | None],
               data: tuple[Any, ...], targets: tuple[Any, ...], out: Any
               ) -> tuple[Any, str, str, str, int] | None:
    """:func:`._loss_through.through_loss_gradient`'s chain, when it reads the object."""
    from ._loss_through import through_loss_gradient  # (it imports this module)

    l_name, first, at = loss
    every = positional_names(get_path(layer, l_name)) or []
    t_names = every[1:1 + len(targets)] if first else every[:len(targets)]
    return None if at is not None or len(t_names) != len(targets) else \
        through_loss_gradient(layer, f_name, (l_name, first), data, targets, out, t_names)


def _named_as_loss(obj: Any, f_name: str) -> list[str]:
    """The methods of ``obj``'s class, the forward ``f_name`` aside, named as a loss."""
    return [name for name in dir(type(obj)) if not name.startswith("__") and name != f_name
            and not IO_NAMED.match(name)
            and inspect.isfunction(inspect.getattr_static(type(obj), name, None))
            and _LOSS.search(name)]


def _held_losses(obj: Any) -> list[str]:
    """``attr.method`` of each public method of an object the layer holds under a name
    that says "a loss" (``self.loss = BinaryCrossEntropy()``: ``loss.calculate``), but
    those named as its gradient (``backward``, ``derivative``)."""
    held = vars(obj) if hasattr(obj, "__dict__") else {}
    return [f"{attr}.{m}" for attr, v in held.items() if _LOSS.search(attr) and not
            isinstance(v, (np.ndarray, str, bytes, int, float, list, tuple, dict, type(None)))
            and not callable(v) for m in dir(type(v)) if not m.startswith("_")
            and not IO_NAMED.match(m)
            and inspect.isfunction(inspect.getattr_static(type(v), m, None))
            and not _BACKWARD_NAMED.search(m)]


def _loss_methods(obj: Any, f_name: str, out: np.ndarray, targets: tuple[Any, ...]
                  ) -> list[tuple[str, bool]]:
    """(name, output first) of each method that reads as the loss (module docstring)."""
    found = _fitting(obj, _named_as_loss(obj, f_name), out, targets)
    return found or _fitting(obj, _held_losses(obj), out, targets)  # (its own first)


def _fitting(obj: Any, names: list[str], out: np.ndarray, targets: tuple[Any, ...]
             ) -> list[tuple[str, bool]]:
    found = []
    for name in names:
        method = get_path(obj, name)
        need = positional_names(method, required=True)
        every = positional_names(method)
        if need is None or every is None or not len(need) <= 1 + len(targets) <= len(every):
            continue
        said = [o for o in (True, False) if _TARGETS.fullmatch(every[1] if o else every[0])
                and not _TARGETS.fullmatch(every[0] if o else every[1])]  # (y, y_pred): the
        orders = {o: _number(obj, name, (out, *targets) if o else (*targets, out), out)  # names
                  for o in (said or [True, False])}  # place the targets where they say
        got = {o: v for o, v in orders.items() if v is not None}
        if len(got) == 2 and not np.isclose(got[True], got[False], rtol=1e-12, atol=0.0):
            named = [o for o in got if _TARGETS.fullmatch(every[1] if o else every[0])]
            got = {o: got[o] for o in named} if len(named) == 1 else {}
        if got:
            found.append((name, True in got))
    return found


def _number(obj: Any, name: str, args: tuple[Any, ...], out: np.ndarray | None
            ) -> float | None:
    """What ``obj.name(*args)`` returns on a copy when it is one finite number, moving
    when the output (in ``args``; with None, the first float array) moves, the arrays
    the object held left as they were."""
    if out is None:
        out = next((a for a in args if is_float_array(a)), None)
        if out is None:
            return None
    def call(a: tuple[Any, ...]) -> Any:
        o = clone(obj)
        before = float_state(o)
        with np.errstate(all="ignore"):
            v = get_path(o, name)(*clone(a))
            again = get_path(o, name)(*clone(a))
        now = float_state(o)
        if any(p in now and not np.array_equal(now[p][1], old) for p, (_, old) in
               before.items()):
            raise ValueError("it changed the arrays held")  # a training step
        if _scalar(again) != _scalar(v):
            raise ValueError("a second call gives another number")  # a running mean
        return v

    try:
        v = call(args)
        moved = call(tuple(out * 1.01 + 0.01 if a is out else a for a in args))
    except (Exception, SystemExit):  # noqa: BLE001 - not the loss (exit() in it too)
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


def _chained(layer: Any, f_name: str, loss: tuple[Any, bool, int | None],
             names: list[str], targets: tuple[Any, ...], n_out: int,
             t_given: list[str] | None = None, by_names: bool = True
             ) -> tuple[Any, str, str | None] | None:
    """A copy of ``layer`` whose class adds the forward-then-loss method, its arguments
    named as the forward's and the loss's targets, and, for a forward returning several
    outputs, the backward given them after the inputs when it takes them so
    (``_backward(X, y, z1, a1, z2, a2)``); with the two names (the second None when
    the backward is the layer's own); None when the class cannot be extended."""
    cls, (l_name, first, at) = type(layer), loss
    fn = l_name if callable(l_name) else get_path(layer, l_name)
    every = positional_names(fn) or []
    if len(every) < 1 + len(targets):
        every = ["output", *(f"target{i}" for i in range(len(targets)))]
    t_names = every[1:1 + len(targets)] if first else every[:len(targets)]
    t_names, k = [n if n not in names else f"{n}_target" for n in t_given or t_names], len(names)
    back = None if at is None else _taking_outputs(layer, f_name, names, len(targets) + n_out)
    place: list[tuple[str, int]] | None = None
    if back is not None:  # the targets under the names that backward gives them
        t_names = (positional_names(getattr(layer, back)) or [])[k:k + len(targets)]
    elif by_names and (named := _named_outputs(layer, f_name, names, len(targets), n_out,
                                                at is None) or at is None and _named_outputs(
            layer, f_name, names, len(targets), 1, True, every[:1] if first else
            every[len(targets):len(targets) + 1])):  # backward(y_hat, y) beside loss(y_hat, y)
        back, place = named  # backward(y_pred, y_true, cache) of return y_pred, cache
        need = positional_names(getattr(layer, back), required=True) or []
        t_names = [need[j] for j, (kind, _i) in enumerate(place) if kind == "t"]
    args = [*names, *t_names]

    def forward_then_loss(self: Any, *xs: Any) -> Any:
        out = getattr(cls, f_name)(self, *xs[:k])
        if back is not None and hasattr(self, "__dict__"):  # for the backward: the same
            self.__dict__[_KEPT] = lambda kept=out: clone(kept)  # outputs, no second draw
        out = out if at is None else out[at]
        rest = xs[k:]
        args = (out, *rest) if first else (*rest, out)
        return l_name(*args) if callable(l_name) else get_path(self, l_name)(*args) if \
            "." in l_name else getattr(cls, l_name)(self, *args)

    forward_then_loss.gradcheck_targets = k  # type: ignore[attr-defined]  # (the inputs
    methods: dict[str, Any] = {_CHAIN: _signed(forward_then_loss, args)}  # from k on)
    if back is not None:
        def backward_given_outputs(self: Any, *xs: Any) -> Any:
            kept = getattr(self, "__dict__", {}).get(_KEPT)
            outs = kept() if kept is not None else getattr(cls, f_name)(self, *xs[:k])
            outs = (outs,) if at is None else outs  # (one output, given back by its name)
            given = [*xs, *outs] if place is None else [
                xs[i] if kind == "x" else xs[k + i] if kind == "t" else outs[i]
                for kind, i in place]
            got = getattr(cls, back)(self, *given)
            return _kept_by_name(self, _keyed(self, getattr(cls, back), got))
        methods[_BACK] = _signed(backward_given_outputs, args)
    obj = with_methods(layer, methods)
    return None if obj is None else (obj, _CHAIN, None if back is None else _BACK)


def with_methods(layer: Any, methods: dict[str, Any]) -> Any:
    """A copy of ``layer`` whose class is a subclass of its own, named as it, adding
    ``methods`` (the readings' chains); None when the class cannot be extended."""
    cls = type(layer)
    try:
        made = type(cls.__name__, (cls,), {**methods, "__module__": cls.__module__,
                                           "__qualname__": cls.__qualname__})
        obj = clone(layer)
        obj.__class__ = made
    except TypeError:
        return None
    return obj


_BACK = "backward_given_outputs"
_KEPT = "_gradcheck_outputs"  # (a function: never walked as arrays the layer holds)


def _keyed(obj: Any, method: Any, got: Any) -> Any:
    """A flat tuple its code returns under names that are, less a gradient affix, the
    names of arrays ``obj`` holds (``return d_W1, d_b1`` for ``W1``, ``b1``), as a dict
    keyed by those arrays' names; anything else as it came."""
    if not isinstance(got, (tuple, list)) or not got:
        return got
    said = returned_names(method, len(got)) or []
    held = {n.lower(): n for n, v in vars(obj).items() if is_float_array(v)} if hasattr(
        obj, "__dict__") else {}
    keys = [held.get(grad_stem(n)) if grad_stem(n) != n.lower() else None for n in said]
    if len(keys) != len(got) or None in keys or len(set(keys)) != len(keys):
        return got
    return dict(zip(keys, got, strict=True))


def _kept_by_name(obj: Any, got: Any) -> Any:
    """A dict of gradients keyed by the names of the arrays ``obj`` holds, each of its
    array's shape (``{'weights_input_hidden': ..., 'bias_hidden': ...}``), stored beside
    them as ``<name>_grad`` (on the copy checked, over a slot of that name the layer
    keeps: read there as theirs, a network has no input gradient to return beside them),
    None returned; anything else as it came."""
    if isinstance(got, dict) and got and (box := _boxed(obj, got)):
        setattr(obj, box, dict(got))  # keyed as its params dict: a grads dict beside it
        return None
    if not isinstance(got, dict) or not got or not all(
            isinstance(k, str) and is_float_array(v) and is_float_array(
                getattr(obj, k, None)) and np.shape(getattr(obj, k)) == v.shape and (
                not hasattr(obj, f"{k}_grad") or np.shape(getattr(obj, f"{k}_grad")) ==
                v.shape) for k, v in got.items()):
        return got
    for k, v in got.items():
        setattr(obj, f"{k}_grad", v)
    return None


def _boxed(obj: Any, got: dict[Any, Any]) -> str | None:
    """``grads`` when ``obj`` holds a dict ``params`` with the keys of ``got``, each an
    array of the shape ``got`` gives it, and no ``grads`` but a dict or None: the
    gradients are then kept there, as the params/grads convention reads them."""
    held = getattr(obj, "params", None)
    if not isinstance(held, dict) or not isinstance(getattr(obj, "grads", None), (
            dict, type(None))) or set(held) != set(got):  # (its own grads dict: replaced
        return None  # on the copy checked by what this call returned)
    ok = all(is_float_array(held[k]) and is_float_array(v) and np.shape(held[k]) == v.shape
             for k, v in got.items())
    return "grads" if ok else None


def _signed(fn: Any, names: list[str]) -> Any:
    """``fn`` (``self, *args``) with a signature naming its arguments ``names``."""
    p = inspect.Parameter
    fn.__signature__ = inspect.Signature(
        [p("self", p.POSITIONAL_OR_KEYWORD)] + [p(n, p.POSITIONAL_OR_KEYWORD) for n in names])
    return fn


def _taking_outputs(layer: Any, f_name: str, args: list[str], more: int) -> str | None:
    """The one method whose required arguments are the forward's, ``args``, then
    ``more``: the targets and as many as the forward returns outputs (``_backward(X, y,
    z1, a1, z2, a2)``)."""
    fits = [name for name, need in _others(layer, f_name)
            if len(need) == len(args) + more and need[:len(args)] == args]
    return fits[0] if len(fits) == 1 else None


def _others(layer: Any, f_name: str) -> list[tuple[str, list[str]]]:
    """Each method of the layer's class but ``f_name`` and dunders, with its required
    arguments."""
    return [(name, positional_names(getattr(layer, name), required=True) or [])
            for name in dir(type(layer)) if not name.startswith("__") and name != f_name
            and not IO_NAMED.match(name)
            and inspect.isfunction(inspect.getattr_static(type(layer), name, None))]


def _named_outputs(layer: Any, f_name: str, args: list[str], n_targets: int, n_out: int,
                   alone: bool = False, said: list[str] | None = None
                   ) -> tuple[str, list[tuple[str, int]]] | None:
    """The one method besides the forward whose required arguments are named as the
    outputs the forward's code returns (``return y_pred, cache``), every one of them, the
    forward's own arguments by their names and ``n_targets`` more, the targets, in their
    order (``backward(y_pred, y_true, cache)``); with each argument's place: ``("o", j)``
    the ``j``-th output, ``("x", i)`` the ``i``-th input, ``("t", i)`` the ``i``-th
    target; ``said``, the output's name when it is not the forward's code's (the name
    the loss takes it under). None otherwise."""
    given = bool(said)
    said = said or (_returned_alone(getattr(layer, f_name)) if alone else returned_names(
        getattr(layer, f_name), n_out))  # (alone: ``return output``, ``backward(output, y)``)
    if not said or "" in said or len(set(said)) != n_out or set(said) & set(args):
        return None
    fits = []
    for name, need in _others(layer, f_name):
        if not set(said) <= set(need):
            continue
        rest = [a for a in need if a not in said and a not in args]
        if len(rest) == n_targets:
            fits.append((name, [("o", said.index(a)) if a in said else ("x", args.index(a))
                                if a in args else ("t", rest.index(a)) for a in need]))
    if len(fits) > 1 or alone:  # backward(output, y) beside accuracy(output, y) or the
        fits = [f for f in fits if _BACKWARD_NAMED.search(f[0])]  # loss(Y, T) itself
    if given:  # the loss's own name for the output: a backward by name, never the loss's
        fits = [f for f in fits if "back" in f[0].lower()]  # gradient (loss_gradient(p, y))
    return fits[0] if len(fits) == 1 else None


def _returned_alone(method: Any) -> list[str] | None:
    """``[name]`` when every ``return`` of ``method``'s code returns the variable
    ``name`` (``return output``); None otherwise."""
    try:
        tree = ast.parse(textwrap.dedent(inspect.getsource(getattr(method, "__func__", method))))
    except (OSError, TypeError, SyntaxError):
        return None
    found = {node.value.id if isinstance(node.value, ast.Name) else "" for node in ast.walk(
        tree) if isinstance(node, ast.Return) and node.value is not None}
    return [found.pop()] if len(found) == 1 and "" not in found else None
