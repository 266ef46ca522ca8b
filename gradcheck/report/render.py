"""Self-contained HTML and JSON verification reports.

The HTML is rendered by Jinja2 with autoescaping on; charts are inline SVG made here
from numbers only (labels are escaped). The page links the JSON file written beside it
(``json_href``); a page with no JSON beside it (the pytest plugin's without
``--gradcheck-json``) carries the data as compact JSON inside a
``<script type="application/json">`` block with ``<`` escaped, so nothing a user named
can break out of it. Files are written atomically (:func:`gradcheck.run._io.write_atomic`),
with the mode the umask gives a new file.
"""

from __future__ import annotations

import json
import math
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from markupsafe import Markup, escape

from ..check._json import plain
from ..run._io import write_atomic
from ._env import environment
from ._reportview import SCHEMA_VERSION, counts, failures, view

__all__ = [
    "bar_chart_svg",
    "build_plugin_report",
    "environment",
    "line_chart_svg",
    "render_html",
    "write_html",
    "write_json",
]


# -- writing ---------------------------------------------------------------------------
def _write_atomic(path: Path, text: str) -> None:
    write_atomic(path, text.encode("utf-8"))


def to_json(data: dict[str, Any]) -> str:
    """Standard JSON (no NaN literals), sorted keys, indented."""
    return json.dumps(plain(data), indent=1, sort_keys=True, allow_nan=False)


def write_json(path: Path, data: dict[str, Any]) -> None:
    """Write ``data`` as JSON atomically."""
    _write_atomic(path, to_json(data) + "\n")


def write_html(path: Path, data: dict[str, Any], *, json_href: str | None = None) -> None:
    """Render ``data`` and write the HTML atomically; ``json_href`` links the JSON file
    of the same data (else the page carries the data itself)."""
    _write_atomic(path, render_html(data, json_href=json_href))


# -- charts ----------------------------------------------------------------------------
def _fmt(v: float) -> str:
    return f"{v:.3g}"


def line_chart_svg(
    series: dict[str, Sequence[float]],
    *,
    title: str,
    xlabel: str,
    ylabel: str,
    width: int = 560,
    height: int = 260,
) -> Markup:
    """An inline SVG line chart of one or more series against their index."""
    pad_l, pad_r, pad_t, pad_b = 56, 16, 28, 40
    vals = [float(v) for s in series.values() for v in s if math.isfinite(float(v))]
    n = max((len(s) for s in series.values()), default=0)
    parts = _svg_head(title, width, height)
    if not vals or n < 2:
        parts.append(f'<text x="{width / 2}" y="{height / 2}" text-anchor="middle">no data</text>')
        parts.append("</svg>")
        return Markup("".join(parts))  # noqa: S704 - built from escaped parts
    lo, hi = min(vals), max(vals)
    if hi == lo:
        hi = lo + 1.0
    w, h = width - pad_l - pad_r, height - pad_t - pad_b

    def px(i: int) -> float:
        return pad_l + w * i / (n - 1)

    def py(v: float) -> float:
        return pad_t + h * (1 - (v - lo) / (hi - lo))

    parts.append(
        f'<line x1="{pad_l}" y1="{pad_t + h}" x2="{pad_l + w}" y2="{pad_t + h}" class="ax"/>'
        f'<line x1="{pad_l}" y1="{pad_t}" x2="{pad_l}" y2="{pad_t + h}" class="ax"/>'
    )
    for frac in (0.0, 0.5, 1.0):
        v = lo + frac * (hi - lo)
        parts.append(
            f'<text x="{pad_l - 4}" y="{py(v) + 4:.1f}" text-anchor="end" class="tk">'
            f"{_fmt(v)}</text>"
        )
    parts.append(_line_axes_labels((pad_l, pad_t, w, h), height, n, xlabel, ylabel))
    colours = ("#1f6feb", "#d1242f", "#1a7f37", "#9a6700", "#8250df", "#57606a")
    for k, (label, s) in enumerate(series.items()):
        pts = " ".join(
            f"{px(i):.1f},{py(float(v)):.1f}" for i, v in enumerate(s) if math.isfinite(float(v))
        )
        colour = colours[k % len(colours)]
        parts.append(f'<polyline fill="none" stroke="{colour}" stroke-width="2" points="{pts}"/>')
        parts.append(
            f'<text x="{pad_l + w - 4}" y="{pad_t + 14 + 14 * k}" fill="{colour}" '
            f'text-anchor="end" class="tk">{escape(label)}</text>'
        )
    parts.append("</svg>")
    return Markup("".join(parts))  # noqa: S704 - built from escaped parts


