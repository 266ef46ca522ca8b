"""Gradients read by shape alone, where the shapes leave no choice.

A backward returning every gradient in one flat tuple, in an order of its own:
``(dX, dW, db)``, ``(dW, dX, db)``. Read by shape alone, and only when the shapes leave
no choice: each item has the shape of exactly one differentiated input or one of the
layer's float arrays (but for size-1 axes, ``db`` (3,) for ``b`` (1, 3)), a different
one each, every such input has its item, and at least one item is an array's. A list
of arrays beside one stored list of the same shapes, index by index, pairs by place.
"""

from __future__ import annotations

import ast
import dataclasses
import functools
import inspect
import re
import textwrap
from typing import Any

import numpy as np

from ._discovery import get_path, is_float_array, walk
from ._lists import param_lists, properties
from ._observe import (
    grad_stem,
    last_name,
    positional_names,
    same_but_unit,
    unmangled,
)
from ._protocol import ProtocolError, clone

__all__ = ["FLAT", "as_split", "by_attribute", "flat_note", "flat_return", "mask", "named_order",
           "paired", "split_flat", "whole_return"]

FLAT = -1  # Protocol.returned's index of a flat reading: the keys index the tuple itself


def flat_return(ret: Any, layer: Any, xs: list[Any], wanted: list[int],
                arrays: dict[str, np.ndarray] | None = None,
                names: list[str] | None = None) -> dict[str, int] | None:
    """``param path -> index`` of the items of a flat tuple ``ret`` that are the layer's
    arrays' gradients (the other items are the inputs' in order); None when ``ret`` is
    no such tuple or any item's shape fits none or several of the arrays and inputs,
    but for arrays of one shape and no input's, as many as the items of that shape:
    those are read in the order the layer holds them (``dgamma, dbeta``).

    Parameters
    ----------
    ret : Any
        What the backward returned.
    layer : Any
        The layer before its forward (its arrays are the candidates).
    xs : list
        The forward's inputs.
    wanted : list of int
        The inputs differentiated.
    arrays : dict, optional
        The arrays the output depends on: when given, the candidates; one item left that
        fits no array is the gradient of the one such array left (a wrong shape is then
        that gradient's verdict).
    names : list of str, optional
        The names the backward's code returns (:func:`returned_names`): an item of a
        shape several arrays share, named as one of them (``dgamma``), is its gradient,
        whatever order the layer holds them in.
    """
    if not isinstance(ret, (tuple, list)) or len(ret) < 2 or not all(
            is_float_array(r) for r in ret):
        return None
    held = list(arrays.items()) if arrays is not None else [
        (p, v) for p, v in walk(clone(layer)) if is_float_array(v)]
    if any(isinstance(x, (list, tuple)) and len(x) == len(ret) and all(
            np.shape(a) == np.shape(r) for a, r in zip(x, ret, strict=True)) for x in xs) and \
            not all(any(np.shape(r) == v.shape for _, v in held) for r in ret):
        return None  # [dx, dh] for the input [x, h], dx of no array's shape: its gradient
    inputs = [k for k in wanted if isinstance(xs[k], np.ndarray)]
    if len(ret) <= len(inputs):
        return None
    named = any(_named_fit([("p", p) for p, _ in held], n) for n in names or [])
    if arrays is not None and not named and (listed := _listed_order(ret, layer, held, [
            xs[k] for k in inputs])):  # (names the code returns settle it first)
        return listed
    owner = _owners(ret, held, inputs, xs, names if names and len(names) == len(ret) else [
        ""] * len(ret))
    if owner is None:
        return None
    left = [("p", p) for p, _ in held if ("p", p) not in owner]
    if owner.count(None) == 1 and len(left) == 1 and arrays is not None:
        owner[owner.index(None)] = left[0]  # by elimination: its shape is its verdict
    if None in owner or sorted(o[1] for o in owner if o and o[0] == "x") != inputs:
        return None
    return {str(o[1]): i for i, o in enumerate(owner) if o and o[0] == "p"}


