"""Layers wired by boxes (Caffe's blobs): ``forward()`` and ``backward()`` take no
argument. What a layer works on sits in boxes of a ``.value`` and a ``.grad`` it holds
(``self.bottom = prev_layer.top``; its weights ``Variable(value, grad)``); the forward
rebinds the value of a box of its own (``self.top.value = ...``, a loss's
``self.loss.value``), the caller writes the output gradient into that box's ``.grad``,
and the backward adds the gradients into the other boxes' ``.grad``. Observed: the
output is the box value the forward rebinds whose ``.grad``, given the output gradient
on a copy, moves what the backward leaves in the other boxes, twice as much for twice
the gradient; every other box is then checked as a parameter."""

from __future__ import annotations

import re
from typing import Any

import numpy as np

from ._discovery import Param, get_path, no_grad, param_object, walk
from ._observe import TARGET_NAMED
from ._protocol import GlobalDraws, ProtocolError, clone

__all__ = ["BOX", "box_output", "boxes_read", "through_box", "unboxed"]

#: The style of a backward taking no argument whose output gradient is written into the
#: ``.grad`` of the box the forward put its output in: ``"box:" + that grad's path``.
BOX = "box:"


def through_box(method: Any, path: str, dy: Any) -> None:
    """``dy`` written into the array at ``path`` (the output box's ``.grad``), then the
    backward called with no argument; the gradients are read from the boxes."""
    _put(method.__self__, path, dy)
    method()


def _put(obj: Any, path: str, dy: Any) -> None:
    held = get_path(obj, path)
    if isinstance(held, np.ndarray) and held.size == np.size(dy):
        np.copyto(held, np.reshape(np.asarray(dy, dtype=held.dtype), held.shape))
    else:  # a number, or an array of another shape: rebound
        owner, _, name = path.rpartition(".")
        setattr(get_path(obj, owner) if owner else obj, name, np.array(dy, copy=True))


def _boxes(obj: Any) -> dict[str, str]:
    """path -> the name of its value (``value`` or ``data``) of every box reachable."""
    return {p: a for p, v in walk(obj) if (a := param_object(v)) is not None}


def box_output(layer: Any, forward: str, backward: str, draws: GlobalDraws
               ) -> tuple[str, str, str, list[str], list[str]] | None:
    """``(output path, output gradient path, note, made, targets)`` of a layer wired by
    boxes whose ``forward()`` and ``backward()`` take no argument: ``made`` the values of
    the other boxes the forward rebinds (a container's inner outputs: no parameters),
    ``targets`` those of boxes named as targets (``labels``) whose ``.grad`` the backward
    leaves as it was (constants). None when it is not such a layer, or when not exactly
    one box the forward rebinds takes the output gradient."""
    boxes = _boxes(layer)
    if len(boxes) < 2:
        return None
    init = clone(layer)
    was = {p: np.array(getattr(get_path(init, p), a), copy=True) for p, a in boxes.items()}
    draws.reset()
    try:
        getattr(init, forward)()
    except Exception:  # noqa: BLE001 - no reading of this kind: the others say why
        return None
    rebound = [p for p, a in boxes.items() if not _same(getattr(get_path(init, p), a), was[p])]
    moved = {p: m for p in rebound if (m := _takes_gradient(init, backward, p, boxes))}
    fits = [p for p, m in moved.items() if all(q in m for q in moved if q != p)]
    if len(fits) != 1:  # (a container's inner output takes it too; the output's
        if len(moved) > 1:  # gradient reaches it)
            raise ProtocolError("bad-protocol", _several(layer, forward, moved, boxes))
        return None
    (p,) = fits
    out, grad = f"{p}.{boxes[p]}", f"{p}.grad"
    loss = np.size(getattr(get_path(init, p), boxes[p])) == 1
    apart = [q for q in rebound if q != p and q not in moved[p]]
    if apart and not loss:  # another output, which the output's gradient never reaches
        raise ProtocolError("bad-protocol", _several(layer, forward, {p: moved[p]} | {
            q: set() for q in apart}, boxes))
    made = [f"{q}.{boxes[q]}" for q in rebound if q != p]  # (beside a loss: its predictions)
    shapes = [np.shape(getattr(get_path(init, q), boxes[q])) for q in moved[p]]
    targets = [f"{q}.{boxes[q]}" for q in _untouched(init, backward, p, boxes)
               if loss and q not in rebound and np.shape(getattr(get_path(init, q), boxes[q]))
               in shapes and any(TARGET_NAMED.fullmatch(w) for w in re.split(r"\W+", q) if w)]
    return out, grad, (f"{type(layer).__name__}.{forward}() takes no argument and rebinds "
                       f"{out}, the one box whose .grad, given the output gradient, moves "
                       f"what {backward}() leaves in the others: its output is {out}, the "
                       f"output gradient written into {grad}; the other boxes are checked" + (
                           f" but {', '.join(made)}, which the forward rebinds too" if made
                           else "") + (f"; {', '.join(targets)}: targets, whose .grad the "
                                       "backward leaves as it was, held constant" if targets
                                       else "")), made, targets


