"""pytest plugin: a ``gradcheck`` fixture and marker, and a report of every check.

Registered through the ``pytest11`` entry point. Options (group ``gradcheck``):

``--gradcheck-report PATH``  write an HTML report of every gradient check in the run
``--gradcheck-json PATH``    write the same as JSON
``--gradcheck-update-golden`` rewrite golden array files (see the ``golden`` fixture)
``--gradcheck-blas-threads N`` BLAS threads of each test process (default: 1 in each
pytest-xdist worker, unchanged without xdist; ``0`` leaves them alone)

The terminal summary counts the checks of passing and of failing tests apart: a check
that fails inside a passing test (a deliberately broken backward that the test expects
to be caught) is not a failure of the run. NaN/Inf fuzz checks (:mod:`gradcheck.fuzz`,
which must end with a named status) are counted on their own.

Every check (``check_vjp``, ``check_layer``, ``check_loss``, ``check_grad``,
``check_model`` and the ``assert_*`` forms) made while a test runs is recorded with the
test's node id (setup, call and teardown), through the recorder the plugin sets in a
context variable for the time of each test (:mod:`gradcheck.check._recording`). Under
pytest-xdist the workers send their records to the controller as plain types and the
controller alone writes the report.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from .check._result import CheckResult

_RECORDS = pytest.StashKey[list[dict[str, Any]]]()
_GOLDEN_WRITTEN = pytest.StashKey[list[str]]()
_OUTCOMES = pytest.StashKey[dict[str, str]]()
_BLAS_LIMIT = pytest.StashKey[Any]()


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("gradcheck", "gradient checks of hand-written backward passes")
    group.addoption(
        "--gradcheck-report",
        metavar="PATH",
        default=None,
        help="write an HTML report of every gradient check made during the run",
    )
    group.addoption(
        "--gradcheck-json",
        metavar="PATH",
        default=None,
        help="write a JSON file of every gradient check made during the run",
    )
    group.addoption(
        "--gradcheck-update-golden",
        action="store_true",
        default=False,
        help="rewrite the golden files of the 'golden' fixture instead of comparing",
    )
    group.addoption(
        "--gradcheck-subject",
        metavar="MODULE:NAME",
        default=None,
        help="generate gradient, property and NaN/Inf fuzz tests for this gradcheck.Subject "
        "(also: ini option gradcheck_subject, or gradcheck_subject in a conftest.py)",
    )
    group.addoption(
        "--gradcheck-subject-level",
        metavar="LEVEL",
        default="quick",
        choices=("quick", "default", "full"),
        help="which of the subject's model cases the generated tests check (default: quick)",
    )
    parser.addini("gradcheck_subject", "the gradcheck.Subject (MODULE:NAME) whose tests to "
                  "generate", default="")
    group.addoption(
        "--gradcheck-blas-threads",
        metavar="N",
        type=int,
        default=None,
        help="BLAS threads per test process (default: 1 in each pytest-xdist worker, so "
        "that N workers do not start N x cores threads; 0: leave them alone)",
    )


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        "gradcheck(**options): default options for the gradcheck fixture in this test "
        "(for example seed=, mode=, rtol=)",
    )
    config.stash[_RECORDS] = []
    config.stash[_GOLDEN_WRITTEN] = []
    config.stash[_OUTCOMES] = {}
    config.pluginmanager.register(_OutcomeRecorder(config.stash[_OUTCOMES]),
                                  "gradcheck-outcomes")
    _limit_blas(config)
    if config.getoption("--gradcheck-subject") or config.getini("gradcheck_subject"):
        path = str(_subject_tests_path())
        if path not in config.args:
            config.args.append(path)  # collect the generated tests too


def _subject_tests_path() -> Path:
    """The module of the generated tests (found beside this one, without importing it)."""
    return Path(__file__).resolve().with_name("subject_tests.py")


def pytest_pycollect_makemodule(module_path: Path, parent: Any) -> Any:
    """The generated tests get ids that start with their module's name,
    ``gradcheck/subject_tests.py::test_layer_gradient[dense-float64]``, wherever the
    package is installed (pytest would give a file outside the rootdir an empty one)."""
    if module_path.name != "subject_tests.py" or module_path.resolve() != _subject_tests_path():
        return None
    try:
        module_path.relative_to(parent.config.rootpath)
    except ValueError:
        return pytest.Module.from_parent(parent, path=module_path,
                                         nodeid="gradcheck/subject_tests.py")
    return None


def _configured_subject(config: pytest.Config) -> Any:
    """The subject of the generated tests: option, ini, or a conftest's attribute."""
    spec = config.getoption("--gradcheck-subject") or config.getini("gradcheck_subject")
    if not spec:
        for plugin in config.pluginmanager.get_plugins():
            value = getattr(plugin, "gradcheck_subject", None)
            if value is not None and not callable(value):
                spec = value
                break
    if not spec:
        raise pytest.UsageError(
            "the generated subject tests need a subject: --gradcheck-subject MODULE:NAME, the "
            "ini option gradcheck_subject, or gradcheck_subject = ... in a conftest.py")
    from .subject import Subject, SubjectError, load_subject

    if isinstance(spec, Subject):
        return spec
    try:
        return load_subject(str(spec))
    except SubjectError as exc:
        raise pytest.UsageError(f"gradcheck: {exc}") from None


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    """Parametrize the generated tests with the subject's cases (readable ids)."""
    names = set(metafunc.fixturenames)
    if "gradcheck_layer_case" in names:
        subject = _configured_subject(metafunc.config)
        cases = [(c, d) for c in subject.layers for d in c.dtypes]
        metafunc.parametrize("gradcheck_layer_case", cases,
                             ids=[f"{c.name}-{d}" for c, d in cases])
    if "gradcheck_layer_case_float64" in names:
        subject = _configured_subject(metafunc.config)
        f64 = [c for c in subject.layers if "float64" in c.dtypes]
        metafunc.parametrize("gradcheck_layer_case_float64", f64, ids=[c.name for c in f64])
    if "gradcheck_model_case" in names:
        subject = _configured_subject(metafunc.config)
        level = metafunc.config.getoption("--gradcheck-subject-level")
        models: list[Any] = subject.models(level)
        ids = [m.name for m in models]
        if not models:
            models = [pytest.param(None, marks=pytest.mark.skip(
                reason=f"the subject {subject.name!r} declares no model"))]
            ids = ["no-model"]
        metafunc.parametrize("gradcheck_model_case", models, ids=ids)

