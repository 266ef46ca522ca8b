"""The reference transformer: embedding, encoder blocks, final LayerNorm, head, loss.

Shapes: ``tokens (B, T)`` int; hidden states ``(B, T, C)``; logits ``(B, T, V)``.
"""

from __future__ import annotations

import dataclasses
from typing import Any, NamedTuple

import numpy as np

from .anomaly import NonFiniteValueError, all_finite, locate_forward
from .block import BLOCK_PARAMS, BlockCache, Probe, block_backward, block_forward
from .config import Config
from .embedding import EmbeddingCache, embedding_backward, embedding_forward
from .layernorm import LayerNormCache, layernorm_backward, layernorm_forward
from .linear import LinearCache, linear_backward, linear_forward
from .losses import (
    cross_entropy_backward,
    cross_entropy_forward,
    mse_backward,
    mse_forward,
)

__all__ = ["ModelCache", "Transformer"]


class ModelCache(NamedTuple):
    emb: EmbeddingCache
    block_inputs: list[np.ndarray]  # each (B, T, C); kept in recompute mode only
    blocks: list[BlockCache]  # empty in recompute mode
    ln_f: LayerNormCache | None  # pre-norm only
    head: LinearCache | None  # None for loss="embedding_mse"
    params: dict[str, np.ndarray]  # the parameter arrays the forward used


