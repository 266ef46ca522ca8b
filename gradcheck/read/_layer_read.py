"""Reading a layer object: its methods, how its backward is called, where its output,
parameters and gradients are, and which arrays it holds are state. :func:`discover` runs it
once on copies and reads it by the names a user gives (``params=``/``grads=``), then by
observation (:mod:`gradcheck.read._observe`, :mod:`gradcheck.read._handed`): an array the
output does not depend on is state; one it does depend on with no gradient found is a
:class:`LayerConventionError` that says what was observed.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import numpy as np

from ._alternatives import (
    by_order,
    each_holds,
    first_of_several,
    one_dimensional,
    penalty_checked,
    returns_cache,
    returns_linear,
    rows_as_columns,
    several_outputs,
    takes_gradient,
)
from ._bare import unnamed_argument
from ._batch_bound import not_batch_bound
from ._boxes import BOX, boxes_read, unboxed
from ._completing import completing_methods, folded_step, scaled_by_held
from ._conventions import zero_one
from ._depends import (
    handed_on,
    held_labels,
    keeps_input,
    misshapen_param,
    moves_output,
    named_in_wrt,
    persistent_arrays,
    rebuilt_once,
    scalar_grads,
    stale_slot,
)
from ._discovery import (
    LayerConventionError,
    Param,
    explicit_params,
    float_arrays,
    get_path,
    is_float_array,
    is_float_scalar,
    no_grad,
    parameters,
    try_path,
    unmatched,
)
from ._feed import fed_by
from ._flat import FLAT, flat_note, flat_return, returned_names, whole_return
from ._handed import Handed, attached, find_handed, held_objects, received
from ._layer_call import (
    Protocol,
    call_layer,
    call_style_of,
    gradient_named,
    leaves,
    ones_like,
    takes_no_gradient,
    times,
)
from ._layout import one_item_each
from ._loss_read import (
    as_prediction,
    given_loss,
    labels_of,
    left_at_none,
    loss_part,
    loss_stored,
    moving_part,
    pick_prediction,
    settle,
)
from ._moving_item import moving_item
from ._observe import float_state, method_pair, positional_names
from ._per_sample import summed_per_sample
from ._protocol import ProtocolError, UserCodeError, call_user, clone
from ._reading import (
    CACHE,
    EACH,
    FEED,
    FIRST,
    UNSURE,
    GlobalDraws,
    call_backward,
    call_style,
    fed_off,
    forward_output,
    linear,
    order_text,
    output_doubt,
    output_path,
    probe,
)
from ._redrawn import batch_state, lost_ones, redrawn
from ._second import second_places
from ._slot import slot_style
from ._split import split_return
from ._step import constant_scalars, takes_a_step
from ._stored_inputs import inputs_read, inputs_wanting
from ._stored_match import match_stored
from ._takers import wrapped_output
from ._then_step import step_after
from ._tied import tie, untie
from ._tokens import spread_cache
from ._told import observed_error
from ._transposed import applied_transposed

__all__ = ["discover"]


def discover(layer: Any, inputs: tuple[Any, ...], forward: str | None,
             backward: str | None, params: Any, grads: Any, wanted: list[int],
             output: str | None = None, seed: int = 0,
             draws: GlobalDraws | None = None, wrt_given: bool | tuple[str, ...] = False,
             reading: int | str | None = None) -> Protocol:
    """Read the layer by running it once (:mod:`gradcheck.read._reading`): its methods, how
    its backward is called, where its output and gradients are, which arrays are state.
    ``reading`` settles an :class:`AmbiguousReading` (one of its ``readings``). When no
    gradient is found for arrays the output depends on, a method that completes the
    backward (called with no argument right after it, its name speaking of gradients:
    EpyNN's ``compute_gradients()``) is tried."""
    args = (layer, inputs, forward, backward, params, grads, wanted, output, seed, draws,
            wrt_given, reading)
    try:
        return folded_step(_discover(*args), list(inputs), params is None and grads is None)
    except LayerConventionError as exc:
        found = method_pair(layer, None if forward == "forward" else forward,
                            None if backward == "backward" else backward, inputs)
        tried, steps = completing_methods(layer, found[0], found[1]), []
        for then in tried:
            try:
                proto = _discover(*args, then=then)
                if not _leaves_gradients(proto, list(inputs)):
                    continue
                if not (lr := scaled_by_held(proto, list(inputs))):
                    return proto
                steps.append(f"; {then}() returns a step, not gradients: its results "
                             f"double with {lr}")  # (lr * (db, dW))
            except (LayerConventionError, UserCodeError, ProtocolError):
                continue  # not the method that completes it
        if tried:
            raise LayerConventionError(f"{exc} (tried {', '.join(tried)}() right after the "
                                       f"backward: no gradient found either{''.join(steps)})"
                                       ) from None
        raise


def _leaves_gradients(proto: Protocol, xs: list[Any]) -> bool:
    """Whether the parameters' gradients read after ``proto.then`` are gradients: not all
    zero, and twice as large for twice the output gradient (a ``zero_grad()`` is not)."""
    values = [np.asarray(p.read(proto.layer)) for p in proto.params]
    out, cache = proto.run_forward(clone(xs), values)
    one = proto.run_backward(ones_like(out), clone(cache))[len(xs):]
    two = proto.run_backward(times(ones_like(out), 2.0), clone(cache))[len(xs):]
    pairs = [(np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64))
             for a, b in zip(one, two, strict=True) if a is not None and b is not None]
    return bool(pairs) and any(np.any(a != 0) for a, _ in pairs) and all(
        np.allclose(b, 2 * a, rtol=1e-6, atol=1e-12) for a, b in pairs)


