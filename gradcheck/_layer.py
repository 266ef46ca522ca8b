"""Checks of code as people write it: layer objects, and losses that return ``(loss, dx)``.

A layer object has ``out = layer.forward(*inputs)`` and ``dx = layer.backward(dout)``
(method names settable) and keeps its parameters and their gradients on itself. This
module finds them, by the conventions below or by the names the user gives, and turns
the object into the functional protocol of :func:`gradcheck.check_vjp`: every
evaluation runs on a fresh deep copy of the layer, so caches, accumulated gradients and
counters never leak from one evaluation into another, and gradients that a backward
accumulates with ``+=`` are read as the change it made.

Conventions, tried in this order
--------------------------------
1. ``params=`` / ``grads=``: name -> path (``"W"``, ``"params['W']"``, ``"fc.weight"``)
   or a callable ``layer -> array``.
2. Dicts of arrays on the layer: ``params``/``grads``, ``params``/``gradients``,
   ``parameters``/``grads``, ``parameters``/``gradients`` (same keys).
3. Parameter objects: an attribute whose value has an array ``data`` (or ``value``)
   and a ``grad`` attribute; reported as the attribute's name.
4. Array attributes ``W`` with the gradient in ``dW``, ``d_W``, ``grad_W``, ``W_grad``
   or ``gradW``.

Every float array held by the layer before its first forward (where caches do not exist
yet) must be matched to a gradient; otherwise :class:`LayerConventionError` lists what
was looked for and how to name it.
"""

from __future__ import annotations

import copy
import inspect
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from ._core import raise_unless_passed, run_protocol_check
from ._options import validate_options
from ._protocol import UserCodeError, call_user
from ._recording import record
from ._result import CheckResult

__all__ = ["LayerConventionError", "assert_layer", "assert_loss", "check_layer", "check_loss"]

_DICT_PAIRS = (("params", "grads"), ("params", "gradients"), ("parameters", "grads"),
               ("parameters", "gradients"))
_GRAD_NAMES = ("d{}", "d_{}", "grad_{}", "{}_grad", "grad{}")
_TOKEN = re.compile(r"\.?([A-Za-z_]\w*)|\[(-?\d+)\]|\[(['\"])(.*?)\3\]")


class LayerConventionError(TypeError):
    """No gradient was found for an array that the layer holds; says how to name it."""


# -- paths -----------------------------------------------------------------------------------
def _steps(path: str) -> list[tuple[str, Any]]:
    steps: list[tuple[str, Any]] = []
    pos = 0
    while pos < len(path):
        m = _TOKEN.match(path, pos)
        if m is None or m.end() == pos:
            raise ValueError(f"cannot read the path {path!r} at {path[pos:]!r}; write "
                             "attributes as a.b and keys as a['k'] or a[0]")
        if m.group(1):
            steps.append(("attr", m.group(1)))
        elif m.group(2):
            steps.append(("item", int(m.group(2))))
        else:
            steps.append(("item", m.group(4)))
        pos = m.end()
    return steps


def get_path(obj: Any, path: str) -> Any:
    """The value at ``path`` (``"W"``, ``"params['W']"``, ``"layers[0].b"``) of ``obj``."""
    for kind, key in _steps(path):
        obj = getattr(obj, key) if kind == "attr" else obj[key]
    return obj


@dataclass(frozen=True)
class _Param:
    """One parameter: its report name, where its value and its gradient live."""

    name: str
    value: str | Callable[[Any], Any]
    grad: str | Callable[[Any], Any]

    def read(self, layer: Any) -> Any:
        return self.value(layer) if callable(self.value) else get_path(layer, self.value)

    def read_grad(self, layer: Any) -> Any:
        try:
            return self.grad(layer) if callable(self.grad) else get_path(layer, self.grad)
        except (AttributeError, KeyError, IndexError, TypeError):
            return None

    def write(self, layer: Any, value: np.ndarray) -> None:
        target = self.read(layer)
        if isinstance(target, np.ndarray) and target.shape == value.shape and \
                target.flags.writeable:
            np.copyto(target, value, casting="unsafe")
            return
        if callable(self.value):
            raise LayerConventionError(f"parameter {self.name}: its value is not a writable "
                                       "array; give params= a path instead of a callable")
        *head, (kind, key) = _steps(self.value)
        owner = layer
        for k, s in head:
            owner = getattr(owner, s) if k == "attr" else owner[s]
        if kind == "attr":
            setattr(owner, key, value.copy())
        else:
            owner[key] = value.copy()


# -- discovery ---------------------------------------------------------------------------------
def _float_array(v: Any) -> bool:
    return isinstance(v, np.ndarray) and v.dtype.kind == "f"


def _attrs(obj: Any) -> dict[str, Any]:
    d = getattr(obj, "__dict__", None)
    return dict(d) if isinstance(d, dict) else {}


