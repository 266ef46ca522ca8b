"""The report's criteria 1-12 judged from what the run found: training (1, 2), gradient
flow (3), the model's checks (4), the budgets (5-9 and the subject's own), the quality of
the subject's code (10-12), and the verdict they add up to."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from ..check._result import CheckResult
from ..subject import Subject, TrainingRun
from ._rows import CatalogRow, Criterion
from ._testrun import (
    command_dir,
    declared_path,
    read_coverage,
    read_junit,
    security_findings,
    subject_code,
)

__all__ = ["BUDGET_CRITERIA", "QUALITY_CRITERIA", "SubjectRef", "subject_code_of", "verdict_of"]

#: A subject, or the ``MODULE:NAME`` it is loaded by (worker processes load it anew).
SubjectRef = str | Subject

RUN_TESTS = "run the README's test command, or gradcheck report --with-tests"


# -- criteria -----------------------------------------------------------------------------------
_TRAINING = ("loss decreases by more than 50%", "no NaN/Inf during training (100+ epochs)")
_FLOW = "gradients flow through all layers"


def _training_criteria(subject: Subject, runs: list[TrainingRun], models: list[CheckResult],
                       zero: list[str]) -> list[Criterion]:
    if not runs:
        crit = [Criterion.not_applicable(k + 1, title, "no training run")
                for k, title in enumerate(_TRAINING)]
    else:
        normal = [r for r in runs if not r.stress]
        finite = all(r.finite for r in runs)
        crit = [
            Criterion.judged(
                1, _TRAINING[0], bool(normal) and all(r.reduction > 0.5 for r in normal),
                "; ".join(f"{r.label}: {100 * r.reduction:.0f}%" for r in normal),
                "the subject's training runs; epochs per run in the training table"),
            Criterion.judged(
                2, _TRAINING[1], finite and max(len(r.losses) for r in runs) >= 100,
                "; ".join(f"{r.label}: {len(r.losses)} epochs, {r.refused_steps} refused "
                          f"steps, {'finite' if r.finite else 'NON-FINITE'}" for r in runs),
                "every parameter checked finite after each run")]
    return [*crit, _flow_criterion(subject, models, zero)]


def _flow_criterion(subject: Subject, models: list[CheckResult], zero: list[str]
                    ) -> Criterion:
    """Criterion 3: the subject's flow scan and the flow audit of every model check; a
    parameter flagged in several checks (a float32 model and its float64 twin) is
    named once."""
    if not models and subject.flow is None:
        return Criterion.not_applicable(3, _FLOW, "no model")
    flagged: dict[str, set[str]] = {}
    for r in models:
        for i in r.inputs:
            if "no gradient flows" in i.hint:
                flagged.setdefault(i.name.removesuffix(" (float64 twin)"), set()).add(r.name)
    if subject.flow is None:
        scan = "no flow scan declared (Subject.flow)"
    else:
        scan = f"{len(zero)} parameter(s) with an all-zero gradient" + (
            f" ({', '.join(zero[:5])}{' ...' if len(zero) > 5 else ''})" if zero else "")
    cases = {c for names in flagged.values() for c in names}
    audit = "check_model flow audit " + (
        "clean" if not flagged else
        f"flagged {', '.join(list(flagged)[:5])}{' ...' if len(flagged) > 5 else ''} "
        f"(in {len(cases)} model check(s))")
    return Criterion.judged(3, _FLOW, not zero and not flagged, f"{scan}; {audit}",
                            "the subject's flow scan and check_model's audit of every "
                            "model case")


#: The criteria over the subject's own code and test run (see :func:`_quality_criteria`).
QUALITY_CRITERIA = {10: "code coverage > 80%", 11: "no security alerts",
                    12: "passes all tests"}

#: The criteria a subject's budgets gate (each budget's criterion says which).
BUDGET_CRITERIA = {5: "forward overhead in training mode < 10%",
                   6: "backward < 2x forward",
                   7: "memory < 2x inference",
                   8: "scales linearly with batch size",
                   9: "no memory leaks"}


def _budget_table(subject: Subject, ref: SubjectRef) -> dict[str, Any] | None:
    """The subject's budget table (None without one); ValueError when unreadable."""
    if subject.budget_table is None:
        return None
    from .budgets import load_budgets

    spec = ref if isinstance(ref, str) else None
    return load_budgets(declared_path(subject, subject.budget_table, spec))


