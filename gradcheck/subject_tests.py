"""Tests generated from a subject: gradients, properties and NaN/Inf fuzzing of each case.

The pytest plugin parametrizes these with the configured subject's cases, with readable
ids (``test_layer_gradient[attention(causal=True)-float32]``). Configure the subject with
``--gradcheck-subject MODULE:NAME``, the ini option ``gradcheck_subject``, or a
``gradcheck_subject`` attribute in a ``conftest.py`` (a Subject or ``"MODULE:NAME"``);
then either pass the option (the plugin collects this module) or import the tests into a
test file of yours::

    from gradcheck.subject_tests import *  # noqa: F403

Each case runs in a process of its own, with the code the report uses
(:func:`gradcheck.run._pool.run_isolated`): a case that raises a declaration error
(``LayerConventionError``), crashes its process (a segfault in C code, ``os._exit``) or
runs past its time limit fails its own test with that status (``error``, ``crashed``
with the signal, ``timeout``) and the other tests still run. The time limit is the
report's default (300 s a case) unless the environment variable
``GRADCHECK_CASE_TIMEOUT`` gives another number of seconds (``inf``: no limit).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import Phase, given, settings
from hypothesis import strategies as st

from .fuzz import fuzz_layer_case, nothing_to_fuzz
from .run._pool import DEFAULT_CASE_TIMEOUT, Fault, run_isolated
from .subject import LayerCase, ModelCase

__all__ = ["test_layer_fuzz", "test_layer_gradient", "test_layer_gradient_at_drawn_points",
           "test_model_gradient"]


def test_layer_gradient(gradcheck_layer_case: tuple[LayerCase, str]) -> None:
    """The layer's backward agrees with finite differences (seed 0)."""
    case, dtype = gradcheck_layer_case
    res = _isolated(f"{case.name} [{dtype}]", case.check, dtype, 0)
    _require(res.passed, res.report())


# No shrinking: a seed whose check fails is as useful as any smaller one, shrinking
# would rerun a whole failing check per step, and a case that hangs would spend its
# time limit again at every seed tried.
@settings(max_examples=3, deadline=None, derandomize=True,
          phases=(Phase.explicit, Phase.reuse, Phase.generate))
@given(seed=st.integers(1, 2**16))
def test_layer_gradient_at_drawn_points(gradcheck_layer_case_float64: LayerCase,
                                        seed: int) -> None:
    """The same at inputs drawn from other seeds, in float64 (a failing seed is reported
    as drawn, not shrunk). float32 is checked at the fixed seed only: with ReLU-like
    kinks, a float32 point can have several kinks within every usable step (a known
    limit, see the README)."""
    case = gradcheck_layer_case_float64
    res = _isolated(f"{case.name} [float64] at seed {seed}", case.check, "float64", seed)
    _require(res.passed, res.report())


def test_layer_fuzz(gradcheck_layer_case: tuple[LayerCase, str]) -> None:
    """NaN and Inf in an input give a named status, never a crash or a pass."""
    case, dtype = gradcheck_layer_case
    rows = _isolated(f"fuzzing {case.name} [{dtype}]", fuzz_layer_case, case, dtype, 0)
    if not rows:
        pytest.skip(nothing_to_fuzz(case, dtype))
    for row in rows:
        _require(row.ok, row.describe())


def test_model_gradient(gradcheck_model_case: ModelCase) -> None:
    """Every parameter of the model gets the gradient finite differences give."""
    res = _isolated(gradcheck_model_case.name, gradcheck_model_case.check, 0)
    _require(res.passed, res.report())


def case_timeout() -> float:
    """Seconds a generated test's case may run: ``GRADCHECK_CASE_TIMEOUT`` or 300
    (``inf``: no limit)."""
    text = os.environ.get("GRADCHECK_CASE_TIMEOUT", "")
    if not text:
        return DEFAULT_CASE_TIMEOUT
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not value > 0:
        raise pytest.UsageError(f"GRADCHECK_CASE_TIMEOUT must be a positive number of "
                                f"seconds, got {text!r}")
    return value


def _isolated(label: str, fn: Callable[..., Any], *args: Any) -> Any:
    """``fn(*args)`` in a process of its own; a fault fails the test with its status."""
    __tracebackhide__ = True
    out = run_isolated(fn, *args, timeout=case_timeout())
    if isinstance(out, Fault):
        pytest.fail(f"{label}: {out.describe()}", pytrace=False)
    return out


def _require(ok: bool, message: str) -> None:
    """Fail the test with ``message`` (pytest.fail: no bare assert in library code)."""
    __tracebackhide__ = True
    if not ok:
        pytest.fail(message, pytrace=False)
