"""Calling the user's code under the protocol: structure, mutation, errors.

The user's forward and backward are called only through this module. It flattens
structured inputs and outputs (tuples, lists and dicts of arrays, nested) into named
leaves and rebuilds them; takes snapshots of everything a call could modify (arrays in
containers, dataclasses and the attributes of objects, such as a layer instance held in
a cache) to detect mutation; and turns an exception raised by the user's code into a
:class:`UserCodeError` that names the innermost frame of that code.
"""

from __future__ import annotations

import contextlib
import copy
import copyreg
import inspect
import os
import random
import sys
import traceback
from collections.abc import Iterator
from dataclasses import dataclass, fields, is_dataclass
from typing import Any, TypeVar

import numpy as np

__all__ = ["GlobalDraws", "ProtocolError", "Tree", "UserCodeError", "call_user", "clone",
           "defined_at", "key_mismatch", "map_arrays", "same", "snapshot"]


def map_arrays(x: Any, fn: Any) -> Any:
    """``x`` with ``fn`` applied to every ndarray in it, tuples, lists and dicts kept."""
    if isinstance(x, np.ndarray):
        return fn(x)
    if isinstance(x, (tuple, list)):
        return type(x)(map_arrays(v, fn) for v in x)
    if isinstance(x, dict):
        return {k: map_arrays(v, fn) for k, v in x.items()}
    return x


_DEPTH = 6
_T = TypeVar("_T")
_OWN_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # the package
_LIB_DIRS = tuple(os.path.dirname(os.path.abspath(m.__file__ or ""))
                  for m in (np, __import__("scipy")))


class GlobalDraws:
    """State outside the objects a check is given, as it was when the check began: the
    global generators (``np.random``, ``random``) and the mutable attributes of ``cls``
    itself (a class-level ``ctx = {}`` that every instance's forward writes). Every
    forward starts from it (a dropout mask drawn from ``np.random`` is the same in every
    evaluation), and the user's state is put back at the end."""

    def __init__(self, cls: type | None = None) -> None:
        self.np_state = np.random.get_state()  # noqa: NPY002 - the user's global state
        self.py_state = random.getstate()
        self.owners = _class_mutables(cls) if cls is not None else []
        self.shared = self.now()
        self.originals = [vars(owner)[name] for owner, name in self.owners]
        self.items = [copy.copy(o) for o in self.originals]  # what they held, by identity
        #: Whether the code draws from the global generators (None: not seen yet); one
        #: that does not is not reset before every call (a reset costs microseconds).
        self.drawn: bool | None = None

    def seen(self) -> None:
        """After the first call: whether it drew from the global generators."""
        if self.drawn is None:
            now: Any = np.random.get_state()  # noqa: NPY002
            start: Any = self.np_state
            self.drawn = now[2] != start[2] or not np.array_equal(
                now[1], start[1]) or random.getstate() != self.py_state

    def taken(self) -> Any:
        """The generators' state after a forward that draws from them (None otherwise):
        its backward starts from it on every call, so a backward drawing a mask of its own
        draws the same one each time, and not the forward's."""
        return (np.random.get_state(), random.getstate()) if self.drawn else None  # noqa: NPY002

    @staticmethod
    def resume(state: Any) -> None:
        """Before a backward: the generators as its forward left them (:meth:`taken`)."""
        if state is not None:
            np.random.set_state(state[0])  # noqa: NPY002
            random.setstate(state[1])

    def now(self) -> list[Any]:
        """A copy of the class-level mutable attributes as they are now."""
        return [copy.deepcopy(vars(owner)[name]) for owner, name in self.owners]

    def put(self, shared: list[Any]) -> None:
        for (owner, name), value in zip(self.owners, shared, strict=True):
            setattr(owner, name, copy.deepcopy(value))

    def reset(self) -> None:
        """Before a call: the state the check began with (the generators only if the
        code draws from them)."""
        if self.drawn is not False:
            self.restore()
        elif self.owners:
            self.put(self.shared)

    def restore(self) -> None:
        """The state the check began with, all of it (after the check)."""
        np.random.set_state(self.np_state)  # noqa: NPY002
        random.setstate(self.py_state)
        for (owner, name), obj, items, value in zip(self.owners, self.originals, self.items,
                                                    self.shared, strict=True):
            _refill(obj, items, value)  # the user's own objects, as they were
            setattr(owner, name, obj)


