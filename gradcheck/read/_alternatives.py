"""Readings a layer's backward is tried under when the plain one does not fit: a
forward returning several arrays whose backward differentiates the first, a 1-d output's
gradient given as one row, one input's gradient per call (``backward(grad, wrt,
*inputs)``), the inputs again beside the output gradient in an order only a trial
tells. Each is taken only on evidence observed here; an argument's name (``output``,
``input``) only settles which of several orders that all run is meant.
"""

from __future__ import annotations

import inspect
import itertools
import re
from collections.abc import Callable
from typing import Any

import numpy as np

from ._beside_loss import beside_loss
from ._conventions import misread
from ._discovery import float_arrays, is_float_array
from ._flat import returned_names
from ._layer_call import Protocol, cotangent_named, ones_like, times, uneven
from ._observe import float_state, positional_names, same_but_unit, stored
from ._protocol import ProtocolError, UserCodeError, clone, map_arrays
from ._reading import (
    EACH,
    FIRST,
    OUTPUT,
    Probe,
    doubles,
    gives_something,
    leaves,
    linear,
    probe,
    unchanged,
)
from ._recompute import recomputing
from ._tokens import CACHED, FIRST_OUT, SELF, SINK, filled, token_orders

_OUT_NAME = re.compile(r"outputs?|out_put", re.I)  # a whole argument name: the forward's output
_IN_NAME = re.compile(r"inputs?|in_put", re.I)  # and an input

__all__ = ["by_order", "by_tokens", "by_trial", "each_holds", "first_of_several", "one_dimensional",
           "returns_cache", "returns_linear", "rows_as_columns", "several_outputs",
           "takes_gradient"]


def each_holds(proto: Protocol, xs: list[Any]) -> bool:
    """Whether ``backward(grad, k, *inputs)`` reads as one input's gradient per call: it
    stores nothing (no gradient accumulates over the calls), returns for each ``k`` an
    array of input ``k``'s shape, different ones for different ``k``, twice as large for
    twice the output gradient (``backward(dout, lr, x, h)`` does not)."""
    draws = proto.draws
    assert draws is not None

    def run(scale: float) -> Any:
        return probe(proto.layer, proto.forward, proto.backward, xs, draws,
                     (EACH, proto.order), proto.out_path,
                     lambda o: times(ones_like(o), scale), proto.then)
    try:
        first = run(1.0)
        ret = first.ret
        if first.stored or not isinstance(ret, tuple) or len(ret) != len(xs) or any(
                np.shape(r) != np.shape(x) or not is_float_array(r)
                for r, x in zip(ret, xs, strict=True)):
            return False
        distinct = len(xs) < 2 or not all(np.array_equal(ret[0], r) for r in ret[1:])
        return distinct and linear(first, run(2.0))
    except UserCodeError:
        return False


def one_dimensional(proto: Protocol, returned: Any) -> bool:
    """Whether the output is one vector, 1-d or a column ``(m, 1)`` (course code taking
    its gradient as one row)."""
    columns = bool(proto.shapes) and all(  # a column output beside column inputs only (a
        isinstance(s, tuple) and len(s) == 2 and s[1] == 1 for s in proto.shapes  # batch's
        if s is not None and s != "sequence")  # (N, 1) head is no column of one sample)
    return proto.out_path is None and isinstance(returned, np.ndarray) and (
        returned.ndim == 1 or returned.ndim == 2 and returned.shape[1] == 1 and columns) and \
        returned.dtype.kind == "f" and not _passes_on(getattr(proto.layer, proto.backward))


def rows_as_columns(cands: dict[str, Any]) -> dict[str, Any]:
    """For a backward given its output's gradient as one row: the rows ``(1, n)`` it
    stored, seen as the columns ``(n, 1)`` its arrays are (``diff_bias`` of a column
    bias), for matching gradients to arrays by shape."""
    return {k: v.T if isinstance(v, np.ndarray) and v.ndim == 2 and v.shape[0] == 1 and
            v.shape[1] > 1 else v for k, v in cands.items()}


def _number(r: Any) -> bool:
    """A Python or NumPy number, or an array holding one (0-d or of size 1: an auxiliary
    loss, ``(1,)``; no bool)."""
    return isinstance(r, int | float | np.number) and not isinstance(r, bool) or (
        isinstance(r, np.ndarray) and r.size == 1 and r.dtype.kind in "iuf")


