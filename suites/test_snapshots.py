"""Gradient snapshots: snapshot / compare, drift named correctly, safety, golden fixture."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from gradcheck_model.subject import REFERENCE as REFERENCE_SUBJECT
from gradcheck_model.subject import SNAPSHOT_CASES

from gradcheck import cli
from gradcheck.report import snapshot as snap

pytest_plugins = ["pytester"]
REFERENCE = Path(__file__).resolve().parent.parent / "snapshots" / "reference"
CASES = REFERENCE_SUBJECT.snapshot_cases


@pytest.fixture(scope="module")
def recorded(tmp_path_factory):
    out = tmp_path_factory.mktemp("snap")
    snap.snapshot(out, CASES)
    return out


@pytest.fixture
def copy(recorded, tmp_path):
    dst = tmp_path / "s"
    shutil.copytree(recorded, dst)
    return dst


def test_the_library_holds_no_cases_of_its_own(tmp_path):
    """The cases come from the subject: without them snapshot and compare say so."""
    with pytest.raises(TypeError, match=r"snapshot needs the subject's cases"):
        snap.snapshot(tmp_path / "s")
    with pytest.raises(TypeError, match=r"compare needs the subject's cases"):
        snap.compare(REFERENCE)


def test_the_reference_subject_declares_its_snapshot_folder():
    assert Path(REFERENCE_SUBJECT.snapshot_dir) == REFERENCE


def test_committed_reference_snapshots_match():
    """CI catches any change of the reference model's gradients."""
    res = snap.compare(REFERENCE, cases=CASES)
    assert res.passed, res.report()
    assert len(res.rows) > 200


def _cpu_flags() -> set[str]:
    try:
        text = Path("/proc/cpuinfo").read_text()
    except OSError:
        return set()
    line = next((ln for ln in text.splitlines() if ln.startswith("flags")), "")
    return set(line.split(":", 1)[-1].split())


#: OpenBLAS core types and the instructions their kernels need.
CORE_TYPES = {"Sandybridge": {"avx"}, "Haswell": {"avx2", "fma"},
              "SkylakeX": {"avx512f", "avx512bw", "avx512dq", "avx512vl"}}


def test_reference_snapshots_agree_under_other_cpus_kernels():
    """Other CPUs run other BLAS kernels: the committed numbers must hold under each.

    Runs ``gradcheck compare`` with OpenBLAS forced to every core type this CPU can
    execute (at least Sandybridge and Haswell on any AVX2 machine), alternating one and
    two BLAS threads.
    """
    flags = _cpu_flags()
    runnable = [ct for ct, need in CORE_TYPES.items() if need <= flags]
    if len(runnable) < 2:
        pytest.skip(f"this CPU runs fewer than two OpenBLAS core types ({runnable})")
    for k, ct in enumerate(runnable):
        env = {**os.environ, "OPENBLAS_CORETYPE": ct, "OPENBLAS_NUM_THREADS": str(1 + k % 2)}
        proc = subprocess.run(
            [sys.executable, "-m", "gradcheck.cli", "compare", str(REFERENCE)],
            capture_output=True, text=True, env=env, timeout=300, check=False,
        )
        assert proc.returncode == 0, f"OPENBLAS_CORETYPE={ct}:\n{proc.stdout}{proc.stderr}"


def test_values_are_judged_by_the_dtype_that_computed_them():
    """A float32 model's loss kept as a float64 number is a float32 result."""
    old = {"loss": np.array(2.0), "g": np.ones(3)}
    new = {"loss": np.array(2.0 * (1 + 3e-8)), "g": np.ones(3)}
    as_f64 = {r.parameter: r.status for r in snap.compare_arrays("c", old, new)}
    assert as_f64 == {"loss": "drift", "g": "ok"}
    as_f32 = {r.parameter: r.status
              for r in snap.compare_arrays("c", old, new, computed={"loss": "float32"})}
    assert as_f32 == {"loss": "ok", "g": "ok"}
    # a real float32 change (1e-3) is still drift
    new["loss"] = np.array(2.0 * (1 + 1e-3))
    rows = snap.compare_arrays("c", old, new, computed={"loss": "float32"})
    assert [r.status for r in rows if r.parameter == "loss"] == ["drift"]


