"""Model-level gradient check: every parameter tensor of a model, and a flow audit."""

from __future__ import annotations

from typing import Any

import numpy as np

from ._core import (
    F64,
    _generator,
    _method_label,
    _overall,
    _record_for_plugin,
    _Runner,
    _validate_options,
    run_checks,
)
from ._result import CheckResult, InputResult

__all__ = ["check_model"]


def check_model(
    model: Any,
    *batch: Any,
    seed: int = 0,
    mode: str = "auto",
    method: str = "auto",
    atol: float | None = None,
    rtol: float | None = None,
    directions: int = 4,
    samples: int = 64,
    full_threshold: int = 256,
    localise: bool = True,
    params: list[str] | None = None,
    name: str = "",
) -> CheckResult:
    """Check every parameter gradient of a model against finite differences of its loss.

    Parameters
    ----------
    model : object
        Anything with ``params`` (dict of name -> float ndarray, read by ``loss``),
        ``loss(*batch) -> float`` and ``loss_and_grads(*batch) -> (float, dict)``,
        such as :class:`model.Transformer`.
    *batch
        The arguments of ``loss`` (for the reference model: ``tokens, targets``).
    seed : int
    mode : {"auto", "full", "sampled", "directional"}
        ``auto`` checks tensors of at most ``full_threshold`` elements element by
        element and larger ones along ``directions`` random directions.
    method, atol, rtol, directions, samples, localise
        As for :func:`gradcheck.check_vjp`.
    params : list of str, optional
        Check only these parameters (default: all).
    name : str
        A label for reports.

    Returns
    -------
    CheckResult
        One :class:`InputResult` per parameter tensor; a parameter whose gradient is
        zero or missing while its numerical gradient is not fails with the hint
        "no gradient flows to this parameter".

    Notes
    -----
    Parameters are perturbed in place (the loss reads them from ``model.params``) and
    restored bit for bit in ``finally`` blocks, also when the loss raises.
    """
    opts = _validate_options(
        seed=seed, mode=mode, method=method, atol=atol, rtol=rtol, directions=directions,
        samples=samples, budget=1, localise=localise,
    )
    if opts.method == "complex":
        raise ValueError("check_model supports method 'central' or 'richardson', not 'complex'")
    for attr in ("params", "loss", "loss_and_grads"):
        if not hasattr(model, attr):
            raise TypeError(
                f"model must have 'params', 'loss' and 'loss_and_grads'; "
                f"{type(model).__name__} has no '{attr}'"
            )
    if isinstance(full_threshold, bool) or not isinstance(full_threshold, int) or (
        full_threshold < 0
    ):
        raise ValueError(f"full_threshold must be an integer >= 0, got {full_threshold!r}")
    table = model.params
    if not isinstance(table, dict) or not table:
        raise TypeError("model.params must be a non-empty dict of name -> ndarray")
    names = list(table) if params is None else list(params)
    for n in names:
        if n not in table:
            raise KeyError(f"params: {n!r} is not a parameter of the model")
        arr = table[n]
        if not isinstance(arr, np.ndarray) or arr.dtype.kind != "f":
            raise TypeError(f"model.params[{n!r}] must be a float ndarray")
        if not (arr.flags.c_contiguous and arr.flags.writeable):
            raise ValueError(
                f"model.params[{n!r}] must be C-contiguous and writable to be perturbed in place"
            )
    saved = {n: table[n].copy() for n in names}
    loss0, grads_raw = model.loss_and_grads(*batch)
    for n in names:
        if not np.array_equal(saved[n], table[n], equal_nan=True):
            raise RuntimeError(f"loss_and_grads modified parameter {n!r}")
    notes: list[str] = []
    loss0 = np.asarray(loss0, dtype=np.float64)
    loss_again = np.asarray(model.loss(*batch), dtype=np.float64)

    def early(status: str, message: str) -> CheckResult:
        res = CheckResult(
            passed=False, status=status, message=message, inputs=[], method=opts.method,
            mode=opts.mode, evaluations=1, backward_calls=1, seed=opts.seed, notes=notes,
            name=name, kind="model",
        )
        _record_for_plugin(res)
        return res

    if loss0.shape != () and loss0.size != 1:
        return early("bad-protocol", f"loss must be a scalar, got shape {loss0.shape}")
    if not np.isfinite(loss0):
        return early("non-finite", f"loss is {float(loss0)}")
    if not np.allclose(loss_again, loss0, rtol=1e-6, atol=0):
        return early(
            "nondeterministic",
            f"loss() gave {float(loss_again)!r} but loss_and_grads() gave {float(loss0)!r}",
        )
    grads: list[F64 | None] = []
    missing: list[str] = []
    for n in names:
        g = grads_raw.get(n) if isinstance(grads_raw, dict) else None
        if g is None:
            missing.append(n)
            grads.append(np.zeros(table[n].shape))
            continue
        g = np.asarray(g)
        if g.shape != table[n].shape:
            return early(
                "shape-mismatch", f"gradient of {n} has shape {g.shape}, expected {table[n].shape}"
            )
        if not np.all(np.isfinite(g)):
            return early("non-finite", f"gradient of {n} contains NaN/Inf")
        grads.append(g.astype(np.float64))
    if missing:
        notes.append("no gradient returned for: " + ", ".join(missing))

    def evaluate() -> np.ndarray:
        return np.asarray(model.loss(*batch))

    rng = _generator(opts.seed)
    arrays = [table[n] for n in names]
    runner = _Runner(arrays, names, evaluate, np.ones(()), grads, loss0, opts, rng)
    runner.evaluations = 2

    def mode_for(i: int) -> str:
        if opts.mode != "auto":
            return opts.mode
        return "full" if arrays[i].size <= full_threshold else "directional"

    try:
        results: list[InputResult] = run_checks(
            runner, list(range(len(names))), opts, mode_for=mode_for, method=opts.method
        )
    finally:
        for n in names:
            np.copyto(table[n], saved[n])
    no_flow = []
    for r_in, g, n in zip(results, grads, names, strict=True):
        if not r_in.passed and (n in missing or not np.any(g)):
            r_in.hint = (
                "no gradient flows to this parameter (zero or missing), numerically it is not"
            )
            no_flow.append(n)
    if no_flow:
        notes.append("gradient flow audit failed for: " + ", ".join(no_flow))
    status, message = _overall(results, runner.nonfinite)
    modes = {r.mode for r in results}
    res = CheckResult(
        passed=status == "ok",
        status=status,
        message=message,
        inputs=results,
        method=_method_label(opts.method, arrays),
        mode=modes.pop() if len(modes) == 1 else "mixed",
        evaluations=runner.evaluations,
        backward_calls=1,
        seed=opts.seed,
        notes=notes,
        name=name,
        kind="model",
    )
    _record_for_plugin(res)
    return res
