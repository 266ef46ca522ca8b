"""A model without ``loss_and_grads`` (or without ``loss``), read by what its methods
return.

``check_model`` asks for ``params``, ``loss`` and ``loss_and_grads``. Many models hold the
first two and compute their gradients in a method of another name and order
(``grads(x, t) -> (grads, loss)``, ``gradient(x, t) -> grads``). Such a method is taken
when, called on a copy of the model with the batch, it returns a dict of gradients keyed
by parameter names (alone or beside the loss, in either order; not the parameters
themselves, nor new values after a step, every one within a tenth of its parameter's
norm of it), leaves the parameters as they were,
and runs none of the methods ``loss`` runs more than twice as often as ``loss`` does (a
numerical gradient, which runs the loss for every element, through any helper, is no
backward; a helper of its own run once per layer is). A model with ``loss_and_grads``
and no ``loss`` is differenced through the loss ``loss_and_grads`` returns; one whose
``loss`` itself returns the loss beside such a dict (cs231n's ``loss(X, y) -> (loss,
grads)``) through that loss, the dict checked.
"""

from __future__ import annotations

import copy
from collections import Counter
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..read._observe import IO_NAMED, positional_names, takes
from ..read._protocol import GlobalDraws
from ..read._watch import watched
from ._model_objects import objects_model

__all__ = ["HeldDraws", "ReadModel", "read_model"]


@dataclass
class ReadModel:
    """The model's ``params`` and ``loss``, and ``loss_and_grads`` through ``method``."""

    model: Any
    method: str
    grads_first: bool | None  # None: the method returns the gradients alone
    draws: Any = None  # a GlobalDraws each call of the model's starts from

    @property
    def params(self) -> Any:
        return self.model.params

    def _reset(self) -> None:
        if self.draws is not None:
            self.draws.reset()

    def loss(self, *batch: Any) -> Any:
        if not hasattr(self.model, "loss") or self.method == "loss":  # the loss beside them
            return self.loss_and_grads(*batch)[0]
        self._reset()
        return self.model.loss(*batch)

    def loss_and_grads(self, *batch: Any) -> tuple[Any, Any]:
        self._reset()
        out = getattr(self.model, self.method)(*batch)
        if self.grads_first is None:
            self._reset()  # (the loss at the draws its gradients were computed at)
            return self.model.loss(*batch), out
        return (out[1], out[0]) if self.grads_first else (out[0], out[1])

    def note(self) -> str:
        what = f"{type(self.model).__name__}.{self.method}"
        if self.method == "loss":
            return (f"{what}() returns the loss beside its gradients by parameter name (cs231n's "
                    "loss(X, y) -> (loss, grads)): the loss is differenced, the gradients "
                    "checked")
        if not hasattr(self.model, "loss"):
            return (f"{type(self.model).__name__} has no loss: the loss {what}() returns "
                    "beside the gradients is differenced (each evaluation runs the backward "
                    "too)")
        got = {None: "the gradients", True: "(grads, loss)", False: "(loss, grads)"}
        return (f"{type(self.model).__name__} has no loss_and_grads: {what}() returns "
                f"{got[self.grads_first]} by parameter name, read as it")


def read_model(model: Any, batch: tuple[Any, ...]) -> Any:
    """``model`` itself when it has ``loss_and_grads`` (or lacks ``params`` or ``loss``),
    else a :class:`ReadModel` over the one method found; the model when none or several.
    Parameters held as objects with a value and a gradient are read first
    (:mod:`._model_objects`)."""
    if not hasattr(model, "loss_and_grads") and (held := objects_model(model, batch)):
        return held  # params() of Param(value) objects, compute_loss_and_gradients(X, y)
    if hasattr(model, "loss_and_grads") and not hasattr(model, "loss") and isinstance(
            getattr(model, "params", None), dict):
        return _without_loss(model, batch)
    if not hasattr(model, "loss_and_grads") and not hasattr(model, "loss") and isinstance(
            getattr(model, "params", None), dict):  # forward_backward(X, y) -> (loss, grads)
        both = [r for name in dir(type(model)) if not name.startswith("_") and not
                IO_NAMED.match(name) and (r := _both(model, name, batch)) is not None]
        return both[0] if len(both) == 1 else model
    if hasattr(model, "loss_and_grads") or not hasattr(model, "params") or \
            not hasattr(model, "loss") or not isinstance(model.params, dict):
        return model
    found = [r for name in dir(type(model)) if not name.startswith("_") and name != "loss"
             and not IO_NAMED.match(name)
             and "grad" in name.lower() and (r := _tried(model, name, batch)) is not None]
    if not found and (r := _tried(model, "loss", batch)) is not None and \
            r.grads_first is not None:  # loss(X, y) -> (loss, grads) itself
        found = [r]
    return found[0] if len(found) == 1 else model


def _without_loss(model: Any, batch: tuple[Any, ...]) -> Any:
    """A model with ``loss_and_grads`` and no ``loss``: read through the loss it returns
    beside the gradients (in either order); the model itself when that call fails."""
    try:
        out = copy.deepcopy(model).loss_and_grads(*copy.deepcopy(batch))
    except Exception:  # noqa: BLE001 - the check reports it
        return model
    if not isinstance(out, tuple) or len(out) != 2:
        return model
    first = isinstance(out[0], dict) and np.size(out[1]) == 1
    return ReadModel(model, "loss_and_grads", True) if first else ReadModel(
        model, "loss_and_grads", False) if isinstance(out[1], dict) else model


