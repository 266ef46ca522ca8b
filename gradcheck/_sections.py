"""The report's data: sections, charts and summary built from a verification's results."""

from __future__ import annotations

import json
import math
import time
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from ._result import CheckResult
from .subject import Subject, TrainingRun

__all__ = ["report_data"]


def _budget_rows(budget_results: list[Any]) -> list[dict[str, Any]]:
    return [{"budget": b.title, "criterion": b.criterion, "config": b.config,
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
    if b.kind == "memory":
        return "tracemalloc"
    return "wall" if b.clock.startswith("wall") else "thread CPU"


def _speed_section(budget_results: list[Any], env: dict[str, str]) -> dict[str, Any]:
    import importlib.util

    speed = [b for b in budget_results if b.name == "speed_vs_torch"]
    title = "Training step against PyTorch eager"
    if not speed:
        why = ("torch is not installed: pip install -e '.[compare]'"
               if importlib.util.find_spec("torch") is None
               else "not measured at this level or by this subject")
        return {"id": "speed", "title": title, "text": f"not measured ({why}).", "rows": []}
    rows = [{"dtype": b.dtype, "threads": b.details["threads"],
             "numpy / torch step time": b.figure, "noise (se)": b.noise,
             "speed vs torch": 1.0 / b.figure, "pairs": b.pairs,
             "verdict": b.note or b.status} for b in speed]
    return {"id": "speed", "title": title,
            "text": "The model and its PyTorch twin, each in a process of its own with the same "
                    "thread count, stepped in turn (A B A B); median of the pair ratios. "
                    f"Measured on CPU {env['cpu']}, BLAS core type {env['blas_core_type']}; "
                    "the budget is speed >= 0.7 (ratio <= 1.43).",
            "columns": list(rows[0]), "rows": rows}


def _training_rows(runs: list[TrainingRun]) -> list[dict[str, Any]]:
    return [{"run": r.label, "epochs": len(r.losses),
             "first loss": float(r.losses[0]) if r.losses else "-",
             "last loss": float(r.losses[-1]) if r.losses else "-",
             "reduction": r.reduction, "finite": r.finite, "refused steps": r.refused_steps,
             "met": "stress run" if r.stress else ("met" if r.reduction > 0.5 and r.finite
                                                   else "not met")} for r in runs]


def _hint_summary(catalog: list[dict[str, Any]]) -> str:
    parts = []
    for dtype in ("float64", "float32"):
        rows = [r for r in catalog if r["dtype"] == dtype]
        if rows:
            named = sum(r.get("hint names the class") == "named" for r in rows)
            wrong = sum(r.get("hint names the class") == "misleading" for r in rows)
            parts.append(f"{dtype}: the hint names the class of {named} of {len(rows)} bugs "
                         f"({100 * named / len(rows):.0f}%), {wrong} misleading")
    return "; ".join(parts) + "."


def _sections(subject: Subject, catalog: list[dict[str, Any]], runs: list[TrainingRun],
              budget_results: list[Any], env: dict[str, str]) -> list[dict[str, Any]]:
    tput = [b for b in budget_results if b.name == "throughput"]
    sections: list[dict[str, Any]] = [
        {"id": "catalog", "title": "The checker's bug catalog: every classic bug against its "
                                   "correct twin",
         "text": _hint_summary(catalog),
         "columns": ["bug", "dtype", "caught", "false alarms", "verdict", "hint given",
                     "hint names the class"],
         "rows": catalog},
        {"id": "training", "title": "Training runs",
         "text": "" if runs else "not applicable: the subject declares no training run.",
         "columns": ["run", "epochs", "first loss", "last loss", "reduction", "finite",
                     "refused steps", "met"], "rows": _training_rows(runs)},
        {"id": "budgets", "title": "Performance budgets",
         "text": "Each a ratio of two measurements side by side in this run (A B A B ..., "
                 "median of the pair ratios), with one BLAS thread, timed by the CPU time "
                 "of the measuring thread (time.thread_time), the wall time beside it; a "
                 "budget fails only when the median exceeds its threshold by more than 3 "
                 "standard errors. When the two clocks disagree (other processes kept the "
                 "thread waiting), a figure over its threshold is 'not measured: machine "
                 "busy', never a failure. Memory: tracemalloc's peak of traced allocations."
                 if budget_results else "not applicable: the subject declares no budgets.",
         "columns": ["budget", "criterion", "config", "dtype", "figure", "threshold", "margin",
                     "noise (se)", "pairs", "clock", "verdict"],
         "rows": _budget_rows(budget_results)},
    ]
    if subject.budgets is not None:
        sections.append(_speed_section(budget_results, env))
    checker = _checker_rows(budget_results)
    if checker:
        sections.append({
            "id": "checker", "title": "What a check costs, per mode",
            "text": "Evaluations of the forward (or loss) and wall time of each mode on the "
                    f"subject's layers (seconds: this CPU only, {env['cpu']}); the ratios "
                    "against torch.autograd.gradcheck on the same function and the cost of "
                    "check_model in training steps were measured side by side in this run.",
            "columns": ["check", "mode", "elements", "evaluations", "seconds", "ratio",
                        "threshold"], "rows": checker})
    if tput:
        sections.append({
            "id": "throughput", "title": "Training-step throughput on this machine (no gate)",
            "text": f"Absolute figures hold for this CPU only ({env['cpu']}, BLAS "
                    f"{env['blas']}); compare machines by the ratios above.",
            "columns": ["dtype", "tokens/s", "median step (s)", "BLAS threads"],
            "rows": [{"dtype": b.dtype, "tokens/s": round(b.figure),
                      "median step (s)": b.details["median_step_s"],
                      "BLAS threads": b.details.get("blas_threads", "")} for b in tput]})
    return sections


def _checker_rows(budget_results: list[Any]) -> list[dict[str, Any]]:
    """The checker's figures and ratios (from the budget results)."""
    rows: list[dict[str, Any]] = []
    for b in budget_results:
        d = b.details
        if b.name == "checker_mode":
            rows.append({"check": d["label"], "mode": d["mode"], "elements": d["elements"],
                         "evaluations": d["evaluations"], "seconds": d["seconds"],
                         "ratio": "", "threshold": ""})
        elif b.name in ("checker_directional_vs_torch", "checker_full_vs_torch"):
            mode = "directional" if "directional" in b.name else "full"
            rows.append({"check": f"{b.config} / torch gradcheck "
                                  f"({'fast' if mode == 'directional' else 'slow'} mode)",
                         "mode": mode, "elements": "", "evaluations": d.get("evaluations", ""),
                         "seconds": d.get("check_seconds", ""), "ratio": b.figure,
                         "threshold": b.threshold})
        elif b.name == "checker_twin":
            rows.append({"check": f"check_model, {b.config} config, float32 with its float64 "
                                  "twin / float32 training step", "mode": "twin",
                         "elements": "", "evaluations": d.get("evaluations", ""),
                         "seconds": d.get("check_seconds", ""), "ratio": b.figure,
                         "threshold": ""})
        elif b.name == "checker_cost":
            rows.append({"check": f"check_model, {b.config} config, {b.dtype} / training step",
                         "mode": "default", "elements": "",
                         "evaluations": d.get("evaluations", ""),
                         "seconds": d.get("check_seconds", ""), "ratio": b.figure,
                         "threshold": b.threshold})
    return rows


def _test_run_sections(reports: Path, snap_section: dict[str, Any]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    rows = [row for f in sorted(reports.glob("properties-*.json"))
            for row in json.loads(f.read_text()).get("rows", [])]
    if rows:
        rows.sort(key=lambda r: r["test"])
        out.append({
            "id": "properties", "title": "Property and fuzz tests (last test run)",
            "text": f"{len(rows)} property/fuzz tests tried "
                    f"{sum(r['examples'] for r in rows)} examples; "
                    f"{sum(r['outcome'] == 'failed' for r in rows)} failed.",
            "columns": ["test", "examples", "outcome", "note"], "rows": rows})
    if snap_section:
        out.append({"id": "snapshots", "title": "Gradient snapshot drift",
                    "text": snap_section["text"],
                    "columns": ["case", "parameter", "status", "max_abs", "max_rel",
                                "worst_index", "detail"],
                    "rows": snap_section.get("rows", [])})
    return out


def _faults_section(faults: list[dict[str, Any]]) -> list[dict[str, Any]]:
    if not faults:
        return []
    return [{"id": "faults", "title": "Cases that gave no result",
             "text": f"{len(faults)} case(s) or task(s) raised, crashed or ran past their "
                     "time limit; each ran in a process of its own, so the others ran. "
                     "error: an exception (its type and message); crashed: the process "
                     "died (the signal, or its exit status); timeout: stopped at the time "
                     "limit (gradcheck report --case-timeout).",
             "columns": ["case", "status", "message", "signal", "where"],
             "rows": [{k: f[k] for k in ("case", "status", "message", "signal", "where")}
                      for f in faults]}]


def report_data(
    subject: Subject, level: str, seed: int, verdict: str, t0: float,
    checks: list[CheckResult], catalog: list[dict[str, Any]], runs: list[TrainingRun],
    budget_results: list[Any], crit: list[dict[str, Any]], reports: Path,
    snap_section: dict[str, Any], faults: list[dict[str, Any]] | None = None,
) -> dict[str, Any]:
    """Everything the HTML and JSON report show; ``faults``: the cases and tasks that
    raised, crashed or timed out (``case``, ``status``, ``message``, ``signal``,
    ``where``)."""
    faults = faults or []
    from .report import bar_chart_svg, environment, line_chart_svg

    env = environment()
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
    return {
        "title": subject.description or f"gradcheck verification of {subject.name}",
        "subject": subject.name,
        "verdict": verdict,
        "generated": datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "mode": level, "seed": seed, "seconds": round(time.perf_counter() - t0, 1),
        "summary": {
            "gradient checks": len(checks), "passed": sum(r.passed for r in checks),
            "kinks skipped": sum(r.kinks for r in checks),
            "bugs caught": f"{sum(r['verdict'] == 'caught' for r in catalog)}/{len(catalog)}",
            "budgets passed": f"{sum(b.passed for b in budget_results)}/{len(budget_results)}",
            "budgets not measured (machine busy)":
                sum(b.status == "not measured" for b in budget_results),
            "faults (error, crashed, timeout)": len(faults),
        },
        "criteria": crit,
        "checks": [r.to_dict() for r in checks],
        "sections": _faults_section(faults) + _sections(subject, catalog, runs, budget_results,
                                                         env)
        + _test_run_sections(reports, snap_section),
        "faults": faults,
        "budgets": [b.to_dict() for b in budget_results],
        "budget clock": _budget_clock(budget_results),
        "speed_vs_torch": [b.details for b in budget_results if b.name == "speed_vs_torch"],
        "training": [{"label": r.label, "losses": list(r.losses), "finite": r.finite,
                      "refused_steps": r.refused_steps, "stress": r.stress} for r in runs],
        "environment": env,
        "charts_svg": charts,
    }
