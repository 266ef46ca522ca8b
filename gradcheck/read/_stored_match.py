"""Gradients a backward stored, matched to the parameters and inputs they belong to: by
name (``dW`` for ``W``, ``dinputs`` for the one input), beside the input an object keeps,
by layout, then by shape where one array alone fits (never one named for another)."""

from __future__ import annotations

import inspect
import re
from typing import Any

import numpy as np

from ._discovery import try_path
from ._layout import abbreviates, by_layout
from ._observe import grad_of, grad_stem, grads_holder, last_name, parent_of, same_but_unit
from ._reading import leaves
from ._suffix import by_suffix

__all__ = ["match_stored"]

_INPUT_NAMES = ("inputs", "input", "x")  # an input's gradient named for no argument


_KEYED = re.compile(r"\[['\"][^\[\]]*['\"]\]$")  # an item of a dict: ['dLdW']


def _beside_input(after: Any, x: Any, left: dict[str, np.ndarray]) -> str | None:
    """The one stored array of ``x``'s shape whose object also holds an array equal to
    ``x`` (the input the forward kept there, ``parameters['input'].value``): its gradient."""
    if not isinstance(x, np.ndarray):
        return None
    fits = [c for c, v in left.items() if v.shape == x.shape and parent_of(c) and any(
        w is not v and isinstance(w, np.ndarray) and w.shape == x.shape and np.array_equal(
            w, x) for w in (_held_by(try_path(after, parent_of(c)))))]
    return fits[0] if len(fits) == 1 else None


def _held_by(obj: Any) -> list[Any]:
    """The values an object holds as its attributes (or a dict's)."""
    if isinstance(obj, dict):
        return list(obj.values())
    return list(vars(obj).values()) if hasattr(obj, "__dict__") and not isinstance(
        obj, np.ndarray) else []


def _grads_dict(c: str) -> str | None:
    """The object holding the dict that holds ``c``, when ``c`` is an item of a dict
    named for gradients (``gradients['dLdW']``); else None."""
    holder = _KEYED.sub("", c)
    return parent_of(holder) if holder != c and grads_holder(last_name(holder)) else None


def _listed_in(c: str) -> str | None:
    """The object holding the list whose item ``c`` is (``grad[0]``,
    ``weight_gradients[0]``); else None."""
    holder = parent_of(c)
    return parent_of(holder) if holder and re.fullmatch(r"\[\d+\]", c[len(holder):]) \
        else None


def match_stored(params: dict[str, np.ndarray], inputs: dict[int, tuple[str, Any]],
                 cands: dict[str, np.ndarray], returned: Any = None, after: Any = None
                 ) -> tuple[dict[str, str], dict[int, str], list[str]]:
    """``param path -> stored path``, ``input k -> stored path`` and notes: by name (``dW``
    for ``W``, ``dinputs`` for ``inputs``), beside the very values of the input an object
    of ``after`` keeps (``parameters['input'].dvalue`` beside ``.value``), then by shape
    where one fits one array alone."""
    left, got_x = dict(cands), {}
    got_p: dict[str, str] = {}
    for k, (name, x) in inputs.items():  # first: a cache named as the input is no param
        g = grad_of(name, np.shape(x), left) if name else None
        if g is None and len(inputs) == 1:  # the generic names: dinputs, input_grad
            g = next((c for c in (grad_of(n, np.shape(x), left) for n in _INPUT_NAMES)
                      if c is not None and parent_of(c) == ""), None)
        g = g if g is not None or after is None else _beside_input(after, x, left)
        if g is not None:
            got_x[k] = g
            left.pop(g)
    _by_names(params, left, got_p, after)
    for path, g in by_suffix({p: a for p, a in params.items() if p not in got_p}, left).items():
        got_p[path], _ = g, left.pop(g)  # (d_gamma for bn_gamma)
    laid, notes = by_layout({p: a for p, a in params.items() if p not in got_p}, left,
                            [r for r in leaves(returned) if isinstance(r, np.ndarray)])
    got_p.update(laid)
    wanting: list[tuple[tuple[str, Any], tuple[int, ...]]] = [
        (("p", path), np.shape(a)) for path, a in params.items() if path not in got_p]
    wanting += [(("x", k), np.shape(x)) for k, (_, x) in inputs.items() if k not in got_x]

    named = _named_for(left, params)

    def home(key: tuple[str, Any]) -> str:
        return parent_of(str(key[1])) if key[0] == "p" else ""
    for key, shape in wanting:
        if key[0] == "p" and key[1] in cands:  # stepped by the backward itself: a buffer
            continue  # of its shape may be a velocity, no gradient (v = mu * v - lr * g)
        fits = [c for c, v in left.items() if same_but_unit(v.shape, shape)
                and c not in params  # an array's new value is no gradient
                and not _other_key(str(key[1]), c)  # grads['w'] for params['W']: no
                and named.get(c, key[1]) == key[1]  # grad_W is no gradient of b
                and home(key) in (parent_of(c), _grads_dict(c), _listed_in(c))]  # its
        # own, in a dict it holds named for gradients (self.gradients['dLdW'], not
        # cache['sum']) or in a list it holds (self.grad = (dW, db))
        rivals = [w for w, s in wanting if w != key and home(w) == home(key) and any(
            same_but_unit(left[c].shape, s) for c in fits)]  # (gamma.value: gamma.gradient)
        if len(fits) == 1 and not rivals:
            (c,) = fits
            left.pop(c)
            if key[0] == "p":
                got_p[str(key[1])] = c
                notes.append(f"the gradient of {key[1]} is what the backward stored in {c} "
                             "(the only array stored of its shape)")
            else:
                got_x[int(key[1])] = c
                notes.append(f"the gradient of input {key[1]} is what the backward stored "
                             f"in {c} (the only array stored of its shape)")
    notes += _named_for_inputs(inputs, left, got_x)
    return got_p, got_x, notes


