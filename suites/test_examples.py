"""The examples under examples/ as subjects: each correct one passes, each broken one is
flagged with the failure named; the command line takes them with --subject."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from gradcheck.subject import SubjectError, load_subject

ROOT = Path(__file__).resolve().parent.parent


def _c_available() -> None:
    from examples.c_layers import CompilerMissing, compiler

    try:
        compiler()
    except CompilerMissing as exc:
        pytest.skip(str(exc))


def _results(spec: str) -> list:
    subject = load_subject(spec)
    out = [case.check(d, 0) for case in subject.layers for d in case.dtypes]
    return out + [m.check(0) for m in subject.models("quick")]


@pytest.mark.parametrize("module", ["numpy_layers", "layer_objects", "c_layers"])
def test_correct_example_passes(module):
    if module == "c_layers":
        _c_available()
    results = _results(f"examples.{module}:SUBJECT")
    assert results and all(r.passed for r in results), [r.report() for r in results
                                                         if not r.passed]


# untraced: the correct examples run the same code, the catalog the failure paths, and
# tracing a model check of a Python-level model takes six times as long
@pytest.mark.no_cover
@pytest.mark.parametrize(("module", "named"), [
    ("numpy_layers", {"attention [float64]", "attention [float32]"}),
    ("layer_objects", {"SelfAttention [float64]", "SelfAttention [float32]"}),
    ("c_layers", set()),
])
def test_broken_example_is_flagged_and_named(module, named):
    if module == "c_layers":
        _c_available()
    results = _results(f"examples.{module}:BROKEN")
    failed = {r.name for r in results if not r.passed}
    assert named <= failed
    model = [r for r in results if r.kind == "model"]
    assert model and not any(r.passed for r in model)
    # the flow audit names the attention parameters that get no gradient
    flagged = {i.name for r in model for i in r.inputs if "no gradient flows" in i.hint}
    assert any("Wq" in n for n in flagged), flagged


def test_report_on_a_broken_c_example_fails_and_names_it(tmp_path):
    _c_available()
    out = tmp_path / "v.html"
    proc = subprocess.run(
        [sys.executable, "-m", "gradcheck.cli", "report", "--quick", "--jobs", "1",
         "--no-progress", "--subject", "examples.c_layers:BROKEN", "--out", str(out)],
        capture_output=True, text=True, cwd=ROOT, timeout=300, check=False)
    assert proc.returncode == 1, proc.stderr[-2000:]
    data = json.loads(out.with_suffix(".json").read_text())
    crit = {c["id"]: c for c in data["criteria"]}
    assert data["verdict"] == "fail" and crit[3]["status"] == "not met"
    assert "Wq" in crit[3]["figure"] and crit[1]["status"] == "not applicable"
    assert data["subject"].startswith("C layers")


@pytest.mark.parametrize(("spec", "message"), [
    ("nosuch.module:X", "no module named 'nosuch'"),
    ("examples.numpy_layers:NOPE", "has no attribute 'NOPE'"),
    ("examples.numpy_layers:TinyLM", "is a type, not a gradcheck.Subject"),
    ("no-colon", "must look like MODULE:NAME"),
])
def test_bad_subject_is_one_line_and_exit_2(spec, message):
    proc = subprocess.run([sys.executable, "-m", "gradcheck.cli", "compare",
                           str(ROOT / "snapshots" / "reference"), "--subject", spec],
                          capture_output=True, text=True, cwd=ROOT, timeout=120, check=False)
    assert proc.returncode == 2
    assert message in proc.stderr and "Traceback" not in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1
    with pytest.raises(SubjectError, match=message.split("'")[0]):
        load_subject(spec)