def test_manifest_records_the_computing_dtype(recorded):
    m = json.loads((recorded / "manifest.json").read_text())
    f32 = m["cases"]["gelu-pre-ce-f32"]["arrays"]["loss"]
    assert f32 == {"shape": [], "dtype": "float64", "computed_dtype": "float32"}
    assert m["cases"]["gelu-pre-ce-f64"]["arrays"]["loss"]["computed_dtype"] == "float64"


def test_manifest_contents(recorded):
    m = json.loads((recorded / "manifest.json").read_text())
    assert set(m["cases"]) == set(SNAPSHOT_CASES)
    for entry in m["cases"].values():
        assert {"config", "seed", "batch", "file", "sha256", "arrays"} <= set(entry)
        assert (recorded / entry["file"]).exists()
        assert all({"shape", "dtype", "computed_dtype"} == set(a)
                   for a in entry["arrays"].values())
    assert {"numpy", "scipy", "python", "gradcheck"} <= set(m["versions"])
    assert m["git_commit"]


@pytest.mark.parametrize(
    ("bug", "expect_bad", "expect_ok"),
    [
        ("layernorm_no_mean", {"grad.tok_emb", "grad.blocks.0.attn.Wq"}, {"grad.head.W"}),
        ("residual_dropped", {"grad.tok_emb", "grad.blocks.0.ffn.W1"}, {"grad.head.W"}),
    ],
)
def test_broken_backward_is_caught_and_named(recorded, monkeypatch, bug, expect_bad, expect_ok):
    import gradcheck_model.block as block

    if bug == "layernorm_no_mean":
        original = block.layernorm_backward

        def broken(dy, cache):
            dx, dg, db = original(dy, cache)
            return dx + cache.rstd * (dy * cache.gamma).mean(axis=-1, keepdims=True), dg, db

        monkeypatch.setattr(block, "layernorm_backward", broken)
    else:
        original_bb = block.block_backward

        def broken_block(dy, cache):
            dx, g = original_bb(dy, cache)
            return dx - dy if cache.norm == "pre" else dx, g  # the skip branch dropped

        import gradcheck_model.transformer as tr

        monkeypatch.setattr(tr, "block_backward", broken_block)
    res = snap.compare(recorded, cases=CASES)
    assert not res.passed
    bad = {r.parameter for r in res.drifted if r.case == "gelu-pre-ce-f64"}
    assert expect_bad <= bad and not (expect_ok & bad)
    row = next(r for r in res.drifted if r.parameter == "grad.tok_emb")
    assert row.status == "drift" and row.max_abs > 0 and row.max_rel > 0 and row.worst_index
    assert "max abs diff" in res.report() and "grad.tok_emb" in res.report()


def _rewrite(directory: Path, case: str, change) -> None:
    """Edit one case's arrays and fix up the manifest so that only semantics differ."""
    m = json.loads((directory / "manifest.json").read_text())
    entry = m["cases"][case]
    arrays = snap.load_npz(directory / entry["file"], entry["sha256"])
    change(arrays)
    entry["sha256"] = snap.write_npz(directory / entry["file"], arrays)
    (directory / "manifest.json").write_text(json.dumps(m))


@pytest.mark.parametrize(
    ("change", "status"),
    [
        (lambda a: a.__setitem__("grad.head.b", a["grad.head.b"].astype(np.float32)),
         "dtype-changed"),
        (lambda a: a.__setitem__("grad.head.b", a["grad.head.b"][:-1]), "shape-changed"),
        (lambda a: a.__setitem__("grad.old_param", np.zeros(3)), "missing"),
        (lambda a: a.pop("grad.head.b"), "extra"),
        (lambda a: a["grad.head.b"].__setitem__(0, np.nan), "non-finite"),
        (lambda a: a["grad.head.b"].__setitem__(2, a["grad.head.b"][2] * (1 + 1e-6)), "drift"),
    ],
)
def test_every_kind_of_drift_is_said(copy, change, status):
    _rewrite(copy, "gelu-pre-ce-f64", change)
    res = snap.compare(copy, cases=CASES)
    rows = [r for r in res.drifted]
    assert [r.status for r in rows] == [status]
    assert rows[0].case == "gelu-pre-ce-f64"


