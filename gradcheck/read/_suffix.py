"""Arrays named with a prefix their gradients drop (``bn_gamma`` beside ``d_gamma``)."""

from __future__ import annotations

import numpy as np

from ._observe import grad_stem, last_name, parent_of, same_but_unit

__all__ = ["by_suffix", "name_tail"]


def name_tail(path: str) -> str:
    """The last part after ``_`` of the array's name, in lower case (``bn_gamma``:
    ``gamma``); ``""`` for a name without one."""
    name = last_name(path).lstrip("_").lower()
    return name.rsplit("_", 1)[-1] if "_" in name else ""


def by_suffix(params: dict[str, np.ndarray], cands: dict[str, np.ndarray]) -> dict[str, str]:
    """``param path -> stored path`` for arrays named with a prefix their gradients drop
    (``d_gamma`` for ``bn_gamma``): the name's last part after ``_``, of two letters or
    more, that is no other array's here and names one stored array of the same parent
    and shape, with the gradient affix."""
    tails = [name_tail(p) for p in params]
    got = {}
    for path, a in params.items():
        t = name_tail(path)
        fits = [c for c, v in cands.items() if len(t) > 1 and tails.count(t) == 1 and
                grad_stem(last_name(c)) == t and grad_stem(last_name(c)) != last_name(
                    c).lower() and parent_of(c) == parent_of(path) and
                same_but_unit(v.shape, a.shape)]
        if len(fits) == 1:
            got[path] = fits[0]
    return got
