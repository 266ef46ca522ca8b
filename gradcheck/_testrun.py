"""Results of the test run that the report shows (criteria 10 to 12), and running it.

The README's test command writes pytest-cov's JSON and pytest's junit XML into
``reports/``; the report reads them here. ``gradcheck report --with-tests`` runs that
command first.
"""

from __future__ import annotations

import json
import shutil
import subprocess  # noqa: S404 - runs ruff and pytest with fixed arguments
import sys
import xml.etree.ElementTree as ET  # noqa: S405 - parses our own pytest junit file
from collections.abc import Callable
from pathlib import Path
from typing import Any

__all__ = ["read_coverage", "read_junit", "run_test_suites", "security_findings",
           "test_commands"]


def read_coverage(path: Path) -> dict[str, Any] | None:
    """pytest-cov's JSON (``--cov-report=json:PATH``) -> line coverage per package."""
    if not path.exists():
        return None
    data = json.loads(path.read_text())
    per: dict[str, list[int]] = {}
    for fname, info in data.get("files", {}).items():
        pkg = Path(fname).parts[0]
        s = info["summary"]
        acc = per.setdefault(pkg, [0, 0])
        acc[0] += s["covered_lines"]
        acc[1] += s["num_statements"]
    total = data.get("totals", {}).get("percent_covered")
    return {"total": total,
            "packages": {k: 100.0 * a / b if b else 100.0 for k, (a, b) in per.items()}}


def read_junit(path: Path) -> dict[str, int] | None:
    """pytest's junit XML -> counts."""
    if not path.exists():
        return None
    root = ET.parse(path).getroot()  # noqa: S314 - our own file
    suites = [root] if root.tag == "testsuite" else list(root)
    out = {"tests": 0, "failures": 0, "errors": 0, "skipped": 0}
    for s in suites:
        for k in out:
            out[k] += int(s.get(k, 0))
    return out


def security_findings(paths: list[Path]) -> dict[str, Any]:
    """ruff's bandit rules (S) over ``paths`` (the subject's code)."""
    ruff = shutil.which("ruff")
    if ruff is None:
        return {"measured": False, "why": "ruff is not installed"}
    proc = subprocess.run(  # noqa: S603
        [ruff, "check", "--select", "S", "--output-format", "json", "--no-cache",
         *[str(p) for p in paths]],
        capture_output=True, text=True, check=False, timeout=120,
    )
    try:
        findings = json.loads(proc.stdout or "[]")
    except json.JSONDecodeError:
        return {"measured": False, "why": f"ruff output unreadable: {proc.stderr[:200]}"}
    return {"measured": True, "findings": len(findings),
            "rules": sorted({f.get("code", "?") for f in findings})}


def test_commands(reports: Path) -> list[list[str]]:
    """The README's test command, as argument lists writing into ``reports``."""
    py = sys.executable
    return [
        [py, "-m", "pytest", "-n", "2", "-m", "not budget", "--cov=model", "--cov=gradcheck",
         f"--cov-report=json:{reports / 'coverage.json'}", "--cov-report=term",
         f"--junitxml={reports / 'junit.xml'}"],
        [py, "-m", "pytest", "-m", "budget", f"--benchmark-json={reports / 'benchmark.json'}",
         f"--junitxml={reports / 'junit-budgets.xml'}"],
    ]


def run_test_suites(root: Path, reports: Path, say: Callable[[str], None]) -> str:
    """Run the suites (for ``--with-tests``); returns '' or why they could not run."""
    if not (root / "suites").is_dir():
        return f"the test suites are not beside the package ({root / 'suites'} is missing)"
    for cmd in test_commands(reports.resolve()):
        say("running " + " ".join(cmd[1:4]) + " ...")
        proc = subprocess.run(cmd, cwd=root, check=False, capture_output=True, text=True)  # noqa: S603
        say((proc.stdout.strip().splitlines() or ["(no output)"])[-1])
    return ""