def _refill(obj: Any, items: Any, value: Any) -> None:
    """``obj`` (a dict, list, set or array) holding ``items`` again, the objects it held
    (a model's layers, which an optimizer holds too), and the arrays among them, and
    itself, holding ``value``'s numbers."""
    if isinstance(obj, dict | list | set):
        keys = list(items) if isinstance(obj, dict) else range(len(items)) if isinstance(
            obj, list) else []
        if isinstance(obj, list):
            obj[:] = items
        else:
            obj.clear()
            obj.update(items)
        for k in keys:  # (arrays written into in place: their numbers back)
            if isinstance(items[k], np.ndarray) and isinstance(value, dict | list) and (
                    k in value if isinstance(value, dict) else k < len(value)):
                _refill(items[k], None, value[k])
    elif isinstance(obj, np.ndarray) and obj.shape == np.shape(value) and obj.flags.writeable:
        np.copyto(obj, value)


def _class_mutables(cls: type) -> list[tuple[type, str]]:
    """(defining class, name) of the dicts, lists, sets and arrays held by ``cls`` and
    its bases (``object`` and builtins aside)."""
    out: list[tuple[type, str]] = []
    seen: set[str] = set()
    for owner in cls.__mro__:
        if owner.__module__ == "builtins":
            continue
        for name, value in vars(owner).items():
            if name not in seen and not name.startswith("__") and isinstance(
                    value, (dict, list, set, np.ndarray)):
                out.append((owner, name))
            seen.add(name)
    return out


class ProtocolError(Exception):
    """A forward or backward broke the protocol; carries the status to report, and for a
    gradient of the wrong shape, ``at``: the name and the array it belongs to (the
    result lists it)."""

    def __init__(self, status: str, message: str, *, at: tuple[str, Any] | None = None
                 ) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.at = at


def clone(obj: _T) -> _T:
    """A deep copy of ``obj`` in which modules stay themselves (a layer holding
    ``self.xp = np`` to run on NumPy or CuPy): a module cannot be copied and holds no
    state of the layer. Anything else that cannot be copied is a ``bad-protocol`` that
    names it, since every evaluation runs on a copy."""
    memo: dict[int, Any] = {}
    try:
        return _with_attributes(copy.deepcopy(obj, memo), memo)
    except Exception:  # a module, or what cannot be copied: said below
        memo = {id(m): m for m in list(sys.modules.values()) if m is not None}
        try:
            with _by_their_dicts(_answering_all(obj)):
                return _with_attributes(copy.deepcopy(obj, memo), memo)
        except Exception as exc:
            raise ProtocolError("bad-protocol", f"{type(obj).__name__} holds an object that "
                                f"cannot be copied ({type(exc).__name__}: {exc}); every "
                                "evaluation runs on a copy, so that none leaks into the "
                                "next: keep such objects outside the layer") from None


def _answering_all(obj: Any) -> set[type]:
    """The classes of ``obj`` and what it holds whose ``__getattr__`` answers every name
    (``None`` for a missing one), so that copying calls the ``__setstate__`` it seems to
    have."""
    from ._discovery import walk  # (it imports this module)

    return {type(v) for v in [obj, *(v for _, v in walk(obj))] if _none_for_missing(v)}


def _none_for_missing(o: Any) -> bool:
    """Whether ``o``'s class answers a name it lacks (``__setstate__``) with None."""
    hook = getattr(type(o), "__getattr__", None)
    if hook is None or hasattr(type(o), "__setstate__") or any(
            "__slots__" in vars(c) for c in type(o).__mro__):  # slots: not in its __dict__
        return False
    try:
        return hook(o, "__setstate__") is None
    except Exception:  # noqa: BLE001 - it raises for a missing name, as it should
        return False


def _rebuilt(cls: Any, state: dict[str, Any]) -> Any:
    new = cls.__new__(cls)
    new.__dict__.update(state)
    return new


