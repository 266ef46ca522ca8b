"""Gradients a backward keeps nowhere on the layer: handed to an object it holds, or
attached to the parameter array itself.

- **Handed**: a backward that updates its own weights (``self.W =
  self.W_opt.update(self.W, grad_w)``) stores no gradient, but it hands one to a method
  of an object it holds, beside the parameter itself. :func:`find_handed` records the
  calls of every method of the objects the layer holds while one backward runs, and
  reads as the gradient of a parameter the one float array of its shape passed in the
  same call as the parameter (when there are several, the one the layer did not hold
  before: moments it keeps are passed too); :func:`listen` records the same calls in every later
  backward, so that each evaluation reads its own.
- **Attached**: a parameter kept in an ndarray subclass with a gradient attribute
  (``self.W.grad = ...``): :func:`attached` names the float array attribute of the
  parameter that the backward set.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from ._discovery import get_path, is_float_array, try_path, walk
from ._observe import same_but_unit

__all__ = ["Handed", "attached", "find_handed", "held_objects", "listen", "received"]

Log = dict[tuple[str, str], list[tuple[Any, ...]]]


@dataclass(frozen=True)
class Handed:
    """The gradient of a parameter: argument ``arg`` of call ``call`` of ``owner.method``."""

    owner: str
    method: str
    call: int
    arg: int
    item: int | None = None  # its place in a list or tuple argument (update([W, b], [dW, db]))

    def read(self, log: Log) -> Any:
        calls = log.get((self.owner, self.method), [])
        if self.call >= len(calls):
            return None
        value = calls[self.call][self.arg]
        if self.item is not None:
            value = value[self.item]
        return np.array(value, copy=True)


def _user_object(v: Any) -> bool:
    mod = type(v).__module__ or ""
    return hasattr(v, "__dict__") and not isinstance(v, (type, np.ndarray)) and not (
        mod == "builtins" or mod.split(".")[0] in ("numpy", "scipy", "gradcheck"))


def held_objects(layer: Any) -> set[str]:
    """Paths of the user objects ``layer`` holds (an optimizer, a sub-layer)."""
    return {p for p, v in walk(layer) if _user_object(v)}


def _methods(obj: Any) -> list[str]:
    return [n for n in dir(type(obj)) if not n.startswith("__")
            and callable(getattr(type(obj), n, None)) and callable(getattr(obj, n, None))]


def listen(layer: Any, owners: dict[str, list[str]]) -> Log:
    """Record every call of ``owner.method`` (paths in ``layer``) from now on."""
    log: Log = {}
    for path, names in owners.items():
        try:
            obj = get_path(layer, path)
        except (AttributeError, KeyError, IndexError, TypeError):
            continue
        depth = [0]  # its calls in progress: those its own methods make inside are not
        for name in names:  # the layer's (a sub-layer's calls of an optimizer are)
            calls: list[tuple[Any, ...]] = []
            log[(path, name)] = calls
            setattr(obj, name, _recorder(getattr(obj, name), calls, depth))
    return log


def _recorder(method: Callable[..., Any], calls: list[tuple[Any, ...]], depth: list[int]
              ) -> Callable[..., Any]:
    """``method``, recording the arguments of the calls the layer makes (not those its
    object makes inside another of its recorded calls: an optimizer's
    ``calculate_update(W, g)`` handing ``apply_regularization(W - lr * g, W)`` the
    stepped weights)."""
    def record(*args: Any, **kwargs: Any) -> Any:
        if not depth[0]:
            calls.append(args + tuple(kwargs.values()))
        depth[0] += 1
        try:
            return method(*args, **kwargs)
        finally:
            depth[0] -= 1
    return record


def received(layer: Any, xs: list[Any], backward: Callable[[Any, list[Any]], Any]) -> set[str]:
    """Paths of the arrays the sub-objects of ``layer`` keep after ``backward(layer,
    xs)`` that are the very arrays one of their methods was given in it while it
    returned another (``self.d_input = d_input; return self.d_output``: the gradient a
    sub-layer received, not the one it computed; an identity's ``self.dinputs =
    dvalues``, returning nothing or that array, is its own)."""
    owners = {p: _methods(v) for p, v in walk(layer) if _user_object(v)}
    if not owners:
        return set()
    calls: list[tuple[tuple[Any, ...], Any]] = []
    for path, names in owners.items():
        obj = get_path(layer, path)
        for name in names:
            setattr(obj, name, _returning(getattr(obj, name), calls))
    try:
        backward(layer, xs)
    except Exception:  # noqa: BLE001 - called otherwise than the reading found: no evidence
        return set()
    given = {id(a) for args, got in calls for a in args if isinstance(a, np.ndarray) and
             isinstance(got, np.ndarray) and got is not a}  # (kept alive: ids are unique)
    return {p for p, v in walk(layer) if is_float_array(v) and id(v) in given and
            any(p.startswith(o) and p != o for o in owners)}


def _returning(method: Callable[..., Any], calls: list[tuple[tuple[Any, ...], Any]]
               ) -> Callable[..., Any]:
    def record(*args: Any, **kwargs: Any) -> Any:
        got = method(*args, **kwargs)
        calls.append((args + tuple(kwargs.values()), got))
        return got
    return record


def find_handed(layer: Any, xs: list[Any], missing: list[str],
                backward: Callable[[Any, list[Any]], Any]) -> dict[str, Handed]:
    """``param path -> Handed`` for the parameters in ``missing`` whose gradient
    ``backward(layer, xs)`` hands to a method of an object ``layer`` holds."""
    owners = {p: _methods(v) for p, v in walk(layer) if _user_object(v)}
    if not owners:
        return {}
    params = {p: get_path(layer, p) for p in missing}
    kept = {id(v) for _, v in walk(layer) if is_float_array(v)}  # moments, not gradients
    log = listen(layer, owners)
    backward(layer, xs)
    found: dict[str, Handed] = {}
    held = list(params.values())
    for (owner, method), calls in log.items():
        for i, args in enumerate(calls):
            flat = _flat(args)
            for path, a in params.items():
                at = next((w for w, x in flat if x is a), None)
                if path in found or at is None:
                    continue
                fits = [w for w, x in flat if is_float_array(x) and same_but_unit(
                    x.shape, a.shape) and not any(x is h for h in held)]
                if len(fits) > 1 and at[1] is not None:  # lists side by side: same place
                    fits = [w for w in fits if w[1] == at[1]]
                if len(fits) > 1:  # beside moments the layer held before: the new one
                    fits = [w for w in fits if id(dict(flat)[w]) not in kept] or fits
                if len(fits) == 1:
                    found[path] = Handed(owner, method, i, fits[0][0], fits[0][1])
    return found


def _flat(args: tuple[Any, ...]) -> list[tuple[tuple[int, int | None], Any]]:
    """A call's arguments, and the items of its list and tuple arguments, each with its
    place: ``((argument, item or None), value)``."""
    out: list[tuple[tuple[int, int | None], Any]] = []
    for j, x in enumerate(args):
        out.append(((j, None), x))
        if isinstance(x, (list, tuple)):
            out += [((j, k), v) for k, v in enumerate(x[:64])]
    return out


def attached(after: Any, missing: list[str], before: Any) -> dict[str, str]:
    """``param path -> path of its gradient`` for parameters whose array carries the
    gradient as an attribute (an ndarray subclass's ``.grad``) that the backward set."""
    out: dict[str, str] = {}
    for path in missing:
        try:
            a = get_path(after, path)
        except (AttributeError, KeyError, IndexError, TypeError):
            continue
        own = getattr(a, "__dict__", None)
        old = getattr(try_path(before, path), "__dict__", None) or {}
        if not isinstance(own, dict):
            continue
        fits = [k for k, v in own.items() if is_float_array(v) and same_but_unit(
            v.shape, a.shape) and not (k in old and old[k] is v)]
        if len(fits) == 1:
            out[path] = f"{path}.{fits[0]}"
    return out
