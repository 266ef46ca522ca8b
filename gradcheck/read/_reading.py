"""Reading a layer object by running it once: how its backward is called, where its
output and its gradients are, which arrays it holds are state.

:func:`probe` runs one forward and one backward on copies of the layer and records what
they returned and stored. The rest of this module reads the record:

- :func:`call_style`: ``backward(dout)``, ``backward()`` for a scalar output,
  ``backward(dh, dc)`` for a tuple output, or ``backward(*inputs, dout)`` (and the other
  orders a signature makes unambiguous: the backward's parameters named as the
  forward's) for stateless objects that take the inputs again;
- :func:`output_path`: the stored output of a forward that returns nothing;
- :func:`split_return`: a backward returning ``dX, [dW, db]`` (input gradients and the
  gradients of the parameters the layer lists);
- :func:`match_stored`: the stored arrays that are the gradients of the parameters and
  of the inputs (by name, then by shape).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ._arg_names import as_forward_names
from ._boxes import BOX, through_box
from ._discovery import get_path, is_float_array, padded, try_path, walk
from ._flat import as_split, paired, returned_names
from ._observe import (
    backward_named,
    float_state,
    grad_stem,
    last_name,
    positional_names,
    stored,
)
from ._output_pick import narrowed, taken_by_backward
from ._protocol import GlobalDraws, OutputChoice, ProtocolError, call_user, clone
from ._slot import SLOT, slot_style, through_slot
from ._tokens import (
    BUT_LAST,
    CACHED,
    DY,
    FIRST_OUT,
    OUTPUT,
    SELF,
    SINK,
    give_sinks,
    order_text,
)
from ._watch import into_buffers, runs_forward, watched

__all__ = ["BATCH", "CACHE", "CACHED", "EACH", "FEED", "FIRST", "NAUGHT", "OUTPUT", "SLOT", "STEP",
           "UNSURE",
           "GlobalDraws", "Probe", "call_backward", "call_style", "describe", "doubles", "fed_off",
           "leaves",
           "linear", "order_text", "output_doubt", "output_path", "probe", "read_output",
           "unchanged"]


# -- how backward is called --------------------------------------------------------------------
def call_style(method: Any, forward: Any, n: int, base: str, labels: Sequence[bool] = ()
               ) -> tuple[str, list[int | str | None], str]:
    """``("inputs", order, note)`` when ``method`` takes the forward's inputs again and
    the output gradient (``order[k]`` is the input at argument ``k``, None the output
    gradient): its required arguments are named as the forward's, but one;
    ``("given", order, note)`` when they all are (a loss's backward), or are some after
    the first, all labels (``labels[k]``: 0/1 or integers; ``backward(label_tensor)``), or
    the one other beside labels first (``backward(y_pred)`` of ``forward(y_true,
    y_pred)``); :data:`UNSURE` when they are some after the first otherwise.
    Else ``(base, [], "")``: a count of arguments alone is no evidence."""
    names, f_names = positional_names(method, required=True), (positional_names(forward) or [])[:n]
    names = as_forward_names(names, f_names)
    told = getattr(forward, "gradcheck_targets", None)  # a chain's targets, known as such
    labels = [k >= told or (k < len(labels) and labels[k]) for k in range(n)] if \
        isinstance(told, int) else labels
    back = [f_names.index(a) for a in names or [] if a in f_names[1:] or [a] == names == f_names[
        :1] and labels[:1] == [True]]  # (backward(y_true) of forward(y_true, y_pred))
    if names and n >= 2 and len(back) == len(names):
        rest = [k for k in range(n) if k not in back]
        sure = len(labels) == n and (
            (all(labels[k] for k in back) and not labels[rest[0]])  # backward(targets)
            or (labels[0] and len(back) == 1 and rest == [0]))  # (y_true, y_pred): y_pred
        return "given" if sure else UNSURE, list[int | str | None](back), (
            f"backward takes the forward's arguments {', '.join(names)} and no output "
            "gradient: read as a loss's gradient with respect to the others")
    if names and n >= 1 and len(names) == n + 2 and names[2:] == f_names:
        return EACH, [None, EACH, *range(n)], (
            f"backward({', '.join(names)}) returns one input's gradient per call: called "
            f"with {names[1]} = 0..{n - 1}, the output gradient first")
    if not names or n == 0 or len(names) < 2:
        return base, [], ""
    by_name: list[int | str | None] = [f_names.index(a) if a in f_names else None
                                       for a in names]
    if None not in by_name and sorted(by_name) == list(range(n)):  # type: ignore[type-var]
        return "given", by_name, (f"backward takes the forward's inputs ({', '.join(names)}) "
                                  "and no output gradient: read as a loss's gradient")
    from ._layer_call import cotangent_named  # (it imports this module)

    named = [k for k in by_name if k is not None]
    slots = [i for i, k in enumerate(by_name) if k is None]
    dout = [i for i in slots if cotangent_named(names[i])]
    if len(slots) == 2 and named and sorted(named) == list(range(len(named))) and (
            len(named) == n or _optional_after(forward, len(named))) and (
            by_name[-1] is None or len(dout) == 1):
        # the inputs, then the forward's output, then dout (mlpractical's
        # bprop(inputs, outputs, grads_wrt_outputs)): the time order of the values, unless
        # one is named as the output gradient (backward(input, gradOutput, cache))
        first = next(i for i in slots if i not in dout) if len(dout) == 1 else slots[0]
        by_name = [OUTPUT if i == first else k for i, k in enumerate(by_name)]
    elif by_name.count(None) != 1 or len(set(by_name)) != len(by_name):
        return base, [], ""  # a count alone says nothing (backward(d_out, learning_rate))
    order = by_name
    return "inputs", order, ("backward takes the forward's inputs again: called as "
                             f"({order_text(order, f_names)})")


def _optional_after(forward: Any, k: int) -> bool:
    """Whether every positional parameter of ``forward`` after its first ``k`` has a
    default (``forward(input, a0=None)``: the backward need not take ``a0``)."""
    every, req = positional_names(forward), positional_names(forward, required=True)
    return every is not None and req is not None and len(req) <= k


#: The style of a layer used as a pair of functions: its forward returns ``(y, cache)``
#: (the cache a container, or one of its inputs itself) and its backward takes
#: ``(dout, cache)``.
CACHE = "cache"

#: The style of a loss's backward taking back forward arguments after the first, none of
#: them and not the first holding labels: whose gradient it returns is not observed
#: (``wrt=`` says; without it, a ``bad-protocol``).
UNSURE = "given?"

#: The style of a backward returning one input's gradient per call, the input named by
#: an index after the output gradient (``backward(grad, wrt, x, y)``).
EACH = "each"

#: The style of a backward that takes no argument, its output gradient given to another
#: method first (``backward_update_gradient(delta)``): ``"feed:" + that method's name +
#: ":" + the path where it keeps the gradient``.
FEED = "feed:"



def call_backward(method: Any, style: str, order: Sequence[int | str | None], dy: Any,
                  xs: list[Any], then: str | None = None, out: Any = None, names: Any = ()
                  ) -> Any:
    """The backward called in ``style``; ``then`` names a method of its object that
    completes it (``compute_gradients()``), called right after; ``out`` is what the
    forward returned (an argument when ``order`` holds :data:`OUTPUT`); ``names``, the
    forward's inputs', read what it returns (:func:`~._flat.as_split`)."""
    own = _own_before(method)
    ret = as_split(_without_own(_call_backward(method, style, order, dy, xs, out), method,
                                own), getattr(method, "__self__", None), names, xs)
    if then is None:
        return ret
    if ":" in then:  # a step taken right after, given numbers (fit:1.0,0.0): its change read
        name, numbers = then.split(":", 1)
        getattr(method.__self__, name)(*[float(a) for a in numbers.split(",")])
        return ret
    done = getattr(method.__self__, then)
    wants = positional_names(done, required=True)
    if not wants:  # it stores them, or returns them keyed as a method listing the arrays
        extra = paired(done(), method.__self__)  # does (get_grads() beside get_params())
        return (ret, extra) if isinstance(extra, dict) and extra.keys() <= dict(walk(
            method.__self__)).keys() else ret
    # it takes some of the backward's arguments, by name (grads_wrt_params(inputs,
    # grads_wrt_outputs)): what it returns is read beside what the backward returned
    args = _arguments(style, order, dy, xs, out, method.__self__)
    given = dict(zip((positional_names(method) or [])[:len(args)], args, strict=False))
    rest = [n for n in wants if n not in given]  # the forward's inputs, in order
    given |= dict(zip(rest, xs, strict=False)) if len(rest) == len(xs) else {}
    held = float_state(method.__self__)
    with watched(method.__self__, {then, method.__name__}) as ran:
        extra = done(*[given[n] for n in wants])
    if ran and (runs := runs_forward(method.__self__, ran, xs)):  # a numerical gradient,
        raise ProtocolError("bad-protocol", f"{then}() runs {runs}()")  # not the backward's
    if extra is None and backward_named(then) and into_buffers(held, method.__self__):
        return ret  # the second half of a backward split in two: backward_update_gradient
    if extra is None:  # (input, delta) adding into the buffers it keeps; another that
        raise ProtocolError("bad-protocol", f"{then}() returned nothing")  # stores: the
    return ret, paired(extra, method.__self__)  # backward must call it itself (it may forget)


def _own_before(method: Any) -> dict[str, tuple[int, np.ndarray]]:
    """The layer's own float arrays under no gradient's name that the backward's code
    returns (``return dA_prev, self.W, self.b``), with their identity and values before
    the call."""
    obj, fn = getattr(method, "__self__", None), getattr(method, "__func__", None)
    if obj is None or fn is None:
        return {}
    names = {n for k in range(2, 6) for n in returned_names(fn, k) or [] if n and grad_stem(
        n) == n.lower().lstrip("_") and is_float_array(getattr(obj, n, None))}
    return {n: (id(getattr(obj, n)), np.array(getattr(obj, n), copy=True)) for n in names}


def _without_own(ret: Any, method: Any, own: dict[str, tuple[int, np.ndarray]]) -> Any:
    """A tuple less the items its code returns as the layer's own attributes under no
    gradient's name, those very arrays, changed in place by the call (``return dA_prev,
    self.W, self.b`` after its step: the parameters, no gradients); anything else as it
    is (an input gradient rebound to ``self.error``, weights returned untouched)."""
    obj, fn = getattr(method, "__self__", None), getattr(method, "__func__", None)
    if not own or not isinstance(ret, tuple) or len(ret) < 2 or fn is None:
        return ret
    names = returned_names(fn, len(ret)) or [""] * len(ret)
    keep = [r for r, n in zip(ret, names, strict=True) if not (
        n in own and id(r) == own[n][0] == id(getattr(obj, n, None)) and not np.array_equal(
            np.asarray(r), own[n][1]))]
    return ret if len(keep) in (0, len(ret)) else keep[0] if len(keep) == 1 else tuple(keep)


def _arguments(style: str, order: Sequence[int | str | None], dy: Any, xs: list[Any],
               out: Any, obj: Any) -> list[Any]:
    """The arguments a backward of ``style`` is given (``one``, ``inputs``, ``given``)."""
    if style == "one":
        return [dy]
    if style == "row":  # a 1-d (or column) output's gradient as one row: delta (1, h)
        return [np.asarray(dy).reshape(1, -1)]
    if style == "spread":
        return list(dy)
    return [dy if k is None else xs[k] if isinstance(k, int) else 1.0 if k == STEP
            else out if k == OUTPUT
            else batch_size(xs) if k == BATCH else out[0] if k == FIRST_OUT
            else out[-1] if k == CACHED else None if k == SINK else obj if k == SELF
            else dy[int(k[len(DY):-1])]
            if isinstance(k, str) and k.startswith(DY) else get_path(obj, k) for k in order]


def _call_backward(method: Any, style: str, order: Sequence[int | str | None], dy: Any,
                   xs: list[Any], out: Any) -> Any:
    if style.startswith(SLOT):
        return through_slot(method, style.removeprefix(SLOT), order, dy, xs)
    if style == EACH:  # backward(grad, wrt, *inputs): one input's gradient per call
        return tuple(method(dy, k, *xs) for k in range(len(xs)))
    if style.startswith(BOX):  # the output gradient goes in the output box's .grad
        return through_box(method, style.removeprefix(BOX), dy)
    if style.startswith(FEED):  # the output gradient goes in through another method
        getattr(method.__self__, style.removeprefix(FEED).split(":")[0])(dy)
        return method()
    if style in ("one", "row", "spread", "inputs", "given"):  # a path: what was stored
        return method(*give_sinks(method, list(order), _arguments(
            style, order, dy, xs, out, getattr(method, "__self__", None))))
    if style == "step":  # backward(output_error, learning_rate), bp(input, delta, lrt)
        return method(*[dy if k is None else 1.0 if k == STEP else 0.0 if k == NAUGHT
                        else xs[int(k)] for k in order or [None, STEP]])
    if style == CACHE:  # (y, cache) = forward(x); backward(dout, cache)
        return method(dy, out[1])
    return method()


def linear(a: Probe, b: Probe, *, created: bool = False) -> bool:
    """Whether ``b``, run with twice the output gradient of ``a``, returned and stored
    twice what ``a`` did: a backward is linear in its output gradient. A stored array it
    changed may double in its value (a gradient overwritten) or in its change (a step on
    the weights, ``W - lr * dW``). ``created``: of the stored arrays, only those the
    backward created."""
    xa, xb = _arrays(a, created), _arrays(b, created)
    return len(xa) == len(xb) and all(
        u.shape == v.shape and (doubles(u, v) or doubles(u - was, v - was))
        for (u, was), (v, _) in zip(xa, xb, strict=True))


def doubles(u: np.ndarray, v: np.ndarray) -> bool:
    """Whether ``v`` is twice ``u``, to rounding."""
    return bool(np.allclose(2 * u, v, rtol=1e-6, atol=1e-12 * (
        1 + float(np.max(np.abs(v), initial=0)))))


def unchanged(a: Probe, b: Probe) -> bool:
    """Whether ``b``, run with twice the output gradient of ``a``, returned and created
    the same as ``a`` (a backward that ignores what it is given)."""
    xa, xb = _arrays(a, True), _arrays(b, True)
    return len(xa) == len(xb) and all(u.shape == v.shape and np.array_equal(u, v)
                                      for (u, _), (v, _) in zip(xa, xb, strict=True))


def gives_something(p: Probe) -> bool:
    """Whether a probe's backward returned or changed anything but zeros (no evidence)."""
    return any(np.any(u - was) for u, was in _arrays(p, False))