@contextlib.contextmanager
def _by_their_dicts(classes: set[type]) -> Iterator[None]:
    """Within it, objects of ``classes`` are deep-copied by their ``__dict__`` alone."""
    saved = {c: copyreg.dispatch_table[c] for c in classes if c in copyreg.dispatch_table}
    try:
        for c in classes:
            copyreg.dispatch_table[c] = lambda o: (_rebuilt, (type(o), vars(o)))
        yield
    finally:
        for c in classes:
            copyreg.dispatch_table.pop(c, None)
        copyreg.dispatch_table.update(saved)


def _with_attributes(copied: _T, memo: dict[int, Any]) -> _T:
    """``copied`` with the attributes of the array subclasses in it copied too (NumPy's
    deep copy of a ``Param(np.ndarray)`` drops its ``.gradient`` and ``.trainable``)."""
    for orig in list(memo.get(id(memo), ())):
        if isinstance(orig, np.ndarray) and type(orig) is not np.ndarray and \
                getattr(orig, "__dict__", None):
            twin = memo.get(id(orig))
            if twin is not None and twin is not orig and hasattr(twin, "__dict__"):
                lost = {k: v for k, v in vars(orig).items() if k not in vars(twin)}
                vars(twin).update(copy.deepcopy(lost, memo))  # __array_finalize__ may set
                # some (.tag): the others are copied all the same
    return copied


class AmbiguousReading(ProtocolError):
    """A backward's argument that may take any of several things (a loss's prediction:
    the forward's input, or an array the forward stored of its shape): ``readings`` lists
    them, an input's position or a stored array's path, for the check to try each."""

    def __init__(self, message: str, readings: list[int | str]) -> None:
        super().__init__("bad-protocol", message)
        self.readings = readings


class OutputChoice(ProtocolError):
    """A forward returning nothing that stored several arrays, any of which may be its
    output: ``paths`` lists them, for the check to try each."""

    def __init__(self, message: str, paths: list[str]) -> None:
        super().__init__("bad-protocol", message)
        self.paths = paths


class UserCodeError(Exception):
    """The user's forward or backward raised; ``where`` names its innermost frame."""

    def __init__(self, what: str, exc: BaseException) -> None:
        self.what = what
        self.exc = exc
        self.where = innermost_user_frame(exc)
        # Raised by gradcheck's own adapter around the user's code (no frame of the
        # user's was entered): a wrong signature, or a rejected return value.
        self.ours = all(f.filename.startswith(_OWN_DIR)
                        for f in traceback.extract_tb(exc.__traceback__))
        self.type = type(exc).__name__
        self.text = str(exc)
        self.advice = ""  # what was observed around the call, and what fixes it
        super().__init__(f"{what} raised {self.type}: {self.text}"
                         + (f" (at {self.where})" if self.where else ""))

    def as_dict(self) -> dict[str, str]:
        return {"in": self.what, "type": self.type, "message": self.text, "where": self.where}


def innermost_user_frame(exc: BaseException) -> str:
    """``file:line in function`` of the last frame outside gradcheck, NumPy and SciPy
    (else outside gradcheck); ``""`` when every frame is gradcheck's own (the user's
    function was never entered: a call with the wrong signature)."""
    frames = traceback.extract_tb(exc.__traceback__)
    outside = [f for f in frames if not f.filename.startswith((_OWN_DIR, *_LIB_DIRS))]
    chosen = outside or [f for f in frames if not f.filename.startswith(_OWN_DIR)]
    if not chosen:
        return ""
    f = chosen[-1]
    line = f" `{f.line.strip()}`" if f.line else ""
    return f"{f.filename}:{f.lineno} in {f.name}{line}"


def defined_at(fn: Any) -> str:
    """``file:line in name`` where the user's callable ``fn`` is defined (``""`` if unknown)."""
    target = inspect.unwrap(getattr(fn, "__func__", fn))
    if not inspect.isroutine(target) and callable(target):  # an object with __call__
        target = type(target).__call__
    code = getattr(target, "__code__", None)
    if code is None:
        return ""
    return f"{code.co_filename}:{code.co_firstlineno} in {code.co_name}"


