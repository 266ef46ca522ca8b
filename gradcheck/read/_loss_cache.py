"""A loss's forward and backward written as two functions whose backward takes the loss's
cache and, by name, some of the forward's inputs again, and no output gradient
(``loss, probs = cross_entropy_loss(logits, targets, mask)`` beside
``cross_entropy_backward(probs, targets, mask)``)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

import numpy as np

__all__ = ["GRADIENT_NAME", "LossBack", "cache_alone", "loss_back", "scalar"]

#: A backward argument named as a gradient (``dout``, ``grad_y``, ``delta``).
GRADIENT_NAME = r"^[dg](out(put)?|y|z|a|h|x|l|values|_\w+)?$|^(grad|delta|err|upstream)\w*$"


def loss_back(f_names: list[str], b_names: list[str]) -> list[int]:
    """The places among the forward's inputs of the backward's arguments after the first,
    when the first is none of them and names no gradient and the others are all of them
    (``loss, probs = f(logits, targets, mask)``, ``f_backward(probs, targets, mask)``: a
    loss's cache, then inputs again by name, no output gradient); else ``[]``."""
    return [f_names.index(b) for b in b_names[1:]] if len(b_names) > 1 and b_names[
        0] not in f_names and all(b in f_names for b in b_names[1:]) and not re.match(
            GRADIENT_NAME, b_names[0], re.I) else []


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