def first_of_several(proto: Protocol, xs: list[Any], returned: Any,
                      exc: UserCodeError) -> bool:
    """Whether a first-output reading may be tried: the forward returned a tuple of
    several float arrays (after the first, None or numbers too), the backward raised as
    on a tuple used as an array, it takes one required argument, and no output left out
    has the shape of an input (a recurrent state whose gradient it must take)."""
    if not isinstance(returned, tuple) or len(returned) < 2 or hasattr(returned, "_fields") \
            or not is_float_array(returned[0]) or not all(
                is_float_array(r) or r is None or _number(r) for r in returned[1:]) or \
            proto.out_path is not None:  # (out, None): attention weights not asked for,
        return False  # (out, 0), (out, sum(W ** 2)): a penalty the training loop adds
    if exc.what != f"{type(proto.layer).__name__}.{proto.backward}":
        return False
    method = getattr(proto.layer, proto.backward)  # backward(dh) or backward(dh=1)
    if len(positional_names(method, required=True) or []) != 1 and (
            positional_names(method, required=True) != [] or len(
                positional_names(method) or []) != 1):
        return False
    shapes = {np.shape(x) for x in xs if isinstance(x, np.ndarray)}
    return not any(np.shape(r) in shapes for r in returned[1:]) and (
        misread(exc.as_dict()) or not any(np.shape(r) == np.shape(returned[0]) for r in
                                          returned[1:]) and _runs_on_first(proto, xs))
    # (an error of another kind: only beside outputs of other shapes than the first's,
    # attention weights; (h, c) of one shape are states a backward may take both of)


def _runs_on_first(proto: Protocol, xs: list[Any]) -> bool:
    """Whether the backward, after a forward on a copy, runs given the first output's
    gradient alone and returns or stores a float array (what it raised on the tuple,
    ``matmul: ... mismatch``, came from the tuple: an attention's ``(out, weights)``)."""
    layer = clone(proto.layer)
    if proto.draws is not None:
        proto.draws.reset()
    try:
        with np.errstate(all="ignore"):
            out = getattr(layer, proto.forward)(*clone(xs))
            before = float_state(layer)
            ret = getattr(layer, proto.backward)(times(ones_like(out[0]), 1.0))
    except Exception:  # noqa: BLE001 - no evidence: the error stays
        return False
    return any(is_float_array(r) for r in (ret if isinstance(ret, tuple) else (ret,))) or \
        bool(stored(before, layer))


def several_outputs(proto: Protocol, returned: Any, exc: UserCodeError) -> str:
    """Advice for a backward taking one output gradient that raised on the forward's
    tuple of several arrays when the first-output reading was refused (another output
    has an input's shape: a state, or ``(z, sigmoid(z))`` of a square layer)."""
    if not isinstance(returned, tuple) or len(returned) < 2 or not all(
            is_float_array(r) for r in returned) or exc.what != (
            f"{type(proto.layer).__name__}.{proto.backward}"):
        return ""
    return (f"; the forward returns {len(returned)} arrays and the backward was given their "
            "gradients as one tuple: which output it differentiates cannot be told when one "
            "has an input's shape (a state); check a forward returning that output alone "
            "with check_vjp (fwd = lambda *a: (layer.forward(*a)[0], a) for the first, [1] "
            f"for the second, taking the forward's {len(proto.shapes) or 'own'} input(s))")