def _discover(layer: Any, inputs: tuple[Any, ...], forward: str | None,
              backward: str | None, params: Any, grads: Any, wanted: list[int],
              output: str | None, seed: int, draws: GlobalDraws | None,
              wrt_given: bool | tuple[str, ...], reading: int | str | None,
              then: str | None = None) -> Protocol:
    forward, backward, found_note = method_pair(
        layer, None if forward == "forward" else forward,
        None if backward == "backward" else backward, inputs)
    shapes = [np.shape(x) if isinstance(x, np.ndarray) else
              "sequence" if isinstance(x, (list, tuple)) else None for x in inputs]
    named = explicit_params(params, grads) if params is not None else None
    draws = draws or GlobalDraws()
    proto = Protocol(layer, forward, backward, len(inputs), [], wanted, shapes=shapes,
                     labels=[isinstance(x, np.ndarray) and zero_one(x) for x in inputs],
                     draws=draws, wrt_given=wrt_given, reading=reading, then=then)
    proto.note(found_note)
    tie(proto, inputs)
    if then is not None:
        proto.note(_then_note(layer, then))
    rng = np.random.default_rng(seed)
    xs = list(inputs)
    proto.out_path = output
    what = f"{type(layer).__name__}.{forward}"
    if output is None:
        given = clone(xs)
        returned = call_layer(clone(layer), forward, given)
        if returned is None:  # (no inputs: Caffe's blobs, perhaps)
            if xs or not boxes_read(proto, layer, forward, backward, draws):
                proto.out_path, text = output_path(layer, forward, xs, draws, rng, backward)
                proto.note(text)
        elif not takes_no_gradient(getattr(layer, backward)) and (
                name := wrapped_output(returned, layer)):  # (backward() of a Box: a tape's)
            proto.out_path = f"<returned>.{name}"
            proto.note(f"{what} returns a {type(returned).__name__} holding one float array, "
                       f".{name}: that is its output")
        elif any(returned is x for x in given) and takes_no_gradient(getattr(layer, backward)):
            loss_stored(proto, xs, next(i for i, x in enumerate(given) if returned is x))
        elif takes_no_gradient(getattr(layer, backward)) and (
                part := moving_part(layer, forward, xs, returned)) is not None:
            proto.out_path = part
            proto.note(f"{what} returns a dict of numbers: its output is {part[11:-1]}, the "
                       "one part that moves with the inputs (the others are not checked)")
    first = _probe(proto, xs, what, returned if output is None else None)
    moving_item(proto, first, xs)
    untie(proto, first.ret, first.xs)
    if named == []:
        inputs_read(proto, first, {})
        return proto
    if named is not None:
        _resolve_named(layer, first.init, first.after, named, params, grads)
        proto.params = named
        inputs_read(proto, first, {})
        return proto
    _read_parameters(proto, first, xs, rng)
    return proto


