"""Gradients that can never reach the output: the backward computes a gradient for an
array (stores it under the array's name, or takes a step on it) that the forward builds
anew on every call without reading the inputs, float or whole-number (``self.W =
np.random.randn(3, 2)`` in the forward; not a one-hot of token ids), or takes its only
steps on arrays the output does not depend on. Such arrays are checked as parameters:
the output's derivative with respect to them is zero, so a gradient that is not zero
fails there, where the bug is, instead of passing unseen.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ._depends import copy_of
from ._discovery import float_arrays, get_path, is_float_array, set_path, try_path
from ._flat import lost_returned, returned_names
from ._layer_call import Protocol, ones_like
from ._observe import grad_of, grads_holder, items_off, last_name
from ._protocol import ProtocolError, UserCodeError, call_user, clone, map_arrays
from ._reading import call_backward, forward_output

__all__ = ["batch_state", "lost_ones", "lost_steps", "redrawn"]


def redrawn(proto: Protocol, first: Any, xs: list[Any], known: set[str]) -> list[str]:
    """Paths of the arrays the first forward built (those in ``known`` left out: the
    layer's own, weights it builds once) that depend neither on the inputs' values nor
    on the layer's own arrays (``W * mask`` does) and that the backward computes a
    gradient for (one it stored under their name, or a
    step it took on them)."""
    made = {p: a for p, a in float_arrays(first.init).values()
            if p not in known and p != proto.out_path and not _buffer(proto, first, p, a)
            and not any(a is x or copy_of(a, x) for x in first.xs)}
    graded = [p for p, a in made.items()
              if p in proto.stepped or grad_of(p, a.shape, first.stored) is not None]
    if not graded or proto.draws is None:
        return []
    other = clone(proto.layer)
    moved = map_arrays(clone(xs), _moved)
    try:
        forward_output(other, proto.forward, moved, proto.draws, proto.out_path)
    except Exception:  # noqa: BLE001 - no evidence either way: the reading stays as it was
        return []
    out = [p for p in graded if _same(try_path(other, p), made[p])]
    if out:  # and not built from the layer's own arrays (W * mask, weight norm): drawn
        own = clone(proto.layer)
        for _, a in float_arrays(own).values():
            a *= 1.1
            a += 0.05
        try:
            forward_output(own, proto.forward, clone(xs), proto.draws, proto.out_path)
        except Exception:  # noqa: BLE001 - no evidence either way
            return []
        out = [p for p in out if _same(try_path(own, p), made[p])]
    state = _per_batch(proto, xs, out) if out else []
    if state:  # an initial state the forward builds for the batch (h0 = zeros((N, H)))
        out = [p for p in out if p not in state]
        proto.note(f"{', '.join(state)}: built by every forward for the batch given (an "
                   "initial state, its shape following the inputs'): state, not checked")
    if out:
        proto.note(f"{', '.join(out)}: built anew by every forward without reading the "
                   "inputs (weights drawn in the forward?), yet the backward computes a "
                   "gradient for them: checked as parameters (the output does not depend "
                   "on the values the layer holds)")
    return out


def _per_batch(proto: Protocol, xs: list[Any], paths: list[str], filled: bool = False
              ) -> list[str]:
    """Those of ``paths`` built as zeros (with ``filled``, any one value: ``self.ones =
    np.ones((N, 1))`` that a bias is spread with) whose shape follows the inputs' batch
    axis: a forward given one sample more builds them one row longer (a zero initial
    state ``h0`` of shape ``(N, H)``; a bias rebuilt by every forward keeps its shape,
    weights drawn anew are no zeros)."""
    assert proto.draws is not None
    if not any(is_float_array(x) and x.ndim > 1 for x in xs):
        return []  # (one sample, (D,): its first axis is no batch)
    longer = [np.concatenate([x, x[:1]]) if is_float_array(x) and x.ndim > 1 else x for x in
              clone(xs)]
    other = clone(proto.layer)
    try:
        forward_output(other, proto.forward, longer, proto.draws, proto.out_path)
    except Exception:  # noqa: BLE001 - no evidence: checked as before
        return []
    before = clone(proto.layer)
    try:
        forward_output(before, proto.forward, clone(xs), proto.draws, proto.out_path)
    except Exception:  # noqa: BLE001 - as above
        return []
    return [p for p in paths if is_float_array(a := try_path(other, p)) and is_float_array(
        b := try_path(before, p)) and a.ndim and a.shape[1:] == b.shape[1:] and
        a.shape[0] == b.shape[0] + 1 and _one_value(a, b, filled)]  # zeros: a start


def batch_state(proto: Protocol, xs: list[Any], left: list[str], held: set[str],
                found: list[Any]) -> list[str]:
    """``left`` (arrays the output depends on, no gradient found for them) but those the
    forward builds, not ``held`` by the layer before it, one column filled with one value
    and one row longer for one sample more (``self.ones = np.ones((N, 1))`` spreading a
    bias over the batch), beside parameters whose gradients were ``found``: state for the
    batch, no parameter, noted. (A lone scale built as ones is no such vector.)"""
    built = [p for p in left if p not in held and found and all(
        n == 1 for n in np.shape(try_path(proto.layer, p))[1:])]
    if not built or not (state := _per_batch(proto, xs, built, filled=True)):
        return left
    proto.note(f"{', '.join(state)}: built by the forward for the batch given, one value "
               "throughout (its shape following the inputs'): state, not checked")
    return [p for p in left if p not in state]


def _one_value(a: np.ndarray, b: np.ndarray, filled: bool) -> bool:
    """Whether ``a`` and ``b`` are zeros (with ``filled``: both one same value)."""
    if not filled:
        return not np.any(a) and not np.any(b)
    return bool(a.size and b.size and np.all(a == a.flat[0]) and np.all(b == a.flat[0]))


def _buffer(proto: Protocol, first: Any, p: str, a: np.ndarray) -> bool:
    """Whether ``a``, built by the forward, is zeros held in a container named for
    gradients (a recurrent cell's ``grads[1]``), a buffer for a gradient, not a weight (a
    bias rebuilt as zeros by every forward, ``b`` or ``dense_b``, is no buffer), and not
    stepped."""
    holder = items_off(p)
    return not np.any(a) and p not in proto.stepped and holder != p and grads_holder(
        last_name(holder))


def lost_steps(proto: Protocol, missing: list[str], reaching: set[str], first: Any = None
               ) -> list[str]:
    """The arrays the backward takes a step on that the output does not depend on
    (``reaching``: those found by name and those that move it): all of them when none of
    its steps is on an array that reaches the output; else those whose change in the
    ``first`` probe mirrors no such array's (a bias the forward forgot, stepped all the
    same; not a velocity, ``v = -lr * dW; W += v``), or does but which held values before
    (a velocity starts from zeros: ``b_hh`` forgotten beside ``b_ih``): their steps are
    lost, and they are checked; one that ends equal to that array (a master copy
    ``W_master`` copied into ``W``, or ``b_hh`` started equal to ``b_ih``) is not checked
    when the step reads it or every array stepped has such a copy (``W_last``, ``b_last``),
    else a ``bad-protocol``: which it is cannot be told."""
    steps = [p for p in missing if p in proto.stepped]
    if steps and (stepped := [q for q in proto.stepped if q in reaching]):
        moved = [_change(first, q) for q in stepped]
        kept = {q: try_path(first.after, q) for q in stepped}
        steps = [p for p in steps if (d := _change(first, p)) is not None and d.any() and (
            not any(m is not None and _mirrors(d, m) for m in moved) or _held_values(first, p))]
        copies = [p for p in steps if any(_same(k, try_path(first.after, p))
                                          for k in kept.values())]
        steps = [p for p in steps if p not in copies]
        copies = [p for p in copies if not _read_by_step(proto, first, p, stepped)]
        ends = {q for q, k in kept.items() if any(_same(k, try_path(first.after, p))
                                                   for p in copies)}
        if copies and ends == set(stepped):
            copies = []  # a copy of every array stepped (W_last, b_last): the last values
        if copies and not proto.wrt_given:  # a master copy W_master ends as W; so does a
            # b_hh forgotten beside b_ih; wrt= says what to check (the copies are not)
            raise ProtocolError("bad-protocol", (  # started equal: which, cannot be told
                f"the backward steps {', '.join(copies)} as it steps an array the output "
                "depends on and leaves them equal, while the output does not depend on "
                f"{', '.join(copies)}: a master copy, or a parameter the forward forgot? Name "
                "the parameters to check with wrt="))
    if not steps:
        return []
    proto.note(f"the backward takes a step on {', '.join(steps)}, which the output does not "
               "depend on: checked as parameters (their numerical gradient is zero)")
    return steps


def _read_by_step(proto: Protocol, first: Any, path: str, stepped: list[str]) -> bool:
    """Whether the backward's new values of the arrays ``stepped`` (those that reach the
    output) change when the array at ``path`` does before it runs: an optimizer's buffer
    the step reads (``W_last`` of a momentum step, ``W_master`` copied into ``W``), no
    parameter."""
    layer = clone(first.init)
    a = try_path(layer, path)
    if not is_float_array(a):
        return False
    set_path(layer, path, a * 1.5 + 0.25)
    try:
        call_user(call_backward, getattr(layer, proto.backward), proto.style, proto.order,
                  ones_like(first.out), clone(first.xs), proto.then, first.out,
                  what=f"{type(layer).__name__}.{proto.backward}")
    except UserCodeError:
        return False
    return any(not _same(try_path(layer, q), try_path(first.after, q)) for q in stepped
               if is_float_array(try_path(first.after, q)))


def _change(first: Any, path: str) -> np.ndarray | None:
    """What the first probe's backward changed the array at ``path`` by."""
    if first is None:
        return None
    a, b = try_path(first.after, path), try_path(first.init, path)
    return a - b if is_float_array(a) and is_float_array(b) and a.shape == b.shape else None