def _owners(ret: Any, held: list[tuple[str, Any]], inputs: list[int], xs: list[Any],
            nm: list[str]) -> list[tuple[str, Any] | None] | None:
    """The owner of each item of a flat tuple (``("x", k)`` an input, ``("p", path)`` an
    array, None for none), items named as an array's gradient (``nm``) placed first;
    None when an item fits several and no order settles it."""
    taken: dict[int, tuple[str, Any] | None] = {}
    for i in sorted(range(len(ret)), key=lambda i: _named_fit(  # those named as theirs
            [("p", p) for p, _ in held], nm[i]) is None):  # first (dbeta, then dg)
        r = ret[i]
        fits: list[tuple[str, Any]] = [("x", k) for k in inputs if xs[k].shape == r.shape]
        fits += [("p", p) for p, v in held if v.shape == r.shape or same_but_unit(
            r.shape, v.shape)]
        owner = list(taken.values())
        if fits and all(f in owner for f in fits):
            return None
        fits = [f for f in fits if f not in owner]  # arrays of one shape, no input's: in
        if len(fits) > 1 and any(f[0] == "x" for f in fits) or len(fits) > 1 and sum(
                np.shape(q) == r.shape for q in ret) != len(fits) + sum(  # the order the
                    o is not None and o[0] == "p" and np.shape(held_of(held, o)) == r.shape
                    for o in owner):  # layer holds them (gamma then beta), as returned
            return None
        taken[i] = (_named_fit(fits, nm[i]) or fits[0]) if fits else None
    return [taken[i] for i in range(len(ret))]


def lost_returned(ret: Any, layer: Any, xs: list[Any], wanted: list[int],
                  moving: dict[str, np.ndarray], others: dict[str, np.ndarray],
                  names: list[str] | None) -> list[str]:
    """The arrays the output does not depend on (``others``) for which a flat tuple
    returns a nonzero gradient, read as :func:`flat_return` reads it only with them
    beside the arrays it depends on (``moving``): a bias the forward forgot, ``dx, dW,
    db``; checked, since that gradient can never reach the output."""
    if not others or flat_return(ret, layer, xs, wanted, moving, names) is not None:
        return []
    got = flat_return(ret, layer, xs, wanted, moving | others, names)
    return [] if got is None else [p for p, k in got.items() if p in others and np.any(ret[k])]


def _listed_order(ret: Any, layer: Any, held: list[tuple[str, Any]], xs: list[Any]
                  ) -> dict[str, int] | None:
    """A flat tuple of the input gradients, then one gradient for each array of a list
    the layer holds of its own arrays, in that list's order and of their shapes
    (``return grad_input, *grads`` beside ``self.params_ref = [conv1.weight, ...]``):
    ``param path -> index``; None otherwise."""
    by_id = {id(v): p for p, v in held}
    n = len(xs)
    if [np.shape(r) for r in ret[:n]] != [np.shape(x) for x in xs]:
        return None
    for _, items in param_lists(layer, set(by_id)):
        row = list(items.values()) if isinstance(items, dict) else list(items)
        if len(row) > 1 and len(row) == len(ret) - n and all(
                np.shape(r) == np.shape(a) for r, a in zip(ret[n:], row, strict=True)):
            return {by_id[id(a)]: n + k for k, a in enumerate(row)}
    return None


def _named_fit(fits: list[tuple[str, Any]], name: str) -> tuple[str, Any] | None:
    """Of the arrays an item fits, the one its returned name names as its gradient
    (``dgamma`` for ``gamma``); None when none is."""
    stem = grad_stem(name) if name else ""
    return next((f for f in fits if f[0] == "p" and stem and stem != name.lower() and
                 last_name(str(f[1])).lower().lstrip("_") == stem), None)


def returned_names(method: Any, n: int) -> list[str] | None:
    """:func:`_returned_names` of the function behind ``method`` (a bound method's, so
    that every instance of a class shares one reading of its source)."""
    fn = getattr(method, "__func__", method)
    try:
        return _returned_names(fn, n)
    except TypeError:  # (an unhashable callable)
        return None


