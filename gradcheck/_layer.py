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

from ._conventions import has_float
from ._core import raise_unless_passed, run_protocol_check
from ._discovery import (
    GRAD_NAMES,
    PAIRS,
    LayerConventionError,
    Param,
    float_arrays,
    float_scalars,
    is_float_array,
    parameters,
    try_path,
    unmatched,
    walk,
)
from ._options import Options, validate_options
from ._protocol import ProtocolError, UserCodeError, call_user
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

    def note(self, text: str) -> None:
        if text and text not in self.notes:
            self.notes.append(text)

    def run_forward(self, xs: list[Any], ps: list[np.ndarray]) -> tuple[Any, Any]:
        layer = copy.deepcopy(self.layer)
        for p, value in zip(self.params, ps, strict=True):
            p.write(layer, value)
        out = getattr(layer, self.forward)(*xs)
        return out, layer

    def run_backward(self, dy: Any, layer: Any) -> list[Any]:
        fresh = copy.deepcopy(layer)  # each backward on its own copy: += stays local
        method = getattr(fresh, self.backward)
        if not self.style:
            self.style, note = _call_style(method, dy, f"{type(self.layer).__name__}."
                                           f"{self.backward}")
            self.note(note)
        before = [_as_float(p.read_grad(fresh)) for p in self.params]
        elsewhere = {a: _as_float(try_path(fresh, a)) for p in self.params for a in p.also}
        if self.style == "spread":
            dx = method(*dy)
        elif self.style == "one":
            dx = method(dy)
        else:
            dx = method()
        dxs = self._input_grads(dx)
        scale = np.asarray(dy) if self.style == "none" else None
        grads = []
        for p, b in zip(self.params, before, strict=True):
            grads.append(_change(p.read_grad(fresh), b, scale))
            _same_elsewhere(p, fresh, grads[-1], elsewhere)
        if scale is not None:
            dxs = [None if d is None else np.asarray(d) * scale for d in dxs]
        return dxs + grads

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


def _check_methods(layer: Any, forward: str, backward: str) -> None:
    for attr in (forward, backward):
        if not callable(getattr(layer, attr, None)):
            raise TypeError(f"{type(layer).__name__} has no method {attr!r}; name the "
                            "methods with forward= and backward=")


def _discover(layer: Any, inputs: tuple[Any, ...], forward: str, backward: str,
              params: Any, grads: Any, wanted: list[int]) -> _Protocol:
    _check_methods(layer, forward, backward)
    shapes = [np.shape(x) if isinstance(x, np.ndarray) else
              "sequence" if isinstance(x, (list, tuple)) else None for x in inputs]
    named = _explicit(params, grads) if params is not None else None
    if named == []:
        return _Protocol(layer, forward, backward, len(inputs), [], wanted, shapes=shapes)
    init, probe = _probe(layer, inputs, forward, backward)
    if named is not None:
        _resolve_named(layer, init, probe, named, params, grads)
        return _Protocol(layer, forward, backward, len(inputs), named, wanted, shapes=shapes)
    found = parameters(layer, probe)
    missing = unmatched(layer, found)
    base, notes = layer, []
    held = {p for p, _ in float_arrays(layer).values()}
    persistent = _persistent(init, inputs, forward, held)
    if persistent:  # arrays built by the first forward and kept: weights or buffers
        lazy_found = parameters(init, probe)
        lazy = [p for p in lazy_found if isinstance(p.value, str)
                and not is_float_array(try_path(layer, p.value))]
        if lazy:
            base, found = init, lazy_found
            notes.append(f"{type(layer).__name__} creates {', '.join(p.name for p in lazy)} "
                         "on its first forward: initialised once on a copy, every evaluation "
                         "starts from it")
        missing = [p for p in unmatched(init, found) if p in held or p in persistent]
    if missing:
        raise _convention_error(layer, missing)
    notes += [t for t in [_constant_scalars(base, found)] if t]
    return _Protocol(base, forward, backward, len(inputs), found, wanted, notes, shapes=shapes)


def _constant_scalars(layer: Any, found: list[Param]) -> str:
    """The note naming the float scalars held constant: those with no gradient found."""
    used = {q for p in found for q in (p.value, p.grad, *p.also) if isinstance(q, str)}
    held = [s for s in float_scalars(layer) if s not in used]
    if not held:
        return ""
    return (f"float scalars with no gradient found held constant (hyperparameters): "
            f"{', '.join(held)}; a scalar parameter needs its gradient beside it (dX, grad_X) "
            "or in params=/grads=")


def _probe(layer: Any, inputs: tuple[Any, ...], forward: str, backward: str
           ) -> tuple[Any, Any]:
    """Copies of the layer after one forward (``init``) and after its backward too."""
    init = copy.deepcopy(layer)
    out = _call(init, forward, copy.deepcopy(list(inputs)))
    probe = copy.deepcopy(init)
    dy = _ones_like(out)
    style, _ = _call_style(getattr(probe, backward), dy, f"{type(layer).__name__}.{backward}")
    args = list(dy) if style == "spread" else [dy] if style == "one" else []
    _call(probe, backward, args)
    return init, probe


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
    forward: str = "forward",
    backward: str = "backward",
    params: dict[str, Any] | None = None,
    grads: dict[str, Any] | None = None,
    wrt: Any = None,
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
    forward, backward : str
        The method names (``"forward_pass"``, ``"backward_pass"``...).
    params, grads : dict, optional
        name -> path (``"W"``, ``"params['W']"``, ``"blocks[1].attn.W_q"``) or callable
        ``layer -> array`` of each parameter and of its gradient. By default found in
        the layer and its sub-layers by the conventions of :mod:`gradcheck._discovery`;
        ``params={}`` checks the input gradients only. Float scalars: see the module.
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
        A float array held with no gradient found, or a path given that leads nowhere.
    """
    opts = validate_options("check_layer", **options)
    wrt = _wrt_names(wrt, len(inputs))
    with np.errstate(all="ignore"):
        try:
            proto = _discover(layer, inputs, forward, backward, params, grads,
                              _wanted(inputs, wrt))
        except (UserCodeError, ProtocolError) as exc:
            res = _error_result(exc, opts.seed, opts.name, "layer")
        else:
            res = _run(proto, len(inputs), inputs, wrt, opts)
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
        return [k for k, x in enumerate(inputs) if has_float(x)]
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
