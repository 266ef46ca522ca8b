"""Users' code that writes into what it was given. A forward that modifies its input in
place (``x[x < 0] = 0; return x``) and a backward that writes into ``dy`` are checked all
the same, each call on fresh copies, so their gradients get a verdict; when the gradients
are right the status is still ``mutation``: a caller that reads the array again (a
residual connection, a branch) gets the overwritten values.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import numpy as np

from ..read._protocol import ProtocolError, UserCodeError, changed_at, snapshot
from ._leaves import _Inputs, _split_forward

__all__ = ["WROTE_DY", "CacheWrite", "FilledBuffers", "ForwardMutation", "aliasing",
           "cache_written", "check_unchanged", "final_status", "on_copies", "on_fresh_cache",
           "repeats", "second_backward", "writes_elsewhere"]

WROTE_DY = "backward modified dy (the output gradient) in place"


class ForwardMutation(ProtocolError):
    """The forward modified an input it was given (``name``)."""

    def __init__(self, name: str, state: bool = False) -> None:
        super().__init__("mutation", f"forward modified its input {name}")
        self.name = name
        self.state = state  # a constant object's attributes (caches, weights set), no array


class FilledBuffers(ProtocolError):
    """The backward wrote only into arrays of the cache that held zeros before it (an
    autograd tape's ``.grad`` buffers, accumulated with ``+=``) or emptied its lists (the
    tape released): a cache used once."""

    def __init__(self, where: str) -> None:
        super().__init__("mutation", f"backward modified the cache (at cache{where})")
        self.note = (f"the backward fills arrays of the cache that held zeros (at cache{where}"
                     "): a cache used once; each backward call was given the cache of a new "
                     "forward call")


class CacheWrite(FilledBuffers):
    """The backward changed what the forward left in the cache; when that is an input
    the forward was given (``kernel += lr * dk``, a step on its own argument) it is
    checked all the same, each backward call given the cache of a new forward call on
    copies, and right gradients are still a ``mutation``."""

    def __init__(self, where: str) -> None:
        ProtocolError.__init__(self, "mutation", f"backward modified the cache (at cache{where})")
        self.note = ""
        self.own = False  # what it changed is the forward's own result, no input it was given


def _data_changed(a: Any, b: Any, path: str = "") -> str | None:
    """Where ``b`` changed an array of snapshot ``a`` that held data (not all zeros);
    containers that lost entries (a tape the backward released) are not changes."""
    if isinstance(a, np.ndarray):
        if a.size and not np.any(a):
            return None
        return changed_at(a, b, path)
    if isinstance(a, list) and isinstance(b, (list, tuple)):
        if len(b) != len(a):  # released, or grown (a history it appends to)
            return None if len(b) < len(a) else path or "(the container)"
        return next((w for i, (x, y) in enumerate(zip(a, b, strict=False))
                     if (w := _data_changed(x, y, f"{path}[{i}]"))), None)
    if isinstance(a, dict) and type(a) is not dict:  # an object's attributes
        return next((w for k, v in a.items()
                     if (w := _data_changed(v, getattr(b, k, None), f"{path}.{k}"))), None)
    if isinstance(a, dict) and isinstance(b, dict):
        return next((w for k, v in a.items()
                     if k in b and (w := _data_changed(v, b[k], f"{path}[{k!r}]"))), None)
    return changed_at(a, b, path)


def cache_written(snap: Any, cache: Any) -> FilledBuffers | None:
    """What the backward's writes into its cache are: none, zero buffers it filled
    (:class:`FilledBuffers`), or a ``mutation`` of what the forward left there."""
    where = changed_at(snap, cache)
    if where is None:
        return None
    data = _data_changed(snap, cache)
    if data is None:
        return FilledBuffers(where)
    return CacheWrite(data)


def on_fresh_cache(fwd: Callable[..., Any], bwd: Callable[..., Any],
                   forward: Callable[[], Any]) -> Callable[..., Any]:
    """``bwd`` called each time on the cache of a new forward call (``forward()`` runs
    ``fwd`` at the point and returns ``(y, cache)``), not on the cache it is given."""
    def backward(dy: Any, _cache: Any) -> Any:
        return bwd(dy, forward()[1])
    return backward


def second_backward(first: Any, again: Any) -> None:
    """The same gradients on a second call with the same dy and cache."""
    where = changed_at(first, again)
    if where is not None:
        raise ProtocolError("nondeterministic", "backward gave different gradients on a second "
                            f"call with the same dy and cache (at gradients{where})")


def aliasing(first: Any, grads_raw: Any) -> None:
    """The first call's arrays must not have moved when backward ran with another dy."""
    where = changed_at(first, grads_raw)
    if where is not None:
        raise ProtocolError(
            "aliasing",
            f"the gradients returned by the first backward (at gradients{where}) changed when "
            "backward ran again: it hands out views of its cache or buffers and edits them "
            "later; return fresh arrays (or copies)")