@functools.lru_cache(maxsize=1024)
def _returned_names(method: Any, n: int) -> list[str] | None:
    """The names ``method``'s code returns as a flat tuple of ``n`` items (``return dx,
    dgamma, dbeta``; an attribute by its name, ``self.dW``), from its source; None when
    that cannot be read or its returns of ``n`` items name different things."""
    try:
        tree = ast.parse(textwrap.dedent(inspect.getsource(method)))
    except (OSError, TypeError, SyntaxError):
        return None
    found = {tuple(e.id if isinstance(e, ast.Name) else e.attr if isinstance(
        e, ast.Attribute) else "" for e in node.value.elts) for node in ast.walk(tree)
             if isinstance(node, ast.Return) and isinstance(node.value, ast.Tuple) and
             len(node.value.elts) == n}
    return list(found.pop()) if len(found) == 1 else None


def named_order(backward: Any, forward: Any, dx: list[Any], shapes: list[Any],
                args: list[str] | None = None) -> tuple[list[int], str] | None:
    """``order`` with ``dx[order[k]]`` the gradient of the forward's argument ``k``, and a
    note, when the backward's code returns its input gradients under names that read as
    the gradients of the forward's arguments in another order (``return d_prev_hidden,
    d_input, d_prev_cell`` for ``forward(current_input, prev_hidden, prev_cell)``: each
    name ``d`` + an argument's, or + the end of one's, the rest by elimination), every
    one of that argument's shape; None otherwise."""
    names = returned_names(backward, len(dx))
    args = args or (positional_names(forward) or [])[:len(dx)]
    if names is None or len(args) != len(dx):
        return None
    stems = [grad_stem(n) if grad_stem(n) != n.lower().lstrip("_") else None for n in names]
    order: dict[int, int] = {}
    for exact in (True, False):
        for j, s in enumerate(stems):
            fits = [k for k, a in enumerate(args) if k not in order and j not in order.values()
                    and s and (a.lower() == s or not exact and (a.lower().endswith(
                        "_" + s) or s.startswith(a.lower() + "_")))]  # dX_total for X
            if len(fits) == 1:
                order[fits[0]] = j
    if len(order) == len(args) - 1:  # the one left: by elimination
        order[next(k for k in range(len(args)) if k not in order)] = next(
            j for j in range(len(args)) if j not in order.values())
    perm = [order.get(k, -1) for k in range(len(args))]
    if -1 in perm or perm == list(range(len(args))) or any(
            np.shape(dx[j]) != shapes[k] for k, j in enumerate(perm)):
        return None
    if all(np.shape(dx[j]) == shapes[j] for j in perm):  # the order fits the shapes too
        raise ProtocolError("bad-protocol", (
            f"the backward returns {', '.join(names)}, by their names the gradients of the "
            f"forward's {', '.join(args)} in another order, and the shapes fit either order:"
            " which is meant cannot be observed; return them in the forward's order"))
    of = [args[k] for k in sorted(range(len(args)), key=perm.__getitem__)]
    return perm, (f"the backward returns {', '.join(names)}: read by their names as the "
                  f"gradients of {', '.join(of)}")


def held_of(held: list[tuple[str, Any]], o: tuple[str, Any]) -> Any:
    """The array of ``held`` at the path of owner ``o``."""
    return next(v for p, v in held if p == o[1])


def whole_return(wanted: list[int], ret: Any, arrays: dict[str, np.ndarray]
                 ) -> dict[str, Any]:
    """``{path: None}`` when the backward returns one float array and the layer has no
    input to differentiate (token ids): the gradient of the one array the output depends
    on of its shape (an embedding's ``dW``)."""
    if wanted or not is_float_array(ret):
        return {}
    fits = [p for p, a in arrays.items() if a.shape == ret.shape]
    return {fits[0]: None} if len(fits) == 1 else {}


def flat_note(flat: dict[str, Any]) -> str:
    """The note saying how :func:`flat_return` or :func:`whole_return` read a return."""
    if None in flat.values():
        return (f"backward returns one array and the layer no input to differentiate: read "
                f"as {next(iter(flat))}'s gradient, the one array of its shape")
    return ("backward returns one flat tuple, read by the shapes of its items (of one "
            "shape, by the names its code returns them under, dgamma for gamma, else in "
            "the order the layer holds the arrays): " + ", ".join(
                f"item {k} is {p}'s gradient" for p, k in flat.items()))


