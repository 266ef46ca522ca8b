"""The reference model's tests generated from its subject, as a user's would be."""

import numpy as np

import gradcheck
from gradcheck.subject_tests import *  # noqa: F403

# -- messages of failing model inputs ---------------------------------------------------------


class _TwoParams:
    """loss = sum(w * x) + sum(v * v); the gradient of v optionally off by a factor."""

    def __init__(self, factor: float) -> None:
        rng = np.random.default_rng(0)
        self.params = {"w": rng.standard_normal(3), "v": rng.standard_normal(2)}
        self.x = rng.standard_normal(3)
        self.factor = factor

    def loss(self) -> float:
        return float(self.params["w"] @ self.x + self.params["v"] @ self.params["v"])

    def loss_and_grads(self) -> tuple[float, dict[str, np.ndarray]]:
        return self.loss(), {"w": self.x.copy(), "v": self.factor * 2 * self.params["v"]}


def test_failing_model_parameter_has_a_message_naming_its_worst_element():
    res = gradcheck.check_model(_TwoParams(3.0), full_threshold=10)
    by = {r.name: r for r in res.inputs}
    assert not by["v"].passed and by["w"].passed
    assert "mismatch at element (" in by["v"].message
    assert "analytic" in by["v"].message and "tolerance" in by["v"].message
    assert res.to_dict()["inputs"][1]["message"] == by["v"].message
    assert by["w"].message == ""


def test_correct_model_has_no_failure_message():
    res = gradcheck.check_model(_TwoParams(1.0), full_threshold=10)
    assert res.passed and all(r.message == "" for r in res.inputs)
