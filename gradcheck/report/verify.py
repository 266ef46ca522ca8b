"""``gradcheck report``: the verification of a subject against the success criteria 1-12.

Runs the subject's layer and model checks, the checker's own bug catalog and the
subject's training runs in worker processes (a process per case, one BLAS thread each,
see :mod:`gradcheck.run._pool`), then its budgets alone, reads the test run's coverage, test
and security results where they exist, and writes an HTML report with a JSON file beside
it. What the subject does not declare is "not applicable"; what needs a test run that
did not happen is "not run"; a case that raises, crashes or runs past its time limit has
the status ``error``, ``crashed`` or ``timeout`` and the report is written all the same.
Everything specific to a subject (budget table, report tables of its budgets, snapshot
folder, code, test commands) comes from its :class:`~gradcheck.Subject`; the results are
the typed rows of :mod:`gradcheck.report._rows`.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ..check._core import check_vjp
from ..check._result import CheckResult
from ..run._pool import DEFAULT_CASE_TIMEOUT, Fault, Task, fault_of, run_tasks
from ..subject import DEFAULT_SUBJECT, Subject, TrainingRun, load_subject
from ._criteria import (
    QUALITY_CRITERIA,
    SubjectRef,
    _budget_criteria,
    _checks_criterion,
    _quality_criteria,
    _training_criteria,
    subject_code_of,
    verdict_of,
)
from ._rows import CatalogRow, Criterion, FaultRow
from ._testrun import (
    declared_path,
    run_test_suites,
)

__all__ = ["DEFAULT_SUBJECT", "LEVELS", "run_verification", "verdict_of"]

#: Report levels and the seeds of the bug catalog at each.
LEVELS: dict[str, int] = {"quick": 1, "default": 2, "full": 20}


class Progress:
    """Progress on stderr: one line a step, with the elapsed time; :meth:`always`
    prints the outcome (verdict, failures, criteria, files) even when progress is off
    (``--no-progress``, as CI runs)."""

    def __init__(self, enabled: bool, total: int) -> None:
        self.enabled = enabled
        self.total = total
        self.step = 0
        self.t0 = time.perf_counter()

    def __call__(self, text: str, *, advance: bool = False) -> None:
        if advance:
            self.step += 1
        if self.enabled:
            el = time.perf_counter() - self.t0
            print(f"[{self.step}/{self.total} {el:6.1f}s] {text}", file=sys.stderr, flush=True)

    def always(self, text: str) -> None:
        """A line of the outcome: with the progress prefix, or ``gradcheck report:``."""
        if self.enabled:
            self(text)
        else:
            print(f"gradcheck report: {text}", file=sys.stderr, flush=True)


# -- tasks (module-level, so that worker processes can run them) ---------------------------------
def _subject(ref: SubjectRef) -> Subject:
    return ref if isinstance(ref, Subject) else load_subject(ref)


def layer_task(ref: SubjectRef, index: int, dtype: str, seed: int) -> CheckResult:
    """Check layer case ``index`` of the subject in ``dtype``."""
    return _subject(ref).layers[index].check(dtype, seed)


def model_task(ref: SubjectRef, level: str, index: int, seed: int) -> CheckResult:
    """Check model case ``index`` of the subject at ``level``."""
    return _subject(ref).models(level, seed)[index].check(seed)


def explain_model_task(ref: SubjectRef, level: str, index: int,
                       layers: list[tuple[int, str, str, list[int]]],
                       passing: list[tuple[int, str]], failing: list[str], seed: int
                       ) -> dict[str, Any]:
    """Which ``failing`` parameters of model case ``index`` the failing ``layers``
    explain."""
    from ._explain import explain_task

    return explain_task(_subject(ref), level, index, layers, passing, failing, seed)


def _explain_models(ref: SubjectRef, level: str, seed: int, tasks: list[Task],
                    by_fn: dict[str, list[Any]], jobs: int, limit: float,
                    say: Progress) -> None:
    """A failing model check whose failures a failing layer check of the subject
    explains says so (:mod:`._explain`); when the link cannot be observed (its run
    raised, crashed, timed out) the hints stay as the check gave them, and a note of
    the model check and a line on the terminal say why."""
    try:
        _explain(ref, level, seed, tasks, by_fn, jobs, limit, say)
    except Exception as exc:  # never the end of the report: the hints stay as they are
        say.always(f"the failing model checks were not linked to the layer checks: "
                   f"{fault_of(exc).describe()}")


def _explain(ref: SubjectRef, level: str, seed: int, tasks: list[Task],
             by_fn: dict[str, list[Any]], jobs: int, limit: float, say: Progress) -> None:
    from ..check._model_check import _TWIN
    from ._explain import annotate, explaining_layers

    args = [t.args for t in tasks if t.fn is layer_task]
    wrong, passing = explaining_layers([(a[1], a[2], r) for a, r in
                               zip(args, by_fn.get("layer_task", []), strict=True)])
    models = by_fn.get("model_task", [])
    bad = {k: [i.name.removesuffix(_TWIN) for i in r.inputs
               if i.status == "mismatch" and not i.passed] for k, r in enumerate(models)}
    failing = [k for k, names in bad.items() if names]
    if not wrong or not failing:
        return
    say("linking the failing model checks to the failing layer checks")
    links = [Task(f"explaining {models[k].name}", explain_model_task,
                  (ref, level, k, wrong, passing, bad[k], seed), 1.0, limit) for k in failing]
    for k, found in zip(failing, run_tasks(links, jobs=jobs, say=say), strict=True):
        if isinstance(found, Fault):
            why = f"not linked to the failing layer checks: {found.describe()}"
            models[k].notes.append(why)
            say.always(f"{models[k].name}: {why}")
        else:
            annotate(models[k], found)


def training_task(ref: SubjectRef, level: str, seed: int) -> list[TrainingRun]:
    subject = _subject(ref)
    return list(subject.training(level, seed)) if subject.training else []


def flow_task(ref: SubjectRef, seed: int) -> list[str]:
    subject = _subject(ref)
    return subject.flow(seed) if subject.flow else []


def catalog_rows(dtype: str, seeds: int) -> list[dict[str, Any]]:
    """:func:`catalog_results` as the report's JSON rows."""
    return [r.to_dict() for r in catalog_results(dtype, seeds)]


