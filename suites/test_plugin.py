"""The pytest plugin, run in a real pytest through pytester."""

from __future__ import annotations

import json

import numpy  # noqa: F401 - imported once here: pytester's inline runs cannot re-import it
import pytest

pytest_plugins = ["pytester"]

LAYER = """
import numpy as np
import pytest

def fwd(x, W):
    return x @ W, (x, W)

def good(dy, c):
    x, W = c
    return dy @ W.T, x.T @ dy

def bad(dy, c):
    x, W = c
    return dy @ W.T, 2 * (x.T @ dy)

def relu(x):
    return np.maximum(x, 0), x

rng = np.random.default_rng(0)
X, W = rng.standard_normal((3, 3)), rng.standard_normal((3, 3))
"""


@pytest.fixture
def project(pytester):
    pytester.makeini(
        "[pytest]\nfilterwarnings =\n    error\n"
        "    ignore:Benchmarks are automatically disabled:UserWarning\n"
    )
    return pytester


def test_fixture_marker_summary_and_reports(project):
    project.makepyfile(test_user_layers=LAYER + """
@pytest.mark.gradcheck(seed=7, mode="full")
def test_good(gradcheck):
    res = gradcheck.assert_vjp(fwd, good, [X, W])
    assert res.seed == 7 and res.mode == "full"

def test_bad(gradcheck):
    gradcheck.assert_vjp(fwd, bad, [X, W])

def test_kinks(gradcheck):
    x = np.array([1e-9, -1e-9, 0.5, -0.5])
    assert gradcheck.check_vjp(relu, lambda dy, x: (dy * (x > 0),), [x]).passed

def test_plain_call_is_recorded():
    import gradcheck
    gradcheck.check_vjp(fwd, good, [X, W], name="<script>alert(1)</script>")
""")
    result = project.runpytest("--gradcheck-report", "out/r.html", "--gradcheck-json", "out/r.json")
    result.assert_outcomes(passed=3, failed=1)
    result.stdout.fnmatch_lines([
        # the first line: the public name, the hint first, the input as fwd names it
        "E * gradcheck.GradientMismatch: hint: *constant factor of 2* (W mismatch in "
        "*test_bad, seed=0)",
        "*gradient check FAILED [[]mismatch[]]*",
        "*seed=0*",
        "gradcheck: 4 gradient checks ran, 3 passed, 1 failed in failing tests, 0 failed as "
        "their passing test expected (0 broken backward passes caught, 0 NaN/Inf named), "
        "2 kinks skipped",
    ])
    result.stdout.fnmatch_lines([  # pytest's one-line summary keeps the hint
        "FAILED test_user_layers.py::test_bad - gradcheck.GradientMismatch: hint: *"])
    data = json.loads((project.path / "out/r.json").read_text())
    assert data["summary"] == {"checks": 4, "passed": 3, "failed": 1, "kinks": 2,
                               "caught as their tests expected": 0}
    tests = {c["test"].split("::")[-1] for c in data["checks"]}
    assert tests == {"test_good", "test_bad", "test_kinks", "test_plain_call_is_recorded"}
    assert data["schema_version"] == 2 and data["counts"]["checks_failed"] == 1
    assert [(f["input"], f["seed"]) for f in data["failures"]] == [("W", 0)]
    html = (project.path / "out/r.html").read_text()
    assert 'href="r.json"' in html and 'id="gradcheck-data"' not in html  # linked
    assert "<script>alert(1)</script>" not in html
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html


