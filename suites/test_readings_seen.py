"""Readings by observation found on held-out code (corpora 35 on): each with a correct
subject that passes and a broken twin that fails with a gradient verdict."""

import numpy as np
import pytest

import gradcheck


def _failing(res: gradcheck.CheckResult) -> list[str]:
    return [i.name for i in res.inputs if not i.passed]


# -- a gradient both stored and returned: the two must agree ----------------------------------
class _StoresAndReturns:
    """``self.dW = ...`` and ``return dX, {"W": ..., "b": ...}``; ``wrong`` says which of
    the two copies of W's gradient is doubled."""

    def __init__(self, wrong: str = ""):
        rng = np.random.default_rng(3)
        self.W, self.b, self.wrong = rng.standard_normal((3, 2)), rng.standard_normal(2), wrong

    def forward(self, x):
        self.x = x
        return x @ self.W + self.b

    def backward(self, dout):
        dw = self.x.T @ dout
        self.dW, self.db = dw * (2 if self.wrong == "stored" else 1), dout.sum(0)
        return dout @ self.W.T, {"W": dw * (2 if self.wrong == "returned" else 1),
                                 "b": dout.sum(0)}


@pytest.mark.parametrize("wrong", ["", "stored", "returned"])
def test_a_gradient_stored_and_returned_must_agree(wrong):
    x = np.random.default_rng(4).standard_normal((4, 3))
    res = gradcheck.check_layer(_StoresAndReturns(wrong), x)
    if wrong:
        assert res.status == "mismatch" and "dW" in res.message, res.report()
    else:
        assert res.passed, res.report()
