"""A backward that takes a step on the layer's weights itself: ``backward(output_error,
learning_rate)`` (or ``lr=0.01``, a number by default) whose second argument only scales
the change it makes to the arrays the layer holds. It is called with 1.0, and a
parameter's gradient is read as minus its change.
"""

from __future__ import annotations

import re
from typing import Any

import numpy as np

from ._discovery import (
    Param,
    float_scalars,
    get_path,
    held_values,
    is_float_array,
    is_float_scalar,
    multiple_of,
    set_path,
    try_path,
    walk,
)
from ._layer_call import Protocol, ones_like, times, uneven
from ._observe import default_of, float_state, positional_names
from ._protocol import ProtocolError, clone
from ._reading import (
    BATCH,
    NAUGHT,
    STEP,
    batch_size,
    forward_output,
    leaves,
    read_output,
)
from ._watch import watched

__all__ = ["SCALAR", "constant_scalars", "in_output", "takes_a_step"]

#: An argument named as the number of samples (``backward(output_error, batch_size)``).
_BATCH = re.compile(r"batch_?size|batch|bs|n_?samples|num_?samples|n_?batch", re.I)

#: An argument named as a step size (``backward(x, y, lr)``).
_STEP_SIZE = re.compile(r"lr|lrate|learning_?rate|eta|step_?size", re.I)

#: The key of a float scalar's change among the arrays' in what :func:`_stepped` saw.
SCALAR = "<scalar>"


def takes_a_step(proto: Protocol, xs: list[Any]) -> bool:
    """Whether the backward takes a second argument that only scales the change it makes
    to arrays the layer holds (``backward(output_error, learning_rate)`` updating its
    weights), or, after the forward's inputs again by their names, the output gradient
    and such an argument (``bp(input, delta, lrt)``): then it is called with 1.0 and a
    parameter's gradient is minus its change."""
    method = getattr(proto.layer, proto.backward)
    names = positional_names(method, required=True)
    every = positional_names(method)
    n = len(xs)
    f_names = (positional_names(getattr(proto.layer, proto.forward)) or [])[:n]
    if names is not None and len(names) > 2 and proto.style == "one" and names[0] not in \
            f_names and _STEP_SIZE.fullmatch(names[1]) and proto.draws is not None:
        return _set_aside(proto, xs, names)  # backward(delta, eta, reg_lambda)
    if names is not None and len(names) == n + 2 and proto.draws is not None and (
            names[:n] == f_names or proto.style == "one"):  # inputs, dout, a step size
        return _placed(proto, xs, names, names[:n] == f_names)
    if proto.style == "given" and names is not None and proto.draws is not None and len(
            names) == len(proto.order) + 1 and STEP not in proto.order:
        return _given_step(proto, xs, names[-1])  # a loss's backward(X, y, lr)
    if proto.style == "given":  # a loss's backward(X, y), no output gradient, stepping
        return names is not None and len(names) == len(proto.order) and \
            proto.draws is not None and _held_step(proto, xs)  # by self.lr
    if proto.style == "inputs" and names is not None and proto.draws is not None and len(
            names) == len(proto.order) and proto.order[-1:] == [None] and None not in \
            proto.order[:-1] and _STEP_SIZE.fullmatch(names[-1]) and _loss_out(proto, xs):
        saved = proto.order  # backward(x, y, lr) of a loss: no output gradient, a step
        proto.style, proto.order = "given", saved[:-1]
        if _given_step(proto, xs, names[-1]):
            proto.notes = [t for t in proto.notes if "inputs again: called as" not in t]
            return True
        proto.style, proto.order = "inputs", saved
    if proto.style == "inputs":  # backward(input, grad_output) stepping by self.lr
        flags = all(k in proto.order or not _holds_float(x) for k, x in enumerate(xs))
        return names is not None and (len(names) == n + 1 or (  # a training flag not given
            len(names) == len(proto.order) and flags)) and proto.draws is not None and \
            _held_step(proto, xs)
    if names is not None and len(names) == 1 and every is not None and len(every) >= 2 \
            and _is_number(default_of(method, every[1])):
        names = every[:2]  # backward(grad, lr=0.01): a step size with a default
    elif names is not None and len(names) == 1 and proto.draws is not None:
        return _held_step(proto, xs)
    if names is None or len(names) != 2 or proto.draws is None:
        return False
    saved, proto.order = proto.order, []
    if _reads_a_step(proto, xs, names[1]):
        return True
    proto.order = saved
    if proto.style == "one" and _BATCH.fullmatch(names[1]) and proto.layer is not None:
        proto.style, proto.order = "inputs", [None, BATCH]  # backward(dout, batch_size)
        proto.note(f"backward's argument {names[1]} is given the batch size, "
                   f"{batch_size(xs)} (the length of the first input)")
        return True
    return False


