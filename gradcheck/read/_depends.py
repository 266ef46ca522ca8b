"""Which arrays a layer holds are its parameters, and where their gradients are, by what
they do: those the output depends on (:func:`moves_output`), weights a first forward
builds and keeps (:func:`persistent_arrays`), not the caches of its inputs
(:func:`keeps_input`); a slot named for an array left stale (:func:`stale_slot`); stored
arrays that move with the output gradient or are named as an input's gradient, which
rule out a first layer's reading (:func:`moves_with_dout`, :func:`misshapen_input`).
"""

from __future__ import annotations

import re
from typing import Any

import numpy as np

from ._conventions import zero_one
from ._discovery import (
    GRAD_BOXES,
    GRAD_NAMES,
    Param,
    float_arrays,
    float_scalars,
    get_path,
    is_float_array,
    is_float_scalar,
    param_object,
    try_path,
    walk,
)
from ._layer_call import Protocol, call_layer, ones_like, times
from ._layout import abbreviates
from ._observe import grad_of, grad_stem, last_name, parent_of, positional_names
from ._protocol import ProtocolError, UserCodeError, clone
from ._reading import forward_output, leaves, probe
from ._step import in_output
from ._suffix import name_tail

__all__ = ["copy_of", "keeps_input", "misshapen_input", "misshapen_param", "moves_output",
           "held_labels", "named_in_wrt", "scalar_grads",
           "moves_with_dout", "persistent_arrays", "rebuilt_once", "stale_slot"]


def keeps_input(first: Any, p: Param | str) -> bool:
    """Whether the forward leaves at ``p`` one of its inputs, or a copy of its values
    (``self.x = x.ravel()``, ``x.copy()``): a cache of the input, not a parameter."""
    path = p.value if isinstance(p, Param) else p
    if not isinstance(path, str):
        return False
    now = try_path(first.init, path)
    return any(now is x or copy_of(now, x) for x in first.xs)


def copy_of(a: Any, x: Any) -> bool:
    """``a`` holds the float values of the input ``x`` (in any shape of the same size)."""
    return (is_float_array(a) and isinstance(x, np.ndarray) and x.dtype.kind == "f"
            and a.size == x.size and a.size > 0
            and np.array_equal(np.ravel(a), np.ravel(x), equal_nan=True))


def moves_output(proto: Protocol, xs: list[Any], path: str,
                  rng: np.random.Generator) -> bool:
    """Whether perturbing the array at ``path`` changes the forward's output, by less
    for a smaller step: an output that jumps as far for a step a thousand times smaller
    reads it as a flag (``if self.mean.all() == 0``: running statistics' first call), not
    as a parameter: noted, and False."""
    shape = np.shape(get_path(proto.layer, path))
    signs = rng.choice([-1.0, 1.0], shape) * np.linspace(1.0, 1.5, int(np.prod(shape))
                                                         ).reshape(shape)  # (no uniform
    # shift, to which a softmax's loss is blind, even for a bias of zeros)

    def output(step: float) -> np.ndarray:
        layer = clone(proto.layer)
        a = get_path(layer, path)
        a += (step * (np.abs(a) + 1) * signs).astype(a.dtype)
        assert proto.draws is not None  # discover always sets them
        out = forward_output(layer, proto.forward, clone(xs), proto.draws,
                             proto.out_path)
        try:
            return np.concatenate([np.asarray(o, dtype=np.float64).ravel()
                                   for o in leaves(out)])
        except (TypeError, ValueError):  # an object holding the output (a Variable, a Box)
            raise ProtocolError("bad-protocol", (
                f"{type(proto.layer).__name__}.{proto.forward} returned "
                f"{type(out).__name__}, not arrays of numbers: check a forward returning "
                "the output array (fwd = lambda x: layer.forward(x).data) with check_vjp"
            )) from None

    a, b = output(0.0), output(1e-3)
    if a.shape != b.shape or not np.all(np.isfinite(b)):
        return True
    jump = float(np.linalg.norm(b - a))
    if jump == 0.0:
        return False
    small = output(1e-6)  # (a jump well above rounding: a bias a BatchNorm cancels moves
    if jump > 1e-6 * (1 + float(np.linalg.norm(a))) and small.shape == a.shape and float(
            np.linalg.norm(small - a)) > 0.1 * jump:  # the output by rounding alone)
        proto.flags.append(path)
        proto.note(f"{path}: the output jumps as far when it moves a thousand times less: a "
                   "flag the forward branches on (running statistics tested for zeros), not "
                   "a parameter (not checked)")
        return False
    return True


