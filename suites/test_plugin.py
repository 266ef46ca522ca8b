"""The pytest plugin, run in a real pytest through pytester."""

from __future__ import annotations

import json

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
        "*GradientMismatch: gradient check FAILED [[]mismatch[]]*",
        "*seed=0*",
        "*constant factor of 2*",
        "gradcheck: 4 gradient checks ran, 3 passed, 1 failed in failing tests, 0 failed as "
        "their passing test expected (broken backward passes caught), 2 kinks skipped",
    ])
    data = json.loads((project.path / "out/r.json").read_text())
    assert data["summary"] == {"checks": 4, "passed": 3, "failed": 1, "kinks": 2}
    tests = {c["test"].split("::")[-1] for c in data["checks"]}
    assert tests == {"test_good", "test_bad", "test_kinks", "test_plain_call_is_recorded"}
    html = (project.path / "out/r.html").read_text()
    assert "<script>alert(1)</script>" not in html
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html


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
