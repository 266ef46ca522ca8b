"""Methods that complete a backward leaving the parameters' gradients to a second call
(EpyNN's ``compute_gradients()``, mlpractical's ``grads_wrt_params(inputs,
grads_wrt_outputs)``, ``derived_params(x, delta)``): the candidates tried, one by one,
when no gradient is found."""

from __future__ import annotations

import inspect
import re
import types
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np

from ._discovery import is_float_scalar, set_path, try_path
from ._layer_call import Protocol, ones_like, uneven
from ._observe import IO_NAMED, backward_named, default_of, last_name, positional_names
from ._protocol import clone
from ._reading import leaves, probe
from ._step import held_floats

__all__ = ["completing_methods", "folded_step", "scaled_by_held"]

# A method that computes gradients, by a verb that says so (compute_gradients, calc_grads,
# accumulate_grad): only such a method is called unasked, never zero_grad or save_grads.
_COMPUTES_GRADIENTS = re.compile(r"^(compute|calc(ulate)?|accumulate|backprop|get)_?\w*grad",
                                 re.I)


def completing_methods(layer: Any, forward: str | None, backward: str | None) -> list[str]:
    """The layer's public methods but its forward and backward that name gradients and
    take no argument and say they compute them (``compute_gradients()``) or take some of
    the backward's arguments, by name (``grads_wrt_params(inputs, grads_wrt_outputs)``),
    the others as many as the forward's inputs (``gradient(z_down, _e)``), or, named
    anyhow, take two or more of the backward's arguments by name (``derived_params(x,
    delta)``): candidates to complete a backward leaving the gradients to a second call."""
    found, bwd = [], getattr(layer, backward or "backward", None)
    given = set(positional_names(bwd) or []) if callable(bwd) else set()
    fwd = getattr(layer, forward or "forward", None)
    n_in = len(positional_names(fwd, required=True) or []) if callable(fwd) else -1
    for name in dir(type(layer)):
        skip = name.startswith("_") or IO_NAMED.match(name) or name in (
            forward, backward, "forward", "backward") or \
            not callable(inspect.getattr_static(type(layer), name, None))  # (no property run)
        method = None if skip else getattr(layer, name, None)
        names = positional_names(method) if callable(method) else None
        if names is None:
            continue
        named = "grad" in name.lower() or backward_named(name)  # backward_params
        wants = [n for n in names if default_of(method, n) is inspect.Parameter.empty]
        if named and not wants and _COMPUTES_GRADIENTS.match(name) or len(wants) > 1 and set(
                wants) <= given or named and (wants and set(wants) <= given or set(wants) &
                                              given and len(set(wants) - given) == n_in):
            found.append(name)  # (the rest: the forward's inputs, gradient(z_down, _e))
    return found


def scaled_by_held(proto: Protocol, xs: list[Any]) -> str:
    """Whether the parameters' gradients a completing method gives change with a float
    the output does not depend on, twice as large for twice it: a step size
    (``sgd_step(x, delta)`` returning ``lr * (db, dW)``), a step, no gradient. The floats
    tried: those the layer holds (:func:`held_floats`, and two objects away), the
    method's default arguments (``lr=0.1``) and the module constants its code names.
    Returns the float's name, or "" when none scales them."""
    base, values = proto.layer, [np.asarray(p.read(proto.layer)) for p in proto.params]
    out, cache = proto.run_forward(clone(xs), values)
    ref = proto.run_backward(ones_like(out), clone(cache))[len(xs):]
    for name, doubled in _doubled(base, proto.then, proto.forward):
        try:
            proto.layer = doubled()
            again, cache = proto.run_forward(clone(xs), values)
            got = proto.run_backward(ones_like(again), clone(cache))[len(xs):]
        except Exception:  # noqa: BLE001, S112 - no evidence of a step size
            continue
        finally:
            proto.layer = base
        pairs = [(a, b) for a, b in zip(ref, got, strict=True) if a is not None and
                 b is not None and np.any(a)]
        if all(np.array_equal(a, b) for a, b in zip(leaves(out), leaves(again), strict=False)
               ) and pairs and all(np.allclose(b, 2 * a) for a, b in pairs):
            return name  # (twice the float, twice the results: a step size; a strength
    return ""  # of a term only the gradient has, 0.0 off, is no step)


