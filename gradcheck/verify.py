"""The verification of the reference model behind ``gradcheck report``.

Runs the gradient checks of every layer and of the whole model in every configuration,
the bug catalog, the plan's training criteria and the performance budgets, reads the
test run's coverage, test and security results where they exist, and writes the HTML
report with a JSON file beside it.
"""

from __future__ import annotations

import itertools
import json
import math
import shutil
import subprocess  # noqa: S404 - runs ruff with fixed arguments
import sys
import time
import xml.etree.ElementTree as ET  # noqa: S405 - parses our own pytest junit file
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np

from ._core import check_vjp
from ._model_check import check_model
from ._result import CheckResult

__all__ = ["run_verification"]


class Progress:
    """Progress on stderr: one line a step, with the elapsed time."""

    def __init__(self, enabled: bool, total: int) -> None:
        self.enabled = enabled
        self.total = total
        self.step = 0
        self.t0 = time.perf_counter()

    def __call__(self, text: str, *, advance: bool = False) -> None:
        if advance:
            self.step += 1
        if self.enabled:
            el = time.perf_counter() - self.t0
            print(f"[{self.step}/{self.total} {el:6.1f}s] {text}", file=sys.stderr, flush=True)


# -- layer checks --------------------------------------------------------------------
def _layer_cases(dtype: str, rng: np.random.Generator) -> list[tuple[str, Any, Any, list[Any]]]:
    from model.activations import ACTIVATIONS
    from model.attention import (
        attention_backward,
        attention_forward,
        softmax_backward,
        softmax_forward,
    )
    from model.block import BLOCK_PARAMS, block_backward, block_forward
    from model.embedding import embedding_backward, embedding_forward
    from model.feedforward import feedforward_backward, feedforward_forward
    from model.layernorm import layernorm_backward, layernorm_forward
    from model.linear import linear_backward, linear_forward
    from model.losses import (
        cross_entropy_backward,
        cross_entropy_forward,
        mse_backward,
        mse_forward,
    )

    dt = np.dtype(dtype)

    def n(*shape: int, s: float = 1.0) -> np.ndarray:
        return (s * rng.standard_normal(shape)).astype(dt)

    b, t, c, h, f, v = 2, 4, 8, 2, 12, 7
    cases: list[tuple[str, Any, Any, list[Any]]] = [
        ("linear", linear_forward, linear_backward, [n(b, t, c), n(c, f, s=0.4), n(f)]),
        ("layernorm", layernorm_forward, layernorm_backward,
         [n(b, t, c), (1 + 0.1 * rng.standard_normal(c)).astype(dt), n(c, s=0.1)]),
    ]
    for name, (fw, bw) in ACTIVATIONS.items():
        cases.append((name, fw, lambda dy, cc, bw=bw: (bw(dy, cc),), [n(b, t, c)]))

    def sm_fwd(s: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        p = softmax_forward(s)
        return p, p

    cases.append(("softmax", sm_fwd, lambda dp, p: (softmax_backward(dp, p),), [n(b, t, v)]))
    att_w: list[np.ndarray] = []
    for _ in range(4):
        att_w += [n(c, c, s=0.4), n(c, s=0.1)]
    for causal in (True, False):
        def a_fwd(x: np.ndarray, *w: np.ndarray, causal: bool = causal) -> Any:
            return attention_forward(x, *w, n_heads=h, causal=causal)

        def a_bwd(dy: np.ndarray, cache: Any) -> tuple[np.ndarray, ...]:
            dx, g = attention_backward(dy, cache)
            return (dx, g["Wq"], g["bq"], g["Wk"], g["bk"], g["Wv"], g["bv"], g["Wo"], g["bo"])

        cases.append((f"attention(causal={causal})", a_fwd, a_bwd, [n(b, t, c), *att_w]))
    ff_w = [n(c, f, s=0.4), n(f, s=0.1), n(f, c, s=0.4), n(c, s=0.1)]
    for act in ACTIVATIONS:
        def f_fwd(x: np.ndarray, *w: np.ndarray, act: str = act) -> Any:
            return feedforward_forward(x, *w, activation=act)

        def f_bwd(dy: np.ndarray, cache: Any) -> tuple[np.ndarray, ...]:
            dx, g = feedforward_backward(dy, cache)
            return dx, g["W1"], g["b1"], g["W2"], g["b2"]

        cases.append((f"feedforward({act})", f_fwd, f_bwd, [n(b, t, c), *ff_w]))
    shapes = {"ln1.g": (c,), "ln1.b": (c,), "ln2.g": (c,), "ln2.b": (c,), "ffn.W1": (c, f),
              "ffn.b1": (f,), "ffn.W2": (f, c), "ffn.b2": (c,)}
    block_p = [
        (1 + 0.1 * rng.standard_normal(shapes[k])).astype(dt) if k.endswith(".g")
        else n(*shapes.get(k, (c, c) if ".W" in k else (c,)), s=0.4)
        for k in BLOCK_PARAMS
    ]
    for norm in ("pre", "post"):
        def bl_fwd(x: np.ndarray, *ps: np.ndarray, norm: str = norm) -> Any:
            return block_forward(x, dict(zip(BLOCK_PARAMS, ps, strict=True)), n_heads=h,
                                 causal=True, activation="gelu", norm=norm)

        def bl_bwd(dy: np.ndarray, cache: Any) -> tuple[np.ndarray, ...]:
            dx, g = block_backward(dy, cache)
            return (dx, *[g[k] for k in BLOCK_PARAMS])

        cases.append((f"block({norm}-norm)", bl_fwd, bl_bwd, [n(b, t, c), *block_p]))
    tokens = rng.integers(0, v, (b, t))
    tokens[0, :2] = 3
    cases.append(("embedding", lambda E, P: embedding_forward(tokens, E, P),
                  embedding_backward, [n(v, c), n(t + 2, c)]))
    targets = rng.integers(0, v, (b, t))

    def ce_fwd(z: np.ndarray) -> Any:
        loss, cache = cross_entropy_forward(z, targets)
        return np.asarray(loss), cache

    cases.append(("cross_entropy", ce_fwd,
                  lambda dl, cc: (cross_entropy_backward(float(dl), cc),), [n(b, t, v)]))

    def mse_fwd(p: np.ndarray, q: np.ndarray) -> Any:
        loss, cache = mse_forward(p, q)
        return np.asarray(loss), cache

    cases.append(("mse", mse_fwd, lambda dl, cc: mse_backward(float(dl), cc),
                  [n(b, t, v), n(b, t, v)]))
    return cases


def layer_checks(seed: int, say: Callable[[str], None]) -> list[CheckResult]:
    """check_vjp of every layer in float64 and float32 (full mode)."""
    out = []
    for dtype in ("float64", "float32"):
        rng = np.random.default_rng(seed)
        for name, fwd, bwd, inputs in _layer_cases(dtype, rng):
            say(f"layer {name} {dtype}")
            out.append(check_vjp(fwd, bwd, inputs, seed=seed, name=f"{name} [{dtype}]"))
    return out


# -- model checks ----------------------------------------------------------------------
TINY: dict[str, Any] = dict(vocab_size=7, d_model=8, n_heads=2, d_ff=12, n_layers=2, max_len=6)


def model_configs(quick: bool) -> list[dict[str, Any]]:
    """activation x norm x loss x causal x dtype (a spread of 12 in quick mode)."""
    grid = [
        dict(activation=a, norm=n, loss=lo, causal=c, dtype=d)
        for a, n, lo, c, d in itertools.product(
            ("gelu", "gelu_tanh", "relu", "tanh"), ("pre", "post"),
            ("cross_entropy", "mse", "embedding_mse"), (True, False), ("float64", "float32"))
    ]
    if not quick:
        return grid
    return grid[::8]


def _batch(cfg: Any, rng: np.random.Generator, batch: int, length: int) -> tuple[Any, Any]:
    tokens = rng.integers(0, cfg.vocab_size, (batch, length))
    targets: np.ndarray
    if cfg.loss == "mse":
        targets = rng.standard_normal((batch, length, cfg.vocab_size))
    else:
        targets = rng.integers(0, cfg.vocab_size, (batch, length))
    return tokens, targets


def model_checks(quick: bool, seed: int, say: Callable[[str], None]) -> list[CheckResult]:
    """check_model in every configuration (tiny, full mode) and on the plan's config."""
    from model import Config, Transformer

    out = []
    configs = model_configs(quick)
    for k, kw in enumerate(configs):
        cfg = Config(**TINY, **kw, seed=seed)
        label = ",".join(f"{v}" for v in kw.values())
        say(f"model {k + 1}/{len(configs)}: {label}")
        tokens, targets = _batch(cfg, np.random.default_rng(seed + k), 2, 5)
        out.append(check_model(Transformer(cfg), tokens, targets, seed=seed,
                               full_threshold=10**6, name=f"model tiny ({label})"))
    plan: dict[str, Any] = dict(vocab_size=64, d_model=128, n_heads=8, d_ff=512, n_layers=3,
                                max_len=64)
    plans: list[dict[str, Any]] = [dict(activation="gelu", norm="pre", dtype="float32")]
    if not quick:
        plans += [dict(activation="gelu", norm="pre", dtype="float64"),
                  dict(activation="relu", norm="post", dtype="float64")]
    for kw in plans:
        cfg = Config(**plan, **kw, seed=seed)
        label = ",".join(f"{v}" for v in kw.values())
        say(f"model plan config, directional: {label}")
        tokens, targets = _batch(cfg, np.random.default_rng(seed), 8, 64)
        out.append(check_model(Transformer(cfg), tokens, targets, seed=seed, mode="directional",
                               name=f"model plan ({label})"))
    return out


# -- catalog ---------------------------------------------------------------------------
def catalog_rows(quick: bool, say: Callable[[str], None]) -> list[dict[str, Any]]:
    """Each classic bug against its correct twin over several seeds."""
    from .catalog import CASES, CASES_FLOAT64_ONLY

    seeds = range(5 if quick else 20)
    rows = []
    for dtype in ("float64", "float32"):
        cases = CASES + (CASES_FLOAT64_ONLY if dtype == "float64" else [])
        say(f"bug catalog, {dtype}")
        for case in cases:
            caught = alarms = 0
            hint = ""
            for s in seeds:
                fwd, good, bad, inputs = case.make(np.random.default_rng(s), np.dtype(dtype))
                if not check_vjp(fwd, good, inputs, seed=s).passed:
                    alarms += 1
                r = check_vjp(fwd, bad, inputs, seed=s)
                if not r.passed:
                    caught += 1
                    hint = hint or r.hint
            rows.append({
                "bug": case.description, "dtype": dtype,
                "caught": f"{caught}/{len(seeds)}", "false alarms": alarms,
                "verdict": "caught" if caught == len(seeds) and alarms == 0 else "missed",
                "hint given": hint,
            })
    return rows


# -- training --------------------------------------------------------------------------
def training_runs(quick: bool, seed: int, say: Callable[[str], None]) -> dict[str, Any]:
    """The plan's training criteria 1-3."""
    from model import Transformer
    from model.train import load_corpus, small_config, train

    corpus = load_corpus()
    # (optimizer, lr, epochs of 4 steps of 8 x 32 tokens). Plain SGD at 1e-3 is slow
    # on this corpus: it needs about 900 epochs to halve the loss, so it gets 1000
    # (measured: 53% after 1000; SGD at 1e-2 reaches 48% after 100 and gets 200).
    grid = [("adam", 1e-3, 100), ("adam", 3e-3, 100), ("adam", 1e-2, 100),
            ("sgd", 1e-3, 1000), ("sgd", 3e-3, 500), ("sgd", 1e-2, 200)]
    if quick:
        grid = [("adam", 1e-2, 100), ("sgd", 1e-2, 200)]
    runs = []
    curves: dict[str, list[float]] = {}
    for opt, lr, epochs in grid:
        say(f"training {opt} lr={lr:g}, {epochs} epochs")
        m = Transformer(small_config(corpus, seed=seed))
        r = train(m, corpus, epochs=epochs, optimizer=opt, lr=lr, seed=seed, steps_per_epoch=4)
        finite = all(bool(np.all(np.isfinite(p))) for p in m.params.values())
        runs.append({"optimizer": opt, "lr": lr, "epochs": len(r.losses),
                     "first loss": r.losses[0], "last loss": r.losses[-1],
                     "reduction": r.reduction, "finite": finite,
                     "refused steps": r.refused_steps,
                     "met": "met" if r.reduction > 0.5 and finite else "not met"})
        curves[f"{opt} {lr:g}"] = r.losses[:300]
    say("training under stress: SGD lr=10, clip range [-50, 50]")
    m = Transformer(small_config(corpus, seed=seed))
    stress = train(m, corpus, epochs=20 if quick else 120, optimizer="sgd", lr=10.0,
                   clip_value=50.0, seed=seed, steps_per_epoch=2)
    stress_finite = all(bool(np.all(np.isfinite(p))) for p in m.params.values())
    # gradients flow through all layers: every parameter of every configuration
    say("gradient flow: every parameter receives a non-zero gradient")
    from model import Config

    zero: list[str] = []
    for kw in model_configs(quick=False):
        cfg = Config(**TINY, **kw, seed=seed)
        mm = Transformer(cfg)
        tokens, targets = _batch(cfg, np.random.default_rng(seed), 2, 6)
        _, grads = mm.loss_and_grads(tokens, targets)
        zero += [f"{kw}: {k}" for k, g in grads.items() if not np.any(g)]
    return {
        "runs": runs, "curves": curves,
        "stress": {"epochs": len(stress.losses), "refused steps": stress.refused_steps,
                   "parameters finite": stress_finite},
        "zero_gradients": zero,
    }


# -- results of the test run -------------------------------------------------------------
def read_coverage(path: Path) -> dict[str, Any] | None:
    """pytest-cov's JSON (``--cov-report=json:PATH``) -> line coverage per package."""
    if not path.exists():
        return None
    data = json.loads(path.read_text())
    per: dict[str, list[int]] = {}
    for fname, info in data.get("files", {}).items():
        pkg = Path(fname).parts[0]
        s = info["summary"]
        acc = per.setdefault(pkg, [0, 0])
        acc[0] += s["covered_lines"]
        acc[1] += s["num_statements"]
    total = data.get("totals", {}).get("percent_covered")
    return {"total": total,
            "packages": {k: 100.0 * a / b if b else 100.0 for k, (a, b) in per.items()}}


def read_junit(path: Path) -> dict[str, int] | None:
    """pytest's junit XML -> counts."""
    if not path.exists():
        return None
    root = ET.parse(path).getroot()  # noqa: S314 - our own file
    suites = [root] if root.tag == "testsuite" else list(root)
    out = {"tests": 0, "failures": 0, "errors": 0, "skipped": 0}
    for s in suites:
        for k in out:
            out[k] += int(s.get(k, 0))
    return out


def security_findings(root: Path) -> dict[str, Any]:
    """ruff's bandit rules (S) over model/ and gradcheck/."""
    ruff = shutil.which("ruff")
    if ruff is None:
        return {"measured": False, "why": "ruff is not installed"}
    proc = subprocess.run(  # noqa: S603
        [ruff, "check", "--select", "S", "--output-format", "json", "--no-cache",
         str(root / "model"), str(root / "gradcheck")],
        capture_output=True, text=True, check=False, timeout=120,
    )
    try:
        findings = json.loads(proc.stdout or "[]")
    except json.JSONDecodeError:
        return {"measured": False, "why": f"ruff output unreadable: {proc.stderr[:200]}"}
    return {"measured": True, "findings": len(findings),
            "rules": sorted({f.get("code", "?") for f in findings})}


# -- the whole run -----------------------------------------------------------------------
def _criterion(cid: int, name: str, met: bool | None, figure: str, how: str) -> dict[str, Any]:
    status = "not measured" if met is None else ("met" if met else "not met")
    return {"id": cid, "name": name, "status": status, "figure": figure, "how": how}


def run_verification(*, out: str, quick: bool, seed: int, progress: bool) -> bool:
    """Run everything and write ``out`` (HTML) and ``out`` with .json; True if all passed."""
    from . import budgets as bud
    from .report import bar_chart_svg, environment, line_chart_svg, write_html, write_json

    t0 = time.perf_counter()
    say = Progress(progress, 6)
    root = Path(__file__).resolve().parent.parent
    out_path = Path(out)
    reports = out_path.parent

    say("gradient checks of every layer", advance=True)
    layers = layer_checks(seed, say)
    say("gradient checks of the whole model in every configuration", advance=True)
    models = model_checks(quick, seed, say)
    say("bug catalog", advance=True)
    catalog = catalog_rows(quick, say)
    say("training criteria", advance=True)
    training = training_runs(quick, seed, say)
    say("performance budgets", advance=True)
    budget_results = bud.measure_all(quick=quick, progress=say)
    say("results of the test run (coverage, tests, security)", advance=True)
    coverage = read_coverage(reports / "coverage.json")
    junit = read_junit(reports / "junit.xml")
    junit_b = read_junit(reports / "junit-budgets.xml")
    if junit is not None and junit_b is not None:
        junit = {k: junit[k] + junit_b[k] for k in junit}
    security = security_findings(root)
    extra: dict[str, Any] = {}
    prop_rows = [row for f in sorted(reports.glob("properties-*.json"))
                 for row in json.loads(f.read_text()).get("rows", [])]
    if prop_rows:
        extra["properties.json"] = {"rows": sorted(prop_rows, key=lambda r: r["test"])}
    reference = root / "snapshots" / "reference"
    snapshot_ok = True
    if (reference / "manifest.json").exists():
        from .snapshot import SnapshotError, compare

        say("gradient snapshots: compare with snapshots/reference")
        try:
            cmp = compare(reference)
            snapshot_ok = cmp.passed
            rows = [r for r in cmp.to_dict()["rows"] if r["status"] != "ok"]
            extra["snapshots.json"] = {
                "text": f"{len(cmp.rows)} arrays of {len({r.case for r in cmp.rows})} "
                        "reference cases compared with snapshots/reference: "
                        + ("all agree within tolerance." if cmp.passed
                           else f"{len(rows)} drifted."),
                "rows": rows}
        except SnapshotError as exc:
            snapshot_ok = False
            extra["snapshots.json"] = {"text": f"snapshot unreadable: {exc}", "rows": []}

    checks = [r.to_dict() for r in layers + models]
    checks_ok = all(r.passed for r in layers + models)
    cat_ok = all(r["verdict"] == "caught" for r in catalog)
    runs = training["runs"]
    crit: list[dict[str, Any]] = []
    fall = [r for r in runs if r["met"] == "met"]
    crit.append(_criterion(
        1, "loss decreases by more than 50%", len(fall) == len(runs),
        "; ".join(f"{r['optimizer']} {r['lr']:g}: {100 * r['reduction']:.0f}%" for r in runs),
        "char-level training on the packaged corpus (small config, 4 steps of 8 x 32 tokens "
        "an epoch, momentum 0.9 for SGD); epochs per run in the training table"))
    nan_free = all(r["finite"] for r in runs) and training["stress"]["parameters finite"]
    crit.append(_criterion(
        2, "no NaN/Inf during training (100+ epochs)", nan_free,
        f"{max(r['epochs'] for r in runs)} epochs finite; stress run (SGD lr=10) "
        f"{training['stress']['epochs']} epochs, {training['stress']['refused steps']} "
        "steps refused, parameters finite" if nan_free else "non-finite parameters seen",
        "every parameter checked finite after each run"))
    model_audit = all(not any("no gradient flows" in i.hint for i in r.inputs) for r in models)
    crit.append(_criterion(
        3, "gradients flow through all layers", not training["zero_gradients"] and model_audit,
        f"{len(training['zero_gradients'])} parameter(s) with an all-zero gradient in 96 "
        "configurations; check_model flow audit "
        + ("clean" if model_audit else "flagged parameters"),
        "loss_and_grads in every configuration; check_model audit"))
    n_pass = sum(r.passed for r in layers + models)
    crit.append(_criterion(
        4, "passes gradient checking", checks_ok and cat_ok,
        f"{n_pass}/{len(layers) + len(models)} layer and model checks passed; "
        f"bug catalog {sum(r['verdict'] == 'caught' for r in catalog)}/{len(catalog)} caught "
        "with no false alarm",
        "gradcheck.check_vjp per layer, check_model per configuration, catalog of bugs"))
    by_name: dict[str, list[bud.BudgetResult]] = {}
    for b in budget_results:
        by_name.setdefault(b.name, []).append(b)

    def bud_crit(cid: int, name: str, keys: list[str]) -> dict[str, Any]:
        rows = [b for k in keys for b in by_name.get(k, [])]
        if not rows:
            return _criterion(cid, name, None, "", "budget suite")
        worst = max(rows, key=lambda b: b.figure / b.threshold)
        return _criterion(
            cid, name, all(b.passed for b in rows),
            f"worst {worst.figure:.3f} ({worst.name}, {worst.config}, {worst.dtype}) "
            f"vs {worst.threshold:g}",
            "ratios measured side by side in this run; see the budgets table")

    crit.append(bud_crit(5, "forward overhead in training mode < 10%", ["forward_overhead"]))
    crit.append(bud_crit(6, "backward < 2x forward", ["backward_cost"]))
    crit.append(bud_crit(7, "memory < 2x inference", ["memory_ffn", "memory_attention",
                                                    "memory_block", "memory_model_recompute"]))
    crit.append(bud_crit(8, "scales linearly with batch size", ["linear_scaling"]))
    crit.append(bud_crit(9, "no memory leaks", ["no_leaks"]))
    if coverage is None:
        crit.append(_criterion(10, "code coverage > 80%", None, "no reports/coverage.json",
                               "run the README's test command first (pytest-cov)"))
    else:
        pk = coverage["packages"]
        figs = ", ".join(f"{k} {v:.1f}%" for k, v in sorted(pk.items()))
        crit.append(_criterion(10, "code coverage > 80%",
                               all(v > 80 for v in pk.values()) and bool(pk),
                               figs, "pytest-cov line coverage of model/ and gradcheck/"))
    if security.get("measured"):
        crit.append(_criterion(11, "no security alerts", security["findings"] == 0,
                               f"{security['findings']} finding(s) "
                               f"{', '.join(security['rules'])}".strip(),
                               "ruff's bandit rules (S) in place of CodeQL"))
    else:
        crit.append(_criterion(11, "no security alerts", None, security.get("why", ""),
                               "ruff's bandit rules (S)"))
    if junit is None:
        crit.append(_criterion(12, "passes all tests", None, "no reports/junit.xml",
                               "run the README's test command first"))
    else:
        bad = junit["failures"] + junit["errors"]
        crit.append(_criterion(12, "passes all tests", bad == 0,
                               f"{junit['tests']} tests, {bad} failed, {junit['skipped']} skipped",
                               "pytest junit XML of the last test run"))
    budgets_ok = all(b.passed for b in budget_results)
    measured_ok = all(c["status"] != "not met" for c in crit)
    passed = checks_ok and cat_ok and budgets_ok and measured_ok and snapshot_ok

    charts = {
        "loss": line_chart_svg(training["curves"], title="training loss per epoch",
                               xlabel="epoch", ylabel="loss"),
        "budgets": bar_chart_svg(
            [(f"{b.name} {b.config} {b.dtype}", b.figure / b.threshold, 1.0)
             for b in budget_results if b.kind != "figure"],
            title="budget figure / threshold (must stay left of the tick at 1)", log=False),
    }
    tput = [b for b in budget_results if b.name == "throughput"]
    sections = [
        {"id": "catalog", "title": "Bug catalog: every classic bug against its correct twin",
         "columns": ["bug", "dtype", "caught", "false alarms", "verdict", "hint given"],
         "rows": catalog},
        {"id": "training", "title": "Training runs",
         "columns": ["optimizer", "lr", "epochs", "first loss", "last loss", "reduction",
                     "finite", "refused steps", "met"],
         "rows": runs},
        {"id": "budgets", "title": "Performance budgets",
         "text": bud.__doc__.split("\n\n")[1].replace("\n", " ") if bud.__doc__ else "",
         "columns": ["budget", "criterion", "config", "dtype", "figure", "threshold", "margin",
                     "noise (se)", "pairs", "verdict"],
         "rows": [{"budget": b.title, "criterion": b.criterion, "config": b.config,
                   "dtype": b.dtype, "figure": b.figure,
                   "threshold": b.threshold if math.isfinite(b.threshold) else "-",
                   "margin": b.margin if math.isfinite(b.threshold) else "-",
                   "noise (se)": b.noise, "pairs": b.pairs,
                   "verdict": ("pass" if b.passed else "fail") if b.kind != "figure"
                   else "figure"} for b in budget_results]},
        {"id": "throughput", "title": "Training-step throughput (no gate)",
         "columns": ["dtype", "tokens/s", "x the 1,700 tokens/s reported by the source projects"],
         "rows": [{"dtype": b.dtype, "tokens/s": round(b.figure),
                   "x the 1,700 tokens/s reported by the source projects":
                   round(b.details["vs_reference_1700"], 2)} for b in tput]},
    ]
    if "properties.json" in extra:
        rows = extra["properties.json"]["rows"]
        sections.append({
            "id": "properties", "title": "Property and fuzz tests (last test run)",
            "text": f"{len(rows)} property/fuzz tests tried "
                    f"{sum(r['examples'] for r in rows)} examples; "
                    f"{sum(r['outcome'] == 'failed' for r in rows)} failed.",
            "columns": ["test", "examples", "outcome", "note"], "rows": rows})
    if "snapshots.json" in extra:
        sn = extra["snapshots.json"]
        sections.append({"id": "snapshots", "title": "Gradient snapshot drift",
                         "text": sn["text"],
                         "columns": ["case", "parameter", "status", "max_abs", "max_rel",
                                     "worst_index", "detail"],
                         "rows": sn.get("rows", [])})
    data = {
        "title": "gradcheck verification of the reference model",
        "verdict": "pass" if passed else "fail",
        "generated": datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "mode": "quick" if quick else "full",
        "seed": seed,
        "seconds": round(time.perf_counter() - t0, 1),
        "summary": {
            "gradient checks": len(checks), "passed": n_pass,
            "kinks skipped": sum(r.kinks for r in layers + models),
            "bugs caught": f"{sum(r['verdict'] == 'caught' for r in catalog)}/{len(catalog)}",
            "budgets passed": f"{sum(b.passed for b in budget_results)}/{len(budget_results)}",
        },
        "criteria": crit,
        "checks": checks,
        "sections": sections,
        "budgets": [b.to_dict() for b in budget_results],
        "training": training,
        "environment": environment(),
        "charts_svg": charts,
    }
    write_json(out_path.with_suffix(".json"), {k: v for k, v in data.items() if k != "charts_svg"})
    write_html(out_path, data)
    say(f"wrote {out_path} and {out_path.with_suffix('.json')} "
        f"({'PASS' if passed else 'FAIL'})")
    return passed