def on_copies(fwd: Callable[..., Any]) -> Callable[..., Any]:
    """``fwd`` called on deep copies of its arguments: its writes stay its own."""
    def forward(*args: Any, **kwargs: Any) -> Any:
        return fwd(*copy.deepcopy(args), **copy.deepcopy(kwargs))
    return forward


def final_status(status: str, message: str, notes: list[str],
                 wrote_input: ForwardMutation | CacheWrite | None) -> tuple[str, str]:
    """The status once the gradients are compared: ``mutation`` when they are right but
    the forward modified its input or the backward ``dy``; otherwise the gradients'
    status, the writes stated in ``notes``."""
    if isinstance(wrote_input, CacheWrite) and status == "ok":
        return "mutation", (
            f"{wrote_input.message}: the gradients are right (each backward call was given "
            "the cache of a new forward call), but a caller whose cache holds its own arrays "
            "(the forward's arguments, its weights) finds them overwritten")
    if isinstance(wrote_input, CacheWrite) and wrote_input.own and status != "ok":
        return "mutation", (  # (its write first: the caller's cache is overwritten)
            f"{wrote_input.message}, and checked all the same, each backward call given the "
            f"cache of a new forward call: {message}")
    if isinstance(wrote_input, ForwardMutation) and wrote_input.state:
        notes.append(f"the forward changed the attributes of {wrote_input.name}, a constant "
                     "object (its state: caches, values written into it); each call was given "
                     "a fresh copy")
        return status, message
    if wrote_input is not None and status != "ok":
        notes.append(f"{wrote_input.message} (each call was given fresh copies)")
    elif isinstance(wrote_input, ForwardMutation):
        return "mutation", (
            f"{wrote_input.message}: the gradients are right (checked on fresh copies of "
            f"the inputs per call), but a caller that uses {wrote_input.name} after the "
            "forward (a residual connection, a branch) reads the overwritten values; "
            "compute into a new array instead (x = x - x.max(), np.maximum(x, 0); not "
            "x -= ..., x[...] = ..., np.exp(x, out=x))")
    if status == "ok" and WROTE_DY in notes:
        notes.remove(WROTE_DY)
        return "mutation", (
            f"{WROTE_DY}: the gradients it returns are right (checked on a fresh dy per "
            "call), but a caller that reads dy again (a residual connection, a branch) gets "
            "the overwritten values; return a new array (dout * mask) instead")
    return status, message


def writes_elsewhere(fwd: Callable[..., Any], prep: _Inputs) -> None:
    """A forward writing into an input only where that changes it (normalising in place
    a point already normal): called once, before the check's own calls, on a copy of the
    point moved a little; a write there is a :class:`ForwardMutation` (the finite
    differences' moved points would be rewritten)."""
    moved = list(prep.leaves)
    for i in prep.diff:
        v = np.asarray(prep.leaves[i])
        moved[i] = (v * (1 + 1e-3 * np.cos(np.arange(v.size))).reshape(v.shape)).astype(v.dtype)
    keep = [snapshot(v) for v in moved]
    try:
        built = prep.tree.build(moved)
        _ = fwd(**built) if prep.as_kwargs else fwd(*built)
    except Exception:  # noqa: BLE001 - the user's code at another point: no evidence here
        return
    for i in prep.diff:
        if changed_at(keep[i], moved[i]) is not None:
            raise ForwardMutation(prep.tree.names[i])


def check_unchanged(saved: Any, prep: _Inputs, who: str) -> None:
    """A ``mutation`` for the first input the call changed; for the forward, an array
    first (an object's attributes, its state, only when no array changed)."""
    changed = [(i, name) for i, name in enumerate(prep.tree.names)
               if changed_at(saved[i], prep.leaves[i]) is not None]
    if changed and who != "forward":
        raise ProtocolError("mutation", f"{who} modified its input {changed[0][1]}")
    state = [name for i, name in changed if hasattr(prep.leaves[i], "__dict__") and not
             isinstance(prep.leaves[i], np.ndarray) and i not in prep.diff]
    arrays = [name for _, name in changed if name not in state]
    if arrays or state:
        raise ForwardMutation(arrays[0] if arrays else state[0], state=not arrays)


def repeats(fwd: Callable[..., Any], prep: _Inputs) -> bool:
    """Whether the forward, called again on the inputs it changed the state of, gives what
    it gave before (``layer.W[:] = w``; not ``layer.W += w``, which leaks into the next
    call's output)."""
    try:
        first = snapshot(_split_forward(prep.call(fwd, "forward"))[0])
        return changed_at(first, _split_forward(prep.call(fwd, "forward"))[0]) is None
    except (UserCodeError, ProtocolError):
        return False
