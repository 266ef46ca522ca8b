"""Faults are statuses: a case that raises, crashes, exhausts memory or hangs gets its
status in the report and in the generated tests, and nothing it does ends the run. And
a busy machine makes a timed budget "not measured", never "failed".

The subjects are written to misbehave (suites/faulty_subject.py). Time limits are a
couple of seconds; the report runs once, beside a process that keeps a core busy.
"""

from __future__ import annotations

import json
import math
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from gradcheck.report import budgets as bud
from gradcheck.run._pool import Fault, Task, run_isolated, run_tasks
from suites._procs import alive_in_group, session

pytest_plugins = ["pytester"]

ROOT = Path(__file__).resolve().parent.parent
SUBJECT = "suites.faulty_subject:SUBJECT"


def _busy() -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-c", "while True: pass"])


def _stop(proc: subprocess.Popen) -> None:
    proc.kill()  # by its own handle, never by name
    proc.wait()


#: The time limit of a case in the fault tests: the hanging case runs into it; the healthy
#: cases, a fraction of a second alone, stay far below it on a machine three times
#: slower (at 2 s they timed out beside other work: a verdict decided by timing).
CASE_LIMIT = 10


@pytest.fixture(scope="module")
def faulty_report(tmp_path_factory):
    """``gradcheck report`` of the faulty subject, beside a process that keeps a core
    busy."""
    out = tmp_path_factory.mktemp("faults") / "verification.html"
    spinner = _busy()
    try:
        proc = subprocess.run(
            [sys.executable, "-m", "gradcheck.cli", "report", "--quick", "--jobs", "2",
             "--case-timeout", str(CASE_LIMIT), "--subject", SUBJECT, "--out", str(out)],
            capture_output=True, text=True, cwd=ROOT, timeout=300, check=False)
    finally:
        _stop(spinner)
    return out, proc


def test_report_names_every_fault_and_checks_the_healthy_cases(faulty_report):
    out, proc = faulty_report
    assert proc.returncode == 1, proc.stderr[-3000:]
    assert "Traceback" not in proc.stderr + proc.stdout, proc.stderr[-3000:]
    data = json.loads(out.with_suffix(".json").read_text())
    assert data["verdict"] == "fail"
    checks = {c["name"]: c for c in data["checks"]}
    assert checks["healthy [float64]"]["status"] == "ok"
    assert checks["healthy [float32]"]["status"] == "ok"
    assert checks["segfault [float32]"]["status"] == "crashed"
    assert "SIGSEGV" in checks["segfault [float32]"]["message"]
    assert checks["hang [float32]"]["status"] == "timeout"
    assert f"{CASE_LIMIT} s" in checks["hang [float32]"]["message"]
    assert checks["raises [float32]"]["status"] == "error"
    assert "RuntimeError: this forward is broken" in checks["raises [float32]"]["message"]
    assert checks["exits [float32]"]["status"] == "crashed"
    assert "exited with status 3" in checks["exits [float32]"]["message"]
    assert checks["memory [float32]"]["status"] == "error"
    assert "MemoryError" in checks["memory [float32]"]["message"]
    conv = checks["convention [float32]"]
    assert conv["status"] == "error" and "LayerConventionError" in conv["message"]
    faults = {f["case"]: f for f in data["faults"]}
    assert faults["layer segfault float32"]["signal"] == "SIGSEGV"
    assert {f["status"] for f in faults.values()} == {"crashed", "timeout", "error"}
    # a forward that raises inside its check is listed among the faults too, and counted
    assert "RuntimeError: this forward is broken" in faults["layer raises float32"]["message"]
    assert faults["layer raises float32"]["status"] == "error"
    no_result = [c for c in data["checks"] if c["status"] in ("error", "crashed", "timeout")]
    assert len(faults) >= len(no_result) == 6
    assert data["summary"]["faults (error, crashed, timeout)"] == len(data["faults"])
    crit4 = next(c for c in data["criteria"] if c["id"] == 4)
    assert crit4["status"] == "not met"
    assert "segfault [float32] crashed" in crit4["figure"]
    html = out.read_text()
    for name in ("segfault [float32]", "hang [float32]", "convention [float32]"):
        assert name in html
    assert "Cases that gave no result" in html