def catalog_results(dtype: str, seeds: int) -> list[CatalogRow]:
    """Each classic bug of the checker's catalog against its correct twin, in one dtype."""
    from ..catalog.bugs import CASES, CASES_FLOAT64_ONLY

    rows = []
    cases = CASES + (CASES_FLOAT64_ONLY if dtype == "float64" else [])
    for case in cases:
        caught = alarms = 0
        hints: list[str] = []
        for s in range(seeds):
            fwd, good, bad, inputs = case.make(np.random.default_rng(s), np.dtype(dtype))
            if not check_vjp(fwd, good, inputs, seed=s).passed:
                alarms += 1
            r = check_vjp(fwd, bad, inputs, seed=s)
            if r.status == case.status:  # caught as the bug it is (not inconclusive)
                caught += 1
                hints.append(r.hint)
        rows.append(CatalogRow(case.description, dtype, caught, seeds, alarms,
                               hints[0] if hints else "", hint_verdict(case.hint_class, hints)))
    return rows


def hint_verdict(hint_class: str, hints: list[str]) -> str:
    """``named`` (every hint contains the class phrase), ``misleading`` (a hint that does
    not), ``none`` (no hint given) or ``partly`` (named at some seeds, silent at others)."""
    given = [h for h in hints if h]
    if any(not hint_class or hint_class not in h for h in given):
        return "misleading"
    if not given:
        return "none"
    return "named" if len(given) == len(hints) else "partly"


