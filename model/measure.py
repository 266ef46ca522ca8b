"""The reference model's budgets: criteria 5 to 9, the checker's cost, the speed against
PyTorch, and throughput on the plan's and a small configuration.

Every figure is a ratio measured side by side in one run with the generic tools of
:mod:`gradcheck.budgets`; thresholds come from its ``budgets.toml``.
"""

from __future__ import annotations

import functools
import gc
import math
import statistics
import time
import tracemalloc
from collections.abc import Callable
from typing import Any

import numpy as np

from gradcheck.budgets import (
    BUDGET_THREADS,
    BudgetResult,
    blas_summary,
    gate,
    limit_blas_threads,
    load_budgets,
    peak_memory,
    ratio_interleaved,
)

from .config import PLAN, SMALL

__all__ = ["measure_all"]


def _output_only(fn: Callable[[], Any]) -> Any:
    """Run a layer forward and keep only its output (the inference side)."""
    return fn()[0]


def _setup(cfg_kw: dict[str, Any], dtype: str, batch: int = 8, seed: int = 0) -> Any:
    from . import Config, Transformer

    cfg = Config(**cfg_kw, dtype=dtype, seed=seed)
    m = Transformer(cfg)
    rng = np.random.default_rng(seed)
    tok = rng.integers(0, cfg.vocab_size, (batch, cfg.max_len))
    tgt = rng.integers(0, cfg.vocab_size, (batch, cfg.max_len))
    return m, tok, tgt


def measure_time_budgets(
    cfg_kw: dict[str, Any], label: str, dtype: str, *, pairs: int, table: dict[str, Any]
) -> list[BudgetResult]:
    """Criteria 5 and 6 on one configuration and dtype."""
    m, tok, _ = _setup(cfg_kw, dtype)
    out, cache = m.forward_train(tok)
    dout = np.random.default_rng(1).standard_normal(out.shape).astype(out.dtype)
    res = []
    med, se, _ = ratio_interleaved(lambda: m.forward_train(tok), lambda: m.forward(tok),
                                   pairs=pairs)
    t = table["forward_overhead"]
    res.append(BudgetResult("forward_overhead", t["criterion"], t["title"], label, dtype, med,
                            t["threshold"], se, gate(med, se, t["threshold"]), pairs))
    med, se, _ = ratio_interleaved(lambda: m.backward(dout, cache), lambda: m.forward(tok),
                                   pairs=pairs)
    t = table["backward_cost"]
    res.append(BudgetResult("backward_cost", t["criterion"], t["title"], label, dtype, med,
                            t["threshold"], se, gate(med, se, t["threshold"]), pairs))
    return res


