"""A model whose parameters are objects holding a value and a gradient, read by what one
of its methods does (dlcourse.ai's ``Param(value)`` with ``.value`` and ``.grad``, listed
by a ``params()`` method; ``compute_loss_and_gradients(X, y)`` returning the loss and
leaving each gradient in ``.grad``).

The method is the one that, called on a copy of the model with the batch, returns one
number and, in every parameter object, changes one float array (the gradient) and leaves
the other of its shape as it was (the value); a gradient left all zeros beside a value
that is not counts too (a parameter the loss does not reach), when another gradient
changed. The check perturbs the values in place, clears the gradients before each call
(in place when they are arrays: views of one buffer stay views; a method that adds into
them is read as one that sets them) and puts them back as they were after.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..read._discovery import is_float_array
from ..read._observe import IO_NAMED, positional_names, same_but_unit, takes

__all__ = ["ObjectsModel", "objects_model"]


def _table(model: Any) -> dict[Any, Any] | None:
    """name -> parameter object, from ``model.params`` or ``model.params()``; None when
    that is no dict of objects holding float arrays."""
    table = getattr(model, "params", None)
    if callable(table) and positional_names(table, required=True) == []:
        try:
            table = table()
        except Exception:  # noqa: BLE001 - no table: not this reading
            return None
    if not isinstance(table, dict) or not table or not all(
            hasattr(o, "__dict__") and not isinstance(o, np.ndarray) for o in table.values()):
        return None
    return table


def _arrays(obj: Any) -> dict[str, np.ndarray]:
    return {k: v for k, v in vars(obj).items() if is_float_array(v)}


@dataclass
class ObjectsModel:
    """``params``, ``loss`` and ``loss_and_grads`` of a model read by :func:`objects_model`."""

    model: Any
    method: str
    roles: dict[Any, tuple[str, str]]  # name -> (value attribute, gradient attribute)
    kept: dict[Any, tuple[Any, Any]] = field(default_factory=dict)  # gradient, its values

    @property
    def params(self) -> dict[Any, np.ndarray]:
        table = _table(self.model) or {}
        return {k: getattr(table[k], v) for k, (v, _) in self.roles.items()}

    def loss(self, *batch: Any) -> Any:
        return self.loss_and_grads(*batch)[0]

    def loss_and_grads(self, *batch: Any) -> tuple[Any, dict[Any, np.ndarray]]:
        table = _table(self.model) or {}
        for k, (v, g) in self.roles.items():
            now = getattr(table[k], g, None)
            self.kept.setdefault(k, (now, np.array(now, copy=True) if is_float_array(now)
                                     else None))
            if isinstance(now, np.ndarray) and now.dtype.kind == "f" and now.flags.writeable:
                now[...] = 0  # in place: a view of a buffer the method fills stays one
            elif now is not None:  # (None stays None: the method starts it)
                setattr(table[k], g, np.zeros_like(getattr(table[k], v)))
        out = getattr(self.model, self.method)(*batch)
        table = _table(self.model) or {}
        return out, {k: np.array(getattr(table[k], g), copy=True)
                     for k, (_, g) in self.roles.items()}

    def restore(self) -> None:
        """The gradient attributes as they were before the check."""
        table = _table(self.model) or {}
        for k, (g, values) in self.kept.items():
            setattr(table[k], self.roles[k][1], g)
            if values is not None:
                np.copyto(g, values)

    def note(self) -> str:
        (v, g), cls = next(iter(self.roles.values())), type(self.model).__name__
        return (f"{cls}.params holds objects with .{v} and .{g}: {cls}.{self.method}() returns "
                f"the loss and leaves each gradient in .{g} (cleared before each call), read "
                f"so; the .{v} arrays are perturbed in place")


def _roles(before: dict[Any, dict[str, np.ndarray]], table: dict[Any, Any]
           ) -> dict[Any, tuple[str, str]] | None:
    """name -> (value, gradient) attribute when every parameter object has one float array
    the call changed and one of its shape (but for size-1 axes) it left as it was (or
    left both, one all zeros and the other not); None otherwise."""
    roles: dict[Any, tuple[str, str]] = {}
    moved = False  # (a forward(X, y) returning the loss changes no gradient: no reading)
    for k, o in table.items():
        now, was = _arrays(o), before.get(k, {})
        changed = [a for a, x in now.items() if a not in was or not np.array_equal(x, was[a])]
        same = [a for a in now if a not in changed]
        moved = moved or bool(changed)
        if not changed and len(same) == 2 and sum(not now[a].any() for a in same) == 1:
            changed = [a for a in same if not now[a].any()]
            same = [a for a in same if a not in changed]
        if len(changed) != 1 or len(same) != 1 or not same_but_unit(now[changed[0]].shape,
                                                                     now[same[0]].shape):
            return None
        roles[k] = (same[0], changed[0])
    return roles if moved else None


def objects_model(model: Any, batch: tuple[Any, ...]) -> ObjectsModel | None:
    """The model read through the one method that computes the loss and leaves the
    gradients in its parameter objects; None when there is no such method, or several."""
    if _table(model) is None:
        return None
    found = []
    for name in dir(type(model)):
        if name.startswith("_") or IO_NAMED.match(name) or name == "params" or not callable(
                getattr(type(model), name, None)) or not takes(getattr(model, name), len(batch)):
            continue
        try:
            trial = copy.deepcopy(model)
        except Exception:  # noqa: BLE001 - a model that cannot be copied: no trial, no reading
            return None
        table = _table(trial) or {}
        before = {k: {a: np.array(x, copy=True) for a, x in _arrays(o).items()}
                  for k, o in table.items()}
        try:
            with np.errstate(all="ignore"):
                out = getattr(trial, name)(*copy.deepcopy(batch))
        except Exception:  # noqa: BLE001, S112 - it raised: not this method
            continue
        if np.size(out) != 1 or np.asarray(out).dtype.kind not in "fiu":
            continue
        roles = _roles(before, _table(trial) or {})
        if roles:
            found.append(ObjectsModel(model, name, roles))
    return found[0] if len(found) == 1 else None