def _tasks(subject: Subject, ref: SubjectRef, level: str, seed: int, limit: float,
           faults: list[FaultRow]) -> list[Task]:
    """The report's tasks: cases get ``limit`` seconds each, the subject's training runs
    and flow scan ten times that, the checker's own catalog no limit."""
    tasks = [Task(f"layer {c.name} {d}", layer_task, (ref, k, d, seed), 0.3, limit)
             for k, c in enumerate(subject.layers) for d in c.dtypes]
    try:
        models = subject.models(level, seed)
    except Exception as exc:  # the subject's model_cases raised: a fault, not the end
        faults.append(FaultRow.of("model cases", fault_of(exc)))
        models = []
    for k, case in enumerate(models):
        tasks.append(Task(case.name, model_task, (ref, level, k, seed), 2.5, limit))
    for d in ("float64", "float32"):
        tasks.append(Task(f"bug catalog, {d}", catalog_results, (d, LEVELS[level]),
                          0.9 * LEVELS[level]))
    if subject.training is not None:
        tasks.append(Task("training runs", training_task, (ref, level, seed),
                          80.0 if level == "full" else 5.0, 10 * limit))
    if subject.flow is not None:
        tasks.append(Task("gradient flow", flow_task, (ref, seed), 1.0, 10 * limit))
    return tasks


def _fault_result(task: Task, fault: Fault, seed: int) -> CheckResult:
    """A case that gave no result: a failed check whose status is the fault's."""
    kind = "layer" if task.fn is layer_task else "model"
    if kind == "layer":
        name = task.label.removeprefix("layer ").rsplit(" ", 1)
        label = f"{name[0]} [{name[1]}]"
    else:
        label = task.label
    error = {"in": "case", "type": fault.type or fault.status, "message": fault.message,
             "where": fault.where}
    return CheckResult(passed=False, status=fault.status, message=fault.message, inputs=[],
                       method="-", mode="-", evaluations=0, backward_calls=0, seed=seed,
                       name=label, kind=kind, error=error)


def _collect(tasks: list[Task], results: list[Any], seed: int,
             faults: list[FaultRow]) -> dict[str, list[Any]]:
    """Results grouped by task function; a fault of a case becomes its failed check, a
    fault of another task is recorded and leaves that group empty."""
    by_fn: dict[str, list[Any]] = {}
    for t, r in zip(tasks, results, strict=True):
        if isinstance(r, Fault):
            faults.append(FaultRow.of(t.label, r))
            if t.fn not in (layer_task, model_task):
                by_fn.setdefault(t.fn.__name__, [])
                continue
            r = _fault_result(t, r, seed)
        elif t.fn in (layer_task, model_task):
            faults += _raised_in_check(t.label, r)
        by_fn.setdefault(t.fn.__name__, []).append(r)
    return by_fn


def _raised_in_check(label: str, r: CheckResult) -> list[FaultRow]:
    """A case whose forward or backward raised inside its check (status ``error``) is a
    fault too: the list of cases that gave no result names every case that errored."""
    if getattr(r, "status", "") != "error":
        return []
    err = r.error or {}
    return [FaultRow(label, "error", str(r.message or err.get("message", "")),
                     str(err.get("type", "")), str(err.get("where", "")))]


# -- the whole run --------------------------------------------------------------------------------
def budgets_task(ref: SubjectRef, level: str) -> list[Any]:
    """The subject's budgets at ``level``."""
    subject = _subject(ref)
    return list(subject.budgets(level)) if subject.budgets is not None else []


#: Which criteria a task or phase that gave no result leaves unmet (cases fail
#: criterion 4; a failed snapshot comparison fails the verdict through its section).
_FAULT_CRITERIA = {"training runs": (1, 2), "gradient flow": (3,), "model cases": (4,),
                   "bug catalog, float64": (4,), "bug catalog, float32": (4,),
                   "performance budgets": (5, 6, 7, 8, 9),
                   "test suites": (10, 11, 12), "test results and security": (10, 11, 12)}