def test_a_bug_a_passing_test_expects_is_caught_not_a_failure_of_the_report(project):
    """A test that asserts a broken backward is caught passes: the published report
    agrees with pytest (PASS, exit 0), counts the check as caught and lists it apart;
    a real failure beside it still makes the report FAIL."""
    project.makepyfile(test_catch=LAYER + """
def test_good(gradcheck):
    gradcheck.assert_vjp(fwd, good, [X, W])

def test_expected_to_catch(gradcheck):
    assert not gradcheck.check_vjp(fwd, bad, [X, W]).passed
""")
    result = project.runpytest("--gradcheck-report", "out/r.html", "--gradcheck-json",
                               "out/r.json")
    result.assert_outcomes(passed=2)
    data = json.loads((project.path / "out/r.json").read_text())
    assert data["verdict"] == "pass" and data["failures"] == []
    assert (data["counts"]["checks_failed"], data["counts"]["checks_caught"]) == (0, 1)
    caught = [c for c in data["checks"] if c.get("expected")]
    assert [c["test"].split("::")[-1] for c in caught] == ["test_expected_to_catch"]
    html = (project.path / "out/r.html").read_text()
    assert 'id="verdict">PASS<' in html and 'id="caught-checks"' in html
    assert 'id="failures"' not in html and "1 caught as their tests expected" in html
    assert " · seed " not in html and "mode: pytest run" in html  # no empty seed
    project.makepyfile(test_real=LAYER + """
def test_bad(gradcheck):
    gradcheck.assert_vjp(fwd, bad, [X, W])
""")
    result = project.runpytest("--gradcheck-json", "out/r2.json")
    result.assert_outcomes(passed=2, failed=1)
    data = json.loads((project.path / "out/r2.json").read_text())
    assert data["verdict"] == "fail"
    assert (data["counts"]["checks_failed"], data["counts"]["checks_caught"]) == (1, 1)
    assert [f["test"].split("::")[-1] for f in data["failures"]] == ["test_bad"]


def test_options_are_registered(project):
    result = project.runpytest("--help")
    result.stdout.fnmatch_lines(["*--gradcheck-report=PATH*", "*--gradcheck-json=PATH*"])
    result = project.runpytest("--markers")
    result.stdout.fnmatch_lines(["*@pytest.mark.gradcheck(**options)*"])


def test_no_summary_without_checks(project):
    project.makepyfile(test_x="def test_x():\n    assert True\n")
    result = project.runpytest()
    result.assert_outcomes(passed=1)
    assert "gradient checks ran" not in result.stdout.str()


def test_works_under_xdist(project):
    project.makepyfile(test_user_layers=LAYER + """
@pytest.mark.parametrize("k", range(6))
def test_many(gradcheck, k):
    gradcheck.assert_vjp(fwd, good, [X, W], seed=k)
""")
    result = project.runpytest_subprocess("-n", "2", "--gradcheck-json", "merged.json")
    result.assert_outcomes(passed=6)
    result.stdout.fnmatch_lines(["gradcheck: 6 gradient checks ran, 6 passed, 0 failed *"])
    data = json.loads((project.path / "merged.json").read_text())
    assert sorted(c["seed"] for c in data["checks"]) == list(range(6))


EXPECTED = LAYER + """
def test_catches_the_broken_one(gradcheck):
    assert not gradcheck.check_vjp(fwd, bad, [X, W]).passed   # expected to fail

@pytest.mark.parametrize("k", range(3))
def test_really_broken(gradcheck, k):
    gradcheck.assert_vjp(fwd, bad, [X, W], seed=k)

def test_good(gradcheck):
    gradcheck.assert_vjp(fwd, good, [X, W])
"""


@pytest.mark.parametrize("xdist", [False, True])
def test_summary_separates_expected_failures_from_failing_tests(project, xdist):
    project.makepyfile(test_user_layers=EXPECTED)
    args = ["-n", "2"] if xdist else []
    result = project.runpytest_subprocess(*args)
    result.assert_outcomes(passed=2, failed=3)
    result.stdout.fnmatch_lines([
        "gradcheck: 5 gradient checks ran, 1 passed, 3 failed in failing tests, 1 failed as "
        "their passing test expected *",
    ])


