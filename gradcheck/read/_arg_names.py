"""A backward's arguments read by their names: the forward's output under the op's
name and an input's (``softmax_backward(grad, softmax_a, axis)`` of
``softmax_forward(a, axis)``, where ``softmax_a`` is ``softmax(a)``, the output, not the
input ``a``), and the named ones before a ``*args`` it adds up (``backprop(dA, Z,
*args)``)."""

from __future__ import annotations

import inspect
import re
from collections.abc import Callable
from typing import Any

import numpy as np

__all__ = ["before_varargs", "op_stems", "output_by_name", "target_named"]

#: Names of a loss's targets (``y_true``, ``labels``), never its prediction.
_TARGET = re.compile(r"^(y|t|y_?true|true|targets?|labels?|gt|ground_?truth|y_?target|"
                     r"desired|expected)$", re.I)

#: Words a function's name adds to its op's: ``tanh_forward``, ``softmax_backward``.
_AFFIXES = frozenset({"forward", "fwd", "fprop", "backward", "bwd", "bprop", "back",
                      "backprop", "grad", "gradient", "derivative", "deriv", "prime"})


def op_stems(*funcs: Callable[..., Any]) -> set[str]:
    """The op's names the functions carry, their names without the words of a
    direction (``log_softmax_forward``: ``log_softmax``), lower case, of three letters
    or more."""
    stems = set()
    for f in funcs:
        name = getattr(f, "__name__", "").lower().strip("_")
        words = [w for w in name.split("_") if w not in _AFFIXES]
        if name.isidentifier() and words and len(stem := "_".join(words)) >= 3:
            stems.add(stem)
    return stems


def output_by_name(fwd: Callable[..., Any], bwd: Callable[..., Any], f_names: list[str],
                   b_names: list[str], out: Any) -> tuple[list[int | None], str] | None:
    """The backward's arguments (indices into the forward's inputs followed by its
    output, None for the output gradient) and the name it takes the output under, when
    one of them is named the op's name and an input's (``tanh_a`` of ``tanh(a)``), one
    other is none of the forward's names (the gradient), and the rest are the forward's
    inputs by name; else None. The output must be one float array."""
    if not (isinstance(out, np.ndarray) and out.dtype.kind == "f") or len(
            set(b_names)) != len(b_names):
        return None
    stems = op_stems(fwd, bwd) - {f.lower() for f in f_names}
    named = {f"{s}_{f.lower()}" for s in stems for f in f_names} | stems
    as_out = [b for b in b_names if b.lower() in named and b not in f_names]
    odd = [b for b in b_names if b not in f_names and b not in as_out]
    if len(as_out) != 1 or len(odd) != 1:
        return None
    n = len(f_names)
    return [None if b == odd[0] else n if b == as_out[0] else f_names.index(b)
            for b in b_names], as_out[0]


def before_varargs(method: Callable[..., Any], f_names: list[str]) -> list[str] | None:
    """The names of the positional parameters before a ``*args``, when they are one
    more (the output gradient) and then the forward's ``f_names`` (``backprop(dA, Z,
    *args)`` of ``activate(Z)``), none has a default and no keyword-only one lacks one;
    else None."""
    try:
        ps = list(inspect.signature(method).parameters.values())
    except (TypeError, ValueError):
        return None
    star = [k for k, p in enumerate(ps) if p.kind is p.VAR_POSITIONAL]
    if not star or any(p.kind is p.KEYWORD_ONLY and p.default is p.empty for p in ps):
        return None
    before = ps[:star[0]]
    names = [p.name for p in before]
    return names if all(p.default is p.empty for p in before) and len(names) == len(
        f_names) + 1 and [b.lower() for b in names[1:]] == [f.lower() for f in f_names] \
        else None


def target_named(name: str) -> bool:
    """Whether an argument's name reads as a loss's targets (``y_true``, ``labels``)."""
    return bool(_TARGET.match(name.lstrip("_")))
