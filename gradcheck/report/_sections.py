"""The report's data: sections, charts and summary built from a verification's typed
results (:mod:`gradcheck.report._rows`, :class:`~gradcheck.report.budgets.BudgetResult`,
:class:`~gradcheck.CheckResult`); the subject's own budget tables come from its
``budget_sections``."""

from __future__ import annotations

import json
import math
import time
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from ..check._result import CheckResult
from ..subject import Subject, TrainingRun
from ._rows import CatalogRow, Criterion, FaultRow, Section

__all__ = ["report_data"]


def _budget_rows(budget_results: list[Any]) -> list[dict[str, Any]]:
    return [{"budget": b.title, "criterion": b.criterion or "-", "config": b.config,
             "dtype": b.dtype, "figure": b.figure,
             "threshold": b.threshold if math.isfinite(b.threshold) else "-",
             "margin": b.margin if math.isfinite(b.threshold) else "-",
             "noise (se)": b.noise, "pairs": b.pairs, "clock": _clock_label(b),
             "verdict": b.note or b.status}
            for b in budget_results]


def _budget_clock(budget_results: list[Any]) -> str:
    from .budgets import CLOCK

    return CLOCK if budget_results else ""


def _clock_label(b: Any) -> str:
    if b.kind == "memory" or b.clock.startswith("tracemalloc"):
        return "tracemalloc"
    return "wall" if b.clock.startswith("wall") else "thread CPU"


def _declared_sections(subject: Subject, budget_results: list[Any], env: dict[str, str]
                       ) -> list[Section]:
    """The subject's own tables of budget results (:class:`~gradcheck.BudgetSection`)."""
    out = []
    for sec in subject.budget_sections:
        rows = [dict(sec.row(b)) for b in budget_results if b.name in sec.budgets]
        if rows:
            out.append(Section(sec.id, sec.title, sec.text.format_map(env), list(rows[0]),
                               rows))
        elif sec.empty is not None:
            out.append(Section(sec.id, sec.title, sec.empty()))
    return out


def _training_rows(runs: list[TrainingRun]) -> list[dict[str, Any]]:
    return [{"run": r.label, "epochs": len(r.losses),
             "first loss": float(r.losses[0]) if r.losses else "-",
             "last loss": float(r.losses[-1]) if r.losses else "-",
             "reduction": r.reduction, "finite": r.finite, "refused steps": r.refused_steps,
             "met": "stress run" if r.stress else ("met" if r.reduction > 0.5 and r.finite
                                                   else "not met")} for r in runs]


def _hint_summary(catalog: list[CatalogRow]) -> str:
    parts = []
    for dtype in ("float64", "float32"):
        rows = [r for r in catalog if r.dtype == dtype]
        if rows:
            named = sum(r.hint_verdict == "named" for r in rows)
            wrong = sum(r.hint_verdict == "misleading" for r in rows)
            parts.append(f"{dtype}: the hint names the class of {named} of {len(rows)} bugs "
                         f"({100 * named / len(rows):.0f}%), {wrong} misleading")
    return "; ".join(parts) + "."


_BUDGETS_TEXT = (
    "Each a ratio of two measurements side by side in this run (A B A B ..., median of the "
    "pair ratios), with one BLAS thread, timed by the CPU time of the measuring thread "
    "(time.thread_time), the wall time beside it; a budget fails only when the median "
    "exceeds its threshold by more than 3 standard errors. When the two clocks disagree "
    "(other processes kept the thread waiting), a figure over its threshold is 'not "
    "measured: machine busy', never a failure. Memory: tracemalloc's peak of traced "
    "allocations.")


def _sections(subject: Subject, catalog: list[CatalogRow], runs: list[TrainingRun],
              budget_results: list[Any], env: dict[str, str]) -> list[Section]:
    return [
        Section("catalog", "The checker's bug catalog: every classic bug against its "
                           "correct twin", _hint_summary(catalog),
                ["bug", "dtype", "caught", "false alarms", "verdict", "hint given",
                 "hint names the class"], [r.to_dict() for r in catalog]),
        Section("training", "Training runs",
                "" if runs else "not applicable: the subject declares no training run.",
                ["run", "epochs", "first loss", "last loss", "reduction", "finite",
                 "refused steps", "met"], _training_rows(runs)),
        Section("budgets", "Performance budgets",
                _BUDGETS_TEXT if budget_results
                else "not applicable: the subject declares no budgets.",
                ["budget", "criterion", "config", "dtype", "figure", "threshold", "margin",
                 "noise (se)", "pairs", "clock", "verdict"], _budget_rows(budget_results)),
        *_declared_sections(subject, budget_results, env),
    ]


def _test_run_sections(reports: Path, snap_section: dict[str, Any]) -> list[Section]:
    out: list[Section] = []
    rows = [row for f in sorted(reports.glob("properties-*.json"))
            for row in json.loads(f.read_text()).get("rows", [])]
    if rows:
        rows.sort(key=lambda r: r["test"])
        out.append(Section(
            "properties", "Property and fuzz tests (last test run)",
            f"{len(rows)} property/fuzz tests tried {sum(r['examples'] for r in rows)} "
            f"examples; {sum(r['outcome'] == 'failed' for r in rows)} failed.",
            ["test", "examples", "outcome", "note"], rows))
    if snap_section:
        out.append(Section("snapshots", "Gradient snapshot drift", snap_section["text"],
                           ["case", "parameter", "status", "max_abs", "max_rel",
                            "worst_index", "detail"], snap_section.get("rows", [])))
    return out


