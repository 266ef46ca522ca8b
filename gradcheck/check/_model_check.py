"""Model-level gradient check: every parameter tensor of a model, and a flow audit."""

from __future__ import annotations

import difflib
from collections.abc import Callable
from typing import Any

import numpy as np

from ..read._observe import same_but_unit, unit_note
from ..read._protocol import GlobalDraws, ProtocolError, UserCodeError, call_user
from ._dispatch import run_checks
from ._model_objects import ObjectsModel
from ._model_read import HeldDraws, ReadModel, read_model
from ._modes import method_label, overall
from ._numeric import F64, Runner, generator
from ._options import Options, validate_options
from ._recording import record
from ._result import CheckResult, InputResult
from ._twin import compare_tensor, nudge_by_one_ulp

__all__ = ["check_model", "failure_message"]


def check_model(
    model: Any, *batch: Any, seed: int = 0, mode: str = "auto", method: str = "auto",
    atol: float | None = None, rtol: float | None = None, directions: int = 6,
    samples: int = 64, full_threshold: int = 0, localise: bool = True,
    params: list[str] | None = None, name: str = "", twin: Any = None,
) -> CheckResult:
    """Check every parameter gradient of a model against finite differences of its loss.

    Parameters
    ----------
    model : object
        Anything with ``params`` (dict of name -> float ndarray, read by ``loss``),
        ``loss(*batch) -> float`` and ``loss_and_grads(*batch) -> (float, dict)``.
    *batch
        The arguments of ``loss`` (``tokens, targets`` for a language model).
    seed, mode, method, atol, rtol, directions, samples, full_threshold, localise, name
        The option set of every check (:class:`gradcheck.Options`). By default every
        tensor moves along at most 6 joint directions (each tensor's part scaled to
        it): 10-12 loss evaluations for a 54-tensor transformer in float64; a failing
        direction is bisected down to the failing tensors, then their elements.
    params : list of str, optional
        Check only these parameters (default: all).
    twin : object, optional
        For a float32 (or narrower) model: the same model in float64 with the same
        parameter values. The twin is checked by finite differences, and each float32
        gradient tensor against the twin's, within 8 times float32's rounding in it
        (measured one rounding unit away): about 1e-5 relative per tensor, where
        finite differences of a float32 loss resolve about 1e-1.

    Returns
    -------
    CheckResult
        One :class:`InputResult` per parameter tensor (mode ``"twin"`` with a twin; the
        twin's own failures say ``"(float64 twin)"``); a parameter whose gradient is
        zero or missing while its numerical gradient is not fails with the hint "no
        gradient flows to this parameter".

    Notes
    -----
    Parameters are perturbed in place (the loss reads them from ``model.params``) and
    restored bit for bit in ``finally`` blocks, also when the loss raises.
    """
    opts = validate_options("check_model", seed=seed, mode=mode, method=method, atol=atol,
                            rtol=rtol, directions=directions, samples=samples, localise=localise,
                            full_threshold=full_threshold, name=name)
    if opts.method == "complex":
        raise ValueError("check_model supports method 'central' or 'richardson', not 'complex'")
    draws = GlobalDraws()  # (reading the model calls it on copies: its draws put back)
    model = read_model(model, batch)
    twin = None if twin is None else read_model(twin, batch)
    draws.reset()
    names = _parameter_names(model, params, "model")
    if twin is not None:
        _parameter_names(twin, names, "twin")
        _check_twin_values(model, twin, names)
    res = _held_run(model, twin, batch, names, opts, draws)
    if isinstance(model, (ReadModel, ObjectsModel)):
        res.notes.append(model.note())
    record(res)
    return res


def _run_checks(model: Any, twin: Any, batch: tuple[Any, ...], names: list[str],
                opts: Options) -> CheckResult:
    """The check itself; a protocol error or the user's exception becomes the status."""
    with np.errstate(all="ignore"):
        try:
            res = (_check_model(model, batch, names, opts) if twin is None
                   else _check_with_twin(model, twin, batch, names, opts))
            _point_at_layer(res.inputs, names)
            return res
        except ProtocolError as exc:
            return _early(opts, exc.status, exc.message)
        except UserCodeError as exc:
            res = _early(opts, "error", f"{exc.what} raised {exc.type}: {exc.text}")
            res.error, res.exception = exc.as_dict(), exc.exc
            return res


_TWIN = " (float64 twin)"
#: The phrase of the hint that points at the failing layer nearest the output.
NEAREST = "the failing layer nearest the output"


def layer_of(name: str) -> str:
    """The layer a parameter belongs to: its name up to the last dot
    (``blocks.0.attn.Wq`` -> ``blocks.0.attn``); a name without a dot is its own."""
    return name.rsplit(".", 1)[0] if "." in name else name


