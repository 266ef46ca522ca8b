"""The reference model's tests generated from its subject, as a user's would be."""

import json
from pathlib import Path

import numpy as np
import pytest

import gradcheck
from gradcheck.subject import Subject
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


# -- criteria 10-12 over the subject's own code ------------------------------------------------
USER_MODULE = '''
import json

import numpy as np
import pytest
from gradcheck import LayerCase, Subject


class Scale:
    def forward(self, x):
        assert x.ndim == 2, "x must be (B, C)"
        self.x = x
        return 2 * x

    def backward(self, dout):
        return 2 * dout


CASES = [LayerCase("scale", inputs=lambda rng, dt: [rng.standard_normal((2, 3)).astype(dt)],
                   layer=lambda rng, dt: Scale())]
SUBJECT = Subject(name="user", layers=CASES)
STRICT = Subject(name="user, assert flagged", layers=CASES, security_ignore=())
WITH_EXTRA = Subject(name="user and its extra folder", layers=CASES, code=("mine.py", "extra"))
'''
UNRELATED = "import pickle\n\n\ndef load(b):\n    return pickle.loads(b)\n"


@pytest.fixture
def user_subjects(tmp_path, monkeypatch):
    """A user's module in a folder that also holds unrelated code with findings."""
    (tmp_path / "mine.py").write_text(USER_MODULE)
    (tmp_path / "extra").mkdir()
    (tmp_path / "extra" / "junk.py").write_text(UNRELATED)
    (tmp_path / "other.py").write_text(UNRELATED)
    monkeypatch.syspath_prepend(str(tmp_path))
    import importlib

    return importlib.import_module("mine"), tmp_path


def _criteria(subject, spec, reports):
    from gradcheck.report._criteria import _quality_criteria

    return {c.id: c.to_dict() for c in _quality_criteria(subject, reports, spec or subject)}


def test_security_scan_looks_at_the_subject_module_alone(user_subjects, tmp_path, monkeypatch):
    mine, folder = user_subjects
    monkeypatch.setenv("PATH", "")  # ruff is found in this interpreter's environment
    crit = _criteria(mine.SUBJECT, "mine:SUBJECT", tmp_path)
    assert crit[11]["status"] == "met", crit[11]  # the assert (S101) is ignored by default
    assert crit[11]["figure"].startswith("0 finding(s)") and "mine.py" in crit[11]["how"]
    assert crit[10]["status"] == crit[12]["status"] == "not applicable"
    assert "Subject.test_commands" in crit[10]["figure"]


def test_security_scan_catches_what_the_subject_asks_for(user_subjects, tmp_path):
    mine, folder = user_subjects
    strict = _criteria(mine.STRICT, "mine:STRICT", tmp_path)[11]
    assert strict["status"] == "not met" and "S101" in strict["figure"], strict
    extra = _criteria(mine.WITH_EXTRA, None, tmp_path)[11]  # found without its spec too
    assert extra["status"] == "not met" and "S301" in extra["figure"], extra
    assert "junk.py" in extra["figure"] and "other.py" not in extra["figure"]


def test_coverage_counts_the_declared_code_only(user_subjects, tmp_path):
    from gradcheck import Subject
    from gradcheck.report._testrun import read_coverage

    _mine, folder = user_subjects
    data = {"files": {
        "mine.py": {"summary": {"covered_lines": 9, "num_statements": 10}},
        "extra/junk.py": {"summary": {"covered_lines": 0, "num_statements": 3}},
        "other.py": {"summary": {"covered_lines": 0, "num_statements": 3}}}}
    (tmp_path / "coverage.json").write_text(json.dumps(data))
    cov = read_coverage(tmp_path / "coverage.json", [folder / "mine.py"], folder)
    assert cov == {"paths": {"mine.py": 90.0}, "unmeasured": []}
    subject = Subject(name="run", test_commands=[["{python}", "-m", "pytest"]],
                      code=(str(folder / "mine.py"), str(folder / "extra")), test_dir=str(folder))
    crit = _criteria(subject, None, tmp_path)[10]
    assert crit["status"] == "not met" and crit["figure"] == "extra 0.0%, mine.py 90.0%", crit


