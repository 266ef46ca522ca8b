"""Training-step speed of the reference model against its PyTorch twin, side by side.

Each side runs in a process of its own (so neither's thread pools or allocator disturb
the other), both limited to the same number of threads. The parent asks them for one
training step in turn, A B A B ..., after a warm-up, and takes the median of the
per-pair time ratios, so that a slower CPU moves both sides alike. Each side times its
step on the CPU clock of its own thread (``time.thread_time``; one BLAS thread, one
PyTorch thread) and on the wall clock beside it (:class:`gradcheck.report.budgets.Timing`), so
a busy machine shows as such rather than as a slower side.
"""

from __future__ import annotations

import multiprocessing as mp
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from ..config import PLAN, Config

if TYPE_CHECKING:
    from gradcheck.report.budgets import Timing

__all__ = ["SpeedComparison", "compare_with_torch", "torch_available"]

#: The plan's configuration; batch 8 x 64 tokens.
PLAN_SPEED: dict[str, Any] = {**PLAN, "activation": "gelu_tanh"}


def torch_available() -> bool:
    """Whether PyTorch can be imported here (the ``[compare]`` extra)."""
    import importlib.util

    return importlib.util.find_spec("torch") is not None


@dataclass
class SpeedComparison:
    """Training-step time of the NumPy model over PyTorch eager's, one configuration.

    ``ratio`` is numpy / torch (below 1: the NumPy model is faster); ``speed`` is its
    inverse, the NumPy model's throughput as a fraction of PyTorch's.
    """

    dtype: str
    threads: int
    ratio: float
    se: float
    pairs: int
    numpy_step_s: float
    torch_step_s: float
    timing: Timing | None = field(default=None, repr=False)

    @property
    def speed(self) -> float:
        return 1.0 / self.ratio

    def to_dict(self) -> dict[str, Any]:
        return {"dtype": self.dtype, "threads": self.threads, "ratio": self.ratio,
                "se": self.se, "pairs": self.pairs, "speed_vs_torch": self.speed,
                "numpy_step_s": self.numpy_step_s, "torch_step_s": self.torch_step_s,
                **(self.timing.details() if self.timing is not None else {})}


def _batch(cfg: Config, batch: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(cfg.seed)
    tokens = rng.integers(0, cfg.vocab_size, (batch, cfg.max_len))
    return tokens, rng.integers(0, cfg.vocab_size, (batch, cfg.max_len))


def _worker(side: str, cfg_kw: dict[str, Any], batch: int, threads: int, conn: Any) -> None:
    """Build one side's model, then run a step whenever the parent asks."""
    from threadpoolctl import threadpool_limits

    from ..transformer import Transformer
    from .perf import tune_allocator

    tune_allocator()
    cfg = Config(**cfg_kw)
    model = Transformer(cfg)
    tokens, targets = _batch(cfg, batch)
    with threadpool_limits(threads):
        if side == "numpy":
            def step() -> None:
                model.loss_and_grads(tokens, targets)
        else:
            import torch

            from ..torch_twin import TorchTwin

            torch.set_num_threads(threads)
            twin = TorchTwin(model)
            tt = torch.as_tensor(tokens.astype(np.int64))
            tg = torch.as_tensor(targets.astype(np.int64))

            def step() -> None:
                twin.step(tt, tg)
        conn.send("ready")
        while conn.recv() == "step":
            c0, w0 = time.thread_time(), time.perf_counter()
            step()
            conn.send((time.thread_time() - c0, time.perf_counter() - w0))
    conn.close()


def _interleaved(sides: dict[str, Any], pairs: int
                 ) -> tuple[list[tuple[float, float]], list[tuple[float, float]]]:
    """Once both workers are up: three warm-up A B pairs, then ``pairs`` timed ones."""
    for side, conn in sides.items():
        try:
            conn.recv()
        except EOFError:
            raise RuntimeError(
                f"speed comparison: the {side} worker died while starting (its "
                "traceback is on stderr)"
            ) from None
    times: dict[str, list[tuple[float, float]]] = {"numpy": [], "torch": []}
    for _ in range(3 + pairs):  # three warm-up pairs, then the timed ones
        for side in ("numpy", "torch"):
            sides[side].send("step")
            times[side].append(sides[side].recv())
    return times["numpy"][3:], times["torch"][3:]


def compare_with_torch(
    dtype: str, *, threads: int = 1, pairs: int = 15, batch: int = 8,
    config: dict[str, Any] | None = None,
) -> SpeedComparison:
    """Time a training step of the NumPy model and of its PyTorch twin side by side.

    Parameters
    ----------
    dtype : {"float32", "float64"}
    threads : int
        BLAS threads of the NumPy side and intra-op threads of PyTorch.
    pairs : int
        Interleaved A B pairs after three warm-up pairs.
    batch : int
        Sequences of ``max_len`` tokens per step.
    config : dict, optional
        Model configuration (default: the plan's, with ``gelu_tanh``).
    """
    from gradcheck.report.budgets import Timing

    cfg_kw = {**(config or PLAN_SPEED), "dtype": dtype, "seed": 0}
    ctx = mp.get_context("spawn")
    sides: dict[str, Any] = {}
    procs = []
    try:
        for side in ("numpy", "torch"):
            parent, child = ctx.Pipe()
            p = ctx.Process(target=_worker, args=(side, cfg_kw, batch, threads, child),
                            daemon=True)
            p.start()
            procs.append(p)
            sides[side] = parent
        a, b = _interleaved(sides, pairs)
        timing = Timing.of([t[0] for t in a], [t[0] for t in b], [t[1] for t in a],
                           [t[1] for t in b])
    finally:
        for conn in sides.values():
            try:
                conn.send("stop")
            except (BrokenPipeError, OSError):
                pass
        for p in procs:
            p.join(timeout=30)
            if p.is_alive():  # pragma: no cover
                p.kill()
    return SpeedComparison(dtype, threads, timing.cpu, timing.cpu_se, pairs,
                           float(np.median([t[0] for t in a])),
                           float(np.median([t[0] for t in b])), timing)
