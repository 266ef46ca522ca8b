"""What a layer object's calls do, observed: the facts :mod:`gradcheck.check._layer` reads code by.

A convention we have never seen is still code that returns something, stores something
and computes an output from some of what it holds. So, beside the names a user gives,
a layer is read by watching it:

- **which methods** make the forward/backward pair (:func:`method_pair`): ``forward``
  and ``backward`` if it has them, else the one pair of methods whose names read as a
  forward and a backward (``forward_pass``/``backward_pass``, ``fprop``/``bprop``,
  ``fp``/``bp``, ``__call__``/``backward``);
- **what a call stored** (:func:`float_state`, :func:`stored`): the float arrays the
  object holds before and after a call; those created, rebound or changed in place
  are what the call stored (the output of a forward that returns nothing, the
  gradients of a backward that returns nothing);
- **which stored array is which gradient** (:func:`grad_of`): by name (``d`` + name,
  ``grad``/``_grad`` forms) and by shape, a size-1 axis aside (:func:`same_but_unit`);
- **what the output depends on** (the caller's perturbation test, see
  :mod:`gradcheck.check._layer`): an array held whose perturbation leaves the output as it was
  is state (running statistics, an old mask), not a parameter.
"""

from __future__ import annotations

import dis
import inspect
import re
from typing import Any

import numpy as np

from ._discovery import is_float_array, walk
from ._protocol import clone
from ._stubs import does_nothing, stub

__all__ = ["FORWARD_NAMED", "IO_NAMED", "TARGET_NAMED", "adds_leading", "backward_named",
           "float_state", "grad_of", "grad_stem",
           "grads_holder",
           "items_off", "last_name", "method_pair", "parent_of", "positional_names",
           "same_but_unit", "stored", "takes", "unit_note"]

_FORWARD_LONG = r"forward_?prop(agate)?|f(or|ro|o)wa?r?d|fprop|fwd"  # foward, forwad too
_BACKWARD_LONG = (r"backward_?prop(agate)?|back_?prop?(agate)?|bac?k?w[ao]r?d|bprop|bwd"
                  r"|^back_?forward$")  # backword, bacward too
_NUMERIC = re.compile(r"numeric|finite_?diff|approx", re.I)  # a reference gradient's name
_SHORT = re.compile(r"(?<![a-z])([fb])p(?![a-z])", re.I)  # fp/bp: only as a pair
_FORWARD = re.compile(_FORWARD_LONG + r"|(?<![a-z])fp(?![a-z])", re.I)
_BACKWARD = re.compile(_BACKWARD_LONG + r"|(?<![a-z])bp(?![a-z])", re.I)
FORWARD_NAMED = _FORWARD  # (a forward's name, for the readings of check/)
#: An argument named as a loss's targets (``y_true`` of ``loss(y_pred, y_true)``).
TARGET_NAMED = re.compile(r"(y|t|ys|y_?true|y_?train|targets?|labels?|truth|gt|expected|"
                          r"desired|answers?|one_?hot)", re.I)
_GRAD_AFFIX = re.compile(r"^(gradients?_?|grads?_?|dl(oss)?_?d_?|diff_?|nabla_?|d_?)"
                         r"|(_?gradients?|_?grads?)$", re.I)
_MANGLED = re.compile(r"^_[A-Za-z][A-Za-z0-9_]*?__(?=[A-Za-z0-9])")  # _Dense__w: self.__w
_INDEX_TAIL = re.compile(r"(\[[^\[\]]*\])+$")  # the items of a list: [0], [0]['W']


