"""Every classic bug caught, no correct twin flagged: 20 seeds, float64 and float32."""

from __future__ import annotations

import numpy as np
import pytest

import gradcheck
from gradcheck.catalog import CASES, CASES_FLOAT64_ONLY

SEEDS = range(20)
PARAMS = [
    pytest.param(case, dtype, id=f"{case.name}-{dtype}")
    for dtype in ("float64", "float32")
    for case in CASES + (CASES_FLOAT64_ONLY if dtype == "float64" else [])
]


@pytest.mark.parametrize(("case", "dtype"), PARAMS)
def test_bug_caught_twin_passes(case, dtype):
    for seed in SEEDS:
        fwd, good, bad, inputs = case.make(np.random.default_rng(seed), np.dtype(dtype))
        ok = gradcheck.check_vjp(fwd, good, inputs, seed=seed)
        assert ok.passed, f"false alarm on the correct twin (seed={seed}):\n{ok.report()}"
        caught = gradcheck.check_vjp(fwd, bad, inputs, seed=seed)
        assert not caught.passed, f"{case.name} not caught (seed={seed}):\n{caught.report()}"
        assert caught.status == "mismatch"


def test_catalog_is_complete():
    names = {c.name for c in CASES}
    assert len(names) == len(CASES) >= 18