def measure_memory_budgets(
    cfg_kw: dict[str, Any], label: str, dtype: str, *, table: dict[str, Any]
) -> list[BudgetResult]:
    """Criterion 7: per layer, and the whole model (cached and recompute)."""
    from . import Config, Transformer
    from .attention import attention_forward
    from .block import block_forward
    from .feedforward import feedforward_forward

    m, tok, _ = _setup(cfg_kw, dtype)
    cfg = m.cfg
    x = np.random.default_rng(2).standard_normal((tok.shape[0], tok.shape[1], cfg.d_model))
    x = x.astype(m.dtype)
    p = m._block_params(m.params, 0)
    layers: dict[str, Callable[[], Any]] = {
        "memory_ffn": lambda: feedforward_forward(
            x, p["ffn.W1"], p["ffn.b1"], p["ffn.W2"], p["ffn.b2"], activation=cfg.activation),
        "memory_attention": lambda: attention_forward(
            x, p["attn.Wq"], p["attn.bq"], p["attn.Wk"], p["attn.bk"], p["attn.Wv"],
            p["attn.bv"], p["attn.Wo"], p["attn.bo"], n_heads=cfg.n_heads, causal=cfg.causal),
        "memory_block": lambda: block_forward(
            x, p, n_heads=cfg.n_heads, causal=cfg.causal, activation=cfg.activation,
            norm=cfg.norm),
    }
    out: list[BudgetResult] = []
    started = not tracemalloc.is_tracing()
    if started:
        tracemalloc.start()
    try:
        for name, fn in layers.items():
            # training: output and cache are kept; inference: only the output is kept
            train_peak, kept = peak_memory(fn)
            del kept
            infer_peak, kept = peak_memory(functools.partial(_output_only, fn))
            del kept
            t = table[name]
            ratio = train_peak / max(infer_peak, 1)
            out.append(BudgetResult(name, t["criterion"], t["title"], label, dtype, ratio,
                                    t["threshold"], 0.0, ratio <= t["threshold"], kind="memory",
                                    details={"train_bytes": train_peak,
                                             "inference_bytes": infer_peak}))
        for recompute in (False, True):
            mm = Transformer(Config(**cfg_kw, dtype=dtype, recompute=recompute))
            train_peak, kept = peak_memory(functools.partial(mm.forward_train, tok))
            del kept
            infer_peak, kept = peak_memory(functools.partial(mm.forward, tok))
            del kept
            ratio = train_peak / max(infer_peak, 1)
            if recompute:
                t = table["memory_model_recompute"]
                out.append(BudgetResult("memory_model_recompute", t["criterion"], t["title"],
                                        label, dtype, ratio, t["threshold"], 0.0,
                                        ratio <= t["threshold"], kind="memory",
                                        details={"train_bytes": train_peak,
                                                 "inference_bytes": infer_peak}))
            else:
                out.append(BudgetResult("memory_model_cached", 7,
                                        "peak traced memory, whole model cached (reported only)",
                                        label, dtype, ratio, math.inf, 0.0, True, kind="figure",
                                        details={"train_bytes": train_peak,
                                                 "inference_bytes": infer_peak}))
    finally:
        if started:
            tracemalloc.stop()
    return out


def measure_scaling(
    cfg_kw: dict[str, Any], label: str, dtype: str, *, pairs: int, table: dict[str, Any]
) -> list[BudgetResult]:
    """Criterion 8: time per token of a training step at batch 32 over batch 4."""
    m32, tok32, tgt32 = _setup(cfg_kw, dtype, batch=32)
    tok4, tgt4 = tok32[:4].copy(), tgt32[:4].copy()
    med, se, _ = ratio_interleaved(
        lambda: m32.loss_and_grads(tok32, tgt32),
        lambda: m32.loss_and_grads(tok4, tgt4),
        pairs=pairs,
    )
    per_token = med * 4 / 32
    se_tok = se * 4 / 32
    t = table["linear_scaling"]
    return [BudgetResult("linear_scaling", t["criterion"], t["title"], label, dtype, per_token,
                         t["threshold"], se_tok, gate(per_token, se_tok, t["threshold"]),
                         pairs)]


def measure_throughput(
    cfg_kw: dict[str, Any], label: str, dtype: str, *, steps: int
) -> BudgetResult:
    """Tokens per second of a training step (figure only, no gate)."""
    m, tok, tgt = _setup(cfg_kw, dtype)
    times = _step_times(m, tok, tgt, steps, warmup=1)
    tps = tok.size / statistics.median(times)
    return BudgetResult("throughput", 0, "training-step throughput, tokens/s (this CPU only)",
                        label, dtype, tps, math.inf, 0.0, True, kind="figure",
                        details={"median_step_s": statistics.median(times)})


def _step_times(m: Any, tok: Any, tgt: Any, n: int, warmup: int = 0) -> list[float]:
    """Seconds of ``n`` training steps (``loss_and_grads``), after ``warmup`` untimed."""
    for _ in range(warmup):
        m.loss_and_grads(tok, tgt)
    times = []
    for _ in range(n):
        t0 = time.perf_counter()
        m.loss_and_grads(tok, tgt)
        times.append(time.perf_counter() - t0)
    return times