def persistent_arrays(init: Any, inputs: tuple[Any, ...], forward: str, held: set[str]
                      ) -> tuple[set[str], bool]:
    """Paths of arrays created by the first forward that a second forward leaves as they
    were (the same object, the same values): weights and buffers, not caches (a cache is
    rebuilt, or added to a list or dict that grows), and whether the second forward was
    refused (``assert self.x is None``): then every array the first made counts as kept."""
    again = clone(init)
    first = {p: (a, a.copy()) for p, a in _floats(again).items() if p not in held}
    if not first:
        return set(), False
    lists = {p: (v, len(v)) for p, v in walk(again) if isinstance(v, (list, dict))}
    try:
        call_layer(again, forward, clone(list(inputs)))
    except UserCodeError:  # what the first made cannot be told kept or rebuilt: any of
        return {p for p, (_, v) in first.items() if not any(  # it but a copy of an input
            isinstance(x, np.ndarray) and x.shape == v.shape and np.array_equal(x, v)
            for x in inputs)}, True  # may be a weight (no check passes without them)
    grown = [p for p, (v, n) in lists.items() if len(v) != n]
    now = _floats(again)
    return {p for p, (a, values) in first.items()
            if now.get(p) is a and np.array_equal(a, values)
            and not any(p.startswith(g + "[") for g in grown)}, False



def _floats(obj: Any) -> dict[str, np.ndarray]:
    """path -> float array held by ``obj``, the values of its parameter objects too
    (``params['W'].data`` of a ``Parameter`` holding ``data`` and ``grad``)."""
    out = {p: a for p, a in float_arrays(obj).values()}
    for p, v in walk(obj):
        if (attr := param_object(v)) is not None:
            out.setdefault(f"{p}.{attr}", getattr(v, attr))
    return out


def rebuilt_once(layer: Any, inputs: tuple[Any, ...], forward: str) -> bool:
    """Whether the first forward rebinds float arrays the layer held that a second
    forward leaves as they are (a BatchNorm building ``gamma`` and ``beta`` for the
    input's shape on its first call): then every evaluation starts from a copy that ran
    once, or a perturbation of the old array would be thrown away."""
    again = clone(layer)
    ids = {p: id(a) for p, a in float_arrays(again).values()}
    call_layer(again, forward, clone(list(inputs)))
    now = {p: a for p, a in float_arrays(again).values()}
    rebound = {p: now[p] for p, i in ids.items() if p in now and id(now[p]) != i}
    if not rebound:
        return False
    try:
        call_layer(again, forward, clone(list(inputs)))
    except UserCodeError:  # refuses a second forward: nothing was built once
        return False
    return any(try_path(again, p) is a for p, a in rebound.items())


def stale_slot(base: Any, first: Any, p: Param) -> Param:
    """``p`` read where the layer keeps a slot named exactly for it (``grads['b']`` or
    ``grads['db']`` for ``b``) when the backward wrote its gradient elsewhere
    (``grads['dB']``, ``self.db``) and left that slot as it was: what reads the slot (an
    optimizer) gets nothing, so the check reads it too, and fails there."""
    if not isinstance(p.value, str) or not isinstance(p.grad, str):
        return p
    name = p.value.rsplit(".", 1)[-1]
    value = try_path(base, p.value)
    for slot in (f"{box}[{key!r}]" for box in GRAD_BOXES
                 for key in (name, *(g.format(name) for g in GRAD_NAMES))):
        held = try_path(base, slot)
        if slot == p.grad or not is_float_array(held) or not is_float_array(value) or \
                held.shape != value.shape:
            continue
        after = try_path(first.after, slot)
        if is_float_array(after) and np.array_equal(after, held):  # left as it was
            return Param(p.name, p.value, slot, p.also)
    return p