# -- the method pair ---------------------------------------------------------------------------
def _methods(layer: Any, pattern: re.Pattern[str], private: bool = False) -> list[str]:
    """The public methods named as a forward (or a backward), ``__call__`` too; with
    ``private``, the private ones (``_forwards``), dunders only of the layer's own
    (``__forward__``)."""
    names = [n for n in dir(type(layer)) if n.startswith("_") == private
             and (not n.startswith("__") or _own_dunder(layer, n)) and pattern.search(n)
             and not re.match(r"_*test", n, re.I)  # a test helper (test_pool_forward)
             and callable(getattr(layer, n, None))
             and not (pattern is _FORWARD and _BACKWARD.search(n))  # backforward()
             and _short_paired(layer, n)
             and not stub(layer, n, pattern is _FORWARD)  # a base class's stub; and beside
             and not (pattern is _BACKWARD and (_reads_forward(getattr(layer, n)) or
                          _NUMERIC.search(n)) and stub(layer, "backward", False))]  # one,
    # no numerical_backward (named so, or running forward()): a reference, no backward
    if private:
        return names
    if pattern is _FORWARD and callable(layer) and "__call__" in _own_methods(layer) and not (
            _base_stub(layer)):
        names.append("__call__")
    return names


def _own_dunder(layer: Any, name: str) -> bool:
    """A ``__name__`` method the layer's classes define that Python does not."""
    return name.endswith("__") and not _MANGLED.match(name) and name in _own_methods(
        layer) and not hasattr(object, name) and name not in ("__call__", "__init__")


def _reads_forward(method: Any) -> bool:
    """Whether a method's code calls a method named as a forward (``self.forward(x)``)."""
    code = getattr(getattr(method, "__func__", method), "__code__", None)
    return code is not None and any(
        i.opname in ("LOAD_ATTR", "LOAD_METHOD") and isinstance(i.argval, str) and (
            _FORWARD.search(i.argval) is not None) for i in dis.get_instructions(code))


def _base_stub(layer: Any) -> bool:
    """Whether ``forward`` does nothing and ``__call__`` comes from the class that defines
    it (the base class's dispatcher to the stub)."""
    f = getattr(type(layer), "forward", None)
    if f is None or not does_nothing(f):
        return False
    home = [c for c in type(layer).__mro__ if "forward" in vars(c)][0]
    return "__call__" in vars(home)


def _short_paired(layer: Any, name: str) -> bool:
    """A name read as a forward or backward by ``fp``/``bp`` alone only beside its
    counterpart (``fp`` with ``bp``): ``fp`` alone may be f-prime, a derivative."""
    if re.search(_FORWARD_LONG, name, re.I) or re.search(_BACKWARD_LONG, name, re.I):
        return True
    other = _SHORT.sub(lambda m: ("b" if m.group(1).lower() == "f" else "f") + "p", name)
    return other != name and callable(getattr(layer, other, None))


def _own_methods(layer: Any) -> set[str]:
    return {n for cls in type(layer).__mro__ if cls is not object for n in vars(cls)}


def _pairs(fwds: list[str], bwds: list[str]) -> list[tuple[str, str]]:
    """Pairs whose names differ only where one says forward and the other backward."""
    def stem(n: str, pat: re.Pattern[str]) -> str:
        return pat.sub("*", n.lower())

    return [(f, b) for f in fwds for b in bwds
            if f == "__call__" or stem(f, _FORWARD) == stem(b, _BACKWARD)]


def _named(layer: Any, forward: str | None, backward: str | None
           ) -> tuple[list[str], list[str]]:
    """The methods named as forwards and as backwards (the given ones as themselves);
    private ones (``_forwards``/``_backwards``) only when no public method reads as
    either and they make a pair (a private helper, ``_forward_linear`` beside a public
    ``propagate``, is no forward), or, beside public forwards only, the one private
    backward (``forward`` beside ``__backward__``)."""
    bwds = [backward] if backward is not None else _completed(layer, _methods(layer, _BACKWARD))
    fwds = [forward] if forward is not None else _methods(layer, _FORWARD)
    if fwds and not bwds and len(own := _methods(layer, _BACKWARD, True)) == 1:
        return fwds, own  # forward() beside __backward__(): the one backward there is
    if fwds or bwds:
        return fwds, bwds
    fwds, bwds = _methods(layer, _FORWARD, True), _methods(layer, _BACKWARD, True)
    return (fwds, bwds) if fwds and bwds else ([], [])


