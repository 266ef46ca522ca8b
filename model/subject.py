"""The reference transformer as a :class:`gradcheck.Subject`: the default of every command.

One table of layer cases (used by the report, the property tests and the budgets), the
model configurations each level of the report checks, the training runs, the gradient
flow audit, the budgets (with their table, ``budgets.toml`` beside this module, and the
report's tables of them), the snapshot cases and their recorded folder. ``gradcheck report`` with no
``--subject`` verifies this subject; ``--subject gradcheck_model.subject:REFERENCE`` names it.
"""

from __future__ import annotations

import functools
import itertools
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from gradcheck.subject import BudgetSection, LayerCase, ModelCase, Subject, TrainingRun

from .activations import ACTIVATIONS
from .attention import attention_backward, attention_forward, softmax_backward, softmax_forward
from .block import BLOCK_PARAMS, block_backward, block_forward
from .config import PLAN, SMALL, TINY, Config
from .embedding import embedding_backward, embedding_forward
from .feedforward import feedforward_backward, feedforward_forward
from .layernorm import layernorm_backward, layernorm_forward
from .linear import linear_backward, linear_forward
from .losses import cross_entropy_backward, cross_entropy_forward, mse_backward, mse_forward
from .transformer import Transformer

__all__ = ["LAYERS", "PLAN", "REFERENCE", "SMALL", "TINY", "model_configs", "reference_batch"]


# -- the layer table --------------------------------------------------------------------------
_B, _T, _C, _H, _F, _V = 2, 4, 8, 2, 12, 7


def _n(rng: np.random.Generator, dt: Any, *shape: int, s: float = 1.0) -> np.ndarray:
    return (s * rng.standard_normal(shape)).astype(dt)


def _gain(rng: np.random.Generator, dt: Any, c: int) -> np.ndarray:
    return (1 + 0.1 * rng.standard_normal(c)).astype(dt)


def _attention_weights(rng: np.random.Generator, dt: Any) -> list[np.ndarray]:
    ws: list[np.ndarray] = []
    for _ in range(4):
        ws += [_n(rng, dt, _C, _C, s=0.4), _n(rng, dt, _C, s=0.1)]
    return ws


def _attention(causal: bool) -> LayerCase:
    def fwd(x: np.ndarray, Wq: np.ndarray, bq: np.ndarray, Wk: np.ndarray, bk: np.ndarray,
            Wv: np.ndarray, bv: np.ndarray, Wo: np.ndarray, bo: np.ndarray) -> Any:
        # named parameters: the reports name the inputs x, Wq, bq... (not x0, x1...)
        return attention_forward(x, Wq, bq, Wk, bk, Wv, bv, Wo, bo, n_heads=_H, causal=causal)

    def bwd(dy: np.ndarray, cache: Any) -> tuple[np.ndarray, ...]:
        dx, g = attention_backward(dy, cache)
        return (dx, g["Wq"], g["bq"], g["Wk"], g["bk"], g["Wv"], g["bv"], g["Wo"], g["bo"])

    return LayerCase(f"attention(causal={causal})",
                     lambda rng, dt: [_n(rng, dt, _B, _T, _C), *_attention_weights(rng, dt)],
                     fwd, bwd)


def _feedforward(act: str) -> LayerCase:
    def fwd(x: np.ndarray, W1: np.ndarray, b1: np.ndarray, W2: np.ndarray, b2: np.ndarray
            ) -> Any:
        return feedforward_forward(x, W1, b1, W2, b2, activation=act)

    def bwd(dy: np.ndarray, cache: Any) -> tuple[np.ndarray, ...]:
        dx, g = feedforward_backward(dy, cache)
        return dx, g["W1"], g["b1"], g["W2"], g["b2"]

    def inputs(rng: np.random.Generator, dt: Any) -> list[np.ndarray]:
        return [_n(rng, dt, _B, _T, _C), _n(rng, dt, _C, _F, s=0.4), _n(rng, dt, _F, s=0.1),
                _n(rng, dt, _F, _C, s=0.4), _n(rng, dt, _C, s=0.1)]

    return LayerCase(f"feedforward({act})", inputs, fwd, bwd)


