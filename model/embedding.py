"""Token embedding plus learned positional embedding.

Shapes: ``tokens (B, T)`` int, ``E (V, C)``, ``P (L, C)`` with ``T <= L``.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

__all__ = ["EmbeddingCache", "embedding_backward", "embedding_forward"]


class EmbeddingCache(NamedTuple):
    tokens: np.ndarray  # (B, T) token ids
    vocab_size: int
    max_len: int


def embedding_forward(
    tokens: np.ndarray, E: np.ndarray, P: np.ndarray
) -> tuple[np.ndarray, EmbeddingCache]:
    """``x[b, t] = E[tokens[b, t]] + P[t]``.

    Returns
    -------
    x : ndarray, shape (B, T, C)
    cache : EmbeddingCache
    """
    t = tokens.shape[1]
    x = E[tokens]
    x += P[:t]
    return x, EmbeddingCache(tokens, E.shape[0], P.shape[0])


def embedding_backward(
    dx: np.ndarray, cache: EmbeddingCache
) -> tuple[np.ndarray, np.ndarray]:
    """Gradients of :func:`embedding_forward`.

    Returns
    -------
    dE : ndarray, shape (V, C)
        Accumulates every occurrence of a repeated id (``np.add.at`` semantics,
        done with a bincount per channel).
    dP : ndarray, shape (L, C)
        Sum over the batch in rows ``0..T-1``, zero beyond.
    """
    tokens, v, max_len = cache
    b, t, c = dx.shape
    flat = dx.reshape(-1, c)
    dE = np.zeros((v, c), dtype=dx.dtype)
    np.add.at(dE, tokens.reshape(-1), flat)
    dP = np.zeros((max_len, c), dtype=dx.dtype)
    dP[:t] = dx.sum(axis=0)
    return dE, dP