def _completed(layer: Any, bwds: list[str]) -> list[str]:
    """The backward-like methods less those that complete another one: named for
    gradients and taking as many arguments as it, two or more (``backward_update_gradient(
    input, delta)`` beside ``backward_delta(input, delta)``), tried after it as
    :func:`completing_methods` are."""
    def args(n: str) -> int:
        return len(positional_names(getattr(layer, n)) or [None] * 99)
    done = [b for b in bwds if "grad" in b.lower() and any(  # (input, delta) both
        o != b and "grad" not in o.lower() and args(b) == args(o) >= 2 for o in bwds)]
    return [b for b in bwds if b not in done]


def _forward_alone(layer: Any, fwds: list[str], bwds: list[str]) -> list[str]:
    """``["forward"]``, unless another forward-like method pairs by name with a backward
    (``forward_pass`` with ``backward_pass``) and ``forward`` with none of its own:
    which pair is meant is then an error."""
    rival = _pairs([m for m in fwds if m not in ("forward", "__call__")], bwds)
    own = {b for _, b in _pairs(["forward"], bwds)}  # (forward with backprop beside
    if rival and (not own or own & {b for _, b in rival}):  # timestep_forward with
        # timestep_backprop: the plain names pair; not forward_prop with that backprop)
        raise TypeError(f"{type(layer).__name__}: cannot tell its forward and backward "
                        f"methods apart (forward, or {rival[0][0]} paired by name with "
                        f"{rival[0][1]}); name them: check_layer(layer, x, forward='...', "
                        "backward='...')")
    return ["forward"]


def _unwrapped(layer: Any, fwds: list[str], bwds: list[str]) -> tuple[list[str], list[str]]:
    """``fwds`` less ``__call__`` when its code calls one of the others taking the same
    arguments (a model's ``__call__(inputs, is_optimizing)`` handing them to
    ``forward_propagation(inputs, is_optimizing)``; not one calling ``feed_forward(entry)``
    of its ``__call__(entry, memorize)``), and ``bwds``."""
    call = getattr(next((vars(c)["__call__"] for c in type(layer).__mro__
                         if "__call__" in vars(c)), None), "__code__", None)
    if "__call__" not in fwds or call is None:
        return fwds, bwds
    inner = [m for m in fwds if m != "__call__" and m in call.co_names and positional_names(
        getattr(layer, m)) == positional_names(layer.__call__)]
    return [m for m in fwds if m != "__call__"] if len(inner) == 1 else fwds, bwds


def _instead_note(called: bool, took: str | None, f: str, b: str, n: int) -> str:
    if called:
        return "forward() takes no input: the layer's own __call__ is read as the forward"
    return (f"forward() cannot take {n} input(s): {f}(), which can, is read as the forward"
            + (f", with {b}()" if b != "backward" else "")) if took else ""


