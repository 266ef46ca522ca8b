"""The HTML/JSON report and the command line, including a real headless browser."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from contextlib import contextmanager
from pathlib import Path

import pytest

from gradcheck import cli
from gradcheck.check._result import CheckResult, ElementReport, InputResult
from gradcheck.report import render as report

EVIL = "<script>alert(1)</script>"
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")


def evil_result() -> dict:
    inp = InputResult(name=EVIL, shape=(2,), dtype="float64", status="mismatch", checked=2,
                      max_abs_error=1.0, atol=1e-8, rtol=1e-7, hint=f"hint {EVIL}")
    inp.worst = [ElementReport(EVIL, (1,), 1.0, 2.0, 1.0, 1e-8)]
    res = CheckResult(passed=False, status="mismatch", message=f"msg {EVIL}", inputs=[inp],
                      method="central", mode="full", evaluations=4, backward_calls=2, seed=3,
                      name=EVIL)
    d = res.to_dict()
    d["test"] = f"test_{EVIL}"
    return d


def test_user_text_is_escaped_everywhere():
    data = report.build_plugin_report([evil_result()])
    html = report.render_html(data)
    assert EVIL not in html
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    block = html.split('id="gradcheck-data">', 1)[1].split("</script>", 1)[0]
    assert "<" not in block and "\\u003cscript\\u003e" in block
    assert json.loads(block.replace("\\u003c", "<").replace("\\u003e", ">")
                      .replace("\\u0026", "&"))["checks"][0]["name"] == EVIL


def test_failures_are_expanded_with_worst_elements_and_seed():
    html = report.render_html(report.build_plugin_report([evil_result()]))
    assert "worst elements of" in html and "reproduce with seed=3" in html


def test_json_is_standard_even_with_non_finite():
    text = report.to_json({"a": float("nan"), "b": [float("inf")]})
    assert json.loads(text) == {"a": "nan", "b": ["inf"]}


def test_writes_are_atomic(tmp_path, monkeypatch):
    target = tmp_path / "r.html"
    target.write_text("previous")

    def boom(src, dst):
        raise OSError("disk full")

    monkeypatch.setattr(os, "replace", boom)
    with pytest.raises(OSError, match="disk full"):
        report.write_html(target, report.build_plugin_report([]))
    assert target.read_text() == "previous"
    assert [p.name for p in tmp_path.iterdir()] == ["r.html"]  # no temporary left behind


def test_charts_handle_empty_and_escape_labels():
    empty = report.line_chart_svg({}, title="t", xlabel="x", ylabel="y")
    assert "no data" in empty
    bars = report.bar_chart_svg([(EVIL, 1.0, 2.0)], title=EVIL)
    assert EVIL not in bars and "&lt;script&gt;" in bars


# -- command line ------------------------------------------------------------------------
def test_version_and_help(capsys):
    with pytest.raises(SystemExit) as e:
        cli.main(["--version"])
    assert e.value.code == 0 and "gradcheck 0.1.0" in capsys.readouterr().out
    assert cli.main([]) == 2
    assert "report" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["report", "--out", "x.txt"], "--out must name an .html file"),
        (["report", "--seed", "-1"], "--seed must be a non-negative integer"),
        (["report", "--seed", "abc"], "invalid int value"),
        (["report", "--jobs", "0"], "--jobs must be a positive integer"),
        (["report", "--quick", "--full"], "not allowed with argument"),
        (["frobnicate"], "invalid choice"),
    ],
)
def test_bad_arguments_in_plain_words(capsys, argv, message):
    with pytest.raises(SystemExit) as e:
        cli.main(argv)
    assert e.value.code == 2
    assert message in capsys.readouterr().err


@pytest.mark.parametrize(
    ("verdict", "strict", "status"),
    [("pass", False, 0), ("incomplete", False, 0), ("fail", False, 1),
     ("pass", True, 0), ("incomplete", True, 1), ("fail", True, 1)],
)
def test_exit_status_follows_the_verdict(monkeypatch, tmp_path, verdict, strict, status):
    import gradcheck.report.verify as verify

    seen = {}

    def fake(**kw):
        seen.update(kw)
        return verdict

    monkeypatch.setattr(verify, "run_verification", fake)
    argv = ["report", "--out", str(tmp_path / "v.html")] + (["--strict"] if strict else [])
    assert cli.main(argv) == status
    assert seen["level"] == "default" and seen["jobs"] >= 1 and not seen["with_tests"]
    cli.main([*argv, "--full", "--with-tests", "--jobs", "1"])
    assert seen["level"] == "full" and seen["jobs"] == 1 and seen["with_tests"]


def test_verdict_has_three_states():
    from gradcheck.report._criteria import verdict_of
    from gradcheck.report._rows import Criterion

    met = Criterion(1, "c", "met", "", "")
    assert verdict_of(False, [met, met]) == "pass"
    assert verdict_of(False, [met, Criterion(2, "c", "not run", "", "")]) == "incomplete"
    assert verdict_of(False, [{"status": "not met"}, {"status": "not run"}]) == "fail"
    assert verdict_of(True, [met.to_dict()]) == "fail"


def test_typed_rows_keep_the_report_json_keys():
    from gradcheck.report._rows import CatalogRow, Criterion, FaultRow
    from gradcheck.run._pool import Fault

    row = CatalogRow("a bug", "float64", 1, 2, 0, "hint: x", "partly")
    assert row.verdict == "missed"  # caught at 1 of 2 seeds
    assert row.to_dict() == {"bug": "a bug", "dtype": "float64", "caught": "1/2",
                             "false alarms": 0, "verdict": "missed", "hint given": "hint: x",
                             "hint names the class": "partly"}
    assert CatalogRow("b", "float32", 3, 3, 0, "", "none").verdict == "caught"
    assert CatalogRow("b", "float32", 3, 3, 1, "", "none").verdict == "missed"
    with pytest.raises(ValueError, match="Criterion.status must be one of"):
        Criterion(1, "c", "passed", "", "")
    fault = FaultRow.of("training runs", Fault("timeout", "ran past 3 s"))
    lost = Criterion.judged(1, "c", True, "90%", "how").lost_to(fault.note)
    assert (lost.status, lost.figure) == ("not met", "training runs: timeout (ran past 3 s)")
    kept = Criterion.judged(1, "c", False, "10%", "how").lost_to(fault.note)
    assert kept.figure == "10%; training runs: timeout (ran past 3 s)"
    assert fault.to_dict() == {"case": "training runs", "status": "timeout",
                               "message": "ran past 3 s", "type": "", "where": "", "signal": ""}


def test_load_budgets_names_the_file_and_the_entry(tmp_path):
    from gradcheck.report.budgets import load_budgets

    path = tmp_path / "b.toml"
    path.write_text('[mine]\ncriterion = 6\ntitle = "b / f"\nthreshold = 2.0\n')
    assert load_budgets(path) == {"mine": {"criterion": 6, "title": "b / f", "threshold": 2.0}}
    path.write_text('[mine]\ncriterion = "6"\ntitle = "b / f"\nthreshold = 2.0\n')
    with pytest.raises(ValueError, match=r"b.toml: \[mine\] needs an integer criterion"):
        load_budgets(path)
    path.write_text("[mine\n")
    with pytest.raises(ValueError, match="b.toml: not valid TOML"):
        load_budgets(path)
    with pytest.raises(ValueError, match="nope.toml: cannot be read"):
        load_budgets(tmp_path / "nope.toml")


def test_budget_sections_are_the_subjects_own_tables():
    from gradcheck.report._sections import _declared_sections
    from gradcheck.report.budgets import BudgetResult
    from gradcheck.subject import BudgetSection, Subject

    res = [BudgetResult("steps", 0, "t", "c", "float32", 123.4, float("inf"), 0.0, True,
                        kind="figure"),
           BudgetResult("other", 0, "t", "c", "float32", 1.0, float("inf"), 0.0, True,
                        kind="figure")]
    sections = (BudgetSection("rate", "Steps", ("steps",),
                              lambda b: {"dtype": b.dtype, "per s": b.figure},
                              "on {cpu}"),
                BudgetSection("gone", "Never measured", ("absent",), lambda b: {},
                              empty=lambda: "not measured (no such tool)."),
                BudgetSection("left out", "Left out", ("absent",), lambda b: {}))
    out = _declared_sections(Subject(name="s", budget_sections=sections), res,
                             {"cpu": "CPU X"})
    assert [s.to_dict() for s in out] == [
        {"id": "rate", "title": "Steps", "text": "on CPU X", "columns": ["dtype", "per s"],
         "rows": [{"dtype": "float32", "per s": 123.4}]},
        {"id": "gone", "title": "Never measured", "text": "not measured (no such tool).",
         "rows": []}]


def test_representative_configs_cover_every_factor_value():
    from gradcheck_model.subject import model_configs

    chosen = model_configs("default")
    full = model_configs("full")
    assert len(full) == 96 and len(chosen) == 8
    for factor in chosen[0]:
        assert {c[factor] for c in chosen} == {c[factor] for c in full}, factor
    for act in {c["activation"] for c in full}:
        assert {c["dtype"] for c in chosen if c["activation"] == act} == {"float64", "float32"}


# -- the real thing, in a real browser ------------------------------------------------------
ROOT = Path(__file__).resolve().parents[1]


@contextmanager
def _umask(mask: int):
    old = os.umask(mask)
    try:
        yield
    finally:
        os.umask(old)


def _run_report(*args: str, level: str = "--quick", traced: bool = True
                ) -> subprocess.CompletedProcess:
    """``gradcheck report``; ``traced=False``: not measured by coverage, when run under it
    (the quick report's run covers the same lines)."""
    env = None if traced else {k: v for k, v in os.environ.items()
                               if not k.startswith("COVERAGE_")}
    with _umask(0o022):  # the usual umask: files must come out readable by others
        return subprocess.run([sys.executable, "-m", "gradcheck.cli", "report",
                               *([level] if level else []), "--jobs", "1", *args],
                              capture_output=True, text=True, timeout=600, check=False,
                              cwd=ROOT, env=env)


@pytest.fixture(scope="module")
def quick_report(tmp_path_factory):
    out = tmp_path_factory.mktemp("rep") / "verification.html"
    return out, _run_report("--out", str(out))


@pytest.fixture(scope="module")
def default_report(tmp_path_factory):
    """The report at the default level (the one the README's first command writes): the
    page a user opens, sized and seen in the browser."""
    out = tmp_path_factory.mktemp("default") / "verification.html"
    return out, _run_report("--out", str(out), "--no-progress", level="", traced=False)


@pytest.fixture(scope="module")
def wrong_report(tmp_path_factory):
    """A FAIL report: a subject whose bias gradient is doubled, with a step summary that
    an earlier step of the job wrote."""
    folder = tmp_path_factory.mktemp("wrong")
    out, summary = folder / "verification.html", folder / "step_summary.md"
    summary.write_text("## an earlier step\n")
    proc = _run_report("--subject", "suites.faulty_subject:WRONG", "--out", str(out),
                       "--markdown", str(summary), "--no-progress")
    return out, summary, proc


def test_quick_report_runs_and_agrees_with_its_exit_status(quick_report):
    out, proc = quick_report
    assert out.exists() and out.with_suffix(".json").exists(), proc.stderr[-2000:]
    data = json.loads(out.with_suffix(".json").read_text())
    assert proc.returncode == (1 if data["verdict"] == "fail" else 0), proc.stderr[-2000:]
    # no test run beside this report: criteria 10 and 12 are "not run", with the command
    status = {c["id"]: c["status"] for c in data["criteria"]}
    assert [c["id"] for c in data["criteria"]] == list(range(1, 13))
    assert status[10] == status[12] == "not run"
    assert all(status[k] == "met" for k in (1, 2, 3, 4)), status
    # Budgets (5-9) are timed: which verdict they get is the budget suite's business
    # (pytest -m budget), never a functional test's. Here each has a status and a figure,
    # and the verdict follows from the statuses.
    timed = [c for c in data["criteria"] if 5 <= c["id"] <= 9]
    assert all(c["status"] in ("met", "not met", "not measured") and c["figure"]
               for c in timed), timed
    budget_failed = any(c["status"] == "not met" for c in timed)
    assert data["verdict"] == ("fail" if budget_failed else "incomplete"), proc.stderr[-2000:]
    assert all(b["status"] in ("pass", "fail", "not measured", "figure")
               and (b["clock"] or b["kind"] == "memory") for b in data["budgets"])
    assert "thread_time" in data["budget clock"]
    assert "--with-tests" in next(c["how"] for c in data["criteria"] if c["id"] == 10)
    # the subject's own tables and snapshot folder (Subject.budget_sections, snapshot_dir)
    sections = {s["id"]: s for s in data["sections"]}
    assert {"catalog", "training", "budgets", "speed", "throughput"} <= set(sections)
    assert "compared with" in sections["snapshots"]["text"]
    assert str(Path("snapshots", "reference")) in sections["snapshots"]["text"]
    assert "[3/3" in proc.stderr  # progress was shown
    assert "criterion 10 (code coverage > 80%): not run: no coverage" in proc.stderr
    env = data["environment"]
    assert env["numpy"] and env["git_commit"] == subprocess.run(
        ["git", "rev-parse", "HEAD"], capture_output=True, text=True, cwd=ROOT,
        check=True).stdout.strip()  # the subject's repository (here gradcheck's own)
    assert env["blas_core_type"] and env["budget BLAS threads"] == "1"
    assert "core type" in env["blas"]
    assert not list(out.parent.glob(".*.tmp"))


@pytest.fixture(scope="module")
def browser():
    """Debian's chromium, launched once for the module (no browser download)."""
    if CHROMIUM is None:
        if os.environ.get("CI"):
            pytest.fail("chromium is not installed in CI (.ci/run installs it)")
        pytest.skip("chromium is not installed here (CI installs it)")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        b = p.chromium.launch(
            executable_path=CHROMIUM,
            args=["--no-sandbox", "--disable-gpu", "--disable-background-networking",
                  "--disable-component-update", "--no-first-run", "--disable-sync"],
        )
        try:
            yield b
        finally:
            b.close()


class _Page:
    """A page of ``browser`` at ``width`` px, with what it logged and fetched."""

    def __init__(self, browser, path: Path, width: int) -> None:
        self.console, self.requests, self.errors = [], [], []
        self.page = browser.new_page(viewport={"width": width, "height": 900})
        self.page.on("console", lambda m: self.console.append((m.type, m.text)))
        self.page.on("pageerror", lambda e: self.errors.append(str(e)))
        self.page.on("request", lambda r: self.requests.append(r.url))
        self.page.goto(path.resolve().as_uri())

    def horizontal_overflow(self) -> int:
        """How far the page scrolls sideways (0: it does not)."""
        return self.page.evaluate("document.documentElement.scrollWidth"
                                  " - document.documentElement.clientWidth")

    def clean(self, path: Path) -> bool:
        """No error, no warning, nothing fetched but the page itself."""
        bad = [c for c in self.console if c[0] in ("error", "warning")]
        return not self.errors and not bad and self.requests == [path.resolve().as_uri()]

    def close(self) -> None:
        self.page.close()


def _in_view(page, selector: str) -> bool:
    return page.evaluate("""s => { const r = document.querySelector(s).getBoundingClientRect();
        return r.height > 0 && r.top >= 0 && r.top < window.innerHeight; }""", selector)


def _seed_column_printed(page) -> list[bool]:
    """Printed (print media, 700 px: A4 less margins): is each table's seed column on
    the page?"""
    page.set_viewport_size({"width": 700, "height": 900})
    page.emulate_media(media="print")
    return page.evaluate("""() => [...document.querySelectorAll('th')]
        .filter(t => t.textContent === 'seed').map(t => { const r = t.getBoundingClientRect();
          return r.width > 0 && r.right <= document.documentElement.clientWidth; })""")


def test_report_in_headless_chromium(default_report, browser):
    out, proc = default_report
    assert out.exists(), proc.stderr[-2000:]
    shots = Path("reports")
    shots.mkdir(exist_ok=True)
    for width in (1280, 400):
        view = _Page(browser, out, width)
        page = view.page
        assert page.locator("#verdict").inner_text() in ("PASS", "FAIL", "INCOMPLETE")
        assert view.horizontal_overflow() == 0, width
        page.screenshot(path=str(shots / f"verification-{width}.png"))
        assert view.clean(out)
        view.close()
    view = _Page(browser, out, 1280)
    page = view.page
    assert page.locator("#criteria-table tr").count() == 13  # header + 12 criteria
    assert page.locator("svg.chart").count() >= 3
    assert page.locator("#checks-table tr").count() > 10
    assert page.locator("#failures").count() == 0  # nothing failed: no failures block
    # the contents: every link leads somewhere, and following one brings it into view
    hrefs = page.eval_on_selector_all("nav.contents a", "as => as.map(a => a.hash)")
    assert {"#criteria", "#checks", "#catalog", "#environment"} <= set(hrefs)
    assert all(page.locator(h).count() == 1 for h in hrefs), hrefs
    page.click("nav.contents a[href='#environment']")
    assert page.evaluate("location.hash") == "#environment" and _in_view(page, "#environment")
    # folded: passing checks, the catalog and the environment; open: the criteria
    assert page.eval_on_selector_all("details#passing-checks, details.folded, details#env-details",
                                     "ds => ds.map(d => d.open)") == [False, False, False]
    # with every fold open, at 1280 px no table needs its own scroll bar either
    page.eval_on_selector_all("details", "ds => ds.forEach(d => d.open = true)")
    assert page.eval_on_selector_all(
        ".tw", "ws => ws.filter(w => w.scrollWidth > w.clientWidth + 1).length") == 0
    assert all(_seed_column_printed(page)) and len(_seed_column_printed(page)) >= 1
    page.pdf(path=str(shots / "verification.pdf"), format="A4")
    assert view.clean(out)
    view.close()
    assert (shots / "verification-1280.png").stat().st_size > 10_000
    assert (shots / "verification.pdf").stat().st_size > 10_000


def test_default_report_files_are_small_readable_and_link_their_json(default_report):
    out, proc = default_report
    assert out.exists(), proc.stderr[-2000:]
    html = out.read_text()
    assert len(html.encode()) <= 400_000
    assert 'id="gradcheck-data"' not in html  # the data is linked, not embedded
    assert 'href="verification.json"' in html
    for path in (out, out.with_suffix(".json")):
        assert path.stat().st_mode & 0o777 == 0o644, path  # written under umask 022
    data = json.loads(out.with_suffix(".json").read_text())
    assert data["schema_version"] == 2
    assert all(isinstance(v, int) for v in data["counts"].values()), data["counts"]
    assert data["counts"]["checks"] == len(data["checks"]) == data["summary"]["gradient checks"]
    assert data["counts"]["catalog_caught"] == len(data["catalog"])  # every bug caught
    assert data["failures"] == [] and data["budget_clock"] == data["budget clock"]
    assert {"bug", "caught", "seeds", "false_alarms", "hint_verdict"} <= set(data["catalog"][0])
    # the reference model's layers name their inputs as their forwards do
    names = {c["name"]: [i["name"] for i in c["inputs"]] for c in data["checks"]}
    assert names["linear [float64]"] == ["x", "W", "b"]
    assert "attn.Wq" in names["block(pre-norm) [float64]"]


def test_fail_report_says_what_failed_under_the_verdict(wrong_report, browser):
    out, summary, proc = wrong_report
    assert proc.returncode == 1, proc.stderr[-2000:]
    for width in (1280, 400):
        view = _Page(browser, out, width)
        page = view.page
        assert page.locator("#verdict").inner_text() == "FAIL"
        assert view.horizontal_overflow() == 0, width
        page.screenshot(path=str(Path("reports") / f"verification-fail-{width}.png"))
        # right under the verdict, above the criteria
        top = page.evaluate("""() => ['#verdict', '#failures', '#criteria'].map(s =>
            document.querySelector(s).getBoundingClientRect().top)""")
        assert top == sorted(top) and _in_view(page, "#failures"), top
        view.close()
    view = _Page(browser, out, 1280)
    page = view.page
    items = page.locator("#failure-list li")
    assert items.count() == 1  # the doubled bias gradient, not its correct twin
    text = items.first.inner_text()
    for part in ("linear (db doubled) [float64]", "input b", "mismatch", "hint:",
                 "constant factor of 2", "seed=0"):
        assert part in text, (part, text)
    line = page.locator("#verdict-line").inner_text()
    assert "1 failed" in line and "caught" not in line and "budget" not in line
    items.first.locator("a").click()
    target = page.evaluate("location.hash")
    assert target.startswith("#check-") and _in_view(page, target)
    assert page.locator(target).inner_text().split()[0] == "b"
    assert view.clean(out)
    view.close()
    # the step summary: the earlier step's text kept, this report's block appended
    text = summary.read_text()
    assert text.startswith("## an earlier step\n### :x: ")
    assert "input b mismatch: hint: off by a constant factor of 2" in text and "seed=0" in text
    assert summary.stat().st_mode & 0o777 == 0o644


def test_no_progress_still_prints_the_outcome(wrong_report):
    """CI runs with --no-progress: no progress line, but the verdict, the first failure
    with its hint and seed, the criteria not met and where the report is."""
    out, summary, proc = wrong_report
    lines = proc.stderr.splitlines()
    assert proc.returncode == 1 and not [ln for ln in lines if ln.startswith("[")], lines
    assert ("gradcheck report: FAILED linear (db doubled) [float64] input b mismatch: "
            "hint: off by a constant factor of 2 everywhere (seed=0)") in lines, lines
    assert any(ln.startswith("gradcheck report: criterion 4 (passes gradient checking): "
                             "not met") for ln in lines), lines
    assert any(ln.startswith("gradcheck report: FAIL: 2 gradient checks: 1 passed, 1 "
                             "failed") for ln in lines), lines
    assert lines[-1] == (f"gradcheck report: wrote {out} and {out.with_suffix('.json')} "
                         f"and appended to {summary} (FAIL)"), lines


# -- files a CI job can publish ----------------------------------------------------------------
def _mode(path: Path) -> int:
    return path.stat().st_mode & 0o777


@pytest.mark.parametrize(("umask", "mode"), [(0o022, 0o644), (0o077, 0o600), (0o002, 0o664)])
def test_written_files_follow_the_umask(tmp_path, umask, mode):
    from gradcheck.run._io import append_text, write_atomic

    old = os.umask(umask)
    try:
        write_atomic(tmp_path / "a.json", b"{}")
        report.write_html(tmp_path / "r.html", report.build_plugin_report([evil_result()]))
        append_text(tmp_path / "summary.md", "# s")
    finally:
        os.umask(old)
    assert {p.name: _mode(p) for p in tmp_path.iterdir()} == dict.fromkeys(
        ("a.json", "r.html", "summary.md"), mode)


def test_append_text_keeps_what_the_file_held(tmp_path):
    from gradcheck.run._io import append_text

    path = tmp_path / "step_summary.md"
    path.write_text("## an earlier step")  # no newline at its end
    append_text(path, "## gradcheck\nPASS")
    append_text(path, "second block\n")
    assert path.read_text() == "## an earlier step\n## gradcheck\nPASS\nsecond block\n"


def test_diff_markdown_is_appended(tmp_path, monkeypatch, capsys):
    import gradcheck.diff._diffrender as diffrender
    import gradcheck.diff.run as diff

    class Result:
        exit_code = 0
        verdict = "pass"

    monkeypatch.setattr(diff, "run_diff", lambda *a, **k: Result())
    monkeypatch.setattr(diffrender, "render_text", lambda r: "text")
    monkeypatch.setattr(diffrender, "render_markdown", lambda r: "## gradcheck diff\nok\n")
    summary = tmp_path / "summary.md"
    summary.write_text("## build\n")
    argv = ["diff", "HEAD", "--markdown", str(summary), "--no-progress"]
    assert cli.main(argv) == 0 and cli.main(argv) == 0
    assert summary.read_text() == "## build\n" + "## gradcheck diff\nok\n" * 2


def test_case_names_label_their_flags():
    from gradcheck_model.subject import model_cases

    names = [m.name for m in model_cases("full")]
    assert not [n for n in names if "True" in n or "False" in n], names
    assert any(",causal," in n for n in names) and any(",non-causal," in n for n in names)


# -- what the page and the step summary say -----------------------------------------------------
def _record(name: str, passed: bool) -> dict:
    inp = InputResult(name="W", shape=(2,), dtype="float64", status="ok" if passed else
                      "mismatch", checked=2, hint="" if passed else "off by a factor of 2")
    return CheckResult(passed=passed, status=inp.status, message="m", inputs=[inp],
                       method="central", mode="full", evaluations=4, backward_calls=2,
                       seed=9, name=name).to_dict()


def test_failures_block_names_each_failing_input_and_links_its_row():
    from gradcheck.report._reportview import failures

    records = [_record("good", True), _record("bad", False)]
    fails = failures(records)
    assert [(f["check"], f["input"], f["hint"], f["seed"], f["anchor"]) for f in fails] == [
        ("bad", "W", "off by a factor of 2", 9, "check-1-0")]
    html = report.render_html(report.build_plugin_report(records))
    assert 'id="failures"' in html and 'href="#check-1-0"' in html and 'id="check-1-0"' in html
    # all passing: no failures block, no "What failed" in the contents
    calm = report.render_html(report.build_plugin_report([_record("good", True)]))
    assert 'id="failures"' not in calm and "What failed" not in calm


def test_markdown_summary_lists_failures_and_escapes():
    from gradcheck.report._reportview import markdown_summary

    bad = report.build_plugin_report([_record(EVIL, False)])
    text = markdown_summary(bad, "r.html")
    assert text.startswith("### :x: ") and "**What failed**" in text
    assert "input W mismatch: hint: off by a factor of 2 (seed=9)" in text
    assert EVIL not in text and "\\<script\\>" in text
    ok = markdown_summary(report.build_plugin_report([_record("good", True)]))
    assert ok.startswith("### :white_check_mark: ") and "What failed" not in ok


def test_budget_criteria_name_the_clock_of_their_kind():
    from gradcheck.report._criteria import _budget_how

    assert "tracemalloc" in _budget_how({"memory"}) and "CPU" not in _budget_how({"memory"})
    assert "thread CPU time" in _budget_how({"ratio"}) and "tracemalloc" not in _budget_how(
        {"ratio"})


def test_git_commit_is_the_code_under_tests_not_gradchecks(tmp_path):
    """The environment's commit is the one of the repository holding the given code;
    outside any repository it says so (never gradcheck's own checkout)."""
    from gradcheck.report._env import git_commit

    assert git_commit(tmp_path / "mine.py") == "none (not in a git repository)"
    repo = tmp_path / "repo"
    repo.mkdir()
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@t", "-C", str(repo)]
    subprocess.run([*git, "init", "-q"], check=True)
    (repo / "mine.py").write_text("x = 1\n")
    subprocess.run([*git, "add", "mine.py"], check=True)
    subprocess.run([*git, "commit", "-qm", "c"], check=True)
    head = subprocess.run([*git, "rev-parse", "HEAD"], capture_output=True, text=True,
                          check=True).stdout.strip()
    assert git_commit(repo / "mine.py") == git_commit(repo) == head


def test_the_terminal_names_what_failed_first():
    """A FAIL on the terminal opens with the failing inputs, hint and seed (at most
    five, then how many more), before the criteria."""
    from gradcheck.report._reportview import failures
    from gradcheck.report._rows import Criterion
    from gradcheck.report.verify import _tell

    fails = failures([_record(f"bad{k}", False) for k in range(7)])
    lines: list[str] = []
    _tell(lines.append, [Criterion(4, "passes gradient checking", "not met", "0/7", "")],
          "r.html", fails, "FAIL: 7 gradient checks: 0 passed, 7 failed")
    assert lines[0] == "FAILED bad0 input W mismatch: hint: off by a factor of 2 (seed=9)"
    assert lines[5] == "... and 2 more failing input(s): see the report"
    assert lines[6].startswith("criterion 4 (passes gradient checking): not met")
    assert lines[7:] == ["FAIL: 7 gradient checks: 0 passed, 7 failed", "wrote r.html"]


def test_table_numbers_keep_integers_whole():
    from gradcheck.report.render import _g

    assert (_g(263169), _g(263169.0), _g(1e4), _g(0.000123456), _g(2.5), _g(True),
            _g("x")) == ("263169", "263169", "10000", "0.000123", "2.5", True, "x")
