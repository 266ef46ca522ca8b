"""Where a layer object keeps its parameters: a walk of the object and its sub-layers.

The layer is walked recursively, through attributes, lists, tuples and dicts (sub-layers
in ``self.attn``, ``self.blocks[1]``, ``self.layers['fc']``), and at every object met
these conventions are tried:

1. Containers of the same kind side by side: dicts ``params``/``grads`` (also
   ``parameters``, ``weights``; ``gradients``, ``grad``, ``dparams``) with the same
   keys, or lists/tuples of the same length (``self.params = [W, b]``,
   ``self.grads = [dW, db]``), the gradient of the same shape at the same place.
2. Parameter objects anywhere: an object with an array ``data`` (or ``value``) and a
   ``grad`` attribute; named by where it sits (``fc.weight``).
3. Array attributes ``W`` with the gradient in ``dW``, ``d_W``, ``grad_W``, ``W_grad``,
   ``gradW``, ``W_gradient`` or ``gradient_W`` of the same object.

A float scalar (a Python float or a NumPy float scalar, e.g. a PReLU ``alpha``) with a
gradient found by the same conventions (``dalpha``, ``grads[2]``) is a parameter too,
written back as the same type; one without (``eps``, ``momentum``, ``p``) is a
hyperparameter held constant (:func:`float_scalars` lists them).

An array reached along several paths (a composite that also lists its sub-layers'
parameters) is one parameter, named by its deepest path (the sub-layer's own); where
those paths lead to different gradient locations (``layers[0].grads[0]`` and the
composite's ``grads[0]``), the others are kept in ``Param.also``, and every one of them
must hold the gradient. Paths read as Python:
``blocks[1].attn.W_q``, ``params[0]``, ``params['W']``.
"""

from __future__ import annotations

import ast
import collections
import re
import types
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from ._protocol import ProtocolError, clone

__all__ = ["GRAD_BOXES", "GRAD_NAMES", "PAIRS", "LayerConventionError", "Param", "float_arrays",
           "class_held", "explicit_params", "no_grad",
           "float_scalars", "get_path", "held_values", "is_float_array", "is_float_scalar",
           "multiple_of", "padded", "param_object", "parameters", "set_path", "steps", "try_path",
           "unmatched",
           "walk"]

PAIRS = (("params", "grads"), ("params", "gradients"), ("parameters", "grads"),
         ("parameters", "gradients"), ("params", "grad"), ("params", "dparams"),
         ("weights", "grads"), ("weights", "gradients"))
GRAD_BOXES = ("grads", "gradients", "grad", "dparams")  # dicts of gradients by name
GRAD_NAMES = ("d{}", "d_{}", "grad_{}", "{}_grad", "grad{}", "{}_gradient", "gradient_{}")
_TOKEN = re.compile(r"\.?([A-Za-z_]\w*)|\[(-?\d+)\]|\[(['\"])(.*?)\3\]")
_DEPTH = 32  # nesting walked (a Sequential of Residual blocks of Linear layers: ~10)
_OPAQUE = (type, types.ModuleType, types.FunctionType, types.BuiltinFunctionType,
           types.MethodType, np.random.Generator, np.random.RandomState, np.ndarray,
           np.generic, str, bytes)


class LayerConventionError(TypeError):
    """No gradient was found for an array that the layer holds; says how to name it."""


# -- paths -----------------------------------------------------------------------------------
def steps(path: str) -> list[tuple[str, Any]]:
    """``"a.b[0]['k']"`` -> ``[("attr", "a"), ("attr", "b"), ("item", 0), ("item", "k")]``."""
    out: list[tuple[str, Any]] = []
    pos = 0
    while pos < len(path):
        if path.startswith("[(", pos):  # a tuple key: params[('fc', 'W')], nested too
            key, pos = _tuple_key(path, pos)
            out.append(("item", key))
            continue
        m = _TOKEN.match(path, pos)
        if m is None or m.end() == pos:
            raise ValueError(f"cannot read the path {path!r} at {path[pos:]!r}; write "
                             "attributes as a.b and keys as a['k'] or a[0]")
        if m.group(1):
            out.append(("attr", m.group(1)))
        elif m.group(2):
            out.append(("item", int(m.group(2))))
        else:
            out.append(("item", m.group(4)))
        pos = m.end()
    return out