def method_pair(layer: Any, forward: str | None, backward: str | None,
                inputs: tuple[Any, ...] = ()) -> tuple[str, str, str]:
    """The names of the forward and backward methods, and a note when they were found
    (not given and not ``forward``/``backward``): by their names, else by what they
    return (:func:`~._loss_pair.by_returns`)."""
    _not_a_class(layer)

    def has(n: str | None) -> bool:
        return n is not None and callable(getattr(layer, n, None))

    f = forward if forward is not None else "forward" if has("forward") else None
    called = forward is None and f == "forward" and bool(inputs) and _stub_beside_call(
        layer, len(inputs))  # a base class's forward(self): pass beside a real __call__(x)
    f = "__call__" if called else None if forward is None and f and stub(
        layer, "forward", True) else f  # a stub beside methods of other names (forloss)
    b = backward if backward is not None else "backward" if has("backward") and not (
        stub(layer, "backward", False) and _methods(layer, _BACKWARD)) else None  # abstract
    from ._takers import taking_instead, twin_of  # forward_sequence(xs) beside forward(x, h)
    f = (took := taking_instead(layer, forward, f, inputs)) or f
    b = twin_of(layer, took, backward) or b  # forward_sequence beside backward_sequence
    _given_exist(layer, forward, backward)
    if f is not None and b is not None:
        return f, b, _instead_note(called, took, f, b, len(inputs))
    fwds, bwds = _unwrapped(layer, *_named(layer, forward, b))
    if forward is None and f == "forward":  # forward() beside other forward-like methods
        fwds = _forward_alone(layer, fwds, bwds)
    pairs = [(x, y) for x, y in _pairs(fwds, bwds)] if len(fwds) > 1 or len(bwds) > 1 \
        else [(x, y) for x in fwds for y in bwds]
    if len(pairs) == 1:
        x, y = pairs[0]
        return x, y, f"methods found by their names: {x} (forward) and {y} (backward)"
    if backward is None and inputs and (forward is None or not bwds):
        by_returns = _loss_pair(layer, inputs, f)
        if by_returns is not None:
            x, y = by_returns
            how = ("taking no argument, after it ran" if positional_names(
                getattr(layer, y), required=True) == [] else "taking the same arguments")
            return x, y, (f"methods found by what they return: {x} a scalar or one per "
                          f"sample (the forward: a loss) and {y} an array of the first "
                          f"input's shape, or a number under a gradient's name (its "
                          f"gradient), {how}")
    from ._takers import one_missing  # (it reads methods as this module does)
    if inputs and (one := one_missing(layer, fwds, bwds, inputs)):
        return one
    if not fwds and inputs and (pair := _prefixed(layer, inputs, bwds)):
        return pair[0], pair[1], (f"methods found by their names: {pair[1]} is {pair[0]} "
                                  "with a prefix (propaga, retropropaga)")
    from ._takers import unnamed_pair
    if not fwds and not bwds and (unnamed := unnamed_pair(layer, inputs)):
        return unnamed
    if not fwds or not bwds:
        what = "forward" if not fwds else "backward"
        raise TypeError(f"{type(layer).__name__} has no {what}-like method (its methods: "
                        f"{', '.join(_public(layer)) or '(none)'}); name it: check_layer("
                        f"layer, x, {what}='...')")
    found = (f"forward-like {', '.join(fwds) or '(none)'}; backward-like "
             f"{', '.join(bwds) or '(none)'}")
    raise TypeError(f"{type(layer).__name__}: cannot tell its forward and backward methods "
                    f"apart ({found}); name them: check_layer(layer, x, forward='...', "
                    "backward='...')")


def _loss_pair(layer: Any, inputs: tuple[Any, ...], forward: str | None
               ) -> tuple[str, str] | None:
    from ._loss_pair import by_returns  # (it imports this module)
    return by_returns(layer, inputs, forward)


def _given_exist(layer: Any, forward: str | None, backward: str | None) -> None:
    """A ``TypeError`` for a method named by ``forward=`` or ``backward=`` that the layer
    does not have."""
    for given, what in ((forward, "forward"), (backward, "backward")):
        if given is not None and not callable(getattr(layer, given, None)):
            raise TypeError(f"{type(layer).__name__} has no method {given!r} (given as "
                            f"{what}=); its methods: {', '.join(_public(layer)) or '(none)'}")


def _stub_beside_call(layer: Any, n: int) -> bool:
    """Whether ``forward`` takes no argument (a base class's ``forward(self): pass``) and
    the layer's own ``__call__`` takes ``n``."""
    return positional_names(layer.forward) == [] and "__call__" in _own_methods(layer) and \
        takes(layer.__call__, n)


