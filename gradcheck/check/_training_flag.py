"""A forward that stores what its backward needs only in training mode
(``forward(X, training=False)`` keeping its caches when ``training=True``, as the
training loop calls it): when the check under the forward's defaults ends in an error,
it is run again on a copy whose forward is given its one flag defaulting to False as
True, with a note."""

from __future__ import annotations

import functools
import inspect
from typing import Any

from ._loss_method import with_methods
from ._result import CheckResult

__all__ = ["in_training"]


def in_training(layer: Any, forward: str | None, res: CheckResult) -> tuple[Any, str] | None:
    """A copy of ``layer`` whose forward runs with its one keyword flag that defaults
    to False set to True, and the note saying so, when ``res`` is an ``error`` raised in
    the backward; None otherwise."""
    name = forward or "forward"
    method = getattr(type(layer), name, None)
    where = res.message.split(" raised ")[0] if " raised " in res.message else ""
    if res.status != "error" or not where or where.endswith(f".{name}") or \
            not inspect.isfunction(method):  # (raised in the forward: no evidence)
        return None
    try:
        params = inspect.signature(method).parameters.values()
    except (TypeError, ValueError):
        return None
    flags = [p.name for p in params if p.default is False and p.kind in (
        p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)]
    if len(flags) != 1:
        return None
    flag = flags[0]

    @functools.wraps(method)  # (its signature read as the forward's)
    def flagged(self: Any, *args: Any, **kwargs: Any) -> Any:
        return method(self, *args, **{flag: True, **kwargs})

    obj = with_methods(layer, {name: flagged})
    if obj is None:
        return None
    return obj, (f"the backward needs what {type(layer).__name__}.{name} stores with "
                 f"{flag}=True (the mode a training loop calls it in): checked so")