def _budget_criteria(subject: Subject, budget_results: list[Any], ref: SubjectRef
                     ) -> list[Criterion]:
    """Criteria 5-9: the worst gated budget of each, by the subject's table (or by each
    result's ``criterion`` without a table)."""
    if subject.budgets is None:
        return [Criterion.not_applicable(c, t, "no budgets declared")
                for c, t in BUDGET_CRITERIA.items()]
    try:
        table = _budget_table(subject, ref)
    except ValueError as exc:
        return [Criterion(c, t, "not met", str(exc), "the subject's budget table")
                for c, t in BUDGET_CRITERIA.items()]
    gated = [b for b in budget_results if b.status != "figure"]
    out = []
    for cid, title in BUDGET_CRITERIA.items():
        names = [n for n, t in (table or {}).items() if t["criterion"] == cid]
        rows = [b for b in gated if (b.name in names if table is not None
                                     else b.criterion == cid)]
        if not rows:
            out.append(Criterion.not_applicable(
                cid, title, "not measured by the subject's budgets"
                + (f" (its table's {', '.join(names)})" if names else "")))
            continue
        out.append(_budget_criterion(cid, title, rows))
    return out


def _budget_criterion(cid: int, title: str, rows: list[Any]) -> Criterion:
    worst = max(rows, key=lambda b: b.figure / b.threshold)
    busy = [b for b in rows if b.status == "not measured"]
    status = ("not met" if any(b.status == "fail" for b in rows)
              else "not measured" if busy else "met")
    return Criterion(
        cid, title, status,
        f"worst {worst.figure:.3f} ({worst.name}, {worst.config}, {worst.dtype}) "
        f"vs {worst.threshold:g}" + (f"; {len(busy)} {busy[0].note}" if busy else ""),
        _budget_how({b.kind for b in rows}))


def _budget_how(kinds: set[str]) -> str:
    """How a budget criterion was measured, by the kinds of its budgets: memory by
    tracemalloc, times by the thread's CPU time."""
    parts = []
    if kinds - {"memory"}:
        parts.append("times measured side by side in this run (thread CPU time; wall time "
                     "beside it to see a busy machine)")
    if "memory" in kinds:
        parts.append("memory: tracemalloc's peak of traced allocations, measured side by "
                     "side in this run")
    return "; ".join(parts) + "; see the budgets table"


