"""Autograd-style functions: a static ``forward(ctx, *inputs)`` and a static
``backward(ctx, grad_output)`` that keep what the backward needs on a context object their
caller makes (``ctx.save_for_backward(a, b)``, ``ctx.shape = a.shape``), as in PyTorch's
``torch.autograd.Function`` and the homework engines modelled on it.

Read by observation: the forward takes one argument more than the inputs given, and
called with a fresh context first, it uses that context (stores on it), or its first
argument has the name of the backward's first. The context is the one the code's own
module defines (a class with a ``save_for_backward`` method, made without arguments),
else :class:`Context`. The forward's output handed back to the backward keeps its kind
(a ``Tensor`` output: its gradient given as a copy of it holding the gradient array), and
gradients the backward returns in such objects are read from them.
"""

from __future__ import annotations

import copy
import inspect
from typing import Any

import numpy as np

from ._protocol import clone

__all__ = ["Context", "box_name", "function_layer", "like", "unboxed"]


class Context:
    """A context of the kind PyTorch hands its functions: ``save_for_backward(*values)``
    keeps them as ``saved_tensors``; any other attribute may be set on it."""

    def save_for_backward(self, *values: Any) -> None:
        self.saved_tensors = values


class FunctionCall:
    """A layer object calling a static forward/backward pair with a context of its own,
    made anew for every forward (named after the function in messages)."""

    def __init__(self, fn: Any, make: Any, forward: str, backward: str) -> None:
        self._fn, self._make, self._f, self._b = fn, make, forward, backward
        self._ctx: Any = None
        self._out: Any = None

    def forward(self, *inputs: Any) -> Any:
        self._ctx = self._make()
        self._out = getattr(self._fn, self._f)(self._ctx, *inputs)
        return self._out

    def backward(self, *grads: Any) -> Any:
        outs = self._out if isinstance(self._out, (tuple, list)) else [self._out] * len(grads)
        given = [like(o, g) for o, g in zip(outs, grads, strict=False)]
        got = getattr(self._fn, self._b)(self._ctx, *given)
        return type(got)(unboxed(g) for g in got) if isinstance(got, (tuple, list)) \
            else unboxed(got)


def function_layer(layer: Any, inputs: tuple[Any, ...], forward: str | None,
                   backward: str | None) -> tuple[Any, str] | None:
    """A layer object calling ``layer``'s static ``forward(ctx, ...)`` and
    ``backward(ctx, grad)`` with a context, and the note saying so; None when ``layer``
    (a class or an instance) is no such function."""
    cls = layer if isinstance(layer, type) else type(layer)
    f, b = forward or "forward", backward or "backward"
    fs, bs = inspect.getattr_static(cls, f, None), inspect.getattr_static(cls, b, None)
    if not (isinstance(fs, staticmethod) and isinstance(bs, staticmethod)):
        return None
    first = _takes_one_more(fs.__func__, len(inputs))
    if first is None or not _takes_two(bs.__func__):
        return None
    make = _context_class(fs.__func__) or Context
    try:
        ctx = make()
        getattr(layer, f)(ctx, *clone(inputs))
    except Exception:  # noqa: BLE001 - not read so: the plain reading says what fails
        return None
    if not getattr(ctx, "__dict__", None) and first != _first_name(bs.__func__):
        return None
    call = type(cls.__name__, (FunctionCall,), {})(layer, make, f, b)
    own = "its module's " + make.__name__ if make is not Context else "a context of gradcheck's"
    return call, (f"{cls.__name__}: a static {f}(ctx, ...) and {b}(ctx, grad), read as an "
                  f"autograd function: each forward is given a new context ({own}, "
                  "save_for_backward(*values) kept as saved_tensors), the backward the same "
                  "one")


def _takes_one_more(fn: Any, n: int) -> str | None:
    """The name of ``fn``'s first argument when it takes ``n + 1`` positional ones."""
    try:
        ps = list(inspect.signature(fn).parameters.values())
    except (TypeError, ValueError):
        return None
    pos = [p for p in ps if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    if not pos:
        return None
    need = sum(p.default is p.empty for p in pos)
    more = any(p.kind == p.VAR_POSITIONAL for p in ps)
    return pos[0].name if need <= n + 1 and (more or n + 1 <= len(pos)) and n + 1 > 1 else None


def _takes_two(fn: Any) -> bool:
    try:
        ps = list(inspect.signature(fn).parameters.values())
    except (TypeError, ValueError):
        return False
    return any(p.kind == p.VAR_POSITIONAL for p in ps) or sum(
        p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) for p in ps) >= 2


def _first_name(fn: Any) -> str | None:
    ps = list(inspect.signature(fn).parameters)
    return ps[0] if ps else None


def _context_class(fn: Any) -> Any:
    """The class of ``fn``'s module with a ``save_for_backward`` method that can be made
    without arguments, if exactly one."""
    found = []
    for v in list(getattr(fn, "__globals__", {}).values()):
        if isinstance(v, type) and callable(getattr(v, "save_for_backward", None)):
            try:
                v()
            except Exception:  # noqa: BLE001, S112 - needs arguments: not a context
                continue
            found.append(v)
    return found[0] if len(found) == 1 else None


def box_name(x: Any) -> str | None:
    """The attribute of ``x`` holding its one float array, when ``x`` is such an object."""
    if isinstance(x, (np.ndarray, np.generic, dict, list, tuple, str, bytes, type)) or \
            not hasattr(x, "__dict__") or callable(x):
        return None
    arrays = [n for n, v in vars(x).items() if isinstance(v, np.ndarray) and v.dtype.kind == "f"
              and not n.lower().startswith(("grad", "_grad"))]
    return arrays[0] if len(arrays) == 1 else None


def like(out: Any, grad: Any) -> Any:
    """``grad`` as the forward's output came: a copy of a box holding it, or as it is."""
    if (name := box_name(out)) is None or grad is None:
        return grad
    given = copy.copy(out)
    setattr(given, name, np.asarray(grad))
    return given


def unboxed(g: Any) -> Any:
    return g if (name := box_name(g)) is None else getattr(g, name)
