"""Tests generated from a subject: gradients, properties and NaN/Inf fuzzing of each case.

The pytest plugin parametrizes these with the configured subject's cases, with readable
ids (``test_layer_gradient[attention(causal=True)-float32]``). Configure the subject with
``--gradcheck-subject MODULE:NAME``, the ini option ``gradcheck_subject``, or a
``gradcheck_subject`` attribute in a ``conftest.py`` (a Subject or ``"MODULE:NAME"``);
then either pass the option (the plugin collects this module) or import the tests into a
test file of yours::

    from gradcheck.subject_tests import *  # noqa: F403
"""

from __future__ import annotations

import pytest
from hypothesis import Phase, given, settings
from hypothesis import strategies as st

from .fuzz import fuzz_layer_case, nothing_to_fuzz
from .subject import LayerCase, ModelCase

__all__ = ["test_layer_fuzz", "test_layer_gradient", "test_layer_gradient_at_drawn_points",
           "test_model_gradient"]


def test_layer_gradient(gradcheck_layer_case: tuple[LayerCase, str]) -> None:
    """The layer's backward agrees with finite differences (seed 0)."""
    case, dtype = gradcheck_layer_case
    res = case.check(dtype, seed=0)
    _require(res.passed, res.report())


# No shrinking: a seed whose check fails is as useful as any smaller one, and shrinking
# would rerun a whole failing check per step.
@settings(max_examples=3, deadline=None, derandomize=True,
          phases=(Phase.explicit, Phase.reuse, Phase.generate))
@given(seed=st.integers(1, 2**16))
def test_layer_gradient_at_drawn_points(gradcheck_layer_case_float64: LayerCase,
                                        seed: int) -> None:
    """The same at inputs drawn from other seeds, in float64 (a failing seed is reported
    as drawn, not shrunk). float32 is checked at the fixed seed only: with ReLU-like
    kinks, a float32 point can have several kinks within every usable step (a known
    limit, see the README)."""
    res = gradcheck_layer_case_float64.check("float64", seed=seed)
    _require(res.passed, res.report())


def test_layer_fuzz(gradcheck_layer_case: tuple[LayerCase, str]) -> None:
    """NaN and Inf in an input give a named status, never a crash or a pass."""
    case, dtype = gradcheck_layer_case
    rows = fuzz_layer_case(case, dtype, seed=0)
    if not rows:
        pytest.skip(nothing_to_fuzz(case, dtype))
    for row in rows:
        _require(row.ok, row.describe())


def test_model_gradient(gradcheck_model_case: ModelCase) -> None:
    """Every parameter of the model gets the gradient finite differences give."""
    res = gradcheck_model_case.check(seed=0)
    _require(res.passed, res.report())


def _require(ok: bool, message: str) -> None:
    """Fail the test with ``message`` (pytest.fail: no bare assert in library code)."""
    __tracebackhide__ = True
    if not ok:
        pytest.fail(message, pytrace=False)