def _set_aside(proto: Protocol, xs: list[Any], names: list[str]) -> bool:
    """``backward(dout, lr, *settings)``: the settings of the step beside its size given
    0.0 (``reg_lambda``: no weight decay, the one value at which a step is the
    gradient's), when the step so taken is observed to be one (:func:`_reads_a_step`)."""
    saved, proto.order = proto.order, [None, STEP] + [NAUGHT] * (len(names) - 2)
    if _reads_a_step(proto, xs, names[1]):
        proto.note(f"backward's argument{'s' * (len(names) > 3)} {', '.join(names[2:])} given "
                   "0.0: a setting of its step beside the step size (a weight decay or "
                   "momentum so off)")
        return True
    proto.order = saved
    return False


def _loss_out(proto: Protocol, xs: list[Any]) -> bool:
    """Whether the forward returns one number (a loss), on a copy."""
    assert proto.draws is not None
    proto.draws.reset()
    try:
        layer = clone(proto.layer)
        out = read_output(layer, getattr(layer, proto.forward)(*clone(xs)), proto.out_path)
    except Exception:  # noqa: BLE001 - no evidence
        return False
    return _is_number(out) or (isinstance(out, np.ndarray) and out.ndim == 0)


def _given_step(proto: Protocol, xs: list[Any], name: str) -> bool:
    """A loss's backward taking the arguments it is given and, last, a step size it
    only scales its change by (``backward(x, y, lr)`` replacing its weights): called
    with 1.0 there when so observed, the step not one size everywhere."""
    saved, notes, stepped = proto.order, list(proto.notes), proto.stepped
    proto.order = [*saved, STEP]
    try:
        if _reads_a_step(proto, xs, name) and proto.stepped and _gradient_sized(proto, xs):
            return True
    except ProtocolError:  # an input gradient scaled by it: not this reading
        pass
    proto.order, proto.notes, proto.stepped, proto.style = saved, notes, stepped, "given"
    return False


def _held_step(proto: Protocol, xs: list[Any]) -> bool:
    """A backward taking the output gradient alone that steps the weights by a step size
    the layer holds (``self.learning_rate``): the one float of the layer's own, which
    the output does not depend on, that reads as a step size, when the backward changes
    nothing else it held (no array, no float) and its second step, from the same point,
    is its first (no momentum: a history would make the change no gradient). The
    layer's copy then holds 1.0 there."""
    layer, style = proto.layer, proto.style
    names = held_floats(layer)
    found, stepped = [], proto.stepped
    for name in names:
        proto.step_attr, notes = name, list(proto.notes)
        try:
            if not in_output(proto, xs, name) and _reads_a_step(proto, xs, name) and \
                    proto.stepped and not _scalar_stepped(proto) and \
                    not _changed_otherwise(proto, xs, name) and \
                    _history_free(proto, xs, name) and _gradient_sized(proto, xs):
                found.append((name, proto.notes, proto.stepped))
        except ProtocolError:  # a scaled input gradient: not this reading
            pass
        proto.notes, proto.style, proto.step_attr, proto.stepped = notes, style, None, stepped
    if len(found) != 1:
        return False
    name, proto.notes, proto.stepped = found[0]
    proto.layer, proto.held_step = clone(layer), name
    set_path(proto.layer, name, 1.0)  # every evaluation steps by 1.0: minus the change
    proto.note(f"{type(layer).__name__}.{name} is the step size its backward takes: set "
               "to 1.0 on the copies checked")
    return True


def _gradient_sized(proto: Protocol, xs: list[Any]) -> bool:
    """For a loss's backward, given no output gradient to scale (so that a step affine in
    it cannot be told): whether its step has the sizes of a gradient, not one size for
    every element of every array (Adam's first step, ``lr * sign(g)``: no gradient)."""
    if proto.style != "given":
        return True
    seen = _stepped(proto, xs, 1.0)
    if seen is None:
        return False
    sizes = [np.abs(seen[1][p]) for p in proto.stepped if p in seen[1]]
    sizes = [b for b in (a[a > 0] for a in sizes) if b.size > 1]
    return not sizes or not all(np.allclose(a, a.max(), rtol=1e-3, atol=0.0) for a in sizes)


