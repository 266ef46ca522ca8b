"""``check_vjp``, ``assert_vjp`` and ``check_grad``: the protocol checks and their phases.

For a layer ``y, cache = fwd(*inputs)`` and a cotangent ``dy`` drawn once (seeded,
uniform, mean 0, variance 1), the checker compares the backward's vector-Jacobian product
``g = bwd(dy, cache)`` with finite differences of ``phi(x) = sum(fwd(x)[0] * dy)``
(:mod:`gradcheck.check._numeric`), element by element (a group at a time where the forward is
separable, :mod:`gradcheck.check._separable`), on a sample (:mod:`gradcheck.check._modes`), or along
random directions shared by all inputs (:mod:`gradcheck.check._joint`).

A check runs in phases: prepare the inputs (structure, ``wrt``, private copies), call
the forward and backward under the protocol (:func:`_protocol_calls`: mutation,
determinism, aliasing, shapes), then compare per input. A forward or backward that
raises ends the check with status ``error``; a broken protocol with its own status.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numpy.typing import NDArray

from ..read._conventions import Conventions
from ..read._protocol import (
    GlobalDraws,
    ProtocolError,
    Tree,
    UserCodeError,
    call_user,
    changed_at,
    defined_at,
    snapshot,
)
from ._complex import complex_checks, complex_ok
from ._dispatch import run_checks
from ._gradients import Misshapen, gradient_leaves, keyed, plain_result, validated
from ._leaves import (
    _Inputs,
    _Outputs,
    _prepare,
    _resolve_wrt,
    _split_forward,
    _without_configuration,
    input_names,
    not_data,
)
from ._modes import InputChecker, method_label, overall, resolve_mode
from ._mutation import (
    WROTE_DY,
    CacheWrite,
    FilledBuffers,
    ForwardMutation,
    aliasing,
    cache_written,
    check_unchanged,
    final_status,
    on_copies,
    on_fresh_cache,
    repeats,
    second_backward,
    writes_elsewhere,
)
from ._numeric import F64, Runner, generator
from ._options import DEFAULT_RTOL, Options, validate_options
from ._quantized import requantized
from ._recording import record
from ._result import CheckResult, GradientMismatch, InputResult
from ._vjp_loss import gradient_pair, of_the_mean

__all__ = ["DEFAULT_RTOL", "assert_vjp", "check_vjp"]


# -- the protocol calls ----------------------------------------------------------------------
@dataclass
class _Called:
    """What the forward and backward returned at the unperturbed inputs."""

    outputs: _Outputs
    y0: F64
    dy: F64
    grads: list[F64 | None]
    none_grads: list[int]
    notes: list[str]
    backward_calls: int
    out_shapes: list[tuple[int, ...]]
    cache: Any = None
    computed: dict[int, str] = field(default_factory=dict)  # leaf -> its gradient's dtype
    arith: dict[int, str] = field(default_factory=dict)  # leaf -> the output's, if narrower
    unnamed: list[int] = field(default_factory=list)  # leaves a dict of gradients left out
    rounded: dict[int, float] = field(default_factory=dict)  # leaf -> its rounding's scale


def _forward_twice(fwd: Callable[..., Any], prep: _Inputs, saved: Any
                   ) -> tuple[_Outputs, list[np.ndarray], Any]:
    y, cache = _split_forward(prep.call(fwd, "forward"))
    check_unchanged(saved, prep, "forward")
    outputs, arrays = _Outputs.of(y)
    for a, name in zip(arrays, outputs.tree.names, strict=True):
        if not np.all(np.isfinite(a)):
            bad = int(a.size - np.count_nonzero(np.isfinite(a)))
            raise ProtocolError("non-finite",
                                f"forward output y{name} has {bad} non-finite value(s)")
    y_again, _ = _split_forward(prep.call(fwd, "forward"))
    _, again = Tree.of(y_again)
    if len(again) != len(arrays) or not all(
        np.shape(b) == a.shape and np.array_equal(np.asarray(b), a)
        for a, b in zip(arrays, again, strict=True)
    ):
        raise ProtocolError("nondeterministic", "forward gave different outputs for the same "
                            "inputs")
    return outputs, arrays, cache


_SOME_OUTPUTS = ("; it was given the gradients of the forward's {n} outputs as one tuple: "
                 "if it differentiates only some of them (a_next, not yt_pred), check a "
                 "forward that returns those and the cache, with the same argument names: "
                 "def f(x, a_prev, parameters): y = fwd(x, a_prev, parameters); return "
                 "y[0], y[-1]")


def _protocol_calls(fwd: Callable[..., Any], bwd: Callable[..., Any], prep: _Inputs,
                    chosen: set[Any], rng: np.random.Generator) -> _Called:
    """Forward twice, backward twice: every protocol rule, then the gradients."""
    _finite_point(prep)
    if getattr(fwd, "loss_of_point", False):  # a loss written as a function of its point
        writes_elsewhere(fwd, prep)  # (check_grad, a loss pair): one forward more, cheap
    saved = [snapshot(v) for v in prep.leaves]
    outputs, arrays, cache = _forward_twice(fwd, prep, saved)
    dy_leaves = outputs.cotangent(arrays, rng)
    dy_struct = outputs.tree.build(dy_leaves)
    dy_arg = copy.deepcopy(dy_struct)
    cache_snap = snapshot(cache)
    try:
        grads_raw = call_user(bwd, dy_arg, cache, what="backward")
    except UserCodeError as exc:
        if isinstance(dy_struct, tuple) and len(dy_struct) > 1:
            exc.advice = _SOME_OUTPUTS.format(n=len(dy_struct))
        raise
    wrote_dy = changed_at(snapshot(dy_struct), dy_arg) is not None
    written = cache_written(cache_snap, cache)
    if isinstance(written, CacheWrite):  # written into no input it was given: the
        written.own = not any(changed_at(saved[i], v) is not None  # forward's own result
                              for i, v in enumerate(prep.leaves))
    if written is not None:
        raise written
    check_unchanged(saved, prep, "backward")
    first = snapshot(grads_raw)
    notes: list[str] = [WROTE_DY] if wrote_dy else []
    leaves = gradient_leaves(grads_raw, prep, chosen, notes)
    grads: list[F64 | None] = [None] * len(prep.leaves)
    computed: dict[int, str] = {}
    for i in prep.diff:
        if leaves[i] is not None:
            grads[i] = validated(leaves[i], prep.leaves[i], prep.tree.names[i], notes,
                                 unit=not_data(prep, i))
            computed[i] = np.asarray(leaves[i]).dtype.name
    for i in prep.ints:
        if leaves[i] is not None:
            notes.append(f"gradient returned for integer input {prep.tree.names[i]} was ignored")
    again = call_user(bwd, copy.deepcopy(dy_struct), cache, what="backward")
    second_backward(first, again)
    other = outputs.tree.build([None if d is None else d * d.dtype.type(-2) for d in dy_leaves])
    call_user(bwd, other, cache, what="backward")  # the first call's arrays must not move
    aliasing(first, grads_raw)
    y0 = outputs.flat(outputs.tree.build(arrays))
    dy = outputs.flat(outputs.tree.build(
        [d if d is not None else np.zeros(a.shape) for d, a in zip(dy_leaves, arrays,
                                                                     strict=True)]))
    none = [i for i in prep.diff if grads[i] is None]
    unnamed = _unnamed(prep, grads, none) if keyed(grads_raw) else []
    shapes = [tuple(arrays[k].shape) for k in outputs.floating]
    arith = _narrowest_output(outputs, prep, notes)
    for i, name in arith.items():  # the gradient's tolerance: the narrower of the two
        if np.finfo(np.dtype(name)).eps > np.finfo(np.dtype(computed.get(i, name))).eps:
            computed[i] = name
    return _Called(outputs, y0, dy, grads, none, notes, 3, shapes, cache, computed, arith,
                   unnamed)


def _finite_point(prep: _Inputs) -> None:
    """A ``non-finite`` error for an input differentiated that holds NaN or Inf."""
    for i in prep.diff:
        bad = ~np.isfinite(prep.leaves[i])
        if bad.any():
            first = tuple(int(k) for k in np.argwhere(bad)[0]) if bad.ndim else ()
            raise ProtocolError("non-finite", f"input {prep.tree.names[i]} holds "
                                f"{int(bad.sum())} NaN/Inf value(s), first at {first}: finite "
                                "differences need a finite point")


def _unnamed(prep: _Inputs, grads: list[F64 | None], none: list[int]) -> list[int]:
    """The array parts a dict of gradients has no key for, of inputs whose other parts
    have one (parameters['ba'] beside dWax): checked to leave the output unchanged. A
    whole input or a float scalar part (eps) without one is a constant, as None is."""
    if prep.as_kwargs:
        return []
    given = {prep.owner[i] for i in prep.diff if grads[i] is not None}
    return [i for i in none if prep.owner[i] in given and np.ndim(prep.leaves[i]) > 0]


def _narrowest_output(outputs: _Outputs, prep: _Inputs, notes: list[str]) -> dict[int, str]:
    """``leaf -> dtype`` for inputs of a wider dtype than an output: the forward ran in the
    narrower one (float32 buffers in a float64 layer), and finite differences of it can
    be no finer than that dtype: its steps, noise and tolerance are used for them."""
    floats = [d for d in outputs.dtypes if d.kind == "f"]
    if not floats:
        return {}
    narrow = max(floats, key=lambda d: np.finfo(d).eps)
    wider = [i for i in prep.diff if np.finfo(narrow).eps > np.finfo(prep.leaves[i].dtype).eps]
    if wider:
        notes.append(f"the forward's output is {narrow.name} for "
                     f"{', '.join(prep.tree.names[i] for i in wider)} of a wider dtype: "
                     f"compared at {narrow.name}'s steps and tolerance")
    return dict.fromkeys(wider, narrow.name)


def _vjp(bwd: Callable[..., Any], prep: _Inputs, called: _Called, chosen: set[Any]
         ) -> Callable[[F64], list[F64 | None]]:
    """The backward at the same cache for another (flat) cotangent: the gradients of
    the differentiable leaves, validated as the first call's were."""
    outputs = called.outputs

    def vjp(dy_flat: F64) -> list[F64 | None]:
        dy_leaves: list[Any] = [None] * len(outputs.dtypes)
        start = 0
        for k, shape in zip(outputs.floating, called.out_shapes, strict=True):
            size = int(np.prod(shape))
            dt = outputs.dtypes[k] if outputs.dtypes[k].kind == "f" else np.dtype(np.float64)
            dy_leaves[k] = dy_flat[start:start + size].reshape(shape).astype(dt)
            start += size
        raw = call_user(bwd, outputs.tree.build(dy_leaves), called.cache, what="backward")
        called.backward_calls += 1
        leaves = gradient_leaves(raw, prep, chosen)
        grads: list[F64 | None] = [None] * len(prep.leaves)
        for i in prep.diff:
            if leaves[i] is not None:
                grads[i] = validated(leaves[i], prep.leaves[i], prep.tree.names[i], [],
                                     unit=not_data(prep, i))
        return grads

    return vjp


