"""How a layer object is called: its backward's calling style, and :class:`Protocol`, the
layer turned into the functional protocol of :func:`gradcheck.check_vjp`.

Every evaluation runs on a fresh deep copy of the layer (of its state after one forward
when that forward builds its weights), so caches, accumulated gradients and counters
never leak from one evaluation into another; gradients that a backward accumulates with
``+=`` are read as the change it made. What :mod:`gradcheck.read._layer_read` observed (where
the output and each gradient are, how the backward is called) is carried by the
:class:`Protocol`.
"""

from __future__ import annotations

import inspect
import re
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ._discovery import Param, float_scalars, get_path, is_float_array, try_path, walk
from ._flat import FLAT, named_order, split_flat
from ._handed import Handed, listen
from ._observe import positional_names, same_but_unit, unit_note
from ._per_sample import per_sample, per_sample_note
from ._protocol import ProtocolError, call_user, clone, map_arrays
from ._reading import (
    CACHE,
    CACHED,
    OUTPUT,
    GlobalDraws,
    call_backward,
    leaves,
    read_output,
)
from ._shares import change as _change
from ._shares import same_elsewhere
from ._tokens import FIRST_OUT

__all__ = ["Protocol", "call_layer", "call_style_of", "cotangent_named", "gradient_named", "leaves",
           "ones_like",
           "times", "uneven"]

_COTANGENT_NAME = re.compile(r"^(d(out|y|z|l|ldy|values|_out)?|g|grads?(_?out(put)?)?|delta|"
                             r"upstream(_grad)?|accum_grad|error)$", re.I)