def split_flat(ret: Any, keys: dict[str, Any], xs: list[Any]) -> Any:
    """The input gradients of a flat tuple read by :func:`flat_return`: the items that are
    no array's, in the forward's order (one alone as itself; None when there is none);
    with the inputs' shapes in another order, a ``bad-protocol``."""
    used = set(keys.values())
    rest = [r for i, r in enumerate(ret) if i not in used]
    shapes = [x.shape for x in xs if isinstance(x, np.ndarray)]
    got = [np.shape(r) for r in rest]
    if len(rest) > 1 and len(got) == len(shapes) and got != shapes and \
            sorted(got) == sorted(shapes):  # (dh, dx) for forward(x, h), or a swap
        raise ProtocolError("bad-protocol", (
            "backward returned the input gradients with the shapes of the inputs in "
            f"another order (shapes {got} for inputs of shapes {shapes}): returned in "
            "another order, or computed with each other's weights? Shapes cannot tell; "
            "return them in the forward's order"))
    return None if not rest else rest[0] if len(rest) == 1 else tuple(rest)


def by_attribute(part: dict[Any, Any], held: dict[int, str], layer: Any
                  ) -> dict[str, Any] | None:
    """``param path -> key`` when every key of a returned dict names one of the layer's
    float arrays: its path (``'W'``, ``'gamma'``) or its path with ``_`` for ``.``
    (``'w1_W'`` for ``w1.W``, a sub-layer's), past the one object holding it (``"Wx['f']"``
    for ``cell.Wx['f']``) or its name in the source (``'w'`` for
    ``self.__w``, held as ``_Dense__w``), each gradient of its array's shape but for
    size-1 axes. None when a key names none."""
    paths = {p: get_path(layer, p) for p in held.values()}
    spelled = {p.replace(".", "_"): p for p in paths} | {p: p for p in paths}
    spelled = {unmangled(p): p for p in paths} | spelled  # {'w': dw} for self.__w
    tails = [(p.split("[")[0].partition(".")[2] + p[len(p.split("[")[0]):], p) for p in paths]
    spelled = {t: p for t, p in tails if t and [u for u, _ in tails].count(t) == 1} | spelled
    out: dict[str, Any] = {}
    for k, g in part.items():
        p = spelled.get(k) if isinstance(k, str) else None
        if p is None or p in out or not isinstance(g, np.ndarray | np.floating) or not (
                g.shape == paths[p].shape or same_but_unit(g.shape, paths[p].shape)
                or k == p):  # keyed by its own path: the gradient's shape is its verdict
            return None
        out[p] = k
    return out


def paired(extra: Any, obj: Any) -> Any:
    """``[[W, dW], [b, db], name]`` (``obj``'s parameters each beside its gradient, then
    other things) read as ``{'W': dW, 'b': db}`` by identity, and a dict keyed as the one
    a method of ``obj`` that only returns its arrays builds (``get_grads()`` beside
    ``get_params()``, ``{'w_g': self.gate.w}``) as ``{'gate.w': dw_g}``; anything else as
    it is."""
    if isinstance(extra, dict) and extra and all(isinstance(k, str) for k in extra):
        paths = {id(v): p for p, v in walk(obj) if is_float_array(v)}
        keyed = {tuple(id(held[k]) for k in extra): held for _, held in properties(
            obj, set(paths)) if isinstance(held, dict) and held.keys() == extra.keys() and not
            any(held[k] is extra[k] for k in extra)}  # (listings of the same arrays: one)
        return {paths[id(next(iter(keyed.values()))[k])]: g for k, g in extra.items()} if len(
            keyed) == 1 else extra  # (get_moments() beside get_params(): no telling which)
    if not isinstance(extra, (list, tuple)):
        return extra
    pairs = [e for e in extra if isinstance(e, (list, tuple)) and len(e) == 2 and all(
        is_float_array(a) for a in e) and np.shape(e[0]) == np.shape(e[1])]
    rest = [e for e in extra if not any(e is q for q in pairs)]
    if not pairs or any(isinstance(e, (list, tuple, np.ndarray)) for e in rest):
        return extra
    paths = {id(v): p for p, v in walk(obj) if is_float_array(v)}
    named = {paths.get(id(w)): g for w, g in pairs}
    return extra if None in named or len(named) != len(pairs) else named