class Transformer:
    """A compact NumPy transformer with a hand-written backward for every part.

    Parameters
    ----------
    cfg : Config

    Attributes
    ----------
    params : dict of str to ndarray
        Every trainable array by name: ``tok_emb (V, C)``, ``pos_emb (L, C)``,
        ``blocks.{i}.{ln1.g, attn.Wq, ffn.W1, ...}``, ``ln_f.g``/``ln_f.b`` (pre-norm),
        ``head.W (C, V)``/``head.b (V,)`` (unless ``loss="embedding_mse"``).

    Notes
    -----
    Caches live in the objects returned by :meth:`forward_train`, never on the model,
    so one model can serve several threads.
    """

    def __init__(self, cfg: Config) -> None:
        if not isinstance(cfg, Config):
            raise TypeError(f"Transformer expects a model.Config, got {type(cfg).__name__}")
        self.cfg = cfg
        self.dtype = np.dtype(cfg.dtype)
        self.params: dict[str, np.ndarray] = self._init_params()

    # -- parameters ------------------------------------------------------------------
    def _init_params(self) -> dict[str, np.ndarray]:
        cfg = self.cfg
        rng = np.random.default_rng(cfg.seed)
        c, f, v = cfg.d_model, cfg.d_ff, cfg.vocab_size

        def w(rows: int, cols: int) -> np.ndarray:
            return rng.normal(0.0, 1.0 / np.sqrt(rows), (rows, cols))

        p: dict[str, Any] = {
            "tok_emb": rng.normal(0.0, 1.0, (v, c)),
            "pos_emb": rng.normal(0.0, 0.1, (cfg.max_len, c)),
        }
        for i in range(cfg.n_layers):
            pre = f"blocks.{i}."
            p[pre + "ln1.g"] = np.ones(c) + rng.normal(0.0, 0.05, c)
            p[pre + "ln1.b"] = rng.normal(0.0, 0.05, c)
            for name in ("q", "k", "v", "o"):
                p[pre + f"attn.W{name}"] = w(c, c)
                p[pre + f"attn.b{name}"] = rng.normal(0.0, 0.02, c)
            p[pre + "ln2.g"] = np.ones(c) + rng.normal(0.0, 0.05, c)
            p[pre + "ln2.b"] = rng.normal(0.0, 0.05, c)
            p[pre + "ffn.W1"] = w(c, f)
            p[pre + "ffn.b1"] = rng.normal(0.0, 0.02, f)
            p[pre + "ffn.W2"] = w(f, c)
            p[pre + "ffn.b2"] = rng.normal(0.0, 0.02, c)
        if cfg.norm == "pre":
            p["ln_f.g"] = np.ones(c) + rng.normal(0.0, 0.05, c)
            p["ln_f.b"] = rng.normal(0.0, 0.05, c)
        if cfg.loss != "embedding_mse":
            p["head.W"] = w(c, v)
            p["head.b"] = np.zeros(v)
        return {k: np.ascontiguousarray(a, dtype=self.dtype) for k, a in p.items()}

    def astype(self, dtype: str) -> Transformer:
        """The same model in another dtype: same configuration, parameters cast.

        ``m.astype("float64")`` is the float64 twin that
        :func:`gradcheck.check_model` takes as ``twin=`` for a float32 model.
        """
        other = Transformer(dataclasses.replace(self.cfg, dtype=dtype))
        other.params = {k: np.ascontiguousarray(v, dtype=other.dtype)
                        for k, v in self.params.items()}
        return other

    def _block_params(self, params: dict[str, np.ndarray], i: int) -> dict[str, np.ndarray]:
        pre = f"blocks.{i}."
        return {name: params[pre + name] for name in BLOCK_PARAMS}

    # -- validation ------------------------------------------------------------------
    def _check_tokens(self, tokens: Any, label: str = "tokens") -> np.ndarray:
        t = np.asarray(tokens)
        if t.dtype.kind not in "iu":
            raise TypeError(f"{label} must be an integer array, got dtype {t.dtype}")
        if t.ndim != 2:
            raise ValueError(f"{label} must have shape (B, T), got shape {t.shape}")
        if t.shape[0] < 1 or t.shape[1] < 1:
            raise ValueError(f"{label} must be non-empty, got shape {t.shape}")
        if t.shape[1] > self.cfg.max_len:
            raise ValueError(
                f"{label} has length T={t.shape[1]}, longer than max_len={self.cfg.max_len}"
            )
        lo, hi = int(t.min()), int(t.max())
        if lo < 0 or hi >= self.cfg.vocab_size:
            raise ValueError(
                f"{label} must lie in [0, {self.cfg.vocab_size}); found values in [{lo}, {hi}]"
            )
        return t.astype(np.intp, copy=False)

    def _check_targets(self, targets: Any, tokens: np.ndarray) -> np.ndarray:
        cfg = self.cfg
        if cfg.loss == "mse":
            y = np.asarray(targets)
            shape = (*tokens.shape, cfg.vocab_size)
            if y.dtype.kind != "f":
                raise TypeError(f"targets for loss='mse' must be float, got dtype {y.dtype}")
            if y.shape != shape:
                raise ValueError(
                    f"targets for loss='mse' must have shape {shape}, got {y.shape}"
                )
            if not np.all(np.isfinite(y)):
                raise ValueError("targets for loss='mse' contain NaN or Inf")
            return y.astype(self.dtype, copy=False)
        t = self._check_tokens(targets, "targets")
        if t.shape != tokens.shape:
            raise ValueError(f"targets must have the shape of tokens {tokens.shape}, got {t.shape}")
        return t

    # -- forward / backward ----------------------------------------------------------
    def _forward(self, tokens: np.ndarray, keep: bool) -> tuple[np.ndarray, ModelCache | None]:
        with np.errstate(all="ignore"):  # non-finite values are found and named below
            out = self._forward_unchecked(tokens, keep)
        if self.cfg.check_finite and not all_finite(out[0]):
            raise locate_forward(lambda probe: self._forward_unchecked(tokens, False, probe))
        return out

    def _forward_unchecked(
        self, tokens: np.ndarray, keep: bool, probe: Probe | None = None
    ) -> tuple[np.ndarray, ModelCache | None]:
        """The forward; ``probe`` (the non-finite locator's) sees each parameter before
        its stage and every intermediate, in order."""
        cfg = self.cfg
        p = self.params

        def look(layer: str, op: str, value: np.ndarray) -> None:
            if probe is not None:
                probe(layer, op, value)

        def look_params(*names: str) -> None:
            if probe is None:
                return
            for name in names:
                look(name, "parameter", p[name])

        look_params("tok_emb", "pos_emb")
        x, emb_c = embedding_forward(tokens, p["tok_emb"], p["pos_emb"])
        look("embedding", "token + position lookup", x)
        inputs: list[np.ndarray] = []
        blocks: list[BlockCache] = []
        for i in range(cfg.n_layers):
            if keep and cfg.recompute:
                inputs.append(x)
            look_params(*(f"blocks.{i}.{n}" for n in BLOCK_PARAMS))
            x, bc = block_forward(
                x, self._block_params(p, i), n_heads=cfg.n_heads, causal=cfg.causal,
                activation=cfg.activation, norm=cfg.norm, probe=probe, name=f"blocks.{i}",
            )
            if keep and not cfg.recompute:
                blocks.append(bc)
        ln_c = None
        if cfg.norm == "pre":
            look_params("ln_f.g", "ln_f.b")
            x, ln_c = layernorm_forward(x, p["ln_f.g"], p["ln_f.b"])
            look("ln_f", "final LayerNorm", x)
        head_c = None
        if cfg.loss != "embedding_mse":
            look_params("head.W", "head.b")
            x, head_c = linear_forward(x, p["head.W"], p["head.b"])
            look("head", "output projection", x)
        if not keep:
            return x, None
        return x, ModelCache(emb_c, inputs, blocks, ln_c, head_c, dict(p))

    def _forward_train(self, tokens: np.ndarray) -> tuple[np.ndarray, ModelCache]:
        out, cache = self._forward(tokens, keep=True)
        if cache is None:  # pragma: no cover - keep=True always builds one
            raise RuntimeError("internal error: no cache built")
        return out, cache

    def forward(self, tokens: Any) -> np.ndarray:
        """Inference forward; keeps no cache.

        Parameters
        ----------
        tokens : array_like of int, shape (B, T)

        Returns
        -------
        ndarray, shape (B, T, V)
            Logits (the hidden state, shape (B, T, C), for ``loss="embedding_mse"``).
        """
        out, _ = self._forward(self._check_tokens(tokens), keep=False)
        return out

    def forward_train(self, tokens: Any) -> tuple[np.ndarray, ModelCache]:
        """Training forward: the output and the cache :meth:`backward` needs."""
        return self._forward_train(self._check_tokens(tokens))

    def backward(self, dout: Any, cache: ModelCache) -> dict[str, np.ndarray]:
        """Gradients of every parameter given the gradient of the output.

        Parameters
        ----------
        dout : ndarray, shape of the output of :meth:`forward_train`
        cache : ModelCache

        Returns
        -------
        dict of str to ndarray
            The keys and shapes of :attr:`params`.
        """
        if not isinstance(cache, ModelCache):
            raise TypeError("cache must be the ModelCache returned by forward_train")
        cfg = self.cfg
        d = np.asarray(dout)
        expected = (*cache.emb.tokens.shape, cfg.d_model if cache.head is None else cfg.vocab_size)
        if d.shape != expected:
            raise ValueError(f"dout must have shape {expected}, got {d.shape}")
        d = d.astype(self.dtype, copy=False)
        check = cfg.check_finite
        if check and not all_finite(d):
            raise NonFiniteValueError("dout", "gradient of the output", "backward")
        with np.errstate(all="ignore"):
            g = self._backward_unchecked(d, cache)
        if check:
            self._check_backward(g)
        return g

    def _check_backward(self, g: dict[str, np.ndarray]) -> None:
        """Name the first parameter gradient, in backward order, that is not finite."""
        order: list[str] = [k for k in ("head.W", "head.b", "ln_f.g", "ln_f.b") if k in g]
        for i in reversed(range(self.cfg.n_layers)):
            order += [f"blocks.{i}.{n}" for n in reversed(BLOCK_PARAMS)]
        order += ["pos_emb", "tok_emb"]
        for k in order:
            if not all_finite(g[k]):
                layer = k.rsplit(".", 1)[0] if k.startswith("blocks.") else k
                raise NonFiniteValueError(layer, f"gradient of {k}", "backward")

    def _backward_unchecked(self, d: np.ndarray, cache: ModelCache) -> dict[str, np.ndarray]:
        cfg = self.cfg
        p = cache.params
        g: dict[str, np.ndarray] = {}
        if cache.head is not None:
            # out = x W + b
            d, g["head.W"], g["head.b"] = linear_backward(d, cache.head)
        if cache.ln_f is not None:
            # x = LN_f(h)
            d, g["ln_f.g"], g["ln_f.b"] = layernorm_backward(d, cache.ln_f)
        for i in reversed(range(cfg.n_layers)):
            if cfg.recompute:
                _, bc = block_forward(
                    cache.block_inputs[i], self._block_params(p, i), n_heads=cfg.n_heads,
                    causal=cfg.causal, activation=cfg.activation, norm=cfg.norm,
                )
            else:
                bc = cache.blocks[i]
            d, gb = block_backward(d, bc)
            g.update({f"blocks.{i}.{k}": v for k, v in gb.items()})
        # x = E[tokens] + P[:T]
        g["tok_emb"], g["pos_emb"] = embedding_backward(d, cache.emb)
        return {k: g[k] for k in self.params}

    # -- losses ----------------------------------------------------------------------
    def _loss_fwd(self, out: np.ndarray, targets: np.ndarray) -> tuple[float, Any]:
        c: Any
        with np.errstate(all="ignore"):
            if self.cfg.loss == "cross_entropy":
                loss, c = cross_entropy_forward(out, targets)
            elif self.cfg.loss == "mse":
                loss, c = mse_forward(out, targets)
            else:
                loss, c = mse_forward(out, self.params["tok_emb"][targets])
        if self.cfg.check_finite and not np.isfinite(loss):
            raise NonFiniteValueError("loss", f"{self.cfg.loss} ({loss})", "forward")
        return loss, c

    def loss(self, tokens: Any, targets: Any) -> float:
        """The loss of a batch (no cache kept)."""
        t = self._check_tokens(tokens)
        y = self._check_targets(targets, t)
        out, _ = self._forward(t, keep=False)
        return self._loss_fwd(out, y)[0]

    def loss_and_grads(self, tokens: Any, targets: Any) -> tuple[float, dict[str, np.ndarray]]:
        """The loss and the gradient of every parameter.

        Returns
        -------
        loss : float
        grads : dict of str to ndarray
            Same keys and shapes as :attr:`params`.
        """
        t = self._check_tokens(tokens)
        y = self._check_targets(targets, t)
        out, cache = self._forward_train(t)
        loss, lc = self._loss_fwd(out, y)
        if self.cfg.loss == "cross_entropy":
            dout = cross_entropy_backward(1.0, lc)
            return loss, self.backward(dout, cache)
        dout, dtarget = mse_backward(1.0, lc)
        grads = self.backward(dout, cache)
        if self.cfg.loss == "embedding_mse":
            # the target side: mse(h, E[targets]) also depends on E
            np.add.at(grads["tok_emb"], y.reshape(-1), dtarget.reshape(-1, self.cfg.d_model))
        return loss, grads