def test_a_busy_machine_gives_budgets_a_status_not_a_failure(faulty_report):
    """Beside a busy process, the timed budget has a status, a figure and its clock."""
    out, _proc = faulty_report
    data = json.loads(out.with_suffix(".json").read_text())
    (b,) = data["budgets"]
    assert b["status"] in ("pass", "fail", "not measured") and b["figure"] > 0
    assert b["clock"] == bud.CLOCK and 0 < b["details"]["core_share"] <= 1.5
    assert data["budget clock"] == bud.CLOCK
    crit6 = next(c for c in data["criteria"] if c["id"] == 6)
    expect = {"pass": "met", "fail": "not met", "not measured": "not measured"}[b["status"]]
    assert crit6["status"] == expect and crit6["figure"]


def _report(subject: str, out: Path, *extra: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "gradcheck.cli", "report", "--quick", "--jobs", "2",
         "--subject", subject, "--out", str(out), *extra],
        capture_output=True, text=True, cwd=ROOT, timeout=300, check=False)


def test_cases_and_budgets_may_start_processes_of_their_own(tmp_path):
    """A case or the budgets starting a process (a multiprocessing pool, the PyTorch
    yardstick's workers) runs as in any script: the processes running them are not
    daemonic (issue 25: "daemonic processes are not allowed to have children")."""
    out = tmp_path / "v.html"
    proc = _report("suites.faulty_subject:SPAWNING", out)
    assert proc.returncode == 0, proc.stderr[-3000:]
    data = json.loads(out.with_suffix(".json").read_text())
    assert data["faults"] == [], data["faults"]
    assert {c["name"]: c["status"] for c in data["checks"]} == {
        "spawning [float64]": "ok", "spawning [float32]": "ok"}
    (b,) = data["budgets"]
    assert b["name"] == "backward_cost" and b["figure"] > 0


def test_faults_after_the_cases_are_named_and_the_report_is_written(tmp_path):
    """Budgets that raise and a snapshot case that raises: each phase's fault is named,
    the criteria it took the evidence of are not met, the report and JSON are written,
    exit 1, no traceback."""
    from gradcheck.report.snapshot import snapshot

    snaps = tmp_path / "snaps"
    snapshot(snaps, {"broken": lambda: ({"y": np.ones(3)}, {})})
    out = tmp_path / "v.html"
    proc = _report("suites.faulty_subject:BROKEN_PHASES", out, "--snapshots", str(snaps))
    assert proc.returncode == 1, proc.stderr[-3000:]
    assert "Traceback" not in proc.stderr + proc.stdout, proc.stderr[-3000:]
    data = json.loads(out.with_suffix(".json").read_text())
    assert data["verdict"] == "fail"
    faults = {f["case"]: f for f in data["faults"]}
    assert set(faults) == {"performance budgets", "gradient snapshots"}, faults
    assert faults["performance budgets"]["status"] == "error"
    assert "RuntimeError: these budgets are broken" in faults["performance budgets"]["message"]
    assert faults["performance budgets"]["where"].endswith("in broken_budgets")
    assert "ValueError: this snapshot case is broken" in faults["gradient snapshots"]["message"]
    crit = {c["id"]: c for c in data["criteria"]}
    for cid in (5, 6, 7, 8, 9):
        assert crit[cid]["status"] == "not met", crit[cid]
        assert "performance budgets: error" in crit[cid]["figure"]
        assert "no evidence" in crit[cid]["how"] and "declare" not in crit[cid]["how"]
    assert {c["name"]: c["status"] for c in data["checks"]} == {
        "healthy [float64]": "ok", "healthy [float32]": "ok"}
    html = out.read_text()
    assert "these budgets are broken on purpose" in html
    assert "this snapshot case is broken on purpose" in html


