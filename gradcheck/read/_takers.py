"""Methods found by what they do after the forward, not by their names: a backward as
the one method linear in an array of the output's shape (``gradients(grad_out)``,
``grad_x(x, grad_out)``), a forward as the one method beside a backward taking the
inputs (``calculate(inputs)``)."""

from __future__ import annotations

import contextlib
import re
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np

from ._observe import (
    _FORWARD,
    _methods,
    _private,
    _public,
    _returns_a_value,
    float_state,
    positional_names,
    stored,
    takes,
)
from ._protocol import GlobalDraws, clone
from ._transposed import STEP_SIZE

__all__ = ["derivative_taker", "inputs_taker", "linear_after", "one_missing", "one_taker",
           "step_taker", "taking_instead", "twin_of", "unnamed_pair"]


#: A method's name that says it returns a derivative (``derivative``, ``grad``, ``prime``).
_DERIVATIVE = re.compile(r"deriv|grad|prime|jacobian|slope", re.I)


def one_missing(layer: Any, fwds: list[str], bwds: list[str], inputs: tuple[Any, ...]
                 ) -> tuple[str, str, str] | None:
    """A backward without a forward-like method, or a forward without a backward-like
    one, paired with the one method doing what the other would, and a note; else None."""
    if not fwds and len(bwds) == 1:
        takers = [n for n in _public(layer) if n != bwds[0] and len(
            positional_names(getattr(layer, n), required=True) or [None] * 99) == len(inputs)]
        valued = [t for t in takers[:6] if _returns_a_value(layer, t, inputs)]
        if len(valued) > 1:  # (init(in_dim) beside activate(a_in): the one the backward
            valued = [t for t in valued if linear_after(layer, t, bwds[0], inputs)]  # follows)
        if len(valued) == 1:  # calculate(); add_attention(x) beside step(lr)
            return valued[0], bwds[0], (
                f"forward found as the one method taking {len(inputs)} argument(s) beside "
                f"the backward and returning a value: {valued[0]} (forward) and {bwds[0]} "
                "(backward)")
    if len(fwds) == 1 and len(bwds) > 1:  # backward_inputs(g) beside backward_params(g)
        lin = [b for b in bwds[:4] if linear_after(layer, fwds[0], b, inputs)]
        if len(lin) == 1 and len(inputs) == 1:
            return fwds[0], lin[0], (
                f"of the backward-like methods {', '.join(bwds)}, {lin[0]} is the backward: "
                "the one returning arrays linear in the output gradient")
    if len(fwds) != 1 or bwds:
        return None
    if taker := one_taker(layer, fwds[0], inputs):  # gradients(grad_out) beside __call__
        return fwds[0], taker, (
            f"backward found as the one other method taking one argument, whose results "
            f"(returned, or else stored), after {fwds[0]}, are linear in it: {taker} "
            "(backward)")
    if taker := inputs_taker(layer, fwds[0], inputs):  # grad_x(x, grad_out)
        return fwds[0], taker, (f"backward found as the one other method taking the inputs "
                                f"again and one more argument, linear in it: {taker}")
    if taker := step_taker(layer, fwds[0], inputs):  # backdrop(dout, lr)
        return fwds[0], taker, (f"backward found as the one other method taking two "
                                "arguments that, after the forward, steps the arrays the "
                                f"layer holds by its second and not for 0: {taker}")
    if taker := derivative_taker(layer, fwds[0], inputs):  # derivative() of an activation
        return fwds[0], taker, (f"backward found as the one other method taking no argument "
                                "that, after the forward, returns an array of the output's "
                                f"shape, none of those it keeps: {taker}(), "
                                "the element-wise derivative, times the output gradient")
    return None


