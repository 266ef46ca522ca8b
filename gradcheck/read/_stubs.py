"""Methods whose bodies do nothing: a base class's stubs (``def forward(self, x): pass``,
``raise NotImplementedError``), which subclasses may leave for methods of other names."""

from __future__ import annotations

import dis
from typing import Any

__all__ = ["does_nothing", "raises_only", "stub"]


def does_nothing(method: Any) -> bool:
    """Whether a method's body does nothing (``pass``, a docstring, ``return None``): a
    base class's stub (``def forward(self, x): pass``), which its subclasses may leave
    for methods of other names (``forloss``, ``fordrop``)."""
    ops = _ops(method)
    return ops is not None and all(i.opname == "RETURN_VALUE" or (
        i.opname in ("LOAD_CONST", "RETURN_CONST") and i.argval is None) for i in ops)


def stub(layer: Any, name: str, forward: bool) -> bool:
    """Whether ``layer``'s method ``name`` is a stub: a forward that does nothing, or a
    method a base class defines that only raises ``NotImplementedError`` (abstract: not a
    ``raise NotImplementedError("TODO")`` of the layer's own class)."""
    method = getattr(layer, name, None)
    if not callable(method):  # (a layer with no method of that name)
        return False
    return forward and does_nothing(method) or raises_only(method) and name not in vars(
        type(layer))


def raises_only(method: Any) -> bool:
    """Whether a method's body only raises ``NotImplementedError`` (an abstract method a
    subclass may leave for one of another name: ``compute_backward_gradient``)."""
    ops = _ops(method) or []
    return bool(ops) and ops[0].argval == "NotImplementedError" and ops[-1].opname == \
        "RAISE_VARARGS" and all(i.opname in ("PRECALL", "CALL", "PUSH_NULL") or (
            i.opname == "LOAD_CONST" and isinstance(i.argval, str | None)) for i in ops[1:-1])


def _ops(method: Any) -> list[Any] | None:
    code = getattr(getattr(method, "__func__", method), "__code__", None)
    return None if code is None else [i for i in dis.get_instructions(code)
                                      if i.opname not in ("RESUME", "NOP", "CACHE")]