def _arrays(p: Probe, created: bool) -> list[tuple[np.ndarray, Any]]:
    """What a probe's backward returned, then what it stored (``created``: only the
    arrays it created), in float64, each with what it was before (0 for a new one)."""
    got: list[tuple[np.ndarray, Any]] = [
        (np.asarray(v, dtype=np.float64), 0.0) for v in leaves(p.ret)
        if isinstance(v, np.ndarray | np.generic | float)]
    for k, v in p.stored.items():
        old = try_path(p.init, k)
        if old is None or not created:
            was = np.asarray(old, dtype=np.float64) if is_float_array(old) and np.shape(
                old) == np.shape(v) else 0.0
            got.append((np.asarray(v, dtype=np.float64), was))
    return got


# -- one forward and backward, observed --------------------------------------------------------
@dataclass
class Probe:
    """What one forward and one backward of copies of the layer did."""

    init: Any  # the layer after the forward
    after: Any  # the layer after the forward and the backward
    xs: list[Any]  # the inputs the forward was given
    out: Any  # the output (returned, or read at out_path)
    out_path: str | None
    ret: Any  # what the backward returned
    stored: dict[str, np.ndarray]  # what the backward stored: path -> array
    notes: list[str] = field(default_factory=list)
    fed: tuple[int, ...] = ()  # the ids of the arrays handed to it as the output gradient