def derivative_taker(layer: Any, forward: str, inputs: tuple[Any, ...]) -> str:
    """Of the public methods besides the forward taking no argument, the one that, after
    the forward, returns a float array of the output's shape that is none of the arrays
    the layer keeps, the output or the inputs (mytorch's ``Sigmoid.derivative()``:
    ``state * (1 - state)``; not a ``pre()`` returning the pre-activation it keeps);
    ``""`` when none or several."""
    found = []
    for name in [m for m in _public(layer) if m != forward and positional_names(
            getattr(layer, m), required=True) == []][:6]:
        with _same_draws() as start:
            start()
            if (ran := _ran(layer, forward, inputs)) is None:
                return ""
            obj, out = ran
            try:
                got = getattr(obj, name)()
            except Exception:  # noqa: BLE001 - the user's method raised: not this one
                got = None
        d = got if isinstance(got, np.ndarray) else None
        held = [v for _, v in float_state(obj).values()] + [out, *clone(inputs)]
        if d is not None and d.dtype.kind == "f" and d.shape == out.shape and not any(
                np.shape(v) == d.shape and np.array_equal(v, d) for v in held):
            found.append(name)  # (not the output, the input, nor an array it keeps: pre())
    return found[0] if len(found) == 1 else ""


def _ran(layer: Any, forward: str, inputs: tuple[Any, ...]) -> tuple[Any, np.ndarray] | None:
    """A copy of ``layer`` after its forward ran on copies of ``inputs``, and the float
    array it returned; None when it raised or returned anything else."""
    obj = clone(layer)
    try:
        out = getattr(obj, forward)(*clone(inputs))
    except Exception:  # noqa: BLE001 - the user's forward raised: no reading of these
        return None
    out = getattr(out, name) if (name := wrapped_output(out, obj)) else out
    return (obj, out) if isinstance(out, np.ndarray) and out.dtype.kind == "f" else None


def wrapped_output(out: Any, layer: Any) -> str | None:
    """The name of the one float array an object returned by the forward holds as its
    own attribute (``Tensor(array, model)``: ``array``); None for anything else."""
    if isinstance(out, np.ndarray) or out is layer or not hasattr(out, "__dict__"):
        return None
    names = [k for k, v in vars(out).items() if isinstance(v, np.ndarray) and v.dtype.kind == "f"]
    return names[0] if len(names) == 1 else None


def _ramp(out: np.ndarray) -> np.ndarray:
    """An uneven array of ``out``'s shape (0.5 to 1.5)."""
    return np.linspace(0.5, 1.5, out.size).reshape(out.shape)


def step_taker(layer: Any, forward: str, inputs: tuple[Any, ...]) -> str:
    """Of the public methods besides the forward taking two arguments, the one that,
    called after the forward with an array of the output's shape and a number, changes
    arrays the layer held before for 1e-3 and none for 0 (``backdrop(dout, lr)``); with
    none such, the one returning an array of the input's shape linear in the first."""
    takers = [m for m in _public(layer) if m != forward and len(
        positional_names(getattr(layer, m), required=True) or []) == 2]

    def steps(name: str, lr: float) -> bool | None:
        if (ran := _ran(layer, forward, inputs)) is None:
            return None
        obj, out = ran
        before = float_state(obj)
        try:
            getattr(obj, name)(_ramp(out), lr)
        except Exception:  # noqa: BLE001 - the user's method raised: not this reading
            return None
        now = float_state(obj)
        return any(p in now and not np.array_equal(now[p][1], v) for p, (_, v) in before.items())

    with _same_draws() as start:
        found = []
        for m in takers[:4]:
            start()
            still = steps(m, 0.0)
            start()
            if still is False and steps(m, 1e-3):
                found.append(m)
    if not found:  # a layer holding nothing to step (a pool's backdrop(dout, lr)): the one
        found = [m for m in takers[:4]  # linear in the gradient, the number held, giving
                 if linear_after(layer, forward, m, inputs, tail=(1e-3,))]  # the input's shape
    return found[0] if len(found) == 1 else ""


