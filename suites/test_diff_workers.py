"""The worker processes of ``gradcheck diff`` and multiprocessing's resource tracker.

A ``spawn`` start launches the resource tracker with the first worker, and launching it
unblocks SIGINT in the parent: the worker spawned right after then got a terminal's
Ctrl-C during its start-up (a KeyboardInterrupt traceback). The tracker also outlived
the command by a moment (a process left when it ended). Each test runs in a process of
its own (the tracker is one per process) inside a session that is killed afterwards.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from suites._procs import alive_in_group, session
from suites.test_diff import ROOT, SPEC, _repo

PROBE = '''
import os, sys
from pathlib import Path
from multiprocessing import resource_tracker
from gradcheck.diff._worker import Worker
from gradcheck.run._interrupt import stop_tracker

repo = Path(sys.argv[1])
w = Worker("BASE", repo, repo, sys.argv[2], repo, 60.0)
status = Path(f"/proc/{w.proc.pid}/status").read_text()
mask = int(next(s for s in status.splitlines() if s.startswith("SigBlk:")).split()[1], 16)
tracker = resource_tracker._resource_tracker._pid
w.close()
stop_tracker()
print(mask & 2, tracker is not None, os.getpid(), flush=True)
sys.stdin.readline()  # the test looks at the session before this process ends
'''


@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="reads /proc")
def test_a_worker_starts_with_sigint_blocked_and_the_tracker_is_stopped(tmp_path):
    repo = _repo(tmp_path)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    with session([sys.executable, "-c", PROBE, str(repo), SPEC], cwd=repo, env=env,
                 stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True) as proc:
        blocked, started, pid = proc.stdout.readline().split()
        left = [p for p in alive_in_group(proc.pid) if p != int(pid)]
        proc.stdin.write("\n")
        proc.stdin.flush()
        assert proc.wait(timeout=60) == 0
    assert started == "True"  # the tracker ran (spawn starts it)
    assert blocked == "2", "the worker was spawned with SIGINT unblocked"
    assert left == [], "a process of the diff (the resource tracker) outlived it"


def test_a_diff_stops_the_tracker_it_started(tmp_path, monkeypatch):
    """After run_diff (here in this process) the tracker is stopped and reaped, not
    left to end on its own a moment after the command."""
    from multiprocessing import resource_tracker

    from gradcheck.diff import run as diff
    from gradcheck.diff.run import run_diff

    repo = _repo(tmp_path)
    seen: list[int | None] = []
    run = diff._run

    def recording(*args, **kwargs):
        seen.append(resource_tracker._resource_tracker._pid)
        return run(*args, **kwargs)

    monkeypatch.setattr(diff, "_run", recording)
    run_diff("HEAD", subject=SPEC, level="quick", speed=False, cwd=repo)
    assert seen and seen[0] is not None  # the workers had started it
    assert resource_tracker._resource_tracker._fd is None
    with pytest.raises(ChildProcessError):
        os.waitpid(seen[0], os.WNOHANG)  # reaped already