def _holds_float(x: Any) -> bool:
    """Whether an input is or holds a float (not a flag, a mode string, integer labels)."""
    return any(is_float_array(v) or is_float_scalar(v) for v in [x, *(v for _, v in walk(x))]
               ) if not isinstance(x, (bool, str)) else False


def held_floats(layer: Any) -> list[str]:
    """The floats a layer holds (or its class, set on the copies), as ``name``, those held
    one object away, as
    ``owner.name`` (``self.nn.learning_rate``: the step size of the network it is in),
    and those in a dict it holds, as ``config['learning_rate']``."""
    if not hasattr(layer, "__dict__"):
        return []
    found = [n for n, v in vars(layer).items() if is_float_scalar(v)]
    found += sorted({n for c in type(layer).__mro__[:-1] for n, v in vars(c).items() if not (
        n.startswith("__") or n in found) and is_float_scalar(v)})  # lr = 0.001 on the class
    found += [f"{n}[{k!r}]" for n, v in vars(layer).items() if isinstance(v, dict)
              for k, w in v.items() if isinstance(k, str) and is_float_scalar(w)]
    for n, v in vars(layer).items():
        if hasattr(v, "__dict__") and not isinstance(v, (type, np.ndarray)) and not \
                callable(v) and not hasattr(v, "__path__") and v is not layer:
            found += [f"{n}.{m}" for m, w in vars(v).items() if is_float_scalar(w)]
    return found


def _scalar_stepped(proto: Protocol) -> bool:
    """Whether a float scalar is among what the backward steps: beside a step size the
    layer holds, a float parameter stepped too leaves the reading unsure (refused)."""
    return any(is_float_scalar(try_path(proto.layer, p)) for p in proto.stepped)


def in_output(proto: Protocol, xs: list[Any], name: str, unsure: bool = True) -> bool:
    """Whether the forward's output changes with the float ``name`` (a scale it applies);
    ``unsure`` when the forward raised with it moved."""
    assert proto.draws is not None
    other = clone(proto.layer)
    try:
        v = np.asarray(try_path(other, name))
        new = v * 1.5 + 0.1  # (near -0.2, its fixed point: moved by adding)
        new = np.where(np.abs(new - v) > 0.05 * (np.abs(v) + 1), new, v + 0.1 * (np.abs(v) + 1))
        Param(name, name, name).write(other, new)
        a = forward_output(clone(proto.layer), proto.forward, clone(xs), proto.draws,
                           proto.out_path)
        b = forward_output(other, proto.forward, clone(xs), proto.draws, proto.out_path)
    except Exception:  # noqa: BLE001 - no evidence (not read as a step size)
        return unsure
    return not _same_return(a, b)


def _changed_otherwise(proto: Protocol, xs: list[Any], step: str) -> bool:
    """Whether the backward changes an array or a float of the layer's own other than
    those it steps by the step size (a float parameter stepped too, an update of its
    own beside one scaled by a bug factor)."""
    seen = _stepped(proto, xs, 1.0)
    steps = [seen[1][p] for p in proto.stepped if p in seen[1]] if seen is not None else []
    if seen is None or any(not p.startswith("<made>") and p.removeprefix(SCALAR) not in
                           proto.stepped and np.any(d) and not any(  # a velocity: the step
                               np.shape(d) == np.shape(t) and np.allclose(d, t) for t in steps)
                           for p, d in seen[1].items()):  # it took, from zeros (momentum:
        return True  # the second step tells, _history_free)
    layer = clone(proto.layer)
    set_path(layer, step, 1.0)
    before = {n: try_path(layer, n) for n in held_floats(layer) if n not in proto.stepped}
    try:
        _step_once(proto, layer, xs)
    except Exception:  # noqa: BLE001 - no evidence: not read as a step size
        return True
    return any(try_path(layer, n) != v for n, v in before.items())