def folded_step(proto: Protocol, xs: list[Any], read: bool) -> Protocol:
    """``proto``, with a float the layer holds that scales every parameter's gradient the
    backward gives, the output not depending on it (``self.d_w += self.learning_rate *
    grad``: a step size folded into what it stores), set to 1.0 on the copies checked,
    with a note; only for gradients ``read`` by observation, no step already read, and a
    method of the layer that applies what the backward stored (:func:`_applies_stored`)."""
    if not read or proto.held_step is not None or not proto.params or not held_floats(
            proto.layer) or proto.then is not None or not _applies_stored(proto, xs):
        return proto
    name = scaled_by_held(proto, xs)
    if name and name in held_floats(proto.layer):
        layer = proto.layer
        proto.layer, proto.held_step = clone(layer), name
        set_path(proto.layer, name, 1.0)
        proto.note(f"{type(layer).__name__}.{name} scales every gradient the backward gives "
                   "(a step size folded into what it stores): set to 1.0 on the copies "
                   "checked")
    return proto


def _applies_stored(proto: Protocol, xs: list[Any]) -> bool:
    """Whether a public method of the layer taking no argument, whose code reads every
    parameter and the attribute its gradient is stored at, moves each parameter, after a
    forward and a backward, by exactly what the backward stored there (``update()``:
    ``self.weights += self.d_w``; not a ``zero_grad()``, nor ``W -= lr * dW`` scaling it
    again): what the backward stores is then a step that method applies, not a gradient
    alone (a factor in a gradient no such method applies is a bug: ``self.skew * grad``)."""
    wanted = {last_name(q) for p in proto.params for q in (p.value, p.grad)
              if isinstance(q, str)}
    if any(not isinstance(p.grad, str) for p in proto.params) or proto.draws is None:
        return False
    for name in dir(type(proto.layer)):
        fn = inspect.getattr_static(type(proto.layer), name, None)
        if name.startswith("_") or IO_NAMED.match(name) or not isinstance(
                fn, types.FunctionType) or name in (
                proto.forward, proto.backward) or len(positional_names(
                    fn, required=True) or [1, 2]) != 1 or not wanted <= set(fn.__code__.co_names):
            continue
        try:
            after = probe(proto.layer, proto.forward, proto.backward, xs, proto.draws, (
                proto.style, proto.order), proto.out_path, lambda o: uneven(ones_like(o))).after
            steps = [np.array(p.read_grad(after), dtype=np.float64) for p in proto.params]
            was = [np.array(p.read(after), dtype=np.float64) for p in proto.params]
            getattr(after, name)()
            moved = [np.asarray(p.read(after), dtype=np.float64) - w for p, w in zip(
                proto.params, was, strict=True)]
        except Exception:  # noqa: BLE001, S112 - no evidence that it applies the step
            continue
        if all(np.any(g) and np.any(m) and m.shape == g.shape == w.shape for g, m, w in zip(
                steps, moved, was, strict=True)) and (_applied(moved, steps, was) or _applied(
                    moved, [-g for g in steps], was)):
            return True
    return False


def _applied(moved: list[np.ndarray], steps: list[np.ndarray], was: list[np.ndarray]) -> bool:
    """Whether every parameter moved by its step, exactly, or beside one multiple of its
    value shared by all (a weight decay the update adds, ``p -= dp + lr * wd * p``), told
    by the parameters of several distinct numbers (one number, or a constant array, is a
    multiple of anything)."""
    rest = [m - g for m, g in zip(moved, steps, strict=True)]
    if all(np.allclose(r, 0, rtol=0, atol=1e-9 * float(np.max(np.abs(g)))) for r, g in zip(
            rest, steps, strict=True)):
        return True
    told = [k for k, w in enumerate(was) if np.ptp(w) > 0]
    if not told:
        return False
    u = np.concatenate([rest[k].ravel() for k in told])
    v = np.concatenate([was[k].ravel() for k in told])
    decay = float(np.sum(u * v) / np.sum(v * v))  # (one for all, least squares: each fits it)
    return all(np.allclose(r, decay * w, rtol=1e-6, atol=1e-12 * float(np.max(np.abs(r))))
               for r, w in zip(rest, was, strict=True))


