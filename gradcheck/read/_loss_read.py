"""Reading a layer that is a loss: a forward that hands its input back and stores the
loss, a backward whose argument is the prediction (the forward's input, or an array the
forward stored: :class:`AmbiguousReading` when both may be), the reduction of a loss per
sample its backward differentiates, and the advice for a backward that needs targets.
"""

from __future__ import annotations

import inspect
import re
from typing import Any

import numpy as np

from ._conventions import label_like
from ._discovery import float_scalars, try_path
from ._feed import unread_store
from ._layer_call import Protocol, ones_like, takes_no_gradient
from ._observe import IO_NAMED, float_state, positional_names, stored
from ._protocol import AmbiguousReading, ProtocolError, UserCodeError, clone
from ._reading import STEP, describe, leaves, probe, read_output

__all__ = ["as_prediction", "given_loss", "given_targets", "labels_of", "left_at_none",
           "loss_part", "loss_stored", "more_than_dout", "moving_part", "pick_prediction",
           "settle"]


def more_than_dout(what: str, targets: bool = False) -> str:
    """The advice for a backward ``what`` that raised for want of arguments besides the
    output gradient."""
    return (f"; {what} takes more than the output gradient" + (
        " (targets: a loss it computes itself?)" if targets else "") + ", and no plain "
        "call can say what: check it with check_vjp(fwd, bwd, inputs), bwd calling it as "
        "your code does")


def left_at_none(proto: Protocol, exc: UserCodeError, xs: list[Any]) -> str:
    """Advice for a backward that raised when given the output gradient alone while
    further arguments of it were None (a loss's targets), read from its frame."""
    what = f"{type(proto.layer).__name__}.{proto.backward}"
    if exc.what != what or proto.style != "one":
        return ""
    if exc.ours and isinstance(exc.exc, TypeError) and re.search(
            r"missing 1 required positional argument: '(learning_rate|lr|eta|step_size|"
            r"lrate)'", exc.text):  # the step reading was tried: not one
        return (f"; {what} takes a step size: given 1.0 for it, {_step_raised(proto, xs)}"
                "no reading as a gradient step was found (it raised, or the change it made "
                "to the weights or what it returned was not twice as large for twice the "
                "output gradient); check it with check_vjp(fwd, bwd, inputs), bwd calling "
                "it as your code does")
    if exc.ours and isinstance(exc.exc, TypeError) and "missing" in exc.text:
        return more_than_dout(what)
    left = _none_arguments(exc.exc, proto.backward)
    if not left:
        return ""
    return (f"; {what} was given the output gradient alone and its argument(s) "
            f"{', '.join(left)} were None: a backward that needs more (a loss's targets) "
            "differentiates something the forward does not return, so check_layer cannot "
            "check it; check that loss as a function, its targets fixed inside: "
            "check_loss(lambda x: (loss(x), gradient(x)), x)")


def _step_raised(proto: Protocol, xs: list[Any]) -> str:
    """What ``backward(dout, 1.0)`` raised in the user's code, said so, or ""."""
    if proto.draws is None:
        return ""
    try:
        probe(proto.layer, proto.forward, proto.backward, xs, proto.draws, ("step", [None, STEP]),
              proto.out_path, ones_like, proto.then)
    except UserCodeError as exc:
        return "" if exc.ours else f"it raised {exc.type}: {exc.text}" + (
            f" (at {exc.where}); " if exc.where else "; ")
    return ""


def _none_arguments(exc: BaseException, name: str) -> list[str]:
    """The arguments after the first (the output gradient) that were None in the frame
    of the function ``name`` the traceback passes through (a decorator hides them from
    its signature, not from its frame)."""
    tb = exc.__traceback__
    while tb is not None:
        code, local = tb.tb_frame.f_code, tb.tb_frame.f_locals
        if code.co_name == name:
            args = list(code.co_varnames[:code.co_argcount])
            if args and args[0] == "self":
                args = args[1:]
            return [a for a in args[1:] if a in local and local[a] is None]
        tb = tb.tb_next
    return []