def _then_note(layer: Any, then: str) -> str:
    wants = positional_names(getattr(layer, then), required=True)
    return (f"{type(layer).__name__}.{then}({', '.join(wants or [])}) completes the "
            "backward: called right after it" + (
                ", with the backward's arguments of those names, it returns the "
                "parameters' gradients" if wants else
                ", it stores the parameters' gradients (or returns them keyed as a "
                "method listing the arrays keys them)"))


def _probe(proto: Protocol, xs: list[Any], what: str, returned: Any) -> Any:
    """:func:`probe_style`; when the forward returned several arrays and the backward,
    taking one output gradient, raised on their tuple as one (``ys, h_last`` with
    ``backward(dys)``), again with the first output only (:func:`penalty_checked`)."""
    try:
        return probe_style(proto, xs, what)
    except UserCodeError as exc:
        exc.advice = left_at_none(proto, exc, xs)
        saved = (list(proto.notes), proto.style, proto.order)
        if first_of_several(proto, xs, returned, exc):
            proto.out_path = FIRST
            text = (f"{what} returned {len(returned)} values and its backward takes one "
                    "output gradient: it differentiates the first, which is checked; the "
                    "others are not")
        elif proto.style == "spread" and isinstance(returned, list) and not proto.whole:
            proto.whole = True  # backprop(d_maps, learning_rate) of a list of maps
            text = (f"{what} returned a list and {type(proto.layer).__name__}."
                    f"{proto.backward} raised given its parts' gradients apart: given "
                    "them as one list")
        elif proto.style == "one" and not proto.row and one_dimensional(proto, returned):
            proto.row = True
            text = (f"{type(proto.layer).__name__}.{proto.backward} raised given the "
                    f"{'1-d' if returned.ndim == 1 else 'column'} output's gradient: given it "
                    "as one row, (1, n)")
        elif (order := by_order(proto, xs, exc, returned)):
            proto.trial = order
            shown = order_text(order)
            text = (f"{type(proto.layer).__name__}.{proto.backward} takes the forward's "
                    "inputs (or output) again and the output gradient under other names: "
                    f"called as ({shown}), the one order whose results are linear in the "
                    "output gradient") if None in order else (
                f"{type(proto.layer).__name__}.{proto.backward}"
                f"{'' if proto.out_path else '(*args)'} raised given the output gradient "
                f"alone: called with the forward's inputs again ({shown}), a loss's "
                "backward, which takes no output gradient")
        elif (feed := fed_by(proto, xs, exc)) is not None:
            proto.fed = ":".join(feed)
            text = (f"{type(proto.layer).__name__}.{feed[0]}(dout) feeds the output "
                    f"gradient to {proto.backward}(), which takes none, keeping it in "
                    f"{feed[1]}: called one after the other")
        else:
            exc.advice += several_outputs(proto, returned, exc)
            raise
        proto.notes = [n for n in saved[0] if n and not re.search(
            "per sample|separate ar|again: called", n)] + [  # and what settled the order
            n for n in proto.notes[len(saved[0]):] if "again on the input" in n]
        proto.note(text)
        try:
            return penalty_checked(proto, xs, returned, probe_style(proto, xs, what))
        except UserCodeError:
            proto.out_path, proto.fed, proto.row, proto.trial = None, None, False, None
            proto.whole = False
            proto.notes, proto.style, proto.order = saved
            raise exc from None