def call_user(fn: Any, *args: Any, what: str, **kwargs: Any) -> Any:
    """``fn(*args, **kwargs)``; an exception, or ``exit()`` in the user's code (a
    ``SystemExit``), becomes a :class:`UserCodeError` (Ctrl-C stays Ctrl-C)."""
    try:
        return fn(*args, **kwargs)
    except (UserCodeError, ProtocolError):
        raise
    except (Exception, SystemExit) as exc:
        raise UserCodeError(what, exc) from exc


# -- snapshots and mutation ---------------------------------------------------------------
def _attributes(obj: Any) -> dict[str, Any] | None:
    """The data attributes of a plain object (instance ``__dict__``), if it has any."""
    d = getattr(obj, "__dict__", None)
    if not isinstance(d, dict) or isinstance(obj, type):
        return None
    return {k: v for k, v in d.items() if not callable(v) or isinstance(v, np.ndarray)}


def snapshot(obj: Any, depth: int = 0, seen: set[int] | None = None) -> Any:
    """Copy every ndarray reachable in ``obj``: containers, dataclasses, attributes."""
    seen = set() if seen is None else seen
    if depth > _DEPTH or id(obj) in seen:
        return None
    if isinstance(obj, np.ndarray) and obj.dtype == object:  # np.array([W1, W2], object)
        return [snapshot(o, depth + 1, seen) for o in obj.ravel()]
    if isinstance(obj, np.ndarray):
        return obj.copy()
    if isinstance(obj, (str, bytes, int, float, complex, bool)) or obj is None:
        return None
    seen.add(id(obj))
    if isinstance(obj, (list, tuple)):
        return [snapshot(o, depth + 1, seen) for o in obj]
    if isinstance(obj, dict):
        return {k: snapshot(v, depth + 1, seen) for k, v in obj.items()}
    if is_dataclass(obj) and not isinstance(obj, type):
        return _Attrs({f.name: snapshot(getattr(obj, f.name), depth + 1, seen)
                       for f in fields(obj)})
    attrs = _attributes(obj)
    if attrs:
        return _Attrs({k: snapshot(v, depth + 1, seen) for k, v in attrs.items()})
    return None


class _Attrs(dict[str, Any]):
    """A snapshot of an object's attributes (compared with ``getattr``)."""


def same(a: Any, b: Any) -> bool:
    """Whether ``b`` (current) still equals snapshot ``a`` bit for bit (NaNs equal)."""
    return not changed_at(a, b)


def changed_at(a: Any, b: Any, path: str = "") -> str | None:
    """Where ``b`` differs from snapshot ``a`` (a path such as ``.layer.cache[0]``)."""
    if a is None:
        return None
    if isinstance(a, np.ndarray):
        if not isinstance(b, np.ndarray) or a.shape != b.shape:
            return path or "(the array itself)"
        # One pass for the usual case (equal, no NaN); NaN-aware only when that fails.
        ok = bool(np.array_equal(a, b)) or (
            a.dtype.kind in "fc" and bool(np.array_equal(a, b, equal_nan=True)))
        return None if ok else (path or "(the array itself)")
    if isinstance(a, list) and isinstance(b, np.ndarray) and b.dtype == object:
        b = list(b.ravel())
    if isinstance(a, list):
        if not isinstance(b, (list, tuple)) or len(a) != len(b):
            return path or "(the container)"
        for i, (x, y) in enumerate(zip(a, b, strict=True)):
            where = changed_at(x, y, f"{path}[{i}]")
            if where:
                return where
        return None
    if isinstance(a, _Attrs):
        for name, v in a.items():
            where = changed_at(v, getattr(b, name, None), f"{path}.{name}")
            if where:
                return where
        return None
    if isinstance(a, dict):
        if not isinstance(b, dict):
            return path or "(the container)"
        for k, v in a.items():
            where = changed_at(v, b.get(k), f"{path}[{k!r}]")
            if where:
                return where
    return None