def penalty_checked(proto: Protocol, xs: list[Any], returned: Any, first: Any) -> Any:
    """``first``, the probe of a first-output reading, unless the forward also returned a
    nonzero number (``(out, lam * np.sum(W ** 2))``, a penalty) and the backward's
    results hold a term that does not scale with the output gradient (that number's own
    gradient, ``dW += 2 * lam * W``): which outputs it differentiates cannot be told, a
    ``bad-protocol``."""
    numbers = [r for r in returned[1:] if _number(r) and np.any(r)] if isinstance(
        returned, tuple) and proto.out_path == FIRST else []
    if not numbers or proto.draws is None:
        return first
    draws = proto.draws

    def run(scale: float) -> dict[str, np.ndarray]:
        return _results(probe(proto.layer, proto.forward, proto.backward, xs, draws,
                              (proto.style, proto.order), proto.out_path,
                              lambda o: times(ones_like(o), scale), proto.then))
    a, b, c = run(1.0), run(2.0), run(0.0)
    if not any(k in b and k in c and a[k].shape == b[k].shape == c[k].shape
               and not np.array_equal(a[k], b[k]) and np.any(c[k]) and np.allclose(
                   b[k] - a[k], a[k] - c[k], rtol=1e-6, atol=1e-12) for k in a):
        return first
    raise ProtocolError("bad-protocol", (
        f"{type(proto.layer).__name__}.{proto.forward} returned its output and "
        f"{len(numbers)} nonzero number(s) "
        f"({', '.join(f'{float(np.ravel(n)[0]):.4g}' for n in numbers)}"
        f"), and {proto.backward}'s results hold a term that does not scale with the "
        "output gradient (that number's own gradient, a penalty's?): whether it "
        "differentiates the first output alone or their sum cannot be told; check the "
        "output alone with a backward that leaves that term out, or name the output "
        "(output='...') if the forward stores it"))


def by_order(proto: Protocol, xs: list[Any], exc: UserCodeError, returned: Any
             ) -> list[Any] | None:
    """The order of a backward that raised given the output gradient alone, read by
    trial (:func:`by_trial`), by the forward's values and a gradient dict
    (:func:`by_tokens`) or as a loss's beside its prediction (:func:`beside_loss`)."""
    return by_trial(proto, xs, exc) or by_tokens(proto, xs, exc, returned) or beside_loss(
        proto, xs, exc, returned)


def by_trial(proto: Protocol, xs: list[Any], exc: UserCodeError) -> list[Any] | None:
    """The order of a backward taking the forward's inputs again and the output gradient
    under names of its own (``forward(img)``, ``backward(inputs, prev_grad)``), after it
    raised on missing arguments given the gradient alone: each place for the output
    gradient is tried, the inputs in order around it (for one input, the forward's
    output in its place too), and the one order whose call runs and gives twice every
    result for twice the gradient is taken (several giving the same results are one);
    none, or several giving different ones, None.
    """
    method = getattr(proto.layer, proto.backward)
    n = len(xs)
    if exc.what != f"{type(proto.layer).__name__}.{proto.backward}" or proto.draws is None:
        return None
    if _passes_on(method) and "missing" in exc.text and isinstance(exc.exc, TypeError):
        return _given_again(proto, xs)
    m = len(positional_names(method, required=True) or [])
    if not exc.ours or "missing" not in exc.text:
        return None
    floats = [k for k, x in enumerate(xs) if not isinstance(x, (bool, np.bool_))]
    if len(floats) < n:  # a training flag is not given back: the float inputs, the output
        if m not in (len(floats) + 1, len(floats) + 2):  # gradient and the forward's output
            return None  # (backward(dout, input, output) of forward(x, train))
        pool = [None, *floats] + ([OUTPUT] if m == len(floats) + 2 else [])
        return _trial(proto, xs, [list(o) for o in itertools.permutations(pool)],
                      _by_names(proto, method))
    if m == n + 2 and n <= 2:  # the inputs, the output gradient and the forward's output
        return _trial(proto, xs, [list(o) for o in itertools.permutations(  # in any order,
            [None, OUTPUT, *range(n)])])  # the one that runs (backward(delta, y, x, h) of
    if m != n + 1:  # forward(x, h), shapes apart); names settle no tie here (review 103:
        return None  # backward(dh, h, x, h_prev) takes the new state under the input's)
    orders: list[list[Any]] = [[*range(k), None, *range(k, n)] for k in range(n + 1)]
    if n == 1:  # the forward's output in the input's place (tanh's 1 - y ** 2) too: if
        orders += [[None, OUTPUT], [OUTPUT, None]]  # both run, the order is no evidence
    return _trial(proto, xs, orders, _by_names(proto, method))  # but for their names