def _explicit(params: Any, grads: Any) -> list[_Param]:
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
    return [_Param(str(n), params[n], grads[n]) for n in params]


def _default_grad_path(path: Any) -> str:
    if isinstance(path, str) and re.fullmatch(r"[A-Za-z_]\w*", path):
        return f"d{path}"
    raise TypeError("grads= is needed when params= paths are not plain attribute names")


def _conventional(before: Any, after: Any) -> list[_Param]:
    """Parameters of ``before`` (the layer before any forward) found by convention in
    ``after`` (a copy after one forward and backward)."""
    found: list[_Param] = []
    a_before, a_after = _attrs(before), _attrs(after)
    for p_name, g_name in _DICT_PAIRS:
        ps, gs = a_before.get(p_name), a_after.get(g_name)
        if isinstance(ps, dict) and isinstance(gs, dict):
            found += [_Param(f"{p_name}[{k!r}]", f"{p_name}[{k!r}]", f"{g_name}[{k!r}]")
                      for k, v in ps.items() if _float_array(v) and k in gs]
    for k, v in a_before.items():
        data = next((getattr(v, d) for d in ("data", "value")
                     if _float_array(getattr(v, d, None))), None)
        if data is not None and hasattr(a_after.get(k), "grad"):
            attr = "data" if _float_array(getattr(v, "data", None)) else "value"
            found.append(_Param(k, f"{k}.{attr}", f"{k}.grad"))
    for k, v in a_before.items():
        if not _float_array(v):
            continue
        for pattern in _GRAD_NAMES:
            g = pattern.format(k)
            if g != k and _float_array(a_after.get(g)) and a_after[g].shape == v.shape:
                found.append(_Param(k, k, g))
                break
    return found


def _unmatched(before: Any, found: list[_Param]) -> list[str]:
    """Float arrays the layer held before its first forward (attributes, or items of
    dict attributes) that are neither a found parameter nor a gradient."""
    paths = {path for p in found for path in (p.value, p.grad) if isinstance(path, str)}
    heads = {_steps(path)[0][1] for path in paths}
    out = []
    for k, v in _attrs(before).items():
        if _float_array(v) and k not in heads:
            out.append(k)
        elif isinstance(v, dict):
            out += [f"{k}[{kk!r}]" for kk, vv in v.items()
                    if _float_array(vv) and f"{k}[{kk!r}]" not in paths]
    return out


def _convention_error(layer: Any, unmatched: list[str]) -> LayerConventionError:
    looked = ", ".join(p.format("W") for p in _GRAD_NAMES)
    return LayerConventionError(
        f"{type(layer).__name__} holds arrays with no gradient found for them: "
        f"{', '.join(unmatched)}. Looked for dicts "
        + ", ".join(f"{a}/{b}" for a, b in _DICT_PAIRS)
        + f", parameter objects with .data (or .value) and .grad, and for an array W the "
        f"gradients {looked}. Name them: check_layer(layer, x, params={{'W': 'W'}}, "
        "grads={'W': 'dW'}) (paths like \"params['W']\" or callables layer -> array); "
        "params={} checks the input gradient only."
    )


# -- calling the layer -------------------------------------------------------------------------
@dataclass
class _Protocol:
    layer: Any
    forward: str
    backward: str
    n_inputs: int
    params: list[_Param]
    takes_dout: bool

    def run_forward(self, xs: list[Any], ps: list[np.ndarray]) -> tuple[Any, Any]:
        layer = copy.deepcopy(self.layer)
        for p, value in zip(self.params, ps, strict=True):
            p.write(layer, value)
        out = getattr(layer, self.forward)(*xs)
        return out, layer

    def run_backward(self, dy: Any, layer: Any) -> list[Any]:
        fresh = copy.deepcopy(layer)  # each backward on its own copy: += stays local
        before = [_as_float(p.read_grad(fresh)) for p in self.params]
        if self.takes_dout:
            dx = getattr(fresh, self.backward)(dy)
        else:
            dx = getattr(fresh, self.backward)()
        dxs = self._input_grads(dx)
        scale = 1.0 if self.takes_dout else np.asarray(dy)
        grads = []
        for p, b in zip(self.params, before, strict=True):
            after = _as_float(p.read_grad(fresh))
            g = None if after is None else (after - b if b is not None else after.copy())
            grads.append(None if g is None else g * scale)
        if not self.takes_dout:
            dxs = [None if d is None else np.asarray(d) * scale for d in dxs]
        return dxs + grads

    def _input_grads(self, dx: Any) -> list[Any]:
        if dx is None:
            return [None] * self.n_inputs
        if not isinstance(dx, (tuple, list)):
            # one array: the gradient of the first input (a loss's predictions); the
            # others (targets, masks) have none
            return [dx] + [None] * (self.n_inputs - 1)
        if not isinstance(dx, (tuple, list)) or len(dx) != self.n_inputs:
            got = f"{len(dx)} values" if isinstance(dx, (tuple, list)) else type(dx).__name__
            raise ValueError(f"backward returned {got} for {self.n_inputs} inputs; return one "
                             "input gradient per forward argument")
        return list(dx)