def _svg_head(title: str, width: int, height: int) -> list[str]:
    """The opening tag, the accessible title and the visible title of a chart."""
    return [
        f'<svg xmlns="http://www.w3.org/2000/svg" role="img" class="chart" '
        f'width="{width}" height="{height}" viewBox="0 0 {width} {height}">',
        f"<title>{escape(title)}</title>",
        f'<text x="{width / 2}" y="16" text-anchor="middle" class="ct">{escape(title)}</text>',
    ]


def _line_axes_labels(box: tuple[int, int, int, int], height: int, n: int, xlabel: str,
                      ylabel: str) -> str:
    """The x range (0 to ``n - 1``) and both axis labels of a line chart in ``box``
    (left, top, width, height of the plot area)."""
    pad_l, pad_t, w, h = box
    return (
        f'<text x="{pad_l}" y="{height - 8}" class="tk">0</text>'
        f'<text x="{pad_l + w}" y="{height - 8}" text-anchor="end" class="tk">{n - 1}</text>'
        f'<text x="{pad_l + w / 2}" y="{height - 8}" text-anchor="middle" class="tk">'
        f"{escape(xlabel)}</text>"
        f'<text x="12" y="{pad_t + h / 2}" transform="rotate(-90 12 {pad_t + h / 2})" '
        f'text-anchor="middle" class="tk">{escape(ylabel)}</text>'
    )


def _bar(label: str, value: float, limit: float, y: int, x0: float, bar: int,
         bw: float, lx: float) -> str:
    """One bar of ``bar_chart_svg``: label, the bar (width ``bw``) and its limit tick."""
    colour = "#1a7f37" if value <= limit else "#d1242f"
    return (
        f'<text x="{x0 - 8}" y="{y + bar - 5}" text-anchor="end" class="tk">'
        f"{escape(label)}</text>"
        f'<rect x="{x0}" y="{y}" width="{bw:.1f}" height="{bar}" fill="{colour}" '
        f'opacity="0.75"><title>{escape(label)}: {_fmt(value)} (limit {_fmt(limit)})'
        f"</title></rect>"
        f'<line x1="{lx:.1f}" y1="{y - 2}" x2="{lx:.1f}" y2="{y + bar + 2}" '
        f'stroke="#24292f" stroke-width="2"/>'
    )


def bar_chart_svg(
    rows: Sequence[tuple[str, float, float]],
    *,
    title: str,
    log: bool = True,
    width: int = 560,
    bar: int = 18,
) -> Markup:
    """Horizontal bars of ``value`` against a ``limit`` tick, one row per label.

    ``log`` uses a log10 axis (for errors against tolerances); otherwise the axis is
    linear from 0 (for ratios against budgets).
    """
    label_w, pad = 270, 8
    height = 30 + len(rows) * (bar + 6) + 20
    parts = _svg_head(title, width, height)
    vals = [v for _, a, b in rows for v in (a, b) if math.isfinite(v) and (v > 0 or not log)]
    if not vals:
        parts.append("</svg>")
        return Markup("".join(parts))  # noqa: S704
    if log:
        lo = math.floor(math.log10(min(vals))) - 0.5
        hi = math.ceil(math.log10(max(vals))) + 0.2

        def tx(v: float) -> float:
            v = max(v, 10**lo)
            return (math.log10(v) - lo) / (hi - lo)
    else:
        top = max(vals) * 1.15

        def tx(v: float) -> float:
            return max(v, 0.0) / top

    span = width - label_w - pad * 2
    x0 = label_w + pad
    for k, (label, value, limit) in enumerate(rows):
        bw = span * tx(value) if math.isfinite(value) else span
        parts.append(_bar(label, value, limit, 30 + k * (bar + 6), x0, bar, bw,
                          x0 + span * tx(limit)))
    parts.append(
        f'<text x="{label_w + pad}" y="{height - 4}" class="tk">bar: figure; black tick: '
        f'{"tolerance" if log else "budget"}{" (log scale)" if log else ""}</text>'
    )
    parts.append("</svg>")
    return Markup("".join(parts))  # noqa: S704