def as_split(ret: Any, obj: Any, names: Any = (), xs: Any = ()) -> Any:
    """What a backward returned, its parameters' gradients apart as ``{path: gradient}``
    where they came beside their arrays or under their names: ``[[W, dW], [b, db]]`` as
    ``(None, {...})``, ``(dX, [(W, dW), (b, db)])`` as ``(dX, {...})``, and one dict
    named ``d`` + each of the forward's inputs ``names`` and each array (``{'dx': dx,
    'dh_prev': dh, 'dW': dW}``, one key for each float array among the inputs ``xs``) as
    ``(dx, dh, {'W': dW})``; anything else as it is."""
    if ret is obj and obj is not None:  # return self (for chaining): nothing returned
        return None
    if dataclasses.is_dataclass(ret) and not isinstance(ret, type):  # LayerGrads(dx, dw, db)
        ret = {f.name: getattr(ret, f.name) for f in dataclasses.fields(ret)}
    ret = _numbers_listed(ret, xs)
    if isinstance(ret, list) and isinstance(named := paired(ret, obj), dict):
        return (None, named)  # [[W, dW], name]: no input's gradient, the parameters' by name
    if isinstance(ret, tuple) and len(ret) > 1 and isinstance(ret[-1], list) and \
            isinstance(named := paired(ret[-1], obj), dict):
        return (*ret[:-1], named)
    if isinstance(ret, tuple) and len(ret) > 1 and (whole := _raveled(ret[-1], obj)):
        return (*ret[:-1], whole)  # (dx, [np.r_[dW.ravel(), db]]) beside params = [W, b]
    if isinstance(ret, tuple) and len(ret) > 1 and (flat := _flattened(ret[-1])):
        return (*ret[:-1], flat)  # (dx, dh, {'Wx': {'f': dWxf}}): one dict per kind
    if is_float_array(ret) and ret.ndim == 1 and (flat := _as_got(ret, obj)):
        return (None, flat)  # compute_gradient() beside get_params(): one vector each
    if isinstance(ret, tuple) and len(ret) > 1 and (laid := _laid_as_lists(ret, obj)):
        return laid  # (dws, dbs) beside self.ws, self.bs: keyed by the arrays' paths
    if isinstance(ret, tuple) and len(ret) > 1 and (beside := _beside_listed(ret, obj)):
        return (*ret[:-2], beside) if len(ret) > 2 else (None, beside)
    if isinstance(ret, tuple) and len(ret) > 1 and _stored_echo(ret[-1], obj):
        return ret[0] if len(ret) == 2 else ret[:-1]  # read where they are stored
    if not isinstance(ret, dict) or not names or not all(isinstance(k, str) for k in ret):
        return ret
    one = sum(is_float_array(x) for x in xs) == 1  # (one input: {'inputs': dx} for x)
    keys = [_input_key(ret, n, x, one) for n, x in zip(names, xs, strict=False)]
    if any(k is None and is_float_array(x) and x.dtype.kind == "f" and not mask(x)
           for k, x in zip(keys, xs, strict=False)):  # (a forgotten dh_prev is no
        return ret  # constant; a 0/1 mask is)
    held = [p for p, v in walk(obj) if is_float_array(v)]  # W itself before m['W']
    arrays = {last_name(p): p for p in held} | {p: p for p in held if p == last_name(p)}
    params = {arrays.get(k) or arrays.get(k[1:]) or arrays.get(grad_stem(k)): g
              for k, g in ret.items() if k not in keys}
    if not any(keys) or None in params or len(params) != len(ret) - len(set(keys) - {None}):
        return ret
    return (*[None if k is None else ret[k] for k in keys], params)