def _guarded(phase: str, faults: list[FaultRow], say: Callable[[str], None],
             fn: Callable[..., Any], *args: Any) -> Any:
    """``fn(*args)`` of a phase run in this process; an exception is the phase's fault
    (named in the report, the verdict fails) and gives ``None``, never a traceback."""
    try:
        return fn(*args)
    except Exception as exc:
        fault = fault_of(exc)
        faults.append(FaultRow.of(phase, fault))
        say(f"{phase}: {fault.describe()}")
        return None


def _lost_quality() -> list[Criterion]:
    """Criteria 10-12 when reading the test run's results raised (the fault names why)."""
    return [Criterion.not_applicable(c, t, "the phase that reads them raised")
            for c, t in QUALITY_CRITERIA.items()]


def _fault_criteria(crit: list[Criterion], faults: list[FaultRow]) -> list[Criterion]:
    """A criterion whose evidence a fault took away is not met, and names the fault."""
    by_id = {c.id: c for c in crit}
    for f in faults:
        for cid in _FAULT_CRITERIA.get(f.case, ()):
            by_id[cid] = by_id[cid].lost_to(f.note)
    return [by_id[c.id] for c in crit]


def run_verification(
    *, out: str, level: str = "default", seed: int = 0, progress: bool = True,
    jobs: int = 2, with_tests: bool = False, subject: SubjectRef = DEFAULT_SUBJECT,
    snapshots: str | None = None, quick: bool | None = None,
    case_timeout: float = DEFAULT_CASE_TIMEOUT, markdown: str | None = None,
) -> str:
    """Run the verification of ``subject`` and write ``out`` (HTML) and ``out`` .json;
    with ``markdown``, also append a short summary to that file (as GitHub's
    ``$GITHUB_STEP_SUMMARY`` expects).

    ``subject`` is a :class:`~gradcheck.Subject` or ``"MODULE:NAME"``. Every case runs
    in a process of its own with a time limit of ``case_timeout`` seconds: one that
    raises, crashes or runs past it gets that status (``error``, ``crashed``,
    ``timeout``) and the others still run. Returns the verdict: ``"pass"``, ``"fail"``
    or ``"incomplete"`` (nothing failed, but a criterion that needs a test run was not
    run).
    """
    level = _validated_level(level, quick, case_timeout)
    subj = _subject(subject)
    t0 = time.perf_counter()
    say = Progress(progress, 3 + int(with_tests))
    out_path = Path(out)
    reports = out_path.parent
    faults: list[FaultRow] = []
    if with_tests:
        say("test suites (criteria 10-12)", advance=True)
        why = _guarded("test suites", faults, say, run_test_suites, subj,
                       subject if isinstance(subject, str) else None, reports, say)
        if why:
            say(f"test suites not run: {why}")
    say(f"checks, catalog and training in {jobs} process(es)", advance=True)
    tasks = _tasks(subj, subject, level, seed, case_timeout, faults)
    by_fn = _collect(tasks, run_tasks(tasks, jobs=jobs, say=say), seed, faults)
    _explain_models(subject, level, seed, tasks, by_fn, jobs, case_timeout, say)
    say("performance budgets (alone, 1 BLAS thread)" if subj.budgets is not None
        else "performance budgets: none declared", advance=True)
    budget_results = _budgets(subj, subject, level, case_timeout, say, faults)
    say("results of the test run, security, snapshots", advance=True)
    snapshot_ok, snap_section = (
        _snapshots(subject, snapshots, case_timeout, say, faults)
        if subj.snapshot_cases is not None else snapshot_task(subj, snapshots))
    quality = _guarded("test results and security", faults, say, _quality_criteria, subj,
                       reports, subject) or _lost_quality()
    verdict, data, crit = _assemble(subj, subject, level, seed, t0, by_fn, budget_results,
                                    faults, reports, quality, snapshot_ok, snap_section)
    data["environment"]["report workers"] = (
        f"{jobs} process(es) at a time, one per case, 1 BLAS thread each; time limit "
        f"{case_timeout:g} s a case")
    _publish(out_path, data, markdown)
    _told(say, crit, out_path, markdown, verdict, data)
    return verdict