def _block(norm: str) -> LayerCase:
    shapes = {"ffn.W1": (_C, _F), "ffn.b1": (_F,), "ffn.W2": (_F, _C)}

    # dict inputs (x and the parameters by their block names): the checker calls
    # fwd(**inputs) and the reports name each input ("attn.Wq"), not x0..x16
    def fwd(x: np.ndarray, **p: np.ndarray) -> Any:
        return block_forward(x, p, n_heads=_H, causal=True, activation="gelu", norm=norm)

    def bwd(dy: np.ndarray, cache: Any) -> dict[str, np.ndarray]:
        dx, g = block_backward(dy, cache)
        return {"x": dx, **{k: g[k] for k in BLOCK_PARAMS}}

    def inputs(rng: np.random.Generator, dt: Any) -> dict[str, np.ndarray]:
        ps = {k: _gain(rng, dt, _C) if k.endswith(".g")
              else _n(rng, dt, *shapes.get(k, (_C, _C) if ".W" in k else (_C,)), s=0.4)
              for k in BLOCK_PARAMS}
        return {"x": _n(rng, dt, _B, _T, _C), **ps}

    return LayerCase(f"block({norm}-norm)", inputs, fwd, bwd)


def _activation(name: str) -> LayerCase:
    fw, bw = ACTIVATIONS[name]
    return LayerCase(name, lambda rng, dt: [_n(rng, dt, _B, _T, _C)], fw,
                     lambda dy, cc: (bw(dy, cc),))