# -- the per-input results -------------------------------------------------------------------
def _none_gradient(runner: Runner, i: int, *, absent: bool = False) -> InputResult:
    """A floating input named in ``wrt`` whose gradient is None: a failure. ``absent``:
    a dict of gradients had no key for it, a failure only if the output depends on it."""
    ic = InputChecker(runner, i, "central")
    depends = not ic.directional(2)
    res = ic.finish("directional")
    if absent:
        res.status = "mismatch" if depends else "constant"
        res.message = ("the backward's dict of gradients has no key for it, and the output "
                       "depends on it" if depends else "the backward's dict of gradients has "
                       "no key for it, and the output does not depend on it: not checked")
        if depends:
            res.hint = "return its gradient under 'd' + its name in the backward's dict"
        return res
    res.status = "mismatch"
    res.message = "backward returned None for this floating input" + (
        ", and the output depends on it" if depends else "")
    res.hint = ("backward returned None for an input named in wrt=: return its gradient, "
                "or, if it is a constant, leave it out of wrt=")
    return res


def _compare_inputs(fwd: Callable[..., Any], prep: _Inputs, called: _Called, opts: Options,
                    rng: np.random.Generator, wrt_given: bool,
                    vjp: Callable[[F64], list[F64 | None]] | None = None
                    ) -> tuple[list[InputResult], Runner, str, str]:
    def evaluate() -> NDArray[Any]:
        y, _ = _split_forward(prep.call(fwd, "forward (at a perturbed input)"))
        return called.outputs.flat(y)

    # The evaluation builds its arguments from prep.leaves: the runner may swap entries.
    arrays = prep.leaves
    runner = Runner(arrays, list(prep.tree.names), evaluate, called.dy, called.grads,
                    called.y0, opts, rng, swap=True)
    runner.out_shapes = called.out_shapes
    runner.computed = called.computed
    runner.arith, runner.rounded = called.arith, called.rounded
    runner.evaluations = 2
    runner.vjp = vjp
    checked = [i for i in prep.diff if called.grads[i] is not None]
    method = opts.method
    if method == "complex":
        method = _complex_or_central(prep, called, runner, checked, fwd)
    mode = resolve_mode(opts, [prep.leaves[i].size for i in checked])
    if method == "complex":
        def call(leaves: list[Any]) -> np.ndarray:
            return _call_flat(fwd, prep, leaves, called.outputs)

        results = complex_checks(call, list(prep.leaves), runner, checked, opts, mode)
    else:
        results = run_checks(runner, checked, opts, mode_for=lambda _i: mode, method=method)
        method = method_label(method, [prep.leaves[i] for i in checked])
    by_leaf = dict(zip(checked, results, strict=True))
    for i in called.none_grads:
        if wrt_given or i in called.unnamed:
            by_leaf[i] = _none_gradient(runner, i, absent=i in called.unnamed)
        else:
            by_leaf[i] = plain_result(
                prep.tree.names[i], prep.leaves[i], "constant",
                "backward returned no gradient for it (None, or no key for it in a dict): "
                "a constant (not checked; name it in wrt= to check its gradient)")
    for i in prep.ints:
        flag = np.asarray(prep.leaves[i]).dtype.kind == "b"
        by_leaf[i] = plain_result(prep.tree.names[i], prep.leaves[i], "skipped",
                                   "a flag (bool): passed through, not differentiated"
                                   if flag else "integer input: not differentiable, not checked")
    for i in prep.consts:
        by_leaf[i] = plain_result(prep.tree.names[i], prep.leaves[i], "constant",
                                   "not in wrt: passed as a constant, not checked")
    return [by_leaf[i] for i in range(len(prep.leaves))], runner, method, mode