# -- data ------------------------------------------------------------------------------
def build_plugin_report(records: list[dict[str, Any]],
                        outcomes: dict[str, str] | None = None) -> dict[str, Any]:
    """The report of a pytest run: every recorded check, grouped by test.

    ``outcomes`` maps test ids to ``passed``, ``xfailed`` or ``failed``: a failed check
    inside a test that passed (or xfailed) is one the test expected (a broken backward
    caught, a NaN named). It is marked ``expected``, counted as caught and kept out of
    the failures, so the verdict agrees with pytest's; without outcomes every failed
    check is a failure."""
    outcomes = outcomes or {}
    records = [{**r, "expected": True}
               if not r.get("passed") and outcomes.get(str(r.get("test", ""))) in
               ("passed", "xfailed") else r for r in records]
    c = counts(records)
    return {
        "schema_version": SCHEMA_VERSION,
        "title": "gradcheck: gradient checks of a pytest run",
        "generated": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "mode": "pytest run",
        "verdict": "fail" if c["checks_failed"] else "pass",
        "counts": c,
        "failures": failures(records),
        "summary": {
            "checks": c["checks"],
            "passed": c["checks_passed"],
            "failed": c["checks_failed"],
            "caught as their tests expected": c["checks_caught"],
            "kinks": c["kinks_skipped"],
        },
        "criteria": [],
        "checks": records,
        "sections": [],
        "environment": environment(),
    }


def _error_rows(checks: list[dict[str, Any]], limit: int = 40) -> list[tuple[str, float, float]]:
    """Per check (a layer or a model), the worst element's error / its tolerance."""
    rows: list[tuple[str, float, float]] = []
    for c in checks:
        worst = 0.0
        for inp in c.get("inputs", []):
            for w in inp.get("worst", []):
                err, tol = w.get("error"), w.get("tolerance")
                if w.get("kind") == "kink" or not isinstance(err, (int, float)):
                    continue
                if isinstance(tol, (int, float)) and tol > 0:
                    worst = max(worst, float(err) / float(tol))
        label = str(c.get("name") or c.get("test", ""))
        label = label if len(label) <= 42 else label[:41] + "…"
        rows.append((label, max(worst, 1e-6), 1.0))
    rows.sort(key=lambda r: -r[1])
    return rows[:limit]


#: Labels of the environment table where its keys alone would mislead.
ENV_LABELS = {"blas": "BLAS of the report's own process",
              "blas_threads": "BLAS threads of the report's own process",
              "blas_core_type": "BLAS core type"}


def _g(v: Any) -> Any:
    """A number for a table: integers whole (an element count of 263169 stays so),
    other numbers to 3 significant digits; anything else as it is."""
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        return v
    if isinstance(v, int) or (v.is_integer() and abs(v) < 1e15):
        return f"{int(v)}"
    return f"{v:.3g}"


def render_html(data: dict[str, Any], *, json_href: str | None = None) -> str:
    """The self-contained HTML page for ``data``; with ``json_href`` it links that JSON
    file instead of carrying the data."""
    from jinja2 import Environment, PackageLoader, select_autoescape

    env = Environment(
        loader=PackageLoader("gradcheck.report.render", "templates"),
        autoescape=select_autoescape(["html"], default_for_string=True, default=True),
    )
    env.filters["g"] = _g
    charts = dict(data.get("charts_svg", {}))
    err_rows = _error_rows(data.get("checks", []))
    if err_rows:
        charts.setdefault(
            "errors",
            bar_chart_svg(err_rows, title="worst error / its tolerance, per layer or model "
                          "(the 40 closest to failing)"),
        )
    payload = ""
    if json_href is None:
        payload = json.dumps(plain({k: v for k, v in data.items() if k != "charts_svg"}),
                             sort_keys=True, allow_nan=False, separators=(",", ":"))
        payload = (payload.replace("<", "\\u003c").replace(">", "\\u003e")
                   .replace("&", "\\u0026"))
    template = env.get_template("report.html")
    return template.render(d=data, charts=charts, v=view(data, bool(charts)),
                           json_href=json_href, env_labels=ENV_LABELS,
                           payload=Markup(payload))  # noqa: S704
