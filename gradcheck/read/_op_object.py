"""Operation objects of a small autograd engine: ``op(x, y)`` runs ``forward(x, y)`` on
boxes holding the arrays (``Tensor(v)``) and then records on the op what its backward
reads (``self.needs_grad``, ``self.args``); ``backward(grad, x, y)`` takes the output
gradient boxed like the output, then the inputs again under the forward's names, and
returns a box per input (or one). Observed: the op called on copies of the boxes given
returns a box, the backward given a bare array raises, and given a box it runs. The
check then runs on the arrays: each evaluation boxes them as given, calls the op, and
unboxes what the backward returns."""

from __future__ import annotations

import copy
from typing import Any

import numpy as np

from ._ctx_function import box_name, like, unboxed
from ._observe import positional_names
from ._protocol import clone

__all__ = ["op_layer"]


class OpCall:
    """A layer object over an operation object and the boxes its inputs came in."""

    def __init__(self, op: Any, boxes: list[Any], names: list[str | None]) -> None:
        self._op = op
        self._boxed = lambda arrays: [  # (a function: the boxes given are walked by no one)
            _filled(b, n, a) for b, n, a in zip(boxes, names, arrays, strict=True)]
        self._args: list[Any] = []
        self._out: Any = None

    def forward(self, *arrays: Any) -> Any:
        self._args = self._boxed(arrays)
        self._out = self._op(*self._args)
        return getattr(self._out, box_name(self._out) or "")

    def backward(self, grad: Any) -> Any:
        got = self._op.backward(like(self._out, grad), *self._args)
        return type(got)(unboxed(g) for g in got) if isinstance(got, (tuple, list)) \
            else unboxed(got)


def _filled(box: Any, name: str | None, a: Any) -> Any:
    if name is None:
        return a
    given = copy.copy(box)
    setattr(given, name, a)
    return given


def op_layer(layer: Any, inputs: tuple[Any, ...], forward: str | None, backward: str | None
             ) -> tuple[Any, tuple[Any, ...], str] | None:
    """``(layer object, the inputs' arrays, note)`` for an operation object so read;
    None when ``layer`` is no such object."""
    names = [box_name(x) for x in inputs]
    if forward is not None or backward is not None or not any(names) or not any(
            "__call__" in vars(c) for c in type(layer).__mro__[:-1]) or not callable(getattr(
                layer, "forward", None)) or not callable(getattr(layer, "backward", None)):
        return None
    f_names = positional_names(layer.forward) or []
    b_names = positional_names(layer.backward, required=True) or []
    if len(b_names) != len(inputs) + 1 or b_names[1:] != f_names[:len(inputs)]:
        return None
    try:
        op = clone(layer)
        out = op(*clone(list(inputs)))
        if box_name(out) is None:
            return None
        dy = np.ones_like(getattr(out, box_name(out) or ""))
        try:
            clone(op).backward(dy, *clone(list(inputs)))
            return None  # it takes a bare array: the plain readings apply
        except AttributeError:
            pass
        clone(op).backward(like(out, dy), *clone(list(inputs)))
    except Exception:  # noqa: BLE001 - not so read: the plain reading says what fails
        return None
    arrays = tuple(getattr(x, n) if n else x for x, n in zip(inputs, names, strict=True))
    call = type(type(layer).__name__, (OpCall,), {})(layer, list(inputs), names)
    return call, arrays, (
        f"{type(layer).__name__}: an operation on boxes ({type(out).__name__}.{box_name(out)}):"
        f" called as {type(layer).__name__}(...) (which runs forward and keeps what backward "
        "reads), the backward given the output gradient boxed like the output and the "
        "inputs again; the arrays in the boxes are checked")