def held_labels(proto: Protocol, missing: list[str], first: Any) -> list[str]:
    """Of the arrays with no gradient found, those a loss holds as its targets: a scalar
    output, 0/1 values only, both present, in an input's shape (one-hot rows of the
    scores given to ``__init__``), as labels among its inputs are; they are held
    constant, with a note (a bias of ones, a gamma of ones, are no targets)."""
    if not isinstance(first.out, np.ndarray | np.generic | float) or np.size(first.out) != 1:
        return missing
    shapes = [np.shape(x) for x in first.xs if isinstance(x, np.ndarray)]
    labels = [p for p in missing if is_float_array(a := try_path(first.init, p))
              and zero_one(a) and not np.all(a == 1) and a.shape in shapes]
    if labels:
        proto.note(f"{', '.join(labels)}: 0/1 values a loss holds (its targets): held "
                   "constant, not checked")
    return [p for p in missing if p not in labels]


def named_in_wrt(proto: Protocol, missing: list[str], stored: Any) -> list[str]:
    """Of the arrays with no gradient found, those ``wrt=`` names, when it is given
    (``wrt=['x0', 'kernel', 'bias']``; none for ``wrt=['x0']``): the others are held
    constant, as every array it leaves out is (an initial state ``h0`` the backward gives
    none; the buffers it ``stored`` gradients in are read as such all the same)."""
    if not isinstance(proto.wrt_given, tuple):  # (a first reading leaves them all in)
        return missing
    out = [p for p in missing if p in proto.wrt_given]
    held = [p for p in missing if p not in out and p not in stored]
    if held:
        proto.note(f"{', '.join(held)}: no gradient found, and not named in wrt=: held "
                   "constant (not checked)")
    return out


def moves_with_dout(proto: Protocol, first: Any, free: dict[str, np.ndarray]
                    ) -> dict[str, np.ndarray]:
    """Of ``free`` (arrays the backward stored that no gradient claims), those on the
    layer itself that change with the output gradient (a padded input gradient under a
    name of its own): the backward computes them from it, so it is no first layer's (a
    part's, ``act.dinputs`` of a tanh it holds, is that part's, unless its first axis is
    as long as an input's: a part's input gradient, ``fc.dinputs``, may be the layer's)."""
    free = {c: a for c, a in free.items() if _batch_alike(c, a, [np.shape(x) for x in first.xs])}
    assert proto.draws is not None
    try:
        second = probe(proto.layer, proto.forward, proto.backward, first.xs, proto.draws,
                       (proto.style, proto.order), proto.out_path,
                       lambda o: times(ones_like(o), 2.0), proto.then)
    except Exception:  # noqa: BLE001 - no evidence either way
        return {}
    return {c: a for c, a in free.items() if c in second.stored and not (
        np.shape(second.stored[c]) == np.shape(a) and np.array_equal(second.stored[c], a))}


def _batch_alike(path: str, a: Any, shapes: list[tuple[int, ...]]) -> bool:
    """Whether a stored array may be an input's gradient: the layer's own, or a part's
    whose first axis is as long as one of the inputs' (``shapes``), or whose shape is
    one step of one (``(N, D)`` of an ``(T, N, D)`` input, a time-distributed part's)."""
    a_shape = np.shape(a)
    return not parent_of(path) or (len(a_shape) > 0 and any(len(s) > 0 and (
        s[0] == a_shape[0] or tuple(s[len(s) - len(a_shape):]) == a_shape) for s in shapes))


def misshapen_input(proto: Protocol, first: Any, lost: list[int],
                     free: dict[str, np.ndarray]) -> None:
    """A stored array named as a lost input's gradient (``dx``, ``dinputs``) whose shape
    is not the input's: a ``shape-mismatch`` verdict, not a first layer."""
    names = positional_names(getattr(first.init, proto.forward)) or []
    for k in lost:
        shape = np.shape(first.xs[k])
        mine = [names[k]] if k < len(names) else []
        ghost = {c: np.empty(shape) for c in free}  # the names alone, any shape
        own = {c: g for c, g in ghost.items() if _batch_alike(c, free[c], [shape])}
        generic = ["inputs", "input", "x"] if len(proto.wanted) == 1 else []  # (a part's
        for name in mine + generic:  # act.dinputs of another length is its own)
            c = grad_of(name, shape, ghost if name in mine else own)
            if c is not None and np.shape(free[c]) != shape:
                raise ProtocolError("shape-mismatch", (
                    f"gradient of x{k} (stored in {c}) has shape {np.shape(free[c])}, "
                    f"expected {shape}"), at=(f"x{k}", first.xs[k]))