def _by_names(proto: Protocol, method: Any) -> Callable[[list[Any]], bool]:
    """Whether an order gives the forward's output to the argument named ``output`` and
    an input to the one named ``input`` or as the forward names that input: what settles
    a trial whose several orders run and differ (``backward(dout, input, output)`` of a
    ReLU masking on either; ``backward_delta(input, delta)`` of a tanh), when it names an
    input (``backward(grad, output)`` alone may take the input under that name: no order
    is taken)."""
    names = positional_names(method, required=True) or []
    f_names = positional_names(getattr(proto.layer, proto.forward)) or []
    settles = any(_IN_NAME.fullmatch(a) or a in f_names for a in names)  # an input named

    def named(order: list[Any]) -> bool:
        if not settles:
            return False
        for a, o in zip(names, order, strict=False):
            given = isinstance(o, int) and not isinstance(o, bool)
            if (_OUT_NAME.fullmatch(a) and o != OUTPUT or _IN_NAME.fullmatch(a) and not given
                    or a in f_names and o != f_names.index(a)):
                return False
        return True
    return named


def _passes_on(method: Any) -> bool:
    """Whether ``method`` takes ``*args`` only (it hands them to another method)."""
    try:
        params = list(inspect.signature(method).parameters.values())
    except (TypeError, ValueError):
        return False
    return any(p.kind is p.VAR_POSITIONAL for p in params) and not any(
        p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) for p in params)


def _given_again(proto: Protocol, xs: list[Any]) -> list[Any] | None:
    """``backward(*args)`` handing its arguments to a method that raised on a missing
    one, given the output gradient alone: the forward's inputs again, no output
    gradient (a loss's ``backward(x, y)``), when so it runs and returns an array of an
    input's shape."""
    draws = proto.draws
    assert draws is not None
    order = list(range(len(xs)))
    try:
        got = probe(proto.layer, proto.forward, proto.backward, xs, draws, ("given", order),
                    proto.out_path, ones_like, proto.then)
    except UserCodeError:
        return None
    shapes = {np.shape(x) for x in xs if is_float_array(x)}
    return order if isinstance(got.ret, np.ndarray) and got.ret.shape in shapes else None


def by_tokens(proto: Protocol, xs: list[Any], exc: UserCodeError, returned: Any = None
              ) -> list[Any] | None:
    """The order of a backward taking, beside the output gradient, the forward's second
    value (``A, Z = forward(...)``; ``backward(dA, A_prev, W, b, Z)``) or a dict it fills
    with the parameters' gradients (``backward(x, cache, dout, gradients)``), and the
    inputs again or none of them, after the plain call raised: every order of these the
    signature leaves open (inputs named as the forward's at their places) is tried, as
    :func:`by_trial` does. The output of a forward returning two values is the first,
    given too to a backward of a one-input forward when no input has its shape (which of
    the two it takes then shows)."""
    if exc.what != f"{type(proto.layer).__name__}.{proto.backward}" or proto.draws is None:
        return None
    method = getattr(proto.layer, proto.backward)
    two = isinstance(returned, tuple) and len(returned) == 2 and (is_float_array(
        returned[0]) or isinstance(returned[0], (float, np.floating)))
    if two and proto.out_path not in (None, FIRST) or not two and proto.out_path is not None:
        return None
    first = two and len(xs) == 1 and np.shape(returned[0]) != np.shape(xs[0])  # the output
    orders = token_orders(positional_names(method, required=True) or [], (positional_names(
        getattr(proto.layer, proto.forward)) or [])[:len(xs)], len(xs), two, first)
    if not orders:
        return None
    was, proto.out_path = proto.out_path, FIRST if two else proto.out_path
    order = _trial(proto, xs, orders)
    proto.out_path = was if order is None else proto.out_path
    return order


