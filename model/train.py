"""Character-level next-token training on a corpus that ships with the package."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from importlib import resources
from typing import Any

import numpy as np

from .bench.perf import tune_allocator
from .config import Config
from .optim import SGD, Adam, NonFiniteError, clip_by_global_norm, clip_by_value
from .transformer import Transformer

__all__ = ["CharCorpus", "TrainResult", "load_corpus", "train"]


@dataclass(frozen=True)
class CharCorpus:
    """A text and its character vocabulary.

    Attributes
    ----------
    text : str
    chars : str
        Sorted distinct characters; a token id is an index into it.
    ids : ndarray of int, shape (N,)
    """

    text: str
    chars: str
    ids: np.ndarray

    @property
    def vocab_size(self) -> int:
        return len(self.chars)

    def batches(
        self, rng: np.random.Generator, batch: int, length: int
    ) -> tuple[np.ndarray, np.ndarray]:
        """A random batch of windows: ``tokens (B, T)`` and next-token ``targets (B, T)``."""
        if length + 1 > self.ids.size:
            raise ValueError(f"length {length} is longer than the corpus allows")
        start = rng.integers(0, self.ids.size - length - 1, batch)
        idx = start[:, None] + np.arange(length + 1)
        windows = self.ids[idx]
        return windows[:, :-1], windows[:, 1:]


def load_corpus(text: str | None = None) -> CharCorpus:
    """The packaged corpus (or ``text``) as a :class:`CharCorpus`."""
    if text is None:
        here = resources.files(__package__ or "gradcheck_model")  # installed as gradcheck_model
        text = here.joinpath("corpus.txt").read_text(encoding="utf-8")
    if len(text) < 2:
        raise ValueError("corpus text must have at least two characters")
    chars = "".join(sorted(set(text)))
    lookup = {c: i for i, c in enumerate(chars)}
    return CharCorpus(text, chars, np.array([lookup[c] for c in text], dtype=np.intp))


@dataclass
class TrainResult:
    """Losses per epoch and what happened."""

    losses: list[float] = field(default_factory=list)
    refused_steps: int = 0
    nonfinite: bool = False
    tokens_per_second: float = 0.0

    @property
    def reduction(self) -> float:
        """Relative fall of the loss from the first to the last epoch."""
        if len(self.losses) < 2 or self.losses[0] == 0:
            return 0.0
        return 1.0 - self.losses[-1] / self.losses[0]


def _optimizer(model: Transformer, corpus: CharCorpus, optimizer: str, lr: float,
               momentum: float, weight_decay: float) -> SGD | Adam:
    """The optimizer ``train`` steps with, after checking the model fits the corpus."""
    if model.cfg.loss != "cross_entropy":
        raise ValueError("train() needs a model with loss='cross_entropy'")
    if corpus.vocab_size > model.cfg.vocab_size:
        raise ValueError(
            f"corpus has {corpus.vocab_size} characters, model vocab_size is "
            f"{model.cfg.vocab_size}"
        )
    if optimizer == "sgd":
        return SGD(lr, momentum=momentum, weight_decay=weight_decay)
    if optimizer == "adam":
        return Adam(lr, weight_decay=weight_decay)
    raise ValueError(f"optimizer must be 'sgd' or 'adam', got {optimizer!r}")


def train(
    model: Transformer,
    corpus: CharCorpus,
    *,
    epochs: int = 100,
    steps_per_epoch: int = 4,
    batch: int = 8,
    length: int = 32,
    optimizer: str = "adam",
    lr: float = 3e-3,
    clip_value: float | None = 5.0,
    clip_norm: float | None = None,
    weight_decay: float = 0.0,
    momentum: float = 0.9,
    seed: int = 0,
    on_epoch: Any = None,
) -> TrainResult:
    """Train ``model`` on ``corpus``; deterministic from ``seed``.

    The loss recorded per epoch is the mean training loss of its steps. A step that
    would write NaN/Inf into a parameter is refused (counted in ``refused_steps``) and
    the parameters stay as they were.
    """
    opt = _optimizer(model, corpus, optimizer, lr, momentum, weight_decay)
    tune_allocator()
    rng = np.random.default_rng(seed)
    result = TrainResult()
    import time

    t0 = time.perf_counter()
    tokens_seen = 0
    for epoch in range(epochs):
        total = 0.0
        for _ in range(steps_per_epoch):
            x, y = corpus.batches(rng, batch, length)
            loss, grads = model.loss_and_grads(x, y)
            if not math.isfinite(loss):
                result.nonfinite = True
                result.refused_steps += 1
                continue
            if clip_value is not None:
                grads = clip_by_value(grads, -clip_value, clip_value)
            if clip_norm is not None:
                grads, _ = clip_by_global_norm(grads, clip_norm)
            try:
                opt.step(model.params, grads)
            except NonFiniteError:
                result.refused_steps += 1
            total += loss
            tokens_seen += x.size
        result.losses.append(total / steps_per_epoch)
        if on_epoch is not None:
            on_epoch(epoch, result.losses[-1])
    result.tokens_per_second = tokens_seen / max(time.perf_counter() - t0, 1e-9)
    return result


def small_config(corpus: CharCorpus, **overrides: Any) -> Config:
    """A small configuration that trains in seconds on the packaged corpus."""
    base: dict[str, Any] = dict(
        vocab_size=corpus.vocab_size, d_model=32, n_heads=4, d_ff=64, n_layers=2, max_len=64
    )
    base.update(overrides)
    return Config(**base)