def unnamed_pair(layer: Any, inputs: tuple[Any, ...]) -> tuple[str, str, str] | None:
    """With no method named as a forward or a backward, one input: the one method
    returning a value for it (the forward) beside another taking it again and one more
    argument, or the output gradient alone, linear in it (``activate(x)`` and
    ``derivative(x, error)``, ``forword(x)`` and ``back(gradient)``); else None."""
    if len(inputs) != 1:
        return None
    valued = [t for t in _public(layer)[:12] if len(positional_names(  # or forword(x)
        getattr(layer, t), required=True) or []) == 1 and _returns_a_value(layer, t, inputs)]
    pairs = [(f, t, again) for f in valued[:3] for t, again in (
        (inputs_taker(layer, f, inputs), 1), (one_taker(layer, f, inputs), 0)) if t]
    if not pairs and len(valued) == 1 and (t := derivative_taker(layer, valued[0], inputs)) \
            and _DERIVATIVE.search(t):  # map(Z) beside derivative(), not classify()
        pairs = [(valued[0], t, 2)]
    if not pairs and len(valued) == 1 and (step := _stepping_taker(layer, valued[0])):
        return valued[0], step, (f"methods found by what they do: {valued[0]} returning a "
                                 f"value for the input (the forward), {step} the one other "
                                 "taking an argument and a step size (the backward, taking "
                                 "a step)")
    if len({(f, t) for f, t, _ in pairs}) == 1:  # beside back(dout); the backward is
        f, t, again = pairs[0]  # no forward: back(x) then forword(g) is not linear
        if again == 2:
            return f, t, (f"methods found by what they do: {f} returning a value for the "
                          f"input (the forward), {t} the one other taking no argument that, "
                          "after it, returns a new array of the output's shape (the "
                          "backward: the element-wise derivative, times the output gradient)")
        how = "taking it again and one more argument" if again else "other taking one " \
            "argument"
        return f, t, (f"methods found by what they do: {f} returning a value for the input "
                      f"(the forward), {t} the one {how}, linear in it after the forward "
                      "(the backward)")
    return None


def _stepping_taker(layer: Any, forward: str) -> str | None:
    """The one public method besides the forward taking two arguments, the second named
    as a step size (``update_weights(deltas, eta)``); whether it is a step is observed
    when the layer is checked (a step read so, or no reading)."""
    found = [n for n in _public(layer) if n != forward and len(
        names := positional_names(getattr(layer, n), required=True) or []) == 2
        and STEP_SIZE.fullmatch(names[1])]
    return found[0] if len(found) == 1 else None


def one_taker(layer: Any, forward: str, inputs: tuple[Any, ...], skip: str = "") -> str:
    """Of the public methods besides the forward (and ``skip``) taking one argument, the
    one linear in it after the forward (:func:`linear_after`); ``""`` when none or
    several are."""
    for names in (_public(layer), _private(layer)):  # _compute_gradients(grads) when no
        takers = [n for n in names if n not in (forward, skip) and len(  # public method
            positional_names(getattr(layer, n), required=True) or [None] * 99) == 1]
        linear = [n for n in takers[:4] if linear_after(layer, forward, n, inputs)]
        if len(linear) > 1:  # SGD(error) beside im2col(image): the one giving dx's shape
            linear = [n for n in linear if _input_shaped(layer, forward, n, inputs)] or linear
        storing = [] if linear else [n for n in takers[:4] if _stores_linear(
            layer, forward, n, inputs)]
        if linear or storing:  # (an update(lr) returns nothing; compute_gradients(dout)
            # storing what its helper returns, or only storing what it computes, is the
            # backward; set_grad(g) keeping g is not)
            return linear[0] if len(linear) == 1 else storing[0] if len(storing) == 1 and \
                _stores_linear(layer, forward, storing[0], inputs, True) else ""
    affine = [n for n in _public(layer)[:12] if n not in (forward, skip) and _DERIVATIVE.search(
        n) and len(positional_names(getattr(layer, n), required=True) or [None] * 9) == 1
        and _affine_after(layer, forward, n, inputs)]
    return affine[0] if len(affine) == 1 else ""  # gradient(eta) -> softmax + eta: checked


