"""Stored arrays whose shape follows the batch: what a backward stores of the shape of a
parameter only because the batch is as long as one of the parameter's axes (``bw1 =
dz2 @ w2.T`` of shape ``(N, H)`` beside ``fw1 = a1.T @ bw1`` of ``w1``'s ``(H, H)``, with
``N == H``) is an intermediate, not that parameter's gradient: a forward and backward
given one sample more store it in another shape, while a parameter's gradient keeps the
parameter's."""

from __future__ import annotations

from typing import Any

import numpy as np

from ._discovery import is_float_array
from ._layer_call import Protocol, ones_like
from ._observe import same_but_unit
from ._reading import batch_size, probe

__all__ = ["not_batch_bound"]


def not_batch_bound(proto: Protocol, xs: list[Any], cands: dict[str, np.ndarray],
                    missing: dict[str, Any]) -> dict[str, np.ndarray]:
    """``cands`` (path -> stored array) but those of a ``missing`` parameter's shape, when
    two or more have it, that a forward and backward given one sample more store in
    another shape (or not at all), noted; ``cands`` as they are when nothing is ambiguous
    or the longer batch cannot be run."""
    alike: set[str] = set()
    for a in missing.values():
        mine = [c for c, v in cands.items() if is_float_array(a) and same_but_unit(
            np.shape(v), np.shape(a))]
        alike |= set(mine) if len(mine) >= 2 else set()
    n = batch_size(xs)
    if not alike or proto.draws is None or n < 2:
        return cands
    longer = [np.concatenate([x, x[:1]]) if isinstance(x, np.ndarray) and x.ndim and len(x) == n
              else x for x in xs]
    try:
        second = probe(proto.layer, proto.forward, proto.backward, longer, proto.draws,
                       (proto.style, proto.order), proto.out_path, ones_like, proto.then)
    except Exception:  # noqa: BLE001 - no evidence: the candidates stay
        return cands
    bound = sorted(c for c in alike if c not in second.stored or np.shape(
        second.stored[c]) != np.shape(cands[c]))
    if not bound or len(bound) == len(cands):
        return cands
    proto.note(f"{', '.join(bound)}: stored in another shape for one sample more (its shape "
               "follows the batch): no parameter's gradient")
    return {c: v for c, v in cands.items() if c not in bound}
