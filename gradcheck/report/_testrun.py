"""Criteria 10 to 12 on the subject's own code: its test run, its coverage, its scan.

The subject declares its code (``Subject.code``: files and folders, by default the file
of the module that defines it), its test commands (``Subject.test_commands``) and the
ruff rules of its security scan. The test commands write pytest-cov's JSON and pytest's
junit XML into the report's folder; the report reads them here, counting coverage only
over the declared code. ``gradcheck report --with-tests`` runs the commands first. ruff
is the one of the running interpreter's environment (``python -m ruff``).
"""

from __future__ import annotations

import importlib.util
import json
import subprocess  # noqa: S404 - runs the subject's declared commands and ruff
import sys
import xml.etree.ElementTree as ET  # noqa: S405 - parses the junit files of the test run
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

__all__ = ["command_dir", "declared_path", "defining_file", "read_coverage", "read_junit",
           "run_test_suites", "security_findings", "subject_code", "test_commands"]


def defining_file(subject: Any, spec: str | None = None) -> Path | None:
    """The file of the module that defines ``subject`` (``spec`` is its ``MODULE:NAME``),
    or None when no loaded module holds it."""
    modules = [sys.modules.get(spec.split(":")[0])] if spec else []
    modules += [m for m in list(sys.modules.values()) if m is not None]
    for module in modules:
        file = getattr(module, "__file__", None)
        if not file:
            continue
        attrs = getattr(module, "__dict__", {})
        if (spec and attrs.get(spec.split(":")[-1]) is subject) or \
                any(v is subject for v in list(attrs.values())):
            return Path(file).resolve()
    return None


def declared_path(subject: Any, value: str, spec: str | None = None) -> Path:
    """A path a subject declares (``snapshot_dir``, ``budget_table``): a relative one is
    relative to the folder of the subject's module (the current directory when no loaded
    module defines it)."""
    home = defining_file(subject, spec)
    return ((home.parent if home is not None else Path.cwd()) / value).resolve()


def subject_code(subject: Any, spec: str | None = None) -> tuple[list[Path], str]:
    """The paths of ``subject.code`` (relative ones from its module's folder), or its
    module's file; with '' or the reason why there is none."""
    home = defining_file(subject, spec)
    if subject.code is None:
        if home is None:
            return [], "the subject declares no code (Subject.code) and no loaded module " \
                       "defines it"
        return [home], ""
    base = home.parent if home is not None else Path.cwd()
    paths = [(base / p).resolve() for p in subject.code]
    missing = [str(p) for p in paths if not p.exists()]
    if missing:
        return [], f"Subject.code names paths that do not exist: {', '.join(missing)}"
    return paths, ""


def _label(path: Path, code: Sequence[Path]) -> str:
    """The shortest readable name of one declared path."""
    names = [p.name for p in code]
    return path.name if names.count(path.name) == 1 else str(path)


def read_coverage(path: Path, code: Sequence[Path], root: Path) -> dict[str, Any] | None:
    """pytest-cov's JSON (``--cov-report=json:PATH``) -> line coverage of each declared
    path of ``code`` (file names in the JSON are relative to ``root``); None without the
    file. A path no measured file falls under is missing from ``paths``."""
    if not path.exists():
        return None
    data = json.loads(path.read_text())
    per: dict[Path, list[int]] = {}
    for fname, info in data.get("files", {}).items():
        file = (root / fname).resolve()
        owner = next((p for p in code if file == p or p in file.parents), None)
        if owner is None:
            continue
        s = info["summary"]
        acc = per.setdefault(owner, [0, 0])
        acc[0] += s["covered_lines"]
        acc[1] += s["num_statements"]
    return {"paths": {_label(p, code): 100.0 * a / b if b else 100.0
                      for p, (a, b) in per.items()},
            "unmeasured": [_label(p, code) for p in code if p not in per]}