def test_an_unreadable_test_result_is_a_named_fault_not_a_traceback(tmp_path):
    """A half-written junit.xml: the phase reading the test run's results is a fault
    naming the parse error; criteria 10-12 are not met; the report is written."""
    out = tmp_path / "v.html"
    (tmp_path / "junit.xml").write_text("<testsuites><testsuite tests='3'")
    proc = _report("suites.faulty_subject:SPAWNING", out)
    assert proc.returncode == 1, proc.stderr[-3000:]
    assert "Traceback" not in proc.stderr + proc.stdout, proc.stderr[-3000:]
    data = json.loads(out.with_suffix(".json").read_text())
    (fault,) = data["faults"]
    assert fault["case"] == "test results and security" and "ParseError" in fault["message"]
    crit = {c["id"]: c for c in data["criteria"]}
    assert all(crit[c]["status"] == "not met" for c in (10, 11, 12))


def test_an_internal_error_is_one_line_and_exit_2(tmp_path, monkeypatch, capsys):
    """gradcheck's own failure (here simulated in the writer) is one line naming it, no
    traceback, exit 2, no report."""
    from gradcheck import cli
    from gradcheck.report import verify

    def broken_write(_out: Path, _data: dict) -> None:
        raise OSError("disk full (simulated)")

    monkeypatch.setattr(verify, "_write", broken_write)
    monkeypatch.delenv("GRADCHECK_TRACEBACK", raising=False)
    out = tmp_path / "v.html"
    code = cli.main(["report", "--quick", "--no-progress", "--jobs", "1",
                     "--subject", "suites.faulty_subject:BROKEN_PHASES", "--out", str(out)])
    err = capsys.readouterr().err
    assert code == 2 and not out.exists()
    assert "internal error, no report written: error: OSError: disk full (simulated)" in err
    assert "Traceback" not in err


def test_ctrl_c_stops_the_workers_and_writes_nothing(tmp_path):
    out, pidfile = tmp_path / "v.html", tmp_path / "hang.pid"
    env = {**os.environ, "GRADCHECK_HANG_PIDFILE": str(pidfile)}
    with session([sys.executable, "-m", "gradcheck.cli", "report", "--quick", "--jobs", "1",
                  "--subject", "suites.faulty_subject:HANG", "--out", str(out)],
                 cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                 text=True) as proc:
        deadline = time.monotonic() + 60
        while not pidfile.exists() or not pidfile.read_text():
            assert time.monotonic() < deadline and proc.poll() is None, "never started"
            time.sleep(0.05)
        worker = int(pidfile.read_text())
        os.killpg(proc.pid, signal.SIGINT)  # as a terminal's Ctrl-C: the whole group
        _stdout, stderr = proc.communicate(timeout=60)  # a guard against a hang only
        left = alive_in_group(proc.pid)  # before the session is killed on leaving
    assert proc.returncode == 130, stderr[-2000:]
    assert "interrupted" in stderr and "Traceback" not in stderr
    assert list(tmp_path.iterdir()) == [pidfile]  # no report, no temporary file
    assert left == [] and worker not in left



# -- the isolation itself -------------------------------------------------------------
def _value(x: int) -> int:
    return x * 2


def _segfault() -> None:
    import ctypes

    ctypes.string_at(0)


def _killed() -> None:
    os.kill(os.getpid(), signal.SIGKILL)


def _sleep() -> None:
    time.sleep(60)


def _raise_declaration() -> None:
    from gradcheck import LayerConventionError

    raise LayerConventionError("parameter W has no gradient")


def test_remaining_tasks_run_after_a_crash_a_kill_and_a_hang():
    said: list[str] = []
    tasks = [Task("segfault", _segfault), Task("value", _value, (3,)),
             Task("killed", _killed), Task("hang", _sleep, timeout=0.5),
             Task("raises", _raise_declaration), Task("memory", np.empty, (2**62, np.uint8)),
             Task("value again", _value, (5,))]
    res = run_tasks(tasks, jobs=1, say=said.append)
    assert res[1] == 6 and res[6] == 10
    assert [r.status for r in res if isinstance(r, Fault)] == [
        "crashed", "crashed", "timeout", "error", "error"]
    assert res[0].signal == "SIGSEGV" and res[2].signal == "SIGKILL"
    assert res[4].message == "LayerConventionError: parameter W has no gradient"
    assert "test_faults.py" in res[4].where and "_raise_declaration" in res[4].where
    assert "MemoryError" in res[5].type  # NumPy's _ArrayMemoryError
    assert len(said) == len(tasks) and any("crashed" in s for s in said)