def _history_free(proto: Protocol, xs: list[Any], step: str) -> bool:
    """Whether two steps in a row, tiny, from the same point change the stepped arrays
    the output depends on alike: a momentum's second step carries its first. (Arrays
    the output does not depend on, a velocity ``m_w`` or a record of the step
    ``delta_w = lr * grad_w``, are compared through the weights they move.)"""
    layer = clone(proto.layer)
    set_path(layer, step, 1e-6)
    weights = [p for p in proto.stepped if in_output(proto, xs, p)]
    changes: list[dict[str, Any]] = []
    try:
        for _ in range(2):
            before = {p: np.array(get_path(layer, p), copy=True) for p in weights}
            _step_once(proto, layer, xs)
            changes.append({p: get_path(layer, p) - before[p] for p in weights})
    except Exception:  # noqa: BLE001 - no evidence: not read as a step size
        return False
    return bool(weights) and all(np.allclose(  # (to the largest change's scale: the
        changes[1][p], changes[0][p], rtol=1e-3, atol=1e-18 + 1e-3 * np.max(  # rounding of
            np.abs(changes[0][p]), initial=0.0)) for p in weights)  # a tiny one is large)


def _step_once(proto: Protocol, layer: Any, xs: list[Any]) -> None:
    """One forward and ``backward(gradient)`` (in its reading's order) on ``layer``."""
    assert proto.draws is not None
    proto.draws.reset()
    out = read_output(layer, getattr(layer, proto.forward)(*clone(xs)), proto.out_path)
    dy = uneven(ones_like(out))  # after the inputs again when it takes them (_held_step)
    getattr(layer, proto.backward)(*[dy if k is None else clone(xs[k]) for k in
                                     [k for k in proto.order if k != STEP] or [None]])


def _placed(proto: Protocol, xs: list[Any], names: list[str], by_name: bool) -> bool:
    """The forward's inputs again (in order), the output gradient and a step size, in the
    one order that reads as a step: ``bp(input, delta, lrt)`` by the inputs' names, or,
    named otherwise, any place for the gradient and the step
    (``backwardpass(lr, activation_prev, delta)``); several are no reading."""
    n = len(xs)
    orders = [[*range(n), None, STEP]] if by_name else [
        o for i in range(n + 2) for j in range(n + 2) if i != j
        for o in [_with(n, i, j)]]
    saved, style, found, scaled, stepped = proto.order, proto.style, [], [], proto.stepped
    for order in orders:
        proto.order, notes = order, list(proto.notes)
        try:
            if _reads_a_step(proto, xs, names[order.index(STEP)]):
                found.append((order, proto.notes, proto.stepped))
        except ProtocolError as exc:  # a step, and an input gradient scaled by it
            scaled.append(exc)
        proto.notes, proto.style, proto.stepped = notes, style, stepped
    if not found and len(scaled) == 1:
        raise scaled[0]
    if len(found) > 1:  # an order whose gradient argument changes nothing reads no gradient
        moving = [f for f in found if _moves_with_gradient(proto, xs, f[0])]  # (returning
        found = moving or (found[:1] if _same_steps(proto, xs, [f[0] for f in found])  # none:
                           else [])  # -rate * delta steps alike either way round: one)
    if len(found) > 1 and _alike(proto, xs, [f[0] for f in found]):
        found = found[:1]  # they give the same (arguments it ignores): one reading
    if len(found) != 1:
        proto.order = saved
        return False
    proto.order, proto.notes, proto.stepped = found[0]
    proto.style = "step"
    proto.notes = [t for t in proto.notes if "inputs again: called as" not in t]
    return True


def _stepped_in(proto: Protocol, xs: list[Any], order: list[Any], g: float = 1.0
                ) -> tuple[Any, dict[str, np.ndarray], dict[str, float]] | None:
    """:func:`_stepped` (step size 1) with the backward called in ``order``."""
    saved, proto.order = proto.order, order
    try:
        return _stepped(proto, xs, 1.0, g)
    finally:
        proto.order = saved


def _moves_with_gradient(proto: Protocol, xs: list[Any], order: list[Any]) -> bool:
    """Whether, called in ``order``, the backward returns twice what it returns for twice
    the output gradient (not so when that slot takes an argument it only reads the batch
    size of, ``activation_prev.shape[0]``, nor the input of a sigmoid's backward)."""
    one, two = _stepped_in(proto, xs, order), _stepped_in(proto, xs, order, 2.0)
    if one is None or two is None:
        return False
    a = [np.asarray(v, dtype=np.float64) for v in leaves(one[0]) if is_float_array(v)]
    b = [np.asarray(v, dtype=np.float64) for v in leaves(two[0]) if is_float_array(v)]
    return len(a) == len(b) and any(np.any(u) for u in a) and all(  # twice, for twice
        u.shape == v.shape and np.allclose(2 * u, v, rtol=1e-6, atol=1e-12) for u, v in zip(
            a, b, strict=True))


