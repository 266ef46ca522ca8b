"""A backward naming no argument (``backward(*args)``, or ``backward(_=None)``, Python's
name for an unused one) of a scalar output: a loss's, called bare and its result scaled
by the output gradient, unless it reads the argument after all; then the bare call, the
one a loss's interface is made for, must give what an output gradient of 1 gives."""

from __future__ import annotations

from typing import Any

import numpy as np

from ._layer_call import Protocol
from ._observe import positional_names
from ._protocol import ProtocolError, clone
from ._reading import leaves

__all__ = ["unnamed_argument"]


def unnamed_argument(proto: Protocol, method: Any, given: list[Any], base: str, note: str
                     ) -> tuple[str, str]:
    """The base style and note of the backward: ``("one", "")`` for one naming no
    argument that reads it after all (called bare, it gives other gradients than given
    2), a ``mismatch`` when it gives other gradients bare than given 1; as they were
    otherwise."""
    if base != "none" or not names_none(method) or runs_bare(proto, given):
        return base, note
    if positional_names(method) is not None and bare_differs(proto, given):  # (_=None:
        # made to be called bare; backward(*grads) summing what it is given is not)
        raise ProtocolError("mismatch", (
            f"{type(proto.layer).__name__}.{proto.backward}() called with no argument "
            "returns other gradients than given an output gradient of 1: the call a "
            "loss's backward is made with gives the wrong gradient"))
    return "one", ""


def names_none(method: Any) -> bool:
    """A backward naming no argument: ``backward(*args)``, or ``backward(_=None)``."""
    names = positional_names(method)
    return names is None or (len(names) == 1 and set(names[0]) == {"_"})


def runs_bare(proto: Protocol, given: list[Any], unit: bool = False) -> bool:
    """Whether the backward runs with no argument after a forward on ``given`` and gives
    what it gives for an output gradient of 2 (it ignores any: a loss's backward; with
    ``unit``, of 1: it reads a gradient it is given, 1 when none)."""
    got = []
    for args in ((), (1.0 if unit else 2.0,)):
        obj = clone(proto.layer)
        try:
            getattr(obj, proto.forward)(*clone(given))
            got.append(getattr(obj, proto.backward)(*args))
        except Exception:  # noqa: BLE001 - it needs an argument: the output gradient
            return False
    a, b = (leaves(g) for g in got)
    return bool(a) and len(a) == len(b) and all(
        np.shape(u) == np.shape(v) and np.allclose(u, v, rtol=1e-12, atol=0) for u, v in zip(
            a, b, strict=True))


def bare_differs(proto: Protocol, given: list[Any]) -> bool:
    """Whether a backward naming no argument (``backward(_=None)``) runs bare and given an
    output gradient of 1, and returns other gradients bare: the call its loss's interface
    is made for (``loss.backward()``) gives other gradients than the one checked."""
    if runs_bare(proto, given, unit=True):
        return False
    for args in ((), (1.0,)):
        obj = clone(proto.layer)
        try:
            getattr(obj, proto.forward)(*clone(given))
            if not leaves(getattr(obj, proto.backward)(*args)):
                return False
        except Exception:  # noqa: BLE001 - it needs its argument: no bare call to compare
            return False
    return True