def _call_flat(fwd: Callable[..., Any], prep: _Inputs, leaves: list[Any],
               outputs: _Outputs) -> np.ndarray:
    built = prep.tree.build(leaves)
    out = fwd(**built) if prep.as_kwargs else fwd(*built)
    y, _ = _split_forward(out)
    _, ys = Tree.of(y)
    return np.concatenate([np.asarray(ys[k]).reshape(-1) for k in outputs.floating])


def _complex_or_central(prep: _Inputs, called: _Called, runner: Runner, checked: list[int],
                        fwd: Callable[..., Any]) -> str:
    def call_all(leaves: list[Any]) -> np.ndarray:
        return _call_flat(fwd, prep, leaves, called.outputs)

    for i in checked:
        why = complex_ok(call_all, list(prep.leaves), i, runner.dy, runner)
        if why:
            called.notes.append(f"complex step rejected, used central differences: {why}")
            return "central"
    return "complex"


# -- the entry points --------------------------------------------------------------------------
def run_protocol_check(
    fwd: Callable[..., Any], bwd: Callable[..., Any], inputs: Any, wrt: Any, opts: Options,
    *, kind: str = "vjp", origins: dict[str, Any] | None = None,
    names: Sequence[str] | None = None,
) -> CheckResult:
    """The whole check of ``fwd``/``bwd`` at ``inputs`` (no recording).

    ``origins`` maps ``"forward"`` and ``"backward"`` to the user's own callables when
    ``fwd``/``bwd`` wrap them: an exception raised before the user's code was entered
    (a call with the wrong signature) is then placed at their definition. ``names``
    names positional inputs (default ``x0``, ``x1``...; see :func:`input_names`).
    """
    wrt_given = wrt is not None
    draws = GlobalDraws()  # every forward starts from the global generators' state
    fwd = _from_draws(fwd, draws)
    try:
        wrt, config_note = _without_configuration(inputs, wrt, names, (fwd, bwd))
        return _protocol_check(fwd, bwd, inputs, wrt, opts, kind, origins, names,
                               wrt_given, config_note)
    finally:
        draws.restore()  # the user's global state as it was