def _style(proto: Protocol, init: Any, method: Any, out: Any, before: Any, given: list[Any]
           ) -> tuple[str, str, str]:
    """Sets ``proto.style`` and ``proto.order``; returns the base style (how a backward
    taking the output gradient alone is called) and the notes of both readings."""
    base, note = call_style_of(method, ones_like(out), f"{type(proto.layer).__name__}."
                             f"{proto.backward}")
    base, note = ("one", "") if proto.whole and base == "spread" else (base, note)
    base, note = unnamed_argument(proto, method, given, base, note)
    proto.style, proto.order, in_note = slot_style(
        method, getattr(init, proto.forward), len(given), before, init, out,
        tuple(leaves(given)))
    if proto.fed is not None or proto.row or proto.box is not None:
        proto.style = FEED + proto.fed if proto.fed is not None else "row" if proto.row \
            else BOX + str(proto.box)
        proto.order, in_note, note = [], "", ""
    if proto.trial is not None:
        proto.style = "inputs" if None in proto.trial else "given"
        proto.order, in_note, note = list(proto.trial), "", ""
    if not proto.style:
        proto.style, proto.order, in_note = call_style(
            method, getattr(init, proto.forward), len(given), base, labels_of(proto, given))
    if (doubt := output_doubt(proto.order, before, init, out, tuple(leaves(given)))):
        raise ProtocolError("bad-protocol", doubt)
    if proto.style == UNSURE:
        settle(proto)
    if proto.style == EACH and not each_holds(proto, given):
        proto.style, proto.order, in_note = base, [], ""
    pick_prediction(proto, given, out)
    return base, note, in_note


def probe_style(proto: Protocol, xs: list[Any], what: str) -> Any:
    """The backward's calling style, then one forward and backward observed."""
    layer, init = proto.layer, clone(proto.layer)
    assert proto.draws is not None  # discover always sets them
    before, given, method = float_state(init), clone(xs), getattr(init, proto.backward)
    out = loss_part(proto, method, forward_output(init, proto.forward, given, proto.draws,
                                                  proto.out_path), given)
    if proto.out_path is None and returns_cache(proto, xs, out, given, method):
        proto.out_path, proto.style, proto.order = FIRST, CACHE, []
        out = out[0]
        base, note, in_note = "one", "", (
            f"{what} returns (output, cache) and {type(layer).__name__}.{proto.backward} "
            "takes (dout, cache): called so")
    else:
        base, note, in_note = _style(proto, init, method, out, before, given)
    proto.note(in_note or note)
    draws = proto.draws

    def run(scale: float | None) -> Any:  # None: the output itself as the argument
        return probe(layer, proto.forward, proto.backward, xs, draws,
                     (proto.style, proto.order), proto.out_path, lambda o: clone(o) if
                     scale is None else times(ones_like(o), scale), proto.then)

    if proto.style in ("inputs", "given") and takes_a_step(proto, xs):  # bp(x, delta, lrt)
        return run(1.0)
    if proto.style == "inputs" and proto.order.index(None) >= len(xs):
        first = run(1.0)
        if linear(first, run(2.0), created=True) or gradient_named(method, proto.order):
            return given_loss(proto, first, out)  # (dout dropped in its code: a mismatch)
        # no output gradient last, backward(input, learning_rate): the names' reading dropped
        proto.notes.remove(in_note)
        proto.style, proto.order = base, []
        proto.note(note)
    if proto.style == "one" and takes_a_step(proto, xs):
        return run(1.0)
    if proto.style == "one" and not proto.row:
        return given_loss(proto, takes_gradient(proto, run), out)
    if proto.style != "inputs" or proto.order.index(None) >= len(xs):
        return given_loss(proto, *spread_cache(proto, run, out))
    try:
        first = run(1.0)
        if linear(first, second := run(2.0)) or returns_linear(first, second, layer):
            return first
        why = "its result is not linear in that argument"
    except UserCodeError as exc:
        first, why = exc, f"it raised {exc.type} when given one"
    k = proto.order.index(None)
    order, proto.order = proto.order, [k if o is None else o for o in proto.order]
    proto.style = "given"
    try:
        found = run(1.0)
    except UserCodeError:
        proto.style, proto.order = "inputs", order
        if isinstance(first, UserCodeError):
            raise first from None
        return first
    if as_prediction(proto, found, xs, order.index(None), k, why, in_note):
        found = run(1.0)  # the stored array given instead of the input
    return given_loss(proto, found, out)