def test_reference_test_commands_are_the_readme_command():
    import shlex
    import sys
    from pathlib import Path

    from gradcheck_model.subject import REFERENCE

    from gradcheck.report._testrun import command_dir, subject_code, test_commands

    code, why = subject_code(REFERENCE, "gradcheck_model.subject:REFERENCE")
    assert not why and [p.name for p in code] == ["model", "gradcheck"]
    root = command_dir(REFERENCE)
    readme = (root / "README.md").read_text().splitlines()
    line = next(ln for ln in readme if ln.startswith("pip install -e") and "--cov=" in ln)
    parts = line.split(" && ")[1:]
    # the test commands, then the report that reads their results (with torch installed)
    assert parts[-1] == "gradcheck report" and line.startswith("pip install -e '.[test,compare]'")
    given = [shlex.split(part) for part in parts[:-1]]
    ours = test_commands(REFERENCE, Path("reports"), code, root)
    assert all(cmd[:3] == [sys.executable, "-m", "pytest"] for cmd in ours)
    assert [["pytest", *cmd[3:]] for cmd in ours] == given


def test_subject_fields_are_validated():
    from gradcheck import Subject

    with pytest.raises(TypeError, match="Subject.code must be a list or tuple of strings"):
        Subject(name="x", code="mine.py")
    with pytest.raises(TypeError, match="Subject.test_commands must be a non-empty sequence"):
        Subject(name="x", test_commands="pytest")
    with pytest.raises(TypeError, match=r"Subject.test_commands\[0\] is empty"):
        Subject(name="x", test_commands=[[]])


# -- element-wise cases: f(x) and f.gradient(x) declared directly ---------------------------


class _Sigmoid:
    def __call__(self, x):
        return 1 / (1 + np.exp(-x))

    def gradient(self, x):
        return self(x) * (1 - self(x))


class _SoftmaxAsElementwise:
    """A from-scratch softmax whose gradient is p * (1 - p): not element-wise at all."""

    def __call__(self, x):
        e = np.exp(x - x.max(axis=-1, keepdims=True))
        return e / e.sum(axis=-1, keepdims=True)

    def gradient(self, x):
        p = self(x)
        return p * (1 - p)


def _square_loss_gradient(y, p):
    return -(y - p)


def _elementwise_subject() -> Subject:
    def x(rng, dt):
        return [rng.standard_normal((3, 4)).astype(dt)]

    def pair(rng, dt):
        return [rng.standard_normal((3, 4)).astype(dt), rng.standard_normal((3, 4)).astype(dt)]

    return Subject(name="element-wise", layers=[
        gradcheck.ElementwiseCase("sigmoid", x, f=_Sigmoid()),
        gradcheck.ElementwiseCase("square loss", pair, f=lambda y, p: 0.5 * (y - p) ** 2,
                                  df=_square_loss_gradient, wrt=1),
        gradcheck.ElementwiseCase("softmax", x, f=_SoftmaxAsElementwise(),
                                  dtypes=("float64",)),
    ])


def test_elementwise_cases_run_in_the_report_and_the_generated_tests():
    """The report's task and the generated tests check f against f.gradient: a correct
    sigmoid and loss pass (wrt=1: the prediction), a softmax declared element-wise
    fails; NaN/Inf fuzzing gives a named status."""
    from _pytest.outcomes import Failed

    from gradcheck import subject_tests
    from gradcheck.report.verify import layer_task

    subject = _elementwise_subject()
    for k, dtype in ((0, "float64"), (0, "float32"), (1, "float64")):
        res = layer_task(subject, k, dtype, 0)
        assert res.passed and res.kind == "elementwise", res.report()
    res = layer_task(subject, 2, "float64", 0)
    assert not res.passed and res.status == "mismatch"
    subject_tests.test_layer_gradient((subject.layers[0], "float32"))
    subject_tests.test_layer_fuzz((subject.layers[1], "float64"))
    with pytest.raises(Failed, match="softmax"):
        subject_tests.test_layer_gradient((subject.layers[2], "float64"))


def test_elementwise_case_declarations_are_validated():
    def x(rng, dt):
        return [np.ones(3, dtype=dt)]

    with pytest.raises(TypeError, match="'relu': give df= .*float has no gradient method"):
        gradcheck.ElementwiseCase("relu", x, f=float)
    with pytest.raises(TypeError, match="give f= \\(and df=\\) by keyword, not fwd"):
        gradcheck.ElementwiseCase("relu", x, _Sigmoid())
    with pytest.raises(TypeError, match="wrt must be the index of one input, got 'y'"):
        gradcheck.ElementwiseCase("loss", x, f=_Sigmoid(), wrt="y")
    case = gradcheck.ElementwiseCase("sigmoid", x, f=_Sigmoid())
    assert isinstance(case, gradcheck.LayerCase) and case.wrt == 0
    assert "ElementwiseCase" in gradcheck.__all__