def _several(layer: Any, forward: str, moved: dict[str, set[str]], boxes: dict[str, str]
             ) -> str:
    return (f"{type(layer).__name__}.{forward}() rebinds the values of several boxes that "
            f"are outputs ({', '.join(f'{q}.{boxes[q]}' for q in moved)}), none reached from "
            "the others' gradient: which one the check differentiates cannot be told; check "
            "them with check_vjp, a forward returning their values and a backward writing "
            "their gradients into their .grad, then calling this one")


def _untouched(init: Any, backward: str, p: str, boxes: dict[str, str]) -> list[str]:
    """The boxes whose ``.grad`` the backward, given an output gradient, leaves as it was."""
    obj = clone(init)
    value = np.asarray(getattr(get_path(obj, p), boxes[p]), dtype=np.float64)
    was = {q: np.array(getattr(get_path(obj, q), "grad", None), copy=True) for q in boxes}
    _put(obj, f"{p}.grad", np.ones(value.shape))
    try:
        getattr(obj, backward)()
    except Exception:  # noqa: BLE001 - no evidence: none
        return []
    return [q for q in boxes if q != p and _same(getattr(get_path(obj, q), "grad", None),
                                                  was[q])]


def _same(a: Any, b: np.ndarray) -> bool:
    return np.shape(a) == b.shape and np.array_equal(np.asarray(a, dtype=b.dtype), b)


def _takes_gradient(init: Any, backward: str, p: str, boxes: dict[str, str]) -> set[str]:
    """The other boxes in whose ``.grad`` the backward, after the forward, leaves
    something not zero when a gradient is written into ``p``'s, when what it leaves in
    every one is twice as large for twice that gradient; else none."""
    seen = []
    out = np.asarray(getattr(get_path(init, p), boxes[p]), dtype=np.float64)
    for scale in (1.0, 2.0):
        obj = clone(init)
        for q in boxes:
            g = getattr(get_path(obj, q), "grad", None)
            if isinstance(g, np.ndarray) and g.flags.writeable and q != p:
                g[...] = 0
        _put(obj, f"{p}.grad", np.linspace(0.5, 1.5, out.size).reshape(out.shape) * scale)
        try:
            getattr(obj, backward)()
        except Exception:  # noqa: BLE001 - not this box
            return set()
        seen.append({q: np.array(getattr(get_path(obj, q), "grad", 0.0), dtype=np.float64)
                     for q in boxes if q != p})
    one, two = seen
    if not all(a.shape == two[q].shape and np.allclose(two[q], 2 * a, rtol=1e-9, atol=1e-300)
               for q, a in one.items()):
        return set()
    return {q for q, a in one.items() if a.any()}


def boxes_read(proto: Any, layer: Any, forward: str, backward: str, draws: GlobalDraws
               ) -> bool:
    """Whether the layer is wired by boxes (:func:`box_output`): then its output, the
    output gradient's box and the boxes that are no parameters are set on ``proto``."""
    found = box_output(layer, forward, backward, draws)
    if found is None:
        return False
    proto.out_path, proto.box, text, made, targets = found
    proto.unboxed = {p: False for p in made} | {p: True for p in targets}
    proto.note(text)
    return True


def unboxed(proto: Any, params: list[Param]) -> list[Param]:
    """``params`` but the output (and the values the forward rebinds, inner outputs),
    the targets' boxes held constant (their gradient None)."""
    return [Param(p.name, p.value, no_grad) if proto.unboxed.get(str(p.value)) else p
            for p in params if p.value != proto.out_path and
            proto.unboxed.get(str(p.value)) is not False]