def _read_parameters(proto: Protocol, first: Any, xs: list[Any],
                     rng: np.random.Generator) -> None:
    """The parameters by the named conventions, then by what the backward returned and
    stored; arrays the output does not depend on are state."""
    layer = proto.layer
    found = handed_on(proto, xs, unboxed(proto, [p for p in parameters(layer, first.after)
                                                 if not keeps_input(first, p)]))
    missing = [p for p in unmatched(layer, found) if not keeps_input(first, p)]
    base = layer
    held = {p for p, _ in float_arrays(layer).values()}
    kept, refused = persistent_arrays(first.init, tuple(xs), proto.forward, held)
    lost = [] if refused else redrawn(proto, first, xs, held | kept)  # (a second forward)
    persistent = kept | set(lost)
    if persistent:  # arrays built by the first forward and kept: weights or buffers
        lazy_found = parameters(first.init, first.after)
        made = [p for p in lazy_found if isinstance(p.value, str) and (
            not is_float_array(v := try_path(layer, p.value)) or v.size == 0)]  # (or empty)
        lazy = [p for p in made if p.value in persistent]  # not caches (self.h with dh)
        if lazy:
            base, found = first.init, [p for p in lazy_found if p not in made or p in lazy]
            proto.note(f"{type(layer).__name__} creates {', '.join(p.name for p in lazy)} on"
                       " its first forward: made once on a copy, every evaluation starts there")
        missing = [p for p in unmatched(first.init, found) if p in held or p in persistent]
    proto.layer = base
    missing = _not_output(proto, held_labels(proto, named_in_wrt(proto, missing,
                                                                first.stored), first))
    if first.ret is None and held_objects(first.init):  # (a sub-layer's d_input = d_input)
        gone = received(*clone((first.init, first.xs)), _backward_of(proto, first.out))
        first.stored = {k: v for k, v in first.stored.items() if k not in gone}
    cands = _candidates(proto, first, found, {p: try_path(base, p) for p in missing}, xs)
    if any(not is_float_array(try_path(base, p)) for p in missing) or (
            base is layer and rebuilt_once(layer, tuple(xs), proto.forward)):
        base = proto.layer = first.init  # built by the first forward: start from it
        proto.note(f"{type(layer).__name__} builds arrays on its first forward: run once "
                   "on a copy, every evaluation starts from it")
    # the arrays the output depends on are parameters; the others state (or gradient buffers)
    moving = [p for p in missing if moves_output(proto, xs, p, rng)]
    moving += [p for p in missing if p in lost and p not in moving]
    reach = set(moving) | {p.value for p in found if isinstance(p.value, str)}
    moving += lost_ones(proto, first, base, moving, missing, reach)
    # found by name, but the backward left that gradient as it was and returned one
    stale = {p.value for p in found if isinstance(p.grad, str) and p.grad not in first.stored}
    observed = _observed(proto, first, {p: get_path(base, p) for p in moving}, cands, stale)
    found = [p for p in found if p.value not in {q.value for q in observed}] + observed
    one_item_each(found)
    grads = {q.grad for q in observed if isinstance(q.grad, str)} | set(
        proto.stored_inputs.values())
    state = [p for p in missing if p not in moving and p not in grads and p not in proto.flags]
    if state:
        proto.note(f"state: the output does not depend on {', '.join(state)} (not checked)")
    if left := batch_state(proto, xs, [p for p in moving if p not in {q.value for q in observed}],
                           held, found):
        found += _unread(proto, xs, left, first, cands, found, grads)
    found = scalar_grads(proto, xs, found, cands, first)
    proto.params = [stale_slot(base, first, p) for p in found]
    inputs_read(proto, first, proto.stored_inputs, params=bool(found),
                claimed=frozenset(g for p in found for g in (p.grad, p.value)
                                  if isinstance(g, str)))  # (a step moves the weights)
    second_places(proto, first)
    proto.note(constant_scalars(base, found, proto.held_step))