def measure_checker_cost(
    cfg_kw: dict[str, Any], label: str, dtype: str, *, table: dict[str, Any]
) -> BudgetResult:
    """``check_model`` with its default options (joint directions) over one training step."""
    from gradcheck import check_model

    m, tok, tgt = _setup(cfg_kw, dtype)
    steps = _step_times(m, tok, tgt, 3, warmup=2)
    t0 = time.perf_counter()
    res = check_model(m, tok, tgt, seed=0)
    t_check = time.perf_counter() - t0
    steps += _step_times(m, tok, tgt, 3)
    med_step = statistics.median(steps)
    ratio = t_check / med_step
    mad = statistics.median(abs(s - med_step) for s in steps)
    se = ratio * (1.2533 * 1.4826 * mad / math.sqrt(len(steps))) / med_step
    t = table["checker_cost"]
    thr = float(t.get(f"threshold_{dtype}", t["threshold"]))
    return BudgetResult("checker_cost", t["criterion"], t["title"], label, dtype, ratio,
                        thr, se, gate(ratio, se, thr) and res.passed,
                        kind="ratio",
                        details={"check_passed": res.passed, "evaluations": res.evaluations,
                                 "check_seconds": t_check, "step_seconds": med_step})


def measure_leaks(
    cfg_kw: dict[str, Any], label: str, dtype: str, *, steps: int, table: dict[str, Any]
) -> BudgetResult:
    """Criterion 9: traced memory after ``steps`` training steps vs after ``steps // 10``."""
    from .optim import Adam

    m, tok, tgt = _setup(cfg_kw, dtype, batch=4)
    opt = Adam(1e-3)
    started = not tracemalloc.is_tracing()
    if started:
        tracemalloc.start()
    try:
        early = 0
        for i in range(1, steps + 1):
            _, grads = m.loss_and_grads(tok, tgt)
            opt.step(m.params, grads)
            del grads
            if i == steps // 10:
                gc.collect()
                early = tracemalloc.get_traced_memory()[0]
        gc.collect()
        late = tracemalloc.get_traced_memory()[0]
    finally:
        if started:
            tracemalloc.stop()
    ratio = late / max(early, 1)
    t = table["no_leaks"]
    return BudgetResult("no_leaks", t["criterion"], t["title"], label, dtype, ratio,
                        t["threshold"], 0.0, ratio <= t["threshold"], kind="memory",
                        details={"bytes_after_early": early, "bytes_after_all": late,
                                 "steps": steps})


def measure_twin_cost(cfg_kw: dict[str, Any], label: str) -> BudgetResult:
    """float32 ``check_model`` against its float64 twin, in float32 training steps."""
    from gradcheck import check_model

    m, tok, tgt = _setup(cfg_kw, "float32")
    steps = _step_times(m, tok, tgt, 5, warmup=2)
    t0 = time.perf_counter()
    res = check_model(m, tok, tgt, twin=m.astype("float64"), seed=0)
    t_check = time.perf_counter() - t0
    step = statistics.median(steps)
    return BudgetResult("checker_twin", 0, "check_model of the float32 model against its "
                        "float64 twin / one float32 training step", label, "float32",
                        t_check / step, math.inf, 0.0, res.passed, kind="figure",
                        details={"check_passed": res.passed, "evaluations": res.evaluations,
                                 "check_seconds": t_check, "step_seconds": step})


def measure_checker_modes(table: dict[str, Any], *, with_torch: bool, full: bool
                          ) -> list[BudgetResult]:
    """The checker's figures per mode, and its speed against PyTorch's gradcheck.

    Figures (evaluations, seconds on this CPU) for every mode; where torch is installed
    the directional ratio (LayerNorm 512x512, PyTorch's fast mode) and, with ``full``,
    the full one (LayerNorm 64x64, PyTorch's slow mode: ten seconds on its side).
    """
    from .checker_speed import directional_vs_torch, full_vs_torch, mode_figures
    from .speed import torch_available

    out = []
    for f in mode_figures():
        out.append(BudgetResult("checker_mode", 0, f"{f.mode} check of {f.label}: seconds "
                                "(this CPU only)", f"{f.label} {f.mode}", "float64", f.seconds,
                                math.inf, 0.0, f.passed, kind="figure", details=f.to_dict()))
    if not (with_torch and torch_available()):
        return out
    for key, fn in (("checker_directional_vs_torch", lambda: directional_vs_torch(15)),
                    ("checker_full_vs_torch", full_vs_torch)):
        if key == "checker_full_vs_torch" and not full:
            continue
        ratio, se, details = fn()
        t = table[key]
        out.append(BudgetResult(key, t["criterion"], t["title"], t["config"], "float64", ratio,
                                t["threshold"], se,
                                gate(ratio, se, t["threshold"]) and details["passed"],
                                details.get("pairs", 0), details=details))
    return out