def _point_at_layer(inputs: list[InputResult], names: list[str]) -> None:
    """Where to look, added to the hint of every failing parameter: a wrong gradient of
    one layer reaches every parameter below it, so the layer to look at first is the
    failing one nearest the output, read from the model's last parameter back
    (parameters are listed in forward order). Its parameters say so; those below it
    say which layer's gradient reaches them. Beside errors larger than a relative 1e-4,
    tiny ones (an epsilon guard's) point nowhere."""
    failing = [r for r in inputs if r.status == "mismatch" and not r.passed]
    large = [r for r in failing if r.max_rel_error > 1e-4]  # not an epsilon guard's size
    failing = large if large and len(large) < len(failing) else failing
    bad_layers = {layer_of(r.name.removesuffix(_TWIN)) for r in failing}
    order = list(dict.fromkeys(layer_of(n) for n in names))
    top = next((lay for lay in reversed(order) if lay in bad_layers), None)
    if top is None:
        return
    mine = [r.name.removesuffix(_TWIN) for r in failing
            if layer_of(r.name.removesuffix(_TWIN)) == top]  # its failing parameters
    for r in failing:
        if layer_of(r.name.removesuffix(_TWIN)) == top:
            where = (f"{top} is {NEAREST}: check its backward "
                     f"first ({', '.join(mine)})")
        else:
            where = (f"sits below {top}, {NEAREST}, whose "
                     "gradient reaches it: check that layer first")
        r.hint = f"{r.hint}; {where}" if r.hint else where


def _held_run(model: Any, twin: Any, batch: tuple[Any, ...], names: list[str],
              opts: Options, draws: GlobalDraws) -> CheckResult:
    """The check, each loss call starting from the global generators' state at its start
    (``draws``, :class:`HeldDraws`), the parameters and that state restored after."""
    held = [HeldDraws(m, draws) for m in ([model] if twin is None else [model, twin])]
    try:
        return _restoring(held, names, lambda: _run_checks(
            held[0], None if twin is None else held[1], batch, names, opts))
    finally:
        held[0].restore()  # the user's global generators as they were


def _restoring(models: list[Any], names: list[str],
               run: Callable[[], CheckResult]) -> CheckResult:
    """``run()``, then every model's parameters restored bit for bit, whatever happened."""
    saved = [{n: m.params[n].copy() for n in names} for m in models]
    try:
        return run()
    finally:
        for m, kept in zip(models, saved, strict=True):
            for n in names:
                np.copyto(m.params[n], kept[n])
            if isinstance(getattr(m, "held", m), ObjectsModel):  # and the gradients it holds
                getattr(m, "held", m).restore()


def _parameter_names(model: Any, params: list[str] | None, label: str) -> list[str]:
    """Validate ``model``'s protocol and the chosen parameters; return their names."""
    missing = [a for a in ("params", "loss", "loss_and_grads") if not hasattr(model, a)]
    if missing:
        raise TypeError(
            f"{label} must have 'params', 'loss' and 'loss_and_grads' (a method named for "
            "gradients beside 'loss', or 'loss_and_grads' alone, is read so); "
            f"{type(model).__name__} has no {' and no '.join(map(repr, missing))}" + (
                " (a model whose backward(y) computes the loss itself: give it loss(x, y) "
                "returning that loss, or check its layers with check_layer)"
                if "loss" in missing else ""))
    table = model.params
    if not isinstance(table, dict) or not table:
        raise TypeError(f"{label}.params must be a non-empty dict of name -> ndarray")
    names = list(table) if params is None else list(params)
    for n in names:
        if n not in table:
            raise KeyError(f"params: {n!r} is not a parameter of the {label}")
        arr = table[n]
        if not isinstance(arr, np.ndarray) or arr.dtype.kind != "f":
            raise TypeError(f"{label}.params[{n!r}] must be a float ndarray")
        if not (arr.flags.c_contiguous and arr.flags.writeable):
            raise ValueError(f"{label}.params[{n!r}] must be C-contiguous and writable to be "
                             "perturbed in place")
    return names


def _check_twin_values(model: Any, twin: Any, names: list[str]) -> None:
    """The twin must hold the model's parameters, in float64."""
    for n in names:
        a, b = model.params[n], twin.params[n]
        if b.dtype != np.float64:
            raise TypeError(f"twin.params[{n!r}] is {b.dtype}; the twin must be float64")
        if a.dtype == np.float64:
            raise TypeError(f"model.params[{n!r}] is already float64: a twin is for float32 "
                            "(or narrower) models")
        if a.shape != b.shape:
            raise ValueError(f"twin.params[{n!r}] has shape {b.shape}, the model's {a.shape}")
        if not np.array_equal(a.astype(np.float64), b):
            raise ValueError(f"twin.params[{n!r}] differs from the model's: the twin must hold "
                             "the same values in float64")