def _delta(name: str) -> str:
    """``name`` less a ``delta_`` prefix, in lower case; ``""`` without one."""
    low = name.lower()
    return low[len("delta_"):] if low.startswith("delta_") else ""


def _by_tail(path: str, left: list[str], free: dict[str, Any]) -> str | None:
    """The one stored array of ``path``'s object whose name with the gradient affix is
    the last part of ``path``'s name after ``_`` (``dldb`` for ``neuron_b``), that part
    being no other unread array's."""
    t = name_tail(path)
    if not t or [name_tail(p) for p in left].count(t) != 1:
        return None
    fits = [c for c in free if parent_of(c) == parent_of(path) and grad_stem(last_name(c))
            == t and grad_stem(last_name(c)) != last_name(c).lower()]
    return fits[0] if len(fits) == 1 else None


def misshapen_param(left: list[str], base: Any, cands: dict[str, np.ndarray],
                    first: Any = None, claimed: set[str] | None = None) -> None:
    """A gradient found by its name whose shape is not its array's is a wrong gradient
    (``shape-mismatch``), not a reading problem; so is a float scalar the backward (of
    the probe ``first``) created or changed under that name (``self.db = np.sum(dout)``
    for a bias of three; not a weight-decay rate ``self.dw = 1e-4`` it never touches)."""
    if first is not None:
        made = [p for p in float_scalars(first.after) if not (  # unchanged: no gradient
            is_float_scalar(try_path(first.init, p)) and try_path(first.init, p) == try_path(
                first.after, p))]
        cands = {p: np.asarray(try_path(first.after, p)) for p in made} | cands
    for path in left:
        a = get_path(base, path)
        ghost = {k: np.empty(a.shape) for k in cands}  # the names alone, any shape
        named = grad_of(path, a.shape, ghost)
        if named is None:
            named = _own_slot(path, left, base, cands)
        free = {c: v for c, v in cands.items() if c not in (claimed or set())}
        if named is None:  # b_grad for bias, of another shape (delta_b too, here only:
            short = [c for c in free if parent_of(c) == parent_of(path) and any(  # a
                abbreviates(s, n := last_name(path).lstrip("_").lower()) or (  # record of
                    len(s) > 2 and s + "s" == n) for s in (  # a step, elsewhere; and
                    grad_stem(last_name(c)), _delta(last_name(c))))]  # weight_gradient)
            named = short[0] if len(short) == 1 else None
        if named is None:  # dldb for neuron_b: the last part of its name, no other's
            named = _by_tail(path, left, free)
        if named is None and len(left) == 1:  # the one array stored and not read, as
            fits = [c for c, v in free.items() if isinstance(v, np.ndarray)  # many
                    and v.dtype.kind == "f" and v.size == a.size  # numbers as it has, in
                    and re.search(r"\[\d+\]$", c)]  # a list of gradients (not delta)
            named = fits[0] if len(fits) == 1 and len(free) == 1 else None
        if named is not None and (got := np.shape(cands[named])) != a.shape:
            raise ProtocolError("shape-mismatch", (
                f"gradient of {path} (stored in {named}) has shape {got}, expected {a.shape}"
                + ("; its transpose has the expected shape: a missing or extra transpose (a "
                   "dW stored as W.T's gradient?)" if len(got) == 2 and got[::-1] == a.shape
                   else "")), at=(path, a))


