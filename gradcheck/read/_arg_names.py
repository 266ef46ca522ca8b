"""A backward's arguments read by their names:

- the forward's output under the op's name and an input's (``softmax_backward(grad,
  softmax_a, axis)`` of ``softmax_forward(a, axis)``: ``softmax_a`` is ``softmax(a)``,
  the output, not the input ``a``): :func:`output_by_name`;
- the named ones before a ``*args`` it adds up (``backprop(dA, Z, *args)``):
  :func:`before_varargs`;
- a one-input op's input or output beside the output gradient, named so
  (``softmax_backward(scores, grad_out)``, ``(probs, grad_out)``): :func:`value_by_name`;
- a loss's targets (``y_true``; ``y`` beside ``y_hat``): :func:`target_named`.

The output gradient's names here are those of a function's argument
(``grad_out``, ``dA``); a layer's backward reads its own with
:func:`~._layer_call.cotangent_named`."""

from __future__ import annotations

import copy
import inspect
import re
from collections.abc import Callable
from typing import Any

import numpy as np

__all__ = ["anonymous_inputs", "as_forward_names", "before_varargs", "op_stems",
           "output_by_name", "same_args", "target_named", "value_by_name"]

#: Names of a loss's targets (``y_true``, ``labels``), never its prediction; ``y`` and
#: ``t`` only beside a name of a prediction (:data:`_PREDICTION`).
_TARGET = re.compile(r"^(y_?true|true|targets?|labels?|gt|ground_?truth|y_?target)$", re.I)
_SHORT_TARGET = re.compile(r"^(y|t)$", re.I)
_PREDICTION = re.compile(r"^(y_?pred|preds?|predict(ed|ions?)|y_?hat|out(put)?s?|logits?|"
                         r"scores?|probs?|a)$", re.I)

#: Names of a one-input op's input (the logits) and of its output (the probabilities),
#: and of an output gradient; ``a``, ``h``, ``y``, ``p``, ``x``, ``z`` say neither (a
#: ``safe_log_backward(p, grad)`` takes its input ``p``, a ``sigmoid_backward(x, dout)``
#: its output ``x``).
_INPUT = re.compile(r"^(logits?|scores?|pre_?act(ivation)?s?)$", re.I)
_OUTPUT = re.compile(r"^(probs|probabilities|output|y_?hat|softmax_?out(put)?)$", re.I)
_GRADIENT = re.compile(r"^(d(out|y|z|a|x|l|h)?|g|grads?|grad_?out(put)?|out_?grad|"
                       r"upstream(_grad)?|delta)$", re.I)

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
    one of them is named the op's name and an input's (``tanh_a`` of ``tanh(a)``) or
    ``out``/``output``, one
    other is none of the forward's names (the gradient), and the rest are the forward's
    inputs by name; else None. The output must be one float array."""
    if not (isinstance(out, np.ndarray) and out.dtype.kind == "f") or len(
            set(b_names)) != len(b_names):
        return None
    stems = op_stems(fwd, bwd) - {f.lower() for f in f_names}
    named = {f"{s}_{f.lower()}" for s in stems for f in f_names} | stems | (
        {"out", "output"} - {f.lower() for f in f_names})  # back(grad_out, out, x, y)
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


def target_named(name: str, other: str) -> bool:
    """Whether an argument's name reads as a loss's targets (``y_true``, ``labels``; ``y``
    or ``t`` when the ``other`` argument's reads as the prediction, ``y_pred``, ``out``)."""
    name, other = name.lstrip("_"), other.lstrip("_")
    return bool(_TARGET.match(name)) or bool(
        _SHORT_TARGET.match(name) and _PREDICTION.match(other))


def value_by_name(bwd: Callable[..., Any], b_names: list[str], x: np.ndarray,
                  out: np.ndarray) -> tuple[bool, bool] | None:
    """For a one-input forward whose backward takes two arguments under other names
    than the forward's (``softmax_backward(scores, grad_out)``, ``(p, grad_out)``):
    ``(takes the output, gradient first)`` when one is named as the op's input (logits,
    scores, ``z``) or its output (probabilities, ``p``, ``out``) and the other as an output
    gradient, and the backward, given that value, runs and gives twice the result for
    twice the gradient; else None."""
    if len(b_names) != 2:
        return None
    found = [(bool(_OUTPUT.match(v)), k == 1) for k, (v, g) in enumerate(
        (b_names, b_names[::-1])) if (_INPUT.match(v) or _OUTPUT.match(v)) and
             _GRADIENT.match(g)]
    if len(found) != 1:
        return None
    takes_out, first = found[0]
    value = out if takes_out else x
    dy = np.random.default_rng(0).standard_normal(out.shape)

    def call(d: np.ndarray) -> Any:
        v = copy.deepcopy(value)
        return bwd(d, v) if first else bwd(v, d)
    try:
        with np.errstate(all="ignore"):
            one, two = np.asarray(call(dy), dtype=np.float64), np.asarray(
                call(2 * dy), dtype=np.float64)
    except Exception:  # noqa: BLE001 - the user's code, read otherwise: no reading
        return None
    return found[0] if one.shape == np.shape(x) and np.allclose(
        2 * one, two, rtol=1e-6, atol=1e-12) else None


def same_args(a: list[str] | None, b: list[str]) -> bool:
    """Whether two methods' required arguments are the same, name for name, a plural
    ``s`` aside (``calculate_loss(predictions, targets)`` beside
    ``calculate_gradient(prediction, target)``): the order is then the same."""
    return a is not None and len(a) == len(b) and all(
        u.removesuffix("s") == v.removesuffix("s") for u, v in zip(a, b, strict=True))


def as_forward_names(names: list[str] | None, f_names: list[str]) -> list[str] | None:
    """``names`` with each one that is a forward argument's but for a plural ``s``
    (``prediction`` for ``predictions``) spelt as the forward spells it."""
    if names is None:
        return None
    alike = {f.removesuffix("s"): f for f in f_names}
    if len(alike) != len(f_names):
        return names
    return [a if a in f_names else alike.get(a.removesuffix("s"), a) for a in names]


def anonymous_inputs(fwd: Callable[..., Any], b_names: list[str], n: int) -> list[str] | None:
    """For a forward whose first ``n`` parameters are positional-only (a NumPy ufunc's
    ``x1, x2, /``: names that are no part of its API), the backward's names for them:
    its required arguments less the one named as the output gradient and the one
    named ``out``/``output`` (``back(grad_out, out, x, y)`` of ``np.multiply``), when
    exactly ``n`` are left; else None."""
    try:
        ps = list(inspect.signature(fwd).parameters.values())[:n]
    except (TypeError, ValueError):
        return None
    if len(ps) < n or n == 0 or any(p.kind is not p.POSITIONAL_ONLY for p in ps):
        return None
    grads = [b for b in b_names if _GRADIENT.fullmatch(b)]
    outs = [b for b in b_names if b.lower() in ("out", "output")]
    rest = [b for b in b_names if b not in grads and b not in outs]
    return rest if len(grads) == 1 and len(outs) == 1 and len(rest) == n else None
