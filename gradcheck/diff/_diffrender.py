"""Renderings of a :class:`~gradcheck.diff.run.DiffResult`: the terminal table, a Markdown
summary short enough for a pull-request comment or ``$GITHUB_STEP_SUMMARY``, and a
self-contained HTML page in the style of the verification report (Jinja2, autoescaped).
"""

from __future__ import annotations

from typing import Any

from markupsafe import Markup

from .run import _LABEL_LIMIT, DiffResult, SpeedChange

__all__ = ["render_diff_html", "render_markdown", "render_text"]

_SPEED_ORDER = {"slower": 0, "faster": 1, "same": 2, "too fast": 3}


def _speed_rows(result: DiffResult) -> list[SpeedChange]:
    """Slowdowns that are regressions first, then those of a fix, faster, the rest by
    ratio (largest first)."""
    return sorted(result.speed, key=lambda s: (_SPEED_ORDER[s.status], s.part_of_fix,
                                               -s.ratio))


def _headline(result: DiffResult) -> str:
    n = len(result.regressions)
    verdict = "PASS: no regression" if not n else f"FAIL: {n} regression{'s' * (n != 1)}"
    if not result.base_checked:
        verdict += f" (BASE not checked: {result.base_unchecked})"
    elif result.cases and all("absent" in (c.base, c.head) for c in result.cases):
        verdict += " (no case at both revisions)"
    return (f"gradcheck diff {result.base} ({result.base_commit[:12]}) -> {result.head}: "
            f"{verdict}")


def _speed_summary(result: DiffResult) -> str:
    if not result.timed:
        return "speed: not timed (--no-speed)"
    if not result.speed:
        return ("speed: nothing timed (no case ok or failing at both revisions without a "
                "fault; see the notes)" if result.cases else "speed: nothing timed (no case)")
    timed = [s for s in result.speed if s.status != "too fast"]  # the rows shown
    busy = sum(s.busy for s in result.speed)
    fast = len(result.speed) - len(timed)
    fix = sum(s.part_of_fix and s.status == "slower" for s in result.speed)
    ungated = sum(s.status == "slower" and not s.gated for s in result.speed)
    extremes = "every call too fast to time"
    if timed:
        worst = max(timed, key=lambda s: s.ratio)
        best = min(timed, key=lambda s: s.ratio)
        extremes = (f"largest ratio {worst.ratio:.2f} ({worst.label}), smallest "
                    f"{best.ratio:.2f} ({best.label})")
    return (f"speed: {len(result.speed)} calls timed side by side (HEAD/BASE thread CPU "
            f"time, median of {result.speed[0].pairs} pairs); {extremes}"
            + (f"; {ungated} slower, not gated (--max-slowdown inf; labelled by "
               f"{_LABEL_LIMIT:g})" if ungated else "")
            + (f"; {fast} too fast to time (changed by under {result.speed_floor * 1e6:g} us "
               "a call: not gated)" if fast else "")
            + (f"; {fix} slower as part of a fix (not a regression)" if fix else "")
            + (f"; machine busy during {busy}" if busy else ""))


def _values_summary(result: DiffResult) -> str:
    """``N arrays compared, M drifted`` and the cases whose values could not be
    computed at a revision (never counted as drift)."""
    n = len(result.not_computed)
    return (f"{result.compared_arrays} arrays compared, {len(result.values)} drifted"
            + (f"; {n} case{'s' * (n != 1)} not computed (raised at a revision)" if n
               else ""))