def _alike(proto: Protocol, xs: list[Any], orders: list[list[Any]]) -> bool:
    """Whether the backward returns the same called in each of ``orders``."""
    got = [_stepped_in(proto, xs, order) for order in orders]
    runs = [g for g in got if g is not None]
    return len(runs) == len(got) and all(_same_return(g[0], runs[0][0]) for g in runs[1:])


def _same_steps(proto: Protocol, xs: list[Any], orders: list[list[Any]]) -> bool:
    """Whether the backward returns nothing and changes the arrays alike called in each
    of ``orders``, for the output gradient and for twice it."""
    for g in (1.0, 2.0):
        seen = [_stepped_in(proto, xs, order, g) for order in orders]
        got = [x[1] for x in seen if x is not None and x[0] is None]
        if len(got) != len(seen) or not all(d.keys() == got[0].keys() and all(
                np.array_equal(d[k], got[0][k]) for k in d) for d in got[1:]):
            return False
    return True


def _with(n: int, i: int, j: int) -> list[Any]:
    """The inputs ``0..n-1`` in order, the output gradient (None) at ``i`` and the step
    size at ``j``."""
    rest = iter(range(n))
    return [None if k == i else STEP if k == j else next(rest) for k in range(n + 2)]


def _reads_a_step(proto: Protocol, xs: list[Any], name: str) -> bool:
    """:func:`takes_a_step` observed, ``name`` the step size's argument."""
    seen = [_stepped(proto, xs, a) for a in (1.0, 2.0)]
    if None in seen:  # not a step size: the reading of the call is left as it was
        return False
    (r1, d1, scale), (r2, d2, _) = seen  # type: ignore[misc]
    moved = [p for p in d1 if not p.startswith("<made>") and not np.array_equal(d1[p], d2[p])]
    moved = _with_scalars(proto, xs, moved, d1, d2)
    if not moved and _all_zero(r1):  # a softmax's backward(z, grads) given constant
        return False  # grads: zero whatever they are, no sign that it ignores them
    if not moved:  # changing nothing, it ignores the argument for 1 and 2, and what it
        third, zero = _stepped(proto, xs, -1.0), _stepped(proto, xs, 0.0)  # gives for -1
        if third is None or zero is None or not _covers(seen[0], third) or not \
                _covers(seen[0], zero) or not _same_return(  # and 0 is there too (a flag
                _made(seen[0]), _made(seen[1])):  # -1 returning more: dx, dgamma, dbeta; a
            return False  # layer index 0 none: not so is_first_layer, nor a sign mask of
            # its input's, nor an L2 term in the gradients it stores)
    if not all(np.allclose(d2[p], 2 * d1[p], rtol=1e-6, atol=1e-12 + scale.get(p, 0.0))
               for p in moved):
        return False
    if moved and None in (proto.order or [None]):  # a step of SGD is affine in the
        # gradient too (Adam's first is not; a loss's backward takes no gradient); its
        twice, none = _stepped(proto, xs, 1.0, 2.0), _stepped(proto, xs, 1.0, 0.0)  # constant
        if twice is None or none is None or not all(np.allclose(  # term, a decay of the
                twice[1][p] - d1[p], d1[p] - none[1][p], rtol=1e-6,  # weight itself (an L2
                atol=1e-12 + 2 * scale.get(p, 0.0)) and _decay(proto, xs, p, none[1][p])  # term)
                for p in moved):  # is a gradient bug; another (momentum's) no step read
            return False
    if not _same_return(r1, r2):  # what it returns depends on the step it took
        if not moved:
            return False
        if _scaled(r1, r2):
            raise ProtocolError("mismatch", (
                f"{type(proto.layer).__name__}.{proto.backward} returns an input gradient "
                f"that scales with its step size {name} (twice as large for a step twice "
                "as large): the input's gradient must not depend on the learning rate"))
        proto.note(f"what {type(proto.layer).__name__}.{proto.backward} returns changes "
                   f"with {name}: computed after the step it takes? (called with 1.0)")
    proto.stepped = [p.removeprefix(SCALAR) for p in moved]
    proto.style = "given" if proto.style == "given" else "step"  # (a loss's: times dy)
    proto.note((f"the step size {name} it holds " if proto.step_attr is not None else
                f"backward's argument {name} ") + (
        f"scales the change it makes to {', '.join(proto.stepped)} (a step size): called "
        "with 1.0, "
        "their gradients read as minus that change" if moved else
        "changes nothing it returns or holds: called with 1.0"))
    return True