def _candidates(proto: Protocol, first: Any, found: list[Param], missing: dict[str, Any],
                xs: list[Any]) -> dict[str, Any]:
    """The stored arrays no parameter found claims (:func:`fed_off`), as gradients of the
    ``missing`` may be: a row as its column, per-sample gradients summed (:mod:`._per_sample`)."""
    used = {g for p in found for g in (p.grad, *p.also, p.value) if isinstance(g, str)}
    cands = {k: v for k, v in fed_off(first).items() if k not in used}  # a row for a column:
    cands = rows_as_columns(cands) if proto.row else cands
    cands = not_batch_bound(proto, xs, cands, missing)
    return summed_per_sample(cands, missing, xs, first.after, (proto.forward, proto.backward))


def _unread(proto: Protocol, xs: list[Any], left: list[str], first: Any,
            cands: dict[str, np.ndarray], found: list[Param], grads: set[Any]) -> list[Param]:
    """The arrays the output depends on with no gradient found (``left``): a gradient
    stored in another shape is that ``shape-mismatch``; else read through a step method
    called right after the backward (:func:`step_after`, ``fit(lr, weight_decay)``), or
    the error saying what was observed."""
    turned, said = applied_transposed(proto.layer, first.after, left, cands,
                                      {proto.forward, proto.backward})
    if turned:  # self.W -= lr * self.dW.T: the layer reads its dW so
        proto.note(said)
        left = [p for p in left if p not in {q.value for q in turned}]
        if not left:
            return turned
    misshapen_param(left, proto.layer, cands, first, claimed=grads)
    if not (then := step_after(proto, xs, left, found + turned)):
        raise observed_error(proto.layer, left, first, cands, found + turned)
    return turned + then


def _not_output(proto: Protocol, missing: list[str]) -> list[str]:
    """``missing`` but the output of a forward adding into it (a buffer it reads)."""
    if proto.out_path in missing:
        proto.note(f"{proto.out_path} holds the output, which the forward adds into: its "
                   "value before the call is no parameter (not checked)")
    return [p for p in missing if p != proto.out_path]


def _observed(proto: Protocol, first: Any, arrays: dict[str, np.ndarray],
              cands: dict[str, np.ndarray], stale: set[Any]) -> list[Param]:
    """Parameters whose gradients the backward returned beside the input gradients
    (``dX, [dW, db]``; also for ``stale`` ones, found by name with a gradient the
    backward left as it was) or stored (``self.dweights``); the inputs' stored
    gradients."""
    out: list[Param] = []
    split = split_return(first.ret, proto.layer, proto.n_inputs)
    if split is not None:
        j, keys = split
        mine = {p: k for p, k in keys.items() if p in arrays or p in stale}
        proto.returned = (j, mine)
        out += [Param(p, p, no_grad) for p in mine]
        proto.note(f"{proto.then}() returns the parameters' gradients ({', '.join(keys)})"
                   if proto.then is not None and j == len(first.ret) - 1 else
                   f"backward returns the parameters' gradients as item {j} of what it "
                   f"returns ({', '.join(keys) or 'none'})")
    flat = None if split is not None else flat_return(
        first.ret, proto.layer, first.xs, proto.wanted,
        arrays | {p: get_path(proto.layer, p) for p in stale if isinstance(p, str)},
        returned_names(getattr(proto.layer, proto.backward), len(first.ret)) if isinstance(
            first.ret, tuple) else None) or whole_return(proto.wanted, first.ret, arrays)
    if flat:
        mine = {p: k for p, k in flat.items() if p in arrays or p in stale}
        proto.returned = (FLAT, flat)
        out += [Param(p, p, no_grad) for p in mine]
        proto.note(flat_note(flat))
    rest = {p: a for p, a in arrays.items() if p not in {q.value for q in out}}
    got_p, got_x, notes = match_stored(rest, inputs_wanting(proto, first), cands, first.ret,
                                       first.after)
    out += [Param(p, p, g) for p, g in got_p.items()]
    proto.stored_inputs = got_x
    for t in notes:
        proto.note(t)
    left = [p for p in rest if p not in got_p]
    stepped = [p for p in left if p in proto.stepped] + [  # and float scalars it steps
        p for p in proto.stepped if is_float_scalar(try_path(proto.layer, p))]
    out += [Param(p, p, no_grad) for p in stepped]
    left = [p for p in left if p not in stepped]
    on_array = attached(first.after, left, first.init)
    out += [Param(p, p, g) for p, g in on_array.items()]
    for p, g in on_array.items():
        proto.note(f"the gradient of {p} is what the backward attached to it: {g}")
    left = [p for p in left if p not in on_array]
    if left and proto.style != CACHE:  # (a pair of functions hands its gradients to none)
        handed = find_handed(*clone((first.init, first.xs)), left,
                             _backward_of(proto, first.out))
        if not handed and held_objects(first.after) - held_objects(first.init):
            handed = _handed_to_made(proto, first, left)
        for p, h in handed.items():
            out.append(Param(p, p, no_grad))
            proto.handed[p] = h
            proto.note(f"the gradient of {p} is what the backward hands to {h.owner}."
                       f"{h.method} beside it (argument {h.arg}): an update it makes itself")
    if (idle := [p for p in left if p not in proto.handed]) and proto.stepped:
        raise ProtocolError("bad-protocol", (  # a forgotten step, or a frozen parameter?
            f"the backward steps {', '.join(proto.stepped)} by its step size but not "
            f"{', '.join(idle)}, which the output depends on: a forgotten update or a frozen "
            "parameter, not told apart; name them: check_layer(layer, x, params=, grads=)"))
    return out


