"""The calling conventions of functional code, read into the protocol of ``check_vjp``.

Course solutions and from-scratch libraries write ``out, cache = f_forward(...)`` and
``grads = f_backward(dout, cache)`` with a few variations, each read here:

- a backward returning one bare array for a one-input function (``relu_backward``);
- with ``wrt=``, a backward returning gradients for the ``wrt`` inputs only, in the
  order ``wrt`` lists them (a batch-norm backward whose mode dict is a 4th input);
  one bare array for a single ``wrt`` input is that input's gradient; without ``wrt``
  the same for the inputs that hold a float array (``conv_param`` of integers is none);
- a forward returning several outputs and its cache last (``next_h, next_c, cache``),
  and a backward taking the output gradients as separate arguments before the cache
  (``lstm_step_backward(dnext_h, dnext_c, cache)``).

Each reading that is not the plain protocol is stated in the result's notes; a
gradient that cannot be matched to an input is a ``bad-protocol`` or
``shape-mismatch`` status that says what would match.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

import numpy as np

from ._arg_names import anonymous_inputs, before_varargs, output_by_name, value_by_name
from ._extra_grads import leading_fit, trailing_dict
from ._flat import named_order
from ._loss_cache import LossBack, cache_alone, gradient_first, loss_back, scalar
from ._observe import default_of, grad_stem, positional_names
from ._placing import Placing, in_order, label_like, zero_one
from ._protocol import ProtocolError, map_arrays
from ._renamed import array_leaves, by_returned_names, order_by_trial, placed_by_names

__all__ = ["Conventions", "differentiable", "has_float", "is_configuration",
           "label_like", "misread", "zero_one"]


#: What a backward raises when it uses a tuple of gradients as one array, or when the
#: call's arguments do not fit its signature.
_MISREAD = ("tuple", "sequence", "inhomogeneous", "positional argument")


def _same_default(fwd: Callable[..., Any], bwd: Callable[..., Any], name: str) -> bool:
    """Whether both functions give their parameter ``name`` one default (``mode="max"``
    in both: one setting, meant alike), or the backward a string one (a mode's name)
    and the forward none."""
    a, b = default_of(fwd, name), default_of(bwd, name)
    return (a is not inspect.Parameter.empty and type(a) is type(b) and a == b) or (
        a is inspect.Parameter.empty and isinstance(b, str))  # a mode: "max"


def misread(error: dict[str, str]) -> bool:
    """Whether a user's error reads as one of a tuple used as an array or of a call's
    arguments that do not fit."""
    return error.get("type") in ("TypeError", "ValueError", "AttributeError", "IndexError") and any(
        w in error.get("message", "") for w in _MISREAD)


def _rows_of(g: list[Any], x: Any) -> bool:
    """Whether ``g`` is nested lists of numbers laid out as the array ``x``."""
    try:
        a = np.asarray(g)
    except ValueError:  # (ragged)
        return False
    return isinstance(x, np.ndarray) and a.shape == x.shape and a.dtype.kind in "fiu"


def has_float(x: Any) -> bool:
    """Whether ``x`` (an array, or lists, tuples and dicts of them) holds a float."""
    if isinstance(x, (list, tuple, dict)):
        return any(has_float(v) for v in (x.values() if isinstance(x, dict) else x))
    if isinstance(x, (str, bytes)) or x is None:
        return False
    try:
        return np.asarray(x).dtype.kind == "f"
    except Exception:  # an object NumPy cannot read: not an array
        return False


def is_configuration(x: Any) -> bool:
    """Whether ``x`` is a settings dict or object: a dict (or an object with attributes)
    that holds a string, an integer, a bool, None or another value that is no float
    (``{"mode": "train", "eps": 1e-5, "running_mean": ...}``). It is passed through as a
    constant; the float arrays inside it are constants too unless ``wrt=`` names it."""
    if isinstance(x, dict):
        values = list(x.values())
    elif hasattr(x, "__dict__") and not isinstance(x, (np.ndarray, np.generic, type)):
        values = list(vars(x).values())
    else:
        return False
    return any(not _float_leaf(v) for v in values)


def _float_leaf(v: Any) -> bool:
    if isinstance(v, (list, tuple, dict)):
        return all(_float_leaf(u) for u in (v.values() if isinstance(v, dict) else v))
    if isinstance(v, bool) or v is None:
        return False
    return isinstance(v, (float, np.floating)) or (
        isinstance(v, np.ndarray) and v.dtype.kind == "f")


def differentiable(x: Any) -> bool:
    """Whether an input is differentiated when ``wrt=`` is not given: it holds a float
    and is no settings dict (:func:`is_configuration`)."""
    return has_float(x) and not is_configuration(x)


def _zeroed(x: Any) -> Any:
    """``x`` with every float array in it (containers too) zero."""
    return map_arrays(x, lambda a: np.zeros_like(a) if a.dtype.kind == "f" else a)


@dataclass
class _With:
    """A cache with the forward's inputs the backward takes again after it."""

    cache: Any
    args: tuple[Any, ...]


@dataclass
class _Again:
    """The cache of a forward with none: its inputs, given to the backward again."""

    args: tuple[Any, ...]
    first: bool = False  # the output gradient first: tanh_backward(dA, Z) of tanh(Z)
    settings: dict[str, Any] = field(default_factory=dict)  # by name, after the arrays
    order: list[int | None] | None = None  # by the forward's names, None the gradient


class Conventions(Placing):
    """``forward`` and ``backward`` wrapping the user's functions; ``notes`` says which
    conventions were read."""

    _named_back = False  # the backward takes some inputs by their names (_by_names)

    def __init__(self, fwd: Callable[..., Any], bwd: Callable[..., Any], inputs: Any,
                 wrt: Any) -> None:
        self._fwd, self._bwd = fwd, bwd
        self.notes: list[str] = []
        self._listed = isinstance(inputs, Sequence) and not isinstance(inputs, (str, bytes))
        self._n = len(inputs) if self._listed else 0
        self._first = inputs[0] if self._listed and self._n == 1 else None
        self._inputs = list(inputs) if self._listed else []
        self._given = inputs
        self._shapes: list[list[tuple[int, ...]]] = []  # each output's array leaves
        self._wanted = self._wrt_order(wrt)
        self._floating = [k for k, x in enumerate(inputs) if differentiable(x)] \
            if self._listed else []
        f_names, b_names = self._read_names(fwd, bwd)
        self._again = self._listed and self._n > 0 and len(f_names) == self._n and \
            b_names[:-1] == f_names and len(b_names) == self._n + 1
        every = positional_names(bwd) or []  # (settings with defaults given too)
        self._dy_first = self._listed and self._n > 0 and len(f_names) == self._n and any(
            [b.lower() for b in names[1:]] == [f.lower() for f in f_names] and
            len(names) == self._n + 1 for names in (b_names, every)) and not self._again
        # tanh(z), backward(dA, Z); pool(A, k=2), pool_backward(dA, A, k=2) given k; and
        # conv(A, W, activation), conv_backward(dZ, A, W): the inputs but the settings last
        m, whole = len(b_names) - 1, self._dy_first  # whole: every input given back
        self._dy_first = self._dy_first or (
            self._listed and 0 < m < self._n == len(f_names) and not self._again and
            [b.lower() for b in b_names[1:]] == [f.lower() for f in f_names[:m]] and
            not any(differentiable(x) for x in self._inputs[m:]))
        self._given_back = self._n if whole else m
        # conv_backward(dZ, A, W, b, padding="same") of conv(A, W, b, act, padding): the
        # settings it takes by the forward's names, given the forward's values
        self._back_settings = {n: f_names.index(n) for n in every[m + 1:]
                               if n in f_names[m:]} if not whole else {}
        # backward(dout, cache, WQ, WK): inputs of the forward again, by their names
        self._after = [f_names.index(b) for b in b_names[2:]] if len(b_names) > 2 and all(
            b in f_names for b in b_names[2:]) and not self._again else []
        self._loss_back = loss_back(f_names, b_names)
        self._cache_at = 0  # backward(dy, gamma, cache): the cache after inputs by name
        odd = [i for i, b in enumerate(b_names[1:]) if b not in f_names]
        if not self._after and not self._again and len(b_names) > 2 and len(odd) == 1 and \
                odd[0] > 0:
            self._cache_at = odd[0]
            self._after = [f_names.index(b) for b in b_names[1:] if b in f_names]
        self._seen_after = False  # the (y, cache) reading of self._after tested once
        # maxpool_backprop(inp, kernel, d_L_d_out) of maxpool(input, sampling_field): the
        # inputs again and the output gradient under other names, in an order found by trial
        self._renamed = self._listed and self._n >= 1 and len(f_names) == self._n and \
            len(b_names) == self._n + 1 and not self._again and not self._dy_first and \
            len(set(b_names) - set(f_names)) != 1  # (all by name but one: _by_names) (>1:
        self._tried: bool | None = None  # one input's backward(a, b) may be (dy, cache))
        self._valued: tuple[bool, bool] | None = None  # (p, grad_out): by their names
        self._cache_alone = cache_alone(every, b_names)  # grads = f_backward(cache)
        # pool_backward(dA, cache, mode="max") of pool_forward(A, hp, mode): the setting
        # given to the forward, passed on by its name
        self._settings = {b: self._inputs[f_names.index(b)] for b in every[len(b_names):]
                          if b in f_names and not differentiable(self._inputs[f_names.index(
                              b)]) and _same_default(fwd, bwd, b)} if b_names else {}
        self.outputs = 0  # the outputs a forward returning several and the cache last has
        self.split = False  # backward(dy1, cache, dy2=None): the others after the cache
        self.leading = 0  # > 0: the backward differentiates only the first ``leading``

    def _read_names(self, fwd: Callable[..., Any], bwd: Callable[..., Any]
                    ) -> tuple[list[str], list[str]]:
        """The forward's names of its inputs and the backward's required ones; sets
        ``_required``, their count (None: unread)."""
        required = positional_names(bwd, required=True)
        f_names = anonymous_inputs(fwd, required or [], self._n) or (
            positional_names(fwd) or [])[:self._n]
        if required is None and self._listed and (pre := before_varargs(bwd, f_names)):
            required = pre  # backprop(dA, Z, *args) of activate(Z): *args given none
            self._note(f"the backward takes the output gradient, the forward's inputs again "
                       f"and *args: called as ({', '.join(pre)}), *args given nothing")
        self._required = None if required is None else len(required)
        return f_names, required or []

    def _wrt_order(self, wrt: Any) -> list[int] | None:
        if wrt is None or not self._listed:
            return None
        items = [wrt] if isinstance(wrt, int) else wrt
        try:
            return [int(k) for k in items]
        except (TypeError, ValueError):
            return None  # the core's validator reports it

    def _note(self, text: str) -> None:
        if text not in self.notes:
            self.notes.append(text)

    def forward(self, *args: Any, **kwargs: Any) -> Any:
        out = self._fwd(*args, **kwargs)
        if self._again and isinstance(out, tuple) and len(out) == 2:
            raise ProtocolError("bad-protocol", (
                "the forward returns (y, cache) but the backward's parameters are the "
                "forward's, then one more: it takes the inputs again, not the cache; give "
                "it the protocol's form, bwd = lambda dy, cache: f_backward(*inputs, dy)"))
        if self._again:  # y = f(x, W); grads = f_backward(x, W, dy): no cache
            self._note("the forward returns its output alone and the backward takes the "
                       "forward's inputs again, then the output gradient: called so")
            return out, _Again(args)
        if self._listed and (as_out := output_by_name(
                self._fwd, self._bwd, self._names[0][:self._n], self._names[1], out)):
            self._note(f"the backward takes the forward's output under the op's name, "
                       f"{as_out[1]}, the output gradient and inputs by their names: called so")
            return out, _Again((*args, out.copy()), order=as_out[0], settings=self._settings)
        if self._renamed and (renamed := self._by_other_names(out, args)) is not None:
            return renamed
        if self._dy_first and not isinstance(out, tuple):  # y = tanh(Z); tanh_backward(dA, Z)
            self._note("the forward returns its output alone and the backward takes the "
                       "output gradient, then the forward's inputs again: called so")
            return out, _Again(args[:self._given_back], first=True, settings={
                n: args[k] for n, k in self._back_settings.items() if k < len(args)})
        if self._loss_back and isinstance(out, tuple) and len(out) == 2 and scalar(out[0]) and \
                (self._loss_back[0] is not None or not gradient_first(
                    self._bwd, [args[k] for k in self._loss_back[1:] if k is not None])):
            self._note("the forward returns a scalar loss and a cache; the backward takes "
                       f"the cache {'after' if self._loss_back[0] is not None else 'then'} the "
                       "forward's inputs again by their names, and no output gradient: its "
                       "gradients, times the output gradient, are compared")
            return out[0], LossBack(out[1], args)
        if self._after and isinstance(out, tuple) and len(out) == 2 and not isinstance(
                out[1], (np.generic, int, float)) and (not isinstance(out[1], np.ndarray) or (
                    self._array_cache(out, args))):  # a cache (an array too: rmsnorm_bwd(dout,
            # x, rms), never one of the output's shape or under a gradient's name, dz)
            self._note(f"the backward takes the cache {'after' if self._cache_at else 'then'} "
                       f"the forward's inputs {', '.join(f'{k}' for k in self._after)} "
                       "again by their names: called so")
            return out[0], _With(out[1], args)
        if (named := self._by_names(out, args)) is not None:
            return named
        if isinstance(out, np.ndarray) and (self._required or 0) >= 2:
            raise ProtocolError("bad-protocol", self._unread())
        if not isinstance(out, tuple) or len(out) <= 2 or hasattr(out, "_fields"):
            return out
        return self._several(out)

    def _by_other_names(self, out: Any, args: tuple[Any, ...]) -> tuple[Any, _Again] | None:
        """``(out, cache)`` for a forward returning its output alone whose backward takes
        the inputs (or, for one input, its output) and the output gradient under other
        names: in the order found by trial, or by the names (:func:`value_by_name`)."""
        if isinstance(out, np.ndarray) and out.dtype.kind == "f" and (
                self._tried is not None or (tried := order_by_trial(self._bwd, args, out))
                is not None):
            self._tried = tried if self._tried is None else self._tried
            order = ("the forward's inputs again, then the output gradient", "the output "
                     "gradient, then the forward's inputs again")[bool(self._tried)]
            self._note(f"the forward returns its output alone and the backward takes "
                       f"{self._n + 1} arguments under other names: {order} (the one order "
                       "in which it runs and is linear in the gradient)")
            return out, _Again(args, first=bool(self._tried))
        if self._n == 1 and isinstance(out, np.ndarray) and (
                self._valued is not None or (valued := value_by_name(
                    self._bwd, self._names[1], args[0], out)) is not None):
            self._valued = valued if self._valued is None else self._valued
            takes_out, first = self._valued or (False, False)
            self._note(f"the backward takes the output gradient and the forward's "
                       f"{'output' if takes_out else 'input'} under names that say so "
                       f"({', '.join(self._names[1])}): called so")
            return out, _Again((out.copy(),) if takes_out else args, first=first)
        return None

    def _several(self, out: tuple[Any, ...]) -> tuple[Any, Any]:
        """A forward's three or more values read as outputs and a cache."""
        held = [k for k, v in enumerate(out) if isinstance(v, (tuple, list, dict))]
        if len(held) == 1 and held[0] < len(out) - 1:  # out, cache, running_mean, ...
            j = held[0]
            self._note(f"forward returned {len(out)} values: read as {j} output(s), the cache "
                       f"(the one container) and {len(out) - j - 1} value(s) after it that "
                       "are not checked (state it returns, such as running statistics)")
            return (out[0] if j == 1 else tuple(out[:j])), out[j]
        self.leading = 1 if self._cache_alone and scalar(out[0]) and not any(
            scalar(v) for v in out[1:-1]) else self.leading  # (loss, h, caches) with
        # backward(caches): the loss's gradients (not beside a second loss, reg_loss)
        self.outputs = len(out) - 1
        self._shapes = [[a.shape for a in array_leaves(v)] for v in out[:-1]]
        if self.leading:
            k = self.leading
            self._note(f"forward returned {len(out)} values, {len(out) - 1} outputs and the "
                       f"cache last; the backward takes the gradient of the first {k} only: "
                       f"the other {len(out) - 1 - k} output(s) are not differentiated by it "
                       "and not checked")
            return (out[0] if k == 1 else tuple(out[:k])), out[-1]
        self._note(f"forward returned {len(out)} values: read as {len(out) - 1} outputs "
                   "and the cache last")
        return tuple(out[:-1]), out[-1]

    @cached_property
    def _names(self) -> tuple[list[str], list[str], list[str]]:
        """The forward's parameter names, the backward's required ones (and the output
        gradient after the inputs with a None default: ``partial(op, deriv=True)`` of
        ``op(x, front_delta=None, deriv=False)``) and all of its."""
        f, b = positional_names(self._fwd) or [], positional_names(self._bwd, required=True) or []
        f = anonymous_inputs(self._fwd, b, self._n) or f  # np.multiply's x1, x2 as bwd's
        every, k = positional_names(self._bwd) or [], len(b)
        b = every[:k + 1] if b and every[k:] and f[:k] == b and default_of(
            self._bwd, every[k]) is None else b
        return f, b, every

    def _array_cache(self, out: tuple[Any, Any], args: tuple[Any, ...]) -> bool:
        """Whether the forward's second value, an array, reads as the cache the backward
        takes, after the inputs by name or right after the output gradient: taken under
        no gradient's name (``bwd(dy, x, dz)``), and not of the first output's shape (a
        second output's) unless no float (a dropout's mask) or an input itself."""
        b_names = self._names[1]
        at = self._cache_at + 1
        name = b_names[at] if at < len(b_names) else ""
        return bool(name) and (np.asarray(out[1]).dtype.kind != "f" or grad_stem(
            name) == name.lower().lstrip("_") and (np.shape(out[1]) != np.shape(
                out[0]) and 0 < self._cache_at or any(out[1] is a for a in args)))

    def _unread(self) -> str:
        """What a forward returning an array alone is told when no reading of its
        backward's arguments applies: which of them the forward names, and the form."""
        f_names, b_names, _ = self._names
        others = [b for b in b_names if b not in f_names]
        which = (f"of which {', '.join(others)} {'is' if len(others) == 1 else 'are'} none "
                 "of the forward's inputs by name (the output gradient? the forward's "
                 "output? a setting?)" if others else "the forward's inputs by name and no "
                 "output gradient, and what the forward returns reads as no loss")
        return (f"forward must return (y, cache); it returned ndarray alone, and the backward "
                f"takes ({', '.join(b_names)}), {which}, which no reading "
                "can tell; give the protocol's form: fwd = lambda *a: (f(*a), a) and bwd = lambda "
                "dy, a: f_backward(...) calling it as your code does (the forward's output "
                "where it takes that: fwd = lambda *a: (f(*a), (f(*a), a)))")

    def _by_names(self, out: Any, args: tuple[Any, ...]) -> tuple[Any, _Again] | None:
        """``(out, cache)`` for a forward returning its output alone whose backward takes
        some of its inputs by their names and one argument more, the output gradient
        (``conv_back(X, dy, W)`` of ``conv(X, W, b)``); else None."""
        f_names, b_names, every = self._names[0][:self._n], self._names[1], self._names[2]
        if self._listed and (order := by_returned_names(self._fwd, f_names, b_names, out)):
            self._note("the forward returns its output and values it computed; the backward "
                       "takes inputs and those values by their names and the output's "
                       "gradient: called so")  # (backward_hidden(A, W, dH, A_tilde, A_hat))
            return out[0], _Again((*args, *out[1:]), order=order)
        if not (self._listed and isinstance(out, np.ndarray) and out.dtype.kind == "f") or \
                out.size == 1:  # a loss's mse_grad(y_pred, y): the prediction, no gradient
            return None
        odd = [b for b in b_names if b not in f_names]
        low = {f.lower(): k for k, f in enumerate(f_names)}  # (b1 for B1: but for case)
        if len(odd) > 1 and len(low) == len(f_names):
            odd = [b for b in b_names if b.lower() not in low]
        if len(f_names) != self._n or len(b_names) < 2 or len(odd) != 1 or len(
                set(b_names)) != len(b_names):
            return None
        order = [None if b in odd else low[b.lower()] for b in b_names]
        also = {b: args[f_names.index(b)] for b in every[len(b_names):]
                if b in f_names}  # linear_backward_weights(x, w, dy, bias=None)
        self._named_back = True
        self._note(f"the forward returns its output alone and the backward takes the "
                   f"forward's inputs {', '.join(b for b in b_names if b not in odd)} again "
                   f"by their names and {odd[0]}, the output gradient: called so")
        return out, _Again(args, settings=also, order=order)

    def first_outputs(self, error: dict[str, str] | None) -> Conventions | None:
        """The same functions read with the backward taking the gradients of the first
        outputs only, as many as it takes positional arguments before the cache
        (``rnn_cell_backward(da_next, cache)`` for ``a_next, yt_pred, cache``), after it
        raised ``error`` given every output's gradient. None unless the error is one of
        a tuple used as an array or of the call's arguments, the backward has no optional
        positional parameter (one could take the other gradients) and no output left out
        has the shape of an input (a recurrent state such as ``c_next``, whose gradient
        a backward must take)."""
        k = (self._required or 0) - 1
        if not 1 <= k < self.outputs or error is None or not misread(error) or \
                positional_names(self._bwd) != positional_names(self._bwd, required=True):
            return None
        shapes = {np.shape(v) for v in array_leaves(self._given)}
        if any(s in shapes for out in self._shapes[k:] for s in out):
            return None
        other = Conventions(self._fwd, self._bwd, self._given, self._wanted)
        other.leading = k
        return other

    def after_cache(self, error: dict[str, str] | None) -> Conventions | None:
        """The same functions read with the backward taking the first output's gradient,
        the cache, then the others' as optional arguments defaulting to None
        (``backward(dHout, cache, dhn=None)`` for ``Hout, h_last, cache``), after it
        raised ``error`` given every output's gradient as one. None unless so."""
        every = positional_names(self._bwd) or []  # later outputs arrays (a scalar may
        if self._required != 2 or self.outputs < 2 or error is None or not misread(  # be a
                error) or len(every) != self.outputs + 1 or not all(  # penalty)
                    default_of(self._bwd, n) is None for n in every[2:]) or \
                not all(len(s) == 1 and len(s[0]) > 0 for s in self._shapes[1:]):
            return None
        other = Conventions(self._fwd, self._bwd, self._given, self._wanted)
        other.split = True
        return other

    def _split(self, dy: Any, cache: Any) -> Any:
        """``backward(dy[0], cache, *dy[1:])``; at the first call, zeros for the later
        gradients must give what their defaults (None) give: they are gradients."""
        if not self._seen_after:
            self._seen_after = True
            alone = self._bwd(dy[0], cache)
            zeros = self._bwd(dy[0], cache, *[_zeroed(d) for d in dy[1:]])
            a, z = array_leaves(alone), array_leaves(zeros)
            if len(a) != len(z) or not all(u.shape == v.shape and np.allclose(u, v)
                                           for u, v in zip(a, z, strict=True)):
                raise ProtocolError("bad-protocol", (
                    "the backward's arguments after the cache are no gradients of the other "
                    "outputs (zeros there give other results than leaving them out)"))
            self._note(f"backward takes the first output's gradient, the cache, then the "
                       f"other {len(dy) - 1} outputs' gradients (optional, None by default): "
                       "called so")
        return self._bwd(dy[0], cache, *dy[1:])

    def backward(self, dy: Any, cache: Any) -> Any:
        if self.split and isinstance(dy, (tuple, list)):
            grads = self._split(dy, cache)
            return self._match(grads) if self._listed else grads
        if self._cache_alone and not isinstance(dy, (tuple, list)) and np.size(dy) == 1:
            self._note("the output is a scalar loss and the backward takes the cache alone: "
                       "its gradients, times the output gradient, are compared")
            grads = map_arrays(self._bwd(cache), lambda g: g * np.asarray(dy).reshape(()))
            return self._match(grads) if self._listed else grads
        if isinstance(cache, LossBack):
            grads = map_arrays(self._bwd(*[cache.cache if k is None else cache.args[k]
                                           for k in self._loss_back]),
                               lambda g: g * np.asarray(dy).reshape(()))
            return self._match(grads) if self._listed else grads
        if isinstance(cache, _Again):
            if cache.order is not None:
                grads = self._bwd(*[dy if k is None else cache.args[k] for k in cache.order],
                                  **cache.settings)
                if len(cache.args) > self._n:  # (return dW, dX for f(X, A, W))
                    grads, said = placed_by_names(self._bwd, self._names[0][:self._n], grads,
                                                  self._wanted or self._floating)
                    if said:
                        self._note(said)
            else:
                grads = self._bwd(dy, *cache.args, **cache.settings) if cache.first else \
                    self._bwd(*cache.args, dy)
            return self._match(grads) if self._listed else grads
        if isinstance(cache, _With):
            again = [cache.args[k] for k in self._after]
            again.insert(self._cache_at, cache.cache)
            grads = self._bwd(dy, *again)
            if not self._seen_after:  # given a zero dy, a cache gives zero gradients;
                self._seen_after = True  # a second output's gradient would give some
                zero = self._bwd(_zeroed(dy), *again)
                if any(np.any(a) for a in array_leaves(zero)):
                    raise ProtocolError("bad-protocol", (
                        "the forward returns (y, c) and the backward's gradients are not "
                        "zero for a zero dy: c reads as a second output, not a cache; "
                        "return the outputs and then the cache, (y, c, cache)"))
            return self._match(grads) if self._listed else grads
        if isinstance(dy, (tuple, list)) and len(dy) > 1 and self._required == len(dy) + 1:
            self._note(f"backward takes the {len(dy)} output gradients as separate "
                       "arguments before the cache")
            grads = self._bwd(*dy, cache)
        elif self._settings:
            self._note("the backward takes the forward's setting(s) "
                       f"{', '.join(self._settings)} as optional arguments of the same names: "
                       "given the forward's values")
            grads = self._bwd(dy, cache, **self._settings)
        else:
            grads = self._bwd(dy, cache)
        return self._match(grads) if self._listed else grads

    def _named_order(self, grads: Any) -> Any:
        """One gradient per input, reordered when they fit the inputs' shapes only in
        the order the names its code returns them under say (``return dWq, dWk, dWv,
        dX_total`` for ``f(Z, WQ, WK, WV)``, the backward naming ``Z`` ``X``)."""
        if not self._listed or not all(isinstance(x, np.ndarray) for x in self._inputs) or \
                not all(isinstance(g, (np.ndarray, list)) for g in grads):
            return grads  # (arrays only: a list of parts stacks as one array or not at all)
        shapes = [x.shape for x in self._inputs]
        try:
            if all(np.shape(g) == s for g, s in zip(grads, shapes, strict=True)):
                return grads
            named = named_order(self._bwd, self._fwd, list(grads), shapes)
        except ValueError:  # parts of several shapes
            return grads
        back = (positional_names(self._bwd) or [])[1:]  # (after the output gradient)
        if len(back) == self._n:  # the backward's own names for the inputs first
            named = named_order(self._bwd, self._fwd, list(grads), shapes, back) or named
        if named is None:
            return grads
        self._note(named[1])
        return type(grads)(grads[j] for j in named[0])

    def _match(self, grads: Any) -> Any:
        n, wanted = self._n, self._wanted
        if isinstance(grads, (tuple, list)):
            if n == 1 and isinstance(grads, list) and _rows_of(grads, self._first):
                return (np.asarray(grads, dtype=np.float64),)  # [[...], ...] for one array
            if len(grads) == n:
                return self._named_order(grads)
            if n == 1 and isinstance(self._first, (list, tuple)) and \
                    len(grads) == len(self._first):
                return (grads,)  # one input that is a list of arrays
            if wanted is not None and len(grads) == len(wanted):
                self._note(f"backward returned {len(grads)} gradients for {n} inputs: read as "
                           f"those of the wrt inputs {wanted}, in that order")
                return self._spread(grads, wanted)
            arrays = [k for k in self._floating if isinstance(self._inputs[k], np.ndarray)]
            if wanted is None and len(grads) == len(arrays) < len(self._floating) and all(
                    np.shape(g) == np.shape(self._inputs[k]) for k, g in zip(
                        arrays, grads, strict=True)):
                self._note(f"backward returned {len(grads)} gradients for {n} inputs: read as "
                           f"those of the float arrays {arrays}, in that order (the other "
                           "inputs, float scalars and containers, are constants)")
                return self._spread(grads, arrays)
            if wanted is None and len(grads) == len(self._floating):
                self._note(f"backward returned {len(grads)} gradients for {n} inputs: read as "
                           f"those of the floating inputs {self._floating}, in that order "
                           "(the others hold no float array)")
                return self._spread(grads, self._floating)
            if wanted is None and (keyed := trailing_dict(grads, self._fwd, self._inputs)):
                self._note("backward returned the first inputs' gradients in order, then a "
                           "dict: read as one dict of gradients by name")
                return keyed
            if wanted is None and (lead := leading_fit(grads, self._inputs, self._floating)):
                self._note(f"backward returned {len(grads)} gradients for {len(lead)} float "
                           f"inputs, the first {len(lead)} of their shapes: those read, the "
                           f"rest naming no input (not checked)")
                return self._spread(grads[:len(lead)], lead)
            fit = in_order(grads, self._inputs, self._floating) if wanted is None and \
                self._cache_alone else None  # (a loss's: data first, no gradient for it)
            if fit is not None:
                self._note(f"backward returned {len(grads)} gradients for {n} inputs: read as "
                           f"those of the inputs {fit}, the one choice of inputs whose shapes "
                           "they have in order (the others are constants: data, labels)")
                return self._spread(grads, fit)
            if wanted is None and self._named_back:  # by design (the data) or forgotten?
                raise ProtocolError("bad-protocol", (
                    f"backward returned {len(grads)} gradient(s) for {n} inputs, taking "
                    "some of them again by name: which it leaves out by design (the data) "
                    "and which it forgot cannot be told; name those it returns with wrt= "
                    "(e.g. wrt=[1, 2])"))
            hint = "" if wanted is not None else (
                "; if it returns gradients for some inputs only, name them with wrt= "
                "(e.g. wrt=[0, 1, 2])")
            raise ProtocolError("shape-mismatch", f"backward returned {len(grads)} gradient(s) "
                                f"for {n} input(s){hint}")
        if grads is None or not isinstance(grads, (np.ndarray, np.generic, float, int)):
            return grads  # the core names what is wrong
        if n == 1:
            return (grads,)
        return self._one_array(grads)
