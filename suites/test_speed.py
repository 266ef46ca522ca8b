"""The PyTorch yardstick: the twin computes the same function, the comparison runs.

PyTorch is an optional extra (``pip install -e '.[compare]'``); without it these tests
are skipped with that reason and the report says "not measured"; in CI (``CI`` set),
where the README's test command installs the extra, a missing torch is an error.
"""

from __future__ import annotations

import importlib.util
import itertools
import os

import numpy as np
import pytest
from gradcheck_model import Config, Transformer

if importlib.util.find_spec("torch") is None and os.environ.get("CI"):
    raise ImportError("torch is not installed in CI (the README's test command installs the "
                      "[compare] extra)")
torch = pytest.importorskip("torch", reason="the [compare] extra (torch 2.13.0) is not installed")

TINY = dict(vocab_size=11, d_model=8, n_heads=2, d_ff=16, n_layers=2, max_len=6)
CASES = list(itertools.product(("gelu", "gelu_tanh", "relu", "tanh"), ("pre", "post"),
                               (True, False)))


@pytest.mark.parametrize(("act", "norm", "causal"), CASES,
                         ids=[f"{a}-{n}-{'causal' if c else 'full'}" for a, n, c in CASES])
def test_twin_gives_the_same_loss_and_gradients(act, norm, causal):
    from gradcheck_model.torch_twin import twin_loss_and_grads

    m = Transformer(Config(**TINY, activation=act, norm=norm, causal=causal, seed=3))
    rng = np.random.default_rng(3)
    tokens, targets = rng.integers(0, 11, (3, 5)), rng.integers(0, 11, (3, 5))
    loss, grads = m.loss_and_grads(tokens, targets)
    t_loss, t_grads = twin_loss_and_grads(m, tokens, targets)
    assert t_loss == pytest.approx(loss, rel=1e-12)
    assert set(t_grads) == set(grads)
    for k, g in grads.items():
        np.testing.assert_allclose(t_grads[k], g, rtol=1e-9, atol=1e-12, err_msg=k)


def test_twin_sees_a_broken_backward(monkeypatch):
    """The agreement above can fail: a dropped residual gradient is visible to it."""
    import gradcheck_model.transformer as tr
    from gradcheck_model.torch_twin import twin_loss_and_grads

    original = tr.block_backward
    monkeypatch.setattr(tr, "block_backward", lambda dy, c: (original(dy, c)[0] - dy,
                                                             original(dy, c)[1]))
    m = Transformer(Config(**TINY, seed=3))
    rng = np.random.default_rng(3)
    tokens, targets = rng.integers(0, 11, (3, 5)), rng.integers(0, 11, (3, 5))
    _, grads = m.loss_and_grads(tokens, targets)
    _, t_grads = twin_loss_and_grads(m, tokens, targets)
    assert not np.allclose(t_grads["tok_emb"], grads["tok_emb"], rtol=1e-6)


def test_side_by_side_comparison_runs():
    from gradcheck_model.bench.speed import compare_with_torch

    small = dict(vocab_size=16, d_model=16, n_heads=2, d_ff=32, n_layers=1, max_len=8)
    res = compare_with_torch("float32", threads=1, pairs=3, batch=2, config=small)
    assert res.ratio > 0 and np.isfinite(res.ratio) and res.se >= 0
    assert res.numpy_step_s > 0 and res.torch_step_s > 0
    assert res.to_dict()["speed_vs_torch"] == pytest.approx(1 / res.ratio)