def _as_float(g: Any) -> np.ndarray | None:
    if g is None:
        return None
    return np.array(g, dtype=np.float64, copy=True)


def _takes_dout(method: Any) -> bool:
    try:
        sig = inspect.signature(method)
    except (TypeError, ValueError):
        return True
    required = [p for p in sig.parameters.values()
                if p.default is p.empty and p.kind in (p.POSITIONAL_ONLY,
                                                       p.POSITIONAL_OR_KEYWORD)]
    varargs = any(p.kind is p.VAR_POSITIONAL for p in sig.parameters.values())
    return bool(required) or varargs


def _discover(layer: Any, inputs: tuple[Any, ...], forward: str, backward: str,
              params: Any, grads: Any) -> _Protocol:
    for attr in (forward, backward):
        if not callable(getattr(layer, attr, None)):
            raise TypeError(f"{type(layer).__name__} has no method {attr!r}; name the "
                            "methods with forward= and backward=")
    takes_dout = _takes_dout(getattr(layer, backward))
    if params is not None:
        return _Protocol(layer, forward, backward, len(inputs), _explicit(params, grads),
                         takes_dout)
    probe = copy.deepcopy(layer)
    out = call_user(getattr(probe, forward), *copy.deepcopy(list(inputs)),
                    what=f"{type(layer).__name__}.{forward}")
    if not takes_dout and np.size(out) != 1:
        raise TypeError(f"{type(layer).__name__}.{backward}() takes no output gradient, so "
                        f"the output must be a scalar; it has shape {np.shape(out)}")
    dy = _ones_like(out)
    if takes_dout:
        call_user(getattr(probe, backward), dy, what=f"{type(layer).__name__}.{backward}")
    else:
        call_user(getattr(probe, backward), what=f"{type(layer).__name__}.{backward}")
    found = _conventional(layer, probe)
    unmatched = _unmatched(layer, found)
    if unmatched:
        raise _convention_error(layer, unmatched)
    return _Protocol(layer, forward, backward, len(inputs), found, takes_dout)


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
        ``layer.backward()`` for a scalar output, as loss objects do). ``dx`` is one
        array for one input, a tuple for several. Never modified: every evaluation
        runs on a deep copy.
    *inputs : array_like
        The arguments of ``forward``. Integer ones (token ids) are not differentiated.
        A backward that returns one array returns the first input's gradient.
    forward, backward : str
        The method names (``"forward_pass"``, ``"backward_pass"``...).
    params, grads : dict, optional
        name -> path (``"W"``, ``"params['W']"``) or callable ``layer -> array`` of each
        parameter and of its gradient. By default found by the conventions of this
        module's docstring; ``params={}`` checks the input gradients only.
    wrt : sequence of str, optional
        The names to differentiate (``"x0"``, ``"x1"`` for the inputs, the parameter
        names); the others are held constant.
    **options
        As for :func:`gradcheck.check_vjp` (``seed``, ``mode``, ``rtol``...).

    Returns
    -------
    CheckResult
        One input result per forward argument (``x0``...) and per parameter.

    Raises
    ------
    LayerConventionError
        The layer holds arrays for which no gradient was found (the message lists what
        was looked for and how to name them).
    """
    opts = validate_options("check_layer", **options)
    with np.errstate(all="ignore"):
        try:
            proto = _discover(layer, inputs, forward, backward, params, grads)
        except UserCodeError as exc:
            res = _error_result(exc, opts.seed, opts.name, "layer")
            record(res)
            return res
        names = [f"x{k}" for k in range(len(inputs))]
        values = list(inputs) + [np.asarray(p.read(layer)) for p in proto.params]
        all_names = names + [p.name for p in proto.params]
        if len(set(all_names)) != len(all_names):
            raise LayerConventionError(f"two parameters share a name: {all_names}")

        def fwd(**kw: Any) -> tuple[Any, Any]:
            return proto.run_forward([kw[n] for n in names],
                                     [kw[p.name] for p in proto.params])

        def bwd(dy: Any, cache: Any) -> dict[str, Any]:
            return dict(zip(all_names, proto.run_backward(dy, cache), strict=True))

        res = run_protocol_check(fwd, bwd, dict(zip(all_names, values, strict=True)), wrt,
                                 opts, kind="layer")
    record(res)
    return res


def _error_result(exc: UserCodeError, seed: int, name: str, kind: str) -> CheckResult:
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
        As for :func:`gradcheck.check_vjp`.

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
            raise ValueError("the loss function must return (loss, dx); it returned "
                             f"{type(out).__name__}")
        loss, dx = out
        if np.size(loss) != 1:
            raise ValueError(f"the loss must be a scalar, got shape {np.shape(loss)}")
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
