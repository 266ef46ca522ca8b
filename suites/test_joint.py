"""Joint directions over all inputs, whole models, and float32 models against a twin."""

from __future__ import annotations

import numpy as np
import pytest
from gradcheck_model import Config, Transformer
from gradcheck_model.config import PLAN
from gradcheck_model.layernorm import layernorm_backward, layernorm_forward

import gradcheck


@pytest.fixture
def rng():
    return np.random.default_rng(1122)


def ln_inputs(rng, n=64, c=32):
    return [rng.standard_normal((n, c)), 1 + 0.1 * rng.standard_normal(c),
            0.1 * rng.standard_normal(c)]


def gamma_off(dy, cache):
    dx, dg, db = layernorm_backward(dy, cache)
    return dx, dg * (1 + 1e-4), db


def plan_batch(cfg, b=2, t=16, seed=0):
    r = np.random.default_rng(seed)
    return r.integers(0, cfg.vocab_size, (b, t)), r.integers(0, cfg.vocab_size, (b, t))


class OneTensorOff:
    """A model whose gradient of one tensor is off by a relative ``rel`` (in norm)."""

    def __init__(self, m, name, rel, dtypes=("float32", "float64")):
        self.m, self.name, self.rel, self.dtypes = m, name, rel, dtypes
        self.params = m.params

    def loss(self, *b):
        return self.m.loss(*b)

    def loss_and_grads(self, *b):
        loss, g = self.m.loss_and_grads(*b)
        g = dict(g)
        e = np.random.default_rng(5).standard_normal(g[self.name].shape)
        e *= self.rel * np.linalg.norm(g[self.name]) / np.linalg.norm(e)
        g[self.name] = g[self.name] + e.astype(g[self.name].dtype)
        return loss, g


# -- joint directions -----------------------------------------------------------------------
def test_joint_directions_cost_a_few_evaluations_for_all_inputs(rng):
    res = gradcheck.check_vjp(layernorm_forward, layernorm_backward, ln_inputs(rng),
                              mode="directional")
    assert res.passed, res.report()
    assert all(i.joint and i.mode == "directional" for i in res.inputs)
    # two protocol evaluations and two per joint direction, whatever the number of inputs
    assert res.evaluations <= 2 + 2 * 4
    assert all(i.miss_probability <= 1e-6 for i in res.inputs), res.report()


def test_joint_failure_is_localised_to_the_input_and_its_elements(rng):
    res = gradcheck.check_vjp(layernorm_forward, gamma_off, ln_inputs(rng),
                              mode="directional", seed=3)
    assert not res.passed
    assert [i.name for i in res.inputs if not i.passed] == ["gamma"]
    gamma = res.inputs[1]
    assert gamma.localised and gamma.checked >= 32
    assert "too large by a relative 1.0e-04" in gamma.hint, res.report()


def test_without_localisation_a_joint_failure_fails_every_input(rng):
    res = gradcheck.check_vjp(layernorm_forward, gamma_off, ln_inputs(rng),
                              mode="directional", localise=False)
    assert not res.passed and all(i.status == "mismatch" for i in res.inputs)


# -- whole models -----------------------------------------------------------------------------
def test_plan_model_default_check_is_a_few_loss_evaluations():
    m = Transformer(Config(**PLAN))
    res = gradcheck.check_model(m, *plan_batch(m.cfg))
    assert res.passed, res.report()
    assert res.mode == "directional" and all(i.joint for i in res.inputs)
    # loss_and_grads + loss, two per direction (at most 6); more only for zero gradients
    assert res.evaluations <= 2 + 2 * 6
    live = [i for i in res.inputs if i.gradient_norm > 1e-6]
    assert max(i.miss_probability for i in live) <= 1e-6, res.report()


@pytest.mark.parametrize("name", ["blocks.1.attn.bq", "blocks.2.ffn.W2"])
def test_plan_model_names_the_wrong_tensor(name):
    m = Transformer(Config(**PLAN))
    res = gradcheck.check_model(OneTensorOff(m, name, 1e-2), *plan_batch(m.cfg))
    assert not res.passed
    assert [i.name for i in res.inputs if not i.passed] == [name]
    bad = next(i for i in res.inputs if i.name == name)
    assert bad.localised


# -- float32 models and their float64 twin ------------------------------------------------------
def test_float32_model_passes_against_its_twin():
    m = Transformer(Config(**PLAN, dtype="float32"))
    res = gradcheck.check_model(m, *plan_batch(m.cfg), twin=m.astype("float64"))
    assert res.passed, res.report()
    assert res.mode == "twin" and {i.name for i in res.inputs} == set(m.params)
    live = [i for i in res.inputs if i.gradient_norm > 1e-6]
    # the stated sensitivity: a relative error of 1e-4 in any live tensor would show
    assert max(i.detectable_rel_error for i in live) < 1e-4


@pytest.mark.parametrize("name", ["blocks.0.attn.bq", "blocks.1.ffn.W1", "head.b"])
def test_float32_error_of_1e3_in_one_tensor_is_caught(name):
    m = Transformer(Config(**PLAN, dtype="float32"))
    res = gradcheck.check_model(OneTensorOff(m, name, 1e-3), *plan_batch(m.cfg),
                                twin=m.astype("float64"))
    assert not res.passed
    assert [i.name for i in res.inputs if not i.passed] == [name]
    # finite differences of the float32 loss alone do not see it
    alone = gradcheck.check_model(OneTensorOff(m, name, 1e-3), *plan_batch(m.cfg))
    assert alone.passed