def _from_draws(fwd: Callable[..., Any], draws: GlobalDraws) -> Callable[..., Any]:
    def forward(*args: Any, **kwargs: Any) -> Any:
        draws.reset()
        try:
            return fwd(*args, **kwargs)
        finally:
            draws.seen()
    forward.loss_of_point = getattr(fwd, "loss_of_point", False)  # type: ignore[attr-defined]
    return forward


def _protocol_check(fwd: Callable[..., Any], bwd: Callable[..., Any], inputs: Any, wrt: Any,
                    opts: Options, kind: str, origins: dict[str, Any] | None,
                    names: Sequence[str] | None, wrt_given: bool, config_note: list[str]
                    ) -> CheckResult:
    prep = _prepare(inputs, wrt, names)
    chosen = _resolve_wrt(inputs, wrt, names or ())
    rng = generator(opts.seed)

    def early(status: str, message: str, calls: int, error: dict[str, str] | None = None,
              exc: BaseException | None = None) -> CheckResult:
        res = CheckResult(passed=False, status=status, message=message, inputs=[],
                          method=opts.method, mode=opts.mode, evaluations=2,
                          backward_calls=calls, seed=opts.seed, name=opts.name, kind=kind)
        res.error = error
        res.exception = exc
        return res

    wrote_input: ForwardMutation | CacheWrite | None = None
    try:
        try:
            called = _protocol_calls(fwd, bwd, prep, chosen, rng)
        except ForwardMutation as exc:  # checked all the same, each call on fresh copies
            exc.state = exc.state and repeats(fwd, prep)  # (state leaking into the loss: no)
            wrote_input, fwd = exc, on_copies(fwd)
            prep, rng = _prepare(inputs, wrt, names), generator(opts.seed)
            called = _protocol_calls(fwd, bwd, prep, chosen, rng)
        except FilledBuffers as exc:  # a cache used once (or written: checked all the same,
            run = on_copies(fwd) if isinstance(exc, CacheWrite) else fwd  # on copies): a new
            bwd = on_fresh_cache(fwd, bwd, lambda: _split_forward(prep.call(run, "forward")))
            prep, rng = _prepare(inputs, wrt, names), generator(opts.seed)  # forward's per call
            called = _protocol_calls(fwd, bwd, prep, chosen, rng)
            called.notes += [exc.note] if exc.note else []
            wrote_input = exc if isinstance(exc, CacheWrite) else wrote_input
        results, runner, method, mode = _compare_inputs(
            fwd, prep, called, opts, rng, wrt_given, _vjp(bwd, prep, called, chosen))
        if requantized(fwd, prep, called.outputs, results, called):  # again, at
            results, runner, method, mode = _compare_inputs(  # float32's steps
                fwd, prep, called, opts, rng, wrt_given, _vjp(bwd, prep, called, chosen))
    except ProtocolError as exc:
        res = early(exc.status, exc.message, 2)
        if isinstance(exc, Misshapen):
            res.inputs = [exc.entry]
        elif exc.at is not None:
            res.inputs = [plain_result(exc.at[0], exc.at[1], exc.status, exc.message)]
        return res
    except UserCodeError as exc:
        if exc.ours and isinstance(exc.exc, TypeError) and origins:
            where = defined_at(origins.get(exc.what.split(" ", 1)[0]))
            if where:
                exc.where = f"{where} (raised on calling it: does its signature match?)"
        return early("error", f"{exc.what} raised {exc.type}: {exc.text}{exc.advice}", 2,
                     exc.as_dict(), exc.exc)
    status, message = overall(results, runner.nonfinite)
    status, message = final_status(status, message, called.notes, wrote_input)
    return CheckResult(passed=status == "ok", status=status, message=message, inputs=results,
                       method=method, mode=mode, evaluations=runner.evaluations,
                       backward_calls=called.backward_calls, seed=opts.seed,
                       notes=[*config_note, *called.notes], name=opts.name, kind=kind)