def _tuple_key(path: str, pos: int) -> tuple[tuple[Any, ...], int]:
    """The tuple key written at ``path[pos:]`` (``[('fc', 0)]``) and where it ends."""
    end = path.find(")]", pos)
    while end >= 0:
        try:
            key = ast.literal_eval(path[pos + 1:end + 1])
        except (ValueError, SyntaxError):
            end = path.find(")]", end + 1)
            continue
        if isinstance(key, tuple):
            return key, end + 2
        break
    raise ValueError(f"cannot read the path {path!r} at {path[pos:]!r}")


def get_path(obj: Any, path: str) -> Any:
    """The value at ``path`` (``"W"``, ``"params['W']"``, ``"layers[0].b"``) of ``obj``."""
    for kind, key in steps(path):
        obj = getattr(obj, key) if kind == "attr" else obj[key]
    return obj


def set_path(obj: Any, path: str, value: Any) -> None:
    """Set the attribute or item at ``path`` of ``obj`` (see :func:`get_path`)."""
    *head, (kind, key) = steps(path)
    for k, s in head:
        obj = getattr(obj, s) if k == "attr" else obj[s]
    if kind == "attr":
        setattr(obj, key, value)
    else:
        obj[key] = value


def try_path(obj: Any, path: str) -> Any:
    try:
        return get_path(obj, path)
    except (AttributeError, KeyError, IndexError, TypeError):
        return None


def _join(head: str, key: Any, attr: bool) -> str:
    if attr:
        return f"{head}.{key}" if head else str(key)
    return f"{head}[{_plain(key)!r}]"


def _plain(key: Any) -> Any:
    """A key with NumPy scalars made Python's (``np.int64(0)`` reads as ``0``)."""
    if isinstance(key, tuple):
        return tuple(_plain(k) for k in key)
    return key.item() if isinstance(key, np.generic) else key


@dataclass(frozen=True)
class Param:
    """One parameter: its report name, where its value and its gradient live, and other
    places the same gradient must be found (``also``: paths of a composite's lists)."""

    name: str
    value: str | Callable[[Any], Any]
    grad: str | Callable[[Any], Any]
    also: tuple[str, ...] = ()

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
            np.copyto(target, value, casting="unsafe")  # every alias sees it
            return
        if is_float_scalar(target):  # a float stays a float, np.float32 an np.float32
            value = type(target)(np.asarray(value).reshape(()))
        if callable(self.value):
            raise LayerConventionError(f"parameter {self.name}: its value is not a writable "
                                       "array; give params= a path instead of a callable")
        set_path(layer, self.value, value.copy() if isinstance(value, np.ndarray) else value)


def multiple_of(a: Any, b: Any, rtol: float) -> bool:
    """Whether ``a`` is ``k * b`` for one number ``k`` (least squares), to ``rtol`` and to
    1e-12 of ``a``'s largest entry; ``a`` and ``b`` of one shape, ``b`` not all zero."""
    u, v = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    k = float(np.sum(u * v) / np.sum(v * v))
    return bool(np.allclose(u, k * v, rtol=rtol, atol=1e-12 * float(np.max(np.abs(u)))))


# -- the walk --------------------------------------------------------------------------------
def is_float_array(v: Any) -> bool:
    return isinstance(v, np.ndarray) and v.dtype.kind == "f"


def is_float_scalar(v: Any) -> bool:
    """A Python float or a NumPy float scalar (not a 0-d array, not a bool)."""
    return isinstance(v, (float, np.floating))


