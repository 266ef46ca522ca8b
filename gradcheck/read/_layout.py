"""Stored gradients paired with the arrays they belong to by how they are laid out: a
list or dict of the same shapes item by item, one affix shared by the gradients of
several arrays, or names that abbreviate the arrays' word by word."""

from __future__ import annotations

import re
from typing import Any

import numpy as np

from ._observe import grad_stem, items_off, last_name, parent_of, same_but_unit
from ._protocol import ProtocolError

__all__ = ["abbreviates", "by_layout"]

_ITEM = re.compile(r"^(.+)\[(-?\d+)\]$")
_KEY = re.compile(r"^(.+)\[('[^'\[\]]*'|\"[^\"\[\]]*\")\]$")  # a dict's item: P['w']


def by_place(params: dict[str, Any], cands: dict[str, np.ndarray]) -> dict[str, str]:
    """``param path -> stored path`` for the items of a list of arrays (``weights[0]``,
    ``weights[1]``) paired by place with the items of the one stored list whose items
    have the same shapes, index by index (``nabla_w[0]``, ``nabla_w[1]``), or of a dict
    with those of the one stored dict of the same keys and shapes (``P['w']`` with
    ``G['w']``): no other list of the layer's or of the stored ones may have those
    shapes, and no two items of the list one shape (a list built last layer first would
    pair wrongly)."""
    def lists(paths: dict[str, Any]) -> dict[str, dict[str, tuple[int, ...]]]:
        out: dict[str, dict[str, tuple[int, ...]]] = {}
        for p, a in paths.items():
            m = _ITEM.match(p) or _KEY.match(p)
            if m and isinstance(a, np.ndarray):
                out.setdefault(m.group(1), {})[m.group(2)] = a.shape
        return out

    mine, stored = lists(params), lists(cands)
    pairs: dict[str, str] = {}
    for name, shapes in mine.items():
        if len(set(shapes.values())) != len(shapes):  # items alike: the place says nothing
            continue
        alike = [c for c, s in stored.items() if c != name and _alike(s, shapes)]
        rivals = [m for m, s in mine.items() if m != name and _alike(s, shapes)]
        if len(alike) == 1 and not rivals:
            pairs.update({f"{name}[{i}]": f"{alike[0]}[{i}]" for i in shapes})
    return pairs


def _alike(a: dict[str, tuple[int, ...]], b: dict[str, tuple[int, ...]]) -> bool:
    return a.keys() == b.keys() and all(a[i] == b[i] or same_but_unit(a[i], b[i]) for i in a)


def by_affix(params: dict[str, Any], cands: dict[str, np.ndarray],
             returned: list[np.ndarray]) -> dict[str, str]:
    """``param path -> stored path`` for two or more arrays whose gradients are stored
    under their own names with one affix of the layer's own, the same for each
    (``gamma_delta`` and ``beta_delta`` for ``gamma`` and ``beta``, or keys of a dict
    beside them, ``gradients[f'{id}_gamma']``): each array one stored
    candidate of its shape (a size-1 axis aside) beside it, none shared, no other affix
    doing the same, and no other array of its shape stored or returned by the backward."""
    found: dict[tuple[str, str], dict[str, list[str]]] = {}
    for p, a in params.items():
        name = last_name(p)
        for c, v in cands.items():
            own = last_name(c)
            if parent_of(c) != parent_of(p) and not (  # beside it, or in a dict beside
                    c.endswith("]") and parent_of(parent_of(c)) == parent_of(p)) or \
                    own == name or not name or not same_but_unit(np.shape(v), np.shape(a)):
                continue
            for affix in (("", own[len(name):]) if own.startswith(name) else None,
                          (own[:-len(name)], "") if own.endswith(name) else None):
                if affix is not None and len("".join(affix)) >= 2 and \
                        not "".join(affix).isdigit():
                    found.setdefault(affix, {}).setdefault(p, []).append(c)
    fits = [{p: cs[0] for p, cs in m.items() if len(cs) == 1} for m in found.values()]
    fits = [m for m in fits if len(m) >= 2 and len(set(m.values())) == len(m)]
    if len(fits) != 1:
        return {}
    (fit,) = fits  # and no other array of an array's shape stored beside it or returned
    others = [(parent_of(items_off(c)), v)  # the object holding
              for c, v in cands.items() if c not in fit.values()]  # it, or its list or dict
    rivals = [v for p in fit for v in [v for h, v in others if h == parent_of(p)] + returned
              if same_but_unit(np.shape(v), np.shape(params[p]))]  # (a grads list, a gamma_m:
    # which one is the gradient, no affix says)
    return {} if rivals else fit