def check_vjp(
    fwd: Callable[..., Any], bwd: Callable[..., Any], inputs: Sequence[Any] | dict[str, Any],
    *, wrt: Any = None, seed: int = 0, mode: str = "auto", method: str = "auto",
    atol: float | None = None, rtol: float | None = None, directions: int = 6,
    samples: int = 64, budget: int = 20_000, localise: bool = True, name: str = "",
) -> CheckResult:
    """Check a hand-written backward against finite differences of its forward.

    Parameters
    ----------
    fwd : callable
        ``y, cache = fwd(*inputs)`` (``fwd(**inputs)`` for a dict). ``y`` is a real
        array or scalar of any shape, or a tuple, list or dict of them (several
        outputs); integer output leaves are not differentiated.
    bwd : callable
        ``grads = bwd(dy, cache)``; ``dy`` has the structure of ``y``. ``grads`` has one
        gradient per input (a dict by name for dict inputs), each mirroring its input's
        structure and shapes; ``None`` for integer inputs and inputs outside ``wrt``.
    inputs : sequence or dict
        The arguments of ``fwd``: arrays, or lists, tuples and dicts of arrays, nested.
        They are copied; the caller's arrays are never touched. Results name a
        sequence's inputs by ``fwd``'s parameters (``def fwd(x, W, b)``: ``x``, ``W``,
        ``b``), or ``x0``, ``x1``... when they cannot be (``*args``, a builtin).
    wrt : int, str or sequence of them, optional
        The inputs to differentiate (indices, or names for dict inputs); the others are
        constants of any type, passed through as private copies. By default every input
        is, and a ``None`` gradient for a floating input is a failure.
    seed, mode, method, atol, rtol, directions, samples, budget, localise, name
        The option set of every check, documented once in :class:`gradcheck.Options`.

    Returns
    -------
    CheckResult
        ``passed``, ``status`` (:data:`gradcheck.STATUSES`), per-input errors and
        tolerances, the worst elements, evaluations, coverage and the seed. A forward or
        backward that raises gives status ``error`` (type, message, innermost frame).

    Raises
    ------
    TypeError, ValueError
        For invalid arguments (never for a wrong gradient or an exception in the user's
        code: those are statuses).
    """
    opts = validate_options(seed=seed, mode=mode, method=method, atol=atol, rtol=rtol,
                            name=name, directions=directions, samples=samples,
                            budget=budget, localise=localise)
    _callables(fwd=fwd, bwd=bwd)
    if (paired := _pair_read(fwd, bwd, inputs, wrt, opts)) is not None:  # loss(y, p) and
        return paired  # grad(y, p)
    conv = Conventions(fwd, bwd, inputs, wrt)  # cs231n variants, stated in the notes
    res = _run_read(conv, fwd, bwd, inputs, wrt, opts)
    fewer = (conv.first_outputs(res.error) or conv.after_cache(res.error)) if \
        res.status == "error" and (
        res.error or {}).get("in") == "backward" else None
    if fewer is not None:  # it raised given every output's gradient: try the first ones
        again = _run_read(fewer, fwd, bwd, inputs, wrt, opts)
        res = _unsure_order(fewer, again) if again.status != "error" else res
    record(res)
    return res