def _prefixed(layer: Any, inputs: tuple[Any, ...], bwds: list[str]
              ) -> tuple[str, str] | None:
    """The one pair of public methods of which the second's name is the first's with a
    prefix (``propaga``/``retropropaga``, ``prop``/``backprop`` in any language), the
    first taking the inputs and returning a float array, the second one of ``bwds``,
    the methods named as backwards, if any; None otherwise."""
    names = _public(layer)
    pairs = [(f, b) for f in names for b in names  # (not d_tanh for tanh: a derivative)
             if len(b) > len(f) >= 3 and b.lower().endswith(f.lower())
             and not _GRAD_AFFIX.fullmatch(b[:-len(f)])]
    pairs = [p for p in pairs if _returns_a_value(layer, p[0], inputs) and not _alike(
        layer, p, inputs)]  # not a wrapper returning what the other does (prime, mse_prime)
    if len(pairs) > 1:  # that raises, nor one named as a pair's with more (propagate and
        pairs = [(f, b) for f, b in pairs if not any(  # propagate_with_validation: the
            g != f and g in f and c in b for g, c in pairs)]  # core pair, not its wrapper)
    if len(pairs) != 1 or (bwds and pairs[0][1] not in bwds):
        return None
    f, b = pairs[0]  # no other method that reads as a backward (unpad beside gradient),
    others = [n for n in names if f not in n and b not in n and len(  # but its wrappers'
        positional_names(getattr(layer, n), required=True) or [None] * 99) == 1]
    from ._takers import linear_after
    return None if any(linear_after(layer, f, n, inputs) for n in others[:4]) else (f, b)


def _not_a_class(layer: Any) -> None:
    if isinstance(layer, type):
        methods = ", ".join(n for n in vars(layer) if not n.startswith("_")) or "(none)"
        raise TypeError(f"check_layer was given the class {layer.__name__}, not an object of "
                        f"it: pass an instance, {layer.__name__}(...); a class of static "
                        f"methods ({methods}) is checked as functions, e.g. check_loss("
                        "lambda a, y: (loss(a, y), gradient(a, y)), a, y)")


def _alike(layer: Any, pair: tuple[str, str], inputs: tuple[Any, ...]) -> bool:
    """Whether both methods of ``pair``, called on copies with the inputs, return the same
    (``prime`` wrapping ``mse_prime``: one method, not a forward and its backward)."""
    try:
        a, b = (getattr(clone(layer), n)(*clone(inputs)) for n in pair)
        return bool(np.shape(a) == np.shape(b) and np.array_equal(a, b))
    except Exception:  # noqa: BLE001 - the second takes other arguments: a pair
        return False


def _returns_a_value(layer: Any, name: str, inputs: tuple[Any, ...]) -> bool:
    """Whether ``name``, called on a copy with the inputs, returns a float array or
    scalar (a forward does; an ``update(lr)`` step does not)."""

    try:
        out = getattr(clone(layer), name)(*clone(inputs))
    except Exception:  # noqa: BLE001 - the user's method raised: not a forward of these
        return False
    return isinstance(out, (float, np.floating, np.ndarray)) and np.asarray(out).dtype.kind == "f"


#: Methods named for files, the screen or the network (``pickle(filename='c.pkl')``,
#: ``save``, ``plot``): never called to observe what a layer does.
IO_NAMED = re.compile(r"^_*(save|load|pickle|unpickle|dump|write|export|plot|show|print|"
                      r"display|download|upload|checkpoint|seriali[sz]e|visuali[sz]e|summary|"
                      r"to_file|from_file|to_disk|from_disk)", re.I)


def _public(layer: Any) -> list[str]:
    """The public methods, test helpers aside (``test_pool_forward`` may write files),
    and those named for files or the screen (:data:`IO_NAMED`)."""
    return [n for n in dir(type(layer)) if not n.startswith("_") and not n.lower().startswith(
        "test") and not IO_NAMED.match(n) and not _property(layer, n)
            and callable(getattr(layer, n, None))]


def _property(layer: Any, name: str) -> bool:
    """A property (one returning a function, ``activation_function_``, is no method)."""
    return isinstance(inspect.getattr_static(type(layer), name, None), property)


def _private(layer: Any) -> list[str]:
    """The methods named private (``_compute_gradients``), not dunders nor mangled."""
    return [n for n in dir(type(layer)) if n.startswith("_") and not n.startswith("__")
            and not _MANGLED.match(n) and not IO_NAMED.match(n)
            and callable(getattr(layer, n, None))]


