"""Two readings of a layer that :func:`gradcheck.check_layer` tries when the plain one
raised, each observed on copies (the layer given is never touched):

- **Built on first use**: the forward raised ``AttributeError`` for an array the layer
  does not hold yet, and calling the layer itself once (``layer(x)``, the way its
  ``__call__`` builds the weights from the first input's shape) creates float arrays
  after which the forward runs: the check starts from that copy (:func:`warmed`).
- **An optimizer handed to the backward**: ``backward(dy, optimizer_)`` takes, beside the
  output gradient, an object it hands each gradient to (``optimizer_.update(self, '_w',
  dw)``, ``opt.step(self.W, dW)``). Given a stand-in that records those calls and takes
  a step of size 1 (so an input gradient computed after the step is wrong, as it is in
  training), each float array the layer does not hold handed beside a parameter (the
  array itself, or an object and the name of its attribute) is that parameter's
  gradient: stored beside it on the copy as ``<name>_grad`` (summed when handed twice in
  one backward), where the reading of stored gradients finds it (:func:`fed_stand_in`).
"""

from __future__ import annotations

import inspect
from typing import Any

import numpy as np

from ..read._discovery import is_float_array, walk
from ..read._observe import method_pair
from ..read._protocol import GlobalDraws, clone

__all__ = ["fed_stand_in", "warmed"]


def _arrays(obj: Any) -> dict[str, int]:
    return {p: id(v) for p, v in walk(obj) if is_float_array(v)}


def warmed(layer: Any, inputs: tuple[Any, ...], error: dict[str, str],
           forward: str | None, backward: str | None = None) -> tuple[Any, str] | None:
    """A copy of ``layer`` after one call of the layer itself, and the note saying so,
    when the forward raised ``AttributeError`` on a missing attribute and that call
    creates float arrays after which the forward runs; None otherwise (``backward``, as
    :func:`fed_stand_in` takes it, is not needed)."""
    if forward is not None or error.get("type") != "AttributeError" or "has no attribute" \
            not in error.get("message", "") or type(layer).__call__ is object.__call__ or \
            not callable(layer):
        return None
    try:
        f, _, _ = method_pair(layer, None, None, inputs)
        if not error.get("in", "").endswith(f".{f}") or f == "__call__":
            return None
        warm = clone(layer)
        before = _arrays(warm)
        kept = GlobalDraws(type(layer))  # the global generators, the class's own lists
        try:
            with np.errstate(all="ignore"):
                warm(*clone(inputs))
                getattr(clone(warm), f)(*clone(inputs))
        finally:
            kept.restore()
    except Exception:  # noqa: BLE001 - no evidence: the first error stays
        return None
    made = [p for p in _arrays(warm) if p not in before]
    if not made:
        return None
    name = type(layer).__name__
    return warm, (f"{name}.{f} raised AttributeError ({error['message']}) on the layer as "
                  f"given; calling it once, {name}(x), created {', '.join(made[:6])}"
                  f"{' ...' if len(made) > 6 else ''} (built on first use): checked on a "
                  "copy that ran once")