def _trial(proto: Protocol, xs: list[Any], orders: list[list[Any]],
           named: Callable[[list[Any]], bool] | None = None) -> list[Any] | None:
    """The one order of ``orders`` whose call runs and gives twice every result for
    twice the gradient (several giving the same results are one; of several giving
    different ones, the one ``named`` takes); else None."""
    draws = proto.draws
    assert draws is not None
    found = []
    for order in orders:

        def run(scale: float, order: list[Any] = order) -> Any:
            return probe(proto.layer, proto.forward, proto.backward, xs, draws,
                         ("inputs", order), proto.out_path,
                         lambda o: times(ones_like(o), scale), proto.then)
        try:
            if linear(first := run(1.0), run(2.0)):
                found.append((order, first))
        except UserCodeError:
            continue
    # the layer itself as an argument (backward(X, layer, V)): only when no other order
    # runs, the inputs are given too (an object read for the input, backward(grad,
    # prev_layer) reading prev.output, is another layer), and it returns a gradient of
    # every input's shape (a flag it fills, an object being true, returns none)
    found = [f for f in found if gives_something(f[1]) or gives_something(probe(  # zeros
        proto.layer, proto.forward, proto.backward, xs, draws, ("inputs", f[0]),  # are no
        proto.out_path, lambda o: uneven(ones_like(o)), proto.then))]  # evidence, an
    # uneven output gradient's too
    found = [f for f in found if SELF not in f[0]] or [  # (a flag where the output goes)
        f for f in found if all(is_float_array(r) for r in leaves(f[1].ret)) and _shaped_as(
            f[1].ret, xs) and f[1].ret is not None and set(range(len(xs))) <= set(f[0])]
    if len(found) > 1:  # those returning one gradient per input, of its shape, first;
        found = [f for f in found if _shaped_as(f[1].ret, xs)] or found  # then those
        found = [f for f in found if _all_fit(f[1].ret, xs, proto.layer)] or found  # whose
        # every array has an input's or a held array's shape (the output for the input
        # in backward(prev_g, prev_h) makes a dW of no array's shape), what they store too
        found = [f for f in found if _all_fit(list(f[1].stored.values()), xs, proto.layer)
                 ] or found
    # a gradient dict given and left empty is no evidence of one (backward(grad, wrt, a, b)),
    # but beside a cache, of a layer holding no array (an activation's)
    bare = not float_arrays(proto.layer)
    found = [f for f in found if SINK not in f[0] or filled(f[1].after) or (
        bare and CACHED in f[0])]
    found = [f for f in found if FIRST_OUT not in f[0]] or found  # the output: a last resort
    if len(found) > 1 and not all(unchanged(found[0][1], f) for _, f in found[1:]) and (
            again := recomputing(proto, xs, [f[0] for f in found])):
        found = [f for f in found if f[0] in again]  # s = self.activate(z): z the input
        proto.note(f"{type(proto.layer).__name__}.{proto.backward} calls {proto.forward}() "
                   "again on the input it is given: that argument is the input, not the "
                   "output")
    if named is not None and not all(unchanged(found[0][1], f) for _, f in found[1:]):
        found = [f for f in found if named(f[0])]
    if found and all(unchanged(found[0][1], f) for _, f in found[1:]):
        return found[0][0]  # one order, or several giving the same (leaky relu: x, y)
    return None


def returns_linear(a: Probe, b: Probe, layer: Any) -> bool:
    """Whether ``b``, run with twice the output gradient of ``a``, returned twice what
    ``a`` did, not all zeros, and what it stored that does not double has the shape of
    an array ``layer`` holds and of no input: the argument is an output gradient, and
    such an array a gradient whose bug the check reports (``dW = x.T @ (dZ * dZ)``) or an
    optimizer's moment (``v_gamma``); a loss's cache it refreshes (``self.losses``, of
    the prediction's shape) says the argument is a prediction."""
    def twice(u: np.ndarray, v: np.ndarray) -> bool:
        return u.shape == v.shape and doubles(u, v)

    ra, rb = ([np.asarray(v, dtype=np.float64) for v in leaves(p.ret)
               if isinstance(v, np.ndarray | np.generic | float)] for p in (a, b))
    if not (ra and len(ra) == len(rb) and any(np.any(u) for u in ra) and all(
            twice(u, v) for u, v in zip(ra, rb, strict=True))):
        return False
    odd = {k: v for k, v in a.stored.items() if k not in b.stored or not twice(
        np.asarray(v, dtype=np.float64), np.asarray(b.stored[k], dtype=np.float64))}
    held = [np.shape(v) for _, v in float_arrays(layer).values()]
    inputs = [np.shape(x) for x in a.xs if isinstance(x, np.ndarray)]
    return all(np.shape(v) in held and np.shape(v) not in inputs for v in odd.values())


