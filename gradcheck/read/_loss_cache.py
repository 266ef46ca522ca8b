"""A loss's forward and backward written as two functions whose backward takes the loss's
cache and, by name, some of the forward's inputs again, and no output gradient
(``loss, probs = cross_entropy_loss(logits, targets, mask)`` beside
``cross_entropy_backward(probs, targets, mask)``)."""

from __future__ import annotations

import copy
import re
from dataclasses import dataclass
from typing import Any

import numpy as np

__all__ = ["GRADIENT_NAME", "LossBack", "cache_alone", "gradient_first", "loss_back", "scalar"]

#: A backward argument named as a gradient (``dout``, ``grad_y``, ``delta``).
GRADIENT_NAME = r"^[dg](out(put)?|y|z|a|h|x|l|values|_\w+)?$|^(grad|delta|err|upstream)\w*$"


def loss_back(f_names: list[str], b_names: list[str]) -> list[int | None]:
    """The places among the forward's inputs of the backward's arguments, None the one
    that is none of them and names no gradient, when the others are all of them (``loss,
    probs = f(logits, targets, mask)``, ``f_backward(probs, targets, mask)``; ``cost,
    cache = f(X, Y, params)``, ``f_backward(X, Y, cache)``: a loss's cache, and inputs
    again by name, no output gradient); else ``[]``."""
    odd = [i for i, b in enumerate(b_names) if b not in f_names]
    if len(b_names) < 2 or len(odd) != 1 or re.match(GRADIENT_NAME, b_names[odd[0]], re.I) \
            or b_names[:odd[0]] != f_names[:odd[0]]:  # after the first inputs, in order
        return []
    return [None if b not in f_names else f_names.index(b) for b in b_names]


def cache_alone(every: list[str], b_names: list[str]) -> bool:
    """Whether the backward takes one argument, required, named as no gradient (``loss,
    cache = f(X, y, W)``; ``grads = f_backward(cache)``: a loss's)."""
    return len(every) == 1 and b_names == every and not re.match(GRADIENT_NAME, every[0], re.I)


def scalar(v: Any) -> bool:
    """A float number (an array of one included): a loss."""
    return np.size(v) == 1 and np.asarray(v).dtype.kind == "f"


@dataclass
class LossBack:
    """A loss's cache with the forward's inputs the backward takes after it, by name,
    and no output gradient (``cross_entropy_backward(probs, targets, mask)``)."""

    cache: Any
    args: tuple[Any, ...]


def gradient_first(bwd: Any, rest: list[Any]) -> bool:
    """Whether ``bwd(a, *rest)`` runs for the numbers 1.0 and 2.0 in the first place and
    gives twice the results for the second: that argument is an output gradient under a
    name of its own (``ce_backward(dloss, scores, y)``), not a cache."""
    try:
        one, two = (bwd(a, *copy.deepcopy(rest)) for a in (1.0, 2.0))
    except Exception:  # noqa: BLE001 - the user's code: a cache is no number
        return False
    a, b = _leaves(one), _leaves(two)
    return bool(a) and len(a) == len(b) and all(
        u.shape == v.shape and np.allclose(2 * u, v, rtol=1e-9, atol=0) for u, v in zip(
            a, b, strict=True)) and any(np.any(u) for u in a)


def _leaves(v: Any) -> list[np.ndarray]:
    if isinstance(v, (list, tuple)):
        return [a for o in v for a in _leaves(o)]
    if isinstance(v, dict):
        return [a for o in v.values() for a in _leaves(o)]
    return [np.asarray(v, dtype=np.float64)] if isinstance(v, (np.ndarray, float)) else []