def _laid_as_lists(ret: tuple[Any, ...], obj: Any) -> tuple[Any, ...] | None:
    """A return ending in two or more lists of arrays, each laid out as one list of
    arrays ``obj`` holds and only that one (``return dws, dbs`` beside ``self.ws``,
    ``self.bs``: as many, of the same shapes), as the input gradients before them, then
    the parameters' gradients keyed by their paths; None otherwise."""
    own = {n: v for n, v in (vars(obj).items() if hasattr(obj, "__dict__") else ())
           if isinstance(v, list) and v and all(is_float_array(a) for a in v)}
    out: dict[str, Any] = {}
    k = len(ret)
    while k > 0 and isinstance(part := ret[k - 1], (list, tuple)) and part and all(
            isinstance(g, np.ndarray) for g in part):
        fits = [n for n, v in own.items() if len(v) == len(part) and all(
            a.shape == g.shape for a, g in zip(v, part, strict=True))]
        if len(fits) != 1 or any(key.startswith(f"{fits[0]}[") for key in out):
            return None
        out |= {f"{fits[0]}[{i}]": g for i, g in enumerate(part)}
        k -= 1
    if len(ret) - k < 2:
        return None
    return (*ret[:k], out) if k else (None, out)


_GETTER = re.compile(r"^(get_?)?(params|parameters|weights)$", re.I)


def _as_got(v: np.ndarray, obj: Any) -> dict[str, np.ndarray] | None:
    """``{path: gradient}`` when ``v`` is as long as the vector the object's one getter
    taking nothing returns (``get_params()``: Welch Labs' ``np.concatenate((W1.ravel(),
    W2.ravel()))``), that vector being the object's own float arrays raveled and joined
    in some order, each once, none of ``v``'s shape: ``v`` split in that order."""
    if obj is None or not hasattr(obj, "__dict__"):
        return None
    getters = [n for n in dir(type(obj)) if _GETTER.match(n) and callable(getattr(obj, n))]
    if len(getters) != 1 or positional_names(getattr(obj, getters[0]), required=True) != []:
        return None
    try:
        flat = np.asarray(getattr(obj, getters[0])())
    except Exception:  # noqa: BLE001 - not such a getter
        return None
    own = {n: a for n, a in vars(obj).items() if is_float_array(a) and a.size and
           a.shape != v.shape}
    if flat.shape != v.shape:
        return None
    out, at = {}, 0
    while at < v.size:
        fits = [n for n, a in own.items() if n not in out and at + a.size <= v.size and
                np.array_equal(flat[at:at + a.size], a.ravel())]
        if len(fits) != 1:
            return None
        out[fits[0]] = v[at:at + own[fits[0]].size].reshape(own[fits[0]].shape)
        at += own[fits[0]].size
    return out


def _raveled(extra: Any, obj: Any) -> dict[str, np.ndarray] | None:
    """``{path: gradient}`` when ``extra`` is a list of one 1-d float array as long as
    the arrays of the one list the object holds of two or more of them (``self.params =
    [W, b]``), raveled and joined in that order (``np.r_[dW.ravel(), db]``), none of
    them of its shape; None otherwise."""
    if obj is None or not (isinstance(extra, list) and len(extra) == 1 and is_float_array(
            v := extra[0]) and v.ndim == 1):
        return None
    lists = [x for x in vars(obj).values() if isinstance(x, (list, tuple)) and len(x) > 1
             and all(is_float_array(a) for a in x)] if hasattr(obj, "__dict__") else []
    fit = [x for x in lists if sum(a.size for a in x) == v.size and
           all(a.shape != v.shape for a in x)]
    if len(fit) != 1:
        return None
    paths: dict[int, str] = {}
    for p, a in walk(obj):  # an array's own name before its place in the list
        if is_float_array(a) and (id(a) not in paths or ("[" in paths[id(a)] and "[" not in p)):
            paths[id(a)] = p
    out, at = {}, 0
    for a in fit[0]:
        out[paths[id(a)]] = v[at:at + a.size].reshape(a.shape)
        at += a.size
    return out