def fed_off(first: Probe) -> dict[str, np.ndarray]:
    """What the backward stored but the very array it was handed as the output gradient,
    kept under no gradient's name (``self.error = error_tensor``) beside another of its
    shape (one named as a gradient, ``self.grad_input = delta``, stays: a wrong one)."""
    return {k: v for k, v in first.stored.items() if not (id(v) in first.fed and any(
        w.shape == v.shape for c, w in first.stored.items() if c != k) and grad_stem(
            last_name(k)) == last_name(k).lower())}


#: A backward's batch-size argument in an ``order``: given the first input's length.
BATCH = "<batch>"


def batch_size(xs: list[Any]) -> int:
    return next((len(x) for x in xs if isinstance(x, np.ndarray) and x.ndim), 1)


#: A backward's step-size argument in an ``order`` (style ``"step"``): given 1.0.
STEP = "<step>"

#: A setting of a backward's step beside its size (``backward(delta, eta, reg_lambda)``):
#: given 0.0, the weight decay off.
NAUGHT = "<naught>"

#: The ``out_path`` of a forward returning several outputs whose backward takes the
#: first one's gradient only (a recurrent layer's ``ys, h_last`` and ``backward(dys)``).
FIRST = "<returned>[0]"


def read_output(layer: Any, out: Any, out_path: str | None) -> Any:
    """The output the check differentiates: what the forward returned, its first part
    (:data:`FIRST`, or ``<returned>[k]``: its part k) or a copy of what it stored at
    ``out_path``."""
    if out_path is None:
        if hasattr(out, "__dict__") and not isinstance(out, np.ndarray) and out is not layer:
            raise ProtocolError("bad-protocol", (  # a Variable, a Box holding the output
                f"the forward returned {type(out).__name__}, not arrays of numbers: check a "
                "forward returning the output array (lambda x: layer.forward(x).data) with "
                "check_vjp"))
        return out
    if out_path == BUT_LAST:  # outputs, then a cache
        return tuple(np.array(o, copy=True) for o in out[:-1])
    if out_path.startswith("<returned>."):  # the one array of an object it returned
        return np.array(getattr(out, out_path[len("<returned>."):]), copy=True)
    if out_path.startswith("<returned>["):  # an item, or a dict's part: <returned>['loss']
        k = out_path[len("<returned>["):-1]
        return np.array(out[int(k) if k.lstrip("-").isdigit() else k.strip("'")], copy=True)
    return np.array(get_path(layer, out_path), copy=True)