def scalar_grads(proto: Protocol, xs: list[Any], found: list[Param],
                 cands: dict[str, np.ndarray], first: Any) -> list[Param]:
    """The float scalars of the layer not in ``found`` that the output depends on and
    whose gradient the backward (of the probe ``first``) stored under their name, as an
    array or a float it created or changed (``cache['dgamma']`` for ``cache['gamma']``;
    not ``cache['dmean']`` for a mean the forward computes): size 1, a parameter; of
    more numbers, a ``shape-mismatch`` (``(D,)`` for one gain: never summed). Returned
    after ``found``, less the float scalars in it the output does not depend on (noted)."""
    base = proto.layer
    idle = [p for p in found if isinstance(p.value, str) and is_float_scalar(
        try_path(base, p.value)) and not in_output(proto, xs, p.value, unsure=False)]
    if idle:
        proto.note(f"state: the output does not depend on {', '.join(p.name for p in idle)}"
                   " (a value the forward computes, not checked)")
    found = [p for p in found if p not in idle]
    used = {q for p in found for q in (p.value, p.grad) if isinstance(q, str)}
    cands = cands | {p: np.asarray(try_path(first.after, p)) for p in float_scalars(
        first.after) if try_path(first.init, p) != try_path(first.after, p)}
    got: list[Param] = []
    pairs: dict[tuple[type, str], str] = {}  # (class, value's name) -> its gradient's name
    for path in sorted(float_scalars(base), key=lambda q: not _moved_other(q, cands)):
        ghost = {k: np.empty(()) for k in cands if k not in used}
        free = {k: v for k, v in cands.items() if k not in used}
        named = None if path in used else grad_of(path, (), ghost) or _item_of(
            base, path, free) or _beside(first.after, path, free, pairs)
        if named is None:
            continue
        value = cands[named] if named in cands else try_path(first.after, named)
        if not in_output(proto, xs, path, unsure=False) and not _lost(proto, xs, path, value):
            continue
        if np.size(value) != 1:
            raise ProtocolError("shape-mismatch", (
                f"gradient of {path} (stored in {named}) has shape "
                f"{np.shape(value)}, expected () (a float scalar)"), at=(
                    path, np.asarray(try_path(base, path))))
        got.append(Param(path, path, named))
    return found + got


def _lost(proto: Protocol, xs: list[Any], path: str, grad: Any) -> bool:
    """Whether a float in a list of them whose other items reach the output, the output
    not depending on it, which the forward leaves as it was
    (set to another value first, it keeps it: no value it computes), has a nonzero
    gradient: a term the forward forgot, checked (that gradient can never reach the
    output), with a note."""
    m = re.fullmatch(r"(.*)\[(\d+)\]", path)
    items = try_path(proto.layer, m.group(1)) if m else None
    if not np.any(grad) or not isinstance(items, list) or not any(
            in_output(proto, xs, f"{m.group(1)}[{k}]", unsure=False)  # type: ignore[union-attr]
            for k in range(len(items)) if str(k) != m.group(2)):  # type: ignore[union-attr]
        return False  # (a list's item beside others that reach the output: bias[1])
    other = clone(proto.layer)
    mark = float(try_path(other, path)) + 1.2345
    Param(path, path, path).write(other, np.asarray(mark))
    assert proto.draws is not None
    try:
        forward_output(other, proto.forward, clone(xs), proto.draws, proto.out_path)
    except Exception:  # noqa: BLE001 - no evidence: not read as forgotten
        return False
    if try_path(other, path) != mark:
        return False
    proto.note(f"the output does not depend on {path}, yet the backward computes a "
               "gradient for it (a term the forward forgot?): checked")
    return True


def _beside(after: Any, path: str, cands: dict[str, Any],
            pairs: dict[tuple[type, str], str]) -> str | None:
    """For a float of an object holding two numbers only after the backward (``Weight``:
    ``value`` and ``derivative``), the other when the backward changed it and not the
    float itself (a momentum step changes both: a velocity is no gradient), or when
    another object of its class was so read (a forgotten ``bias.derivative`` left at 0):
    its gradient; else None. ``pairs`` learns the class's reading."""
    home, key = parent_of(path), last_name(path)
    obj = try_path(after, home) if home else None
    if obj is None or obj is after or not (attrs := _own_attrs(obj)):
        return None
    nums = [k for k, v in attrs.items() if isinstance(v, (int, float, np.integer,
                                                            np.floating)) and not isinstance(
        v, bool)]
    other = [k for k in nums if k != key]
    if len(nums) != 2 or len(other) != 1 or path in cands:
        return None
    if f"{home}.{other[0]}" in cands:
        pairs[(type(obj), key)] = other[0]
    return f"{home}.{other[0]}" if pairs.get((type(obj), key)) == other[0] else None


def _own_attrs(obj: Any) -> dict[str, Any]:
    """An object's attributes, its ``__slots__`` too; ``{}`` for containers."""
    if isinstance(obj, (list, tuple, dict, np.ndarray)):
        return {}
    out = dict(vars(obj)) if hasattr(obj, "__dict__") else {}
    for cls in type(obj).__mro__:
        for k in getattr(cls, "__slots__", ()):
            if isinstance(k, str) and hasattr(obj, k):
                out.setdefault(k, getattr(obj, k))
    return out