def test_new_nan_is_drift_not_pass():
    rows = snap.compare_arrays("c", {"x": np.ones(3)}, {"x": np.array([1.0, np.nan, 1.0])})
    assert rows[0].status == "non-finite" and rows[0].worst_index == (1,)


def test_tolerances_per_dtype_and_overridable():
    old = {"a": np.ones(4), "b": np.ones(4, np.float32)}
    new = {"a": np.ones(4) * (1 + 1e-7), "b": np.ones(4, np.float32) * np.float32(1 + 1e-5)}
    rows = {r.parameter: r.status for r in snap.compare_arrays("c", old, new)}
    assert rows == {"a": "drift", "b": "ok"}
    rows = {r.parameter: r.status
            for r in snap.compare_arrays("c", old, new, {"float64": (1e-6, 0.0)})}
    assert rows == {"a": "ok", "b": "ok"}


# -- safety ---------------------------------------------------------------------------------
def test_corrupted_truncated_and_edited_files_are_named(copy):
    m = json.loads((copy / "manifest.json").read_text())
    f = copy / m["cases"]["relu-post-ce-f64"]["file"]
    f.write_bytes(f.read_bytes()[:100])
    with pytest.raises(snap.SnapshotError, match=f"{f.name}: sha256 does not match"):
        snap.compare(copy, cases=CASES)
    f.unlink()
    with pytest.raises(snap.SnapshotError, match=f"{f.name}: file is missing"):
        snap.compare(copy, cases=CASES)
    (copy / "manifest.json").write_text("{not json")
    with pytest.raises(snap.SnapshotError, match="manifest.json: not valid JSON"):
        snap.compare(copy, cases=CASES)


def test_loading_never_unpickles(tmp_path):
    path = tmp_path / "evil.npz"
    np.savez(path, x=np.array([{"a": 1}], dtype=object))
    with pytest.raises(snap.SnapshotError, match="evil.npz: refused to load"):
        snap.load_npz(path)


def test_interrupted_update_leaves_previous_snapshot_intact(copy, monkeypatch):
    import gradcheck_model.block as block

    real_replace = os.replace

    def replace(src, dst):
        if str(dst).endswith("manifest.json"):
            raise KeyboardInterrupt("interrupted")
        return real_replace(src, dst)

    original = block.layernorm_backward
    monkeypatch.setattr(block, "layernorm_backward",
                        lambda dy, c: tuple(2 * g for g in original(dy, c)))
    monkeypatch.setattr(os, "replace", replace)
    with pytest.raises(KeyboardInterrupt):
        snap.snapshot(copy, CASES)
    monkeypatch.undo()
    assert snap.compare(copy, cases=CASES).passed  # the previous snapshot is whole
    assert not list(copy.glob(".*.tmp"))


# -- command line ---------------------------------------------------------------------------
def test_cli_snapshot_and_compare(tmp_path, capsys, monkeypatch):
    out = tmp_path / "snap"
    assert cli.main(["snapshot", "--out", str(out)]) == 0
    assert cli.main(["compare", str(out), "--json", str(tmp_path / "c.json")]) == 0
    assert "all agree within tolerance" in capsys.readouterr().out
    assert json.loads((tmp_path / "c.json").read_text())["passed"] is True

    import gradcheck_model.block as block
    import gradcheck_model.layernorm as ln

    original = ln.layernorm_backward
    monkeypatch.setattr(block, "layernorm_backward",
                        lambda dy, c: (original(dy, c)[0] * 1.001, *original(dy, c)[1:]))
    assert cli.main(["compare", str(out)]) == 1
    text = capsys.readouterr().out
    assert "drift: max abs diff" in text and "gelu-pre-ce-f64" in text


def test_cli_compare_errors(tmp_path, capsys):
    with pytest.raises(SystemExit) as e:
        cli.main(["compare", str(tmp_path / "nope")])
    assert e.value.code == 2 and "no such snapshot directory" in capsys.readouterr().err
    (tmp_path / "manifest.json").write_text("[]")
    assert cli.main(["compare", str(tmp_path)]) == 2
    assert "not a gradcheck snapshot manifest" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        cli.main(["compare", str(tmp_path), "--rtol-float64", "-1"])