def forward_output(layer: Any, method: str, xs: list[Any], draws: GlobalDraws,
                   out_path: str | None) -> Any:
    draws.reset()
    out = call_user(getattr(layer, method), *xs, what=f"{type(layer).__name__}.{method}")
    return read_output(layer, out, out_path)


def output_path(layer: Any, method: str, inputs: list[Any], draws: GlobalDraws,
                rng: np.random.Generator, backward: str | None = None) -> tuple[str, str]:
    """The attribute holding the output of a forward that returned None, and the note
    saying so; a :class:`ProtocolError` when there is none, or several (but for
    darknet's: the one of the shape of the zero slot ``backward`` reads its gradient
    from)."""
    init = clone(layer)
    xs = clone(inputs)
    before = float_state(init)
    forward_output(init, method, xs, draws, None)
    kept = tuple(leaves(xs))
    cands = stored(before, init, kept, copies=False)
    what = f"{type(layer).__name__}.{method}"
    if len(cands) > 1:  # several: not the inputs' copies (zero-padded too: x_pad), and
        cands = {p: v for p, v in cands.items() if p in stored(before, init, kept)}
        cands = {p: v for p, v in cands.items() if not any(padded(v, x) for x in kept if  # those
                 isinstance(x, np.ndarray))} if len(cands) > 1 else cands  # moving
    if len(cands) > 1:
        moved = _perturbed(inputs, rng)
        again = clone(layer)
        forward_output(again, method, moved, draws, None)
        cands = {p: v for p, v in cands.items() if not _same(v, try_path(again, p))}
    if backward is not None and positional_names(getattr(init, backward), required=True) == [
            ] and (loss := _stored_loss(layer, init, method, inputs, draws, rng)):
        return loss, (f"{what} returns nothing and its backward takes no output gradient "
                      f"(a loss's): its output is the float it stores in {loss}, the one "
                      "that moves with the inputs")
    cands, why = narrowed(cands, layer, list(before), lambda o: forward_output(o, method, clone(
        inputs), draws, None))  # several: not a derivative, what the weights reach
    if len(cands) > 1 and backward is not None and not why:
        cands, why = taken_by_backward(cands, init, backward)
    if not cands:  # an identity: the output is an input itself, kept under another name
        kept_as = [k for k, v in vars(init).items() if any(v is x for x in kept)] if hasattr(
            init, "__dict__") else []
        if len(kept_as) > 1:
            cands = {kept_as[-1]: getattr(init, kept_as[-1])}
    slots = [v.shape for p, v in stored(before, init, kept, copies=False).items()
             if v.dtype.kind == "f" and v.size and not v.any()]
    fit = [p for p, v in cands.items() if slots.count(v.shape) == 1 and len(slots) == 1]
    if len(cands) > 1 and len(fit) == 1 and backward is not None and slot_style(
            getattr(init, backward), getattr(init, method), len(inputs), before, init,
            get_path(init, fit[0]), kept)[0]:  # darknet: its gradient slot's shape
        return fit[0], (f"{what} returns nothing: its output is what it stores in {fit[0]}, "
                        "the one array of the shape of the all-zero array it creates (the "
                        "slot its output gradient goes in)")
    if len(cands) == 1:
        (path,) = cands
        return path, f"{what} returns nothing: its output is what it stores in {path}" + (
            f" ({why})" if why else "")
    seen = describe(stored(before, init))
    message = (f"{what} returned None and stored " + (
        f"several arrays that depend on the inputs: {describe(cands)}" if cands else
        f"no array that depends on the inputs (it stored {seen or 'nothing'})")
        + "; name the one that is the output: check_layer(layer, x, output='...')")
    if cands:  # each is tried: wrong under every one, a verdict
        raise OutputChoice(message, list(cands))
    raise ProtocolError("bad-protocol", message)


