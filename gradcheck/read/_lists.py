"""The lists of its own arrays a layer holds or builds: the order its parameters'
gradients may come back in (``self.params = [W, b]``, a ``params`` property, a method
that only returns them, ``get_params()``).
"""

from __future__ import annotations

import ast
import inspect
import textwrap
from typing import Any

import numpy as np

from ._discovery import is_float_array, walk

__all__ = ["param_lists", "properties"]


def param_lists(layer: Any, arrays: set[int]) -> list[tuple[str, Any]]:
    """Lists, tuples and dicts held by the layer whose items are all its float arrays."""
    out = []
    for p, v in walk(layer):
        items = list(v.values()) if isinstance(v, dict) else v if isinstance(
            v, (list, tuple)) else None
        if items and all(is_float_array(a) and id(a) in arrays for a in items):
            out.append((p, v))
    return out


def _lists_attributes(fn: Any) -> bool:
    """Whether ``fn`` is a method whose whole body (but a docstring) returns a tuple or
    list of its object's attributes, or a dict of them under constant keys: ``def
    get_params(self): return (self.W, self.b)``, ``return {'w_g': self.gate.w}`` (read
    from its code, so calling it can do nothing else)."""
    if not inspect.isfunction(fn):
        return False
    try:
        tree = ast.parse(textwrap.dedent(inspect.getsource(fn)))
    except (OSError, TypeError, SyntaxError):
        return False
    node = tree.body[0] if tree.body else None
    if not isinstance(node, ast.FunctionDef) or len(node.args.args) != 1:
        return False
    body = [b for b in node.body if not (isinstance(b, ast.Expr) and isinstance(
        b.value, ast.Constant))]
    ret = body[0].value if len(body) == 1 and isinstance(body[0], ast.Return) else None
    me = node.args.args[0].arg
    items = ret.elts if isinstance(ret, (ast.Tuple, ast.List)) else ret.values if isinstance(
        ret, ast.Dict) and all(isinstance(k, ast.Constant) for k in ret.keys) else []
    return bool(items) and all(_attribute_of(e, me) for e in items)


def _attribute_of(e: ast.expr, me: str) -> bool:
    """Whether ``e`` reads an attribute of ``me`` (``self.W``, ``self.gate.w``)."""
    while isinstance(e, ast.Attribute):
        e = e.value
        if isinstance(e, ast.Name):
            return e.id == me
    return False


def properties(layer: Any, arrays: set[int]) -> list[tuple[str, Any]]:
    """The lists of the layer's own float arrays that properties of its class build (or
    methods that only return them, :func:`_lists_attributes`),
    those of zeros left out (gradients made ready before any backward: ``grads``
    returning ``[self.dW, self.db]``)."""
    found = []
    for name in dir(type(layer)):
        attr = getattr(type(layer), name, None)
        if name.startswith("_") or not (isinstance(attr, property) or _lists_attributes(attr)):
            continue
        try:
            v = getattr(layer, name)
            v = v() if not isinstance(attr, property) else v
        except Exception:  # noqa: S112 - a property that cannot be read holds no list
            continue
        items = list(v.values()) if isinstance(v, dict) else v if isinstance(
            v, (list, tuple)) else None
        if items and all(is_float_array(a) and id(a) in arrays for a in items) and any(
                np.any(a) for a in items):
            found.append((name, v))
    return found