def _all_fit(ret: Any, xs: list[Any], layer: Any) -> bool:
    """Whether every float array in ``ret`` has the shape of an input or of a float array
    ``layer`` holds (but for size-1 axes)."""
    shapes = [np.shape(x) for x in xs if isinstance(x, np.ndarray)] + [
        np.shape(v) for _, v in float_arrays(layer).values()]
    return all(any(np.shape(r) == s or same_but_unit(np.shape(r), s) for s in shapes)
               for r in leaves(ret) if is_float_array(r))


def _shaped_as(ret: Any, xs: list[Any]) -> bool:
    """Whether ``ret`` holds one item per input, in order, each None or of its shape."""
    got = ret if isinstance(ret, (tuple, list)) else (ret,)
    return len(got) == len(xs) and all(g is None or np.shape(g) == np.shape(x)
                                       for g, x in zip(got, xs, strict=True))


def returns_cache(proto: Protocol, xs: list[Any], out: Any, given: list[Any],
                  method: Any) -> bool:
    """A forward returning ``(y, cache)``, the cache a container or an array (one of the
    inputs, the output itself as a ReLU's ``return out, out``, ``ext``), beside a backward taking
    two arguments that reads the second (its results change when the cache does) and
    whose results that move with the output gradient,
    and those of a weight's shape, are all zero for a zero one (a second output's
    gradient would make some: ``(h, (h, c))`` with ``backward(dy, dstate)``; one it
    ignores gives no evidence of a cache): the layer is a pair of functions."""
    if not (isinstance(out, tuple) and len(out) == 2 and is_float_array(out[0]) and (
            isinstance(out[1], (tuple, list, dict, np.ndarray))) and
            len(positional_names(method, required=True) or []) == 2) or proto.draws is None:
        return False
    runs = [r for scale, other in ((1.0, False), (2.0, False), (0.0, False), (1.0, True))
            if (r := _pair_run(proto, xs, scale, other)) is not None]
    if len(runs) < 4:
        return False
    one, two, zero, moved = runs
    keys = set(one) & set(two) & set(zero) & set(moved)
    reads = any(not _same(one[k], moved[k]) for k in keys) or _handed_back(proto, method)
    grads = [k for k in keys if not _same(one[k], two[k])]
    held = [a for _, a in float_arrays(proto.layer).values()]
    # nor any array of a weight's shape without it (dV from dc_next alone; not the
    # weight itself returned beside the gradients: dX, [dW, db], [W, b])
    return reads and bool(grads) and not any(np.any(zero[k]) for k in grads) and not any(
        np.any(v) and any(v.shape == a.shape for a in held) and not any(
            np.array_equal(v, a) for a in held) for v in zero.values())


def _handed_back(proto: Protocol, method: Any) -> bool:
    """Whether the backward's second argument is named as the forward returns its second
    value, under no gradient's name (``return outputs, hidden_states`` beside
    ``backward(d_outputs, hidden_states)``): handed back, even if never read."""
    names = positional_names(method, required=True) or []
    back = returned_names(getattr(proto.layer, proto.forward), 2)
    return len(names) == 2 and back is not None and bool(back[1]) and back[1] == names[1] \
        and not cotangent_named(names[1]) and not names[1].lower().startswith(("d", "grad"))


def _pair_run(proto: Protocol, xs: list[Any], scale: float, other: bool
              ) -> dict[str, np.ndarray] | None:
    """What ``backward(scale * gradient, cache)`` returned and stored, by place, after a
    forward on a copy (``other``: with the cache's values changed); None if it raised."""
    assert proto.draws is not None
    layer = clone(proto.layer)
    proto.draws.reset()
    try:
        y, cache = getattr(layer, proto.forward)(*clone(xs))
        state = float_state(layer)
        g = times(ones_like(y), scale) * np.linspace(0.5, 1.5, np.size(y)).reshape(np.shape(y))
        ret = getattr(layer, proto.backward)(g, _changed(cache) if other else cache)
    except Exception:  # noqa: BLE001 - it runs as a pair of functions or it is none
        return None
    found = {f"<ret>{k}": np.asarray(r, dtype=np.float64) for k, r in enumerate(leaves(ret))
             if isinstance(r, np.ndarray)}
    return found | {p: np.asarray(v, dtype=np.float64) for p, v in stored(state, layer).items()}


