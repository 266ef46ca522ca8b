"""Shared fixtures, Hypothesis profiles and the property/fuzz statistics."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, settings

# CI: derandomized (the same examples every run), no deadline (a shared machine is
# noisy), a fixed example count that keeps the suite within its time. "dev" digs deeper.
settings.register_profile(
    "ci",
    derandomize=True,
    deadline=None,
    max_examples=25,
    print_blob=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
settings.register_profile(
    "dev",
    deadline=None,
    max_examples=300,
    print_blob=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))

_STATS: dict[str, dict[str, Any]] = {}


class Examples:
    """Counts the examples a property or fuzz test tried."""

    def __init__(self) -> None:
        self.n = 0
        self.note = ""

    def tick(self) -> None:
        self.n += 1


@pytest.fixture
def examples(request: pytest.FixtureRequest) -> Examples:
    ex = Examples()
    _STATS[request.node.nodeid] = {"test": request.node.nodeid, "examples": 0,
                                   "outcome": "running", "note": ""}
    yield ex
    _STATS[request.node.nodeid].update(examples=ex.n, note=ex.note)


def pytest_configure(config: pytest.Config) -> None:
    if not hasattr(config, "workerinput"):  # the controller clears the last run's files
        for old in (Path(config.rootpath) / "reports").glob("properties-*.json"):
            old.unlink()


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    row = _STATS.get(report.nodeid)
    if row is not None and (report.when == "call" or report.failed):
        row["outcome"] = report.outcome


def pytest_sessionfinish(session: pytest.Session) -> None:
    if not _STATS:
        return
    worker = os.environ.get("PYTEST_XDIST_WORKER", "main")
    out = Path(session.config.rootpath) / "reports" / f"properties-{worker}.json"
    out.parent.mkdir(exist_ok=True)
    tmp = out.with_suffix(".tmp")
    tmp.write_text(json.dumps({"rows": list(_STATS.values())}, indent=1))
    tmp.replace(out)


def pytest_terminal_summary(terminalreporter: Any) -> None:
    if _STATS:
        n = sum(r["examples"] for r in _STATS.values())
        bad = sum(r["outcome"] == "failed" for r in _STATS.values())
        terminalreporter.write_line(
            f"properties: {len(_STATS)} property/fuzz tests on this process tried {n} "
            f"examples, {bad} failed"
        )

#: The subject of the generated tests in test_subject.py: the reference model, through
#: the same path a user's subject takes.
gradcheck_subject = "gradcheck_model.subject:REFERENCE"


@pytest.fixture(autouse=True)
def _sigint_as_it_was(request: pytest.FixtureRequest) -> Any:
    """A test that leaves SIGINT ignored, handled otherwise or blocked in this process
    would leave every command a later test starts deaf to Ctrl-C (the disposition and
    the mask are inherited): put both back, and say which test it was."""
    import signal
    import sys

    handler = signal.getsignal(signal.SIGINT)
    mask = signal.pthread_sigmask(signal.SIG_BLOCK, set())
    yield
    now, now_mask = signal.getsignal(signal.SIGINT), signal.pthread_sigmask(
        signal.SIG_BLOCK, set())
    if now is not handler or now_mask != mask:
        print(f"\n{request.node.nodeid} left SIGINT {now!r} (mask {sorted(now_mask)}); "
              "put back", file=sys.stderr)
        signal.signal(signal.SIGINT, handler)
        signal.pthread_sigmask(signal.SIG_SETMASK, mask)