def test_a_bug_in_both_dtypes_is_caught_in_the_twin():
    m = Transformer(Config(**PLAN, dtype="float32"))
    twin = OneTensorOff(m.astype("float64"), "blocks.1.ffn.W1", 1e-3)
    res = gradcheck.check_model(OneTensorOff(m, "blocks.1.ffn.W1", 1e-3), *plan_batch(m.cfg),
                                twin=twin)
    assert not res.passed
    assert "blocks.1.ffn.W1 (float64 twin)" in [i.name for i in res.inputs if not i.passed]


def test_twin_argument_errors():
    m = Transformer(Config(**PLAN, dtype="float32"))
    b = plan_batch(m.cfg)
    with pytest.raises(TypeError, match="twin must have 'params'"):
        gradcheck.check_model(m, *b, twin=object())
    with pytest.raises(TypeError, match="the twin must be float64"):
        gradcheck.check_model(m, *b, twin=m.astype("float32"))
    with pytest.raises(TypeError, match="already float64"):
        m64 = m.astype("float64")
        gradcheck.check_model(m64, *b, twin=m64.astype("float64"))
    other = Transformer(Config(**PLAN, dtype="float64", seed=1))
    with pytest.raises(ValueError, match="differs from the model's"):
        gradcheck.check_model(m, *b, twin=other)


def test_plan_model_flags_a_tensor_that_gets_no_gradient():
    m = Transformer(Config(**PLAN))

    class NoHeadBias(OneTensorOff):
        def loss_and_grads(self, *b):
            loss, g = self.m.loss_and_grads(*b)
            return loss, {**g, "head.b": np.zeros_like(g["head.b"])}

    res = gradcheck.check_model(NoHeadBias(m, "head.b", 0.0), *plan_batch(m.cfg))
    assert not res.passed
    bad = [i for i in res.inputs if not i.passed]
    assert [i.name for i in bad] == ["head.b"]
    assert "no gradient flows" in bad[0].hint
    # localised: ten failures confirmed at smaller steps, the rest screened once
    kinds = {w.kind for w in bad[0].worst if w.failed}
    assert "element" in kinds and res.evaluations < 2 * 64 * 4


# -- kinks in a model's parameters --------------------------------------------------------------
class L1Model:
    """``|W - T|`` summed, plus ``b . b``: 5% of ``W`` within 1e-6 of ``T`` (one scalar
    loss, so outputs at kinks cannot be left out: sparser directions are drawn)."""

    def __init__(self, seed, wrong=False):
        rng = np.random.default_rng(seed)
        self.t = rng.standard_normal((100, 100))
        w = rng.standard_normal((100, 100))
        m = rng.random(w.shape) < 0.05
        w[m] = self.t[m] + rng.uniform(-1e-6, 1e-6, int(m.sum()))
        self.params = {"W": w, "b": rng.standard_normal(100)}
        self.wrong = wrong

    def loss(self):
        return float(np.abs(self.params["W"] - self.t).sum() + np.sum(self.params["b"] ** 2))

    def loss_and_grads(self):
        d = self.params["W"] - self.t
        return self.loss(), {"W": d if self.wrong else np.sign(d), "b": 2 * self.params["b"]}


@pytest.mark.parametrize("seed", range(3))
def test_model_with_parameters_at_kinks_catches_a_wrong_gradient(seed):
    res = gradcheck.check_model(L1Model(seed, wrong=True), seed=seed)
    assert res.status == "mismatch", res.report()
    assert [i.name for i in res.inputs if not i.passed] == ["W"]


@pytest.mark.parametrize("seed", range(3))
def test_model_with_parameters_at_kinks_passes_a_correct_gradient(seed):
    res = gradcheck.check_model(L1Model(seed), seed=seed)
    assert res.passed, res.report()
    assert res.coverage == "checked 2/2 tensors"
    w = res.inputs[0]
    assert w.kinks > 0 and "replaced by sparser ones" in w.message, res.report()


class AllAtKinks:
    """``sum(relu(W - T))`` at ``W = T``: every direction meets a kink."""

    def __init__(self):
        self.t = np.random.default_rng(0).standard_normal((50, 50))
        self.params = {"W": self.t.copy()}

    def loss(self):
        return float(np.maximum(self.params["W"] - self.t, 0.0).sum())

    def loss_and_grads(self):
        return self.loss(), {"W": (self.params["W"] > self.t).astype(float)}


def test_model_whose_every_direction_meets_a_kink_is_inconclusive_not_passed():
    res = gradcheck.check_model(AllAtKinks())
    assert not res.passed and res.status == "inconclusive", res.report()
    w = res.inputs[0]
    assert w.status == "inconclusive" and w.checked == 0 and w.kinks > 0
    assert "mode='full'" in res.message and "sat at a kink" in res.message
    assert not w.hint  # not "no gradient flows": nothing was compared
    assert res.coverage == "checked 0/1 tensors"
    assert res.to_dict()["tensors_checked"] == 0 and res.to_dict()["status"] == "inconclusive"
