"""Snapshots of arrays, for regression checks of backprop changes.

``snapshot(DIR, cases)`` records a subject's fixed cases (name -> a function returning
its arrays, the loss and every gradient say, and a description): one ``.npz`` per case
and a ``manifest.json`` (case, description, shapes, dtypes, the sha256 of each file,
library versions, git commit). ``compare(DIR, cases=...)`` recomputes and reports every
drift: values beyond tolerance, a dtype or shape change, a missing or extra array,
NaN/Inf where there was none. A subject declares its cases (``Subject.snapshot_cases``)
and the folder of its recorded snapshot (``Subject.snapshot_dir``).

Tolerances are those of the dtype that *computed* a value, not of the dtype it is
stored in: a float32 model's loss is a float32 result even when it is kept as a
float64 number (the manifest records ``computed_dtype`` per array). BLAS libraries pick
different kernels on different CPUs, so a float32 result moves in its last bits from one
machine to another; judged as float64 it would drift everywhere but where it was made.

Loading never executes anything (``allow_pickle=False``) and every file's sha256 is
checked against the manifest first. Writing is atomic: data files get new,
content-addressed names, the manifest is replaced in one ``os.replace``, and only then
are files the new manifest no longer names removed, so an interrupted update leaves the
previous snapshot whole.
"""

from __future__ import annotations

import hashlib
import io
import json
import math
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from ..check._json import plain
from ..run._io import write_atomic

__all__ = [
    "DEFAULT_TOLERANCES",
    "CompareResult",
    "Drift",
    "SnapshotError",
    "compare",
    "compare_arrays",
    "computed_dtypes",
    "load_npz",
    "snapshot",
    "write_npz",
]

FORMAT = 1
#: (rtol, atol) by dtype: ``|new - old| <= atol + rtol * |old|``.
DEFAULT_TOLERANCES: dict[str, tuple[float, float]] = {
    "float64": (1e-9, 1e-12),
    "float32": (1e-4, 1e-6),
}

Case = Callable[[], tuple[dict[str, np.ndarray], dict[str, Any]]]


def _required(cases: Mapping[str, Case] | None, fn: str) -> Mapping[str, Case]:
    """A subject's cases (this library holds none of its own)."""
    if cases is None:
        raise TypeError(f"{fn} needs the subject's cases: {fn}(..., cases="
                        "subject.snapshot_cases)")
    return cases


class SnapshotError(Exception):
    """A snapshot file is missing, truncated, corrupted or edited; names the file."""


@dataclass
class Drift:
    """One compared array."""

    case: str
    parameter: str
    status: str  # ok, drift, dtype-changed, shape-changed, missing, extra, non-finite
    max_abs: float = 0.0
    max_rel: float = 0.0
    worst_index: tuple[int, ...] = ()
    detail: str = ""

    @property
    def ok(self) -> bool:
        return self.status == "ok"

    def line(self) -> str:
        if self.status in ("drift", "non-finite"):
            return (f"{self.case}: {self.parameter} {self.status}: max abs diff "
                    f"{self.max_abs:.3e}, max rel diff {self.max_rel:.3e} at index "
                    f"{self.worst_index}{'; ' + self.detail if self.detail else ''}")
        return f"{self.case}: {self.parameter} {self.status}: {self.detail}".rstrip(": ")


@dataclass
class CompareResult:
    """All drifts of a comparison."""

    rows: list[Drift] = field(default_factory=list)

    @property
    def passed(self) -> bool:
        return all(r.ok for r in self.rows)

    @property
    def drifted(self) -> list[Drift]:
        return [r for r in self.rows if not r.ok]

    def report(self) -> str:
        bad = self.drifted
        head = (f"{len(self.rows)} arrays compared, "
                f"{'all agree within tolerance' if not bad else f'{len(bad)} drifted'}")
        return "\n".join([head, *(d.line() for d in bad)])

    def to_dict(self) -> dict[str, Any]:
        return plain({"passed": self.passed, "rows": [asdict(r) for r in self.rows]})


# -- files ----------------------------------------------------------------------------------
def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _npz_bytes(arrays: dict[str, np.ndarray]) -> bytes:
    buf = io.BytesIO()
    np.savez(buf, **arrays)  # type: ignore[arg-type]
    return buf.getvalue()


