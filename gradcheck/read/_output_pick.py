"""Which of the arrays a forward returning None stored is its output, when it stored
several that depend on the inputs: not one stored as another's derivative (``h`` and
``diff_h``), and, of the rest, the one array of the layer's reaches when it reaches no
other (a batch norm's ``output`` beside its ``mean``, ``var`` and ``inputs_norm``); else
the one whose shape the backward takes a gradient of (a list of every layer's
activations, ``act_val``, whose last the backward's first step multiplies)."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import numpy as np

from ._discovery import get_path, set_path, try_path
from ._observe import last_name, positional_names
from ._protocol import clone

__all__ = ["narrowed", "taken_by_backward"]

#: A derivative's name: its array's, after ``diff_`` or ``deriv_`` (``diff_h_output``).
_DERIVED = re.compile(r"_*(diff|deriv(ative)?)_*", re.I)


def narrowed(cands: dict[str, np.ndarray], layer: Any, held: list[str],
             run: Callable[[Any], Any]) -> tuple[dict[str, np.ndarray], str]:
    """``cands`` (path -> array the forward stored) narrowed, and the reason (empty when
    they stay as they were). ``layer`` is the layer before the forward, ``held`` the
    paths of the float arrays it holds, ``run(layer)`` runs its forward on the inputs."""
    if len(cands) < 2:
        return cands, ""
    derived = {p for p in cands if (m := _DERIVED.match(last_name(p))) and any(
        last_name(q) == last_name(p)[m.end():] for q in cands if q != p)}
    kept = {p: v for p, v in cands.items() if p not in derived}
    if kept and len(kept) < len(cands):
        return kept, (f"{', '.join(p for p in cands if p not in kept)} stored as the "
                      "derivative of another (named so): no output")
    reach = _reach(cands, layer, [p for p in held if p not in cands], run)
    if reach is None:
        return cands, ""
    reached = [p for p, r in reach.items() if r]
    if len(reached) == 1:  # (an output and a head after it are both reached: no reading)
        (p,) = reached
        return {p: cands[p]}, (f"{', '.join(sorted(reach[p]))} reach it and none of the "
                               "others")
    return cands, ""


def _reach(cands: dict[str, np.ndarray], layer: Any, held: list[str],
           run: Callable[[Any], Any]) -> dict[str, frozenset[str]] | None:
    """For each candidate, the held arrays whose change changes it; None if a forward
    raised."""
    base = clone(layer)
    try:
        run(base)
    except Exception:  # noqa: BLE001 - no evidence: the candidates stay as they were
        return None
    out: dict[str, set[str]] = {p: set() for p in cands}
    for h in held:
        moved = clone(layer)
        value = np.asarray(get_path(moved, h))
        set_path(moved, h, value + 0.25 * (np.abs(value) + 1.0))
        try:
            run(moved)
        except Exception:  # noqa: BLE001 - as above
            return None
        for p in cands:
            a, b = try_path(base, p), try_path(moved, p)
            if not (isinstance(a, np.ndarray) and isinstance(b, np.ndarray) and
                    a.shape == b.shape and np.array_equal(a, b, equal_nan=True)):
                out[p].add(h)
    return {p: frozenset(r) for p, r in out.items()}


def taken_by_backward(cands: dict[str, np.ndarray], after: Any, backward: str
                      ) -> tuple[dict[str, np.ndarray], str]:
    """When the candidates are all items of one list (every layer's activations), the
    one whose shape ``after.backward`` (one output gradient: ``after`` ran the forward)
    takes a gradient of, the others' shapes all differing from it and raising; ``cands``
    as they were otherwise."""
    method = getattr(after, backward, None)
    lists = {re.sub(r"\[\d+\]$", "", p) for p in cands}
    if len(lists) != 1 or any(not re.search(r"\[\d+\]$", p) for p in cands) or \
            method is None or len(positional_names(method, required=True) or []) != 1:
        return cands, ""
    runs: dict[str, bool] = {}
    for p, v in cands.items():
        try:
            with np.errstate(all="ignore"):
                getattr(clone(after), backward)(np.ones_like(v, dtype=np.float64))
            runs[p] = True
        except Exception:  # noqa: BLE001 - a gradient of that shape is not what it takes
            runs[p] = False
    ok = [p for p, r in runs.items() if r]
    if len(ok) != 1 or any(cands[q].shape == cands[ok[0]].shape for q in cands if q != ok[0]):
        return cands, ""
    (p,) = ok
    return {p: cands[p]}, (f"{backward}() takes a gradient of its shape {cands[p].shape} "
                           f"and raises given one of {', '.join(q for q in cands if q != p)}'s")
