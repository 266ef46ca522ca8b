"""A backward fed by another call: the output gradient goes in through one method, which
keeps it on the layer (``backward_update_gradient(delta)``, storing ``self._delta``
and adding into the weights' gradients), and the backward, taking no argument, reads it
from there (``backward()`` computing ``self._grad_input``).

Observed, not named: when a backward that takes no argument raises because an attribute
is missing (``'Tanh' object has no attribute '_delta'``) for a layer whose output is no
scalar (no loss), the methods of its class whose code stores that attribute and that take
one argument are the candidates. Each is called on a copy after a forward with a random
output gradient: it must keep that gradient unchanged at the attribute, and the backward
must then run and be linear in it (a ``set_labels(y)`` is not). Exactly one such method
feeds the backward; no other method of the layer is ever called.
"""

from __future__ import annotations

import dis
import inspect
import re
from typing import Any

import numpy as np

from ._layer_call import Protocol, takes_no_gradient
from ._observe import float_state, positional_names, stored
from ._protocol import UserCodeError, clone
from ._reading import leaves, read_output

__all__ = ["fed_by", "unread_store"]

_MISSING = re.compile(r"has no attribute '(\w+)'")


def fed_by(proto: Protocol, xs: list[Any], exc: UserCodeError) -> tuple[str, str] | None:
    """``(method, attribute)``: the method that feeds the backward its output gradient and
    where it keeps it, or None when there is not exactly one (see the module's
    docstring)."""
    layer = proto.layer
    missing = _MISSING.search(exc.text) if exc.type == "AttributeError" else None
    if missing is None or exc.what != f"{type(layer).__name__}.{proto.backward}" \
            or proto.fed is not None or proto.draws is None \
            or not takes_no_gradient(getattr(layer, proto.backward)):
        return None
    found = [name for name in _candidates(type(layer), proto, missing.group(1))
             if _feeds(proto, xs, name, missing.group(1))]
    return (found[0], missing.group(1)) if len(found) == 1 else None


def _candidates(cls: type, proto: Protocol, attribute: str) -> list[str]:
    """The methods of ``cls`` (read statically: no property runs) taking one argument
    whose code stores ``attribute``."""
    out = []
    for name in dir(cls):
        fn = inspect.getattr_static(cls, name, None)
        if name.startswith("_") or name in (proto.forward, proto.backward) or \
                not inspect.isfunction(fn):
            continue
        if attribute in fn.__code__.co_names and len(
                positional_names(fn, required=True) or []) == 2:  # self and the gradient
            out.append(name)
    return out


def _feeds(proto: Protocol, xs: list[Any], name: str, attribute: str) -> bool:
    a = _fed_run(proto, xs, name, attribute, 1.0)
    b = _fed_run(proto, xs, name, attribute, 2.0) if a is not None else None
    if a is None or b is None or len(a) != len(b) or any(
            u.shape != v.shape for u, v in zip(a, b, strict=True)):
        return False
    moved = [(u, v) for u, v in zip(a, b, strict=True) if not np.array_equal(u, v)]
    if not moved:  # nothing moved: linear only if all it computed is zero (a dead ReLU)
        return bool(a) and all(not np.any(u) for u in a)
    return all(  # what does not move with it is a cache (a derivative)
        np.allclose(2 * u, v, rtol=1e-6, atol=1e-12 * (1 + float(np.max(np.abs(v),
                                                                           initial=0))))
        for u, v in moved)


def _fed_run(proto: Protocol, xs: list[Any], name: str, attribute: str,
             scale: float) -> list[np.ndarray] | None:
    """What the backward returned and created after ``name`` was given ``scale`` times a
    fixed random output gradient and kept it at ``attribute``; None when it did not."""
    assert proto.draws is not None
    layer = clone(proto.layer)
    try:
        proto.draws.reset()
        out = read_output(layer, getattr(layer, proto.forward)(*clone(xs)), proto.out_path)
        if not isinstance(out, np.ndarray) or out.size < 2 or out.dtype.kind != "f":
            return None
        dy = np.asarray(scale * np.random.default_rng(0).standard_normal(out.shape),
                        dtype=out.dtype)
        getattr(layer, name)(dy.copy())
        kept = getattr(layer, attribute, None)
        if not isinstance(kept, np.ndarray) or not np.array_equal(kept, dy):
            return None
        before = float_state(layer)
        ret = getattr(layer, proto.backward)()
    except Exception:  # noqa: BLE001 - not the method that feeds it: it raised on trying
        return None
    made = [v for p, v in stored(before, layer, (), copies=False).items() if p != attribute]
    return [np.asarray(v, dtype=np.float64) for v in leaves(ret) if isinstance(v, np.ndarray)
            ] + [np.asarray(v, dtype=np.float64) for v in made]


_STATEFUL = {"STORE_ATTR", "STORE_SUBSCR"}


def unread_store(proto: Protocol, out: Any, xs: list[Any]) -> tuple[str, str] | None:
    """``(method, path)``: a method of the layer (not the forward or backward) taking one
    argument, whose code stores something (an attribute, an item), that, called on a copy
    after a forward with a float array of the output's shape, keeps an array of that
    shape on the layer where the backward's code never reads it
    (``backward_update_gradient(delta)`` storing ``_delta``, or ``cache['delta']``, for
    a backward that forgot it): a feed ignored, so that a backward taking no argument is
    no loss per sample. None when there is none (a setter of an int raises on the array;
    a scale the backward reads is none)."""
    cls = type(proto.layer)
    backward = inspect.getattr_static(cls, proto.backward, None)
    if not isinstance(out, np.ndarray) or proto.draws is None:
        return None
    dy = np.asarray(np.random.default_rng(0).standard_normal(out.shape), dtype=out.dtype)
    for name in dir(cls):
        fn = inspect.getattr_static(cls, name, None)
        if name.startswith("_") or name in (proto.forward, proto.backward) or \
                not inspect.isfunction(fn) or len(positional_names(fn, required=True) or []) != 2:
            continue
        if not any(i.opname in _STATEFUL for i in dis.get_instructions(fn)):
            continue
        try:
            obj = clone(proto.layer)
            proto.draws.reset()
            read_output(obj, getattr(obj, proto.forward)(*clone(xs)), proto.out_path)
            before = float_state(obj)
            getattr(obj, name)(dy.copy())
        except Exception:  # noqa: S112 - it takes no output gradient: no feed
            continue
        kept = [p for p, v in stored(before, obj, (), copies=False).items()
                if v.shape == dy.shape and not _read_by(backward, p)]
        if kept:
            return name, kept[0]
    return None


def _read_by(fn: Any, path: str) -> bool:
    """Whether ``fn``'s code reads what is kept at ``path``: loads its attribute
    (``self._delta``), or names its key (``self.cache['delta']``)."""
    code = getattr(fn, "__code__", None)
    if code is None:
        return True  # a method whose code cannot be read: no evidence against it
    if "[" in path:
        key = path.rsplit("[", 1)[1].strip("]'\"")
        return key in {c for c in code.co_consts if isinstance(c, str)}
    loads = {i.argval for i in dis.get_instructions(fn) if i.opname in ("LOAD_ATTR",
                                                                          "LOAD_METHOD")}
    return path.split(".")[-1] in loads
