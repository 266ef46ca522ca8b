"""What the plainest call says when it cannot read a layer: what it observed (what the
backward returned and stored, with shapes) and the keywords that fix it."""

from __future__ import annotations

from typing import Any

import numpy as np

from ._discovery import LayerConventionError, Param, try_path
from ._flat import mask
from ._reading import describe

__all__ = ["observed_error"]


def observed_error(layer: Any, left: list[str], first: Any,
                   cands: dict[str, np.ndarray], found: list[Param]) -> LayerConventionError:
    """:func:`_said`, and whether the backward changed those arrays themselves (a step:
    then an input gradient it returns may be computed after it), as ``exc.stepped``."""
    exc = _said(layer, left, first, cands, found)
    exc.stepped = any(p in first.stored for p in left)  # type: ignore[attr-defined]
    return exc


def _said(layer: Any, left: list[str], first: Any,
          cands: dict[str, np.ndarray], found: list[Param]) -> LayerConventionError:
    """What the plainest call says of arrays the output depends on with no gradient
    found (``left``): what the backward returned and stored, and the keywords that name
    every parameter, those found (``found``) too: ``params=`` replaces them."""
    arrays = describe({p: try_path(first.init, p) for p in left})
    ret = first.ret
    shown = ("None" if ret is None else type(ret).__name__ if not isinstance(
        ret, np.ndarray) else f"an array {ret.shape}")
    if isinstance(ret, dict):  # (one key for each input it differentiates, d + its name)
        shown += f" with keys {', '.join(map(str, ret))}"
    if isinstance(ret, (tuple, list)):
        shown += " of " + ", ".join(f"{type(r).__name__}" + (
            f" {r.shape}" if isinstance(r, np.ndarray) else "") for r in ret)
    alone = _params_alone(ret, left, first)
    if alone:
        return LayerConventionError(
            f"{type(layer).__name__}: the backward returned {shown}: the gradients of "
            f"{', '.join(alone)} alone, none of an input's shape. A first layer, whose input "
            "needs none, or a forgotten input gradient? Shapes cannot tell: check_layer("
            f"layer, x, wrt={alone!r}) checks them, the input held constant.")
    elsewhere = [p.value for p in found if isinstance(p.value, str) and not isinstance(
        p.grad, str)]  # read from what it returned, or from a step: no path names it
    if elsewhere:  # params= would drop them, and no grads= path reaches a returned value
        return LayerConventionError(
            f"{type(layer).__name__}: the output depends on {arrays}, and no gradient was "
            f"found for {'it' if len(left) == 1 else 'them'}. Observed: the backward "
            f"returned {shown} and stored {describe(cands) or 'no other array'}; the "
            f"gradients of {', '.join(elsewhere)} were read from what it returned or the "
            "step it took, which params=/grads= cannot name: return or store the gradient "
            f"of {', '.join(left)} too (params={{}} checks the input gradients only).")
    pairs = {p.value: p.grad for p in found if isinstance(p.value, str) and isinstance(
        p.grad, str)} | {p: "..." for p in left}
    named = ", ".join(f"{p!r}: {p!r}" for p in pairs)
    graded = ", ".join(f"{p!r}: {g!r}" for p, g in pairs.items())
    return LayerConventionError(
        f"{type(layer).__name__}: the output depends on {arrays}, and no gradient was found "
        f"for {'it' if len(left) == 1 else 'them'}. Observed: the backward returned {shown}"
        f" and stored {describe(cands) or 'no array left unread'}. Name every parameter to "
        "check "
        f"(params= replaces what was found): check_layer(layer, x, params={{{named}}}, "
        f"grads={{{graded}}}) (paths like \"params['W']\" or callables layer -> array); "
        "params={} checks the input gradients only." + _others(left, first, found))


def _params_alone(ret: Any, left: list[str], first: Any) -> list[str]:
    """The arrays of ``left`` whose shapes the items of a returned tuple have, one each,
    in order, when no item has an input's shape (``(dW, db)``); else empty."""
    if not isinstance(ret, (tuple, list)) or len(ret) != len(left) or not all(
            isinstance(r, np.ndarray) for r in ret):
        return []
    shapes = {np.shape(x) for x in first.xs if isinstance(x, np.ndarray)}
    held = {p: np.shape(try_path(first.init, p)) for p in left}
    out = [next((p for p in left if held[p] == r.shape), "") for r in ret]
    return out if all(out) and len(set(out)) == len(out) and not any(
        r.shape in shapes for r in ret) else []


def _others(left: list[str], first: Any, found: list[Param]) -> str:
    """When some gradients were found: the ``wrt=`` that checks them and the inputs',
    holding ``left`` constant (buffers the output reads, running statistics)."""
    named = [p.name for p in found]
    if not named:
        return ""
    wrt = [f"x{k}" for k, x in enumerate(first.xs) if isinstance(x, np.ndarray) and
           x.dtype.kind == "f" and not mask(x)] + named  # (not a 0/1 mask)
    return (f" If {', '.join(left)} {'takes' if len(left) == 1 else 'take'} no gradient "
            "(buffers the forward reads, running statistics), check the others, holding "
            f"{'it' if len(left) == 1 else 'them'} constant: wrt={wrt!r}.")
