"""A failing model check explained by a failing layer check of the same subject
(gradcheck/report/_explain.py, issue 31 part 5): the parameters a wrong layer's backward
reaches say so, a model bug of its own is never put on a layer, and the observations
underneath (gradcheck/read/_trace.py) see the user's code only."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from gradcheck.read._trace import inputs_at, user_codes
from gradcheck.report._explain import annotate, explain_task, explaining_layers
from gradcheck.subject import Subject, load_subject

ROOT = Path(__file__).resolve().parent.parent


def _explained(subject: Subject) -> list:
    """Every model result of ``subject`` at the quick level, annotated as the report
    does."""
    layers = [(k, d, c.check(d, 0)) for k, c in enumerate(subject.layers) for d in c.dtypes]
    wrong, passing = explaining_layers(layers)
    out = []
    for k, case in enumerate(subject.models("quick")):
        res = case.check(0)
        bad = [i.name.split(" ")[0] for i in res.inputs if not i.passed]
        annotate(res, explain_task(subject, "quick", k, wrong, passing, bad, 0))
        out.append(res)
    return out


def test_failures_below_a_failing_layer_name_it():
    from suites.explained_subject import TANH

    for res in _explained(TANH):
        hints = {i.name.split(" ")[0]: i.hint for i in res.inputs if not i.passed}
        assert set(hints) == {"W1", "b1"}, hints  # W2, b2 sit above the tanh
        for hint in hints.values():
            # the activation, not the block that wraps it: the most specific check
            assert "explained by the failing layer check tanh [float64] (its inputs " \
                   "depend on this parameter" in hint, hint
            assert "nearest the output" not in hint
        assert any(n.startswith("explained by the failing layer check tanh [float64]: W1")
                   for n in res.notes), res.notes


def test_a_model_bug_of_its_own_is_not_put_on_a_failing_layer():
    from suites.explained_subject import ELSEWHERE

    for res in _explained(ELSEWHERE):
        hints = {i.name.split(" ")[0]: i.hint for i in res.inputs if not i.passed}
        assert set(hints) == {"b2"}, hints
        assert "explained by" not in hints["b2"] and "nearest the output" in hints["b2"]
        assert not any("explained by" in n for n in res.notes)


def test_a_model_running_a_correct_backward_is_not_put_on_the_failing_layer():
    """W1 sits below the failing tanh case, but the model's backward runs the correct
    tanh backward: its own bug (W1's gradient tripled) is not explained."""
    from suites.explained_subject import OWN_BELOW

    for res in _explained(OWN_BELOW):
        hints = {i.name.split(" ")[0]: i.hint for i in res.inputs if not i.passed}
        assert set(hints) == {"W1"}, hints
        assert "explained by" not in hints["W1"], hints


def test_a_layer_wrong_only_in_its_own_parameter_explains_nothing_below():
    """The linear case fails in its bias gradient only (its input gradient is right):
    the model's own bug in W1, which the model's linear receives, is not its doing."""
    from suites.explained_subject import (
        MLP,
        _batch,
        _layers,
        linear_backward_db_doubled,
        tanh_backward,
    )

    subject = Subject(name="linear db doubled; model W1 tripled",
                      layers=_layers(tanh_backward, linear_backward_db_doubled),
                      model=lambda dtype: MLP(dtype, w1_factor=3.0,
                                              linear_bwd=linear_backward_db_doubled),
                      batch=_batch)
    results = _explained(subject)
    for res in results:
        hints = {i.name.split(" ")[0]: i.hint for i in res.inputs if not i.passed}
        assert "W1" in hints and "explained by" not in hints["W1"], hints
        for b in ("b1", "b2"):  # the linear layer's own wrong bias gradients
            assert "explained by the failing layer check linear [float64] (a parameter " \
                   "of that layer)" in hints[b], hints


def test_layer_objects_own_and_below():
    pytest.importorskip("examples.layer_objects")
    for res in _explained(load_subject("examples.layer_objects:BROKEN")):
        hints = {i.name.split(" ")[0]: i.hint for i in res.inputs if not i.passed}
        assert "(a parameter of that layer)" in hints["attn.Wq"], hints
        assert "(its inputs depend on this parameter" in hints["emb.W"], hints
        assert all("SelfAttention [float64]" in h for h in hints.values()), hints


def test_nothing_failing_in_the_layers_leaves_the_hints():
    from suites.explained_subject import MLP, _batch, _layers, tanh_backward

    subject = Subject(name="mlp, model bias doubled", layers=_layers(tanh_backward),
                      model=lambda dtype: MLP(dtype, bias_factor=2.0), batch=_batch)
    for res in _explained(subject):
        assert not res.passed and not any("explained" in i.hint for i in res.inputs)


def test_the_report_explains_the_model_failure(tmp_path):
    out = tmp_path / "v.html"
    proc = subprocess.run(
        [sys.executable, "-m", "gradcheck.cli", "report", "--quick", "--jobs", "1",
         "--no-progress", "--subject", "suites.explained_subject:TANH", "--out", str(out)],
        capture_output=True, text=True, cwd=ROOT, timeout=300, check=False)
    assert proc.returncode == 1, proc.stderr[-2000:]
    data = json.loads(out.with_suffix(".json").read_text())
    model = [f for f in data["failures"] if "model" in f["check"]]
    assert model and all("explained by the failing layer check tanh [float64]" in f["hint"]
                         for f in model), model


# -- the observations ---------------------------------------------------------------------
def _double(x: np.ndarray) -> np.ndarray:
    return 2 * x


class _Scale:
    def __init__(self) -> None:
        self.W = np.ones(3)

    def forward(self, x: np.ndarray) -> np.ndarray:
        return _double(x) * self.W


def test_user_codes_see_the_users_functions_only():
    layer = _Scale()
    codes = user_codes(lambda: np.sum(layer.forward(np.arange(3.0))))
    # the lambda (1), the method it calls (2), the function that calls (3); no NumPy
    assert {c.co_filename for c in codes} == {__file__}
    assert codes[_Scale.forward.__code__] == 2 and codes[_double.__code__] == 3


def test_inputs_at_finds_parameters_held_by_self_and_the_hook_is_put_back():
    layer = _Scale()
    before = sys.getprofile()
    seen = inputs_at(lambda: layer.forward(np.arange(3.0)),
                     {_Scale.forward.__code__, _double.__code__}, {"W": layer.W})
    assert sys.getprofile() is before
    assert [s.code for s in seen] == [_Scale.forward.__code__, _double.__code__]
    assert [k for k, _ in seen[0].inputs] == [0] and seen[1].params == {}
    np.testing.assert_array_equal(seen[0].outputs[0], 2 * np.arange(3.0))


def test_inputs_at_copies_the_inputs_and_the_hook_survives_an_exception():
    layer = _Scale()

    def boom() -> None:
        layer.forward(np.arange(3.0))
        raise ValueError("user code raised")

    before = sys.getprofile()
    with pytest.raises(ValueError, match="user code raised"):
        inputs_at(boom, {_double.__code__}, {"W": layer.W})
    assert sys.getprofile() is before
    seen = inputs_at(lambda: layer.forward(np.arange(3.0)), {_double.__code__},
                     {"W": layer.W})
    assert [s.code for s in seen] == [_double.__code__]
    (pos, arr), = seen[0].inputs
    assert pos == 0 and seen[0].params == {}
    np.testing.assert_array_equal(arr, np.arange(3.0))
    np.testing.assert_array_equal(seen[0].outputs[0], 2 * np.arange(3.0))


def test_a_running_profiler_is_left_alone_and_said():
    import cProfile

    prof = cProfile.Profile()
    prof.enable()
    try:
        with pytest.raises(RuntimeError, match="a profiler .* is running"):
            user_codes(lambda: _double(np.ones(2)))
        running = sys.getprofile()
    finally:
        prof.disable()
    assert running is prof  # still the profiler's hook