def takes(method: Any, n: int) -> bool:
    """Whether ``method`` can take ``n`` positional arguments (True when unreadable)."""
    every, req = positional_names(method), positional_names(method, True)
    return every is None or req is None or len(req) <= n <= len(every)


def positional_names(method: Any, required: bool = False) -> list[str] | None:
    """The names of a callable's positional parameters (``self`` left out for a bound
    method; with ``required``, those without a default), or None when they cannot be
    read or it takes ``*args``."""
    try:
        ps = list(inspect.signature(method).parameters.values())
    except (TypeError, ValueError):
        return None
    if any(p.kind is p.VAR_POSITIONAL for p in ps):
        return None
    return [p.name for p in ps if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)
            and not (required and p.default is not p.empty)]


def default_of(method: Any, name: str) -> Any:
    """The default of ``method``'s parameter ``name`` (``inspect.Parameter.empty``: none,
    or the signature cannot be read)."""
    try:
        return inspect.signature(method).parameters[name].default
    except (TypeError, ValueError, KeyError):
        return inspect.Parameter.empty


# -- what a call stored ----------------------------------------------------------------------
def float_state(obj: Any) -> dict[str, tuple[int, np.ndarray]]:
    """path -> (identity, copy) of every float array reachable from ``obj``."""
    return {p: (id(v), v.copy()) for p, v in walk(obj) if is_float_array(v)}


def stored(before: dict[str, tuple[int, np.ndarray]], obj: Any,
           exclude: tuple[Any, ...] = (), copies: bool = True) -> dict[str, np.ndarray]:
    """The float arrays reachable from ``obj`` that a call created, rebound or changed
    in place since ``before`` (:func:`float_state`), leaving out the objects in
    ``exclude`` (the inputs the call was given and kept) and, with ``copies``, arrays
    created equal to one of them (a copy kept for the backward) and arrays rebound to
    the values they held (a backward running the forward again)."""
    out: dict[str, np.ndarray] = {}
    kept = [x for x in exclude if isinstance(x, np.ndarray)]
    for p, v in walk(obj):
        if not is_float_array(v) or any(v is x for x in kept):
            continue
        old = before.get(p)
        if old is not None and (old[0] == id(v) or copies and not _grad_named(p)) and \
                old[1].shape == v.shape and np.array_equal(old[1], v, equal_nan=True):
            continue  # (with copies, also rebound to what it held: the forward run again;
            # not one named as a gradient, self.dx, which the forward may compute too)
        if copies and old is None and any(
                x.shape == v.shape and np.array_equal(x, v) for x in kept):
            continue  # a copy of an input, kept for the backward
        out[p] = v
    return out


def _grad_named(path: str) -> bool:
    """Whether the attribute or item at ``path`` is named as a gradient (``dx``,
    ``grads['W']``, ``W_grad``)."""
    name = last_name(path) or path
    return grad_stem(name) != name.lower().lstrip("_") or grads_holder(
        last_name(parent_of(path)) or "")


# -- which gradient is which -------------------------------------------------------------------
def parent_of(path: str) -> str:
    """The path of the object holding the attribute or item at ``path``."""
    cut = max(path.rfind("."), path.rfind("["))
    return path[:cut] if cut > 0 else ""


def forward_named(name: str) -> bool:
    """Whether ``name`` reads as a forward's (``forward``, ``_forward_prop``)."""
    return bool(_FORWARD.search(name))


def backward_named(name: str) -> bool:
    """Whether ``name`` reads as a backward's (``backward_update_gradient``)."""
    return bool(_BACKWARD.search(name))


def grads_holder(name: str) -> bool:
    """Whether ``name`` is a container named for gradients (``grads``, ``gradients``)."""
    return bool(name) and not _GRAD_AFFIX.sub("", name.lstrip("_"))


def unmangled(path: str) -> str:
    """``path`` with each private name as the source spells it (``_Dense__w`` -> ``w``)."""
    return ".".join(_MANGLED.sub("", part) for part in path.split("."))