BLAS_PROBE = """
import os, json
from threadpoolctl import threadpool_info

def test_threads():
    n = [d["num_threads"] for d in threadpool_info() if d["user_api"] == "blas"]
    worker = os.environ.get("PYTEST_XDIST_WORKER", "main")
    with open(f"threads-{worker}.json", "w") as fh:
        json.dump(n, fh)
"""


def test_each_xdist_worker_gets_one_blas_thread(project, monkeypatch):
    monkeypatch.delenv("PYTEST_XDIST_WORKER", raising=False)  # set when this suite uses xdist
    project.makepyfile(test_probe=BLAS_PROBE)
    project.runpytest_subprocess("-n", "2").assert_outcomes(passed=1)
    files = list(project.path.glob("threads-gw*.json"))
    assert files and all(json.loads(f.read_text()) == [1] for f in files)
    # without xdist the threads are left alone unless asked
    project.runpytest_subprocess("--gradcheck-blas-threads", "1").assert_outcomes(passed=1)
    assert json.loads((project.path / "threads-main.json").read_text()) == [1]


USER_SUBJECT = """
import numpy as np
from gradcheck import LayerCase, Subject


class Dense:
    def __init__(self, rng, dt, broken=False):
        self.W = rng.standard_normal((3, 2)).astype(dt)
        self.b = rng.standard_normal(2).astype(dt)
        self.broken = broken

    def forward(self, x):
        assert x.ndim == 2
        self.x = x
        return x @ self.W + self.b

    def backward(self, dout):
        self.dW = self.x.T @ dout
        self.db = dout.sum(0) * (2.0 if self.broken else 1.0)
        return dout @ self.W.T


class Embed:
    def __init__(self, rng, dt):
        self.W = rng.standard_normal((5, 2)).astype(dt)

    def forward(self, tokens):
        self.tokens = tokens
        return self.W[tokens]

    def backward(self, dout):
        self.dW = np.zeros_like(self.W)
        np.add.at(self.dW, self.tokens, dout)


def cases(broken):
    return [LayerCase("dense", inputs=lambda rng, dt: [rng.standard_normal((4, 3)).astype(dt)],
                      layer=lambda rng, dt: Dense(rng, dt, broken)),
            LayerCase("embed", inputs=lambda rng, dt: [rng.integers(0, 5, 4)],
                      layer=lambda rng, dt: Embed(rng, dt))]


SUBJECT = Subject(name="user layers", layers=cases(False))
BROKEN = Subject(name="user layers, broken db", layers=cases(True))
"""


def test_generated_tests_have_clean_ids_and_count_fuzz_apart(project):
    """A correct user subject: ids name the module, the NaN/Inf fuzz checks are not
    counted as broken backward passes, and a case with no float input is skipped with
    the reason (not passed having tested nothing)."""
    project.makepyfile(usersubj=USER_SUBJECT)
    project.syspathinsert()
    listed = project.runpytest_subprocess("--gradcheck-subject", "usersubj:SUBJECT", "--co",
                                          "-q")
    ids = [ln for ln in listed.outlines if "test_" in ln and "::" in ln]
    assert ids and all(ln.startswith("gradcheck/subject_tests.py::test_") for ln in ids), ids
    result = project.runpytest_subprocess("--gradcheck-subject", "usersubj:SUBJECT", "-rs")
    result.assert_outcomes(passed=8, skipped=3)  # and the model test: no model declared
    result.stdout.fnmatch_lines([
        "gradcheck: 10 gradient checks ran, 10 passed, 0 failed in failing tests, 0 failed as "
        "their passing test expected (0 broken backward passes caught, 0 NaN/Inf named), "
        "0 kinks skipped; 6 NaN/Inf fuzz checks, 6 ended with a named status (non-finite or "
        "error), 0 did not",
        "*embed [[]float64[]]: no floating-point array among its inputs, nothing to poison*",
    ])


