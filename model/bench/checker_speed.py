"""What a gradient check of the reference layers costs, per mode, against PyTorch's.

PyTorch's ``torch.autograd.gradcheck`` runs on the very same NumPy LayerNorm (wrapped in
a ``torch.autograd.Function``), so both sides spend the same time in the layer and the
ratio measures the checkers. ``fast_mode=True`` is the yardstick of the directional
mode, the default (slow) mode that of the full mode. PyTorch runs with one thread, as
the NumPy side does with one BLAS thread; every side is timed on the CPU clock of the
measuring thread (wall time beside it, see :mod:`gradcheck.report.budgets`).
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from ..attention import softmax_backward, softmax_forward
from ..layernorm import layernorm_backward, layernorm_forward

if TYPE_CHECKING:
    from gradcheck.report.budgets import Timing

__all__ = ["ModeFigure", "directional_vs_torch", "full_vs_torch", "mode_figures"]


@dataclass
class ModeFigure:
    """One check: its evaluations of the forward and its thread CPU time (this CPU
    only)."""

    label: str
    mode: str
    elements: int
    evaluations: int
    seconds: float
    passed: bool

    def to_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


def ln_inputs(n: int, c: int, seed: int = 0) -> list[np.ndarray]:
    r = np.random.default_rng(seed)
    return [r.standard_normal((n, c)), 1 + 0.1 * r.standard_normal(c),
            0.1 * r.standard_normal(c)]


def _softmax_fwd(s: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    p = softmax_forward(s)
    return p, p


def _softmax_bwd(dp: np.ndarray, p: np.ndarray) -> tuple[np.ndarray]:
    return (softmax_backward(dp, p),)


def _ours(n: int, c: int, mode: str) -> Callable[[], Any]:
    from gradcheck import check_vjp

    xs = ln_inputs(n, c)
    return lambda: check_vjp(layernorm_forward, layernorm_backward, xs, mode=mode)


def _theirs(n: int, c: int, fast: bool) -> Callable[[], Any]:
    import torch

    torch.set_num_threads(1)

    class LayerNorm(torch.autograd.Function):
        @staticmethod
        def forward(ctx: Any, x: Any, g: Any, b: Any) -> Any:
            y, cache = layernorm_forward(x.detach().numpy(), g.detach().numpy(),
                                         b.detach().numpy())
            ctx.cache = cache
            return torch.from_numpy(y)

        @staticmethod
        def backward(ctx: Any, dy: Any) -> Any:
            return tuple(torch.from_numpy(d) for d in layernorm_backward(dy.numpy(),
                                                                         ctx.cache))

    xs = [torch.from_numpy(a).requires_grad_() for a in ln_inputs(n, c)]
    return lambda: torch.autograd.gradcheck(LayerNorm.apply, xs, fast_mode=fast)


def _timed(fn: Callable[[], Any]) -> tuple[Any, float]:
    """``fn()`` and its thread CPU seconds."""
    return _clocked(fn)[:2]


def _clocked(fn: Callable[[], Any]) -> tuple[Any, float, float]:
    """``fn()``, its thread CPU seconds and its wall seconds."""
    c0, w0 = time.thread_time(), time.perf_counter()
    out = fn()
    return out, time.thread_time() - c0, time.perf_counter() - w0


def mode_figures(repeats: int = 3) -> list[ModeFigure]:
    """Evaluations and median thread CPU time of each mode on the reference layers."""
    from gradcheck import check_vjp

    s = [np.random.default_rng(1).standard_normal((100, 100))]
    cases: list[tuple[str, str, int, Callable[[], Any]]] = [
        ("LayerNorm 512x512", "directional", 512 * 512 + 1024, _ours(512, 512, "directional")),
        ("LayerNorm 512x512", "sampled", 512 * 512 + 1024, _ours(512, 512, "sampled")),
        ("LayerNorm 64x64", "full", 64 * 64 + 128, _ours(64, 64, "full")),
        ("softmax 100x100", "full", 10_000,
         lambda: check_vjp(_softmax_fwd, _softmax_bwd, s, mode="full")),
    ]
    out = []
    for label, mode, size, fn in cases:
        fn()  # warm-up
        runs = [_timed(fn) for _ in range(repeats)]
        res = runs[0][0]
        out.append(ModeFigure(label, mode, size, res.evaluations,
                              statistics.median(t for _r, t in runs), res.passed))
    return out


def directional_vs_torch(pairs: int) -> tuple[Timing, dict[str, Any]]:
    """LayerNorm 512x512: our directional check / PyTorch's fast mode, A B A B."""
    from gradcheck.report.budgets import time_pairs

    ours, theirs = _ours(512, 512, "directional"), _theirs(512, 512, True)
    timing = time_pairs(ours, theirs, pairs=pairs)
    res, _t = _timed(ours)
    return timing, {"evaluations": res.evaluations, "passed": res.passed, "pairs": pairs,
                    "ratios": timing.ratios}


def full_vs_torch(pairs: int = 3) -> tuple[Timing, dict[str, Any]]:
    """LayerNorm 64x64: our full check / PyTorch's slow mode, A B A B.

    PyTorch's side takes several seconds and its time varies by a sixth from run to run
    on one machine, so it runs ``pairs`` times, each beside the faster of two of our runs
    (our check's own cost); the ratio is the pairs' median and its noise their spread,
    both sides' variation in it (one PyTorch run left its variation out).
    """
    from gradcheck.report.budgets import Timing

    ours, theirs = _ours(64, 64, "full"), _theirs(64, 64, False)
    res = ours()
    mine, torch_runs = [], []
    for _ in range(pairs):
        mine.append(min((_clocked(ours)[1:] for _ in range(2)), key=lambda r: r[0]))
        torch_runs.append(_clocked(theirs)[1:])
    timing = Timing.of([r[0] for r in mine], [r[0] for r in torch_runs],
                       [r[1] for r in mine], [r[1] for r in torch_runs])
    return timing, {"evaluations": res.evaluations, "passed": res.passed,
                    "check_seconds": statistics.median(r[0] for r in mine),
                    "torch_seconds": statistics.median(r[0] for r in torch_runs)}