def write_npz(path: Path, arrays: dict[str, np.ndarray]) -> str:
    """Write ``arrays`` to ``path`` atomically; return the file's sha256."""
    data = _npz_bytes({k: np.asarray(v) for k, v in arrays.items()})
    write_atomic(Path(path), data)
    return _sha256(data)


def load_npz(path: Path, sha256: str | None = None) -> dict[str, np.ndarray]:
    """Load an ``.npz`` without pickles, after checking its sha256 if one is given."""
    path = Path(path)
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        raise SnapshotError(f"{path}: file is missing") from None
    if sha256 is not None and _sha256(data) != sha256:
        raise SnapshotError(
            f"{path}: sha256 does not match the manifest (file truncated, corrupted or "
            "edited); regenerate the snapshot"
        )
    try:
        with np.load(io.BytesIO(data), allow_pickle=False) as z:
            return {k: z[k] for k in z.files}
    except ValueError as exc:
        raise SnapshotError(f"{path}: refused to load ({exc})") from None
    except Exception as exc:  # zipfile and numpy raise many types for a bad file
        raise SnapshotError(f"{path}: not a readable .npz file ({exc})") from None


# -- computing ------------------------------------------------------------------------------
def computed_dtypes(entry: dict[str, Any]) -> dict[str, str]:
    """``array name -> dtype that computed it`` from a manifest entry (may be empty)."""
    out = {}
    for k, a in entry.get("arrays", {}).items():
        if isinstance(a, dict) and isinstance(a.get("computed_dtype"), str):
            out[k] = a["computed_dtype"]
    return out


def snapshot(out: Path, cases: Mapping[str, Case] | None = None) -> dict[str, Any]:
    """Record ``cases`` (name -> ``() -> (arrays, description)``, a subject's
    ``snapshot_cases``; required) into ``out``; returns the manifest. A description may
    say ``computed_dtype``: the dtype whose tolerance its arrays get."""
    from ._env import git_commit, versions

    cases = _required(cases, "snapshot")
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    manifest: dict[str, Any] = {"format": FORMAT, "versions": versions(),
                                "git_commit": git_commit(out), "cases": {}}
    for name, make in cases.items():
        arrays, desc = make()
        data = _npz_bytes(arrays)
        sha = _sha256(data)
        fname = f"{name}-{sha[:12]}.npz"
        if not (out / fname).exists():
            write_atomic(out / fname, data)
        manifest["cases"][name] = {
            **desc, "file": fname, "sha256": sha,
            "arrays": {k: {"shape": list(v.shape), "dtype": v.dtype.name,
                           "computed_dtype": desc.get("computed_dtype", v.dtype.name)}
                       for k, v in arrays.items()},
        }
    write_atomic(out / "manifest.json", (json.dumps(manifest, indent=1) + "\n").encode())
    keep = {c["file"] for c in manifest["cases"].values()} | {"manifest.json"}
    for f in out.glob("*.npz"):
        if f.name not in keep:
            f.unlink()
    return manifest


def read_manifest(directory: Path) -> dict[str, Any]:
    """The manifest of a snapshot directory, checked for shape."""
    path = Path(directory) / "manifest.json"
    try:
        manifest = json.loads(path.read_text())
    except FileNotFoundError:
        raise SnapshotError(f"{path}: no manifest; is this a snapshot directory?") from None
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise SnapshotError(f"{path}: not valid JSON ({exc})") from None
    if not isinstance(manifest, dict) or manifest.get("format") != FORMAT or not isinstance(
        manifest.get("cases"), dict
    ):
        raise SnapshotError(f"{path}: not a gradcheck snapshot manifest (format {FORMAT})")
    for name, c in manifest["cases"].items():
        if not isinstance(c, dict) or not {"file", "sha256"} <= set(c):
            raise SnapshotError(f"{path}: entry {name!r} lacks 'file' or 'sha256'")
    return manifest