def loss_stored(proto: Protocol, xs: list[Any], k: int) -> None:
    """A forward that hands its input ``k`` back unchanged while its backward takes no
    output gradient (a loss's): the loss is what the forward stored, the one value (a
    float scalar, else an array) it created or changed, never an input it kept; else a
    :class:`ProtocolError` that asks for ``output=``."""
    layer = clone(proto.layer)
    given = clone(xs)
    arrays, scalars = float_state(layer), {p: try_path(layer, p) for p in float_scalars(layer)}
    if proto.draws is not None:
        proto.draws.reset()
    getattr(layer, proto.forward)(*given)
    found = stored(arrays, layer, tuple(leaves(given)))
    new = {p: try_path(layer, p) for p in float_scalars(layer)}
    ones = {p: v for p, v in new.items() if p not in scalars or v != scalars[p]}
    cands = ones if len(ones) == 1 else found if not ones and len(found) == 1 else {}
    what = f"{type(proto.layer).__name__}.{proto.forward}"
    if not cands:
        raise ProtocolError("bad-protocol", (
            f"{what} returns its input x{k} unchanged and {proto.backward} takes no output "
            "gradient (a loss's), but which value it stores is the loss cannot be told: it "
            f"stored {describe({**found, **ones}) or 'nothing'}; name it: "
            "check_layer(layer, x, t, output='...')"))
    (path,) = cands
    proto.out_path = path
    proto.note(f"{what} returns its input x{k} unchanged and {proto.backward} takes no "
               f"output gradient (a loss's): its output is the loss it stores in {path}")


def as_prediction(proto: Protocol, found: Any, xs: list[Any], slot: int, k: int,
                   why: str, in_note: str) -> bool:
    """The backward's argument ``slot`` takes the forward's input ``k`` (a loss's
    prediction), the other inputs the loss's targets. When the forward stored arrays of
    that shape the backward might take instead, an :class:`AmbiguousReading` lists them
    (the check tries each) unless ``proto.reading`` settled it; True when a stored array
    is read (the probe must run again)."""
    layer = proto.layer
    kept = stored(float_state(layer), found.init, tuple(found.xs))
    rivals = {p: v for p, v in kept.items() if np.shape(v) == np.shape(xs[k])}
    if rivals and proto.reading in (None, MEAN, SUM):
        raise AmbiguousReading((
            f"{type(layer).__name__}.{proto.backward}: its argument {slot} is no output "
            f"gradient ({why}); it may take the forward's input {k} or what the forward "
            f"stored of that shape ({describe(rivals)}): cannot tell which. Check the loss "
            "as a function: check_loss(lambda x, y: (loss of x, gradient of x), x, y)"),
            [k, *rivals])
    proto.notes = [t for t in proto.notes if t != in_note]
    path = proto.reading if isinstance(proto.reading, str) and proto.reading not in (
        MEAN, SUM) else None
    if path is not None:
        proto.order = [path if j == slot else o for j, o in enumerate(proto.order)]
    taken = f"what the forward stored in {path}" if path else f"the forward's input {k}"
    proto.note(f"backward's argument {slot} takes {taken}, not an output gradient ({why}): "
               "read as a loss's gradient")
    if proto.wanted != [k] and proto.wrt_given is False:
        targets = [f"x{j}" for j in proto.wanted if j != k]
        proto.wanted = [k] if k in proto.wanted else []
        if targets:
            proto.note(f"{', '.join(targets)}: the loss's target(s), constants (name them in "
                       "wrt= to differentiate them)")
    return path is not None


#: The readings of a loss per sample whose reduction cannot be observed: each is tried.
MEAN, SUM = "<mean>", "<sum>"


def given_loss(proto: Protocol, first: Any, out: Any) -> Any:
    """A loss's backward (no output gradient) of a forward returning one loss per sample
    differentiates their mean, if a method of the layer reduces the forward's output so
    (nnfs ``calculate``), else their sum (every loss's upstream gradient is one)."""
    if proto.style in ("given", "none") and isinstance(out, (np.ndarray, np.generic)) and \
            np.size(out) > 1:
        feed = unread_store(proto, out, first.xs) if proto.style == "none" else None
        if feed is not None:  # a layer fed its output gradient whose backward ignores it?
            raise ProtocolError("bad-protocol", (
                f"{type(proto.layer).__name__}.{proto.backward}() takes no output gradient "
                f"and {feed[0]}(), given an array of the output's shape, keeps one at "
                f"{feed[1]}: if it feeds the backward the output gradient, the backward "
                "never asks for it (it raises for none missing); read as a loss per sample "
                "it could pass without the output gradient ever being used, so no reading "
                "is taken"))
        proto.reduce, how = _reduction(proto, first, out)
        what = "a loss per sample" if not any(np.shape(x) == np.shape(out) for x in first.xs) \
            else "a loss per element, or an element-wise function whose derivative it returns"
        proto.note(f"the forward returns {np.size(out)} values ({what}) and the "
                   f"backward takes no output gradient: checked as the gradient of their "
                   f"{proto.reduce} ({how})")
    return first