def _callables(**fns: Any) -> None:
    for label, fn in fns.items():
        if not callable(fn):
            raise TypeError(f"{label} must be callable, got {type(fn).__name__}")


def _pair_read(fwd: Callable[..., Any], bwd: Callable[..., Any], inputs: Any, wrt: Any,
               opts: Options) -> CheckResult | None:
    """The check of a loss and its gradient written as two functions of the same
    arguments (:func:`gradient_pair`), recorded; None when they do not read so."""
    try:
        pair = gradient_pair(fwd, bwd, inputs, wrt)
    except ProtocolError as exc:  # read so, but whose gradient cannot be told: wrt=
        res = CheckResult(passed=False, status=exc.status, message=exc.message, inputs=[],
                          method=opts.method, mode=opts.mode, evaluations=1,
                          backward_calls=1, seed=opts.seed, name=opts.name, kind="vjp")
        record(res)
        return res
    if pair is None:
        return None
    with np.errstate(all="ignore"):
        res = run_protocol_check(pair[0], pair[1], inputs, pair[2], opts, origins={
            "forward": fwd, "backward": bwd}, names=_positional_names(fwd, inputs))
        if pair[4] and res.status == "mismatch":  # a loss per sample: of their mean?
            of_the_mean(res, fwd, bwd, inputs, wrt, lambda p: run_protocol_check(
                p[0], p[1], inputs, p[2], opts, names=_positional_names(fwd, inputs)))
    res.notes = [*res.notes, pair[3]]
    record(res)
    return res


