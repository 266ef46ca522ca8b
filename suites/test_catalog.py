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
        # a hint, when given, names the bug's class: a wrong hint is worse than none
        if caught.hint:
            assert case.hint_class and case.hint_class in caught.hint, (
                f"misleading hint for {case.name} (seed={seed}): {caught.hint!r}")


def test_catalog_is_complete():
    names = {c.name for c in CASES}
    assert len(names) == len(CASES) >= 18


@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_hints_name_the_class_of_most_bugs(dtype):
    """At least 80% of the catalog's bugs get a hint naming their class at every seed."""
    from gradcheck.verify import catalog_rows

    rows = catalog_rows(dtype, 5)
    verdicts = {r["bug"]: r["hint names the class"] for r in rows}
    named = [b for b, v in verdicts.items() if v == "named"]
    assert "misleading" not in verdicts.values(), verdicts
    assert len(named) >= 0.8 * len(rows), verdicts