def test_a_user_exception_names_its_frame():
    res = run_isolated(_raising_user_code)
    assert isinstance(res, Fault) and res.status == "error"
    assert res.type == "ZeroDivisionError" and "test_faults.py" in res.where


def _raising_user_code() -> float:
    return 1 / 0


def test_no_fault_no_fault():
    """The isolation does not cry wolf: results come back as they are."""
    assert run_isolated(_value, 21) == 42
    assert run_tasks([Task(str(k), _value, (k,)) for k in range(5)], jobs=2,
                     say=lambda _s: None) == [0, 2, 4, 6, 8]


def _unpicklable():
    return lambda: 1


def test_a_result_that_cannot_travel_is_an_error():
    res = run_isolated(_unpicklable)
    assert isinstance(res, Fault) and res.status == "error"
    assert res.message.startswith("the result could not be sent back")


def test_bad_jobs_is_an_error():
    with pytest.raises(ValueError, match="jobs must be >= 1"):
        run_tasks([], jobs=0, say=print)


def test_case_timeout_must_be_positive(capsys):
    from gradcheck import cli

    with pytest.raises(SystemExit) as e:
        cli.main(["report", "--case-timeout", "0"])
    assert e.value.code == 2 and "--case-timeout must be a positive" in capsys.readouterr().err


@pytest.mark.parametrize("limit", [math.inf, 1e12])
def test_an_infinite_or_huge_case_timeout_is_no_limit(limit, monkeypatch):
    """inf is no limit and 1e12 s is waited for in bounded steps (no OverflowError);
    a task's own shorter limit still holds."""
    tasks = [Task("value", _value, (4,)), Task("hang", _sleep, timeout=0.5)]
    res = run_tasks(tasks, jobs=1, say=lambda _s: None, timeout=limit)
    assert res[0] == 8 and isinstance(res[1], Fault) and res[1].status == "timeout"
    monkeypatch.setenv("GRADCHECK_CASE_TIMEOUT", str(limit))
    from gradcheck.subject_tests import case_timeout

    assert case_timeout() == limit and run_isolated(_value, 2, timeout=case_timeout()) == 4


# -- the generated subject tests report the same statuses ---------------------------------
def test_generated_tests_fail_each_faulty_case_with_its_status(pytester, monkeypatch):
    monkeypatch.setenv("GRADCHECK_CASE_TIMEOUT", str(CASE_LIMIT))
    monkeypatch.syspath_prepend(str(ROOT))
    pytester.makeconftest(f'gradcheck_subject = "{SUBJECT}"\n')
    pytester.makepyfile(test_generated="from gradcheck.subject_tests import *  # noqa\n")
    result = pytester.runpytest("-p", "no:cacheprovider", "-k", "layer_gradient and not drawn")
    out = result.stdout.str()
    result.assert_outcomes(passed=2, failed=6)
    for text in ("crashed: the process running the case was killed by SIGSEGV",
                 f"timeout: the case ran past its time limit of {CASE_LIMIT} s",
                 "LayerConventionError", "RuntimeError: this forward is broken",
                 "exited with status 3"):
        assert text in out, text
    assert "Traceback" not in out


# -- a busy machine: statuses, never a failure --------------------------------------------
def _timing(cpu_a, cpu_b, wall_a, wall_b):
    return bud.Timing.of(cpu_a, cpu_b, wall_a, wall_b)