def _quality_criteria(subj: Subject, reports: Path, ref: SubjectRef) -> list[Criterion]:
    """Criteria 10-12 over the subject's own code and test run (see :mod:`._testrun`)."""
    spec = ref if isinstance(ref, str) else None
    code, why_no_code = subject_code_of(subj, ref)
    run = ("gradcheck report --with-tests (runs the subject's test commands), or run them "
           "writing into the report's folder")
    no_run = "the subject declares no test commands (Subject.test_commands)"
    crit = []
    if not subj.test_commands or why_no_code:
        crit.append(Criterion.not_applicable(10, QUALITY_CRITERIA[10], why_no_code or no_run))
    else:
        coverage = read_coverage(reports / "coverage.json", code, command_dir(subj, spec))
        if coverage is None or not coverage["paths"]:
            crit.append(Criterion.judged(10, QUALITY_CRITERIA[10], None,
                                         f"no coverage of {', '.join(p.name for p in code)} "
                                         f"in {reports / 'coverage.json'} yet", run))
        else:
            pk, unmeasured = coverage["paths"], coverage["unmeasured"]
            crit.append(Criterion.judged(
                10, QUALITY_CRITERIA[10], all(v > 80 for v in pk.values()) and not unmeasured,
                ", ".join(f"{k} {v:.1f}%" for k, v in sorted(pk.items()))
                + (f"; not measured: {', '.join(unmeasured)}" if unmeasured else ""),
                "pytest-cov line coverage of the last test run, over the subject's code"))
    crit.append(_security_criterion(subj, code, why_no_code))
    junit = read_junit(reports) if subj.test_commands else None
    if not subj.test_commands:
        crit.append(Criterion.not_applicable(12, QUALITY_CRITERIA[12], no_run))
    elif junit is None:
        crit.append(Criterion.judged(12, QUALITY_CRITERIA[12], None,
                                     f"no {reports / 'junit.xml'} yet", run))
    else:
        bad = junit["failures"] + junit["errors"]
        crit.append(Criterion.judged(
            12, QUALITY_CRITERIA[12], bad == 0,
            f"{junit['tests']} tests, {bad} failed, {junit['skipped']} skipped",
            "pytest junit XML of the last test run"))
    return crit


def _security_criterion(subj: Subject, code: list[Path], why_no_code: str) -> Criterion:
    if why_no_code:
        return Criterion.not_applicable(11, QUALITY_CRITERIA[11], why_no_code)
    rules = (f"ruff rules {','.join(subj.security_select)}"
             + (f" without {','.join(subj.security_ignore)}" if subj.security_ignore else ""))
    security = security_findings(code, subj.security_select, subj.security_ignore)
    if not security.get("measured"):
        return Criterion.judged(11, QUALITY_CRITERIA[11], None, security.get("why", ""),
                                f"pip install ruff into this environment ({rules})")
    return Criterion.judged(
        11, QUALITY_CRITERIA[11], security["findings"] == 0,
        f"{security['findings']} finding(s)"
        + (f" {', '.join(security['rules'])}" if security["rules"] else "")
        + (f" in {', '.join(security['files'])}" if security["files"] else ""),
        f"{rules} (bandit's checks) in place of CodeQL, over "
        + ", ".join(p.name for p in code))


def _checks_criterion(checks: list[CheckResult], catalog: list[CatalogRow]) -> Criterion:
    n_pass = sum(r.passed for r in checks)
    caught = sum(r.verdict == "caught" for r in catalog)
    bad = [f"{r.name} {r.status}" for r in checks if not r.passed]
    more = f" and {len(bad) - 6} more" if len(bad) > 6 else ""
    return Criterion.judged(
        4, "passes gradient checking", n_pass == len(checks) and caught == len(catalog),
        f"{n_pass}/{len(checks)} layer and model checks passed"
        + (f" (failed: {', '.join(bad[:6])}{more})" if bad else "")
        + f"; the checker's bug catalog {caught}/{len(catalog)} caught with no false alarm",
        "check_vjp / check_layer per layer case and dtype, check_model per model case")


def verdict_of(failed: bool, criteria: Sequence[Criterion | Mapping[str, Any]]) -> str:
    """``fail`` if anything failed; else ``incomplete`` if a criterion was not run or not
    measured (a busy machine); else ``pass`` ("not applicable" criteria do not count).
    ``criteria``: :class:`~gradcheck.report._rows.Criterion` objects (or their ``to_dict()``)."""
    status = [c.status if isinstance(c, Criterion) else c["status"] for c in criteria]
    if failed or "not met" in status:
        return "fail"
    if "not run" in status or "not measured" in status:
        return "incomplete"
    return "pass"


def subject_code_of(subj: Subject, ref: SubjectRef) -> tuple[list[Path], str]:
    """The code criteria 10 and 11 look at: ``Subject.code``, or the subject's module file
    (with '' or why there is none)."""
    return subject_code(subj, ref if isinstance(ref, str) else None)