def _doubled(layer: Any, then: str | None, forward: str
             ) -> Iterator[tuple[str, Callable[[], Any]]]:
    """Makers of copies of ``layer``, each with one float it may scale a step by doubled:
    one it holds, one two objects away (``self.net.opt.lr``), a default argument of its
    method ``then`` that its forward does not take too, or a module constant that
    method's code names and no other method of its class does (``LR``; not a ``GAIN``
    the forward applies, which doubled in one method alone is no evidence)."""
    def held(name: str) -> Callable[[], Any]:
        def make() -> Any:
            other = clone(layer)
            set_path(other, name, float(try_path(other, name)) * 2.0)
            return other
        return make
    yield from ((n, held(n)) for n in [*held_floats(layer), *_two_away(layer)])
    fn = inspect.getattr_static(type(layer), then or "", None)
    if not isinstance(fn, types.FunctionType):
        return
    taken = set(inspect.signature(getattr(layer, forward)).parameters)
    named = {n for c in type(layer).__mro__[:-1] for m, f in vars(c).items() if m != then
             and isinstance(f, types.FunctionType) for n in f.__code__.co_names}
    for name, value in _outside_floats(fn):
        if name not in (taken if name in inspect.signature(fn).parameters else named):
            yield name, _with_method(layer, then or "", _rebuilt(fn, name, 2.0 * value))


def _two_away(layer: Any) -> list[str]:
    """The floats held two objects away from ``layer``, as ``owner.inner.name``."""
    found = []
    for n, v in vars(layer).items() if hasattr(layer, "__dict__") else ():
        if _plain_object(v) and v is not layer:
            found += [f"{n}.{m}.{k}" for m, w in vars(v).items() if _plain_object(w) and
                      w is not layer for k, u in vars(w).items() if is_float_scalar(u)]
    return found


def _plain_object(v: Any) -> bool:
    return hasattr(v, "__dict__") and not isinstance(v, (type, np.ndarray, types.ModuleType)
                                                     ) and not callable(v)


def _outside_floats(fn: types.FunctionType) -> list[tuple[str, float]]:
    """The float default arguments of ``fn`` and the float module constants it names."""
    found = [(p.name, float(p.default)) for p in inspect.signature(fn).parameters.values()
             if is_float_scalar(p.default)]
    return found + [(n, float(fn.__globals__[n])) for n in fn.__code__.co_names
                    if is_float_scalar(fn.__globals__.get(n))]


def _rebuilt(fn: types.FunctionType, name: str, value: float) -> types.FunctionType:
    """``fn`` with its default argument or module constant ``name`` set to ``value`` (a
    new function: the user's module and function are left as they were)."""
    if name in inspect.signature(fn).parameters:
        new = types.FunctionType(fn.__code__, fn.__globals__, fn.__name__, fn.__defaults__,
                                 fn.__closure__)
        new.__kwdefaults__ = fn.__kwdefaults__
        names = fn.__code__.co_varnames[:fn.__code__.co_argcount]
        if name in names and fn.__defaults__:
            k = list(names).index(name) - (len(names) - len(fn.__defaults__))
            new.__defaults__ = tuple(value if i == k else d for i, d in
                                     enumerate(fn.__defaults__))
        elif fn.__kwdefaults__ and name in fn.__kwdefaults__:
            new.__kwdefaults__ = {**fn.__kwdefaults__, name: value}
        return new
    return types.FunctionType(fn.__code__, {**fn.__globals__, name: value}, fn.__name__,
                              fn.__defaults__, fn.__closure__)


def _with_method(layer: Any, name: str, fn: types.FunctionType) -> Callable[[], Any]:
    """A maker of a copy of ``layer`` whose class has ``fn`` as its method ``name``."""
    def make() -> Any:
        other = clone(layer)
        other.__class__ = type(type(layer).__name__, (type(layer),), {name: fn})
        return other
    return make