def _faults_section(faults: list[FaultRow]) -> list[Section]:
    if not faults:
        return []
    columns = ["case", "status", "message", "signal", "where"]
    return [Section(
        "faults", "Cases that gave no result",
        f"{len(faults)} case(s) or task(s) raised, crashed or ran past their time limit; "
        "each ran in a process of its own, so the others ran. error: an exception (its "
        "type and message), also one that the forward or backward raised inside a "
        "check (that check's status is error); crashed: the process died (the signal, "
        "or its exit status); "
        "timeout: stopped at the time limit (gradcheck report --case-timeout).",
        columns, [{k: f.to_dict()[k] for k in columns} for f in faults])]


def _charts(runs: list[TrainingRun], budget_results: list[Any]) -> dict[str, Any]:
    from .render import bar_chart_svg, line_chart_svg

    charts = {}
    curves: dict[str, Sequence[float]] = {r.label: list(r.losses[:300]) for r in runs
                                          if not r.stress}
    if curves:
        charts["loss"] = line_chart_svg(curves, title="training loss per epoch",
                                        xlabel="epoch", ylabel="loss")
    gated = [b for b in budget_results if b.kind != "figure"]
    if gated:
        charts["budgets"] = bar_chart_svg(
            [(f"{b.name} {b.config} {b.dtype}", b.figure / b.threshold, 1.0) for b in gated],
            title="budget figure / threshold (must stay left of the tick at 1)", log=False)
    return charts


def _counts(checks: list[dict[str, Any]], catalog: list[CatalogRow], budget_results: list[Any],
            faults: list[FaultRow]) -> dict[str, int]:
    """The summary as integers under machine keys (schema 2)."""
    from ._reportview import counts

    return {**counts(checks, len(faults)),
            "catalog_bugs": len(catalog),
            "catalog_caught": sum(r.verdict == "caught" for r in catalog),
            "budgets": len(budget_results),
            "budgets_passed": sum(bool(b.passed) for b in budget_results),
            "budgets_failed": sum(b.status == "fail" for b in budget_results),
            "budgets_not_measured": sum(b.status == "not measured" for b in budget_results)}


def _summary(checks: list[CheckResult], catalog: list[CatalogRow], budget_results: list[Any],
             faults: list[FaultRow]) -> dict[str, Any]:
    return {
        "gradient checks": len(checks), "passed": sum(r.passed for r in checks),
        "kinks skipped": sum(r.kinks for r in checks),
        "bugs caught": f"{sum(r.verdict == 'caught' for r in catalog)}/{len(catalog)}",
        "budgets passed": f"{sum(b.passed for b in budget_results)}/{len(budget_results)}",
        "budgets not measured (machine busy)":
            sum(b.status == "not measured" for b in budget_results),
        "faults (error, crashed, timeout)": len(faults),
    }


def report_data(
    subject: Subject, level: str, seed: int, verdict: str, t0: float,
    checks: list[CheckResult], catalog: list[CatalogRow], runs: list[TrainingRun],
    budget_results: list[Any], crit: list[Criterion], reports: Path,
    snap_section: dict[str, Any], faults: list[FaultRow] | None = None,
) -> dict[str, Any]:
    """Everything the HTML and JSON report show, from the typed results: ``crit`` the
    criteria, ``catalog`` the bug catalog, ``faults`` the cases and tasks that raised,
    crashed or timed out."""
    faults = faults or []
    from ._reportview import SCHEMA_VERSION, failures
    from .render import environment

    env = environment()
    sections = (_faults_section(faults) + _sections(subject, catalog, runs, budget_results, env)
                + _test_run_sections(reports, snap_section))
    check_dicts = [r.to_dict() for r in checks]
    return {
        "schema_version": SCHEMA_VERSION,
        "title": subject.description or f"gradcheck verification of {subject.name}",
        "subject": subject.name,
        "verdict": verdict,
        "generated": datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "mode": level, "seed": seed, "seconds": round(time.perf_counter() - t0, 1),
        "summary": _summary(checks, catalog, budget_results, faults),
        "counts": _counts(check_dicts, catalog, budget_results, faults),
        "failures": failures(check_dicts),
        "criteria": [c.to_dict() for c in crit],
        "checks": check_dicts,
        "catalog": [r.machine_dict() for r in catalog],
        "sections": [s.to_dict() for s in sections],
        "faults": [f.to_dict() for f in faults],
        "budgets": [b.to_dict() for b in budget_results],
        "budget clock": _budget_clock(budget_results),
        "budget_clock": _budget_clock(budget_results),
        "training": [{"label": r.label, "losses": list(r.losses), "finite": r.finite,
                      "refused_steps": r.refused_steps, "stress": r.stress} for r in runs],
        "environment": env,
        "charts_svg": _charts(runs, budget_results),
    }
