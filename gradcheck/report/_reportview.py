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

__all__ = ["SCHEMA_VERSION", "check_anchor", "counts", "failure_line", "failures",
           "markdown_summary", "view"]

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
    and the anchor of its row. A check its passing test expected to fail (``expected``:
    a broken backward caught, a NaN named) is no failure."""
    out = []
    for k, c in enumerate(checks):
        if c.get("passed") or c.get("expected"):
            continue
        bad = [(j, i) for j, i in enumerate(c.get("inputs", [])) if not i.get("passed")]
        base = {"check": _label(c), "test": c.get("test", ""), "seed": c.get("seed")}
        if not bad:
            out.append({**base, "input": "", "status": c.get("status", ""),
                        "hint": c.get("hint", ""), "message": c.get("message", ""),
                        "anchor": check_anchor(k)})
        for j, i in bad:  # the check's message (the input's own when several fail: a
            # model's message names them all); the input's own note as its detail
            own = i.get("message", "") if len(bad) > 1 else ""
            out.append({**base, "input": i.get("name", ""), "status": i.get("status", ""),
                        "hint": i.get("hint", ""),
                        "message": own or c.get("message", "") or i.get("message", ""),
                        "detail": i.get("message", ""), "anchor": check_anchor(k, j)})
    return out


def failure_line(f: dict[str, Any], esc: Any = str) -> str:
    """One failure of :func:`failures` on a line: check, input, status, the hint (else
    the message) and the seed; ``esc`` escapes the user's text (Markdown)."""
    what = f"hint: {f['hint']}" if f.get("hint") else f.get("message", "")
    inp = f" input {esc(f['input'])}" if f.get("input") else ""
    return f"{esc(f['check'])}{inp} {esc(f['status'])}: {esc(what)} (seed={f.get('seed')})"


def counts(checks: Sequence[dict[str, Any]], faults: int = 0) -> dict[str, int]:
    """The checks' counts under machine keys: ``checks_failed`` are failures of the run,
    ``checks_caught`` failed checks their passing tests expected (pytest plugin)."""
    passed = sum(bool(c.get("passed")) for c in checks)
    caught = sum(bool(c.get("expected")) and not c.get("passed") for c in checks)
    return {"checks": len(checks), "checks_passed": passed,
            "checks_failed": len(checks) - passed - caught, "checks_caught": caught,
            "kinks_skipped": sum(int(c.get("kinks", 0)) for c in checks), "faults": faults}


def _plural(n: int, word: str) -> str:
    return f"{n} {word}{'' if n == 1 else 's'}"


def verdict_line(data: dict[str, Any]) -> list[str]:
    """The parts of the line beside the verdict: checks, kinks, faults, criteria."""
    c = data.get("counts") or counts(data.get("checks", []))
    parts = [f"{_plural(c['checks'], 'gradient check')}: {c['checks_passed']} passed, "
             f"{c['checks_failed']} failed"
             + (f", {c['checks_caught']} caught as their tests expected"
                if c.get("checks_caught") else "")]
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
    """The page's table of contents: (anchor, label), in page order; "What failed"
    whenever that block is shown (failing checks, or only criteria not met)."""
    unmet = [c for c in data.get("criteria", []) if c["status"] == "not met"]
    out = ([("failures", f"What failed ({len(fails) or len(unmet)})")]
           if fails or unmet else [])
    if data.get("criteria"):
        out.append(("criteria", "Criteria"))
    if data.get("checks"):
        out.append(("checks", "Gradient checks"))
    if charts:
        out.append(("charts", "Charts"))
    out += [(s["id"], _short(s["title"])) for s in data.get("sections", [])]
    return [*out, ("environment", "Environment")]


def _failing(checks: Sequence[dict[str, Any]], *, expected: bool
             ) -> list[tuple[int, dict[str, Any], list[tuple[int, dict[str, Any]]]]]:
    """The failing checks (``expected``: those their passing tests expected), each as
    (index, check, its inputs failing first with their indices)."""
    return [(k, c, sorted(enumerate(c.get("inputs", [])),
                          key=lambda ji: bool(ji[1].get("passed"))))
            for k, c in enumerate(checks)
            if not c.get("passed") and bool(c.get("expected")) == expected]


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
        "failing": _failing(checks, expected=False),
        "caught": _failing(checks, expected=True),
        "passing": [_passing_row(k, c) for k, c in enumerate(checks) if c.get("passed")],
        "contents": _contents(data, fails, charts),
        "unmet": [c for c in data.get("criteria", []) if c["status"] == "not met"],
        "folded": FOLDED,
    }


def markdown_summary(data: dict[str, Any], html: str = "", *, limit: int = 20) -> str:
    """A short Markdown summary of a report (for ``$GITHUB_STEP_SUMMARY``): the verdict
    and its line, the failures (at most ``limit``) with hint and seed, the criteria not
    met, and where the HTML report is."""
    icon = {"pass": ":white_check_mark:", "fail": ":x:"}.get(data.get("verdict", ""),
                                                              ":warning:")
    lines = [f"### {icon} {_md(data.get('title', 'gradcheck'))}: "
             f"{str(data.get('verdict', '')).upper()}", "",
             " · ".join(_md(p) for p in verdict_line(data)), ""]
    fails = data.get("failures")
    fails = failures(data.get("checks", [])) if fails is None else fails
    if fails:
        lines.append("**What failed**")
        lines += [f"- {failure_line(f, _md)}" for f in fails[:limit]]
        if len(fails) > limit:
            lines.append(f"- and {len(fails) - limit} more in the report")
        lines.append("")
    unmet = [c for c in data.get("criteria", []) if c["status"] == "not met"]
    if unmet:
        lines += ["**Criteria not met**",
                  *[f"- {c['id']}. {_md(c['name'])}: {_md(c['figure'])}" for c in unmet], ""]
    if html:
        lines.append(f"Report: {_md(html)} (and its JSON beside it)")
    return "\n".join(lines).rstrip() + "\n"


def _md(text: Any) -> str:
    """``text`` on one line, with the characters Markdown and HTML would read escaped."""
    out = " ".join(str(text).split())
    for ch in "\\`*_[]<>|":
        out = out.replace(ch, "\\" + ch)
    return out
