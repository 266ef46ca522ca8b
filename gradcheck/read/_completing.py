"""Methods that complete a backward leaving the parameters' gradients to a second call
(EpyNN's ``compute_gradients()``, mlpractical's ``grads_wrt_params(inputs,
grads_wrt_outputs)``, ``derived_params(x, delta)``): the candidates tried, one by one,
when no gradient is found."""

from __future__ import annotations

import inspect
import re
from typing import Any

import numpy as np

from ._discovery import set_path, try_path
from ._layer_call import Protocol, ones_like
from ._observe import backward_named, default_of, positional_names
from ._protocol import clone
from ._reading import leaves
from ._step import held_floats

__all__ = ["completing_methods", "scaled_by_held"]

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
        skip = name.startswith("_") or name in (forward, backward, "forward", "backward") or \
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


def scaled_by_held(proto: Protocol, xs: list[Any]) -> bool:
    """Whether the parameters' gradients a completing method gives change with a float
    the layer holds that the output does not depend on, twice as large for twice it: a
    step size (``sgd_step(x, delta)`` returning ``lr * (db, dW)``), a step, no gradient."""
    base, values = proto.layer, [np.asarray(p.read(proto.layer)) for p in proto.params]
    out, cache = proto.run_forward(clone(xs), values)
    ref = proto.run_backward(ones_like(out), clone(cache))[len(xs):]
    for name in held_floats(base):
        proto.layer = clone(base)
        try:
            set_path(proto.layer, name, float(try_path(proto.layer, name)) * 2.0)
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
            return True  # (twice the float, twice the results: a step size; a strength
    return False  # of a term only the gradient has, 0.0 off, is no step)
