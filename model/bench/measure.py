"""The reference model's budgets: criteria 5 to 9, the checker's cost, the speed against
PyTorch, and throughput on the plan's and a small configuration.

Every figure is a ratio measured side by side in one run with the generic tools of
:mod:`gradcheck.report.budgets` (the CPU time of the measuring thread, wall time beside it);
thresholds come from :data:`BUDGET_TABLE` (``model/bench/budgets.toml``).
"""

from __future__ import annotations

import functools
import gc
import math
import statistics
import time
import tracemalloc
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from gradcheck.report.budgets import (
    BUDGET_THREADS,
    BudgetResult,
    Timing,
    blas_summary,
    judge,
    limit_blas_threads,
    load_budgets,
    peak_memory,
    time_pairs,
)

from ..config import PLAN, SMALL

__all__ = ["BUDGET_TABLE", "load_table", "measure_all", "measure_one"]

#: The reference model's budget table (``Subject.budget_table`` of the reference subject).
BUDGET_TABLE = str(Path(__file__).resolve().with_name("budgets.toml"))


def load_table() -> dict[str, dict[str, Any]]:
    """The reference model's budgets: name -> {criterion, title, threshold}."""
    return load_budgets(BUDGET_TABLE)


def _output_only(fn: Callable[[], Any]) -> Any:
    """Run a layer forward and keep only its output (the inference side)."""
    return fn()[0]


def _setup(cfg_kw: dict[str, Any], dtype: str, batch: int = 8, seed: int = 0) -> Any:
    from .. import Config, Transformer

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
    fwd = time_pairs(lambda: m.forward_train(tok), lambda: m.forward(tok), pairs=pairs)
    bwd = time_pairs(lambda: m.backward(dout, cache), lambda: m.forward(tok), pairs=pairs)
    return [judge("forward_overhead", table, label, dtype, fwd),
            judge("backward_cost", table, label, dtype, bwd)]


def measure_memory_budgets(
    cfg_kw: dict[str, Any], label: str, dtype: str, *, table: dict[str, Any]
) -> list[BudgetResult]:
    """Criterion 7: per layer, and the whole model (cached and recompute)."""
    from ..attention import attention_forward
    from ..block import block_forward
    from ..feedforward import feedforward_forward

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
        out += [_model_memory(cfg_kw, dtype, label, tok, recompute, table)
                for recompute in (False, True)]
    finally:
        if started:
            tracemalloc.stop()
    return out


def _model_memory(cfg_kw: dict[str, Any], dtype: str, label: str, tok: np.ndarray,
                  recompute: bool, table: dict[str, Any]) -> BudgetResult:
    """The whole model's training/inference peak: gated with ``recompute``, else a figure."""
    from .. import Config, Transformer

    mm = Transformer(Config(**cfg_kw, dtype=dtype, recompute=recompute))
    train_peak, kept = peak_memory(functools.partial(mm.forward_train, tok))
    del kept
    infer_peak, kept = peak_memory(functools.partial(mm.forward, tok))
    del kept
    ratio = train_peak / max(infer_peak, 1)
    details = {"train_bytes": train_peak, "inference_bytes": infer_peak}
    if recompute:
        t = table["memory_model_recompute"]
        return BudgetResult("memory_model_recompute", t["criterion"], t["title"], label, dtype,
                            ratio, t["threshold"], 0.0, ratio <= t["threshold"],
                            kind="memory", details=details)
    return BudgetResult("memory_model_cached", 7,
                        "peak traced memory, whole model cached (reported only)", label,
                        dtype, ratio, math.inf, 0.0, True, kind="figure", details=details,
                        clock="tracemalloc's peak (memory: no clock)")


def measure_scaling(
    cfg_kw: dict[str, Any], label: str, dtype: str, *, pairs: int, table: dict[str, Any]
) -> list[BudgetResult]:
    """Criterion 8: time per token of a training step at batch 32 over batch 4."""
    m32, tok32, tgt32 = _setup(cfg_kw, dtype, batch=32)
    tok4, tgt4 = tok32[:4].copy(), tgt32[:4].copy()
    timing = time_pairs(lambda: m32.loss_and_grads(tok32, tgt32),
                        lambda: m32.loss_and_grads(tok4, tgt4), pairs=pairs)
    return [judge("linear_scaling", table, label, dtype, timing, scale=4 / 32)]


def measure_throughput(
    cfg_kw: dict[str, Any], label: str, dtype: str, *, steps: int
) -> BudgetResult:
    """Tokens per second of a training step (figure only, no gate)."""
    m, tok, tgt = _setup(cfg_kw, dtype)
    cpu, wall = _step_times(m, tok, tgt, steps, warmup=1)
    tps = tok.size / statistics.median(wall)
    return BudgetResult("throughput", 0, "training-step throughput, tokens/s (this CPU only)",
                        label, dtype, tps, math.inf, 0.0, True, kind="figure",
                        clock="wall time (time.perf_counter), one BLAS thread",
                        details={"median_step_s": statistics.median(wall),
                                 "median_step_cpu_s": statistics.median(cpu)})


def _step_times(m: Any, tok: Any, tgt: Any, n: int, warmup: int = 0
                ) -> tuple[list[float], list[float]]:
    """Thread CPU and wall seconds of ``n`` training steps, after ``warmup`` untimed."""
    for _ in range(warmup):
        m.loss_and_grads(tok, tgt)
    cpu, wall = [], []
    for _ in range(n):
        c, w = _clocked(lambda: m.loss_and_grads(tok, tgt))[1:]
        cpu.append(c)
        wall.append(w)
    return cpu, wall