# -- how backward is called ------------------------------------------------------------------
def _positional(method: Any) -> tuple[list[inspect.Parameter], bool] | None:
    try:
        sig = inspect.signature(method)
    except (TypeError, ValueError):
        return None
    ps = list(sig.parameters.values())
    pos = [p for p in ps if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    return pos, any(p.kind is p.VAR_POSITIONAL for p in ps)


def cotangent_named(name: str) -> bool:
    """Whether an argument's name reads as an output gradient's (``dout``, ``grad``)."""
    return bool(_COTANGENT_NAME.match(name))


def gradient_named(method: Any, order: list[Any]) -> bool:
    """Whether the argument of ``order`` given the output gradient (its None) is named as
    one (``backward(ctx, inputs, dout)``)."""
    names = positional_names(method) or []
    k = order.index(None)
    return k < len(names) and cotangent_named(names[k])


def takes_no_gradient(method: Any) -> bool:
    """A method that can be called with no argument at all (a loss's backward)."""
    sig = _positional(method)
    if sig is None:
        return False
    pos, varargs = sig
    return not varargs and all(p.default is not p.empty for p in pos)


def call_style_of(method: Any, dy: Any, what: str) -> tuple[str, str]:
    """How backward takes the output gradient: ``"one"`` (``backward(dout)``),
    ``"spread"`` (``backward(dh, dc)`` for a tuple output) or ``"none"``
    (``backward()``, scalar outputs only), and a note when that was a guess."""
    sig = _positional(method)
    if sig is None:
        return "one", ""
    pos, varargs = sig
    req = [p for p in pos if p.default is p.empty]
    k = len(dy) if isinstance(dy, (tuple, list)) else 1
    if k > 1 and len(pos) >= k and (len(req) >= 2 or (req and pos[1].default is None)):
        return "spread", (f"{what} takes the {k} output gradients as separate arguments "
                          f"({', '.join(p.name for p in pos[:k])})")
    scalar = not isinstance(dy, (tuple, list, dict)) and np.size(dy) == 1
    if varargs and not pos and scalar:  # backward(*args, **kwargs): it names none
        return "none", (f"{what}(*args) names no output gradient: called with none, as a "
                        "loss's backward (its result scaled by the output gradient)")
    if req or varargs:
        return "one", ""
    if scalar and len(pos) == 1 and set(pos[0].name) == {"_"}:  # backward(self, _=None):
        return "none", (f"{what}'s one argument is named {pos[0].name!r}, Python's name "  # unused
                        "for an unused one: called with none, as a loss's backward (its "
                        "result scaled by the output gradient)")
    if pos and not scalar:
        return "one", ""
    first = pos[0] if pos else None
    if first is not None and (first.default is None or _COTANGENT_NAME.match(first.name) or (
            type(first.default) in (int, float) and first.default == 1)):
        return "one", (f"{what}'s optional argument {first.name!r} received the output "
                       "gradient (a random, non-unit one)")
    if not scalar and isinstance(dy, (tuple, list, dict)):
        raise ProtocolError("bad-protocol", f"{what}() takes no output gradient, so the "
                            "output must be one array (a loss, or a loss per sample); it "
                            f"has {len(dy)} parts")
    return "none", ""  # a loss per sample: read as the gradient of their mean


def _of_the_floats(dx: Any, seq: Any) -> list[Any] | None:
    """A list input's gradient given as one item per float array of it, in order, or
    with a number or None at each other item (``[0.0, dW]`` for ``[ids, W]``; ``[dx]``
    for ``[x, labels]``), laid out as the input with None at the others; else None."""
    if not isinstance(seq, (list, tuple)) or not isinstance(dx, (list, tuple)):
        return None
    floats = [j for j, v in enumerate(seq) if is_float_array(v)]
    if not floats or len(floats) == len(seq) or not all(
            isinstance(g, np.ndarray) or g is None or isinstance(g, (int, float, np.number))
            for g in dx):
        return None
    if len(dx) == len(seq) and all(isinstance(dx[j], np.ndarray) for j in floats) and all(
            not isinstance(dx[j], np.ndarray) for j in range(len(seq)) if j not in floats):
        return [dx[j] if j in floats else None for j in range(len(seq))]
    if len(dx) == len(floats) and all(isinstance(g, np.ndarray) for g in dx):
        out: list[Any] = [None] * len(seq)
        for j, g in zip(floats, dx, strict=True):
            out[j] = g
        return out
    return None


def _times_all(d: Any, scale: Any) -> Any:
    """``d`` times ``scale``, every number in it (arrays, NumPy and Python scalars),
    nested lists, tuples and dicts kept."""
    if isinstance(d, (list, tuple)):
        return type(d)(_times_all(v, scale) for v in d)
    if isinstance(d, dict):
        return {k: _times_all(v, scale) for k, v in d.items()}
    return d if d is None else np.asarray(d) * scale


# -- calling the layer -------------------------------------------------------------------------
@dataclass
class Protocol:
    layer: Any  # the state every evaluation starts from (never the user's object)
    forward: str
    backward: str
    n_inputs: int
    params: list[Param]
    wanted: list[int]  # the inputs in wrt (without wrt: those holding a float array)
    notes: list[str] = field(default_factory=list)
    shapes: list[Any] = field(default_factory=list)  # of the inputs ("sequence", None)
    labels: list[bool] = field(default_factory=list)  # which inputs hold 0/1 labels
    style: str = ""
    order: list[Any] = field(default_factory=list)  # style "inputs": the arguments
    out_path: str | None = None  # where a forward returning None stores its output
    draws: GlobalDraws | None = None
    returned: tuple[int, dict[str, Any]] | None = None  # (dX, [dW, db]): index, name -> key
    stored_inputs: dict[int, str] = field(default_factory=dict)  # input -> stored gradient
    handed: dict[str, Handed] = field(default_factory=dict)  # param -> handed gradient
    stepped: list[str] = field(default_factory=list)  # style "step": minus their change
    reduce: str = ""  # a loss per sample: "mean" or "sum", what its backward differentiates
    wrt_given: bool | tuple[str, ...] = False  # the parameters wrt= names, if any
    reading: int | str | None = None  # a loss's prediction argument: an input or a path
    then: str | None = None  # a method completing the backward (``compute_gradients()``)
    fed: str | None = None  # a method feeding it the output gradient (style FEED)
    box: str | None = None  # the output box's .grad the output gradient goes in (style BOX)
    unboxed: dict[str, bool] = field(default_factory=dict)  # box values: no parameter
    # (False: rebound by the forward) or a constant (True: targets)
    row: bool = False  # a 1-d output's gradient given as one row (style "row")
    whole: bool = False  # a list output's gradient given as one argument, not "spread"
    trial: list[Any] | None = None  # style "inputs" in an order found by trial
    pick: list[int] = field(default_factory=list)  # a loss's one array: [k] x_k's, [a, b] unsure
    item: int | None = None  # the one item of a returned tuple moving with dout: (da, dz)
    step_attr: str | None = None  # a step size held on the layer (self.learning_rate)
    held_step: str | None = None  # that step size, once read: 1.0 on the copies checked
    flags: list[str] = field(default_factory=list)  # arrays the output jumps with (a branch)
    tied: dict[int, int] = field(default_factory=dict)  # an input given again: its first place

    def note(self, text: str) -> None:
        if text and text not in self.notes:
            self.notes.append(text)

    def run_forward(self, xs: list[Any], ps: list[np.ndarray]) -> tuple[Any, Any]:
        layer = clone(self.layer)
        written: dict[str, Any] = {}
        for p, value in zip(self.params, ps, strict=True):
            if isinstance(p.value, str) and p.value in written:  # a second place's twin:
                value = written[p.value] + (value - p.read(self.layer))  # moves add up
            if isinstance(p.value, str):
                written[p.value] = value
            p.write(layer, value)
        if self.draws is not None:
            self.draws.reset()
        xs = [xs[self.tied.get(k, k)] for k in range(len(xs))]  # (x, x, x): moved together
        out = getattr(layer, self.forward)(*xs)
        if self.draws is not None:
            self.draws.seen()
        returned = clone(out) if {OUTPUT, CACHED, FIRST_OUT} & set(map(str, self.order)) \
            or self.style == CACHE else None
        out = read_output(layer, out, self.out_path)
        if self.reduce:
            out = getattr(np, self.reduce)(np.asarray(out))
        shared = self.draws.now() if self.draws is not None else []
        drawn = self.draws.taken() if self.draws is not None else None
        return out, (layer, xs, shared, returned, drawn)

    def run_backward(self, dy: Any, cache: Any) -> list[Any]:
        fresh, xs, shared, returned, drawn = clone(cache)  # its own copy: += stays local
        if self.draws is not None:
            self.draws.put(shared)  # what this evaluation's forward left on the class
            self.draws.resume(drawn)
        method = getattr(fresh, self.backward)
        if not self.style:
            self.style, note = call_style_of(method, dy, f"{type(self.layer).__name__}."
                                           f"{self.backward}")
            self.note(note)
        for p in self.params:  # a layer that ran before holds its last gradients: cleared,
            g = p.read_grad(fresh)  # what the backward leaves is read as its change
            if is_float_array(g) and g.flags.writeable:
                g[...] = 0
        before = [_as_float(p.read_grad(fresh)) for p in self.params]
        elsewhere = {a: _as_float(try_path(fresh, a)) for p in self.params for a in p.also}
        owners: dict[str, list[str]] = {}
        for h in self.handed.values():
            owners.setdefault(h.owner, []).append(h.method)
        log = listen(fresh, {k: sorted(set(v)) for k, v in owners.items()})
        moved = {p: np.array(get_path(fresh, p), copy=True) for p in self.stepped}
        ret = _item(call_backward(method, self.style, self.order, dy, xs, self.then, returned,
                                  positional_names(getattr(fresh, self.forward)) or ()), self.item)
        dx, pgrads = ret, None
        if self.returned is not None and self.returned[0] == FLAT:  # (or one array: None)
            pgrads, dx = ret, split_flat(ret, self.returned[1], xs) if None not in \
                self.returned[1].values() else None
        elif self.returned is not None:
            j, _ = self.returned
            pgrads = ret[j]
            rest = [r for i, r in enumerate(ret) if i != j]
            dx = rest[0] if len(rest) == 1 else self._beside_state(rest, xs) if rest else None
        else:
            dx = self._beside_stored(dx, fresh, xs)
        dxs = self._input_grads(dx, not isinstance(dy, (tuple, list, dict)) and np.size(dy) == 1,
                                xs)
        _stored_and_tied(dxs, fresh, self.stored_inputs, self.tied)
        dxs = [self._row(d, xs[k].shape, f"x{k}") if self.row else self._vector(d, xs, k) if
               isinstance(xs[k], np.ndarray) else d for k, d in enumerate(dxs)]
        scale = np.asarray(dy) if self.style in ("none", "given") else None
        grads = []
        keys = self.returned[1] if self.returned is not None else {}
        for p, b in zip(self.params, before, strict=True):
            if p.name in keys and pgrads is not None:  # (a loss's backward(): times dy)
                g = np.array(pgrads if keys[p.name] is None else pgrads[keys[p.name]],
                             copy=True) * (1 if scale is None else scale)
            elif (at := p.name if p.name in moved else p.value) in moved:  # a step of
                g = (moved[at] - np.asarray(get_path(fresh, at))).astype(  # size 1 made:
                    moved[at].dtype) * (1 if scale is None else scale)  # minus it (w.data)
            elif p.name in self.handed:
                g = self.handed[p.name].read(log)
                g = g if scale is None or g is None else g * scale
            else:
                g = same_elsewhere(p, fresh, _change(p.read_grad(fresh), b, scale),
                                   elsewhere, self.note)
            grads.append(self._unit(self._summed(g, p, xs), np.shape(p.read(fresh)),
                                    p.name, np.shape(p.read(self.layer))))
        if scale is not None:
            dxs = [None if d is None else _times_all(d, scale) for d in dxs]
        return dxs + grads

    def _summed(self, g: Any, p: Param, xs: list[Any]) -> Any:
        """A gradient stored one per sample (:mod:`._per_sample`): its sum, noted."""
        if not per_sample(g, np.shape(p.read(self.layer)), xs):
            return g
        self.note(per_sample_note(p.name, g))
        return g.sum(axis=0)

    def _unit(self, g: Any, shape: tuple[int, ...], name: str,
              given: tuple[int, ...] | None = None) -> Any:
        """A gradient whose shape differs from its array's by size-1 axes only, reshaped
        (it broadcasts in an update), with a note; to the shape the check gives the
        array (``given``) when the forward reshaped it (``gamma`` to ``(1, 1, D)``)."""
        given = shape if given is None else given
        if self.row and isinstance(g, np.ndarray) and g.shape == (1, shape[0]) == (
                1, *given[:1]) and shape == given == (shape[0], 1):
            return self._row(g, shape, name)  # a column's gradient as a row
        if not isinstance(g, np.ndarray) or g.shape == given or g.size != int(
                np.prod(shape)) or g.size != int(np.prod(given)) or not (
                g.shape == shape or same_but_unit(g.shape, shape)):
            return g
        moved = f" (the forward reshapes {name} to {shape})" if shape != given else ""
        self.note(unit_note(name, g.shape, given).replace(f"has {given}:", f"has {given}{moved}:"))
        return g.reshape(given)

    def _beside_stored(self, ret: Any, fresh: Any, xs: list[Any]) -> Any:
        """A flat ``(dX, dW, db)`` of a one-input layer whose other items are the very
        arrays it stored (``self.W['grad']``), or placeholders (``dX, 0, 0``, ``dX, None,
        None``, ``dX, np.array([]), np.array([])``): ``dX``, the one item of the input's
        shape (the stored gradients are read where they are stored)."""
        if self.n_inputs > 1:
            return self._inputs_then_stored(ret, fresh, xs)
        if isinstance(ret, np.ndarray) and any(ret is p.read_grad(fresh) for p in self.params
                                               if p.value not in self.stepped):  # not .grad
            if np.shape(ret) == np.shape(xs[0]):  # a middle layer forgetting dx, or a first
                raise ProtocolError("bad-protocol", (  # layer's dw: not told apart
                    "backward returned the very array it stored as a parameter's gradient, "
                    "of the input's shape: the input's gradient forgotten, or a first "
                    "layer's backward returning its weight's? Return dx (None for a first "
                    "layer)"))
            self.note("backward returned the very array it stored as a parameter's gradient "
                      "and no input gradient: x0 held constant (a first layer's backward)")
            return None
        if not isinstance(ret, tuple) or len(ret) < 2 or not isinstance(xs[0], np.ndarray):
            return ret
        fit = [r for r in ret if isinstance(r, np.ndarray) and r.shape == xs[0].shape]
        held = {id(g) for p in self.params if isinstance(g := p.read_grad(fresh), np.ndarray)}
        held = held or {id(v) for p, v in walk(fresh) if p not in {
            q.value for q in self.params}}  # a gradient location, never a weight itself
        scalars = bool(float_scalars(fresh))  # a 0 beside a float scalar (a PReLU's alpha)

        def placeholder(r: Any) -> bool:  # may be its forgotten gradient
            return r is None or (type(r) in (int, float) and r == 0 and not scalars) or (
                isinstance(r, np.ndarray) and r.size == 0)  # np.array([]): nothing held

        if len(fit) == 1 and all(r is fit[0] or id(r) in held for r in ret):
            self.note("backward returned the input gradient beside the gradients it stored "
                      "on the layer: the one of the input's shape is the input's")
            return fit[0]
        if len(fit) == 1 and ret[0] is fit[0] and all(
                placeholder(r) or id(r) in held for r in ret[1:]):
            self.note("backward returned the input gradient beside placeholders (None or 0) "
                      "and gradients it stored on the layer: the first is the input's")
            return fit[0]
        return ret

    def _inputs_then_stored(self, ret: Any, fresh: Any, xs: list[Any]) -> Any:
        """``(dq, dk, dv, {"Wq": (dW, db), ...})``: one gradient per input, of its shape and
        in order, then containers of what the backward stored on the layer (the very
        arrays, or equal ones): the inputs' gradients (the stored ones are read where they
        are stored)."""
        n = self.n_inputs
        if isinstance(ret, tuple) and len(ret) > n and isinstance(ret[0], np.ndarray) and all(
                r is None or (isinstance(r, np.ndarray) and r.shape == np.shape(x))
                for r, x in zip(ret[:n], xs, strict=False)) and all(
                r is None for r in ret[n:]):  # a 0 may be a scalar's forgotten gradient
            self.note(f"backward returned {len(ret)} items for {n} inputs, the last "
                      f"{len(ret) - n} placeholders (None): the first {n} are the "
                      "inputs' gradients")  # (dx, None, None) beside forward(x, training)
            return ret[:n]
        if not isinstance(ret, tuple) or len(ret) <= n or not all(
                isinstance(r, np.ndarray) and isinstance(x, np.ndarray) and r.shape == x.shape
                for r, x in zip(ret[:n], xs, strict=False)) or not all(
                isinstance(r, (tuple, list, dict)) for r in ret[n:]):
            return ret
        stored = [p.read_grad(fresh) for p in self.params]
        inner = [v for r in ret[n:] for v in leaves(r)]
        at = [next((j for j, h in enumerate(stored) if isinstance(h, np.ndarray) and (
            v is h or (isinstance(v, np.ndarray) and v.shape == h.shape and np.array_equal(
                v, h)))), None) for v in inner]  # each the stored gradient of a parameter,
        found = [j for j in at if j is not None]
        if not inner or len(found) != len(at) or found != sorted(set(found)):  # in order
            return ret
        self.note(f"backward returned the {n} input gradients, then containers of the "
                  "gradients it stored on the layer: those are read where they are stored")
        return ret[:n]

    def _beside_state(self, rest: list[Any], xs: list[Any]) -> Any:
        """``(dX, [dW, db], state)`` of a one-input layer: the one array of the input's
        shape is its gradient when the rest are containers (state the backward hands
        back: a recurrent layer's ``bwd_state``), which are not checked."""
        arrays = [r for r in rest if isinstance(r, np.ndarray)]
        if self.n_inputs != 1 or len(arrays) != 1 or arrays[0].shape != np.shape(xs[0]) or \
                not all(r is arrays[0] or isinstance(r, (tuple, list, dict)) for r in rest):
            return tuple(rest)
        self.note("backward returned containers beside the gradients (state it hands "
                  "back): not checked")
        return arrays[0]

    def _row(self, g: Any, shape: tuple[int, ...], name: str) -> Any:
        """For a backward given a 1-d output's gradient as one row: an input's gradient
        as one row too (``(1, d)`` for ``(d,)``), reshaped, with a note; any other shape
        stays a shape mismatch."""
        column = len(shape) == 2 and shape[1] == 1 and g.shape == (1, shape[0]) if \
            isinstance(g, np.ndarray) else False  # (1, n) for a column (n, 1)
        if not isinstance(g, np.ndarray) or g.shape != (1, *shape) and not column:
            return g
        self.note(f"the gradient of {name} has shape {g.shape}, {name} has {shape}: compared "
                  "after reshaping (" + ("a row for a column" if column else
                                         "extra size-1 axes only") + ")")
        return g.reshape(shape)

    def _vector(self, g: Any, xs: list[Any], k: int) -> Any:
        """An input's gradient of a vector given as a vector of another orientation (a
        row ``(1, d)`` for a column ``(d, 1)``, or the reverse), reshaped, with a note,
        when the forward gives the same output for the input so laid out (it reshapes its
        input itself: the row is as good a gradient); anything else as it is."""
        shape = xs[k].shape

        def axes(s: tuple[int, ...]) -> list[int]:
            return [d for d in s if d != 1]
        if not isinstance(g, np.ndarray) or g.shape == shape or len(shape) != 2 or g.ndim != 2 \
                or axes(g.shape) != axes(shape) or len(axes(shape)) != 1 or \
                not self._either_way(xs, k, g.shape):
            return g
        self.note(f"the gradient of x{k} has shape {g.shape}, x{k} has {shape}: the same "
                  "vector, and the forward gives the same output for x{k} so laid out: "
                  "compared after reshaping")
        return g.reshape(shape)

    def _either_way(self, xs: list[Any], k: int, other: tuple[int, ...]) -> bool:
        """Whether the forward's output is the same for input ``k`` laid out as ``other``."""
        def out(args: list[Any]) -> list[np.ndarray]:
            if self.draws is not None:
                self.draws.reset()
            layer = clone(self.layer)
            got = call_user(getattr(layer, self.forward), *args, what="the forward")
            return [np.asarray(v) for v in leaves(read_output(layer, got, self.out_path))]
        try:
            a = out(clone(xs))
            b = out([np.asarray(x).reshape(other) if j == k else x for j, x in enumerate(
                clone(xs))])
        except Exception:  # noqa: BLE001 - it does not take the other layout
            return False
        return len(a) == len(b) and all(u.shape == v.shape and np.allclose(u, v, rtol=1e-12,
                                                                            atol=0)
                                        for u, v in zip(a, b, strict=True))

    def _input_grads(self, dx: Any, scalar: bool, xs: list[Any] | None = None) -> list[Any]:
        n = self.n_inputs
        if dx is None:
            return [None] * n
        if n == 1:  # one argument (perhaps a list of arrays): dx is its gradient
            seq = self.shapes and self.shapes[0] == "sequence"
            one = isinstance(dx, (tuple, list)) and len(dx) == 1 and not seq
            return [dx[0] if one else dx]
        if isinstance(dx, (tuple, list)):
            k = self.wanted[0] if len(self.wanted) == 1 else -1
            if k >= 0 and self.shapes[k] == "sequence" and xs is not None and (
                    spread := _of_the_floats(dx, xs[k])) is not None and any(
                        self.shapes[j] is None for j in range(n) if j != k):
                return [spread if j == k else None for j in range(n)]  # ([x, labels]: [dx])
            if k >= 0 and self.shapes[k] == "sequence" and all(isinstance(
                    g, np.ndarray) for g in dx) and (len(dx) != n or any(  # (dx,) for (x,):
                        self.shapes[j] is None for j in range(n) if j != k)):  # the sequence's
                return [dx if j == k else None for j in range(n)]  # (a flag has none)
            if len(dx) == n:
                return self._in_order(list(dx))
            if len(dx) == len(self.wanted):
                out: list[Any] = [None] * n
                for k, g in zip(self.wanted, dx, strict=True):
                    out[k] = g
                return out
            raise ProtocolError("shape-mismatch", f"backward returned {len(dx)} gradients for "
                                f"{n} inputs ({len(self.wanted)} in wrt); return one per "
                                "forward argument, or one per wrt input")
        return self._single(dx, scalar)

    def _in_order(self, dx: list[Any]) -> list[Any]:
        """One gradient per input, in the forward's order; with the inputs' shapes in
        another order (``(dh, dx)`` for ``forward(x, h)``, or each computed with the
        other's weights: shapes cannot tell), a ``bad-protocol``."""
        if not all(isinstance(g, np.ndarray) for g in dx) or len(self.shapes) != len(dx) or \
                not all(isinstance(s, tuple) for s in self.shapes):
            return dx
        if named := named_order(getattr(self.layer, self.backward),
                                getattr(self.layer, self.forward), dx, self.shapes):
            self.note(named[1])  # (return d_prev_hidden, d_input, d_prev_cell)
            return [dx[j] for j in named[0]]
        got: list[tuple[int, ...]] = [g.shape for g in dx]
        want: list[tuple[int, ...]] = list(self.shapes)
        if got == want or sorted(got) != sorted(want):
            return dx
        raise ProtocolError("bad-protocol", (  # a reversed return, or two gradients
            "backward returned the input gradients with the shapes of the inputs in "
            f"another order (shapes {got} for inputs of shapes {want}): returned in "
            "another order, or computed with each other's weights (dx from Wh)? Shapes "
            "cannot tell; return them in the forward's order"))

    def _single(self, dx: Any, scalar: bool) -> list[Any]:
        """One array for several inputs: the first's gradient; for a loss (a scalar output)
        whose first input holds labels (0/1: one-hot rows, binary targets) and exactly one
        other input of the array's shape does not, that one's (``fn(y_true, y_pred)``)."""
        out: list[Any] = [None] * self.n_inputs
        if len(self.wanted) == 1:
            out[self.wanted[0]] = dx
            return out
        if len(self.pick) == 2:  # x_a - x_b: a sign flip of x_a's is x_b's right one
            a, b = self.pick
            self.note(f"the loss depends on x{a} - x{b} only and neither holds labels (whole "
                      f"numbers): the one array backward returns is read as x{a}'s; minus "
                      f"it is x{b}'s, so if x{b} is the prediction, name it: wrt=['x{b}']")
        k = self.wanted[0] if self.wanted else 0
        soft = [j for j in self.wanted if j and self.shapes[j] == np.shape(dx)
                and not self.labels[j]]
        if scalar and k == 0 and self.labels[0] and len(soft) == 1:
            k = soft[0]
            self.note(f"backward returned one array for {self.n_inputs} inputs: read as the "
                      f"gradient of x{k}, since the output is a loss, x0 holds labels (0 and "
                      f"1 only) and x{k} does not")
        elif len(self.pick) == 1 and self.pick[0] in self.wanted:
            k = self.pick[0]
            self.note(f"backward returned one array for {self.n_inputs} inputs: read as the "
                      f"gradient of x{k}, the one input of its shape not holding labels "
                      "(integers, or -1, 0 and 1 only)")
        elif (kept := self.stored_inputs) and set(self.wanted) - {k} <= set(kept):
            self.note(f"backward returned one array for {self.n_inputs} inputs: read as the "
                      f"gradient of x{k}; " + ", ".join(f"x{j}'s is what it stored in "
                                                        f"{kept[j]}" for j in sorted(kept)))
        else:
            self.note(f"backward returned one array for {self.n_inputs} inputs: read as the "
                      f"gradient of x{k} (name the input it belongs to with wrt=)")
        out[k] = dx
        return out


def _stored_and_tied(dxs: list[Any], fresh: Any, stored: dict[int, str],
                     tied: dict[int, int]) -> None:
    """Into ``dxs``, the input gradients the backward stored (input -> path on ``fresh``),
    and those of the places given again added to their first's."""
    for k, path in stored.items():
        dxs[k] = np.array(get_path(fresh, path), copy=True)
    for k, j in tied.items():
        if dxs[k] is not None:
            dxs[j] = dxs[k] if dxs[j] is None else dxs[j] + dxs[k]
        dxs[k] = None


def _as_float(g: Any) -> np.ndarray | None:
    if g is None:
        return None
    return np.array(g, dtype=np.float64, copy=True)


def call_layer(layer: Any, method: str, args: list[Any]) -> Any:
    return call_user(getattr(layer, method), *args, what=f"{type(layer).__name__}.{method}")


def times(dy: Any, scale: float) -> Any:
    if isinstance(dy, (tuple, list)):
        return type(dy)(times(d, scale) for d in dy)
    if isinstance(dy, dict):
        return {k: times(d, scale) for k, d in dy.items()}
    return None if dy is None else dy * scale


def uneven(g: Any) -> Any:
    """An output gradient of ones made uneven, 0.5 to 1.5 (a batch-norm's scale gets a
    zero gradient from a uniform one, a centred delta a zero result)."""
    return map_arrays(g, lambda a: a * np.linspace(0.5, 1.5, a.size).reshape(a.shape)
                      if a.size > 1 else a)


def ones_like(out: Any) -> Any:
    if isinstance(out, (tuple, list)):
        return type(out)(ones_like(o) for o in out)
    if isinstance(out, dict):
        return {k: ones_like(v) for k, v in out.items()}
    try:
        return np.ones_like(np.asarray(out, dtype=float))
    except (TypeError, ValueError):  # a string or an object among the outputs: no gradient
        return None


def _item(ret: Any, k: int | None) -> Any:
    """Item ``k`` of a tuple returned (``(da, dz)``: the derivative beside the gradient)."""
    return ret[k] if k is not None and isinstance(ret, tuple) and len(ret) > k else ret