def _beside_listed(ret: tuple[Any, ...], obj: Any) -> dict[str, Any] | None:
    """``{path: gradient}`` for ``(dX, [dW, db], [W, b])``: the last item lists arrays the
    object holds (by identity, each once), the one before it as many gradients, each of
    its array's shape but for size-1 axes, in the same order; else None."""
    grads, arrays = ret[-2], ret[-1]
    if obj is None or not all(isinstance(v, (list, tuple)) for v in (grads, arrays)) or \
            not arrays or len(grads) != len(arrays):
        return None
    paths = {id(v): p for p, v in walk(obj) if is_float_array(v)}
    named = {paths.get(id(a), ""): g for a, g in zip(arrays, grads, strict=True)}
    return None if "" in named or len(named) != len(arrays) or not all(
        is_float_array(g) and same_but_unit(np.shape(g), np.shape(a)) for a, g in zip(
            arrays, grads, strict=True)) else named


def _stored_echo(extra: Any, obj: Any) -> bool:
    """Whether ``extra`` is a dict, list or tuple nesting float arrays each of which the
    object holds after its backward (``(dx, {'norm1': (dgamma, dbeta), 'ff': (dW1, ...)})``
    of a block whose sub-layers store what they return): its parameters' gradients
    returned as well as stored, read where they are stored."""
    if obj is None or not isinstance(extra, (dict, list, tuple)):
        return False

    def flat(v: Any) -> list[Any]:
        if isinstance(v, (list, tuple)):
            return [a for o in v for a in flat(o)]
        return [a for o in v.values() for a in flat(o)] if isinstance(v, dict) else [v]

    got = flat(extra)
    held = {id(v) for _, v in walk(obj) if is_float_array(v)}
    return bool(got) and all(is_float_array(g) and id(g) in held for g in got)


def _input_key(ret: dict[str, Any], name: str, x: Any, one: bool = False) -> str | None:
    """The key of a returned dict holding the gradient of the input ``name``: ``d`` +
    its name, or its name itself (singular or plural: ``{'inputs': dx}`` for
    ``forward(input)``; for the ``one`` float input, ``inputs`` or ``input`` whatever its
    name) holding an array of its shape."""
    if f"d{name}" in ret:
        return f"d{name}"
    bare = (name, f"{name}s", name[:-1] if name.endswith("s") else "",
            *(("inputs", "input") if one else ()))
    return next((k for k in bare if k and is_float_array(ret.get(k)) and is_float_array(x)
                 and np.shape(ret[k]) == np.shape(x)), None)


def _numbers_listed(ret: Any, xs: Any) -> Any:
    """``ret`` with its first item, when a tuple's and a list of float numbers as many as
    the one input array's elements (``[np.dot(err, W[i]) for i in range(n)]``), made an
    array of that input's shape; anything else as it is."""
    arrays = [x for x in xs if is_float_array(x)]
    if not (isinstance(ret, tuple) and len(ret) > 1 and isinstance(ret[0], list) and
            len(arrays) == 1 and len(ret[0]) == arrays[0].size > 1 and all(
                isinstance(v, (float, np.floating)) for v in ret[0])):
        return ret
    return (np.array(ret[0], dtype=arrays[0].dtype).reshape(arrays[0].shape), *ret[1:])


def _flattened(d: Any) -> dict[str, Any] | None:
    """A dict of dicts of arrays, string keys (``{'Wx': {'f': dWxf}}``), keyed by paths
    (``"Wx['f']"``); None for anything else."""
    if not isinstance(d, dict) or not d or not all(isinstance(v, dict) and v for v in d.values()):
        return None
    out = {f"{k}[{j!r}]": g for k, v in d.items() for j, g in v.items()}
    return out if all(isinstance(k, str) for k in d) and all(
        is_float_array(g) for g in out.values()) else None


def mask(x: np.ndarray) -> bool:
    """A mask: 0 and 1 only, both present (not zeros nor ones: a bias, a gain at its start)."""
    return bool(np.all((x == 0) | (x == 1)) and np.any(x == 0) and np.any(x == 1))