def _stored_loss(layer: Any, init: Any, method: str, inputs: list[Any], draws: GlobalDraws,
                 rng: np.random.Generator) -> str:
    """The one float number the forward stored as an attribute (``self.loss``) that
    moves when the inputs move; ``""`` when none or several."""
    if not hasattr(init, "__dict__"):
        return ""
    was = vars(layer) if hasattr(layer, "__dict__") else {}
    floats = [k for k, v in vars(init).items() if isinstance(v, (float, np.floating)) and (
        k not in was or was[k] != v)]
    if not floats:
        return ""
    again = clone(layer)
    forward_output(again, method, _perturbed(inputs, rng), draws, None)
    moving = [k for k in floats if getattr(again, k, None) != getattr(init, k)]
    return moving[0] if len(moving) == 1 else ""


def probe(layer: Any, method_f: str, method_b: str, inputs: list[Any], draws: GlobalDraws,
          style: tuple[str, Sequence[int | str | None]], out_path: str | None,
          ones: Any, then: str | None = None) -> Probe:
    init = clone(layer)
    xs = clone(inputs)
    draws.reset()  # (what it returned as it is: read_output reads the output there)
    raw = call_user(getattr(init, method_f), *xs, what=f"{type(layer).__name__}.{method_f}")
    out = read_output(init, raw, out_path)
    returned = clone(raw) if out_path is None or CACHE == style[0] or {*style[1]} & {
        CACHED, FIRST_OUT} else None
    after = clone(init)
    before = float_state(after)
    method = getattr(after, method_b)
    dy = ones(out)
    given = clone(dy)
    ret = call_user(call_backward, method, style[0], style[1], given, xs, then, returned,
                    positional_names(getattr(init, method_f)) or (),
                    what=f"{type(layer).__name__}.{method_b}")
    kept = stored(before, after)
    if style[0].startswith(FEED):  # the output gradient it keeps is no gradient it made
        kept = _made_by_backward(kept, init, after, style[0], method_b, dy)
    return Probe(init, after, xs, out, out_path, ret, kept,
                 fed=tuple(id(g) for g in leaves(given) if isinstance(g, np.ndarray)))