def _with_scalars(proto: Protocol, xs: list[Any], moved: list[str], d1: dict[str, Any],
                  d2: dict[str, Any]) -> list[str]:
    """``moved`` less the float scalars that do not step as a parameter does (twice the
    change for twice the step size, and for twice the gradient: GIN's learnable
    ``self.eps -= lr * grad_eps``); a counter or a decaying rate is no parameter."""
    floats = [p for p in moved if p.startswith(SCALAR)]
    if not floats:
        return moved
    twice = _stepped(proto, xs, 1.0, 2.0)
    kept = [p for p in floats if twice is not None and p in twice[1] and np.allclose(
        d2[p], 2 * d1[p], rtol=1e-6, atol=1e-15) and np.allclose(
        twice[1][p], 2 * d1[p], rtol=1e-6, atol=1e-15) and in_output(  # not a log of
        proto, xs, p.removeprefix(SCALAR))]  # the step's size: the output depends on it
    return [p for p in moved if p not in floats] + kept


def _stepped(proto: Protocol, xs: list[Any], a: float, g: float = 1.0
             ) -> tuple[Any, dict[str, np.ndarray], dict[str, float]] | None:
    """What one forward and ``backward(g * gradient, a)`` on a copy returned, the change
    it made to each array the layer holds, and the rounding of each; None if it raised."""
    assert proto.draws is not None
    layer = clone(proto.layer)
    proto.draws.reset()
    try:
        out = read_output(layer, getattr(layer, proto.forward)(*clone(xs)), proto.out_path)
        before = float_state(layer) | held_values(layer)  # parameter objects' .data too
        scalars = {p: try_path(layer, p) for p in float_scalars(layer) if p != proto.step_attr}
        dy = times(uneven(ones_like(out)), g)
        if proto.step_attr is not None:  # the step size the layer holds
            set_path(layer, proto.step_attr, a)
        ret = getattr(layer, proto.backward)(*_step_args(proto, xs, dy, a))
    except Exception:  # noqa: BLE001 - not a step size
        return None
    now = {p: v for p, v in walk(layer) if is_float_array(v)} | {
        p: v for p, (_, v) in held_values(layer).items()}
    made = {p: v for p, v in now.items() if p not in before}  # arrays it created
    floats = {f"{SCALAR}{p}": np.asarray(try_path(layer, p) - v, dtype=np.float64)
              for p, v in scalars.items() if is_float_scalar(try_path(layer, p))}
    return ret, {p: now[p] - old for p, (_, old) in before.items()
                 if p in now and _broadcasts(now[p].shape, old.shape)} | {
        f"<made>{p}": v for p, v in made.items()} | floats, {p: _rounding(now[p])
                                                            for p in now}


def _step_args(proto: Protocol, xs: list[Any], dy: Any, a: float) -> list[Any]:
    """The backward's arguments in ``proto.order``: ``dy``, the step size ``a`` and
    copies of the inputs."""
    return [dy if k is None else a if k == STEP else 0.0 if k == NAUGHT else clone(xs[k])
            for k in proto.order or ([None] if proto.step_attr else [None, STEP])]


def _owner_called(proto: Protocol, xs: list[Any]) -> bool:
    """Whether the backward calls a method of the object holding the step size (an
    optimizer's own step, ``self.optimizer.optim(w, dw)``), not only reads its float
    (``self.nn.learning_rate`` in the layer's own step); True when it cannot be told."""
    assert proto.draws is not None and proto.step_attr is not None
    layer = clone(proto.layer)
    owner = try_path(layer, proto.step_attr.rsplit(".", 1)[0])
    proto.draws.reset()
    try:
        out = read_output(layer, getattr(layer, proto.forward)(*clone(xs)), proto.out_path)
        with watched(owner, set()) as ran:
            getattr(layer, proto.backward)(*_step_args(proto, xs, uneven(ones_like(out)), 1.0))
    except Exception:  # noqa: BLE001 - no evidence: read as the optimizer's
        return True
    return bool(ran)