# -- the subject declares, the library renders ------------------------------------------------
def _budget(name, criterion, figure, threshold=2.0, kind="ratio"):
    from gradcheck.report.budgets import BudgetResult

    return BudgetResult(name, criterion, name, "c", "float64", figure, threshold, 0.0,
                        figure <= threshold, kind=kind)


def test_budget_criteria_follow_the_subject_not_the_reference_names():
    from gradcheck.report._criteria import _budget_criteria

    results = [_budget("my_backward", 6, 1.5), _budget("my_memory", 7, 3.0, kind="memory")]
    subject = Subject(name="budgets, no table", budgets=lambda level: results)
    crit = {c.id: c for c in _budget_criteria(subject, results, subject)}
    assert crit[6].status == "met" and "my_backward" in crit[6].figure
    assert crit[7].status == "not met" and "my_memory" in crit[7].figure
    assert crit[5].status == "not applicable"
    assert crit[5].figure == "not measured by the subject's budgets"
    none = _budget_criteria(Subject(name="no budgets"), [], "x")
    assert {c.status for c in none} == {"not applicable"}
    assert {c.figure for c in none} == {"no budgets declared"}


def test_budget_table_is_the_subjects_and_names_what_it_left_unmeasured(tmp_path):
    from gradcheck.report._criteria import _budget_criteria

    table = tmp_path / "mine.toml"
    table.write_text('[my_backward]\ncriterion = 6\ntitle = "b / f"\nthreshold = 2.0\n'
                     '[my_leaks]\ncriterion = 9\ntitle = "late / early"\nthreshold = 1.01\n')
    # a result whose own criterion says 6 but that the table does not list: not counted
    results = [_budget("my_backward", 6, 1.5), _budget("stray", 6, 9.0)]
    subject = Subject(name="t", budgets=lambda level: results, budget_table=str(table))
    crit = {c.id: c for c in _budget_criteria(subject, results, subject)}
    assert crit[6].status == "met" and "stray" not in crit[6].figure
    assert crit[9].status == "not applicable" and "my_leaks" in crit[9].figure
    table.write_text("[my_backward]\ncriterion = 6\n")
    bad = {c.id: c for c in _budget_criteria(subject, results, subject)}
    assert bad[6].status == "not met" and "[my_backward] needs an integer criterion" \
        in bad[6].figure and str(table) in bad[6].figure


def test_a_subject_without_snapshot_dir_is_never_compared_with_another_subjects():
    from gradcheck.report.verify import snapshot_task

    subject = Subject(name="snap", snapshot_cases={"c": lambda: ({}, {})})
    ok, section = snapshot_task(subject, None)
    assert ok and "declares no snapshot_dir" in section["text"]
    assert "reference" not in section["text"]


def test_flow_criterion_names_a_parameter_once_and_says_no_scan_was_declared():
    """A dead parameter flagged in the float32 check and in its float64 twin is named
    once, and a subject with no flow scan is not said to have 0 zero gradients."""
    from types import SimpleNamespace as NS

    from gradcheck.report._criteria import _flow_criterion

    hint = "no gradient flows to this parameter (zero or missing), numerically it is not"
    models = [NS(name="m [float32]", inputs=[NS(name="fc2.b", hint=hint),
                                              NS(name="fc2.b (float64 twin)", hint=hint),
                                              NS(name="fc1.W", hint="")]),
              NS(name="m [float64]", inputs=[NS(name="fc2.b", hint=hint)])]
    crit = _flow_criterion(Subject(name="no flow scan"), models, [])
    assert crit.status == "not met"
    assert crit.figure == ("no flow scan declared (Subject.flow); check_model flow audit "
                           "flagged fc2.b (in 2 model check(s))"), crit.figure
    clean = _flow_criterion(Subject(name="scan", flow=lambda seed: []), models[:0], [])
    assert clean.status == "met"
    assert clean.figure == ("0 parameter(s) with an all-zero gradient; check_model flow "
                            "audit clean")


def test_the_library_holds_no_name_of_the_reference_model():
    """No budget name of the reference model's table, nor its folders, in gradcheck/."""
    from gradcheck_model.bench.measure import load_table

    root = Path(__file__).resolve().parent.parent
    names = [*load_table(), "snapshots/reference", "model/", "memory_model",
             "gradcheck_model.subject", "REFERENCE"]
    found = [(p.name, n) for p in (root / "gradcheck").rglob("*")
             if p.suffix in (".py", ".html", ".toml") for n in names if n in p.read_text()]
    assert not found, found