def _clocked(fn: Callable[[], Any]) -> tuple[Any, float, float]:
    """``fn()``, its thread CPU seconds and its wall seconds."""
    c0, w0 = time.thread_time(), time.perf_counter()
    out = fn()
    return out, time.thread_time() - c0, time.perf_counter() - w0


def _against_steps(check: tuple[float, float], steps: tuple[list[float], list[float]]
                   ) -> Timing:
    """One timed check against each of several timed steps: a ratio per step."""
    n = len(steps[0])
    return Timing.of([check[0]] * n, steps[0], [check[1]] * n, steps[1])


def measure_checker_cost(
    cfg_kw: dict[str, Any], label: str, dtype: str, *, table: dict[str, Any]
) -> BudgetResult:
    """``check_model`` with its default options (joint directions) over one training step."""
    from gradcheck import check_model

    m, tok, tgt = _setup(cfg_kw, dtype)
    cpu, wall = _step_times(m, tok, tgt, 3, warmup=2)
    res, c_check, w_check = _clocked(lambda: check_model(m, tok, tgt, seed=0))
    more = _step_times(m, tok, tgt, 3)
    timing = _against_steps((c_check, w_check), (cpu + more[0], wall + more[1]))
    t = table["checker_cost"]
    thr = float(t.get(f"threshold_{dtype}", t["threshold"]))
    return judge("checker_cost", table, label, dtype, timing, threshold=thr, ok=res.passed,
                 details={"check_passed": res.passed, "evaluations": res.evaluations,
                          "check_seconds": c_check,
                          "step_seconds": statistics.median(cpu + more[0])})


def measure_leaks(
    cfg_kw: dict[str, Any], label: str, dtype: str, *, steps: int, table: dict[str, Any]
) -> BudgetResult:
    """Criterion 9: traced memory after ``steps`` training steps vs after ``steps // 10``."""
    from ..optim import Adam

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
    cpu, _wall = _step_times(m, tok, tgt, 5, warmup=2)
    res, t_check, _w = _clocked(lambda: check_model(m, tok, tgt, twin=m.astype("float64"),
                                                    seed=0))
    step = statistics.median(cpu)
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
                                math.inf, 0.0, f.passed, kind="figure", details=f.to_dict(),
                                clock="thread CPU time (time.thread_time), one BLAS thread"))
    if not (with_torch and torch_available()):
        return out
    for key, fn in (("checker_directional_vs_torch", lambda: directional_vs_torch(15)),
                    ("checker_full_vs_torch", full_vs_torch)):
        if key == "checker_full_vs_torch" and not full:
            continue
        timing, details = fn()
        out.append(judge(key, table, table[key]["config"], "float64", timing,
                         ok=details["passed"], details=details))
    return out


def measure_speed_vs_torch(dtype: str, *, pairs: int, table: dict[str, Any],
                           threads: int) -> BudgetResult | None:
    """Training step of the plan's model over its PyTorch twin's; None without torch."""
    from .speed import compare_with_torch, torch_available

    if not torch_available():
        return None
    s = compare_with_torch(dtype, threads=threads, pairs=pairs)
    if s.timing is None:  # pragma: no cover - compare_with_torch always times both sides
        raise RuntimeError("speed comparison returned no timing")
    return judge("speed_vs_torch", table, "plan", dtype, s.timing, details=s.to_dict())


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
    from .perf import tune_allocator


    if quick is not None:  # the keyword of earlier versions
        level = "quick" if quick else "full"
    if level not in ("quick", "default", "full"):
        raise ValueError(f"level must be quick, default or full, got {level!r}")
    tune_allocator()
    say = progress or (lambda _s: None)
    with limit_blas_threads(threads):
        out = _measure_level(load_table(), level, say, checker_cost)
        blas = blas_summary()
    for r in out:
        r.details["blas_threads"] = threads
        r.details["blas"] = blas
    return out


def measure_one(name: str, config: str, dtype: str, *, level: str = "full"
                ) -> list[BudgetResult]:
    """Measure the timed budget ``name`` again on one configuration and dtype.

    The budget suite measures again a budget that was "not measured" because the
    machine was busy (a bounded number of times).
    """
    table, pairs = load_table(), {"quick": 5, "default": 7, "full": 15}[level]
    kw = {"plan": PLAN, "small": SMALL}.get(config)
    with limit_blas_threads(BUDGET_THREADS):
        if name in ("forward_overhead", "backward_cost") and kw is not None:
            rows = measure_time_budgets(kw, config, dtype, pairs=pairs, table=table)
        elif name == "linear_scaling":
            rows = measure_scaling(PLAN, "plan", dtype, pairs=max(5, pairs // 2), table=table)
        elif name == "checker_cost":
            rows = [measure_checker_cost(PLAN, "plan", dtype, table=table)]
        elif name in ("checker_directional_vs_torch", "checker_full_vs_torch"):
            rows = measure_checker_modes(table, with_torch=True, full=True)
        elif name == "speed_vs_torch":
            r = measure_speed_vs_torch(dtype, pairs=max(9, pairs), table=table,
                                       threads=BUDGET_THREADS)
            rows = [r] if r is not None else []
        else:
            raise ValueError(f"{name!r} on {config!r} is not a timed budget of the model")
    return [r for r in rows if (r.name, r.config, r.dtype) == (name, config, dtype)]


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