def _all_zero(ret: Any) -> bool:
    """Whether a backward returned arrays, every one all zero."""
    arrays = [v for v in leaves(ret) if isinstance(v, np.ndarray)]
    return bool(arrays) and not any(np.any(v) for v in arrays)


def _made(seen: Any) -> list[np.ndarray]:
    """The arrays a backward created, from what :func:`_stepped` saw."""
    return [v for p, v in sorted(seen[1].items()) if p.startswith("<made>")]


def _rounding(a: np.ndarray) -> float:
    """What rounding leaves in a change of ``a`` (a step on float32 weights is exact to
    their precision only)."""
    return float(16 * np.finfo(a.dtype).eps * np.max(np.abs(np.asarray(a)), initial=0.0)) if \
        a.dtype.kind == "f" else 0.0


def _broadcasts(a: tuple[int, ...], b: tuple[int, ...]) -> bool:
    """Whether arrays of shapes ``a`` and ``b`` broadcast together (an update whose
    gradient had a wrong shape can widen its parameter: then that is its verdict)."""
    try:
        np.broadcast_shapes(a, b)
    except ValueError:
        return False
    return True


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _scaled(a: Any, b: Any) -> bool:
    """Whether ``b`` returned twice what ``a`` did, not all zero."""
    xa, xb = leaves(a), leaves(b)
    arrays = [(u, v) for u, v in zip(xa, xb, strict=False) if isinstance(u, np.ndarray)
              and isinstance(v, np.ndarray) and u.shape == v.shape and np.any(u)]
    return len(xa) == len(xb) and bool(arrays) and all(
        np.allclose(v, 2 * u, rtol=1e-9, atol=0) for u, v in arrays)


def _decay(proto: Protocol, xs: list[Any], path: str, change: Any) -> bool:
    """Whether the change a step makes for a zero gradient is none, or proportional to
    the array it steps (weight decay, ``W -= lr * (dW + lam * W)``, in the layer's own
    step), not a velocity's (``v = mu * v + g``) nor an optimizer object's decay."""
    c = np.asarray(change, dtype=np.float64)
    if not np.any(c):
        return True
    w = np.asarray(try_path(proto.layer, path.removeprefix(SCALAR)), dtype=np.float64)
    if not (w.shape == c.shape and bool(np.any(w)) and multiple_of(c, w, 1e-6)):
        return False
    return proto.step_attr is None or "." not in proto.step_attr or not _owner_called(
        proto, xs)  # an optimizer's own step: its decay, the gradient handed to it read


def _covers(seen: Any, other: Any) -> bool:
    """Whether every array the backward returned or created in ``other`` (what
    :func:`_stepped` saw) it returned or created in ``seen`` too, and every change it made
    to an array the layer held it made there too (a ``db`` it fills for 0 only)."""
    mine = [v for v in [*leaves(seen[0]), *_made(seen)] if isinstance(v, np.ndarray)]
    return all(any(np.shape(u) == np.shape(v) and np.array_equal(u, v, equal_nan=True)
                   for u in mine) for v in [*leaves(other[0]), *_made(other)]
               if v is not None) and all(v is None or isinstance(v, np.ndarray) for v in
                                         leaves(other[0])) and all(
        p in seen[1] and np.array_equal(seen[1][p], d, equal_nan=True)
        for p, d in other[1].items() if not p.startswith("<made>") and np.any(d))


def _same_return(a: Any, b: Any) -> bool:
    xa, xb = leaves(a), leaves(b)
    return len(xa) == len(xb) and all(
        (u is None and v is None) or (u is not None and v is not None and np.shape(u) ==
                                      np.shape(v) and np.array_equal(u, v, equal_nan=True))
        for u, v in zip(xa, xb, strict=True))


def constant_scalars(layer: Any, found: list[Param], step: str | None = None) -> str:
    """The note naming the float scalars held constant: those with no gradient found,
    but the step size the layer holds (``step``), set to 1.0."""
    used = {q for p in found for q in (p.value, p.grad, *p.also, step) if isinstance(q, str)}
    held = [s for s in float_scalars(layer) if s not in used]
    if not held:
        return ""
    return (f"float scalars with no gradient found held constant (hyperparameters): "
            f"{', '.join(held)}; a scalar parameter needs its gradient beside it (dX, grad_X) "
            "or in params=/grads=")