def _held_values(first: Any, path: str) -> bool:
    """Whether the array at ``path`` held anything but zeros before the backward."""
    a = try_path(first.init, path)
    return is_float_array(a) and bool(np.any(a))


def _mirrors(d: np.ndarray, m: np.ndarray) -> bool:
    """Whether ``d`` is a multiple of ``m`` (a velocity's step beside its array's)."""
    if d.shape != m.shape or not m.any():
        return False
    c = float(np.vdot(d, m) / np.vdot(m, m))
    return bool(np.allclose(d, c * m, rtol=1e-6, atol=1e-12 * float(np.max(np.abs(d)))))


def _moved(x: Any) -> Any:
    """An input changed: a float array's values, a whole-number array's order (token ids
    stay ids: a one-hot built from them moves)."""
    if is_float_array(x):
        return x * 1.25 + 0.125
    if isinstance(x, np.ndarray) and x.dtype.kind in "iu" and x.size:
        rolled = np.roll(x.ravel(), 1).reshape(x.shape)
        return rolled if not np.array_equal(rolled, x) else x + 1  # ids all alike: others
    return x


def _same(a: Any, b: np.ndarray) -> bool:
    return is_float_array(a) and a.shape == b.shape and bool(
        np.array_equal(a, b, equal_nan=True))


def lost_ones(proto: Protocol, first: Any, base: Any, moving: list[str], missing: list[str],
              reach: set[str]) -> list[str]:
    """The arrays the output does not depend on that the backward steps (:func:`lost_steps`)
    or returns a gradient for in a flat tuple (:func:`~._flat.lost_returned`), noted."""
    stepped = lost_steps(proto, [p for p in missing if p not in moving], reach, first)
    if not isinstance(first.ret, tuple):
        return stepped
    now = moving + stepped
    lost = lost_returned(first.ret, base, first.xs, proto.wanted, {
        p: get_path(base, p) for p in now}, {p: get_path(base, p) for p in missing if
                                             p not in now and is_float_array(try_path(base, p))},
        returned_names(getattr(proto.layer, proto.backward), len(first.ret)))
    if lost:
        proto.note(f"the output does not depend on {', '.join(lost)}, yet the backward "
                   "returns a gradient for it (a term the forward forgot?): checked")
    return stepped + lost