def by_layout(params: dict[str, Any], left: dict[str, np.ndarray], returned: list[np.ndarray]
              ) -> tuple[dict[str, str], list[str]]:
    """``param path -> stored path`` for the arrays no name of theirs paired, and notes:
    :func:`by_place`, then :func:`by_affix`, then :func:`by_abbreviation`; what each
    pairs is taken out of ``left``, the stored candidates."""
    got: dict[str, str] = {}
    notes: list[str] = []
    for how, why in ((by_place, "a list or dict of the same shapes, item by item"),
                     (lambda p, c: by_affix(p, c, returned),
                      "the same affix beside every such array's name"),
                     (by_abbreviation, "")):
        for path, c in how({p: a for p, a in params.items() if p not in got}, left).items():
            got[path] = c
            left.pop(c)
            if why:
                notes.append(f"the gradient of {path} is what the backward stored in {c} "
                             f"({why})")
    return got, notes


def abbreviates(short: str, long: str) -> bool:
    """Whether ``short`` abbreviates ``long`` word by word (``projection_b`` for
    ``projection_biases``; a plural is no abbreviation: ``dh`` is not ``hs``')."""
    s, w = short.split("_"), long.split("_")
    return short != long and len(s) == len(w) and all(
        a and b.startswith(a) and b != a + "s" for a, b in zip(s, w, strict=True))


def by_abbreviation(params: dict[str, Any], cands: dict[str, np.ndarray]) -> dict[str, str]:
    """``param path -> stored path`` when the stored name, less its gradient affix,
    abbreviates the array's name word by word (``b_grad`` for ``biases``,
    ``projection_w_grad`` for ``projection_weights``), beside it and of its shape; one
    to one (``dW`` abbreviating ``Wq`` and ``Wk`` alike pairs with neither); only where
    the shape does not pair it alone."""
    def beside(p: str, a: Any, among: dict[str, Any]) -> list[str]:
        return [c for c, v in among.items() if parent_of(c) == parent_of(p) and (
            np.shape(v) == np.shape(a) or same_but_unit(np.shape(v), np.shape(a)))]

    pairs = {}
    for p, a in params.items():
        if beside(p, a, params) == [p] and len(beside(p, a, cands)) == 1:
            continue  # its shape alone pairs it, as match_stored says
        name = last_name(p).lstrip("_").lower()
        fits = [c for c in beside(p, a, cands) if abbreviates(grad_stem(last_name(c)), name)]
        if len(fits) == 1:
            pairs[p] = fits[0]
    taken = list(pairs.values())
    return {p: c for p, c in pairs.items() if taken.count(c) == 1}


_IN_ITEM = re.compile(r"^(.*)\[(\d+)\](\[[^\]]+\]|\.\w+)$")  # list[k]['W'], list[k].W


def one_item_each(found: list[Any]) -> None:
    """A ``bad-protocol`` when the arrays of one item of a list (``params[0]['W']`` and
    ``params[0]['b']``) were paired with gradients in different items of one list
    (``gradients[0]['dW']``, ``gradients[1]['db']``): gradients stored in another order
    (last layer first) or shape (transposed), which their shapes alone paired wrongly."""
    items: dict[str, dict[str, set[str]]] = {}
    for p in found:
        if isinstance(p.value, str) and isinstance(p.grad, str) and (
                v := _IN_ITEM.match(p.value)) and (g := _IN_ITEM.match(p.grad)):
            items.setdefault(f"{v[1]}[{v[2]}]", {}).setdefault(g[1], set()).add(
                f"{g[1]}[{g[2]}]")
    for item, by in items.items():
        for held in by.values():
            if len(held) > 1:
                raise ProtocolError("bad-protocol", (
                    f"the arrays of {item} pair with gradients in different items "
                    f"({', '.join(sorted(held))}) by their names and shapes: the gradients "
                    "are stored in another order or shape (last layer first, transposed?), "
                    "which cannot be told; name them with params= and grads="))