def test_judge_over_budget_on_a_busy_machine_is_not_measured():
    from gradcheck_model.bench.measure import load_table

    table = load_table()
    n = 7
    # The thread had half a core: wall time twice its CPU time.
    busy = _timing([3.0] * n, [1.0] * n, [6.0] * n, [2.0] * n)
    idle = _timing([3.0] * n, [1.0] * n, [3.05] * n, [1.02] * n)
    assert busy.busy and not idle.busy and busy.share == pytest.approx(0.5)
    r = bud.judge("backward_cost", table, "c", "float64", busy)
    assert r.status == "not measured" and not r.passed
    assert r.note == "not measured: machine busy (50% of a core)"
    assert bud.judge("backward_cost", table, "c", "float64", idle).status == "fail"
    within = _timing([1.5] * n, [1.0] * n, [3.0] * n, [2.0] * n)
    assert bud.judge("backward_cost", table, "c", "float64", within).status == "pass"
    assert bud.judge("backward_cost", table, "c", "float64", within, ok=False).status \
        == "fail"


def test_clocks_that_disagree_mean_a_busy_machine():
    n = 7
    # a full core each call, but the wall-time ratio moved (a neighbour came and went)
    t = _timing([2.0] * n, [1.0] * n, [2.0] * n, [1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0])
    assert not t.busy
    t = _timing([2.0] * n, [1.0] * n, [4.0] * n, [1.0] * n)
    assert t.busy and t.wall == pytest.approx(4.0) and t.cpu == pytest.approx(2.0)


def test_budget_status_is_validated():
    with pytest.raises(ValueError, match="status must be one of"):
        bud.BudgetResult("x", 5, "t", "c", "float64", 1.0, 2.0, 0.0, True, status="maybe")
    r = bud.BudgetResult("x", 5, "t", "c", "float64", 3.0, 2.0, 0.0, False)
    assert r.status == "fail" and r.clock == bud.CLOCK


def test_verdict_not_measured_is_incomplete():
    from gradcheck.report._criteria import verdict_of

    assert verdict_of(False, [{"status": "met"}, {"status": "not measured"}]) == "incomplete"
    assert verdict_of(False, [{"status": "not met"}, {"status": "not measured"}]) == "fail"


def _sigint_default() -> None:
    """In the child: Ctrl-C's default, as a terminal gives it (a job started in the
    background, `cmd &`, inherits SIGINT ignored, and Python then installs no handler)."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


_INTERRUPT_ON_IMPORT = """
import importlib.abc, os, signal, sys

class Interrupt(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path, target=None):
        if name == os.environ["GRADCHECK_TEST_INTERRUPT_AT"]:  # a Ctrl-C lands right here
            os.kill(os.getpid(), signal.SIGINT)
        return None

sys.meta_path.insert(0, Interrupt())
"""


@pytest.mark.parametrize("module", ["gradcheck.cli", "gradcheck.subject"])
def test_ctrl_c_while_the_command_imports_ends_it_with_130_and_no_traceback(tmp_path, module):
    (tmp_path / "sitecustomize.py").write_text(_INTERRUPT_ON_IMPORT)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path), str(ROOT)]),
           "GRADCHECK_TEST_INTERRUPT_AT": module}
    proc = subprocess.run([sys.executable, "-m", "gradcheck.cli", "--version"], cwd=ROOT,
                          env=env, capture_output=True, text=True, timeout=120, check=False,
                          preexec_fn=_sigint_default)
    assert proc.returncode == 130, (proc.returncode, proc.stderr[-2000:])
    assert "Traceback" not in proc.stderr, proc.stderr[-2000:]
    env["GRADCHECK_TEST_INTERRUPT_AT"] = "no.such.module"
    proc = subprocess.run([sys.executable, "-m", "gradcheck.cli", "--version"], cwd=ROOT,
                          env=env, capture_output=True, text=True, timeout=120, check=False,
                          preexec_fn=_sigint_default)
    assert proc.returncode == 0 and proc.stdout.startswith("gradcheck "), proc.stderr


def test_importing_the_cli_leaves_the_sigint_handler_alone():
    code = ("import signal, gradcheck, gradcheck.cli; "
            "assert signal.getsignal(signal.SIGINT) is signal.default_int_handler")
    proc = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True,
                          text=True, timeout=120, check=False, preexec_fn=_sigint_default)
    assert proc.returncode == 0, proc.stderr[-2000:]