# -- structured inputs and outputs --------------------------------------------------------
@dataclass(frozen=True)
class Tree:
    """The shape of a nested tuple/list/dict with array leaves, and the leaves' names."""

    skeleton: Any  # the structure with each leaf replaced by its index
    names: tuple[str, ...]

    @staticmethod
    def of(obj: Any, top_names: list[str] | None = None) -> tuple[Tree, list[Any]]:
        """Flatten ``obj``; ``top_names`` name the top-level entries (else ``[k]``)."""
        leaves: list[Any] = []
        names: list[str] = []

        def walk(o: Any, name: str) -> Any:
            if isinstance(o, (list, tuple)) and not _is_namedtuple(o):
                parts = [walk(v, f"{name}[{k}]") for k, v in enumerate(o)]
                return tuple(parts) if isinstance(o, tuple) else parts
            if isinstance(o, dict):
                return {k: walk(v, f"{name}[{k!r}]") for k, v in o.items()}
            leaves.append(o)
            names.append(name)
            return len(leaves) - 1

        if top_names is not None and isinstance(obj, (list, tuple, dict)):
            keys = list(obj) if isinstance(obj, dict) else range(len(obj))
            parts = {k: walk(obj[k], n) for k, n in zip(keys, top_names, strict=True)}
            skeleton: Any = parts if isinstance(obj, dict) else [parts[k] for k in keys]
        else:
            skeleton = walk(obj, "")
        return Tree(skeleton, tuple(names)), leaves

    def build(self, leaves: list[Any]) -> Any:
        """The structure with its leaves replaced by ``leaves`` (in flattening order)."""

        def fill(s: Any) -> Any:
            if isinstance(s, int):
                return leaves[s]
            if isinstance(s, tuple):
                return tuple(fill(v) for v in s)
            if isinstance(s, list):
                return [fill(v) for v in s]
            return {k: fill(v) for k, v in s.items()}

        return fill(self.skeleton)

    def match(self, other: Any, what: str, stacked: list[str] | None = None,
              shapes: list[tuple[int, ...]] | None = None) -> list[Any]:
        """The leaves of ``other``, which must have this structure; ``None`` for a whole
        missing (``None``) sub-structure. A sequence of arrays may come as one array
        stacked along its first axis (``np.sum(list_of_tuples, axis=0)``), each part of
        the shape ``shapes`` gives its leaf: split, its name added to ``stacked``."""
        out: list[Any] = [None] * len(self.names)

        def walk(s: Any, o: Any, name: str) -> None:
            if isinstance(s, int):
                out[s] = o
                return
            if o is None:
                return
            if isinstance(s, (list, tuple)) and isinstance(o, np.ndarray) and o.ndim > 1 \
                    and len(o) == len(s) and stacked is not None and shapes is not None \
                    and all(isinstance(v, int) and shapes[v] == o.shape[1:] for v in s):
                stacked.append(name)
                o = list(o)
            if isinstance(s, (list, tuple)) and isinstance(o, dict) and set(o) == set(
                    range(len(s))):  # {0: dx_0, 1: dx_1} for a list input: by its places
                o = [o[k] for k in range(len(s))]
            if isinstance(s, (list, tuple)):
                if not isinstance(o, (list, tuple)) or len(o) != len(s):
                    got = f"{type(o).__name__} of {len(o)}" if isinstance(o, (list, tuple)) \
                        else type(o).__name__
                    raise ProtocolError("shape-mismatch", f"{what}{name}: expected a sequence of "
                                        f"{len(s)}, got {got}")
                for k, (ss, oo) in enumerate(zip(s, o, strict=True)):
                    walk(ss, oo, f"{name}[{k}]")
                return
            if not isinstance(o, dict) or set(o) - set(s):
                raise ProtocolError("bad-protocol", f"{what}{name}: " + key_mismatch(s, o))
            for k, ss in s.items():
                walk(ss, o.get(k), f"{name}[{k!r}]")

        walk(self.skeleton, other, "")
        return out


def key_mismatch(expected: Any, got: Any) -> str:
    """``expected a dict with keys [...], got keys [...] (unexpected [...])``."""
    want = sorted(map(str, expected))
    if not isinstance(got, dict):
        return f"expected a dict with keys {want}, got {type(got).__name__}"
    extra = sorted(map(str, set(got) - set(expected)))
    return (f"expected a dict with keys {want} (a subset), got keys "
            f"{sorted(map(str, got))}: unexpected {extra}")


def _is_namedtuple(o: Any) -> bool:
    return isinstance(o, tuple) and hasattr(o, "_fields")