def last_name(path: str) -> str:
    """The name of the attribute or key at the end of ``path``."""
    return re.split(r"[.\[\]'\"]+", path.strip("]'\""))[-1]


def same_but_unit(a: tuple[int, ...], b: tuple[int, ...]) -> bool:
    """Whether a gradient of shape ``a`` differs from its array's ``b`` by axes of size 1
    only, and an update keeps the array's values in place: it broadcasts to ``b``
    (``(3,)`` for ``(1, 3)``) or only adds leading axes (``(1, 3)`` for ``(3,)``, see
    :func:`adds_leading`); not ``(3, 1)`` for ``(1, 3)``, which would widen it to
    ``(3, 3)``."""
    if tuple(d for d in a if d != 1) != tuple(d for d in b if d != 1):
        return False
    if adds_leading(a, b):
        return True
    try:
        return np.broadcast_shapes(a, b) == tuple(b)
    except ValueError:
        return False


def adds_leading(a: tuple[int, ...], b: tuple[int, ...]) -> bool:
    """Whether shape ``a`` is ``b`` with leading axes of length 1 put in front
    (``(1, 6)`` for ``(6,)``): ``b - lr * g`` holds the same values, in shape ``a``."""
    a, b = tuple(a), tuple(b)
    return len(a) > len(b) and a[len(a) - len(b):] == b and set(a[:len(a) - len(b)]) == {1}


def unit_note(name: str, a: tuple[int, ...], b: tuple[int, ...]) -> str:
    """The note for a gradient of shape ``a`` compared with its array's ``b`` after a
    reshape (:func:`same_but_unit`)."""
    head = (f"the gradient of {name} has shape {tuple(a)}, {name} has {tuple(b)}: compared "
            "after reshaping (they differ by size-1 axes only")
    if adds_leading(a, b):
        return (head + f"; an in-place update of {name} by it raises, and "
                f"`{name} = {name} - lr * grad` makes {name} of shape {tuple(a)})")
    return head + ", and it broadcasts in an update)"


def items_off(path: str) -> str:
    """``path`` less the items it ends with (``grads[1]``: ``grads``)."""
    return _INDEX_TAIL.sub("", path)


def grad_stem(name: str) -> str:
    """A stored name less its gradient affix, in lower case (``b_grad``: ``b``)."""
    return _GRAD_AFFIX.sub("", name.lstrip("_")).lower()


def grad_of(param_path: str, shape: tuple[int, ...], candidates: dict[str, np.ndarray]
            ) -> str | None:
    """The candidate named as the gradient of the array at ``param_path`` (``dW``,
    ``d_W``, ``grad_W``, ``W_grad``, ``dweights`` for ``weights``) whose shape fits."""
    name = _MANGLED.sub("", last_name(param_path))  # self.__w: _Dense__w, named w
    name = name.lower().lstrip("_")  # private names: _dW for _W
    tail = _INDEX_TAIL.search(param_path)
    for path, g in candidates.items():
        own = last_name(path).lstrip("_")
        if not same_but_unit(g.shape, shape):
            continue
        if tail and path.endswith(tail.group()) and path != param_path:
            # the same item of a list named as the gradients': dWq[0] for Wq[0]
            mine, theirs = param_path[:tail.start()], path[:len(path) - len(tail.group())]
            if last_name(mine) and _GRAD_AFFIX.sub("", last_name(theirs).lstrip("_")).lower() == \
                    last_name(mine).lower().lstrip("_") and parent_of(mine) == parent_of(theirs):
                return path
        if own.lower() == name:  # grads['W'] for W: the key in a container of gradients
            holder = last_name(path[:max(path.rfind("["), 0)] or "x")
            if _GRAD_AFFIX.sub("", holder).lower() in ("", "s") and path != param_path and (
                    not param_path.endswith("]") or own == last_name(param_path).lstrip("_")):
                return path  # (params['W'] beside grads['w']: a loop reading grads['W'] finds
            continue  # none: a case slip, no pairing)
        if _GRAD_AFFIX.sub("", own).lower() == name:
            return path
    return None