def _early(opts: Options, status: str, message: str, notes: list[str] | None = None
           ) -> CheckResult:
    return CheckResult(passed=False, status=status, message=message, inputs=[],
                       method=opts.method, mode=opts.mode, evaluations=1, backward_calls=1,
                       seed=opts.seed, notes=notes or [], name=opts.name, kind="model")


def _split_loss_and_grads(out: Any) -> tuple[Any, dict[Any, Any]]:
    """``(loss, grads)`` from what ``loss_and_grads`` returned, or a ``bad-protocol``."""
    if not isinstance(out, (tuple, list)) or len(out) != 2:
        got = (f"a {type(out).__name__} of {len(out)}" if isinstance(out, (tuple, list))
               else type(out).__name__)
        raise ProtocolError("bad-protocol", "loss_and_grads must return (loss, grads) with "
                            f"grads a dict of parameter name -> gradient; it returned {got}")
    if not isinstance(out[1], dict):
        raise ProtocolError("bad-protocol", "loss_and_grads must return (loss, grads) with "
                            "grads a dict of parameter name -> gradient; grads is a "
                            f"{type(out[1]).__name__}")
    return out[0], out[1]


def _unknown_keys(grads: dict[Any, Any], table: dict[str, Any]) -> list[str]:
    """Keys of ``grads`` that name no parameter: ``bad-protocol`` for what is clearly a
    typo of a parameter that has no gradient (``db`` or ``b_grad`` for ``b``, a close
    spelling), else a note."""
    extra = [k for k in grads if k not in table]
    if not extra:
        return []
    absent = [n for n in table if n not in grads]
    for k in extra:
        key = str(k)
        stems = [key.removeprefix(p) for p in ("grad_", "d_", "d")]
        stems += [key.removesuffix(p) for p in ("_grad", "_g")]
        close = ([n for n in absent if n in stems]
                 or difflib.get_close_matches(key, absent, n=1, cutoff=0.8))
        if close:
            raise ProtocolError("bad-protocol", f"loss_and_grads returned a gradient for {k!r}, "
                                f"which is not a parameter, and none for {close[0]!r}: a "
                                "misspelt name? (the parameters are model.params' keys)")
    return ["loss_and_grads returned gradients for names that are not parameters (ignored): "
            + ", ".join(map(repr, extra))]


def _gradients(model: Any, batch: tuple[Any, ...], names: list[str]
               ) -> tuple[float, list[F64], list[str], list[str]]:
    table = model.params
    saved = {n: table[n].copy() for n in names}
    loss0, grads_raw = _split_loss_and_grads(
        call_user(model.loss_and_grads, *batch, what="loss_and_grads"))
    notes = _unknown_keys(grads_raw, table)
    for n in names:
        if not np.array_equal(saved[n], table[n], equal_nan=True):
            raise ProtocolError("mutation", f"loss_and_grads modified parameter {n!r}")
    loss0 = np.asarray(loss0, dtype=np.float64)
    loss_again = np.asarray(call_user(model.loss, *batch, what="loss"), dtype=np.float64)
    if loss0.shape != () and loss0.size != 1:
        raise ProtocolError("bad-protocol", f"loss must be a scalar, got shape {loss0.shape}")
    loss0, loss_again = loss0.reshape(()), loss_again.reshape(-1)[:1].reshape(())  # (1,): one
    if not np.isfinite(loss0):
        raise ProtocolError("non-finite", f"loss is {float(loss0)}")
    if not np.allclose(loss_again, loss0, rtol=1e-6, atol=0):
        raise ProtocolError("nondeterministic", (
            f"loss() gave {float(loss_again)!r} but loss_and_grads() gave {float(loss0)!r}"
            if hasattr(getattr(model, "model", model), "loss") else "loss_and_grads() gave "
            f"{float(loss0)!r}, then {float(loss_again)!r} called again: does it change the "
            "parameters (a step)?"))
    grads: list[F64] = []
    missing: list[str] = []
    for n in names:
        g = grads_raw.get(n)
        if g is None:
            missing.append(n)
            grads.append(np.zeros(table[n].shape))
            continue
        g = np.asarray(g)
        if g.shape != table[n].shape and same_but_unit(g.shape, table[n].shape):
            notes.append(unit_note(n, g.shape, table[n].shape))  # (1, 6) for gamma (6,)
            g = g.reshape(table[n].shape)
        if g.shape != table[n].shape:
            raise ProtocolError("shape-mismatch",
                                f"gradient of {n} has shape {g.shape}, expected {table[n].shape}")
        if not np.all(np.isfinite(g)):
            raise ProtocolError("non-finite", f"gradient of {n} contains NaN/Inf")
        grads.append(g.astype(np.float64))
    return float(loss0), grads, missing, notes


