"""Checks of code as people write it: layer objects, and losses that return ``(loss, dx)``.

A layer object has ``out = layer.forward(*inputs)`` and ``dx = layer.backward(dout)``
(method names settable) and keeps its parameters and their gradients on itself, or on
sub-layers it holds. :mod:`gradcheck._discovery` finds them, by convention or by the
names the user gives; this module turns the object into the functional protocol of
:func:`gradcheck.check_vjp`: every evaluation runs on a fresh deep copy of the layer, so
caches, accumulated gradients and counters never leak from one evaluation into another,
and gradients that a backward accumulates with ``+=`` are read as the change it made.

Calling conventions read from the code (each one guessed is stated in the result's notes):

- ``backward(dout)``; ``backward()`` for a scalar output (a loss), the result scaled by
  the cotangent; ``backward(dout=1.0)`` receives a non-unit cotangent, so a loss that
  ignores it is caught; ``backward(dh, dc)`` receives a tuple output's cotangents as
  separate arguments.
- The returned input gradient: one per forward argument; one array for a one-argument
  forward (which may take a list of arrays, ``Add([a, b])``); otherwise one array is the
  gradient of the only ``wrt`` input, or of the first input of its shape.
- A layer that creates its weights on the first forward is initialised once on a copy,
  and every evaluation starts from that copy.

A float scalar (``alpha``) with a gradient (``dalpha``) is a parameter, written back as
its own type; float scalars with none (``eps``) are held constant and named in the notes.
A parameter reached along several paths (a composite's ``params`` list) must have the
same gradient at each of its gradient locations, else the status is ``mismatch`` naming
the stale one. A path given in ``params=``/``grads=`` that leads to no array is a
:class:`LayerConventionError`.

Every float array the layer holds (before its first forward, where caches do not exist
yet; for lazily built weights, arrays that a second forward leaves alone) must be matched
to a gradient; otherwise :class:`LayerConventionError` lists them and how to name them.
"""

from __future__ import annotations

import copy
import inspect
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ._conventions import differentiable
from ._core import raise_unless_passed, run_protocol_check
from ._discovery import (
    GRAD_NAMES,
    PAIRS,
    LayerConventionError,
    Param,
    float_arrays,
    float_scalars,
    get_path,
    is_float_array,
    parameters,
    try_path,
    unmatched,
    walk,
)
from ._handed import Handed, attached, find_handed, listen
from ._observe import float_state, method_pair, positional_names, same_but_unit, stored
from ._options import Options, validate_options
from ._protocol import ProtocolError, UserCodeError, call_user
from ._reading import (
    GlobalDraws,
    call_backward,
    call_style,
    describe,
    linear,
    match_stored,
    output_path,
    probe,
    split_return,
)
from ._recording import record
from ._result import CheckResult

__all__ = ["LayerConventionError", "assert_layer", "assert_loss", "check_layer", "check_loss"]

_COTANGENT_NAME = re.compile(r"^(d(out|y|z|l|ldy|values|_out)?|g|grads?(_?out(put)?)?|delta|"
                             r"upstream(_grad)?|accum_grad|error)$", re.I)


# -- explicit names --------------------------------------------------------------------------
def _explicit(params: Any, grads: Any) -> list[Param]:
    if not isinstance(params, dict):
        raise TypeError("params= must be a dict of name -> path or callable")
    if not params:
        return []
    if grads is None:
        grads = {n: _default_grad_path(p) for n, p in params.items()}
    if not isinstance(grads, dict) or set(grads) != set(params):
        raise TypeError("grads= must be a dict with the same names as params=, got "
                        f"{sorted(grads) if isinstance(grads, dict) else type(grads).__name__}")
    for n, p in {**params, **grads}.items():
        if not (callable(p) or isinstance(p, str)):
            raise TypeError(f"params/grads[{n!r}] must be a path string or a callable")
    return [Param(str(n), params[n], grads[n]) for n in params]


def _default_grad_path(path: Any) -> str:
    if isinstance(path, str) and re.fullmatch(r"[A-Za-z_]\w*", path):
        return f"d{path}"
    raise TypeError("grads= is needed when params= paths are not plain attribute names")


def _convention_error(layer: Any, missing: list[str]) -> LayerConventionError:
    looked = ", ".join(p.format("W") for p in GRAD_NAMES)
    return LayerConventionError(
        f"{type(layer).__name__} holds arrays with no gradient found for them: "
        f"{', '.join(missing)}. Looked (in the layer and every sub-layer it holds) for "
        + ", ".join(f"{a}/{b}" for a, b in PAIRS)
        + " side by side (dicts with the same keys, or lists [W, b] / [dW, db]), parameter "
        f"objects with .data (or .value) and .grad, and for an array W the gradients "
        f"{looked}. A buffer that is no parameter (a running mean, a mask) needs the "
        "parameters named: check_layer(layer, x, params={'W': 'W'}, grads={'W': 'dW'}) "
        "(paths like \"params['W']\", \"blocks[1].attn.W_q\" or callables layer -> array); "
        "params={} checks the input gradient only."
    )