def test_failing_generated_test_fails_fast_without_shrinking(project):
    """A broken layer fails its drawn-points test at the first drawn seed: one failing
    check and Hypothesis's replay of it, no shrinking through more failing checks, and
    no Hypothesis patch written for gradcheck's own file."""
    project.makepyfile(usersubj=USER_SUBJECT)
    project.syspathinsert()
    result = project.runpytest_subprocess("--gradcheck-subject", "usersubj:BROKEN",
                                          "--gradcheck-json", "out.json")
    result.assert_outcomes(passed=5, failed=3, skipped=3)
    data = json.loads((project.path / "out.json").read_text())
    drawn = [c for c in data["checks"]
             if c["test"].endswith("test_layer_gradient_at_drawn_points[dense]")]
    assert 1 <= len(drawn) <= 2 and not any(c["passed"] for c in drawn), len(drawn)
    assert not (project.path / ".hypothesis" / "patches").exists()
    result.stdout.fnmatch_lines(["* failed in failing tests, 0 failed as their passing test*"])


def test_fixture_options_apply_where_they_apply(project):
    """A marker's budget= reaches check_vjp and is left out of check_model; the same
    option given to the call itself is an error that says where it applies."""
    project.makepyfile(test_opts=LAYER + """
class Quad:
    def __init__(self):
        self.params = {"w": np.array([1.0, 2.0])}
    def loss(self):
        return float((self.params["w"] ** 2).sum())
    def loss_and_grads(self):
        return self.loss(), {"w": 2 * self.params["w"]}

@pytest.mark.gradcheck(budget=1, full_threshold=0)
def test_marker(gradcheck):
    assert gradcheck.check_vjp(fwd, good, [X, W]).inputs[0].mode != "full"
    assert gradcheck.check_model(Quad()).passed

def test_call(gradcheck):
    with pytest.raises(TypeError, match="check_model: option budget applies to check_vjp"):
        gradcheck.check_model(Quad(), budget=10)
    with pytest.raises(TypeError, match="check_layer: option full_threshold applies to "
                                        "check_model only"):
        gradcheck.check_layer(object(), X, full_threshold=10)

def test_assert_loss(gradcheck):
    gradcheck.assert_loss(lambda s: ((s * s).sum(), 2 * s), X)
""")
    # in a subprocess: the checks import NumPy submodules that an inline run could not
    # import a second time in this process
    project.runpytest_subprocess().assert_outcomes(passed=3)


def test_recorder_lives_in_a_context_not_in_a_module_global():
    """Results go to the recorder of the current context only; a nested one (as a
    pytester session inside a test) restores the outer one when it ends."""
    import numpy as np

    import gradcheck
    from gradcheck.check._recording import purpose, recording_to

    outer: list[tuple[str, str]] = []
    inner: list[tuple[str, str]] = []
    x = [np.ones(2)]

    def check(label: str) -> None:
        gradcheck.check_vjp(lambda a: (a * a, a), lambda dy, a: (2 * a * dy,), x, name=label)

    check("plugin")  # this test's context: the plugin's recorder, not outer or inner
    with recording_to(lambda r, p: outer.append((r.name, p))):
        check("a")
        with recording_to(lambda r, p: inner.append((r.name, p))), purpose("fuzz"):
            check("b")
        check("c")
    assert outer == [("a", "check"), ("c", "check")] and inner == [("b", "fuzz")]
    with pytest.raises(ValueError, match="purpose must be one of check, fuzz"):
        with purpose("other"):
            pass


def test_the_fixture_check_grad_takes_constants(project):
    project.makepyfile(test_ce="""
import numpy as np

def ce(p, t):
    return -np.sum(t * np.log(p))

def test_it(gradcheck):
    p, t = np.array([0.2, 0.5, 0.3]), np.array([0.0, 1.0, 0.0])
    assert gradcheck.check_grad(ce, lambda p, t: -t / p, p, t).passed
    assert not gradcheck.check_grad(ce, lambda p, t: p - t, p, t).passed
""")
    project.runpytest("-p", "no:cacheprovider").assert_outcomes(passed=1)