def _affine_after(layer: Any, forward: str, name: str, inputs: tuple[Any, ...]) -> bool:
    """Whether ``name``, called on copies after the forward with an array of the output's
    shape, returns one float array of the first input's shape that is affine in it and
    not linear (a constant term: a gradient bug the check shows)."""
    got = []
    with _same_draws() as start:
        for scale in (0.0, 1.0, 2.0):
            start()
            if (ran := _ran(layer, forward, inputs)) is None:
                return False
            obj, out = ran
            try:
                ret = getattr(obj, name)(scale * _ramp(out))
            except Exception:  # noqa: BLE001 - the user's method raised: no backward
                return False
            if not (isinstance(ret, np.ndarray) and ret.dtype.kind == "f" and
                    ret.shape == np.shape(inputs[0])):
                return False
            got.append(np.asarray(ret, dtype=np.float64))
    zero, one, two = got
    return bool(np.any(zero)) and np.allclose(two - one, one - zero, rtol=1e-6, atol=1e-12)


def _input_shaped(layer: Any, forward: str, name: str, inputs: tuple[Any, ...],
                  again: bool = False) -> bool:
    """Whether ``name``, called after the forward with an array of the output's shape
    (``again``: after the inputs), returns an array of the first input's shape first
    (an input gradient)."""
    with _same_draws() as start:
        start()
        if (ran := _ran(layer, forward, inputs)) is None:
            return False
        obj, out = ran
        try:
            ret = getattr(obj, name)(*(clone(inputs) if again else ()), _ramp(out))
        except Exception:  # noqa: BLE001 - the user's method raised: not this reading
            return False
    first = ret[0] if isinstance(ret, (tuple, list)) and ret else ret
    return isinstance(first, np.ndarray) and first.shape == np.shape(inputs[0])


@contextlib.contextmanager
def _same_draws() -> Iterator[Callable[[], None]]:
    """Each trial started (the function given) from the global generators as they are
    now, so that a dropout mask drawn from ``np.random`` is the same in every trial;
    they are put back after."""
    draws = GlobalDraws()
    try:
        yield draws.restore
    finally:
        draws.restore()


def _stores_linear(layer: Any, forward: str, name: str, inputs: tuple[Any, ...],
                   computed: bool = False) -> bool:
    """Whether ``name``, called on copies after the forward with an array of the output's
    shape, stores float arrays twice as large for twice the array (a backward storing
    its results, ``self.dinputs = ...``, returning nothing); with ``computed``, one of
    them of the shape of an array held before, a parameter's gradient, and not that
    array itself, returning nothing (``set_grad(g)`` keeping it, a method storing an
    input's gradient alone, or a forward storing ``g @ w``, is no backward found so)."""
    got = []
    with _same_draws() as start:
        for scale in (1.0, 2.0):
            start()
            if (ran := _ran(layer, forward, inputs)) is None:
                return False
            obj, out = ran
            before = float_state(obj)
            try:
                ret = getattr(obj, name)(scale * _ramp(out))
            except Exception:  # noqa: BLE001 - the user's method raised: no backward of these
                return False
            if computed and ret is not None:  # (forword(g) storing g @ w returns a value)
                return False
            got.append(stored(before, obj))
    one, two = got
    held = {v.shape for _, v in float_state(layer).values()}  # (before the forward)
    return bool(one) and one.keys() == two.keys() and all(
        one[k].shape == two[k].shape and np.any(one[k]) and np.allclose(
            2 * one[k], two[k], rtol=1e-6, atol=1e-12) for k in one) and (
        not computed or any(v.shape in held and (v.shape != out.shape or not np.allclose(
            v, _ramp(out))) for v in one.values()))