def _handed_to_made(proto: Protocol, first: Any, left: list[str]) -> dict[str, Handed]:
    """Gradients handed to an object the first backward created (an optimizer built on
    first use): looked for on a layer that ran one forward and backward, then a forward;
    found, every evaluation starts from such a layer (its parameters written anew)."""
    warmed = clone(first.after)
    xs = clone(first.xs)
    try:
        call_layer(warmed, proto.forward, xs)
    except Exception:  # the reading stays as it was: no gradient found
        return {}
    handed = find_handed(*clone((warmed, xs)), left, _backward_of(proto, first.out))
    if handed:
        proto.layer = clone(first.after)
        proto.note(f"{type(proto.layer).__name__}'s first backward creates "
                   f"{', '.join(sorted(held_objects(first.after) - held_objects(first.init)))}"
                   ": every evaluation starts from a layer that ran once")
    return handed


def _backward_of(proto: Protocol, out: Any) -> Callable[[Any, list[Any]], Any]:
    def run(layer: Any, xs: list[Any]) -> Any:
        method = getattr(layer, proto.backward)
        return call_user(call_backward, method, proto.style, proto.order, ones_like(out),
                         xs, proto.then, out, positional_names(getattr(layer, proto.forward))
                         or (), what=f"{type(layer).__name__}.{proto.backward}")
    return run


def _resolve_named(layer: Any, init: Any, probe: Any, named: list[Param],
                   params: dict[str, Any], grads: Any) -> None:
    """Every path given in ``params=`` must lead to an array of the layer (before or
    after its first forward) and every path in ``grads=`` to one after a backward."""
    given = grads if isinstance(grads, dict) else {}
    for p in named:
        for arg, path, objs in (("params", p.value, (layer, init)), ("grads", p.grad, (probe,))):
            if not isinstance(path, str) or any(
                    isinstance(try_path(o, path), (np.ndarray, np.generic, float))
                    for o in objs):
                continue
            where = "after a forward and backward" if arg == "grads" else "in the layer"
            dflt = "" if arg == "params" or p.name in given else " (the default for " \
                f"params[{p.name!r}]; give grads= to name it)"
            held = sorted({q for q, _ in float_arrays(probe).values()})
            raise LayerConventionError(
                f"{arg}[{p.name!r}] = {path!r}{dflt}: no array at that path {where} of "
                f"{type(layer).__name__}; it holds the float arrays "
                f"{', '.join(held) if held else '(none)'}")
