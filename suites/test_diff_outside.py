"""``gradcheck diff`` with a subject kept outside the repository (issue 31, part 1).

A course grader's folder of checks, a team's separate checks repository, ``checks/``
next to a library checkout: the subject's module lies on ``PYTHONPATH``, outside the
repository, and imports the repository's code. The subject is imported from where it
is at both revisions; the repository's modules it imports come from each revision. A
subject outside whose cases import no module of the repository runs the same code at
both revisions and is refused (exit 2), saying so.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from gradcheck.cli import main
from suites.test_diff import (
    RELU_GRADIENT_BUG,
    ROOT,
    SUBJECT,
    VERIFY,
    _edit,
    _library,
    _no_leftovers,
)

#: Only lazy imports of the repository: nothing of it is imported with the module, the
#: cases import it when they run.
LAZY = '''import numpy as np
from gradcheck import ElementwiseCase, Subject


def _x(rng, dt):
    return [rng.standard_normal((4, 6)).astype(dt)]


def _relu(x):
    from mlfs.activations import ReLU
    return ReLU()(x)


def _relu_gradient(x):
    from mlfs.activations import ReLU
    return ReLU().gradient(x)


SUBJECT = Subject(name="lazy", layers=[
    ElementwiseCase("relu", _x, f=_relu, df=_relu_gradient, dtypes=("float64",)),
])
'''


def _checks(tmp_path: Path, name: str, source: str, monkeypatch) -> Path:
    """A folder of checks beside (not inside) the repository, first on ``sys.path``
    (the workers inherit it, as they inherit ``PYTHONPATH``)."""
    folder = tmp_path / "checks"
    folder.mkdir(exist_ok=True)
    (folder / f"{name}.py").write_text(source)
    monkeypatch.syspath_prepend(str(folder))
    return folder / f"{name}.py"


def _run(repo: Path, monkeypatch, capsys, spec: str, *args: str) -> tuple[int, dict, str]:
    monkeypatch.chdir(repo)
    out = repo.parent / "outside-diff.json"
    out.unlink(missing_ok=True)
    code = main(["diff", *args, "--subject", spec, "--quick", "--no-progress",
                 "--no-speed", "--json", str(out)])
    text = capsys.readouterr().out
    return code, json.loads(out.read_text()) if out.exists() else {}, text


def _history(tmp_path: Path) -> Path:
    """The library at three commits: correct, a ReLU.gradient bug, the fix; the
    subject file in the repository is deleted, so only the checks folder's can run."""
    repo = _library(tmp_path, track_subject=False)
    (repo / "verify_mlfs.py").unlink()
    _edit(repo, "mlfs/activations.py", *RELU_GRADIENT_BUG, message="ReLU: a kink bug")
    _edit(repo, "mlfs/activations.py", RELU_GRADIENT_BUG[1], RELU_GRADIENT_BUG[0],
          message="ReLU: fixed")
    return repo


def test_a_subject_outside_checks_each_revisions_code(tmp_path, monkeypatch, capsys):
    """The fix between BASE and HEAD is found (exit 0) and its reverse is a regression
    (exit 1); the note names the file and the repository's modules it ran with."""
    repo = _history(tmp_path)
    file = _checks(tmp_path, "checks_mlfs", VERIFY, monkeypatch)
    code, data, text = _run(repo, monkeypatch, capsys, "checks_mlfs:SUBJECT", "HEAD~1",
                            "--head", "HEAD")
    assert code == 0 and data["fixes"] == ["ReLU object [float64]"], text
    assert all(c["change"] == "ok -> ok" for c in data["cases"] if not c["fixed"]), text
    assert data["base_subject"] == data["head_subject"] == "ok"
    assert f"note: the subject's module {file} is outside the repository: it ran at " \
        "HEAD~1 and HEAD, each with that revision's code (mlfs, mlfs.activations, " \
        "mlfs.layers)" in text
    code, data, text = _run(repo, monkeypatch, capsys, "checks_mlfs:SUBJECT", "HEAD",
                            "--head", "HEAD~1")
    assert code == 1 and [c["case"] for c in data["cases"] if c["regression"]] == [
        "ReLU object [float64]"], text
    assert data["fixes"] == []


def test_a_subject_outside_importing_lazily_checks_the_working_tree(tmp_path, monkeypatch,
                                                                    capsys):
    """Cases that import the repository only when they run are accepted (the modules
    are counted after the checks): a bug in the working tree is a regression, the
    committed code against itself passes."""
    repo = _history(tmp_path)
    _checks(tmp_path, "checks_lazy", LAZY, monkeypatch)
    code, data, text = _run(repo, monkeypatch, capsys, "checks_lazy:SUBJECT", "HEAD")
    assert code == 0 and [c["change"] for c in data["cases"]] == ["ok -> ok"], text
    assert "each with that revision's code (mlfs, mlfs.activations)" in text
    _edit(repo, "mlfs/activations.py", *RELU_GRADIENT_BUG)
    code, data, text = _run(repo, monkeypatch, capsys, "checks_lazy:SUBJECT", "HEAD")
    assert code == 1 and data["regressions"][0].startswith("relu [float64]: ok -> fail"), text


def test_a_subject_outside_that_imports_no_repository_module_is_refused(tmp_path):
    """Its cases run only the subject's own code: the same at both revisions. Exit 2,
    one line saying so, no folder left (a real process, PYTHONPATH as a user sets it)."""
    repo = _history(tmp_path)
    checks = tmp_path / "checks"
    checks.mkdir()
    (checks / "selfcontained.py").write_text(SUBJECT)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), str(checks)]),
           "TMPDIR": str(tmp_path)}
    proc = subprocess.run([sys.executable, "-m", "gradcheck.cli", "diff", "HEAD~1",
                           "--subject", "selfcontained:SUBJECT", "--quick", "--no-progress",
                           "--no-speed"], cwd=repo, capture_output=True, text=True, env=env,
                          timeout=300, check=False)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1 and "Traceback" not in proc.stderr
    assert f"at HEAD~1, the subject's module is {checks / 'selfcontained.py'}, outside the " \
        "repository, and its cases imported no module of the repository: both sides " \
        "would run the same code" in proc.stderr
    assert _no_leftovers(tmp_path) == []
