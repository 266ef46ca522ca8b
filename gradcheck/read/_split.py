"""A backward's return split into the input gradients and the parameters' part:
``(dX, [dW, db])``, ``(dX, {"W": dW})``, ``(dX, [])``, matched to the layer's own lists
and dicts of arrays by keys, length or shape."""

from __future__ import annotations

from typing import Any

import numpy as np

from ._discovery import get_path, is_float_array, walk
from ._flat import by_attribute
from ._lists import param_lists, properties
from ._observe import same_but_unit
from ._protocol import clone

__all__ = ["split_return"]


def split_return(ret: Any, layer: Any, n: int = 1) -> tuple[int, dict[str, Any]] | None:
    """When the backward returned ``(dX, [dW, db])`` (or ``(dX, {"W": dW})``, or
    ``(dX, [])`` for a layer with none): the index of the parameters' part and
    ``param path -> key`` of each gradient in it, the part matched to a list or dict of
    the layer's own float arrays (``self.params = [W, b]``) by its keys or length, a
    dict whose keys name the arrays (``{'W': dW, 'b': db}``, ``'w1_W'`` for ``w1.W``), or
    a list whose gradients each have the shape of one array only. ``(dX, None)`` of a
    layer with one input (``n``) has no parameter. None when the return is not so
    split."""
    if not isinstance(ret, (tuple, list)) or len(ret) < 2:
        return None
    layer = clone(layer)  # its properties run on a copy
    held = {id(v): p for p, v in walk(layer) if is_float_array(v)}
    lists = [a for _, a in param_lists(layer, set(held)) + properties(layer, set(held))]
    # a part whose every gradient has its array's shape first (not state handed back
    # after it, (dz, h), of as many items), then the last part first
    for j in sorted(range(len(ret)), key=lambda j: (not _shaped(ret[j], lists), -j)):
        part = ret[j]
        if part is None and n == 1 and j == 1 and len(ret) == 2 and isinstance(
                ret[0], np.ndarray):
            return j, {}  # (dX, None) of one input: no parameter
        if not isinstance(part, (list, tuple, dict)) or any(
                isinstance(r, (list, tuple, dict)) for r in _items(part)):
            continue
        if not part and len(ret) == 2 and isinstance(ret[1 - j], np.ndarray):
            return j, {}  # (dX, []): no parameter
        fits = [arrays for _, arrays in param_lists(layer, set(held))
                if _keys(arrays) == _keys(part)]
        live = [a for a in fits if any(np.any(v) for v in _items(a))]
        named = by_attribute(part, held, layer) if isinstance(part, dict) else None
        # lists of zeros: gradient buffers made ready, or parameters initialised so; one
        # of them is taken only when it is the only list that fits and no name says more
        chosen = live[0] if live else fits[0] if len(fits) == 1 and not named else None
        if chosen is not None:
            return j, {held[id(a)]: k for k, a in _pairs(chosen)}
        built = [{held[id(a)]: k for k, a in _pairs(arrays)}
                 for _, arrays in properties(layer, set(held)) if _keys(arrays) == _keys(part)]
        if built and all(b == built[0] for b in built):  # params returning [self.W, self.b]
            return j, built[0]
        named = by_attribute(part, held, layer) if isinstance(part, dict) else _by_shape(
            part, held, layer)
        if named:
            return j, named
    return None


def _shaped(part: Any, lists: list[Any]) -> bool:
    """Whether ``part`` is a list, tuple or dict of arrays keyed as one of ``lists`` (the
    layer's lists of its arrays), each of its array's shape (but for size-1 axes)."""
    if not isinstance(part, (list, tuple, dict)) or not part:
        return False
    return any(_keys(a) == _keys(part) and all(
        isinstance(g, np.ndarray) and (g.shape == v.shape or same_but_unit(g.shape, v.shape))
        for (_, v), (_, g) in zip(_pairs(a), _pairs(part), strict=True)) for a in lists)


def _by_shape(part: Any, held: dict[int, str], layer: Any) -> dict[str, Any] | None:
    """``param path -> index`` when each gradient of a returned list has the shape of
    exactly one of the layer's float arrays, a different one each (``dX, [dW, db]`` with
    no list of the parameters: ``weights`` (5, 3), ``bias`` (1, 3)). None otherwise."""
    shapes: dict[tuple[int, ...], list[str]] = {}
    for p in held.values():
        shapes.setdefault(np.shape(get_path(layer, p)), []).append(p)
    out: dict[str, Any] = {}
    for k, g in enumerate(part):
        paths = shapes.get(np.shape(g), []) if isinstance(g, np.ndarray) else []
        if len(paths) != 1 or paths[0] in out:
            return None
        out[paths[0]] = k
    return out or None


def _items(part: Any) -> list[Any]:
    return list(part.values()) if isinstance(part, dict) else list(part)


def _keys(part: Any) -> list[Any]:
    return list(part) if isinstance(part, dict) else list(range(len(part)))


def _pairs(part: Any) -> list[tuple[Any, Any]]:
    return list(part.items()) if isinstance(part, dict) else list(enumerate(part))