def _validated_level(level: str, quick: bool | None, case_timeout: float) -> str:
    if quick is not None:  # the keyword of earlier versions
        level = "quick" if quick else level
    if level not in LEVELS:
        raise ValueError(f"level must be one of {', '.join(LEVELS)}, got {level!r}")
    if not case_timeout > 0:
        raise ValueError(f"case_timeout must be a positive number of seconds, got "
                         f"{case_timeout!r}")
    return level


def _told(say: Progress, crit: list[Criterion], out_path: Path, markdown: str | None,
          verdict: str, data: dict[str, Any]) -> None:
    """The outcome told once the report is written (a Ctrl-C now says so)."""
    try:
        from ._reportview import verdict_line

        _tell(say.always, crit, f"{out_path} and {out_path.with_suffix('.json')}"
              + (f" and appended to {markdown}" if markdown else "")
              + f" ({verdict.upper()})", data["failures"],
              f"{verdict.upper()}: {'; '.join(verdict_line(data))}")
    except KeyboardInterrupt:
        raise KeyboardInterrupt(REPORT_WRITTEN) from None


#: What an interruption after the report was written carries (the CLI says so).
REPORT_WRITTEN = "after the report was written"


def _tell(tell: Callable[[str], None], crit: list[Criterion], wrote: str,
          fails: Sequence[dict[str, Any]] = (), verdict: str = "", limit: int = 5) -> None:
    """On the terminal, whatever the progress setting: the first failing inputs with
    hint and seed (as the report opens with them), the criteria not met, not run or
    not measured, the verdict's line and what was written."""
    from ._reportview import failure_line

    for f in fails[:limit]:
        tell(f"FAILED {failure_line(f)}")
    if len(fails) > limit:
        tell(f"... and {len(fails) - limit} more failing input(s): see the report")
    for c in crit:  # the same criteria as the report
        if c.status not in ("met", "not applicable"):
            tell(f"criterion {c.id} ({c.name}): {c.status}: {c.figure}")
    if verdict:
        tell(verdict)
    tell(f"wrote {wrote}")


def _assemble(subj: Subject, ref: SubjectRef, level: str, seed: int, t0: float,
              by_fn: dict[str, list[Any]], budget_results: list[Any],
              faults: list[FaultRow], reports: Path, quality: list[Criterion],
              snapshot_ok: bool, snap_section: dict[str, Any]
              ) -> tuple[str, dict[str, Any], list[Criterion]]:
    """The verdict, the report's data and the criteria."""
    layers, models = by_fn.get("layer_task", []), by_fn.get("model_task", [])
    catalog: list[CatalogRow] = [row for group in by_fn.get("catalog_results", [])
                                 for row in group]
    runs: list[TrainingRun] = (by_fn.get("training_task") or [[]])[0]
    zero: list[str] = (by_fn.get("flow_task") or [[]])[0]
    crit = (_training_criteria(subj, runs, models, zero)
            + [_checks_criterion(layers + models, catalog)]
            + _budget_criteria(subj, budget_results, ref)
            + quality)
    crit = _fault_criteria(sorted(crit, key=lambda c: c.id), faults)
    failed = (bool(faults) or not all(r.passed for r in layers + models)
              or not all(r.verdict == "caught" for r in catalog)
              or any(b.status == "fail" for b in budget_results) or not snapshot_ok)
    verdict = verdict_of(failed, crit)
    from ._sections import report_data

    data = report_data(subj, level, seed, verdict, t0, layers + models, catalog, runs,
                       budget_results, crit, reports, snap_section, faults)
    from ._env import git_commit
    from .budgets import BUDGET_THREADS

    data["environment"]["budget BLAS threads"] = str(BUDGET_THREADS)
    code, _why = subject_code_of(subj, ref)  # the commit of the code under test
    data["environment"]["git_commit"] = git_commit(code[0] if code else None)
    return verdict, data, crit