def _named_for_inputs(inputs: dict[int, tuple[str, Any]], left: dict[str, np.ndarray],
                      got_x: dict[int, str]) -> list[str]:
    """Each input left without a gradient whose one stored array on the layer is named
    for it, whatever its shape (``db`` of another shape for the forward's ``b``: its
    gradient, a ``shape-mismatch``, never a constant), put in ``got_x``; the notes."""
    notes = []
    for k, (name, _) in inputs.items():
        named = [c for c in left if parent_of(c) == "" and name and grad_stem(
            last_name(c)) == name.lower() != last_name(c).lower()]
        if k not in got_x and len(named) == 1:
            got_x[k] = named[0]
            left.pop(named[0])
            notes.append(f"the gradient of input {k} is what the backward stored in "
                         f"{named[0]}, named for the forward's argument {name}")
    return notes


def _other_key(path: str, c: str) -> bool:
    """Whether ``path`` is a dict's item (``params['W']``) and ``c`` another key's item of a
    dict of gradients (``grads['w']``): a training loop reading ``grads[key]`` for each
    key of the parameters finds none there (a case slip), so the shape pairs nothing."""
    mine, theirs = _KEYED.search(path), _KEYED.search(c)
    return bool(mine and theirs and _grads_dict(c) is not None and mine.group() != theirs.group())


def _named_for(cands: dict[str, np.ndarray], params: dict[str, np.ndarray]) -> dict[str, str]:
    """``stored path -> param path`` for every candidate named as one parameter's gradient
    (``grad_W`` for ``W``) whatever its shape."""
    out: dict[str, str] = {}
    for c, v in cands.items():
        mine = [p for p in params if p != c and grad_of(p, v.shape, {c: v}) == c]
        stem = grad_stem(last_name(c))
        mine = mine or [p for p in params if p != c and parent_of(p) == parent_of(c) and (
            stem != last_name(c).lower()) and abbreviates(stem, last_name(p).lstrip(
                "_").lower())]  # w_grad for weights, b_grad for bias
        if len(mine) == 1:
            out[c] = mine[0]
    return out


def _by_names(params: dict[str, np.ndarray], left: dict[str, np.ndarray],
              got_p: dict[str, str], after: Any) -> None:
    """Into ``got_p``, taken from ``left``: the gradients found by name, a sub-layer's
    spelt out by the layer first (``fc1_weights_gradient`` for ``fc1.weights``, before
    fc1's own: a step's), then ``d`` + the name and its forms, then a property's name
    (``gamma`` read as ``weights``)."""
    for path, g in _spelt_out(params, left).items():
        got_p[path], _ = g, left.pop(g)
    for path, a in params.items():
        if path not in got_p and (named := grad_of(path, a.shape, left)) is not None:
            got_p[path], _ = named, left.pop(named)
    for path, alias in _aliases(after, [p for p in params if p not in got_p]).items():
        if (named := grad_of(alias, params[path].shape, left)) is not None:
            got_p[path], _ = named, left.pop(named)


def _aliases(after: Any, paths: list[str]) -> dict[str, str]:
    """``path -> alias``: the one property of the object holding the array at ``path``
    whose getter returns that very array (``weights`` returning ``self.gamma``: a
    framework's name for it, which its gradient's name follows, ``_gradient_weights``)."""
    out = {}
    for path in paths:
        parent = parent_of(path)
        obj = after if parent == "" else try_path(after, parent)
        value = try_path(after, path)
        if obj is None or not isinstance(value, np.ndarray):
            continue
        names = []
        for name in dir(type(obj)):
            if isinstance(inspect.getattr_static(type(obj), name, None), property):
                try:
                    if getattr(obj, name) is value:
                        names.append(name)
                except Exception:  # noqa: BLE001, S112 - a getter that raises: no alias
                    continue
        if len(names) == 1:
            out[path] = f"{parent}.{names[0]}" if parent else names[0]
    return out


def _spelt_out(params: dict[str, np.ndarray], left: dict[str, np.ndarray]) -> dict[str, str]:
    """``param path -> stored path`` for a parameter of a sub-object (``fc1.weights``)
    whose gradient the object itself keeps under the sub-object's name joined to the
    gradient's (``fc1_weights_gradient``, ``output_fc_layer_gradient_weights``: a
    recurrent layer summing its sub-layers' steps), of its shape: the one such name."""
    out: dict[str, str] = {}
    for path, a in params.items():
        head = parent_of(path)
        if not head or "." in head or "[" in head:
            continue
        stem = last_name(path).lstrip("_").lower()
        fits = [c for c, v in left.items() if parent_of(c) == "" and c not in out.values()
                and c.lower().startswith(head.lower() + "_") and grad_stem(
                    c[len(head) + 1:]) == stem and c[len(head) + 1:].lower() != stem
                and same_but_unit(np.shape(v), a.shape)]
        if len(fits) == 1:
            out[path] = fits[0]
    return out