def _reduction(proto: Protocol, first: Any, out: Any) -> tuple[str, str]:
    """``("mean", why)`` when a method taking the forward's inputs returns the mean of
    its output; ``("sum", why)`` otherwise."""
    layer, n = proto.layer, len(first.xs)
    y = np.asarray(out, dtype=np.float64)
    raised: list[tuple[str, BaseException]] = []  # methods that ran the forward, then raised
    known = (proto.forward, proto.backward, (proto.fed or "").split(":")[0], proto.then)
    for name in dir(type(layer)):
        fn = inspect.getattr_static(type(layer), name, None)
        if (name.startswith("_") and name != "__call__") or name in known or \
                not inspect.isfunction(fn) or IO_NAMED.match(name):
            continue
        if len(positional_names(fn, required=True) or []) != n + 1 and not any(
                q.kind is q.VAR_POSITIONAL for q in inspect.signature(fn).parameters.values()):
            continue  # self and the inputs, or (self, *args) handing them on
        try:
            if proto.draws is not None:
                proto.draws.reset()
            obj, ran = clone(layer), list[int]()
            setattr(obj, proto.forward, _counting(getattr(obj, proto.forward), ran))
            value = getattr(obj, name)(*clone(first.xs))
            value = np.asarray(value[0] if isinstance(value, tuple) and value else value)
        except Exception as exc:  # noqa: BLE001 - not a reduction, unless it ran the forward
            if ran:
                raised.append((name, exc))
            continue
        if not ran:  # a metric computing the mean on its own is no evidence of the reduction
            # (a tuple's first item: the data loss beside its regularisation, nnfs-style)
            continue
        if value.size == 1 and value.dtype.kind in "fiu" and np.isclose(
                float(value.reshape(())), float(y.mean()), rtol=1e-9, atol=0):
            return "mean", f"{name} returns their mean"
    if (after := _mean_after_forward(proto, first, y)) is not None:
        return "mean", f"{after}(), after the forward, returns their mean"
    if raised and proto.reading in (MEAN, SUM):  # each tried: the one asked for
        return proto.reading[1:-1], "one of the two readings tried, mean and sum"
    if raised:  # it could have said: mean or sum is not observed; both are tried
        name, error = raised[0]
        raise AmbiguousReading((
            f"the forward returns {y.size} values (a loss per sample) and whether the "
            f"backward differentiates their mean or their sum cannot be observed: "
            f"{type(layer).__name__}.{name}() runs the forward, then raised "
            f"{type(error).__name__}: {error}; put the layer in the state your training loop "
            "does before checking it (a method it calls first), and check again"), [MEAN, SUM])
    return "sum", "each one's upstream gradient is one; no method returns their mean"


def _mean_after_forward(proto: Protocol, first: Any, y: np.ndarray) -> str | None:
    """The method taking no argument whose code reads the attribute the forward stores
    its output at (``calculate()`` returning ``np.mean(self.output)``) and which, after
    the forward, returns the mean of that output; None if none does."""
    at = proto.out_path
    if not at or not at.isidentifier():
        return None
    for name in dir(type(proto.layer)):
        fn = inspect.getattr_static(type(proto.layer), name, None)
        if name.startswith("_") or IO_NAMED.match(name) or name in (
                proto.forward, proto.backward, proto.then) or \
                not inspect.isfunction(fn) or at not in fn.__code__.co_names or \
                len(positional_names(fn, required=True) or [1, 2]) != 1:
            continue  # (self alone)
        try:
            if proto.draws is not None:
                proto.draws.reset()
            obj = clone(proto.layer)
            getattr(obj, proto.forward)(*clone(first.xs))
            value = np.asarray(getattr(obj, name)())
        except Exception:  # noqa: BLE001, S112 - no evidence of the reduction
            continue
        if value.size == 1 and value.dtype.kind == "f" and np.isclose(
                float(value.reshape(())), float(y.mean()), rtol=1e-9, atol=0):
            return name
    return None