def _check_with_twin(model: Any, twin: Any, batch: tuple[Any, ...], names: list[str],
                     opts: Options) -> CheckResult:
    """Check the float64 twin by finite differences, then the model against the twin."""
    twin_res = _check_model(twin, batch, names, opts)
    _loss, g_low, missing, extra_notes = _gradients(model, batch, names)
    _loss64, g_twin, _missing64, _n64 = _gradients(twin, batch, names)
    arrays = [model.params[n] for n in names]
    kept = [a.copy() for a in arrays]
    try:
        nudge_by_one_ulp(arrays, generator(opts.seed))
        _l, g_nudged, _m, _n = _gradients(model, batch, names)
    finally:
        for a, k in zip(arrays, kept, strict=True):
            np.copyto(a, k)
    inputs = [compare_tensor(n, a, g1, g2, g3) for n, a, g1, g2, g3 in
              zip(names, arrays, g_low, g_twin, g_nudged, strict=True)]
    for r_in in twin_res.inputs:
        if not r_in.passed:
            r_in.name += " (float64 twin)"
            inputs.append(r_in)
    notes = [f"float64 twin: {twin_res.message}", *twin_res.notes, *extra_notes]
    if missing:
        notes.append("no gradient returned for: " + ", ".join(missing))
    bad = [r for r in inputs if not r.passed]
    wrong = [r for r in bad if r.status != "inconclusive"]
    status = "mismatch" if wrong else "inconclusive" if bad else "ok"
    message = (f"{len(names)} tensor(s) within float32 rounding of the float64 twin, whose "
               "gradients pass finite differences" if not bad else
               ("gradient mismatch in " if wrong else "nothing could be compared for ")
               + ", ".join(f"{r.name} ({r.status})" for r in bad))
    return CheckResult(passed=status == "ok", status=status, message=message, inputs=inputs,
                       method=twin_res.method, mode="twin",
                       evaluations=twin_res.evaluations + 4, backward_calls=4,
                       seed=opts.seed, notes=notes, name=opts.name, kind="model")


def _check_model(model: Any, batch: tuple[Any, ...], names: list[str], opts: Options
                 ) -> CheckResult:
    loss0, grads, missing, notes = _gradients(model, batch, names)
    if missing:
        notes.append("no gradient returned for: " + ", ".join(missing))

    def evaluate() -> np.ndarray:  # (a loss of shape (1,) too: one number)
        got = np.asarray(call_user(model.loss, *batch, what="loss (at a perturbed parameter)"))
        return got.reshape(()) if got.size == 1 else got

    arrays = [model.params[n] for n in names]
    runner = Runner(arrays, names, evaluate, np.ones(()), list(grads), np.asarray(loss0), opts,
                    generator(opts.seed))
    runner.evaluations = 2

    def mode_for(i: int) -> str:
        if opts.mode != "auto":
            return opts.mode
        return "full" if arrays[i].size <= opts.full_threshold else "directional"

    results: list[InputResult] = run_checks(runner, list(range(len(names))), opts,
                                            mode_for=mode_for, method=opts.method)
    no_flow = []
    for r_in, g, n in zip(results, grads, names, strict=True):
        if r_in.status == "mismatch" and (n in missing or not np.any(g)):
            r_in.hint = (
                "no gradient flows to this parameter (zero or missing), numerically it is not"
            )
            no_flow.append(n)
    if no_flow:
        notes.append("gradient flow audit failed for: " + ", ".join(no_flow))
    for r_in in results:
        if not r_in.passed and not r_in.message:
            r_in.message = failure_message(r_in)
    status, message = overall(results, runner.nonfinite)
    modes = {r.mode for r in results}
    return CheckResult(
        passed=status == "ok", status=status, message=message, inputs=results,
        method=method_label(opts.method, arrays),
        mode=modes.pop() if len(modes) == 1 else "mixed",
        evaluations=runner.evaluations, backward_calls=1, seed=opts.seed, notes=notes,
        name=opts.name, kind="model",
    )


def failure_message(r_in: InputResult) -> str:
    """One line on why a parameter failed: its hint, its worst element or direction
    (analytic, numerical, error and tolerance), or its status explained."""
    from ._result import STATUSES

    parts = [r_in.hint] if r_in.hint else []
    bad = [w for w in r_in.worst if w.failed]
    if bad:
        w = bad[0]
        where = f"element {w.index}" if w.index else "a random direction"
        parts.append(f"{r_in.status} at {where}: analytic {w.analytic:.6g}, numerical "
                     f"{w.numeric:.6g}, |a - n| = {w.error:.3g} > tolerance {w.tolerance:.3g}"
                     f" ({sum(1 for x in r_in.worst if x.failed)} of the {len(r_in.worst)} "
                     "worst listed fail)")
    elif not r_in.hint:
        parts.append(f"{r_in.status}: {STATUSES.get(r_in.status, r_in.status)}")
    return "; ".join(parts)