class _StandIn:
    """Answers every method with a recorder of its arguments (:meth:`_take`)."""

    def __init__(self, root: Any) -> None:
        self._root, self._seen = root, set[tuple[int, str]]()
        self.handed = 0

    def __getattr__(self, method: str) -> Any:
        if method.startswith("__"):
            raise AttributeError(method)

        def record(*args: Any, **kwargs: Any) -> Any:
            return self._take(list(args) + list(kwargs.values()))
        return record

    def _take(self, args: list[Any]) -> Any:
        """Stores each gradient handed beside a parameter and takes a step of size 1 on
        it (a backward computing its input gradient after the step uses the new weights,
        as in training); returns the parameter after the step (``self.W =
        opt.update(self.W, dW)``), None when none was handed. The gradient is the first
        float array of the parameter's shape after it that the layer does not hold
        (``update(W, vW, dW)``: the velocity ``vW`` is the layer's, no gradient)."""
        owners = {id(v): (o, k) for o in _holders(self._root)
                  for k, v in vars(o).items() if is_float_array(v)}
        stepped, i = None, 0
        while i < len(args):
            a = args[i]
            if isinstance(a, str) and i > 0 and hasattr(args[i - 1], "__dict__"):
                target, value = (args[i - 1], a), vars(args[i - 1]).get(a)
            elif is_float_array(a) and id(a) in owners:
                target, value = owners[id(a)], a
            else:
                i += 1
                continue
            at = next((j for j in range(i + 1, len(args)) if is_float_array(args[j]) and
                       id(args[j]) not in owners and np.shape(args[j]) == np.shape(value)),
                      None)
            if not is_float_array(value) or at is None:
                i += 1
                continue
            grad = np.array(args[at], copy=True)
            self._store(*target, grad)
            new = np.asarray(value - grad, dtype=value.dtype)
            setattr(*target, new)
            stepped = new if stepped is None else stepped
            i = at + 1
        return stepped

    def _store(self, obj: Any, name: str, grad: np.ndarray) -> None:
        key = f"{name}_grad"
        if (id(obj), key) in self._seen:
            setattr(obj, key, getattr(obj, key) + grad)
        else:
            self._seen.add((id(obj), key))
            setattr(obj, key, grad)
        self.handed += 1


def _holders(root: Any) -> list[Any]:
    """``root`` and every object with attributes it holds (sub-layers)."""
    out, ids = [root], {id(root)}
    for _, v in walk(root):
        if hasattr(v, "__dict__") and not isinstance(v, (type, np.ndarray)) and id(v) not in ids:
            ids.add(id(v))
            out.append(v)
    return out


def _extra_required(method: Any) -> str | None:
    """The name of the one required positional argument after the first, if that is all
    the method requires besides it."""
    try:
        ps = list(inspect.signature(method).parameters.values())
    except (TypeError, ValueError):
        return None
    req = [p for p in ps if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)
           and p.default is p.empty]
    return req[1].name if len(req) == 2 else None


def fed_stand_in(layer: Any, inputs: tuple[Any, ...], error: dict[str, str],
                 forward: str | None, backward: str | None) -> tuple[Any, str] | None:
    """A copy of ``layer`` whose backward takes the output gradient alone and hands the
    stand-in optimizer to the layer's own, and the note saying so, when the backward
    raised for want of that argument and, given the stand-in on a copy, handed it at
    least one parameter's gradient; None otherwise."""
    if backward is not None or error.get("type") != "TypeError" or "missing 1 required" \
            not in error.get("message", ""):
        return None
    try:
        f, b, _ = method_pair(layer, forward, None, inputs)
    except Exception:  # noqa: BLE001 - no pair: the first error stays
        return None
    extra = _extra_required(getattr(layer, b, None))
    if extra is None or not error.get("in", "").endswith(f".{b}"):
        return None
    cls = type(layer)
    own = getattr(cls, b)

    def fed(self: Any, dy: Any) -> Any:
        return own(self, dy, _StandIn(self))

    fed.__name__ = fed.__qualname__ = b
    proxy_cls = type(cls.__name__, (cls,), {b: fed, "__module__": cls.__module__,
                                           "__qualname__": cls.__qualname__})
    proxy = clone(layer)
    try:
        proxy.__class__ = proxy_cls
        trial = clone(proxy)
        with np.errstate(all="ignore"):
            out = getattr(trial, f)(*clone(inputs))
            stand_in = _StandIn(trial)
            own(trial, np.ones_like(np.asarray(out, dtype=np.float64)), stand_in)
    except Exception:  # noqa: BLE001 - not this reading: the first error stays
        return None
    if not stand_in.handed:
        return None
    return proxy, (f"{cls.__name__}.{b} takes {extra!r} beside the output gradient and "
                   "hands it each gradient: given a stand-in that records them and takes a "
                   "step of size 1, each array handed beside a parameter is its gradient "
                   "(stored beside it as <name>_grad on the copies checked)")