def _fits(value: Any, grad: Any) -> bool:
    """Whether ``grad`` can be the gradient of the parameter ``value``."""
    if is_float_array(value):
        if value.size == 1 and is_float_scalar(grad):  # alpha = np.array(0.25); dalpha = s
            return True
        return is_float_array(grad) and grad.shape == value.shape
    if is_float_scalar(value):
        return is_float_scalar(grad) or (is_float_array(grad) and grad.size == 1)
    return False


def _attrs(obj: Any) -> dict[str, Any]:
    """An object's attributes: its ``__dict__`` and its ``__slots__``."""
    if isinstance(obj, _OPAQUE):
        return {}
    d = getattr(obj, "__dict__", None)
    out = dict(d) if isinstance(d, dict) else {}
    for cls in type(obj).__mro__:
        slots = getattr(cls, "__slots__", ())
        for name in (slots,) if isinstance(slots, str) else slots:
            if name not in ("__dict__", "__weakref__") and name not in out and hasattr(
                    obj, name):
                out[name] = getattr(obj, name)
    return out


def _children(obj: Any) -> list[tuple[Any, Any, bool]]:
    """(key, value, is_attribute) of a container or an object's attributes."""
    if isinstance(obj, (list, tuple, collections.deque)) or (
            isinstance(obj, np.ndarray) and obj.dtype == object and obj.ndim == 1):
        return [(k, v, False) for k, v in enumerate(obj)]  # np.array([W1, W2], object) too
    if isinstance(obj, dict):
        bad = [k for k, v in obj.items() if not _key(k) and _holds_float(v)]
        if bad:
            raise LayerConventionError(
                f"a dict holds float arrays under keys a path cannot name ({bad[0]!r}, "
                f"{type(bad[0]).__name__}): key them by strings, ints or tuples of them")
        return [(_plain(k), v, False) for k, v in obj.items() if _key(k)]
    attrs = _attrs(obj)
    served = _served(obj, attrs)
    return [(k, v, True) for k, v in attrs.items() if k not in served] + [
        (k, v, True) for d in served.values() for k, v in d.items()]


