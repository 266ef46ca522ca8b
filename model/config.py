"""Configuration of the reference transformer, validated on construction."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

__all__ = ["ACTIVATION_NAMES", "LOSS_NAMES", "PLAN", "SMALL", "TINY", "Config"]

ACTIVATION_NAMES = ("gelu", "gelu_tanh", "relu", "tanh")
LOSS_NAMES = ("cross_entropy", "mse", "embedding_mse")
_NORMS = ("pre", "post")

#: The plan's configuration (batch 8 x 64): the one place it is written.
PLAN: dict[str, Any] = dict(vocab_size=64, d_model=128, n_heads=8, d_ff=512, n_layers=3,
                               max_len=64)
#: A small configuration for the budgets and quick training.
SMALL: dict[str, Any] = dict(vocab_size=32, d_model=32, n_heads=4, d_ff=64, n_layers=2,
                                max_len=32)
#: The tiny configuration of the full (element by element) model checks.
TINY: dict[str, Any] = dict(vocab_size=7, d_model=8, n_heads=2, d_ff=12, n_layers=2,
                               max_len=6)
_DTYPES = ("float64", "float32")


def _positive_int(name: str, value: object) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError(f"Config.{name} must be a positive integer, got {value!r}")


@dataclass(frozen=True)
class Config:
    """Hyper-parameters of :class:`model.Transformer`.

    Attributes
    ----------
    vocab_size : int
        V, number of token ids.
    d_model : int
        C, the width; divisible by ``n_heads``.
    n_heads : int
        H.
    d_ff : int
        F, the hidden width of the feed-forward.
    n_layers : int
        Number of encoder blocks.
    max_len : int
        L, the longest sequence (rows of the positional embedding).
    activation : {"gelu", "gelu_tanh", "relu", "tanh"}
    norm : {"pre", "post"}
        LayerNorm placement.
    causal : bool
        Mask attention to earlier positions.
    loss : {"cross_entropy", "mse", "embedding_mse"}
        ``cross_entropy``: next-token targets (B, T) int. ``mse``: regression head,
        targets (B, T, V) float. ``embedding_mse``: the final hidden state regressed
        onto the embedding of the target token (targets (B, T) int); the model then has
        no output projection and its output is the hidden state (B, T, C).
    dtype : {"float64", "float32"}
        Of every parameter and activation.
    seed : int
        Of the initialisation.
    recompute : bool
        Keep only each block's input in the training cache and recompute the block in
        the backward (less memory, same gradients).
    check_finite : bool
        Raise :class:`gradcheck_model.anomaly.NonFiniteValueError`, naming the first operation
        and layer, when NaN/Inf appears in the forward, the loss or the backward (one
        ``isfinite`` pass over the output; the replay runs only on failure).
    """

    vocab_size: int
    d_model: int
    n_heads: int
    d_ff: int
    n_layers: int
    max_len: int
    activation: str = "gelu"
    norm: str = "pre"
    causal: bool = True
    loss: str = "cross_entropy"
    dtype: str = "float64"
    seed: int = 0
    recompute: bool = False
    check_finite: bool = True

    def __post_init__(self) -> None:
        for name in ("vocab_size", "d_model", "n_heads", "d_ff", "n_layers", "max_len"):
            _positive_int(name, getattr(self, name))
        if self.d_model % self.n_heads:
            raise ValueError(
                f"Config.d_model ({self.d_model}) must be divisible by n_heads "
                f"({self.n_heads})"
            )
        if self.activation not in ACTIVATION_NAMES:
            raise ValueError(
                f"Config.activation must be one of {', '.join(ACTIVATION_NAMES)}; "
                f"got {self.activation!r}"
            )
        if self.norm not in _NORMS:
            raise ValueError(f"Config.norm must be 'pre' or 'post', got {self.norm!r}")
        if self.loss not in LOSS_NAMES:
            raise ValueError(
                f"Config.loss must be one of {', '.join(LOSS_NAMES)}; got {self.loss!r}"
            )
        if self.dtype not in _DTYPES:
            raise ValueError(
                f"Config.dtype must be 'float64' or 'float32', got {self.dtype!r}"
            )
        if not isinstance(self.causal, bool):
            raise ValueError(f"Config.causal must be True or False, got {self.causal!r}")
        if not isinstance(self.check_finite, bool):
            raise ValueError(
                f"Config.check_finite must be True or False, got {self.check_finite!r}"
            )
        if not isinstance(self.recompute, bool):
            raise ValueError(f"Config.recompute must be True or False, got {self.recompute!r}")
        if isinstance(self.seed, bool) or not isinstance(self.seed, int) or self.seed < 0:
            raise ValueError(f"Config.seed must be a non-negative integer, got {self.seed!r}")