def read_junit(reports: Path) -> dict[str, int] | None:
    """``junit.xml`` and every ``junit-*.xml`` in ``reports`` -> counts (None without
    ``junit.xml``)."""
    if not (reports / "junit.xml").exists():
        return None
    out = {"tests": 0, "failures": 0, "errors": 0, "skipped": 0}
    for path in [reports / "junit.xml", *sorted(reports.glob("junit-*.xml"))]:
        root = ET.parse(path).getroot()  # noqa: S314 - the subject's own test run
        suites = [root] if root.tag == "testsuite" else list(root)
        for s in suites:
            for k in out:
                out[k] += int(s.get(k, 0))
    return out


def security_findings(paths: Sequence[Path], select: Sequence[str],
                      ignore: Sequence[str]) -> dict[str, Any]:
    """ruff's rules ``select`` but ``ignore`` over ``paths``, with no configuration file
    (``--isolated``: the subject's declaration alone decides), by the ruff of this
    interpreter's environment."""
    if importlib.util.find_spec("ruff") is None:
        return {"measured": False,
                "why": f"ruff is not installed in the environment of {sys.executable}"}
    cmd = [sys.executable, "-m", "ruff", "check", "--isolated", "--no-cache",
           "--output-format", "json", "--select", ",".join(select)]
    if ignore:
        cmd += ["--ignore", ",".join(ignore)]
    proc = subprocess.run([*cmd, *[str(p) for p in paths]],  # noqa: S603
                          capture_output=True, text=True, check=False, timeout=120)
    try:
        findings = json.loads(proc.stdout or "[]")
    except json.JSONDecodeError:
        return {"measured": False, "why": f"ruff output unreadable: {proc.stderr[:200]}"}
    return {"measured": True, "findings": len(findings),
            "rules": sorted({f.get("code") or "?" for f in findings}),
            "files": sorted({Path(f.get("filename", "?")).name for f in findings})}


def test_commands(subject: Any, reports: Path, code: Sequence[Path], root: Path
                  ) -> list[list[str]]:
    """The subject's test commands with ``{python}``, ``{reports}`` and ``{cov}`` filled
    in (``--cov=`` the folder of each path, relative to ``root`` where it lies under it;
    :func:`read_coverage` then counts the declared files alone)."""
    cov: list[str] = []
    for p in code:
        p = p if p.is_dir() else p.parent  # coverage measures folders; a file is read alone
        try:
            arg = f"--cov={p.relative_to(root)}"
        except ValueError:
            arg = f"--cov={p}"
        if arg not in cov:
            cov.append(arg)
    out = []
    for cmd in subject.test_commands or ():
        args: list[str] = []
        for arg in cmd:
            if arg == "{cov}":
                args += cov
            else:
                args.append(arg.replace("{python}", sys.executable)
                            .replace("{reports}", str(reports)))
        out.append(args)
    return out


def command_dir(subject: Any, spec: str | None = None) -> Path:
    """Where the subject's test commands run: ``Subject.test_dir`` (a relative one from
    the folder of the subject's module), or the current directory."""
    if not subject.test_dir:
        return Path.cwd()
    home = defining_file(subject, spec)
    return ((home.parent if home is not None else Path.cwd()) / subject.test_dir).resolve()


def run_test_suites(subject: Any, spec: str | None, reports: Path,
                    say: Callable[[str], None]) -> str:
    """Run the subject's test commands (for ``--with-tests``); '' or why they did not run."""
    if not subject.test_commands:
        return "the subject declares no test commands (Subject.test_commands)"
    code, why = subject_code(subject, spec)
    if why:
        return why
    root = command_dir(subject, spec)
    if not root.is_dir():
        return f"Subject.test_dir {root} is not a folder"
    reports.mkdir(parents=True, exist_ok=True)
    for cmd in test_commands(subject, reports.resolve(), code, root):
        say("running " + " ".join(cmd[:4]) + " ...")
        proc = subprocess.run(cmd, cwd=root, check=False, capture_output=True,  # noqa: S603
                              text=True)
        say((proc.stdout.strip().splitlines() or ["(no output)"])[-1])
    return ""