def _made_by_backward(kept: dict[str, np.ndarray], init: Any, after: Any, style: str,
                      backward: str, dy: Any) -> dict[str, np.ndarray]:
    """What a fed backward stored, less what the feeding method stored (the gradient it
    keeps, under any name it gives it) and less what does not move with the gradient (a
    cache, ``self._deriv``); an alias of that gradient the backward made
    (``_grad_input = _delta``) stays."""
    feed, path = style.removeprefix(FEED).split(":", 1)
    fed = clone(init)
    getattr(fed, feed)(clone(dy))
    held = getattr(fed, path, None)
    by_feed = {k for k, v in vars(fed).items() if v is held} if hasattr(fed, "__dict__") \
        else {path}
    gone = kept.pop(path, None)
    out = {k: v for k, v in kept.items() if k not in by_feed}
    if gone is not None and hasattr(after, "__dict__"):
        out |= {k: v for k, v in vars(after).items() if v is gone and k not in by_feed}
    twice = clone(init)
    getattr(twice, feed)(np.asarray(dy) * 2)
    getattr(twice, backward)()
    still = {k for k, v in out.items() if np.array_equal(v, try_path(twice, k))}
    moving = {np.shape(v) for k, v in out.items() if k not in still}
    # a cache (self._deriv) beside a gradient of its shape that moves is no candidate; an
    # array alone of its shape stays one, to be checked (a gradient that forgot delta)
    return {k: v for k, v in out.items() if k not in still or np.shape(v) not in moving}


