"""What methods of a layer a call runs: a method completing the backward
(``gradient(z_down, _e)``) may call helpers of its own, but one that runs the forward, or
a helper the forward runs (``self._affine``), computes a numerical gradient, not the
backward's.
"""

from __future__ import annotations

import contextlib
import inspect
from collections import Counter
from collections.abc import Iterator
from typing import Any

import numpy as np

from ._discovery import is_float_array, walk
from ._observe import forward_named
from ._protocol import clone

__all__ = ["into_buffers", "runs_forward", "watched"]


@contextlib.contextmanager
def watched(obj: Any, skip: set[str]) -> Iterator[list[str]]:
    """The names of the object's other methods called inside the block, in order (each
    shadowed on the instance meanwhile, then put back)."""
    ran: list[str] = []
    names = [n for n in dir(type(obj)) if not n.startswith("__") and n not in skip
             and inspect.isfunction(getattr(type(obj), n, None)) and n not in vars(obj)]

    def watch(name: str) -> Any:
        bound = getattr(obj, name)

        def call(*args: Any, **kwargs: Any) -> Any:
            ran.append(name)
            return bound(*args, **kwargs)
        return call

    for n in names:
        setattr(obj, n, watch(n))
    try:
        yield ran
    finally:
        for n in names:
            vars(obj).pop(n, None)


def runs_forward(obj: Any, ran: list[str], xs: list[Any]) -> str:
    """The first of the methods ``ran`` that is a forward (by its name) or a helper a
    forward of ``obj`` runs given ``xs`` (on a copy), run more often than that forward
    runs it (a numerical gradient runs it twice per element; recomputing an activation
    once is the backward's own work); empty when none is."""
    helpers: Counter[str] = Counter()
    for name in [n for n in dir(type(obj)) if forward_named(n) or n == "__call__"]:
        if not inspect.isfunction(getattr(type(obj), name, None)):
            continue
        copy = clone(obj)
        # a forward-like name taking other arguments raises: what it ran still counts
        with watched(copy, {name}) as called, contextlib.suppress(Exception):
            getattr(copy, name)(*clone(xs))
        helpers |= Counter(called)
    runs = Counter(ran)
    return next((n for n in ran if forward_named(n) or runs[n] > helpers.get(n, runs[n])),
                "")


def into_buffers(held: dict[str, tuple[int, np.ndarray]], obj: Any) -> bool:
    """Whether, since ``held`` (:func:`~._observe.float_state`), ``obj`` changed float
    arrays it held, in place or under the same names, and made no new one
    (``self._gradient['weight'] += ...``, ``self._gradient = self._gradient + ...``): the
    second half of a backward split in two, run after the watched call."""
    now = {p: v for p, v in walk(obj) if is_float_array(v)}
    return all(p in held for p in now) and any(
        held[p][1].shape != v.shape or not np.array_equal(held[p][1], v)
        for p, v in now.items())