def _moved_other(path: str, cands: dict[str, Any]) -> bool:
    """Whether the object holding ``path`` holds another number the backward changed
    (read first: it teaches the class's pairing)."""
    home = parent_of(path)
    return bool(home) and any(k.startswith(f"{home}.") and k != path for k in cands)


def _item_of(base: Any, path: str, cands: dict[str, Any]) -> str | None:
    """For a float in a list of floats (``bias[1]`` of ``bias = [0.3, 0.1]``), the item
    at its index of the one array of the list's length named as the list's gradient
    (``bias_grad[1]``); None otherwise."""
    m = re.fullmatch(r"(.*)\[(\d+)\]", path)
    if m is None or not isinstance(items := try_path(base, m.group(1)), list) or not all(
            is_float_scalar(v) for v in items):
        return None
    named = grad_of(m.group(1), (len(items),), {
        k: v for k, v in cands.items() if is_float_array(v) and v.shape == (len(items),)})
    return None if named is None else f"{named}[{m.group(2)}]"


def _own_slot(path: str, left: list[str], base: Any, cands: dict[str, np.ndarray]
              ) -> str | None:
    """The array the backward stored beside ``path`` in a parameter object, one that
    holds these two arrays only (``gamma.grads`` beside ``gamma.params``; not another
    parameter, ``p.b`` beside ``p.W``, one of ``left``)."""
    home = parent_of(path)
    if not home:
        return None
    beside = [c for c in cands if c != path and c not in left and parent_of(c) == home
              and isinstance(cands[c], np.ndarray) and cands[c].dtype.kind == "f"]
    obj = try_path(base, home)
    held = vars(obj) if hasattr(obj, "__dict__") else obj if isinstance(obj, dict) else {}
    arrays = {k for k, v in held.items() if isinstance(v, np.ndarray) and v.ndim}
    if len(beside) != 1 or not arrays <= {last_name(path), last_name(beside[0])}:
        return None
    return beside[0]


def handed_on(proto: Protocol, xs: list[Any], found: list[Param]) -> list[Param]:
    """``found`` less the parameters held by another object the layer keeps that has a
    backward of its own, when the forward never touches that object: a loss holding the
    model it hands its gradient to (``self.model.backward(grads)`` in the loss's
    ``backward()``) fills that model's gradients, which are not the loss's (noted). A
    sub-layer the forward runs stays, even where the output does not move with it (a
    gate at zero, dead units after it)."""
    tops: dict[str, list[Param]] = {}
    for p in found:
        if isinstance(p.value, str) and (m := re.match(r"[A-Za-z_]\w*(?=[.\[])", p.value)):
            tops.setdefault(m.group(), []).append(p)
    gone: list[Param] = []
    for top, ps in tops.items():
        held = getattr(proto.layer, top, None)
        if held is None or isinstance(held, (list, tuple, dict, np.ndarray)) or not callable(
                getattr(held, "backward", None)):
            continue
        if _untouched(proto, xs, top):
            gone += ps
            proto.note(f"{top} is an object with a backward of its own that the forward never "
                       f"touches: the gradients the backward stores in it "
                       f"({', '.join(p.name for p in ps)}) are handed on, not this object's "
                       "(not checked)")
    return [p for p in found if p not in gone]


class _Absent:
    """Stands for a held object: any use of it raises."""

    def __getattr__(self, name: str) -> Any:
        raise AttributeError(name)


def _untouched(proto: Protocol, xs: list[Any], top: str) -> bool:
    """Whether the forward runs, to the same output, with the attribute ``top`` of a
    copy of the layer replaced by an object any use of which raises."""
    assert proto.draws is not None  # discover always sets them
    try:
        with np.errstate(all="ignore"):
            base = forward_output(clone(proto.layer), proto.forward, clone(xs), proto.draws,
                                  proto.out_path)
            layer = clone(proto.layer)
            setattr(layer, top, _Absent())
            out = forward_output(layer, proto.forward, clone(xs), proto.draws, proto.out_path)
        return all(np.array_equal(np.asarray(a), np.asarray(b)) for a, b in zip(
            leaves(base), leaves(out), strict=True))
    except Exception:  # noqa: BLE001 - it was used (or no evidence): kept
        return False