def _limit_blas(config: pytest.Config) -> None:
    threads = config.getoption("--gradcheck-blas-threads", None)
    if threads is None:
        threads = 1 if _is_worker(config) else 0
    if threads < 0:
        raise pytest.UsageError(f"--gradcheck-blas-threads must be >= 0, got {threads}")
    if threads:
        from .run._threads import limit_blas_threads

        config.stash[_BLAS_LIMIT] = limit_blas_threads(threads)


def pytest_unconfigure(config: pytest.Config) -> None:
    limit = config.stash.get(_BLAS_LIMIT, None)
    if limit is not None:
        limit.restore_original_limits()


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Any:
    try:
        return (yield)
    finally:
        if getattr(item, "module", None) is not None and \
                item.module.__name__ == "gradcheck.subject_tests":  # type: ignore[attr-defined]
            # A failing drawn seed is reported in the failure itself; Hypothesis's patch
            # (an @example for gradcheck's own file) would not help the user.
            item.__dict__.pop("_hypothesis_failing_examples", None)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None) -> Any:
    """Record every check made while the test runs (setup, call and teardown), with its
    node id, in the session's list: the recorder lives in a context variable for the
    time of this test only."""
    from .check._recording import recording_to

    records = item.config.stash[_RECORDS]
    nodeid = item.nodeid

    def recorder(res: CheckResult, purpose: str) -> None:
        rec = res.to_dict()
        rec["test"] = nodeid
        rec["purpose"] = purpose
        records.append(rec)

    with recording_to(recorder):
        return (yield)


