"""Checks of code as people write it: layer objects (losses returning ``(loss, dx)``:
:mod:`gradcheck.check._loss`).

A layer object has ``out = layer.forward(*inputs)`` and ``dx = layer.backward(dout)``
(method names settable) and keeps its parameters and their gradients on itself, or on
sub-layers it holds. :mod:`gradcheck.read._discovery` finds them, by convention or by the
names the user gives; this module turns the object into the functional protocol of
:func:`gradcheck.check_vjp`: every evaluation runs on a fresh deep copy of the layer, so
caches, accumulated gradients and counters never leak from one evaluation into another,
and gradients that a backward accumulates with ``+=`` are read as the change it made.

Calling conventions read from the code (each one guessed is stated in the result's notes):

- ``backward(dout)``; ``backward()`` for a scalar output (a loss), the result scaled by
  the cotangent; ``backward(dout=1.0)`` receives a non-unit cotangent, so a loss that
  ignores it is caught; ``backward(dh, dc)`` receives a tuple output's cotangents as
  separate arguments.
- The returned input gradient: one per forward argument; one array for a one-argument
  forward (which may take a list of arrays, ``Add([a, b])``); otherwise one array is the
  gradient of the only ``wrt`` input, or of the first input of its shape.
- A layer that creates its weights on the first forward is initialised once on a copy,
  and every evaluation starts from that copy.

A float scalar (``alpha``) with a gradient (``dalpha``) is a parameter, written back as
its own type; float scalars with none (``eps``) are held constant and named in the notes.
A parameter reached along several paths (a composite's ``params`` list) must have the
same gradient at each of its gradient locations, else the status is ``mismatch`` naming
the stale one. A path given in ``params=``/``grads=`` that leads to no array is a
:class:`LayerConventionError`.

Every float array the layer holds (before its first forward, where caches do not exist
yet; for lazily built weights, arrays that a second forward leaves alone) must be matched
to a gradient; otherwise :class:`LayerConventionError` lists them and how to name them.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from functools import partial
from typing import Any

import numpy as np

from ..read._conventions import differentiable
from ..read._ctx_function import function_layer
from ..read._discovery import LayerConventionError, class_held
from ..read._layer_call import Protocol
from ..read._layer_call import call_style_of as _call_style  # noqa: F401 - the diff worker's
from ..read._layer_read import discover as _discover
from ..read._observe import (
    method_pair,
    positional_names,
)
from ..read._op_object import op_layer
from ..read._protocol import (
    AmbiguousReading,
    OutputChoice,
    ProtocolError,
    UserCodeError,
)
from ..read._reading import GlobalDraws
from ._boxed import box_gradient, box_unread, boxed_inputs, reboxed
from ._core import raise_unless_passed, run_protocol_check
from ._first_use import fed_stand_in, warmed
from ._layer_errors import error_result, exit_result, names_given
from ._loss_and_grad import loss_and_gradient
from ._loss_method import given_loss_chain, loss_method_chain, loss_taking_all
from ._loss_model import loss_model
from ._options import Options, validate_options
from ._other_backward import (
    call_first,
    ignores_gradient,
    step_named_backward,
    storing_forward,
    stub_backward,
)
from ._output_choice import each_output
from ._recording import record
from ._result import CheckResult
from ._stored_outputs import stored_outputs
from ._training_flag import in_training

__all__ = ["LayerConventionError", "assert_layer", "check_layer"]


# -- entry points ----------------------------------------------------------------------------
def check_layer(
    layer: Any,
    *inputs: Any,
    forward: str | None = None,
    backward: str | None = None,
    params: dict[str, Any] | None = None,
    grads: dict[str, Any] | None = None,
    wrt: Any = None,
    output: str | None = None,
    loss: Callable[..., Any] | None = None,
    **options: Any,
) -> CheckResult:
    """Check a layer object's backward: its input gradients and its parameter gradients,
    read by observing it on copies (each reading in ``res.notes``; docs/layer-objects.md).

    Parameters
    ----------
    layer : object
        A forward and a backward method (named ``forward``/``backward``, or found).
    *inputs : array_like
        The forward's arguments (one may be a list of arrays); integers, flags,
        strings and settings dicts are constants.
    forward, backward : str, optional
        The method names, when they cannot be found.
    params, grads : dict, optional
        name -> path (``"W"``, ``"params['W']"``) or callable ``layer -> array`` of each
        parameter and its gradient; ``params={}`` checks the input gradients only.
    wrt : int, str or sequence of them, optional
        Inputs (``"x0"``, ``0``, the forward's argument name), parameters (by name).
    output : str, optional
        Where the forward stores its output (read from there whatever it returns).
    loss : callable, optional
        ``loss(output, *targets) -> float`` of a network whose backward takes the targets
        (the inputs after the forward's) of a loss it never computes.
    **options
        The option set of every check (:class:`gradcheck.Options`).

    Returns
    -------
    CheckResult
        One input result per forward argument (``x0``...) and per parameter.

    Raises
    ------
    LayerConventionError
        An array the output depends on with no gradient found, or a path leading nowhere.
    """
    opts = validate_options("check_layer", **options)
    names_given(forward, backward, output, wrt)
    try:
        res = _whole(layer, inputs, forward, backward, params, grads, wrt, output, opts, loss)
        if (flagged := in_training(layer, forward, res)) is not None:  # caches kept only
            again = _whole(flagged[0], inputs, forward, backward, params, grads, wrt,  # in
                           output, opts, loss)  # training mode
            res = res if again.status == "error" else _noted(again, flagged[1])
    except SystemExit as exc:  # the user's code called exit() where it was observed
        res = exit_result(layer, exc, opts)
    record(res)
    return res


def _whole(layer: Any, inputs: tuple[Any, ...], forward: str | None, backward: str | None,
           params: Any, grads: Any, wrt: Any, output: str | None, opts: Options,
           loss: Any) -> CheckResult:
    if loss is not None:  # the targets of a loss no method of the network computes
        return _with_loss(layer, inputs, forward, backward, params, grads, wrt, output,
                          opts, loss)
    return _read_and_retried(layer, inputs, forward, backward, params, grads, wrt, output,
                             opts)


def _read_and_retried(layer: Any, inputs: tuple[Any, ...], forward: str | None,
                      backward: str | None, params: Any, grads: Any, wrt: Any,
                      output: str | None, opts: Options) -> CheckResult:
    """:func:`check_layer`'s result, not recorded."""
    try:
        res = _checked_or_model(layer, inputs, forward, backward, params, grads, wrt,
                                output, opts)
    except LayerConventionError as exc:
        res = _inputs_failing(exc, layer, inputs, forward, backward, params, grads, wrt,
                              output, opts)
    return _retried(res, layer, inputs, forward, backward, params, grads, wrt, output, opts)


def _checked_or_model(layer: Any, inputs: tuple[Any, ...], forward: str | None,
                      backward: str | None, params: Any, grads: Any, wrt: Any,
                      output: str | None, opts: Options) -> CheckResult:
    """:func:`_checked`, or, when no method is named as a forward or a backward, the
    check of a model's loss and gradients taking every input (:func:`loss_model`)."""
    try:
        return _checked(layer, inputs, forward, backward, params, grads, wrt, output, opts)
    except TypeError as exc:
        if forward is not None or backward is not None or "-like method" not in str(exc):
            raise
        if (model := loss_model(layer, inputs)) is None:
            if "no backward-like" not in str(exc) or not (
                    both := loss_and_gradient(layer, inputs, None)):
                raise
            return _noted(_checked(both[0], inputs, both[1], both[2], params, grads, wrt,
                                   output, opts), both[3])
    return _noted(_checked(model[0], inputs, model[1], model[2], params, grads, wrt, output,
                           opts), model[3])


def _with_loss(layer: Any, inputs: tuple[Any, ...], forward: str | None,
               backward: str | None, params: Any, grads: Any, wrt: Any,
               output: str | None, opts: Options, loss: Any) -> CheckResult:
    """:func:`check_layer` with ``loss=``: the forward then the loss checked as one
    (:func:`given_loss_chain`), the backward as that loss's gradient; not recorded."""
    if not callable(loss):
        raise TypeError("check_layer: loss= must be callable, loss(output, *targets) -> "
                        f"float; got {type(loss).__name__}")
    chain = given_loss_chain(layer, inputs, forward, loss)
    return _noted(_checked(chain[0], inputs, chain[1], chain[2] or backward, params, grads,
                           wrt, output, opts), chain[3])


def _inputs_failing(exc: LayerConventionError, layer: Any, inputs: tuple[Any, ...],
                    forward: str | None, backward: str | None, params: Any, grads: Any,
                    wrt: Any, output: str | None, opts: Options) -> CheckResult:
    """When no gradient was found for arrays the output depends on, the input gradients
    alone (``params={}``) when they are wrong: a mismatch in an input is a verdict whatever
    the parameters' gradients are (the error is kept in a note); ``exc`` raised again
    otherwise (no check passes on part of a layer)."""
    if params is not None or grads is not None or wrt is not None or getattr(
            exc, "stepped", True):  # (the input gradient computed after a step is no evidence)
        raise exc
    try:
        res = _checked(layer, inputs, forward, backward, {}, None, None, output, opts)
    except Exception:  # noqa: BLE001 - no reading of the inputs alone either: the first error
        raise exc from None
    if res.status != "mismatch" or not all(
            i.name.startswith("x") for i in res.inputs if not i.passed) or ignores_gradient(
                layer, inputs):  # (a Jacobian returned whatever it is given: no gradient)
        raise exc
    return _noted(res, f"the parameters' gradients were not read ({exc}); the input "
                  "gradients alone were checked (params={}), and they are wrong")


def _checked(layer: Any, inputs: tuple[Any, ...], forward: str | None,
             backward: str | None, params: Any, grads: Any, wrt: Any, output: str | None,
             opts: Options) -> CheckResult:
    """:func:`check_layer`'s result, not recorded."""
    if (fn := function_layer(layer, inputs, forward, backward)) is not None:
        return _noted(_checked(fn[0], inputs, None, None, params, grads, wrt, output, opts),
                      fn[1])
    if (op := op_layer(layer, inputs, forward, backward)) is not None:  # an autograd op
        return _noted(_checked(op[0], op[1], None, None, params, grads, wrt, output, opts),
                      op[2])
    try:
        layer, shared = class_held(layer)
    except ProtocolError as exc:  # it holds what cannot be copied: said there
        return error_result(exc, opts.seed, opts.name, "layer")
    if shared:
        return _noted(_checked(layer, inputs, forward, backward, params, grads, wrt, output,
                               opts), f"{', '.join(shared)}: a dict or list of the class, "
                      "shared by every instance; checked on a copy of the layer holding its "
                      "own copy of each (create them in __init__ to keep instances apart)")
    wrt, draws = _wrt_names(wrt, inputs, layer, forward), GlobalDraws(type(layer))
    read = partial(_discover, layer, inputs, forward, backward, params, grads,
                   _wanted(inputs, wrt), output, opts.seed, draws)
    with np.errstate(all="ignore"):
        try:
            return _run(_read_given(read, wrt), len(inputs), inputs, wrt, opts)
        except AmbiguousReading as amb:
            return _each_reading(amb, read, inputs, wrt, opts)
        except OutputChoice as choice:  # several stored arrays: the check under each
            return each_output(choice, lambda path: _checked(
                layer, inputs, forward, backward, params, grads, wrt, path, opts), opts)
        except (UserCodeError, ProtocolError) as exc:
            return error_result(exc, opts.seed, opts.name, "layer")
        finally:
            draws.restore()  # the user's global generators as they were


def _noted(res: CheckResult, note: str) -> CheckResult:
    res.notes.append(note)
    return res


def _retried(res: CheckResult, layer: Any, inputs: tuple[Any, ...], forward: str | None,
             backward: str | None, params: Any, grads: Any, wrt: Any, output: str | None,
             opts: Options) -> CheckResult:
    """``res``, or the check under another reading its failure points to: ``__call__``
    as the forward (it stores what the backward needs), or the one other linear method
    as the backward when the one named so is a step (:func:`step_named_backward`); a
    copy that ran once when the forward raised for weights its first use builds, and a
    backward handed a stand-in for the optimizer it takes (:mod:`._first_use`)."""
    if res.status == "error" and (again := _first_use(res, layer, inputs, forward, backward,
                                                      params, grads, wrt, output, opts)):
        return again
    if res.status in ("error", "bad-protocol") and (so := stored_outputs(
            layer, inputs, forward, backward)):
        with np.errstate(all="ignore"):
            again = run_protocol_check(so[0], so[1], list(inputs), so[2], opts, kind="layer",
                                       names=so[3])
        return res if again.status in ("error", "bad-protocol") else _noted(again, so[4])
    if res.status == "error" and (chained := _loss_chained(
            res, layer, inputs, backward, params, grads, wrt, output, opts)):
        return chained
    if res.status == "error" and forward is None and (
            whole := loss_taking_all(layer, inputs, res.error)):
        try:
            again = _checked(layer, inputs, whole[0], backward, params, grads, wrt, output,
                             opts)
        except LayerConventionError:  # read that way, an array is left unread
            again = res
        if again.status != "error":
            return _noted(again, whole[1])
    if forward is None and (other_f := storing_forward(layer, inputs, res)):
        again = _checked(layer, inputs, other_f[0], backward, params, grads, wrt, output, opts)
        if again.status != "error":
            return _noted(again, other_f[1])
    if forward is None and call_first(layer, inputs, res):  # __call__ keeps what it needs
        again = _checked(layer, inputs, "__call__", backward, params, grads, wrt, output, opts)
        if again.status != "error":
            return _noted(again, "the backward needs what __call__ stores when it calls "
                                 "forward: __call__ checked as the forward")
    elif backward is None and (other := step_named_backward(layer, inputs, res, forward)
                               or stub_backward(layer, inputs, res, forward)):
        try:
            again = _checked(layer, inputs, forward, other[1], params, grads, wrt, output,
                             opts)
        except (LayerConventionError, TypeError):  # no reading that way either
            return res
        if again.status not in ("error", "bad-protocol"):
            return _noted(again, f"{other[0]}() {other[2]}")
    return res


def _loss_chained(res: CheckResult, layer: Any, inputs: tuple[Any, ...],
                  backward: str | None, params: Any, grads: Any, wrt: Any,
                  output: str | None, opts: Options) -> CheckResult | None:
    """The check of the forward then the loss method (:func:`loss_method_chain`), the
    backward as that loss's gradient, or, when that reads nothing or is a
    ``bad-protocol``, given what the loss's gradient method returns; None for neither."""
    kept = None
    for through in (True, False):  # the loss's gradient handed on, when read, first
        chain = loss_method_chain(layer, inputs, res.error, through)
        if chain is None:
            continue
        try:  # (given the loss's gradient, the targets are held in the copy)
            again = _checked(chain[0], inputs[:chain[4]] if through else inputs, chain[1],
                             chain[2] or backward, params, grads, wrt, output, opts)
        except LayerConventionError:  # read that way, an array is left unread
            continue
        if again.status not in ("error", "bad-protocol"):
            return _noted(again, chain[3])
        if again.status != "error" and kept is None:
            kept = _noted(again, chain[3])
    if kept is None and (both := loss_and_gradient(layer, inputs, res.error)):
        try:
            again = _checked(both[0], inputs, both[1], both[2], params, grads, wrt, output,
                             opts)
        except LayerConventionError:  # read that way, an array is left unread
            return None
        return _noted(again, both[3]) if again.status != "error" else None
    return kept


def _first_use(res: CheckResult, layer: Any, inputs: tuple[Any, ...], forward: str | None,
               backward: str | None, params: Any, grads: Any, wrt: Any, output: str | None,
               opts: Options) -> CheckResult | None:
    """The check of the copy :func:`warmed` or :func:`fed_stand_in` makes, when it gets
    past the error; None otherwise."""
    for make in (warmed, fed_stand_in):
        made = make(layer, inputs, res.error or {}, forward, backward)
        if made is None:
            continue
        try:
            again = _checked(made[0], inputs, forward, backward, params, grads, wrt, output,
                             opts)
        except LayerConventionError as exc:  # read that way, an array is left unread
            raise LayerConventionError(f"{exc} ({made[1]})") from None
        again = _retried(again, made[0], inputs, forward, backward, params, grads, wrt,
                         output, opts)
        if again.status != "error":
            return _noted(again, made[1])
    return None


def _run(proto: Protocol, n: int, inputs: tuple[Any, ...], wrt: Any, opts: Options
         ) -> CheckResult:
    """The protocol check of the layer: inputs ``x0``... and the parameters by name."""
    names = [f"x{k}" for k in range(n)]
    boxes = boxed_inputs(inputs[:n])  # Tensor(x): its .data is the input checked
    values = [getattr(x, boxes[k]) if k in boxes else x for k, x in enumerate(inputs)] + [
        np.asarray(p.read(proto.layer)) for p in proto.params]
    all_names = names + [p.name for p in proto.params]
    if len(set(all_names)) != len(all_names):
        raise LayerConventionError(f"two parameters share a name: {all_names}")
    proto.notes += [f"x{k}: a {type(inputs[k]).__name__} holding one float array, .{a}: that "
                    "array is the input checked (put back in a copy of it for each call)"
                    for k, a in boxes.items()]

    def fwd(**kw: Any) -> tuple[Any, Any]:
        xs = [reboxed(inputs[k], boxes[k], kw[x]) if k in boxes else kw[x]
              for k, x in enumerate(names)]
        out, cache = proto.run_forward(xs, [kw[p.name] for p in proto.params])
        return out, (cache, xs)

    def bwd(dy: Any, cache: Any) -> dict[str, Any]:
        got = list(proto.run_backward(dy, cache[0]))
        for k in (k for k in boxes if got[k] is None and wrt is None):
            got[k] = box_gradient(cache[1][k], boxes[k])
            if got[k] is None:  # a Tensor(x) the backward returns no gradient for
                raise ProtocolError("bad-protocol", box_unread(k, inputs[k], boxes[k]))
        return dict(zip(all_names, got, strict=True))

    res = run_protocol_check(fwd, bwd, dict(zip(all_names, values, strict=True)),
                             _with_twins(wrt, all_names), opts, kind="layer")
    res.notes = list(res.notes) + [t for t in proto.notes if t not in res.notes]
    if res.status == "mismatch" and proto.reduce == "sum" and (
            mean := _of_the_mean(proto, n, inputs, wrt, opts)):
        res.status, res.passed = "bad-protocol", False
        res.message = (f"{type(proto.layer).__name__}.{proto.backward}() returns the gradient "
                       "of the mean of the losses per sample, and no method of the layer says "
                       "that the mean is the loss (read, without one, as their sum): which "
                       "the training loop takes is not observed; give the layer a method "
                       "returning the loss it trains on (their mean) and check again" + (
                           "" if mean.passed else " (read as their mean, it is off by at most "
                           "a relative 1e-5: an epsilon guard in the forward, log(p + 1e-7), "
                           "that the backward omits?)"))
    return res


def _of_the_mean(proto: Protocol, n: int, inputs: tuple[Any, ...], wrt: Any, opts: Options
                 ) -> CheckResult | None:
    """The layer's check read as the gradient of the mean of its losses, when it passes
    or fails by an epsilon guard's size alone (``log(p + 1e-7)``); else None."""
    proto.reduce = "mean"
    try:
        res = _run(proto, n, inputs, wrt, opts)
        return res if res.passed or res.status == "mismatch" and all(
            i.passed or i.mode == "full" and i.max_rel_error <= 1e-5 for i in res.inputs) \
            else None
    finally:
        proto.reduce = "sum"


def _each_reading(amb: AmbiguousReading, read: Callable[..., Protocol],
                  inputs: tuple[Any, ...], wrt: Any, opts: Options) -> CheckResult:
    """A loss's backward whose prediction argument may be the forward's input or an array
    the forward stored: checked under each reading. Passing under every one is a pass;
    failing under every one (each a gradient verdict) is that mismatch, the nearest shown;
    passing under some only is no verdict, since the caller's reading cannot be observed:
    the error says which passed."""
    said = {r: f"x{r}" if isinstance(r, int) else f"their {r[1:-1]}" if r.startswith("<")
            else r for r in amb.readings}  # (<mean>, <sum>: a loss per sample's reduction)
    what = "the reduction of the loss per sample" if all(
        isinstance(r, str) and r.startswith("<") for r in amb.readings) else \
        "the backward's prediction argument"
    results: list[tuple[int | str, CheckResult]] = []
    for r in amb.readings:
        try:
            results.append((r, _run(read(wrt is not None, r), len(inputs), inputs, wrt,
                                    opts)))
        except (UserCodeError, ProtocolError):
            continue
    complete = len(results) == len(amb.readings)
    if complete and all(res.passed for _, res in results):
        return results[0][1]
    if complete and all(res.status in ("mismatch", "shape-mismatch") for _, res in results):
        r, res = min(results, key=lambda rr: max(
            (i.max_abs_error for i in rr[1].inputs), default=np.inf))  # one forward: same scale
        res.notes.append(f"{what} may be any of {', '.join(said.values())}: the gradient "
                         f"is wrong under each reading (shown: {said[r]}, the nearest)")
        return res
    passing = [said[r] for r, res in results if res.passed]
    if passing:
        amb.message = amb.message.rstrip().rstrip(".") + "."
        amb.message += (f" It passes when given {', '.join(passing)} and not when given "
                        f"{', '.join(v for v in said.values() if v not in passing)}: which "
                        "one your code passes cannot be observed.")
    return error_result(amb, opts.seed, opts.name, "layer")


def _argument_names(layer: Any, forward: str | None, inputs: tuple[Any, ...]) -> list[str]:
    """The forward's positional parameter names (``y_pred``, ``y_true``), those naming an
    attribute of the layer or of the form ``x<k>`` left out (``""``); the forward found
    as :func:`check_layer` finds it (``__call__`` beside ``gradients``)."""
    if forward is None and not callable(getattr(layer, "forward", None)):
        try:
            forward = method_pair(layer, None, None, inputs)[0]
        except (TypeError, ValueError):
            forward = None
    method = getattr(layer, forward or "forward", None)
    names = (positional_names(method) or []) if callable(method) else []
    # a name that is also an attribute, or one of the inputs' own names (x1 of
    # forward(x1, x2) is x1, the second input), names no argument here
    return ["" if isinstance(getattr(layer, a, None), np.ndarray) or re.fullmatch(r"x\d+", a)
            else a for a in names]


def _with_twins(wrt: Any, names: list[str]) -> Any:
    """``wrt`` with the second place of each parameter it names (``W (returned 'W')``
    for ``W``): a gradient put in two places is checked in both."""
    if wrt is None:
        return wrt
    items = [wrt] if isinstance(wrt, (str, int)) else list(wrt)
    twins = [n for n in names if n not in items and any(
        isinstance(w, str) and n.startswith(f"{w} (") for w in items)]
    return items + twins if twins else wrt


def _read_given(read: Callable[..., Any], wrt: Any) -> Any:
    """The layer read as given; with ``wrt=``, when an array the output depends on has
    no gradient found, read again holding the arrays ``wrt`` leaves out constant from
    the start (``h0`` beside ``bias``, of one shape: which one ``b_grad`` is for, the
    first reading could not tell)."""
    try:
        return read(wrt is not None)
    except LayerConventionError:
        if wrt is None:
            raise
    items = [wrt] if isinstance(wrt, str) else list(wrt) if isinstance(wrt, list | tuple) \
        else []
    names = tuple(k for k in items if isinstance(k, str) and not re.fullmatch(r"x\d+", k))
    return read(names or ("",))  # ("",): no parameter named, the inputs alone


def _wrt_names(wrt: Any, inputs: tuple[Any, ...], layer: Any = None,
               forward: str | None = None) -> Any:
    """``wrt`` with input positions (``0``, ``-1``) and the forward's argument names
    (``'y_pred'``) read as the inputs' names ``x0``..."""
    if wrt is None:
        return wrt
    n = len(inputs)
    names = _argument_names(layer, forward, inputs) if layer is not None else []
    if isinstance(wrt, str):
        return f"x{list(names).index(wrt)}" if wrt and wrt in names[:n] else wrt
    items = [wrt] if isinstance(wrt, int) and not isinstance(wrt, bool) else wrt
    try:
        items = list(items)
    except TypeError:
        return wrt  # the core's validator names what is wrong
    out = []
    for k in items:
        if isinstance(k, (int, np.integer)) and not isinstance(k, bool):
            if not -n <= k < n:
                raise ValueError(f"wrt= names input {k}, but forward takes {n} input(s); "
                                 "name parameters by name (e.g. wrt=['x0', 'W'])")
            k = f"x{int(k) % n}"
        elif isinstance(k, str) and k and k in names[:n]:
            k = f"x{list(names).index(k)}"
        out.append(k)
    return out


def _wanted(inputs: tuple[Any, ...], wrt: Any) -> list[int]:
    """The inputs (by position) that ``wrt`` names; without ``wrt``, those holding a
    float array (token ids and integer labels get no gradient)."""
    if wrt is None:
        return [k for k, x in enumerate(inputs) if differentiable(x)]
    names = [wrt] if isinstance(wrt, str) else list(wrt)
    return [k for k in range(len(inputs)) if f"x{k}" in names]


def assert_layer(layer: Any, *inputs: Any, **options: Any) -> CheckResult:
    """Like :func:`check_layer`, but raise :class:`~gradcheck.GradientMismatch` unless it
    passed."""
    __tracebackhide__ = True
    return raise_unless_passed(check_layer(layer, *inputs, **options))