def _unsure_order(conv: Conventions, res: CheckResult) -> CheckResult:
    """A failure with several later outputs' gradients given after the cache: no verdict."""
    if conv.split and conv.outputs > 2 and res.status in ("mismatch", "shape-mismatch"):
        res.passed, res.status = False, "bad-protocol"
        res.message = (f"{res.message}, the later outputs' gradients given after the cache "
                       "in the outputs' order, which cannot be observed: say it, e.g. bwd = "
                       "lambda dy, c: backward(dy[0], c, dc_next=dy[2], dh_next=dy[1])")
    return res


def _run_read(conv: Conventions, fwd: Callable[..., Any], bwd: Callable[..., Any],
              inputs: Any, wrt: Any, opts: Options) -> CheckResult:
    # Floating-point warnings inside the user's functions become a "non-finite"
    # status with the place named, not an exception half-way through a check.
    forward: Callable[..., Any] = conv.forward
    if getattr(fwd, "loss_of_point", False):  # (check_grad's loss, through the readings)
        def forward(*a: Any, **k: Any) -> Any:
            return conv.forward(*a, **k)
        forward.loss_of_point = True  # type: ignore[attr-defined]
    with np.errstate(all="ignore"):
        res = run_protocol_check(forward, conv.backward, inputs, wrt, opts,
                                 origins={"forward": fwd, "backward": bwd},
                                 names=_positional_names(fwd, inputs))
    res.notes = [*res.notes, *conv.notes]
    return res


def _positional_names(fwd: Callable[..., Any], inputs: Any) -> list[str] | None:
    """:func:`input_names` of a sequence of inputs (None for a dict or a bad type: the
    dict's keys name its inputs, and the validation names a bad type)."""
    if isinstance(inputs, dict) or isinstance(inputs, (str, np.ndarray)) \
            or not isinstance(inputs, Sequence):
        return None
    return input_names(fwd, len(inputs))


def raise_unless_passed(res: CheckResult) -> CheckResult:
    """Return ``res`` if it passed; else raise :class:`GradientMismatch` (chained to the
    user's exception for status ``error``)."""
    __tracebackhide__ = True
    if not res.passed:
        raise GradientMismatch(res) from res.exception
    return res


def assert_vjp(
    fwd: Callable[..., Any],
    bwd: Callable[..., Any],
    inputs: Sequence[Any] | dict[str, Any],
    **options: Any,
) -> CheckResult:
    """Like :func:`check_vjp`, but raise :class:`GradientMismatch` unless it passed.

    Returns
    -------
    CheckResult
        The passing result, for callers that want its figures.

    Raises
    ------
    GradientMismatch
        A subclass of ``AssertionError`` whose message is the result's report; chained
        to the user's exception when the forward or backward raised.
    """
    __tracebackhide__ = True
    return raise_unless_passed(check_vjp(fwd, bwd, inputs, **options))