# -- how backward is called ------------------------------------------------------------------
def _positional(method: Any) -> tuple[list[inspect.Parameter], bool] | None:
    try:
        sig = inspect.signature(method)
    except (TypeError, ValueError):
        return None
    ps = list(sig.parameters.values())
    pos = [p for p in ps if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    return pos, any(p.kind is p.VAR_POSITIONAL for p in ps)


def _call_style(method: Any, dy: Any, what: str) -> tuple[str, str]:
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
    if req or varargs:
        return "one", ""
    scalar = not isinstance(dy, (tuple, list, dict)) and np.size(dy) == 1
    if pos and not scalar:
        return "one", ""
    first = pos[0] if pos else None
    if first is not None and (first.default is None or _COTANGENT_NAME.match(first.name) or (
            type(first.default) in (int, float) and first.default == 1)):
        return "one", (f"{what}'s optional argument {first.name!r} received the output "
                       "gradient (a random, non-unit one)")
    if not scalar:
        raise ProtocolError("bad-protocol", f"{what}() takes no output gradient, so the "
                            f"output must be a scalar; it has shape {np.shape(dy)}")
    return "none", ""


# -- calling the layer -------------------------------------------------------------------------
@dataclass
class _Protocol:
    layer: Any  # the state every evaluation starts from (never the user's object)
    forward: str
    backward: str
    n_inputs: int
    params: list[Param]
    wanted: list[int]  # the inputs in wrt (without wrt: those holding a float array)
    notes: list[str] = field(default_factory=list)
    shapes: list[Any] = field(default_factory=list)  # of the inputs ("sequence", None)
    style: str = ""
    order: list[int | None] = field(default_factory=list)  # style "inputs": the arguments
    out_path: str | None = None  # where a forward returning None stores its output
    draws: GlobalDraws | None = None
    returned: tuple[int, dict[str, Any]] | None = None  # (dX, [dW, db]): index, name -> key
    stored_inputs: dict[int, str] = field(default_factory=dict)  # input -> stored gradient
    handed: dict[str, Handed] = field(default_factory=dict)  # param -> handed gradient
    reduce: bool = False  # a loss per sample, its backward the gradient of their mean
    wrt_given: bool = False

    def note(self, text: str) -> None:
        if text and text not in self.notes:
            self.notes.append(text)

    def run_forward(self, xs: list[Any], ps: list[np.ndarray]) -> tuple[Any, Any]:
        layer = copy.deepcopy(self.layer)
        for p, value in zip(self.params, ps, strict=True):
            p.write(layer, value)
        if self.draws is not None:
            self.draws.reset()
        out = getattr(layer, self.forward)(*xs)
        if out is None and self.out_path is not None:
            out = np.array(get_path(layer, self.out_path), copy=True)
        if self.reduce:
            out = np.mean(np.asarray(out))
        return out, (layer, xs)

    def run_backward(self, dy: Any, cache: Any) -> list[Any]:
        fresh, xs = copy.deepcopy(cache)  # each backward on its own copy: += stays local
        method = getattr(fresh, self.backward)
        if not self.style:
            self.style, note = _call_style(method, dy, f"{type(self.layer).__name__}."
                                           f"{self.backward}")
            self.note(note)
        before = [_as_float(p.read_grad(fresh)) for p in self.params]
        elsewhere = {a: _as_float(try_path(fresh, a)) for p in self.params for a in p.also}
        owners: dict[str, list[str]] = {}
        for h in self.handed.values():
            owners.setdefault(h.owner, []).append(h.method)
        log = listen(fresh, {k: sorted(set(v)) for k, v in owners.items()})
        ret = call_backward(method, self.style, self.order, dy, xs)
        dx, pgrads = ret, None
        if self.returned is not None:
            j, _ = self.returned
            pgrads = ret[j]
            rest = [r for i, r in enumerate(ret) if i != j]
            dx = rest[0] if len(rest) == 1 else tuple(rest) if rest else None
        dxs = self._input_grads(dx)
        for k, path in self.stored_inputs.items():
            dxs[k] = np.array(get_path(fresh, path), copy=True)
        dxs = [self._unit(d, xs[k].shape, f"x{k}") if isinstance(xs[k], np.ndarray) else d
               for k, d in enumerate(dxs)]
        scale = np.asarray(dy) if self.style in ("none", "given") else None
        grads = []
        keys = self.returned[1] if self.returned is not None else {}
        for p, b in zip(self.params, before, strict=True):
            if p.name in keys and pgrads is not None:
                g = np.array(pgrads[keys[p.name]], copy=True)
            elif p.name in self.handed:
                g = self.handed[p.name].read(log)
                g = g if scale is None or g is None else g * scale
            else:
                g = _change(p.read_grad(fresh), b, scale)
                _same_elsewhere(p, fresh, g, elsewhere)
            grads.append(self._unit(g, np.shape(p.read(fresh)), p.name))
        if scale is not None:
            dxs = [None if d is None else np.asarray(d) * scale for d in dxs]
        return dxs + grads

    def _unit(self, g: Any, shape: tuple[int, ...], name: str) -> Any:
        """A gradient whose shape differs from its array's by size-1 axes only, reshaped
        (it broadcasts in an update), with a note."""
        if not isinstance(g, np.ndarray) or g.shape == shape or g.size != int(
                np.prod(shape)) or not same_but_unit(g.shape, shape):
            return g
        self.note(f"the gradient of {name} has shape {g.shape}, {name} has {shape}: "
                  "compared after reshaping (they differ by size-1 axes only)")
        return g.reshape(shape)

    def _input_grads(self, dx: Any) -> list[Any]:
        n = self.n_inputs
        if dx is None:
            return [None] * n
        if n == 1:  # one argument (perhaps a list of arrays): dx is its gradient
            seq = self.shapes and self.shapes[0] == "sequence"
            one = isinstance(dx, (tuple, list)) and len(dx) == 1 and not seq
            return [dx[0] if one else dx]
        if isinstance(dx, (tuple, list)):
            if len(dx) == n:
                return list(dx)
            if len(dx) == len(self.wanted):
                out: list[Any] = [None] * n
                for k, g in zip(self.wanted, dx, strict=True):
                    out[k] = g
                return out
            raise ProtocolError("shape-mismatch", f"backward returned {len(dx)} gradients for "
                                f"{n} inputs ({len(self.wanted)} in wrt); return one per "
                                "forward argument, or one per wrt input")
        return self._single(dx)

    def _single(self, dx: Any) -> list[Any]:
        out: list[Any] = [None] * self.n_inputs
        if len(self.wanted) == 1:
            out[self.wanted[0]] = dx
            return out
        k = next((k for k in self.wanted if np.shape(self.shapes[k]) == np.shape(dx)),
                 self.wanted[0] if self.wanted else 0)
        self.note(f"backward returned one array for {self.n_inputs} inputs: read as the "
                  f"gradient of x{k} (name the input it belongs to with wrt=)")
        out[k] = dx
        return out


def _same_elsewhere(p: Param, fresh: Any, grad: Any, befores: dict[str, Any]) -> None:
    """Every other place the gradient of ``p`` is read from (a composite's ``grads``
    list) must hold what its own place holds: a backward that rebinds
    ``self.grads[0] = ...`` leaves the composite's list (what its optimizer reads) stale."""
    for path in p.also:
        other = _change(try_path(fresh, path), befores[path], None)
        if grad is None or other is None or np.shape(other) != np.shape(grad):
            continue
        g, o = np.asarray(grad, dtype=np.float64), np.asarray(other, dtype=np.float64)
        if np.allclose(o, g, rtol=1e-6, atol=1e-9 * float(np.max(np.abs(g), initial=1e-300))):
            continue
        stale = " (unchanged by the backward: stale)" if not np.any(o) else ""
        raise ProtocolError(
            "mismatch", f"gradient mismatch at {path}{stale}: the parameter {p.name} is also "
            f"reached there, but its gradient at {path} differs from the one at {p.grad} "
            f"(max |difference| {float(np.max(np.abs(o - g))):.3e}); a backward that rebinds "
            "a gradient (self.grads[0] = ...) leaves the other references to the old array "
            "stale: write in place (self.grads[0][...] = ...)")


def _change(after: Any, before: np.ndarray | None, scale: Any) -> Any:
    """The gradient a backward left: the change it made, in the gradient's own dtype."""
    if after is None:
        return None
    raw = np.asarray(after)
    g = np.asarray(after, dtype=np.float64) - before if before is not None else raw.copy()
    if scale is not None:
        g = g * scale
    return g.astype(raw.dtype, copy=False) if raw.dtype.kind == "f" else g


def _as_float(g: Any) -> np.ndarray | None:
    if g is None:
        return None
    return np.array(g, dtype=np.float64, copy=True)


def _call(layer: Any, method: str, args: list[Any]) -> Any:
    return call_user(getattr(layer, method), *args, what=f"{type(layer).__name__}.{method}")


def _discover(layer: Any, inputs: tuple[Any, ...], forward: str | None,
              backward: str | None, params: Any, grads: Any, wanted: list[int],
              output: str | None = None, seed: int = 0,
              draws: GlobalDraws | None = None, wrt_given: bool = False) -> _Protocol:
    """Read the layer by running it once (:mod:`gradcheck._reading`): its methods, how
    its backward is called, where its output and gradients are, which arrays are state."""
    forward, backward, found_note = method_pair(
        layer, None if forward == "forward" else forward,
        None if backward == "backward" else backward)
    shapes = [np.shape(x) if isinstance(x, np.ndarray) else
              "sequence" if isinstance(x, (list, tuple)) else None for x in inputs]
    named = _explicit(params, grads) if params is not None else None
    draws = draws or GlobalDraws()
    proto = _Protocol(layer, forward, backward, len(inputs), [], wanted, shapes=shapes,
                      draws=draws, wrt_given=wrt_given)
    proto.note(found_note)
    rng = np.random.default_rng(seed)
    xs = list(inputs)
    proto.out_path = output
    what = f"{type(layer).__name__}.{forward}"
    if output is None and _call(copy.deepcopy(layer), forward, copy.deepcopy(xs)) is None:
        proto.out_path, text = output_path(layer, forward, xs, draws, rng)
        proto.note(text)
    first = probe_style(proto, xs, what)
    if named == []:
        _inputs_read(proto, first, {})
        return proto
    if named is not None:
        _resolve_named(layer, first.init, first.after, named, params, grads)
        proto.params = named
        _inputs_read(proto, first, {})
        return proto
    _read_parameters(proto, first, xs, rng)
    return proto


def probe_style(proto: _Protocol, xs: list[Any], what: str) -> Any:
    """The backward's calling style, then one forward and backward observed."""
    layer = proto.layer
    init = copy.deepcopy(layer)
    proto.draws.reset() if proto.draws else None
    out = _call(init, proto.forward, copy.deepcopy(xs))
    if out is None and proto.out_path is not None:
        out = get_path(init, proto.out_path)
    method = getattr(init, proto.backward)
    base, note = _call_style(method, _ones_like(out), f"{type(layer).__name__}."
                             f"{proto.backward}")
    proto.style, proto.order, in_note = call_style(method, getattr(init, proto.forward),
                                                   len(xs), base)
    proto.note(in_note or note)
    assert proto.draws is not None
    draws = proto.draws

    def run(scale: float) -> Any:
        return probe(layer, proto.forward, proto.backward, xs, draws,
                     (proto.style, proto.order), proto.out_path,
                     lambda o: _times(_ones_like(o), scale))

    if proto.style != "inputs" or proto.order.index(None) >= len(xs):
        return _given(proto, run(1.0), out)
    try:
        first = run(1.0)
        if linear(first, run(2.0)):
            return first
        why = "its result is not linear in that argument"
    except UserCodeError as exc:
        first, why = exc, f"it raised {exc.type} when given one"
    k = proto.order.index(None)
    order, proto.order = proto.order, [k if o is None else o for o in proto.order]
    proto.style = "given"
    try:
        found = run(1.0)
    except UserCodeError:
        proto.style, proto.order = "inputs", order
        if isinstance(first, UserCodeError):
            raise first from None
        return first
    kept = stored(float_state(layer), found.init, tuple(found.xs))
    rivals = {p: v for p, v in kept.items() if np.shape(v) == np.shape(xs[k])}
    if rivals:
        raise ProtocolError("bad-protocol", (
            f"{type(layer).__name__}.{proto.backward}: its argument {k} is no output "
            f"gradient ({why}); it may take the forward's input {k} or what the forward "
            f"stored of that shape ({describe(rivals)}): cannot tell which. Check the loss "
            "as a function: check_loss(lambda x, y: (loss of x, gradient of x), x, y)"))
    proto.notes = [t for t in proto.notes if t != in_note]
    proto.note(f"backward's argument {k} takes the forward's input {k}, not an output "
               f"gradient ({why}): read as a loss's gradient")
    if proto.wanted != [k] and proto.wrt_given is False:
        targets = [f"x{j}" for j in proto.wanted if j != k]
        proto.wanted = [k] if k in proto.wanted else []
        if targets:
            proto.note(f"{', '.join(targets)}: the loss's target(s), constants (name them in "
                       "wrt= to differentiate them)")
    return _given(proto, found, out)


def _given(proto: _Protocol, first: Any, out: Any) -> Any:
    """A loss's backward (no output gradient) of a forward returning one loss per sample
    is the gradient of their mean: the check's output is that mean."""
    if proto.style == "given" and np.size(out) > 1:
        proto.reduce = True
        proto.note(f"the forward returns {np.size(out)} values (a loss per sample) and the "
                   "backward takes no output gradient: checked as the gradient of their mean")
    return first


def _times(dy: Any, scale: float) -> Any:
    if isinstance(dy, (tuple, list)):
        return type(dy)(_times(d, scale) for d in dy)
    if isinstance(dy, dict):
        return {k: _times(d, scale) for k, d in dy.items()}
    return dy * scale


def _read_parameters(proto: _Protocol, first: Any, xs: list[Any],
                     rng: np.random.Generator) -> None:
    """The parameters by the named conventions, then by what the backward returned and
    stored; arrays the output does not depend on are state."""
    layer = proto.layer
    found = [p for p in parameters(layer, first.after) if not _keeps_input(first, p)]
    missing = [p for p in unmatched(layer, found) if not _keeps_input(first, p)]
    base = layer
    held = {p for p, _ in float_arrays(layer).values()}
    persistent = _persistent(first.init, tuple(xs), proto.forward, held)
    if persistent:  # arrays built by the first forward and kept: weights or buffers
        lazy_found = parameters(first.init, first.after)
        lazy = [p for p in lazy_found if isinstance(p.value, str)
                and not is_float_array(try_path(layer, p.value))]
        if lazy:
            base, found = first.init, lazy_found
            proto.note(f"{type(layer).__name__} creates {', '.join(p.name for p in lazy)} "
                       "on its first forward: initialised once on a copy, every evaluation "
                       "starts from it")
        missing = [p for p in unmatched(first.init, found) if p in held or p in persistent]
    proto.layer = base
    used = {g for p in found for g in (p.grad, *p.also, p.value) if isinstance(g, str)}
    cands = {k: v for k, v in first.stored.items() if k not in used}
    if any(not is_float_array(try_path(base, p)) for p in missing):
        base = proto.layer = first.init  # built by the first forward: start from it
        proto.note(f"{type(layer).__name__} creates arrays on its first forward: "
                   "initialised once on a copy, every evaluation starts from it")
    arrays = {p: get_path(base, p) for p in missing}
    observed = _observed(proto, first, arrays, cands)
    found += observed
    left = [p for p in missing if p not in {q.value for q in observed}]
    state = [p for p in left if not _moves_output(proto, xs, p, rng)]
    if state:
        proto.note(f"state: the output does not depend on {', '.join(state)} (not checked)")
    left = [p for p in left if p not in state]
    if left:
        raise _observed_error(layer, left, first, cands)
    proto.params = found
    proto.note(_constant_scalars(base, found))


def _keeps_input(first: Any, p: Param | str) -> bool:
    """Whether the forward rebinds the array at ``p`` to one of its inputs: a cache left
    by an earlier call (``self.inputs``), not a parameter."""
    path = p.value if isinstance(p, Param) else p
    if not isinstance(path, str):
        return False
    now = try_path(first.init, path)
    return any(now is x for x in first.xs)


def _observed(proto: _Protocol, first: Any, arrays: dict[str, np.ndarray],
              cands: dict[str, np.ndarray]) -> list[Param]:
    """Parameters whose gradients the backward returned beside the input gradients
    (``dX, [dW, db]``) or stored (``self.dweights``); the inputs' stored gradients."""
    out: list[Param] = []
    split = split_return(first.ret, proto.layer)
    if split is not None:
        j, keys = split
        mine = {p: k for p, k in keys.items() if p in arrays}
        proto.returned = (j, mine)
        out += [Param(p, p, _no_grad) for p in mine]
        proto.note(f"backward returns the parameters' gradients as item {j} of what it "
                   f"returns ({', '.join(keys) or 'none'})")
    rest = {p: a for p, a in arrays.items() if p not in {q.value for q in out}}
    got_p, got_x, notes = match_stored(rest, _inputs_wanting(proto, first), cands)
    out += [Param(p, p, g) for p, g in got_p.items()]
    proto.stored_inputs = got_x
    for t in notes:
        proto.note(t)
    _inputs_read(proto, first, got_x)
    left = [p for p in rest if p not in got_p]
    on_array = attached(first.after, left, first.init)
    out += [Param(p, p, g) for p, g in on_array.items()]
    for p, g in on_array.items():
        proto.note(f"the gradient of {p} is what the backward attached to it: {g}")
    left = [p for p in left if p not in on_array]
    if left:
        handed = find_handed(*copy.deepcopy((first.init, first.xs)), left,
                             _backward_of(proto, first.out))
        for p, h in handed.items():
            out.append(Param(p, p, _no_grad))
            proto.handed[p] = h
            proto.note(f"the gradient of {p} is what the backward hands to {h.owner}."
                       f"{h.method} beside it (argument {h.arg}): an update it makes itself")
    return out


def _backward_of(proto: _Protocol, out: Any) -> Callable[[Any, list[Any]], Any]:
    def run(layer: Any, xs: list[Any]) -> Any:
        method = getattr(layer, proto.backward)
        return call_user(call_backward, method, proto.style, proto.order, _ones_like(out),
                         xs, what=f"{type(layer).__name__}.{proto.backward}")
    return run


def _no_grad(layer: Any) -> None:
    return None


def _inputs_wanting(proto: _Protocol, first: Any) -> dict[int, tuple[str, Any]]:
    """The differentiated inputs whose gradient the backward did not return."""
    ret = first.ret
    if proto.returned is not None or ret is not None:
        return {}
    names = positional_names(getattr(first.init, proto.forward)) or []
    return {k: (names[k] if k < len(names) else "", first.xs[k]) for k in proto.wanted}


def _inputs_read(proto: _Protocol, first: Any, got_x: dict[int, str]) -> None:
    """A backward that returned nothing must have stored every differentiated input's
    gradient where it can be found."""
    if first.ret is not None or proto.returned is not None:
        return
    lost = [k for k in proto.wanted if k not in got_x]
    if lost:
        raise ProtocolError("bad-protocol", (
            f"{type(proto.layer).__name__}.{proto.backward} returned None and stored no "
            f"gradient found for input(s) {', '.join(f'x{k}' for k in lost)} (it stored "
            f"{describe(first.stored) or 'nothing'}); return the input gradient, or name "
            "the inputs to check with wrt= (wrt=[] for the parameters only)"))


def _moves_output(proto: _Protocol, xs: list[Any], path: str,
                  rng: np.random.Generator) -> bool:
    """Whether perturbing the array at ``path`` changes the forward's output."""
    def output(shift: bool) -> np.ndarray:
        layer = copy.deepcopy(proto.layer)
        if shift:
            a = get_path(layer, path)
            a += (1e-3 * (np.abs(a) + 1) * rng.choice([-1.0, 1.0], a.shape)).astype(a.dtype)
        if proto.draws is not None:
            proto.draws.reset()
        out = _call(layer, proto.forward, copy.deepcopy(xs))
        if out is None and proto.out_path is not None:
            out = get_path(layer, proto.out_path)
        return np.concatenate([np.asarray(o, dtype=np.float64).ravel() for o in _leaves(out)])

    a, b = output(False), output(True)
    return a.shape != b.shape or not np.array_equal(a, b, equal_nan=True)


def _leaves(out: Any) -> list[Any]:
    if isinstance(out, (list, tuple)):
        return [v for o in out for v in _leaves(o)]
    if isinstance(out, dict):
        return [v for o in out.values() for v in _leaves(o)]
    return [out]


def _observed_error(layer: Any, left: list[str], first: Any,
                    cands: dict[str, np.ndarray]) -> LayerConventionError:
    arrays = describe({p: try_path(first.init, p) for p in left})
    ret = first.ret
    shown = ("None" if ret is None else type(ret).__name__ if not isinstance(
        ret, np.ndarray) else f"an array {ret.shape}")
    if isinstance(ret, (tuple, list)):
        shown += " of " + ", ".join(f"{type(r).__name__}" + (
            f" {r.shape}" if isinstance(r, np.ndarray) else "") for r in ret)
    return LayerConventionError(
        f"{type(layer).__name__}: the output depends on {arrays}, and no gradient was found "
        f"for {'it' if len(left) == 1 else 'them'}. Observed: the backward returned {shown}"
        f" and stored {describe(cands) or 'no other array'}. Name them: check_layer(layer, "
        f"x, params={{'{left[0]}': '{left[0]}'}}, grads={{'{left[0]}': '...'}}) (paths "
        "like \"params['W']\" or callables layer -> array); params={} checks the input "
        "gradients only.")


def _constant_scalars(layer: Any, found: list[Param]) -> str:
    """The note naming the float scalars held constant: those with no gradient found."""
    used = {q for p in found for q in (p.value, p.grad, *p.also) if isinstance(q, str)}
    held = [s for s in float_scalars(layer) if s not in used]
    if not held:
        return ""
    return (f"float scalars with no gradient found held constant (hyperparameters): "
            f"{', '.join(held)}; a scalar parameter needs its gradient beside it (dX, grad_X) "
            "or in params=/grads=")


def _resolve_named(layer: Any, init: Any, probe: Any, named: list[Param],
                   params: dict[str, Any], grads: Any) -> None:
    """Every path given in ``params=`` must lead to an array of the layer (before or
    after its first forward) and every path in ``grads=`` to one after a backward."""
    given = grads if isinstance(grads, dict) else {}
    for p in named:
        for arg, path, objs in (("params", p.value, (layer, init)), ("grads", p.grad, (probe,))):
            if not isinstance(path, str) or any(
                    isinstance(try_path(o, path), (np.ndarray, np.generic, float))
                    for o in objs):
                continue
            where = "after a forward and backward" if arg == "grads" else "in the layer"
            dflt = "" if arg == "params" or p.name in given else " (the default for " \
                f"params[{p.name!r}]; give grads= to name it)"
            held = sorted({q for q, _ in float_arrays(probe).values()})
            raise LayerConventionError(
                f"{arg}[{p.name!r}] = {path!r}{dflt}: no array at that path {where} of "
                f"{type(layer).__name__}; it holds the float arrays "
                f"{', '.join(held) if held else '(none)'}")


def _persistent(init: Any, inputs: tuple[Any, ...], forward: str, held: set[str]) -> set[str]:
    """Paths of arrays created by the first forward that a second forward leaves as they
    were (the same object, the same values): weights and buffers, not caches (a cache is
    rebuilt, or added to a list or dict that grows)."""
    again = copy.deepcopy(init)
    first = {p: (a, a.copy()) for p, a in float_arrays(again).values() if p not in held}
    if not first:
        return set()
    lists = {p: (v, len(v)) for p, v in walk(again) if isinstance(v, (list, dict))}
    _call(again, forward, copy.deepcopy(list(inputs)))
    grown = [p for p, (v, n) in lists.items() if len(v) != n]
    now = {p: a for p, a in float_arrays(again).values()}
    return {p for p, (a, values) in first.items()
            if now.get(p) is a and np.array_equal(a, values)
            and not any(p.startswith(g + "[") for g in grown)}


def _ones_like(out: Any) -> Any:
    if isinstance(out, (tuple, list)):
        return type(out)(_ones_like(o) for o in out)
    if isinstance(out, dict):
        return {k: _ones_like(v) for k, v in out.items()}
    return np.ones_like(np.asarray(out, dtype=float))


# -- entry points ----------------------------------------------------------------------------
def check_layer(
    layer: Any,
    *inputs: Any,
    forward: str | None = None,
    backward: str | None = None,
    params: dict[str, Any] | None = None,
    grads: dict[str, Any] | None = None,
    wrt: Any = None,
    output: str | None = None,
    **options: Any,
) -> CheckResult:
    """Check a layer object's backward: its input gradients and its parameter gradients.

    Parameters
    ----------
    layer : object
        ``out = layer.forward(*inputs)``, ``dx = layer.backward(dout)`` (or
        ``layer.backward()`` for a scalar output, as loss objects do; ``backward(dh,
        dc)`` for a tuple output). ``dx`` is one gradient per input, or one for the wrt
        inputs only. Never modified: every evaluation runs on a deep copy (of the layer
        after one forward, if that forward builds its weights).
    *inputs : array_like
        The arguments of ``forward`` (one may be a list of arrays). Integer ones (token
        ids) are not differentiated. A backward that returns one array for several
        inputs returns the gradient of the only ``wrt`` input, else (stated in the
        notes) of the first input of its shape.
    forward, backward : str, optional
        The method names. By default ``forward``/``backward``, else the one pair of
        methods whose names read as a forward and a backward (``forward_pass`` and
        ``backward_pass``, ``fprop``/``bprop``, ``__call__``/``backward``), stated in
        the notes. A backward taking the forward's inputs again and the output gradient
        (``backward(W, x, dz)``) is called so.
    params, grads : dict, optional
        name -> path (``"W"``, ``"params['W']"``, ``"blocks[1].attn.W_q"``) or callable
        ``layer -> array`` of each parameter and of its gradient. By default found in
        the layer and its sub-layers by the conventions of :mod:`gradcheck._discovery`,
        then by observation: the gradients the backward returns beside the input's
        (``dX, [dW, db]`` for ``self.params = [W, b]``) or stores (``self.dweights``);
        an array the output does not depend on is state, named in the notes.
        ``params={}`` checks the input gradients only. Float scalars: see the module.
    output : str, optional
        Where a forward that returns None stores its output (``"output"``); by default
        the one array it stores that depends on the inputs.
    wrt : int, str or sequence of them, optional
        Inputs (``"x0"`` or ``0``) and parameters (by name) to differentiate; the others
        are held constant, and named in the coverage.
    **options
        The option set of every check (:class:`gradcheck.Options`).

    Returns
    -------
    CheckResult
        One input result per forward argument (``x0``...) and per parameter.

    Raises
    ------
    LayerConventionError
        A float array the output depends on with no gradient found, or a path given
        that leads nowhere.
    """
    opts = validate_options("check_layer", **options)
    wrt = _wrt_names(wrt, len(inputs))
    draws = GlobalDraws()
    with np.errstate(all="ignore"):
        try:
            proto = _discover(layer, inputs, forward, backward, params, grads,
                              _wanted(inputs, wrt), output, opts.seed, draws,
                              wrt is not None)
        except (UserCodeError, ProtocolError) as exc:
            res = _error_result(exc, opts.seed, opts.name, "layer")
        else:
            res = _run(proto, len(inputs), inputs, wrt, opts)
        finally:
            draws.reset()  # the user's global generators as they were
    record(res)
    return res


def _run(proto: _Protocol, n: int, inputs: tuple[Any, ...], wrt: Any, opts: Options
         ) -> CheckResult:
    """The protocol check of the layer: inputs ``x0``... and the parameters by name."""
    names = [f"x{k}" for k in range(n)]
    values = list(inputs) + [np.asarray(p.read(proto.layer)) for p in proto.params]
    all_names = names + [p.name for p in proto.params]
    if len(set(all_names)) != len(all_names):
        raise LayerConventionError(f"two parameters share a name: {all_names}")

    def fwd(**kw: Any) -> tuple[Any, Any]:
        return proto.run_forward([kw[k] for k in names], [kw[p.name] for p in proto.params])

    def bwd(dy: Any, cache: Any) -> dict[str, Any]:
        return dict(zip(all_names, proto.run_backward(dy, cache), strict=True))

    res = run_protocol_check(fwd, bwd, dict(zip(all_names, values, strict=True)), wrt, opts,
                             kind="layer")
    res.notes = list(res.notes) + [t for t in proto.notes if t not in res.notes]
    return res


def _wrt_names(wrt: Any, n: int) -> Any:
    """``wrt`` with input positions (``0``, ``-1``) read as the inputs' names ``x0``..."""
    if wrt is None or isinstance(wrt, str):
        return wrt
    items = [wrt] if isinstance(wrt, int) and not isinstance(wrt, bool) else wrt
    try:
        items = list(items)
    except TypeError:
        return wrt  # the core's validator names what is wrong
    out = []
    for k in items:
        if isinstance(k, (int, np.integer)) and not isinstance(k, bool):
            if not -n <= k < n:
                raise ValueError(f"wrt= names input {k}, but forward takes {n} input(s); "
                                 "name parameters by name (e.g. wrt=['x0', 'W'])")
            k = f"x{int(k) % n}"
        out.append(k)
    return out


def _wanted(inputs: tuple[Any, ...], wrt: Any) -> list[int]:
    """The inputs (by position) that ``wrt`` names; without ``wrt``, those holding a
    float array (token ids and integer labels get no gradient)."""
    if wrt is None:
        return [k for k, x in enumerate(inputs) if differentiable(x)]
    names = [wrt] if isinstance(wrt, str) else list(wrt)
    return [k for k in range(len(inputs)) if f"x{k}" in names]


def _error_result(exc: UserCodeError | ProtocolError, seed: int, name: str,
                  kind: str) -> CheckResult:
    if isinstance(exc, ProtocolError):
        return CheckResult(passed=False, status=exc.status, message=exc.message, inputs=[],
                           method="", mode="", evaluations=1, backward_calls=0, seed=seed,
                           name=name, kind=kind)
    res = CheckResult(passed=False, status="error",
                      message=f"{exc.what} raised {exc.type}: {exc.text}", inputs=[],
                      method="", mode="", evaluations=1, backward_calls=0, seed=seed,
                      name=name, kind=kind)
    res.error, res.exception = exc.as_dict(), exc.exc
    return res


def assert_layer(layer: Any, *inputs: Any, **options: Any) -> CheckResult:
    """Like :func:`check_layer`, but raise :class:`~gradcheck.GradientMismatch` unless it
    passed."""
    __tracebackhide__ = True
    return raise_unless_passed(check_layer(layer, *inputs, **options))


def check_loss(fn: Callable[..., Any], x: Any, *constants: Any, **options: Any) -> CheckResult:
    """Check a loss written as ``loss, dx = fn(x, *constants)`` (the cs231n style).

    Parameters
    ----------
    fn : callable
        Returns the scalar loss and its gradient with respect to ``x``.
    x : array_like
        The point (scores, predictions).
    *constants
        Further arguments of any type (labels, float targets), held constant.
    **options
        The option set of every check (:class:`gradcheck.Options`).

    Returns
    -------
    CheckResult
    """
    opts = validate_options("check_loss", **options)
    if not callable(fn):
        raise TypeError(f"fn must be callable, got {type(fn).__name__}")

    def fwd(x_: Any, *c: Any) -> tuple[Any, Any]:
        out = fn(x_, *c)
        if not isinstance(out, tuple) or len(out) != 2:
            raise ProtocolError("bad-protocol", "forward: the loss function must return "
                                f"(loss, dx); it returned {type(out).__name__}")
        loss, dx = out
        if np.size(loss) != 1:
            raise ProtocolError("bad-protocol", "forward: the loss must be a scalar, got "
                                f"shape {np.shape(loss)}")
        return np.asarray(loss, dtype=np.float64).reshape(()), np.array(dx, copy=True)

    def bwd(dy: Any, dx: Any) -> list[Any]:
        return [dx * dy] + [None] * len(constants)

    with np.errstate(all="ignore"):
        res = run_protocol_check(fwd, bwd, [x, *constants], [0], opts, kind="loss")
    record(res)
    return res


def assert_loss(fn: Callable[..., Any], x: Any, *constants: Any, **options: Any) -> CheckResult:
    """Like :func:`check_loss`, but raise :class:`~gradcheck.GradientMismatch` unless it
    passed."""
    __tracebackhide__ = True
    return raise_unless_passed(check_loss(fn, x, *constants, **options))