def test_default_subject_is_the_installed_entry_point(monkeypatch):
    """The default subject is declared by the distribution (pyproject's entry point);
    with none installed, a command without --subject says so in one line."""
    import gradcheck.subject as subject_module

    assert subject_module.DEFAULT_SUBJECT == subject_module._installed_default()
    assert subject_module.DEFAULT_SUBJECT == "gradcheck_model.subject:REFERENCE"
    with pytest.raises(subject_module.SubjectError, match="no default subject installed"):
        subject_module.load_subject("")


def test_subject_paths_must_be_strings():
    with pytest.raises(TypeError, match="Subject.snapshot_dir must be a string"):
        Subject(name="x", snapshot_dir=Path("snaps"))
    with pytest.raises(TypeError, match="Subject.budget_sections must hold BudgetSection"):
        Subject(name="x", budget_sections=[{"id": "s"}])


BUDGETED_MODULE = '''
from gradcheck.report.budgets import BudgetResult
from gradcheck.subject import Subject


def budgets(level):
    return [BudgetResult("b_over_f", 6, "b / f", "c", "float64", 1.2, 2.0, 0.0, True)]


SUBJECT = Subject(name="budgeted", budgets=budgets, budget_table="tables/mine.toml",
                  snapshot_cases={"c": lambda: ({}, {})}, snapshot_dir="snaps")
'''


def test_relative_budget_table_and_snapshot_dir_are_from_the_module_folder(tmp_path,
                                                                          monkeypatch):
    import importlib

    from gradcheck.report._criteria import _budget_criteria
    from gradcheck.report.verify import snapshot_task

    (tmp_path / "tables").mkdir()
    (tmp_path / "tables" / "mine.toml").write_text(
        '[b_over_f]\ncriterion = 6\ntitle = "b / f"\nthreshold = 2.0\n')
    (tmp_path / "budgeted_mod.py").write_text(BUDGETED_MODULE)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.chdir(tmp_path.parent)  # not the module's folder
    subject = importlib.import_module("budgeted_mod").SUBJECT
    crit = {c.id: c for c in _budget_criteria(subject, subject.budgets("quick"),
                                              "budgeted_mod:SUBJECT")}
    assert crit[6].status == "met" and "b_over_f" in crit[6].figure, crit[6]
    ok, section = snapshot_task("budgeted_mod:SUBJECT", None)
    assert ok and f"none at {tmp_path / 'snaps'}" in section["text"], section


class _DeadBias:
    """loss = sum(w * x) + sum(b * b), whose backward forgets b (a zero gradient)."""

    def __init__(self, dtype: str) -> None:
        rng = np.random.default_rng(0)
        self.params = {"w": rng.standard_normal(3).astype(dtype),
                       "b": rng.standard_normal(2).astype(dtype)}

    def loss(self, x):
        p = self.params
        return float(np.sum(p["w"] * x) + np.sum(p["b"] * p["b"]))

    def loss_and_grads(self, x):
        w = self.params["w"]
        return self.loss(x), {"w": x.astype(w.dtype), "b": np.zeros_like(self.params["b"])}


def test_flow_criterion_of_a_real_dead_gradient_in_both_dtypes():
    """check_model flags b in float64 and, through the float64 twin, in float32: the
    criterion names it once, and does not claim a flow scan the subject never declared."""
    from gradcheck.report._criteria import _flow_criterion

    subject = Subject(name="dead", model=_DeadBias,
                      batch=lambda m, rng: (rng.standard_normal(3),))
    results = [case.check(0) for case in subject.models("quick")]
    assert not any(r.passed for r in results)
    crit = _flow_criterion(subject, results, [])
    assert crit.status == "not met"
    assert crit.figure == ("no flow scan declared (Subject.flow); check_model flow audit "
                           "flagged b (in 2 model check(s))"), crit.figure


def test_without_torch_the_yardsticks_are_left_out_and_the_report_says_how_to_add_them(
        monkeypatch):
    """torch hidden (as where the [compare] extra is not installed): no torch budget is
    measured, nothing raises, and the speed table says how to enable the yardstick."""
    import sys

    from gradcheck_model.bench import measure
    from gradcheck_model.bench.speed import torch_available
    from gradcheck_model.subject import BUDGET_SECTIONS

    monkeypatch.setitem(sys.modules, "torch", None)  # import torch now fails
    assert not torch_available()
    table = measure.load_table()
    assert measure.measure_speed_vs_torch("float32", pairs=3, table=table, threads=1) is None
    rows = measure.measure_checker_modes(table, with_torch=True, full=False)
    assert rows and not [r.name for r in rows if "torch" in r.name]
    speed = next(s for s in BUDGET_SECTIONS if s.id == "speed")
    assert speed.empty is not None
    assert speed.empty() == ("not measured (torch is not installed: "
                             "pip install -e '.[compare]').")