class GradcheckFixture:
    """What the ``gradcheck`` fixture returns: the checker with this test's defaults.

    Options given by ``@pytest.mark.gradcheck(...)`` apply to every call; keyword
    arguments of a call override them. Every result is recorded for the report.
    """

    def __init__(self, options: dict[str, Any], nodeid: str) -> None:
        self.options = options
        self.nodeid = nodeid

    def _opts(self, kwargs: dict[str, Any], entry: str) -> dict[str, Any]:
        """The marker's options that apply to ``entry``, overridden by ``kwargs``.

        A marker option that does not apply to ``entry`` (``budget`` for
        ``check_model``, ``full_threshold`` for the others) is left out for that call;
        the same option given to the call itself is an error.
        """
        from .check._options import APPLIES_TO, check_applies

        check_applies(entry, kwargs)
        merged = {k: v for k, v in self.options.items()
                  if entry in APPLIES_TO.get(k, (entry,))}
        merged.update(kwargs)
        merged.setdefault("name", self.nodeid)
        return merged

    def check_vjp(self, fwd: Any, bwd: Any, inputs: Any, **kwargs: Any) -> CheckResult:
        """:func:`gradcheck.check_vjp` with the test's defaults."""
        from .check._core import check_vjp

        return check_vjp(fwd, bwd, inputs, **self._opts(kwargs, "check_vjp"))

    def assert_vjp(self, fwd: Any, bwd: Any, inputs: Any, **kwargs: Any) -> CheckResult:
        """:func:`gradcheck.assert_vjp` with the test's defaults."""
        __tracebackhide__ = True
        from .check._core import assert_vjp

        return assert_vjp(fwd, bwd, inputs, **self._opts(kwargs, "check_vjp"))

    def check_grad(self, f: Any, grad: Any, x: Any, *constants: Any, **kwargs: Any
                   ) -> CheckResult:
        """:func:`gradcheck.check_grad` with the test's defaults."""
        from .check._grad import check_grad

        return check_grad(f, grad, x, *constants, **self._opts(kwargs, "check_grad"))

    def check_layer(self, layer: Any, *inputs: Any, **kwargs: Any) -> CheckResult:
        """:func:`gradcheck.check_layer` with the test's defaults."""
        from .check._layer import check_layer

        return check_layer(layer, *inputs, **self._opts(kwargs, "check_layer"))

    def assert_layer(self, layer: Any, *inputs: Any, **kwargs: Any) -> CheckResult:
        """:func:`gradcheck.assert_layer` with the test's defaults."""
        __tracebackhide__ = True
        from .check._layer import assert_layer

        return assert_layer(layer, *inputs, **self._opts(kwargs, "check_layer"))

    def check_loss(self, fn: Any, x: Any, *constants: Any, **kwargs: Any) -> CheckResult:
        """:func:`gradcheck.check_loss` with the test's defaults."""
        from .check._loss import check_loss

        return check_loss(fn, x, *constants, **self._opts(kwargs, "check_loss"))

    def assert_loss(self, fn: Any, x: Any, *constants: Any, **kwargs: Any) -> CheckResult:
        """:func:`gradcheck.assert_loss` with the test's defaults."""
        __tracebackhide__ = True
        from .check._loss import assert_loss

        return assert_loss(fn, x, *constants, **self._opts(kwargs, "check_loss"))

    def check_model(self, model: Any, *batch: Any, **kwargs: Any) -> CheckResult:
        """:func:`gradcheck.check_model` with the test's defaults."""
        from .check._model_check import check_model

        return check_model(model, *batch, **self._opts(kwargs, "check_model"))


@pytest.fixture
def gradcheck(request: pytest.FixtureRequest) -> GradcheckFixture:
    """The gradient checker with the options of ``@pytest.mark.gradcheck(...)``."""
    marker = request.node.get_closest_marker("gradcheck")
    options = dict(marker.kwargs) if marker is not None else {}
    return GradcheckFixture(options, request.node.nodeid)