def _changed(x: Any) -> Any:
    """``x`` with its float arrays moved (``0.5 - 1.5 x``: signs flip too) and its flags
    inverted, containers kept."""
    return map_arrays(x, lambda a: 0.5 - 1.5 * a if a.dtype.kind == "f" else
                      ~a if a.dtype.kind == "b" else a)


def _same(a: np.ndarray, b: np.ndarray) -> bool:
    return a.shape == b.shape and bool(np.allclose(a, b, rtol=1e-9, atol=1e-12))


def takes_gradient(proto: Protocol, run: Callable[[float | None], Any]) -> Any:
    """One forward and backward (``run(scale)``; ``run(None)`` gives it the output
    itself) of a backward taking one argument, after checking that it takes an output
    gradient: a backward whose results, of those that change with its argument, are
    affine in it and not linear, and that reads as a loss's gradient taking targets
    (given the output itself, it gives zero; or more of its argument gives less,
    ``A - y_target``) is a ``bad-protocol``; any other (one ignoring it, clipping it,
    caching arrays beside its gradients, or adding a constant: a gradient bug) is
    checked, and that is its verdict; copies drawing different weights give no
    evidence."""
    first, second = run(1.0), run(2.0)
    try:
        zero = run(0.0)
    except UserCodeError:  # it needs a nonzero gradient (self.grad set for one only):
        return first  # no evidence of a constant term
    a, b, c = _results(first), _results(second), _results(zero)
    if a.keys() != b.keys() or a.keys() != c.keys() or not unchanged(first, run(1.0)):
        return first
    moving = [k for k in a if a[k].shape == b[k].shape and not np.array_equal(a[k], b[k])]
    returned = [k for k in moving if k.startswith("<ret>")]  # the input gradient decides:
    inputs = [k for k in moving if a[k].shape in proto.shapes]  # a stored dW with an L2
    moving = returned or inputs or moving  # term is affine too, and checked
    affine = bool(moving) and all(
        a[k].shape == c[k].shape and np.allclose(b[k] - a[k], a[k] - c[k], rtol=1e-6,
                                                 atol=1e-12 * (1 + np.abs(b[k]).max()))
        for k in moving)
    if affine and any(np.max(np.abs(c[k]), initial=0.0) > 1e-9 * np.max(  # (not a rounding
            np.abs(a[k]), initial=0.0) for k in moving) and (  # of a zero: 1e-16)
            not (returned or inputs) or _targets(
            a, c, moving, run)):  # no input gradient seen: a step's change (a weight decay),
        # or a loss's dW = X.T @ (p - t) taking targets: not told apart
        raise ProtocolError("bad-protocol", (
            f"{type(proto.layer).__name__}.{proto.backward} is affine, not linear, in the "
            "argument it was given as the output gradient (a zero one gives a nonzero "
            "result): it takes something else (a loss's targets?); a loss computed "
            "outside the forward is checked with check_loss on a function returning "
            "(loss, gradient)"))
    return first


def _targets(a: dict[str, np.ndarray], c: dict[str, np.ndarray], moving: list[str],
             run: Callable[[float | None], Any]) -> bool:
    """Whether an affine backward reads as a loss's gradient taking targets: more of its
    argument gives less everywhere (``(p - y) / N``), or the forward's output given as
    its argument gives zero (``(A - y) @ W.T``: the prediction is its own target)."""
    if all(np.all(a[k] - c[k] <= 0) for k in moving):
        return True
    try:
        own = _results(run(None))
    except Exception:  # noqa: BLE001 - no evidence of targets
        return False
    return all(k in own and np.allclose(own[k], 0, atol=1e-12 * (1 + np.abs(c[k]).max()))
               for k in moving)


def _results(p: Any) -> dict[str, np.ndarray]:
    """What a probe's backward returned and stored, by place."""
    out = {f"<ret>{k}": np.asarray(v, dtype=np.float64) for k, v in enumerate(leaves(p.ret))
           if isinstance(v, np.ndarray | np.generic | float)}
    return out | {k: np.asarray(v, dtype=np.float64) for k, v in p.stored.items()}