# -- comparing ------------------------------------------------------------------------------
def compare_arrays(
    case: str,
    old: dict[str, np.ndarray],
    new: dict[str, np.ndarray],
    tolerances: dict[str, tuple[float, float]] | None = None,
    computed: dict[str, str] | None = None,
) -> list[Drift]:
    """Compare two dicts of arrays; every difference is a :class:`Drift` row.

    Parameters
    ----------
    case : str
        A label for the rows.
    old, new : dict of str to ndarray
        The recorded and the recomputed arrays.
    tolerances : dict, optional
        ``dtype name -> (rtol, atol)`` overriding :data:`DEFAULT_TOLERANCES`.
    computed : dict of str to str, optional
        ``array name -> dtype name`` of the arithmetic that produced it, when that is
        narrower than the dtype it is stored in (a float32 model's loss kept as a
        float64 number); its tolerance is then that dtype's. Default: the stored dtype.
    """
    tol = dict(DEFAULT_TOLERANCES)
    tol.update(tolerances or {})
    computed = computed or {}
    rows = []
    for k in sorted(set(old) | set(new)):
        if k not in new:
            rows.append(Drift(case, k, "missing", detail="in the snapshot, not computed now"))
        elif k not in old:
            rows.append(Drift(case, k, "extra", detail="computed now, not in the snapshot"))
        else:
            a = np.asarray(old[k])
            rtol, atol = tol.get(computed.get(k, a.dtype.name), (0.0, 0.0))
            rows.append(_compare_one(case, k, a, np.asarray(new[k]), rtol, atol))
    return rows


def _compare_one(case: str, k: str, a: np.ndarray, b: np.ndarray, rtol: float, atol: float
                 ) -> Drift:
    """One recorded array ``a`` against its recomputed ``b``."""
    if a.dtype != b.dtype:
        return Drift(case, k, "dtype-changed", detail=f"{a.dtype} -> {b.dtype}")
    if a.shape != b.shape:
        return Drift(case, k, "shape-changed", detail=f"{a.shape} -> {b.shape}")
    fa, fb = np.isfinite(a), np.isfinite(b)
    if not np.array_equal(fa, fb) or not np.array_equal(a[~fa], b[~fb]):
        idx = np.unravel_index(int(np.argmax(fa != fb)), a.shape) if a.size else ()
        return Drift(case, k, "non-finite", math.inf, math.inf,
                     tuple(int(i) for i in idx), "NaN/Inf where there was none")
    if a.size == 0:
        return Drift(case, k, "ok")
    a64 = np.where(fa, a, 0).astype(np.float64)
    b64 = np.where(fb, b, 0).astype(np.float64)
    diff = np.abs(b64 - a64)
    rel = diff / np.maximum(np.abs(a64), atol if atol > 0 else 1e-300)
    bad = diff > atol + rtol * np.abs(a64)
    worst = int(np.argmax(diff))
    row = Drift(case, k, "drift" if bad.any() else "ok", float(diff.max()),
                float(rel.max()), tuple(int(i) for i in np.unravel_index(worst, a.shape)))
    if bad.any():
        row.detail = f"{int(bad.sum())} of {a.size} elements beyond rtol={rtol}, atol={atol}"
    return row


def compare(
    directory: Path, tolerances: dict[str, tuple[float, float]] | None = None,
    cases: Mapping[str, Case] | None = None,
) -> CompareResult:
    """Recompute every case of the snapshot in ``directory`` and compare.

    ``cases``: name -> ``() -> (arrays, description)``, the subject's ``snapshot_cases``
    (required; a TypeError names it when missing).
    """
    cases = _required(cases, "compare")
    directory = Path(directory)
    manifest = read_manifest(directory)
    result = CompareResult()
    for name, entry in manifest["cases"].items():
        old = load_npz(directory / entry["file"], entry["sha256"])
        if name not in cases:
            result.rows.append(Drift(name, "*", "missing", detail="case no longer exists"))
            continue
        new, desc = cases[name]()
        # the dtype of the arithmetic: recorded in the manifest, else the description's
        computed = {k: desc["computed_dtype"] for k in new if "computed_dtype" in desc}
        computed.update(computed_dtypes(entry))
        result.rows += compare_arrays(name, old, new, tolerances, computed)
    for name in cases:
        if name not in manifest["cases"]:
            result.rows.append(Drift(name, "*", "extra", detail="case not in the snapshot"))
    return result