def inputs_taker(layer: Any, forward: str, inputs: tuple[Any, ...]) -> str:
    """Of the public methods besides the forward taking the inputs again and one more
    argument (``grad_x(x, grad_out)``), the one linear in it after the forward (its result
    of the first input's shape); ``""`` when none or several."""
    n = len(inputs)
    if n != 1:  # grad_a(a, b, g) beside grad_b(a, b, g): one is not the whole backward
        return ""
    takers = [m for m in _public(layer) if m != forward and len(
        positional_names(getattr(layer, m), required=True) or []) == n + 1]
    fits = [m for m in takers[:4] if linear_after(layer, forward, m, inputs, again=True)]
    if not fits:  # grad_x(x, grad_out) dropping grad_out in its code: named so, a mismatch
        fits = [m for m in takers[:4] if _gradient_last(layer, m) and _input_shaped(
            layer, forward, m, inputs, again=True)]
    return fits[0] if len(fits) == 1 else ""


def _gradient_last(layer: Any, name: str) -> bool:
    """Whether ``name``'s last required argument is named as an output gradient."""
    from ._layer_call import cotangent_named  # (it reads methods through this module)

    need = positional_names(getattr(layer, name), required=True) or []
    return bool(need) and cotangent_named(need[-1])


def linear_after(layer: Any, forward: str, name: str, inputs: tuple[Any, ...],
                  again: bool = False, tail: tuple[Any, ...] = ()) -> bool:
    """Whether ``name``, called on copies after the forward with an array of the output's
    shape (``again``: after the inputs, its first result of the first input's shape),
    returns float arrays (some not zero), twice as large for twice the array and minus
    them for minus it (a ReLU is homogeneous, not linear)."""
    got = []
    with _same_draws() as start:
        for scale in (1.0, 2.0, -1.0):  # -1: a ReLU is homogeneous, not linear
            start()
            if (ran := _ran(layer, forward, inputs)) is None:
                return False
            obj, out = ran
            g = scale * _ramp(out)
            try:
                ret = getattr(obj, name)(*clone(inputs), g) if again else getattr(obj, name)(
                    g, *tail)
            except Exception:  # noqa: BLE001 - the user's method raised: no backward of these
                return False
            if (again or tail) and not (isinstance(ret, np.ndarray) and ret.shape == np.shape(
                    inputs[0])):
                return False
            got.append([r for r in (ret if isinstance(ret, (tuple, list)) else [ret])
                        if isinstance(r, np.ndarray) and r.dtype.kind == "f"])
    one, two, minus = got
    return bool(one) and len(one) == len(two) == len(minus) and any(
        np.any(a) for a in one) and all(
        a.shape == b.shape == c.shape and np.allclose(2 * a, b, rtol=1e-6, atol=1e-12)
        and np.allclose(-a, c, rtol=1e-6, atol=1e-12)
        for a, b, c in zip(one, two, minus, strict=True))


def taking_instead(layer: Any, forward: str | None, f: str | None, inputs: tuple[Any, ...]
                   ) -> str | None:
    """For a ``forward`` found by its name (not given) that cannot take the inputs given
    (``forward(x, h_prev)``, one step): the one other public method named as a forward
    that can (``forward_sequence(xs)``); None otherwise."""
    if forward is not None or f != "forward" or not inputs or takes(layer.forward, len(inputs)):
        return None
    fits = [m for m in _methods(layer, _FORWARD) if m not in ("forward", "__call__")
            and takes(getattr(layer, m), len(inputs)) and positional_names(getattr(layer, m))]
    if not fits and getattr(type(layer).__call__, "__module__", "builtins") != "builtins" \
            and len(positional_names(layer.forward) or inputs) < len(inputs) \
            and takes(layer.__call__, len(inputs)) and positional_names(layer.__call__) and \
            positional_names(layer.backward, required=True) == (  # the cost's gradient,
                positional_names(layer.__call__) or [])[:len(inputs)]:  # no dout: (x, t)
        fits = ["__call__"]  # a loss's __call__(x, t) beside its activation's forward(x)
    return fits[0] if len(fits) == 1 else None


def twin_of(layer: Any, took: str | None, backward: str | None) -> str | None:
    """The backward named as the forward ``took`` instead of ``forward`` is
    (``backward_sequence`` beside ``forward_sequence``), when no backward was given."""
    if not took or "forward" not in took or backward is not None:
        return None
    twin = took.replace("forward", "backward")
    return twin if callable(getattr(layer, twin, None)) else None
