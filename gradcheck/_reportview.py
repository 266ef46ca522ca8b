"""What the HTML report shows, read from the report's data (the same dict as the JSON).

The page opens with the verdict, a one-line summary a user reads (gradient checks
passed and failed, kinks skipped, faults, criteria; not the checker's self-test catalog
nor budget counts, which have rows of their own), and, when anything failed, the
failures: each failing input with its check, hint and seed, linked to its row. Passing
checks fold into one row each; the per-input figures of every check are in the JSON.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

__all__ = ["SCHEMA_VERSION", "check_anchor", "counts", "failures", "view"]

#: Version of the report's JSON. 1: the keys of gradcheck 0.1 (display keys such as
#: ``"summary"`` and ``"budget clock"``); 2 adds ``schema_version``, ``counts`` (integers
#: under snake_case keys), ``failures``, ``catalog`` and ``budget_clock``, keeping every
#: key of version 1.
SCHEMA_VERSION = 2

#: Sections folded (a closed ``<details>``) on the page: reference material, not a verdict.
FOLDED = ("catalog",)


def check_anchor(k: int, j: int | None = None) -> str:
    """The id of check ``k``'s row (``check-3``) or of its input ``j`` (``check-3-1``)."""
    return f"check-{k}" if j is None else f"check-{k}-{j}"


def _label(c: dict[str, Any]) -> str:
    return str(c.get("name") or c.get("test") or "")


def failures(checks: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """One entry per failing input of every failing check (one per check that stopped
    before comparing anything): check, test (plugin), input, status, hint, seed, message
    and the anchor of its row."""
    out = []
    for k, c in enumerate(checks):
        if c.get("passed"):
            continue
        bad = [(j, i) for j, i in enumerate(c.get("inputs", [])) if not i.get("passed")]
        base = {"check": _label(c), "test": c.get("test", ""), "seed": c.get("seed")}
        if not bad:
            out.append({**base, "input": "", "status": c.get("status", ""),
                        "hint": c.get("hint", ""), "message": c.get("message", ""),
                        "anchor": check_anchor(k)})
        for j, i in bad:
            out.append({**base, "input": i.get("name", ""), "status": i.get("status", ""),
                        "hint": i.get("hint", ""),
                        "message": i.get("message", "") or c.get("message", ""),
                        "anchor": check_anchor(k, j)})
    return out


def counts(checks: Sequence[dict[str, Any]], faults: int = 0) -> dict[str, int]:
    """The checks' counts under machine keys."""
    passed = sum(bool(c.get("passed")) for c in checks)
    return {"checks": len(checks), "checks_passed": passed,
            "checks_failed": len(checks) - passed,
            "kinks_skipped": sum(int(c.get("kinks", 0)) for c in checks), "faults": faults}


def _plural(n: int, word: str) -> str:
    return f"{n} {word}{'' if n == 1 else 's'}"


def verdict_line(data: dict[str, Any]) -> list[str]:
    """The parts of the line beside the verdict: checks, kinks, faults, criteria."""
    c = data.get("counts") or counts(data.get("checks", []))
    parts = [f"{_plural(c['checks'], 'gradient check')}: {c['checks_passed']} passed, "
             f"{c['checks_failed']} failed"]
    if c.get("kinks_skipped"):
        parts.append(f"{_plural(c['kinks_skipped'], 'kink')} skipped")
    if c.get("faults"):
        parts.append(f"{_plural(c['faults'], 'case')} with no result")
    crit = data.get("criteria") or []
    if crit:
        by: dict[str, int] = {}
        for x in crit:
            by[x["status"]] = by.get(x["status"], 0) + 1
        parts.append("criteria: " + ", ".join(f"{n} {s}" for s, n in by.items()))
    return parts


def _passing_row(k: int, c: dict[str, Any]) -> dict[str, Any]:
    """A passing check in one row: its worst input by error over tolerance."""
    inputs = [i for i in c.get("inputs", []) if i.get("checked")]

    def ratio(i: dict[str, Any]) -> float:
        err, tol = i.get("max_abs_error"), i.get("atol")
        if isinstance(err, (int, float)) and isinstance(tol, (int, float)) and tol > 0:
            return float(err) / float(tol)
        return 0.0

    worst = max(inputs, key=ratio, default=None)
    return {"anchor": check_anchor(k), "label": _label(c), "c": c, "worst": worst,
            "n_inputs": len(c.get("inputs", []))}


def _short(title: str) -> str:
    """A section's title for the contents: up to its colon or parenthesis."""
    return title.split(":", 1)[0].split(" (", 1)[0]


def _contents(data: dict[str, Any], fails: list[dict[str, Any]], charts: bool
              ) -> list[tuple[str, str]]:
    """The page's table of contents: (anchor, label), in page order."""
    out = [("failures", f"What failed ({len(fails)})")] if fails else []
    if data.get("criteria"):
        out.append(("criteria", "Criteria"))
    if data.get("checks"):
        out.append(("checks", "Gradient checks"))
    if charts:
        out.append(("charts", "Charts"))
    out += [(s["id"], _short(s["title"])) for s in data.get("sections", [])]
    return [*out, ("environment", "Environment")]


def view(data: dict[str, Any], charts: bool) -> dict[str, Any]:
    """Everything the template needs beyond ``data``: the verdict line, the failures,
    the checks split into failing (index, check, its inputs failing first, each with
    its index) and passing rows, the contents and which criteria are not met."""
    checks = data.get("checks", [])
    fails = data.get("failures")
    fails = failures(checks) if fails is None else fails
    return {
        "line": verdict_line(data),
        "failures": fails,
        "failing": [(k, c, sorted(enumerate(c.get("inputs", [])),
                                  key=lambda ji: bool(ji[1].get("passed"))))
                    for k, c in enumerate(checks) if not c.get("passed")],
        "passing": [_passing_row(k, c) for k, c in enumerate(checks) if c.get("passed")],
        "contents": _contents(data, fails, charts),
        "unmet": [c for c in data.get("criteria", []) if c["status"] == "not met"],
        "folded": FOLDED,
    }