def measure_speed_vs_torch(dtype: str, *, pairs: int, table: dict[str, Any],
                           threads: int) -> BudgetResult | None:
    """Training step of the plan's model over its PyTorch twin's; None without torch."""
    from .speed import compare_with_torch, torch_available

    if not torch_available():
        return None
    s = compare_with_torch(dtype, threads=threads, pairs=pairs)
    t = table["speed_vs_torch"]
    return BudgetResult("speed_vs_torch", t["criterion"], t["title"], "plan", dtype, s.ratio,
                        t["threshold"], s.se, gate(s.ratio, s.se, t["threshold"]), pairs,
                        details=s.to_dict())


def measure_all(*, level: str = "full", progress: Callable[[str], None] | None = None,
                threads: int = BUDGET_THREADS, quick: bool | None = None,
                checker_cost: bool = False) -> list[BudgetResult]:
    """Every budget, with the BLAS limited to ``threads`` threads.

    ``full``: the plan's and the small configuration, float64 and float32, and the speed
    against PyTorch (where installed); ``checker_cost`` adds the cost of a directional
    check of the plan's model (a minute; the budget suite measures it); ``default``: the time and
    memory ratios of the plan's configuration in both dtypes, everything else in float32
    only, no checker cost; ``quick``: float32 only, fewer pairs, no PyTorch.
    """
    from . import tune_allocator


    if quick is not None:  # the keyword of earlier versions
        level = "quick" if quick else "full"
    if level not in ("quick", "default", "full"):
        raise ValueError(f"level must be quick, default or full, got {level!r}")
    tune_allocator()
    say = progress or (lambda _s: None)
    with limit_blas_threads(threads):
        out = _measure_level(load_budgets(), level, say, checker_cost)
        blas = blas_summary()
    for r in out:
        r.details["blas_threads"] = threads
        r.details["blas"] = blas
    return out


def _measure_level(table: dict[str, Any], level: str, say: Callable[[str], None],
                   checker_cost: bool) -> list[BudgetResult]:
    full = level == "full"
    pairs = {"quick": 5, "default": 7, "full": 15}[level]
    out: list[BudgetResult] = []
    dtypes = ("float32",) if level == "quick" else ("float64", "float32")
    for dtype in dtypes:
        configs = [("plan", PLAN)] + ([("small", SMALL)] if full or dtype == "float32" else [])
        for label, kw in configs:
            say(f"budgets: time ratios, {label} config, {dtype}")
            out += measure_time_budgets(kw, label, dtype, pairs=pairs, table=table)
            say(f"budgets: memory, {label} config, {dtype}")
            out += measure_memory_budgets(kw, label, dtype, table=table)
        if full or dtype == "float32":
            say(f"budgets: linear scaling, {dtype}")
            out += measure_scaling(PLAN, "plan", dtype, pairs=max(5, pairs // 2), table=table)
        say(f"budgets: throughput, {dtype}")
        out.append(measure_throughput(PLAN, "plan", dtype, steps=5 if not full else 10))
        if checker_cost or dtype == "float64":
            say(f"budgets: checker cost, {dtype}")
            out.append(measure_checker_cost(PLAN, "plan", dtype, table=table))
        if checker_cost and dtype == "float32":
            out.append(measure_twin_cost(PLAN, "plan"))
        if dtype == "float64":
            say("budgets: the checker's modes" + ("" if level == "quick" else
                                                  ", against PyTorch's gradcheck"))
            out += measure_checker_modes(table, with_torch=level != "quick",
                                         full=checker_cost)
        if full or (level == "default" and dtype == "float32"):
            say(f"budgets: speed against PyTorch eager, {dtype}")
            r = measure_speed_vs_torch(dtype, pairs=max(9, pairs), table=table,
                                       threads=BUDGET_THREADS)
            if r is not None:
                out.append(r)
        if full or dtype == "float32":
            say(f"budgets: leaks, {dtype}")
            out.append(measure_leaks(SMALL, "small", dtype, steps=1000 if full else 100,
                                     table=table))
    return out