def _served(obj: Any, attrs: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """The private dicts whose every item the object's ``__getattr__`` serves as an
    attribute of its key (a torch-like module's ``_parameters``: ``layer.W``): their
    items are named as the user reads them, ``W``, not ``_parameters['W']``."""
    if not hasattr(type(obj), "__getattr__"):
        return {}
    return {name: v for name, v in attrs.items() if name.startswith("_") and isinstance(
        v, dict) and v and all(isinstance(k, str) and k.isidentifier() and k not in attrs
                               for k in v) and _serves(obj, v)}


def _serves(obj: Any, d: dict[str, Any]) -> bool:
    try:
        return all(getattr(obj, k) is item for k, item in d.items())
    except Exception:  # noqa: BLE001 - a __getattr__ of its own raising: not served
        return False


def _key(k: Any, inner: bool = False) -> bool:
    """A dict key a path can hold: a string, an int (a NumPy one too), or a tuple of
    them and of floats, bools and None; a float array under any other key is a
    :class:`LayerConventionError` (:func:`_children`), never left unseen."""
    if isinstance(k, tuple):
        if not k or not all(_key(e, True) for e in k):
            return False
        try:
            return bool(ast.literal_eval(repr(_plain(k))) == k)
        except (ValueError, SyntaxError):
            return False
    if inner and (k is None or isinstance(k, (bool, float, np.floating))):
        return True
    return isinstance(k, (str, int, np.integer)) and not isinstance(k, bool) and not (
        isinstance(k, str) and ("'" in k and '"' in k))


def _holds_float(v: Any, depth: int = 0) -> bool:
    if is_float_array(v) or (isinstance(v, np.ndarray) and v.dtype == object):
        return True
    if depth < 2 and isinstance(v, (list, tuple)):
        return any(_holds_float(u, depth + 1) for u in v)
    return depth < 2 and isinstance(v, dict) and any(
        _holds_float(u, depth + 1) for u in v.values())


def param_object(v: Any) -> str | None:
    """``"data"`` or ``"value"`` if ``v`` is a parameter object, else None."""
    if isinstance(v, _OPAQUE) or isinstance(v, (list, tuple, dict)):
        return None
    for attr in ("data", "value"):
        if is_float_array(getattr(v, attr, None)) and "grad" in _attrs(v):
            return attr
    return None


def walk(obj: Any, path: str = "", depth: int = 0,
         seen: set[int] | None = None) -> Iterator[tuple[str, Any]]:
    """Every (path, value) reachable from ``obj``, each object once, parameter objects
    and arrays as leaves (not entered); the object itself is never entered again (a layer
    holding itself, ``self.layers = [self]``, has ``W``, not ``layers[0].W``)."""
    seen = {id(obj)} if seen is None else seen
    for key, v, attr in _children(obj):
        p = _join(path, key, attr)
        if id(v) in seen or v is None or isinstance(v, (int, float, complex, bool)):
            continue
        seen.add(id(v))
        yield p, v
        if depth < _DEPTH and (not isinstance(v, np.ndarray) or v.dtype == object) and \
                param_object(v) is None:
            yield from walk(v, p, depth + 1, seen)


def no_grad(layer: Any) -> None:
    """The gradient of a parameter read elsewhere than through it (a step's change)."""
    return None


def class_held(obj: Any) -> tuple[Any, list[str]]:
    """``obj``, or when it (or an object it holds) keeps float arrays in a dict or list of
    its class (``params = {}`` in the class body, filled in ``__init__``: shared by every
    instance and every copy, so not movable on a copy alone) a copy of it whose objects
    each hold their own deep copy of it, and the names of those containers."""
    found: list[tuple[Any, str, str, bool]] = []  # (owner, name, path, holds floats)
    owners = [obj] + [v for _, v in walk(obj) if hasattr(v, "__dict__")
                      and not isinstance(v, np.ndarray | type)]
    for k, owner in enumerate(owners):
        mine = set(getattr(owner, "__dict__", ()))  # (a layer with __slots__ has none)
        for cls in type(owner).__mro__[:-1]:
            for name, v in vars(cls).items():
                if not name.startswith("__") and name not in mine and isinstance(v, dict | list):
                    found.append((k, name, f"{cls.__name__}.{name}", any(
                        is_float_array(a) for _, a in walk(v))))
                    mine.add(name)
    if not any(f for *_, f in found):
        return obj, []
    own = clone(obj)  # every such container of the class given its own copy (a
    copies = [own] + [v for _, v in walk(own) if hasattr(v, "__dict__")  # grads = {}
                      and not isinstance(v, np.ndarray | type)]  # the backward fills too)
    for k, name, _, _ in found:
        try:
            setattr(copies[k], name, clone(getattr(copies[k], name)))
        except AttributeError:  # __slots__ without it: its copies share it, as before
            continue
    return own, list(dict.fromkeys(p for _, _, p, f in found if f))


def held_values(obj: Any) -> dict[str, tuple[int, np.ndarray]]:
    """``path.data -> (identity, copy)`` of the value array of every parameter object
    reachable from ``obj`` (:func:`walk` does not enter them)."""
    return {f"{p}.{attr}": (id(a), a.copy()) for p, v in walk(obj)
            if (attr := param_object(v)) is not None
            and is_float_array(a := getattr(v, attr))}


def float_arrays(obj: Any) -> dict[int, tuple[str, np.ndarray]]:
    """id -> (first path, array) of every float array reachable from ``obj``."""
    return {id(v): (p, v) for p, v in walk(obj) if is_float_array(v)}


# -- the conventions -------------------------------------------------------------------------
def _side_by_side(path: str, before: dict[str, Any], after: Any) -> Iterator[Param]:
    for p_name, g_name in PAIRS:
        ps, gs = before.get(p_name), try_path(after, _join(path, g_name, True))
        if isinstance(ps, dict) and isinstance(gs, dict):
            keys = [k for k, v in ps.items() if k in gs and _fits(v, gs[k]) and _key(k)]
        elif isinstance(ps, (list, tuple)) and isinstance(gs, (list, tuple)) and \
                len(ps) == len(gs):
            keys = [k for k, v in enumerate(ps) if _fits(v, gs[k])]
            if keys:  # the lists pair by place: a partner of another shape is a wrong one
                _misfit(p_name, g_name, ps, gs)
        else:
            continue
        for k in keys:
            name = _join(_join(path, p_name, True), k, False)
            yield Param(name, name, _join(_join(path, g_name, True), k, False))


def _misfit(p_name: str, g_name: str, ps: Any, gs: Any) -> None:
    """A gradient at the place of a parameter whose shape differs from it by more than
    size-1 axes: a ``shape-mismatch`` verdict (the same error a forward-looking user
    makes: ``db`` summed over the wrong axis)."""
    for k, (v, g) in enumerate(zip(ps, gs, strict=True)):
        if is_float_array(v) and is_float_array(g) and not _fits(v, g) and \
                [d for d in g.shape if d != 1] != [d for d in v.shape if d != 1]:
            raise ProtocolError("shape-mismatch", (
                f"gradient of {p_name}[{k}] (stored in {g_name}[{k}]) has shape {g.shape}, "
                f"expected {v.shape}"), at=(f"{p_name}[{k}]", v))


def _named_gradients(path: str, before: dict[str, Any], after: Any) -> Iterator[Param]:
    after_attrs = _attrs(after)
    spelled: dict[str, list[str]] = {}
    for a in after_attrs:
        spelled.setdefault(a.lower(), []).append(a)
    for k, v in before.items():
        if not (is_float_array(v) or is_float_scalar(v)):
            continue
        names = [pattern.format(k) for pattern in GRAD_NAMES]
        exact = [g for g in names if g in after_attrs]  # dW as written wins over dw
        other = [s[0] for g in names if len(s := spelled.get(g.lower(), [])) == 1]
        g = next((g for g in exact or other if g != k), None)  # dAlpha for alpha
        if g is not None and (_fits(v, after_attrs.get(g)) or is_float_scalar(v) and
                              is_float_array(after_attrs.get(g))):  # (D,) for a scalar: stated
            yield Param(_join(path, k, True), _join(path, k, True), _join(path, g, True))
        elif g is None:  # keyed by its name in a dict of gradients: grads['alpha']
            box = next((b for b in GRAD_BOXES if isinstance(after_attrs.get(b), dict)
                        and _fits(v, after_attrs[b].get(k)) and b != k), None)
            if box is not None and is_float_scalar(v):
                yield Param(_join(path, k, True), _join(path, k, True),
                            _join(_join(path, box, True), k, False))


def _pairs_held(path: str, own: dict[str, Any], seen: dict[int, str]) -> Iterator[Param]:
    """The parameters a list of ``(array, gradient)`` pairs the object holds names (an
    optimizer's ``self._cached_params = [(self.W, self.dW), (self.b, self.db)]``): each
    array by its own path, its gradient at its place in the pair, where the optimizer
    reads it (a backward rebinding ``self.dW`` leaves the pair's stale)."""
    for k, v in own.items():
        if not isinstance(v, (list, tuple)) or not v or not all(
                isinstance(t, (list, tuple)) and len(t) == 2 and is_float_array(t[0]) and
                is_float_array(t[1]) and t[0].shape == t[1].shape and t[0] is not t[1]
                for t in v):
            continue
        for i, (a, _) in enumerate(v):
            if (name := seen.get(id(a))) is not None and not name.startswith(
                    _join(path, k, True)):
                yield Param(name, name, f"{_join(_join(path, k, True), i, False)}[1]")


def parameters(before: Any, after: Any) -> list[Param]:
    """The parameters of ``before`` (the layer before its backward) whose gradients are
    found in ``after`` (a copy after one forward and backward), by the conventions of
    this module, each array once, named by its deepest path (the sub-layer's own
    ``layers[1].params[0]`` rather than a composite's list of them)."""
    found: dict[Any, tuple[int, Param]] = {}  # id of the array -> (when found, parameter)
    counter = iter(range(1 << 62))

    def add(p: Param) -> None:
        value = p.read(before)
        key = id(value) if isinstance(value, np.ndarray) else p.name  # scalars by place
        if key not in found:
            found[key] = (next(counter), p)
            return
        when, old = found[key]
        deep, other = (p, old) if len(steps(p.name)) > len(steps(old.name)) else (old, p)
        grads = [g for g in (other.grad, *other.also, *deep.also)
                 if isinstance(g, str) and g != deep.grad]
        when = next(counter) if deep is p else when  # ordered as the deepest was found
        found[key] = (when, replace(deep, also=tuple(dict.fromkeys(grads))))

    nodes = [("", before)] + [(p, v) for p, v in walk(before) if not isinstance(v, np.ndarray)]
    for path, node in nodes:
        attr = param_object(node)
        if attr is not None and path:
            if hasattr(try_path(after, path), "grad"):
                add(Param(path, f"{path}.{attr}", f"{path}.grad"))
            continue
        own = _attrs(node)
        if not own:
            continue
        other = after if not path else try_path(after, path)
        for p in (*_side_by_side(path, own, after), *_named_gradients(path, own, other)):
            add(p)
    seen = {id(v): p for p, v in walk(before) if is_float_array(v)}  # each array's own path
    for path, node in nodes:  # (after the others: the pair's place a second one, also)
        for p in _pairs_held(path, _attrs(node) or {}, seen):
            add(p)
    return [p for _, p in sorted(found.values(), key=lambda t: t[0])]


def float_scalars(obj: Any) -> list[str]:
    """Paths of every float scalar held by ``obj`` and the objects it holds."""
    nodes = [("", obj)] + [(p, v) for p, v in walk(obj) if not isinstance(v, np.ndarray)]
    return [_join(path, k, attr) for path, node in nodes for k, v, attr in _children(node)
            if is_float_scalar(v)]


def unmatched(before: Any, found: list[Param]) -> list[str]:
    """Paths of float arrays held by ``before`` that are neither a found parameter nor
    a gradient."""
    used = set()
    for p in found:
        used.add(id(p.read(before)))
        g = p.read_grad(before)
        if g is not None:
            used.add(id(g))
    return [path for key, (path, _) in float_arrays(before).items() if key not in used]


def padded(v: np.ndarray, x: np.ndarray) -> bool:
    """Whether ``v`` is a copy of ``x`` laid out otherwise and filled with zeros (zero
    padding, a copy per filter, columns of patches): every value of ``x`` is in it, and
    nothing but them and zeros (not a ReLU's output, which drops the negative ones)."""
    if not (is_float_array(v) and is_float_array(x)) or v.size < x.size or v.shape == x.shape:
        return False
    values = np.unique(np.asarray(x))
    values = values[values != 0]
    rest = np.asarray(v)[np.asarray(v) != 0]
    return values.size > 1 and bool(np.isin(values, rest).all() and np.isin(rest, values).all())


# -- parameters named by params=/grads= ------------------------------------------------------
def explicit_params(params: Any, grads: Any) -> list[Param]:
    """The parameters ``params=`` names (name -> path or callable), with the gradients
    ``grads=`` names (default: ``d`` + each plain attribute name)."""
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