def leaves(out: Any) -> list[Any]:
    """The leaves of nested lists, tuples and dicts (anything else is one leaf)."""
    if isinstance(out, (list, tuple)):
        return [v for o in out for v in leaves(o)]
    if isinstance(out, dict):
        return [v for o in out.values() for v in leaves(o)]
    return [out]


def _perturbed(inputs: list[Any], rng: np.random.Generator) -> list[Any]:
    def move(x: Any) -> Any:
        if is_float_array(x):
            return x + (1e-3 * (np.abs(x) + 1) * rng.choice([-1.0, 1.0], x.shape)).astype(
                x.dtype)
        if isinstance(x, (list, tuple)):
            return type(x)(move(v) for v in x)
        return clone(x)
    return [move(x) for x in inputs]


def _same(a: Any, b: Any) -> bool:
    return isinstance(b, np.ndarray) and a.shape == b.shape and np.array_equal(
        a, b, equal_nan=True)


def describe(arrays: dict[str, Any]) -> str:
    """``"output (4, 3) float64, mask (4, 3) float64"``."""
    return ", ".join(f"{p} {tuple(np.shape(v))} {getattr(v, 'dtype', type(v).__name__)}"
                     for p, v in arrays.items())


# -- the stored gradients ----------------------------------------------------------------------


def output_doubt(order: Sequence[int | str | None], before: dict[str, tuple[int, np.ndarray]],
                 after: Any, out: Any, kept: tuple[Any, ...]) -> str | None:
    """For a backward taking the output gradient, then a cache read as the forward's
    output (``backward(input, gradOutput, cache)``): why that is no reading, when the
    forward also stored another array of the output's shape (``self.z``), which the cache
    may be as well; else None."""
    if OUTPUT not in order or None not in order or order.index(OUTPUT) < order.index(None):
        return None
    rivals = [p for p, v in stored(before, after, kept).items() if isinstance(out, np.ndarray)
              and v.shape == out.shape and not np.array_equal(v, out)]
    return None if not rivals else (
        "the backward takes the inputs, the output gradient and one argument more, which "
        f"may be the forward's output or what it stored of its shape ({', '.join(rivals)}); "
        "which it is is not observed: check it with check_vjp(fwd, bwd, inputs), bwd "
        "calling it as your code does")