def _counting(fn: Any, ran: list[int]) -> Any:
    def call(*args: Any, **kwargs: Any) -> Any:
        ran.append(1)
        return fn(*args, **kwargs)
    return call


def labels_of(proto: Protocol, xs: list[Any]) -> list[bool]:
    """Which inputs hold labels: 0/1 values (one-hot rows, binary targets) or integers."""
    return [proto.labels[k] or (isinstance(x, np.ndarray) and x.dtype.kind in "biu")
            for k, x in enumerate(xs)]


def given_targets(proto: Protocol, xs: list[Any]) -> None:
    """A loss's backward taking the forward's inputs again (``backward(y_pred, y_true)``)
    without ``wrt=``: the inputs holding labels are its targets, constants, when another
    float input holds none (its gradient is the prediction's)."""
    labels = labels_of(proto, xs)
    if proto.style not in ("given", "none") or proto.wrt_given or all(
            labels[k] for k in proto.wanted):
        return
    targets = [k for k in proto.wanted if labels[k]]
    if targets:
        proto.wanted = [k for k in proto.wanted if not labels[k]]
        proto.note(f"{', '.join(f'x{k}' for k in targets)}: the loss's target(s), holding "
                   "labels, constants (name them in wrt= to differentiate them)")


def settle(proto: Protocol) -> None:
    """A loss's backward taking back forward arguments when the labels do not say whose
    gradient it returns: called so when ``wrt=`` says; else a ``bad-protocol`` asking for
    it (for a loss of the difference, ``(y_pred - y_true) ** 2``, the gradient of either
    argument is minus the other's: no observation tells them apart)."""
    if proto.wrt_given:
        proto.style = "given"
        return
    back = ", ".join(f"x{k}" for k in proto.order if isinstance(k, int))
    raise ProtocolError("bad-protocol", (
        f"{type(proto.layer).__name__}.{proto.backward} takes back the forward's "
        f"argument(s) {back} and no output gradient; whose gradient it returns cannot be "
        "observed unless labels (0/1 or integers) say which argument holds the targets: "
        "name that input with wrt= (wrt=['x0'] for the first)"))


def pick_prediction(proto: Protocol, xs: list[Any], out: Any) -> None:
    """For a loss (a scalar output) whose backward takes no output gradient and may return
    one array for several float inputs of one shape (``compute_derivative(y_true,
    y_pred)``), which input it is for, in ``proto.pick``: the one not holding labels
    (-1, 0 and 1 only: one-hot rows, 0/1 or -1/+1 targets); when two hold floats and the loss
    depends on their difference only, both (the first is read, with a note: one's
    gradient is minus the other's). Left empty otherwise, or when ``wrt=`` says."""
    if proto.pick or proto.wrt_given or proto.style not in ("given", "none") or \
            not _scalar(out) or \
            not proto.wanted or not isinstance(xs[proto.wanted[0]], np.ndarray):
        return
    shape = xs[proto.wanted[0]].shape
    same = [j for j in proto.wanted if isinstance(xs[j], np.ndarray)
            and xs[j].dtype.kind == "f" and xs[j].shape == shape]
    soft = [j for j in same if not _binary(xs[j])]
    if len(same) < 2 or not soft:
        return
    if len(soft) == 1:
        proto.pick = soft
    elif _difference_only(proto, xs, soft[0], soft[1]):
        proto.pick = soft[:2]


def _scalar(out: Any) -> bool:
    """Whether ``out`` is one number (a tuple of a loss and arrays is not)."""
    return isinstance(out, (np.ndarray, np.generic, float, int)) and np.size(out) == 1


def _binary(x: np.ndarray) -> bool:
    """Targets of a classifier: -1, 0 and 1 only, not all zero (whole-number scores are
    no labels)."""
    return label_like(x) and bool(np.all(np.abs(x) <= 1)) and bool(x.any())


def _difference_only(proto: Protocol, xs: list[Any], a: int, b: int) -> bool:
    """Whether the forward's output moves with ``x_a`` alone and not with ``x_a`` and
    ``x_b`` moved together (a squared error of their difference)."""
    step = 1e-2 * (1.0 + np.abs(xs[a])) * np.random.default_rng(0).choice(
        [-1.0, 1.0], xs[a].shape)

    def loss(da: Any, db: Any) -> float:
        args = clone(xs)
        args[a], args[b] = args[a] + da, args[b] + db
        layer = clone(proto.layer)
        if proto.draws is not None:
            proto.draws.reset()
        y = read_output(layer, getattr(layer, proto.forward)(*args), proto.out_path)
        return float(np.asarray(y, dtype=np.float64).reshape(()))

    try:
        here, both, alone = loss(0, 0), loss(step, step), loss(step, 0)
    except Exception:  # noqa: BLE001 - no evidence: the reading stays as it was
        return False
    return abs(both - here) <= 1e-9 * max(1.0, abs(here)) < abs(alone - here)