def render_text(result: DiffResult, *, max_rows: int = 12) -> str:
    """The terminal table: verdict, regressions, fixes, other changes, drift, speed."""
    lines = [_headline(result), ""]
    if result.regressions:
        lines += ["Regressions:", *(f"  {r}" for r in result.regressions), ""]
    if result.fixes:
        lines += ["Fixes:", *(f"  {c.case}: {c.change} (at BASE: {c.base_detail})"
                              for c in result.fixes), ""]
    other = [c for c in result.cases if not (c.regression or c.fixed or c.change == "ok -> ok")]
    if other:
        lines += ["Other changes:", *(f"  {c.case}: {c.change} {c.detail}".rstrip()
                                      for c in other), ""]
    fix_drift = [v for v in result.values if v.part_of_fix]
    if fix_drift:
        lines += ["Drift that is part of a fix:", *(f"  {v.line()}" for v in fix_drift), ""]
    lost = [n for n in result.not_computed if not (n.regression or n.evidence)]
    if lost:
        lines += ["Values not computed:", *(f"  {n.line()}" for n in lost), ""]
    n_ok = sum(c.change == "ok -> ok" for c in result.cases)
    lines.append(f"checks: {len(result.cases)} cases, {n_ok} ok -> ok; values: "
                 f"{_values_summary(result)}")
    lines.append(_speed_summary(result))
    rows = [s for s in _speed_rows(result) if s.status in ("slower", "faster")] or \
        _speed_rows(result)[:3]
    if rows:
        lines.append(f"  {'case':<52} {'ratio':>7} {'+-':>6}  {'BASE s':>9} {'HEAD s':>9}  "
                     "status")
        for s in rows[:max_rows]:
            lines.append(f"  {s.label[:52]:<52} {s.ratio:>7.2f} {s.se:>6.2f}  "
                         f"{s.base_seconds:>9.2e} {s.head_seconds:>9.2e}  {s.verdict}"
                         + (" (machine busy)" if s.busy else ""))
    lines += [f"note: {n}" for n in result.notes]
    lines.append(f"({result.seconds:.0f} s; subject {result.subject}; level {result.level}; "
                 f"seed {result.seed})")
    return "\n".join(lines)


def render_markdown(result: DiffResult, *, max_rows: int = 10) -> str:
    """A short Markdown summary: verdict line, regressions, fixes, drift, speed."""
    icon = ":x:" if result.regressions else ":white_check_mark:"
    out = [f"### {icon} {_headline(result)}", ""]
    if result.regressions:
        out += ["**Regressions**", ""] + [f"- `{r}`" for r in result.regressions[:max_rows]]
        if len(result.regressions) > max_rows:
            out.append(f"- ... and {len(result.regressions) - max_rows} more (see the JSON)")
        out.append("")
    if result.fixes:
        out += ["**Fixes**", ""] + [f"- `{c.case}`: {c.change}" for c in result.fixes] + [""]
    fix_drift = [v for v in result.values if v.part_of_fix]
    n = len(result.not_computed)
    out.append(f"**Drift**: {len(result.values)} of {result.compared_arrays} arrays"
               + (f" ({len(fix_drift)} part of a fix)" if fix_drift else "")
               + (f"; values of {n} case{'s' * (n != 1)} not computed (raised at a "
                  "revision)" if n else ""))
    out += ["", f"**Speed**: {_speed_summary(result).removeprefix('speed: ')}"]
    rows = [s for s in _speed_rows(result) if s.status in ("slower", "faster")][:max_rows]
    if rows:
        out += ["", "| case | HEAD/BASE | +- | status |", "|---|---:|---:|---|"]
        out += [f"| `{s.label}` | {s.ratio:.2f} | {s.se:.2f} | {s.verdict} |" for s in rows]
    if result.base_subject == "borrowed":
        ran = ("could not be imported with" if not result.base_checked else "ran against")
        out += ["", f"Subject: not in {result.base}; {result.subject_file} {ran} "
                    f"{result.base}'s code."]
    if result.head_subject == "borrowed":
        out += ["", f"Subject: not in {result.head} either; the working tree's file ran "
                    f"at {result.head}."]
    out += ["", f"<sub>{len(result.cases)} cases checked at {result.level} level, seed "
            f"{result.seed}, max slowdown {result.max_slowdown:g}, {result.seconds:.0f} s"
            "</sub>"]
    return "\n".join(out) + "\n"


def render_diff_html(result: DiffResult) -> str:
    """The self-contained HTML page (Jinja2, autoescaped; data as escaped JSON)."""
    from jinja2 import Environment, PackageLoader, select_autoescape

    from ..report.render import bar_chart_svg, to_json

    env = Environment(loader=PackageLoader("gradcheck.report.render", "templates"),
                      autoescape=select_autoescape(["html"], default_for_string=True,
                                                   default=True))
    env.filters["g"] = lambda v: (
        f"{v:.3g}" if isinstance(v, (int, float)) and not isinstance(v, bool) else v)
    rows = [(s.label[:42], s.ratio, result.max_slowdown) for s in _speed_rows(result)[:40]]
    chart = bar_chart_svg(rows, title="HEAD / BASE time per call (black tick: the limit)",
                          log=False) if rows else Markup("")
    payload = to_json(result.to_dict())
    payload = payload.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")
    data: dict[str, Any] = {"headline": _headline(result), "speed_summary":
                            _speed_summary(result), "speed_rows": _speed_rows(result)}
    return env.get_template("diff.html").render(
        r=result, d=data, chart=chart, payload=Markup(payload))  # noqa: S704