def _softmax_fwd(s: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    p = softmax_forward(s)
    return p, p


def _embedding_fwd(tokens: np.ndarray, E: np.ndarray, P: np.ndarray) -> Any:
    return embedding_forward(tokens, E, P)


def _embedding_bwd(dx: np.ndarray, cache: Any) -> tuple[None, np.ndarray, np.ndarray]:
    return (None, *embedding_backward(dx, cache))


def _embedding_inputs(rng: np.random.Generator, dt: Any) -> list[np.ndarray]:
    tokens = rng.integers(0, _V, (_B, _T))
    tokens[0, :2] = 3  # a repeated id: gradients must accumulate
    return [tokens, _n(rng, dt, _V, _C), _n(rng, dt, _T + 2, _C)]


def _ce_fwd(z: np.ndarray, targets: np.ndarray) -> Any:
    loss, cache = cross_entropy_forward(z, targets)
    return np.asarray(loss), cache


def _mse_fwd(p: np.ndarray, q: np.ndarray) -> Any:
    loss, cache = mse_forward(p, q)
    return np.asarray(loss), cache


#: Every layer of the model with its input factory: one table for the report, the
#: property tests and the budgets.
LAYERS: list[LayerCase] = [
    LayerCase("linear", lambda rng, dt: [_n(rng, dt, _B, _T, _C), _n(rng, dt, _C, _F, s=0.4),
                                         _n(rng, dt, _F)], linear_forward, linear_backward),
    LayerCase("layernorm", lambda rng, dt: [_n(rng, dt, _B, _T, _C), _gain(rng, dt, _C),
                                            _n(rng, dt, _C, s=0.1)],
              layernorm_forward, layernorm_backward),
    *[_activation(name) for name in ACTIVATIONS],
    LayerCase("softmax", lambda rng, dt: [_n(rng, dt, _B, _T, _V)], _softmax_fwd,
              lambda dp, p: (softmax_backward(dp, p),)),
    _attention(True), _attention(False),
    *[_feedforward(act) for act in ACTIVATIONS],
    _block("pre"), _block("post"),
    LayerCase("embedding", _embedding_inputs, _embedding_fwd, _embedding_bwd),
    LayerCase("cross_entropy", lambda rng, dt: [_n(rng, dt, _B, _T, _V),
                                                rng.integers(0, _V, (_B, _T))],
              _ce_fwd, lambda dl, cc: (cross_entropy_backward(float(dl), cc), None)),
    LayerCase("mse", lambda rng, dt: [_n(rng, dt, _B, _T, _V), _n(rng, dt, _B, _T, _V)],
              _mse_fwd, lambda dl, cc: mse_backward(float(dl), cc)),
]


# -- models -------------------------------------------------------------------------------------
_FACTORS = ("activation", "norm", "loss", "causal", "dtype")

#: Eight configurations in which every value of every factor appears at least twice
#: (activation, norm, loss, mask, dtype), each activation in both dtypes.
REPRESENTATIVE: list[tuple[Any, ...]] = [
    ("gelu", "pre", "cross_entropy", True, "float64"),
    ("gelu", "post", "embedding_mse", False, "float32"),
    ("gelu_tanh", "post", "mse", True, "float64"),
    ("gelu_tanh", "pre", "cross_entropy", False, "float32"),
    ("relu", "post", "cross_entropy", False, "float64"),
    ("relu", "pre", "mse", True, "float32"),
    ("tanh", "pre", "embedding_mse", True, "float64"),
    ("tanh", "post", "mse", False, "float32"),
]


def model_configs(level: str) -> list[dict[str, Any]]:
    """``full``: all 96 of activation x norm x loss x mask x dtype; ``default``: the
    eight :data:`REPRESENTATIVE` ones; ``quick``: four of those."""
    if level == "full":
        combos = list(itertools.product(
            ("gelu", "gelu_tanh", "relu", "tanh"), ("pre", "post"),
            ("cross_entropy", "mse", "embedding_mse"), (True, False), ("float64", "float32")))
    elif level == "default":
        combos = REPRESENTATIVE
    else:
        combos = [REPRESENTATIVE[i] for i in (0, 3, 4, 7)]
    return [dict(zip(_FACTORS, c, strict=True)) for c in combos]


def reference_batch(cfg: Config, rng: np.random.Generator, batch: int, length: int
                    ) -> tuple[np.ndarray, np.ndarray]:
    """Tokens and targets of the right kind for ``cfg.loss``."""
    tokens = rng.integers(0, cfg.vocab_size, (batch, length))
    if cfg.loss == "mse":
        return tokens, rng.standard_normal((batch, length, cfg.vocab_size))
    return tokens, rng.integers(0, cfg.vocab_size, (batch, length))


def _label(kw: dict[str, Any]) -> str:
    """A configuration as a case's name shows it; a flag says what it is: ``gelu,pre,mse,
    causal,float64`` (or ``non-causal``), never a bare ``True``."""
    flags = {"causal": ("causal", "non-causal"), "recompute": ("recompute", "no recompute")}
    return ",".join(flags.get(k, (f"{k}={v}", f"{k}={v}"))[0 if v else 1]
                    if isinstance(v, bool) else str(v) for k, v in kw.items())


def _tiny_case(kw: dict[str, Any], k: int, seed: int) -> ModelCase:
    def build() -> tuple[Any, tuple[Any, ...]]:
        cfg = Config(**TINY, **kw, seed=seed)
        return Transformer(cfg), reference_batch(cfg, np.random.default_rng(seed + k), 2, 5)

    return ModelCase(f"model tiny ({_label(kw)})", build, twin=_twin_builder(TINY, kw, seed))


def _plan_case(kw: dict[str, Any], seed: int, batch: tuple[int, int]) -> ModelCase:
    def build() -> tuple[Any, tuple[Any, ...]]:
        cfg = Config(**PLAN, **kw, seed=seed)
        return Transformer(cfg), reference_batch(cfg, np.random.default_rng(seed), *batch)

    return ModelCase(f"model plan ({_label(kw)}; batch {batch[0]}x{batch[1]})", build,
                     {"mode": "directional"}, twin=_twin_builder(PLAN, kw, seed))


def _twin_builder(base: dict[str, Any], kw: dict[str, Any], seed: int
                  ) -> Callable[[], Any] | None:
    """The float64 twin of a float32 configuration (None for float64 ones)."""
    if kw.get("dtype", "float64") == "float64":
        return None
    return lambda: Transformer(Config(**base, **{**kw, "dtype": "float64"}, seed=seed))


_PLAN_F32 = dict(activation="gelu", norm="pre", dtype="float32")
_PLAN_F64 = dict(activation="gelu", norm="pre", dtype="float64")
_PLANS = {"quick": ([_PLAN_F32], (2, 16)), "default": ([_PLAN_F64, _PLAN_F32], (2, 16)),
          "full": ([_PLAN_F64, _PLAN_F32, dict(activation="relu", norm="post",
                                                dtype="float64")], (2, 64))}


def model_cases(level: str, seed: int = 0) -> list[ModelCase]:
    """The tiny model in the configurations of ``level`` (full checks) and the plan's
    model (directional checks on a short batch)."""
    cases = [_tiny_case(kw, k, seed) for k, kw in enumerate(model_configs(level))]
    plans, batch = _PLANS[level]
    return cases + [_plan_case(kw, seed, batch) for kw in plans]


# -- training and gradient flow ---------------------------------------------------------------
#: (optimizer, lr, epochs of 4 steps of 8 x 32 tokens). Plain SGD at 1e-3 is slow on
#: this corpus: it needs about 900 epochs to halve the loss, so it gets 1000 (measured:
#: 53% after 1000; SGD at 1e-2 reaches 48% after 100 and gets 200).
TRAINING_GRID = [("adam", 1e-3, 100), ("adam", 3e-3, 100), ("adam", 1e-2, 100),
                 ("sgd", 1e-3, 1000), ("sgd", 3e-3, 500), ("sgd", 1e-2, 200)]


def training_run(opt: str, lr: float, epochs: int, seed: int, stress: bool = False
                 ) -> TrainingRun:
    """One char-level training run of the small model on the packaged corpus."""
    from .train import load_corpus, small_config, train

    corpus = load_corpus()
    m = Transformer(small_config(corpus, seed=seed))
    if stress:
        r = train(m, corpus, epochs=epochs, optimizer="sgd", lr=10.0, clip_value=50.0,
                  seed=seed, steps_per_epoch=2)
        label = f"stress: sgd lr=10, clip 50, {epochs} epochs"
    else:
        r = train(m, corpus, epochs=epochs, optimizer=opt, lr=lr, seed=seed, steps_per_epoch=4)
        label = f"{opt} {lr:g}"
    finite = all(bool(np.all(np.isfinite(p))) for p in m.params.values())
    return TrainingRun(label, list(r.losses), finite, r.refused_steps, stress)


def training_runs(level: str) -> list[tuple[str, float, int, bool]]:
    """(optimizer, lr, epochs, stress) of each run at ``level``."""
    grid = TRAINING_GRID if level == "full" else [("adam", 1e-2, 100)]
    stress = {"quick": 10, "default": 20, "full": 120}[level]
    return [(o, lr, e, False) for o, lr, e in grid] + [("sgd", 10.0, stress, True)]


def zero_gradients(seed: int) -> list[str]:
    """Parameters with an all-zero gradient, over all 96 configurations."""
    zero: list[str] = []
    for kw in model_configs("full"):
        cfg = Config(**TINY, **kw, seed=seed)
        tokens, targets = reference_batch(cfg, np.random.default_rng(seed), 2, 6)
        _, grads = Transformer(cfg).loss_and_grads(tokens, targets)
        zero += [f"{kw}: {k}" for k, g in grads.items() if not np.any(g)]
    return zero


# -- snapshots -----------------------------------------------------------------------------------
_SNAP: dict[str, Any] = dict(vocab_size=11, d_model=8, n_heads=2, d_ff=16, n_layers=2,
                             max_len=8)

#: The reference cases: name -> (config overrides, seed, (batch, length)).
SNAPSHOT_CASES: dict[str, tuple[dict[str, Any], int, tuple[int, int]]] = {
    "gelu-pre-ce-f64": (dict(activation="gelu", norm="pre"), 0, (3, 7)),
    "relu-post-ce-f64": (dict(activation="relu", norm="post"), 1, (3, 7)),
    "tanh-pre-mse-f64": (dict(activation="tanh", norm="pre", loss="mse", causal=False), 2,
                         (2, 6)),
    "geluTanh-post-embmse-f64": (dict(activation="gelu_tanh", norm="post",
                                      loss="embedding_mse"), 3, (2, 6)),
    "gelu-pre-ce-f32": (dict(activation="gelu", norm="pre", dtype="float32"), 4, (3, 7)),
    "relu-post-ce-recompute-f64": (dict(activation="relu", norm="post", recompute=True), 5,
                                   (2, 8)),
}


def snapshot_case(name: str) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
    """Loss and every parameter gradient of one reference case, and its description."""
    overrides, seed, (b, t) = SNAPSHOT_CASES[name]
    cfg = Config(**_SNAP, **overrides, seed=seed)
    tokens, targets = reference_batch(cfg, np.random.default_rng(seed), b, t)
    loss, grads = Transformer(cfg).loss_and_grads(tokens, targets)
    arrays = {"loss": np.asarray(loss, dtype=np.float64)}
    arrays.update({f"grad.{k}": v for k, v in grads.items()})
    desc = {"config": {**_SNAP, **overrides}, "seed": seed, "batch": [b, t],
            "computed_dtype": cfg.dtype}
    return arrays, desc


def _budgets(level: str) -> list[Any]:
    from .bench.measure import measure_all

    return measure_all(level=level)


def _runs(level: str, seed: int) -> list[TrainingRun]:
    return [training_run(o, lr, e, seed, stress) for o, lr, e, stress in training_runs(level)]


# -- the report's tables of budgets --------------------------------------------------------
def _speed_row(b: Any) -> dict[str, Any]:
    return {"dtype": b.dtype, "threads": b.details["threads"],
            "numpy / torch step time": b.figure, "noise (se)": b.noise,
            "speed vs torch": 1.0 / b.figure, "pairs": b.pairs, "verdict": b.note or b.status}


def _speed_missing() -> str:
    import importlib.util

    why = ("torch is not installed: pip install -e '.[compare]'"
           if importlib.util.find_spec("torch") is None
           else "not measured at this level or by this subject")
    return f"not measured ({why})."


def _checker_row(b: Any) -> dict[str, Any]:
    """A row of the table of what a check costs (from a checker budget)."""
    d = b.details
    row = {"check": "", "mode": "", "elements": "", "evaluations": d.get("evaluations", ""),
           "seconds": d.get("check_seconds", ""), "ratio": b.figure, "threshold": b.threshold}
    if b.name == "checker_mode":
        row.update(check=d["label"], mode=d["mode"], elements=d["elements"],
                   evaluations=d["evaluations"], seconds=d["seconds"], ratio="", threshold="")
    elif b.name in ("checker_directional_vs_torch", "checker_full_vs_torch"):
        mode = "directional" if "directional" in b.name else "full"
        row.update(check=f"{b.config} / torch gradcheck "
                         f"({'fast' if mode == 'directional' else 'slow'} mode)", mode=mode)
    elif b.name == "checker_twin":
        row.update(check=f"check_model, {b.config} config, float32 with its float64 twin / "
                         "float32 training step", mode="twin", threshold="")
    else:
        row.update(check=f"check_model, {b.config} config, {b.dtype} / training step",
                   mode="default")
    return row


def _throughput_row(b: Any) -> dict[str, Any]:
    return {"dtype": b.dtype, "tokens/s": round(b.figure),
            "median step (s)": b.details["median_step_s"],
            "BLAS threads": b.details.get("blas_threads", "")}


BUDGET_SECTIONS = (
    BudgetSection(
        "speed", "Training step against PyTorch eager", ("speed_vs_torch",), _speed_row,
        "The model and its PyTorch twin, each in a process of its own with the same thread "
        "count, stepped in turn (A B A B); median of the pair ratios. Measured on CPU {cpu}, "
        "BLAS core type {blas_core_type}; the budget is speed >= 0.7 (ratio <= 1.43).",
        empty=_speed_missing),
    BudgetSection(
        "checker", "What a check costs, per mode",
        ("checker_mode", "checker_directional_vs_torch", "checker_full_vs_torch",
         "checker_twin", "checker_cost"), _checker_row,
        "Evaluations of the forward (or loss) and thread CPU time of each mode on the "
        "subject's layers (seconds: this CPU only, {cpu}); the cost of check_model in "
        "training steps and, where torch is installed, the ratios against "
        "torch.autograd.gradcheck on the same function were measured side by side in this "
        "run."),
    BudgetSection(
        "throughput", "Training-step throughput on this machine (no gate)", ("throughput",),
        _throughput_row,
        "Absolute figures hold for this CPU only ({cpu}, BLAS core type {blas_core_type}, "
        "with the BLAS threads of each row); compare machines by the ratios above."),
)


# -- the test run, coverage and security scan (criteria 10-12) --------------------------------
_ROOT = Path(__file__).resolve().parent.parent
#: The README's test command: the functional suites under coverage, then the budgets alone.
TEST_COMMANDS = (
    ("{python}", "-m", "pytest", "-n", "2", "-m", "not budget", "{cov}",
     "--cov-report=json:{reports}/coverage.json", "--cov-report=term",
     "--junitxml={reports}/junit.xml"),
    ("{python}", "-m", "pytest", "-m", "budget", "--benchmark-json={reports}/benchmark.json",
     "--junitxml={reports}/junit-budgets.xml"),
)

#: The reference transformer, the default subject of every command.
REFERENCE = Subject(
    name="reference model",
    description="gradcheck verification of the reference model",
    layers=LAYERS,
    model_cases=model_cases,
    training=_runs,
    budgets=_budgets,
    budget_table="bench/budgets.toml",
    budget_sections=BUDGET_SECTIONS,
    snapshot_cases={name: functools.partial(snapshot_case, name) for name in SNAPSHOT_CASES},
    flow=zero_gradients,
    code=(str(_ROOT / "model"), str(_ROOT / "gradcheck")),
    test_commands=TEST_COMMANDS,
    test_dir=str(_ROOT),
    snapshot_dir=str(_ROOT / "snapshots" / "reference"),
)