def loss_part(proto: Protocol, method: Any, out: Any, given: list[Any]) -> Any:
    """A forward returning ``(probs, loss)`` beside a backward taking no output gradient,
    or ``(loss, y_pred)`` handing back an input it was ``given``: the one part that is a
    float scalar is the loss, the output checked (the others are not); ``out`` as it was
    otherwise."""
    if proto.out_path is not None or not isinstance(out, tuple) or len(out) < 2 or \
            hasattr(out, "_fields"):
        return out
    scalars = [k for k, o in enumerate(out) if isinstance(o, (float, np.floating, np.ndarray))
               and np.size(o) == 1 and np.asarray(o).dtype.kind == "f"]
    if len(scalars) == 1 and all(o is None or type(o) in (int, str) or isinstance(o, np.integer)
                                 for k, o in enumerate(out) if k not in scalars):
        (k,) = scalars  # (loss, 0): a regularisation term of 0, a count: no outputs
        proto.out_path = f"<returned>[{k}]"
        proto.note(f"{type(proto.layer).__name__}.{proto.forward} returns {len(out)} values, "
                   f"one a float: part {k}, the loss, is the output checked (the others, "
                   "whole numbers or None, are not)")
        return np.array(out[k], copy=True)
    handed = all(any(o is x for x in given) for k, o in enumerate(out) if k not in scalars)
    wants = positional_names(method, required=True) or []
    again = len(given) > 1 and bool(wants) and set(wants) <= set(positional_names(getattr(
        proto.layer, proto.forward)) or [])  # backward(input, labels), backward(labels)
    if not takes_no_gradient(method) and not again and not (handed and len(scalars) == 1):
        return out
    arrays = [o for k, o in enumerate(out) if k not in scalars and isinstance(o, np.ndarray)
              and o.dtype.kind == "f"]
    if len(scalars) != 1 or (arrays and positional_names(method) and not (handed or again)):
        return out  # (y, penalty) and backward(dy=1.0): the penalty is no loss
    (k,) = scalars
    back = [j for j, x in enumerate(given) for o in out if o is x and isinstance(x, np.ndarray)
            and not label_like(x)]  # labels handed back are the targets: no prediction
    if handed and len(set(back)) == 1:  # (loss, y_pred): the input handed back is the
        proto.pick = back[:1]  # prediction, the one a single returned array is for
    proto.out_path = f"<returned>[{k}]"
    proto.note(f"{type(proto.layer).__name__}.{proto.forward} returns {len(out)} values " + (
        "(the others inputs it was given)" if handed else
        f"and {proto.backward} takes no output gradient") + f": the one float scalar, part "
        f"{k}, is the loss, the output checked")
    return np.array(out[k], copy=True)


def moving_part(layer: Any, forward: str, xs: list[Any], returned: Any) -> str | None:
    """For a forward returning a dict of numbers (a loss beside metrics, ``{'loss': l,
    'accuracy': a}``) to a backward taking no output gradient: the path of the one part
    that moves when the float inputs that hold no labels move a little (an accuracy
    does not); None when not exactly one does."""
    if not isinstance(returned, dict) or len(returned) < 2 or not all(
            isinstance(k, str) and np.size(v) == 1 and np.asarray(v).dtype.kind in "fiu"
            for k, v in returned.items()):
        return None
    rng = np.random.default_rng(0)
    moved = [x + 1e-6 * (1 + np.abs(x)) * rng.standard_normal(x.shape)
             if isinstance(x, np.ndarray) and x.dtype.kind == "f" and not label_like(x)
             else x for x in clone(xs)]
    try:
        again = getattr(clone(layer), forward)(*moved)
        parts = [k for k, v in returned.items() if not np.array_equal(v, again[k])]
    except Exception:  # noqa: BLE001 - no evidence: the plain reading stands
        return None
    return f"<returned>['{parts[0]}']" if len(parts) == 1 else None