def _budgets(subj: Subject, ref: SubjectRef, level: str, limit: float,
             say: Callable[[str], None], faults: list[FaultRow]) -> list[Any]:
    """The subject's budgets, alone in a process of their own (none declared: none)."""
    if subj.budgets is None:
        return []
    out = _alone(Task("performance budgets", budgets_task, (ref, level),
                      timeout=10 * limit), say, faults)
    return [] if out is None else list(out)


def _snapshots(ref: SubjectRef, directory: str | None, limit: float,
               say: Callable[[str], None], faults: list[FaultRow]
               ) -> tuple[bool, dict[str, Any]]:
    """The snapshot comparison in a process of its own (it runs the subject's code): a
    fault is named in the report and fails the verdict."""
    out = _alone(Task("gradient snapshots", snapshot_task, (ref, directory),
                      timeout=10 * limit), say, faults)
    if out is None:
        return False, {"text": f"not compared: {faults[-1].note}", "rows": []}
    ok, section = out
    return ok, section


def _alone(task: Task, say: Callable[[str], None], faults: list[FaultRow]) -> Any:
    """``task`` alone in a process of its own: its result, or ``None`` with its fault
    appended to ``faults`` (named in the report, the verdict fails)."""
    (out,) = run_tasks([task], jobs=1, say=say)
    if isinstance(out, Fault):
        faults.append(FaultRow.of(task.label, out))
        return None
    return out


def snapshot_task(ref: SubjectRef, directory: str | None) -> tuple[bool, dict[str, Any]]:
    """Compare with ``directory`` (``--snapshots``), else with ``Subject.snapshot_dir``."""
    subj = _subject(ref)
    if subj.snapshot_cases is None:
        return True, {"text": "not applicable: the subject declares no snapshot cases."}
    spec = ref if isinstance(ref, str) else None
    path = Path(directory) if directory else (
        declared_path(subj, subj.snapshot_dir, spec) if subj.snapshot_dir else None)
    if path is None or not (path / "manifest.json").exists():
        where = (f"none at {path}" if path is not None
                 else "the subject declares no snapshot_dir")
        return True, {"text": f"no snapshot to compare with ({where}; gradcheck snapshot "
                              "--subject ... --out DIR records one; pass it with "
                              "--snapshots DIR)."}
    from .snapshot import SnapshotError, compare

    try:
        cmp = compare(path, cases=subj.snapshot_cases)
    except SnapshotError as exc:
        return False, {"text": f"snapshot unreadable: {exc}", "rows": []}
    rows = [r for r in cmp.to_dict()["rows"] if r["status"] != "ok"]
    text = (f"{len(cmp.rows)} arrays of {len({r.case for r in cmp.rows})} cases compared "
            f"with {path}: "
            + ("all agree within tolerance." if cmp.passed else f"{len(rows)} drifted."))
    return cmp.passed, {"text": text, "rows": rows}


def _publish(out_path: Path, data: dict[str, Any], markdown: str | None) -> None:
    """Write the report (:func:`_write`), then append its Markdown summary to
    ``markdown`` (``$GITHUB_STEP_SUMMARY``, say)."""
    _write(out_path, data)
    if markdown:
        from ..run._io import append_text
        from ._reportview import markdown_summary

        append_text(Path(markdown), markdown_summary(data, str(out_path)))


def _write(out_path: Path, data: dict[str, Any]) -> None:
    """Render first, then write both files, all or none (Ctrl-C included), so that an
    interruption leaves no half of a report."""
    from ..run._io import write_all_atomic
    from .render import render_html, to_json

    html = render_html(data, json_href=out_path.with_suffix(".json").name).encode("utf-8")
    text = (to_json({k: v for k, v in data.items() if k != "charts_svg"}) + "\n").encode()
    write_all_atomic({out_path.with_suffix(".json"): text, out_path: html})