# -- the golden fixture ---------------------------------------------------------------------
GOLDEN_TEST = """
import numpy as np
import pytest

SCALE = {scale}

@pytest.mark.parametrize("k", [1, 2])
def test_grads(golden, k):
    golden.check({{"dW": np.arange(6.0).reshape(2, 3) * SCALE * k, "db": np.ones(3)}})
"""


def _ini(pytester):
    pytester.makeini(
        "[pytest]\nfilterwarnings =\n    error\n"
        "    ignore:Benchmarks are automatically disabled:UserWarning\n"
    )


def test_golden_fixture_writes_then_compares(pytester, monkeypatch):
    monkeypatch.delenv("CI", raising=False)
    _ini(pytester)
    pytester.makepyfile(test_g=GOLDEN_TEST.format(scale=1.0))
    r = pytester.runpytest()
    r.assert_outcomes(passed=2)
    r.stdout.fnmatch_lines(["gradcheck: wrote 2 golden file(s)"])
    files = sorted(p.name for p in (pytester.path / "golden" / "test_g").iterdir())
    assert files == ["test_grads_1.json", "test_grads_1.npz", "test_grads_2.json",
                     "test_grads_2.npz"]
    pytester.runpytest().assert_outcomes(passed=2)
    pytester.makepyfile(test_g=GOLDEN_TEST.format(scale=1.001))
    r = pytester.runpytest()
    r.assert_outcomes(failed=2)
    r.stdout.fnmatch_lines(["*dW drift: max abs diff*", "*--gradcheck-update-golden*"])
    pytester.runpytest("--gradcheck-update-golden").assert_outcomes(passed=2)
    pytester.runpytest().assert_outcomes(passed=2)


def test_golden_missing_in_ci_is_a_failure(pytester, monkeypatch):
    monkeypatch.setenv("CI", "true")
    _ini(pytester)
    pytester.makepyfile(test_g=GOLDEN_TEST.format(scale=1.0))
    r = pytester.runpytest()
    r.assert_outcomes(failed=2)
    r.stdout.fnmatch_lines(["*is missing and CI is set*"])
    assert not (pytester.path / "golden").exists()


def test_golden_under_xdist_each_test_has_its_own_file(pytester, monkeypatch):
    monkeypatch.delenv("CI", raising=False)
    _ini(pytester)
    pytester.makepyfile(test_g=GOLDEN_TEST.format(scale=1.0))
    pytester.runpytest_subprocess("-n", "2").assert_outcomes(passed=2)
    pytester.runpytest_subprocess("-n", "2").assert_outcomes(passed=2)


GOLDEN_F32 = """
import numpy as np

def test_loss(golden):
    golden.check({{"loss": np.array(2.0 * {factor})}}, computed_dtype={computed!r})
"""


@pytest.mark.parametrize(("computed", "outcome"), [(None, "failed"), ("float32", "passed")])
def test_golden_judges_by_the_computing_dtype(pytester, monkeypatch, computed, outcome):
    monkeypatch.delenv("CI", raising=False)
    _ini(pytester)
    pytester.makepyfile(test_g=GOLDEN_F32.format(factor=1.0, computed=computed))
    pytester.runpytest().assert_outcomes(passed=1)
    meta = json.loads(next((pytester.path / "golden" / "test_g").glob("*.json")).read_text())
    assert meta["arrays"]["loss"]["computed_dtype"] == (computed or "float64")
    # the last bits of a float32 result move on another CPU
    pytester.makepyfile(test_g=GOLDEN_F32.format(factor=1 + 3e-8, computed=computed))
    pytester.runpytest().assert_outcomes(**{outcome: 1})


def test_golden_rejects_a_bad_computed_dtype(pytester, monkeypatch):
    monkeypatch.delenv("CI", raising=False)
    _ini(pytester)
    pytester.makepyfile(test_g=GOLDEN_F32.format(factor=1.0, computed="float8"))
    r = pytester.runpytest()
    r.assert_outcomes(failed=1)
    r.stdout.fnmatch_lines(["*computed_dtype of 'loss' is 'float8'*"])