class GoldenArrays:
    """What the ``golden`` fixture returns: regression checks of arrays against files.

    ``golden.check({"dW": dW, "db": db})`` compares with
    ``<test dir>/golden/<module>/<test>.npz``. The first run writes the file (so does
    ``--gradcheck-update-golden``); later runs compare with per-dtype tolerances
    (:data:`gradcheck.report.snapshot.DEFAULT_TOLERANCES`, overridable), those of the dtype
    that computed each array: pass ``computed_dtype="float32"`` (or a dict per array)
    when float32 results are stored as float64, so that they are judged as float32
    results on every CPU. With the ``CI``
    environment variable set, a missing golden file is a failure, not a silent write.
    Every test has its own file, so pytest-xdist workers never share one.
    """

    def __init__(self, request: pytest.FixtureRequest) -> None:
        self.request = request
        self.update = bool(request.config.getoption("--gradcheck-update-golden"))
        path = Path(str(request.node.path))
        name = re.sub(r"[^A-Za-z0-9_.-]+", "_", request.node.name).strip("_")
        self.base = path.parent / "golden" / path.stem / name

    def check(
        self,
        arrays: dict[str, Any],
        *,
        basename: str | None = None,
        tolerances: dict[str, tuple[float, float]] | None = None,
        computed_dtype: str | dict[str, str] | None = None,
    ) -> None:
        """Compare ``arrays`` (name -> array) with the golden file, or write it.

        Parameters
        ----------
        arrays : dict of str to array_like
        basename : str, optional
            A suffix of the file name, for several files in one test.
        tolerances : dict, optional
            ``dtype name -> (rtol, atol)`` overriding the defaults.
        computed_dtype : str or dict of str to str, optional
            The dtype of the arithmetic that produced the arrays (all, or per name),
            when narrower than their stored dtype. Recorded in the golden file.
        """
        __tracebackhide__ = True
        import numpy as np

        if not isinstance(arrays, dict) or not arrays:
            raise TypeError("golden.check expects a non-empty dict of name -> array")
        new = {str(k): np.asarray(v) for k, v in arrays.items()}
        for k, v in new.items():
            if v.dtype == object:
                raise TypeError(f"golden.check: {k!r} has dtype object; give numeric arrays")
        computed = _computed_map(computed_dtype, new)
        base = self.base if basename is None else self.base.with_name(
            f"{self.base.name}-{re.sub(r'[^A-Za-z0-9_.-]+', '_', basename)}")
        npz, meta = base.with_suffix(".npz"), base.with_suffix(".json")
        if self.update or not npz.exists():
            self._write(npz, meta, new, computed)
        else:
            self._compare(npz, meta, new, computed, tolerances)

    def _write(self, npz: Path, meta: Path, new: dict[str, Any], computed: dict[str, str]
               ) -> None:
        __tracebackhide__ = True
        from .report.render import write_json
        from .report.snapshot import write_npz

        if not npz.exists() and not self.update and os.environ.get("CI"):
            pytest.fail(
                f"golden file {npz} is missing and CI is set: it is not written in CI; "
                "run pytest --gradcheck-update-golden locally and commit it"
            )
        npz.parent.mkdir(parents=True, exist_ok=True)
        sha = write_npz(npz, new)
        write_json(meta, {"sha256": sha, "arrays": {
            k: {"shape": list(v.shape), "dtype": v.dtype.name,
                "computed_dtype": computed.get(k, v.dtype.name)}
            for k, v in new.items()}})
        self.request.config.stash[_GOLDEN_WRITTEN].append(str(npz))

    def _compare(self, npz: Path, meta: Path, new: dict[str, Any], computed: dict[str, str],
                 tolerances: dict[str, tuple[float, float]] | None) -> None:
        __tracebackhide__ = True
        import json

        from .report.snapshot import SnapshotError, compare_arrays, computed_dtypes, load_npz

        try:
            info = json.loads(meta.read_text()) if meta.exists() else {}
            old = load_npz(npz, info["sha256"] if info else None)
        except (SnapshotError, KeyError, ValueError) as exc:
            pytest.fail(f"golden file unusable: {exc}")
        recorded = computed_dtypes(info)
        recorded.update(computed)
        rows = compare_arrays(self.request.node.nodeid, old, new, tolerances, recorded)
        bad = [r for r in rows if not r.ok]
        if bad:
            pytest.fail(
                "arrays drifted from the golden file "
                f"{npz}:\n" + "\n".join(r.line() for r in bad)
                + "\n(rerun with --gradcheck-update-golden if the change is intended)"
            )


def _computed_map(computed_dtype: Any, new: dict[str, Any]) -> dict[str, str]:
    """``computed_dtype=`` (one name or a dict) as ``array name -> dtype name``."""
    from .report.snapshot import DEFAULT_TOLERANCES

    if isinstance(computed_dtype, str):
        computed = dict.fromkeys(new, computed_dtype)
    elif isinstance(computed_dtype, dict):
        computed = {str(k): str(v) for k, v in computed_dtype.items()}
    elif computed_dtype is None:
        computed = {}
    else:
        raise TypeError("golden.check: computed_dtype must be a dtype name or a dict "
                        f"of name -> dtype name, got {type(computed_dtype).__name__}")
    for k, d in computed.items():
        if d not in DEFAULT_TOLERANCES:
            raise ValueError(f"golden.check: computed_dtype of {k!r} is {d!r}; expected "
                             f"one of {', '.join(DEFAULT_TOLERANCES)}")
    return computed


@pytest.fixture
def golden(request: pytest.FixtureRequest) -> GoldenArrays:
    """Regression-check arrays against golden files (see :class:`GoldenArrays`)."""
    return GoldenArrays(request)


def _is_worker(config: pytest.Config) -> bool:
    return hasattr(config, "workerinput")


def pytest_sessionfinish(session: pytest.Session) -> None:
    config = session.config
    records = config.stash.get(_RECORDS, [])
    if _is_worker(config):
        config.workeroutput["gradcheck_records"] = records  # type: ignore[attr-defined]
        return
    _write_outputs(config, records)


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node: Any, error: Any) -> None:
    """xdist controller: collect a worker's records (plain types)."""
    out = getattr(node, "workeroutput", {}) or {}
    node.config.stash[_RECORDS].extend(out.get("gradcheck_records", []))


