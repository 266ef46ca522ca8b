"""One option set: every entry point takes the same options with the same defaults, and
an option that does not apply to an entry point is an error that says where it applies."""

from __future__ import annotations

import inspect

import numpy as np
import pytest

import gradcheck
from gradcheck.check._options import APPLIES_TO, Options, validate_options


def _square(x):
    return x * x, x


def _square_grad(dy, x):
    return (2 * x * dy,)


def _loss(s):
    return float((s * s).sum()), 2 * s


class _Square:
    def forward(self, x):
        self.x = x
        return x * x

    def backward(self, dout):
        return 2 * self.x * dout


@pytest.mark.parametrize("fn", [gradcheck.check_vjp, gradcheck.check_model],
                         ids=lambda f: f.__name__)
def test_every_default_in_a_signature_is_the_one_of_options(fn):
    defaults = Options()
    params = inspect.signature(fn).parameters
    shared = [n for n in params if n in Options.__dataclass_fields__]
    assert "directions" in shared and "seed" in shared
    for name in shared:
        assert params[name].default == getattr(defaults, name), name


def test_directions_default_is_the_same_for_functions_and_models():
    assert inspect.signature(gradcheck.check_vjp).parameters["directions"].default == \
        inspect.signature(gradcheck.check_model).parameters["directions"].default == 6


@pytest.mark.parametrize("call, entry", [
    (lambda: gradcheck.check_layer(_Square(), np.ones(3), full_threshold=5), "check_layer"),
    (lambda: gradcheck.check_loss(_loss, np.ones(3), full_threshold=5), "check_loss"),
])
def test_full_threshold_is_refused_where_it_does_not_apply(call, entry):
    with pytest.raises(TypeError, match=f"{entry}: option full_threshold applies to "
                                        "check_model only"):
        call()


def test_budget_is_refused_by_validation_for_check_model():
    with pytest.raises(TypeError, match="check_model: option budget applies to check_vjp, "
                                        "check_grad, check_layer, check_loss only"):
        validate_options("check_model", budget=10)


def test_options_that_apply_are_accepted_and_validated_alike():
    for entry in ("check_vjp", "check_layer", "check_loss", "check_model"):
        with pytest.raises(ValueError, match="directions must be an integer >= 1"):
            validate_options(entry, directions=0)
        applicable = {k: 3 for k, where in APPLIES_TO.items() if entry in where}
        assert validate_options(entry, seed=1, **applicable).seed == 1
    with pytest.raises(ValueError, match="entry must be one of"):
        validate_options("check_everything")


def test_budget_still_steers_layer_and_loss_checks():
    res = gradcheck.check_layer(_Square(), np.linspace(1, 2, 40), budget=10)
    assert res.passed and res.inputs[0].mode != "full"
    res = gradcheck.check_loss(_loss, np.linspace(1, 2, 40), budget=10)
    assert res.passed and res.inputs[0].mode != "full"