def _tried(model: Any, name: str, batch: tuple[Any, ...]) -> ReadModel | None:
    method = getattr(type(model), name, None)
    if not callable(method) or positional_names(method) is None or not takes(
            getattr(model, name), len(batch)):
        return None
    twin, base = copy.deepcopy(model), copy.deepcopy(model)
    before = {k: np.array(v, copy=True) for k, v in model.params.items()}
    try:
        with watched(base, set()) as by_loss:
            base.loss(*copy.deepcopy(batch))
        with watched(twin, {name}) as ran:
            out = getattr(twin, name)(*copy.deepcopy(batch))
    except Exception:  # noqa: BLE001 - not this method: the model stays as given
        return None
    helpers, runs = Counter(by_loss) + Counter(["loss"]), Counter(ran)
    if any(c > 2 * helpers[n] for n, c in runs.items() if n in helpers) or any(
            not np.array_equal(v, twin.params[k]) for k, v in before.items()):
        return None  # a numerical gradient (the loss run per element), or a step taken
    keys = set(model.params)
    if _grads(out, keys, twin.params):
        return ReadModel(model, name, None)
    if isinstance(out, tuple) and len(out) == 2:
        for first in (True, False):
            g, v = (out[0], out[1]) if first else (out[1], out[0])
            if _grads(g, keys, twin.params) and np.size(v) == 1:
                return ReadModel(model, name, first)
    return None


def _both(model: Any, name: str, batch: tuple[Any, ...]) -> ReadModel | None:
    """For a model with ``params`` and neither ``loss`` nor ``loss_and_grads``: the
    method that, called on a copy with the batch, returns one number and the gradients
    by parameter name (in either order) and leaves the parameters as they were
    (cs231n's ``loss(X, y)`` under another name, ``forward_backward(X, y)``; not a
    ``train`` that steps)."""
    method = getattr(type(model), name, None)
    if not callable(method) or positional_names(method) is None or not takes(
            getattr(model, name), len(batch)):
        return None
    twin = copy.deepcopy(model)
    before = {k: np.array(v, copy=True) for k, v in model.params.items()}
    try:
        with np.errstate(all="ignore"):
            out = getattr(twin, name)(*copy.deepcopy(batch))
    except Exception:  # noqa: BLE001 - not this method
        return None
    if not isinstance(out, tuple) or len(out) != 2 or any(
            not np.array_equal(v, twin.params[k]) for k, v in before.items()):
        return None
    keys = set(model.params)
    for first in (True, False):
        g, v = (out[0], out[1]) if first else (out[1], out[0])
        if _grads(g, keys, twin.params) and np.size(v) == 1 and np.asarray(v).dtype.kind == "f":
            return ReadModel(model, name, first)
    return None


def _grads(g: Any, keys: set[Any], params: dict[Any, Any]) -> bool:
    """A dict of float arrays keyed by parameter names, none of them the parameter
    itself or its values (new weights returned are no gradients)."""
    return isinstance(g, dict) and bool(g) and set(g) <= keys and all(
        isinstance(v, np.ndarray) and v.dtype.kind == "f" and v is not params[k] and
        not np.array_equal(v, params[k]) for k, v in g.items()) and not all(
        _near(v, params[k]) for k, v in g.items())


def _near(v: np.ndarray, p: Any) -> bool:
    """Whether ``v`` is ``p`` moved a little (``W - lr * dW``, a step's new value): within
    a tenth of its norm."""
    p = np.asarray(p, dtype=np.float64)
    return v.shape == p.shape and bool(p.any()) and float(
        np.linalg.norm(v - p)) <= 0.1 * float(np.linalg.norm(p))


class HeldDraws:
    """``model`` whose ``loss`` and ``loss_and_grads`` each start from the global
    generators' state (``np.random``, :mod:`random`) at the check's start, as every
    evaluation of check_vjp and check_layer does (a dropout mask drawn from
    ``np.random`` is the same in every evaluation: a model's loss and its gradients are
    compared at one mask); :meth:`restore` puts the user's state back. Other attributes
    are the model's."""

    def __init__(self, model: Any, draws: GlobalDraws) -> None:
        self.held, self.draws = model, draws
        if isinstance(model, ReadModel):
            model.draws = draws

    def __getattr__(self, name: str) -> Any:
        if name in ("held", "draws"):
            raise AttributeError(name)
        return getattr(self.held, name)

    @property
    def params(self) -> Any:
        return self.held.params

    def loss(self, *batch: Any) -> Any:
        self.draws.reset()
        out = self.held.loss(*batch)
        self.draws.seen()  # (a model drawing nothing: no reset before every call)
        return out

    def loss_and_grads(self, *batch: Any) -> Any:
        self.draws.reset()
        out = self.held.loss_and_grads(*batch)
        self.draws.seen()
        return out

    def restore(self) -> None:
        self.draws.restore()