class _OutcomeRecorder:
    """Keeps each test's outcome; under xdist the controller sees every worker's."""

    def __init__(self, outcomes: dict[str, str]) -> None:
        self.outcomes = outcomes

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        if report.failed:
            self.outcomes[report.nodeid] = "failed"
        elif report.when == "call" and self.outcomes.get(report.nodeid) != "failed":
            xfailed = hasattr(report, "wasxfail")
            self.outcomes[report.nodeid] = "xfailed" if xfailed else "passed"


def _write_outputs(config: pytest.Config, records: list[dict[str, Any]]) -> None:
    html_path = config.getoption("--gradcheck-report")
    json_path = config.getoption("--gradcheck-json")
    if not (html_path or json_path):
        return
    from .report.render import build_plugin_report, write_html, write_json

    data = build_plugin_report(records, config.stash.get(_OUTCOMES, {}))
    if json_path:
        write_json(Path(json_path), data)
    if html_path:  # the page links the JSON beside it, or carries the data itself
        href = (Path(os.path.relpath(Path(json_path).resolve(), Path(html_path).resolve().parent))
                .as_posix() if json_path else None)
        write_html(Path(html_path), data, json_href=href)


def summary_counts(
    records: list[dict[str, Any]], outcomes: dict[str, str] | None = None
) -> dict[str, int]:
    """Counts for the terminal summary line.

    Gradient checks and NaN/Inf fuzz checks are counted apart. Of the gradient checks,
    ``failed`` counts failed checks of tests that failed (or whose outcome is unknown);
    ``expected`` counts failed checks inside tests that passed, split into
    ``expected_nonfinite`` (status ``non-finite``: a NaN or Inf that the test expects to
    be named) and ``expected_broken`` (any other status: a deliberately broken backward
    that the test asserts is caught). Of the fuzz checks (an input
    poisoned with NaN or Inf), ``fuzz_named`` ended with a named status (``non-finite``
    or ``error``), as they must; ``fuzz_other`` passed or ended otherwise.
    """
    from .fuzz import ACCEPTED

    outcomes = outcomes or {}
    fuzz = [r for r in records if r.get("purpose") == "fuzz"]
    checks = [r for r in records if r.get("purpose") != "fuzz"]
    failed = [r for r in checks if not r.get("passed")]
    expected = [r for r in failed if outcomes.get(str(r.get("test", ""))) in
                ("passed", "xfailed")]
    named = sum(not r.get("passed") and r.get("status") in ACCEPTED for r in fuzz)
    nonfinite = sum(r.get("status") == "non-finite" for r in expected)
    return {
        "ran": len(checks),
        "passed": len(checks) - len(failed),
        "failed": len(failed) - len(expected),
        "expected": len(expected),
        "expected_nonfinite": nonfinite,
        "expected_broken": len(expected) - nonfinite,
        "kinks": sum(int(r.get("kinks", 0)) for r in checks),
        "fuzz": len(fuzz),
        "fuzz_named": named,
        "fuzz_other": len(fuzz) - named,
    }


def summary_line(c: dict[str, int]) -> str:
    """The terminal summary of :func:`summary_counts`."""
    line = (f"gradcheck: {c['ran']} gradient checks ran, {c['passed']} passed, "
            f"{c['failed']} failed in failing tests, {c['expected']} failed as their "
            f"passing test expected ({c['expected_broken']} broken backward passes caught, "
            f"{c['expected_nonfinite']} NaN/Inf named), {c['kinks']} kinks skipped")
    if c["fuzz"]:
        line += (f"; {c['fuzz']} NaN/Inf fuzz checks, {c['fuzz_named']} ended with a named "
                 f"status (non-finite or error), {c['fuzz_other']} did not")
    return line


def pytest_terminal_summary(terminalreporter: Any, exitstatus: int, config: pytest.Config) -> None:
    if _is_worker(config):
        return
    written = config.stash.get(_GOLDEN_WRITTEN, [])
    if written:
        terminalreporter.write_line(f"gradcheck: wrote {len(written)} golden file(s)")
    records = config.stash.get(_RECORDS, [])
    if not records:
        return
    terminalreporter.write_line(summary_line(summary_counts(records,
                                                            config.stash.get(_OUTCOMES, {}))))
    for opt in ("--gradcheck-report", "--gradcheck-json"):
        path = config.getoption(opt)
        if path:
            terminalreporter.write_line(f"gradcheck: wrote {os.fspath(path)}")
