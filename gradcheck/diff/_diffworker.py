"""The worker process of ``gradcheck diff``: one revision's subject, imported alone.

Each revision runs in its own spawned process. The process imports the *running*
gradcheck first (the one that started the diff), then replaces every ``sys.path`` entry
inside the repository by the same folder inside the revision (:func:`remapped`) and puts
the revision's folder first, so that the subject's modules come from that revision while
every ``gradcheck`` module keeps coming from the running package (its ``__path__`` is
fixed once imported; a ``gradcheck/`` folder in the revision is never read). After the
import, a module of the repository loaded from outside the revision's folder (an import
hook of an editable install) is reported, and the diff refuses to run. Before a case is
built, the global generators of the user's code are seeded (:func:`seed_globals`). BLAS
is limited to one thread, so the thread CPU time of the worker's main thread is all the
work a timed call does.

The parent sends ``(operation, args)`` tuples through a pipe and gets ``("ok", value)``
or ``("error", one line)`` back; ``None`` ends the worker. A worker that does not
answer within its time limit is killed, and one that dies is noticed, by the parent
(:class:`WorkerFault`, carrying a :class:`gradcheck.run._pool.Fault`); the parent starts
another in the same state (:meth:`Worker.restart`).
"""

from __future__ import annotations

import copy
import importlib
import math
import os
import signal
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from ..check._core import input_names
from ..run._pool import fault_of

__all__ = ["WorkerError", "remapped", "seed_globals", "serve"]


class WorkerError(Exception):
    """A worker could not do what it was asked (one line, names the revision)."""


# -- the worker's side ---------------------------------------------------------------------------
def _fix_allocator(threshold: int = 1 << 30) -> bool:
    """Fix glibc's mmap and trim thresholds (off glibc: False).

    By default glibc moves its mmap threshold with the history of the process (each
    freed large block raises it), so two processes running the same code can differ in
    whether a large array costs page faults at every call: on a small transformer's
    training step, a 20% difference in CPU time. Fixed thresholds make both workers
    allocate alike (and keep freed pages for reuse, as the model's training loop does).
    """
    if not sys.platform.startswith("linux"):
        return False
    import ctypes
    import ctypes.util

    name = ctypes.util.find_library("c")
    try:
        libc = ctypes.CDLL(name)
        return bool(libc.mallopt(-3, threshold) == 1 and libc.mallopt(-1, threshold) == 1)
    except (OSError, AttributeError):
        return False


def _environment(path: Path) -> bool:
    """An installed-packages folder (a virtual environment kept inside the repository):
    the environment, not the user's code, so it stays on ``sys.path`` as it is."""
    return bool({"site-packages", "dist-packages"} & set(path.parts))


def _inside(path: Path, folder: Path) -> bool:
    return path == folder or folder in path.parents


def remapped(entries: list[str], repo: Path, rev: Path) -> list[str]:
    """``sys.path`` for the revision at ``rev`` of the repository at ``repo``.

    Every entry inside the repository (the current folder ``''``, ``PYTHONPATH``
    entries, an editable install's ``src``) becomes the same relative folder inside the
    revision, or is dropped when the revision has no such folder; installed-packages
    folders and entries outside the repository are kept."""
    out: list[str] = []
    for entry in entries:
        real = Path(entry or os.getcwd()).resolve()
        new = entry
        if _inside(real, repo) and not _environment(real):
            mapped = rev / real.relative_to(repo)
            if not mapped.is_dir():
                continue
            new = str(mapped)
        if new not in out:
            out.append(new)
    return out


def _setup(root: str, cwd: str, repo: str, expected: str) -> None:
    import gradcheck

    here = str(Path(gradcheck.__file__).resolve().parent)
    if here != expected:
        raise WorkerError(f"the worker imported gradcheck from {here}, not {expected}")
    from ..run._threads import limit_blas_threads

    limit_blas_threads(1)
    _fix_allocator()
    np.seterr(all="ignore")  # NaN/Inf are named by the checks and values, not warned of
    sys.path[:] = remapped(sys.path, Path(repo).resolve(), Path(root).resolve())
    sys.path.insert(0, root)
    os.chdir(cwd if Path(cwd).is_dir() else root)  # the folder may be new since BASE


def serve(conn: Any, root: str, cwd: str, spec: str, repo: str, expected: str) -> None:
    """The worker's loop (the target of the spawned process)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the parent stops it (Worker.close)
    try:
        _setup(root, cwd, repo, expected)
        state = _State(spec, Path(root).resolve(), Path(expected), Path(repo).resolve())
        while True:
            msg = conn.recv()
            if msg is None:
                return
            op, args = msg
            try:
                reply = ("ok", _OPS[op](state, *args))
            except Exception as exc:
                reply = ("error", f"{op}: {fault_of(exc).describe().removeprefix('error: ')}")
            conn.send(reply)
    except (KeyboardInterrupt, EOFError, BrokenPipeError):
        return


@dataclass
class _State:
    spec: str
    root: Path
    gradcheck_dir: Path
    repo: Path
    subject: Any = None
    borrowed: str = ""  # the subject's file, taken from another revision
    layers: dict[str, tuple[Any, str]] = field(default_factory=dict)
    models: dict[str, Any] = field(default_factory=dict)
    timers: dict[str, Callable[[], Any]] = field(default_factory=dict)
    #: draws the heap layout of each timed run (:func:`_heap_pad`)
    layout: np.random.Generator = field(default_factory=lambda: np.random.default_rng(0))


def _missing(spec: str) -> str:
    """Why the subject's module or attribute does not exist here ('' if it does)."""
    module_name, _, attr = spec.partition(":")
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        parts = module_name.split(".")
        if exc.name in {".".join(parts[:k]) for k in range(1, len(parts) + 1)}:
            return f"no module named {exc.name!r}"
        return ""
    except Exception:
        return ""  # load_subject says what went wrong
    return "" if hasattr(module, attr) else f"module {module_name!r} has no attribute {attr!r}"


def seed_globals(seed: int) -> None:
    """Seed the global generators of the user's code (``np.random``, ``random``) alike
    in both workers, before a case is built: layers that draw their weights from the
    global state then start from the same weights at both revisions. (gradcheck's own
    draws use explicit Generators.)"""
    import random

    np.random.seed(seed)  # noqa: NPY002 - the user's global state, on purpose
    random.seed(seed)


def _borrow(spec: str, file: str) -> None:
    """Import the subject's module from ``file`` (another revision's, or the working
    tree's) under its own name, with this revision's code first on ``sys.path``."""
    import importlib.util

    name = spec.split(":")[0]
    if "." in name:
        try:
            importlib.import_module(name.rpartition(".")[0])
        except Exception:  # noqa: S110 - the module then has no parent package
            pass
    loader_spec = importlib.util.spec_from_file_location(name, file)
    if loader_spec is None or loader_spec.loader is None:
        raise ImportError(f"cannot import {file}")
    module = importlib.util.module_from_spec(loader_spec)
    sys.modules[name] = module
    loader_spec.loader.exec_module(module)


def _modules_in(state: _State, folder: Path) -> list[tuple[str, Path]]:
    """(name, file) of the imported modules whose file is inside ``folder``, gradcheck,
    an environment kept inside it and a subject file borrowed from elsewhere aside."""
    out = []
    for name, module in list(sys.modules.items()):
        file = getattr(module, "__file__", None)
        if not file:
            continue
        path = Path(str(file)).resolve()
        if _inside(path, folder) and not _environment(path) and \
                not _inside(path, state.gradcheck_dir) and str(path) != state.borrowed:
            out.append((name, path))
    return out


def _own(state: _State) -> list[str]:
    """Modules of the repository imported from this revision's folder."""
    return sorted(name for name, _ in _modules_in(state, state.root))


def _imports(state: _State) -> dict[str, list[str]]:
    """The repository's modules imported so far: from this revision (``own``) and from
    outside it (``strays``)."""
    return {"own": _own(state), "strays": _strays(state)}


def _strays(state: _State) -> list[str]:
    """Modules of the user's repository imported from outside this revision's folder
    (a path or an installed package that points into the working tree)."""
    if _inside(state.repo, state.root) or _inside(state.root, state.repo):
        return []
    return [f"{name} ({path})" for name, path in _modules_in(state, state.repo)]

def _load(state: _State, level: str, seed: int, borrow: str = "") -> dict[str, Any]:
    """Import the subject (from ``borrow``, a file, when given); list its cases (or
    say it is missing at this revision)."""
    from ..subject import SubjectError, load_subject

    seed_globals(seed)
    if not borrow and ":" in state.spec and (why := _missing(state.spec)):
        return {"status": "missing", "message": why, "module": why.startswith("no module")}
    try:
        if borrow:
            state.borrowed = str(Path(borrow).resolve())
            _borrow(state.spec, borrow)
        subject = load_subject(state.spec)
    except SubjectError as exc:
        return {"status": "error", "message": str(exc)}
    except Exception as exc:
        return {"status": "error", "message": f"importing {borrow} raised "
                                              f"{fault_of(exc).describe().removeprefix('error: ')}"}
    stray = [m for m, mod in list(sys.modules.items())
             if (m == "gradcheck" or m.startswith("gradcheck."))
             and getattr(mod, "__file__", None)
             and state.gradcheck_dir not in Path(str(mod.__file__)).resolve().parents]
    if stray:
        return {"status": "error", "message": f"modules {stray} came from another gradcheck"}
    return _listed(state, subject, level, seed)


def _listed(state: _State, subject: Any, level: str, seed: int) -> dict[str, Any]:
    """The subject's cases, once its module is known to come from this revision."""
    from ..run._threads import blas_summary

    state.subject = subject
    for case in subject.layers:
        for dtype in case.dtypes:
            state.layers[f"{case.name} [{dtype}]"] = (case, dtype)
    seed_globals(seed)
    state.models = {m.name: m for m in subject.models(level, seed)}
    module = sys.modules[state.spec.split(":")[0]]
    file = str(Path(getattr(module, "__file__", "") or "").resolve())
    return {"status": "ok", "name": subject.name, "file": file, "strays": _strays(state),
            "inside": _inside(Path(file), state.root) or file == state.borrowed,
            "layers": list(state.layers), "models": list(state.models),
            "snapshots": list(subject.snapshot_cases or {}), "blas": blas_summary()}


def _summary(res: Any) -> dict[str, Any]:
    """The part of a CheckResult a diff needs (plain types); the message of a check
    that an exception ended names the user's file and line."""
    bad = [i for i in res.inputs if not i.passed]
    exc = getattr(res, "exception", None)
    where = fault_of(exc).where if isinstance(exc, BaseException) else ""
    message = str(res.message) + (f" (at {where})" if where and where not in
                                  str(res.message) else "")
    return {"passed": bool(res.passed), "status": str(res.status), "message": message,
            "seed": int(res.seed), "hint": str(res.hint),
            "inputs": [{"name": i.name, "status": i.status, "hint": i.hint,
                        "max_rel": float(i.max_rel_error),
                        "worst": [int(k) for k in i.worst[0].index] if i.worst else []}
                       for i in bad]}


def _check(state: _State, kind: str, key: str, seed: int) -> dict[str, Any]:
    seed_globals(seed)
    try:
        if kind == "layer":
            case, dtype = state.layers[key]
            return _summary(case.check(dtype, seed))
        return _summary(state.models[key].check(seed))
    except BaseException as exc:  # noqa: BLE001 - the check could not run: status error
        if isinstance(exc, KeyboardInterrupt):
            raise
        return {"passed": False, "status": "error", "seed": seed, "hint": "", "inputs": [],
                "message": f"the check raised "
                           f"{fault_of(exc).describe().removeprefix('error: ')}"}




# -- values ------------------------------------------------------------------------------------
def _cotangent(out: Any, rng: np.random.Generator) -> Any:
    if isinstance(out, (tuple, list)):
        return type(out)(_cotangent(o, rng) for o in out)
    a = np.asarray(out)
    if a.dtype.kind != "f":
        return np.zeros(a.shape)
    return rng.standard_normal(a.shape).astype(a.dtype)


def _flat(prefix: str, value: Any, out: dict[str, np.ndarray]) -> None:
    if value is None:
        return
    if isinstance(value, dict):
        for k, v in value.items():
            _flat(f"{prefix}.{k}", v, out)
    elif isinstance(value, (tuple, list)):
        for k, v in enumerate(value):
            _flat(f"{prefix}.{k}", v, out)
    else:
        out[prefix] = np.array(value, copy=True)


@dataclass
class _Bound:
    """A layer case ready to run: forward, backward and the names of its gradients."""

    forward: Callable[[], Any]
    backward: Callable[[Any, Any], Any]
    names: list[str]


def _bind(case: Any, dtype: str, seed: int) -> _Bound:
    rng = np.random.default_rng(seed)
    dt = np.dtype(dtype)
    inputs = copy.deepcopy(case.inputs(rng, dt))
    if case.layer is not None:
        from ..check._layer import _discover, _wanted

        layer = case.layer(rng, dt)
        opts = case.options
        proto = _discover(layer, tuple(inputs), case.forward, case.backward,
                          opts.get("params"), opts.get("grads"), _wanted(tuple(inputs), case.wrt))
        ps = [np.asarray(p.read(proto.layer)) for p in proto.params]
        return _Bound(lambda: proto.run_forward(list(inputs), ps), proto.run_backward,
                      [f"x{k}" for k in range(len(inputs))] + [p.name for p in proto.params])
    if isinstance(inputs, dict):
        return _Bound(lambda: case.fwd(**inputs), case.bwd, list(inputs))
    # the names the check gives the inputs (fwd's parameters), so that a case's check and
    # its values name an input alike: "b mismatch" and "grad.b", not "grad.x2"
    return _Bound(lambda: case.fwd(*inputs), case.bwd, input_names(case.fwd, len(inputs)))


def layer_values(case: Any, dtype: str, seed: int) -> dict[str, np.ndarray]:
    """Output(s) and gradients of a layer case at ``seed``, with a seeded cotangent."""
    bound = _bind(case, dtype, seed)
    y, cache = bound.forward()
    dy = _cotangent(y, np.random.default_rng(seed + 1))
    grads = bound.backward(dy, cache)
    out: dict[str, np.ndarray] = {}
    _flat("output", y, out)
    if isinstance(grads, dict):
        _flat("grad", grads, out)
    else:
        grads = list(grads) if isinstance(grads, (tuple, list)) else [grads]
        for name, g in zip(bound.names, grads, strict=False):
            _flat(f"grad.{name}", g, out)
    return out


def _value(state: _State, key: str, seed: int) -> tuple[Any, ...]:
    """``("ok", arrays, computed dtypes)`` or ``("error", message)`` of a layer case
    (``layer:NAME [DTYPE]``) or a snapshot case (``snapshot:NAME``)."""
    kind, name = key.split(":", 1)
    seed_globals(seed)
    try:
        if kind == "layer":
            case, dtype = state.layers[name]
            arrays = layer_values(case, dtype, seed)
            return "ok", arrays, dict.fromkeys(arrays, dtype)
        arrays, desc = (state.subject.snapshot_cases or {})[name]()
        computed = {k: desc["computed_dtype"] for k in arrays if "computed_dtype" in desc}
        return "ok", dict(arrays), computed
    except Exception as exc:
        return "error", fault_of(exc).describe().removeprefix("error: ")


# -- timing ------------------------------------------------------------------------------------
def _timers_of_layer(case: Any, dtype: str, seed: int) -> dict[str, Callable[[], Any]]:
    rng = np.random.default_rng(seed)
    dt = np.dtype(dtype)
    inputs = copy.deepcopy(case.inputs(rng, dt))
    if case.layer is not None:
        from ..check._layer import _call_style

        layer = case.layer(rng, dt)
        fwd = getattr(layer, case.forward)
        y = fwd(*inputs)
        dy = _cotangent(y, np.random.default_rng(seed + 1))
        back = getattr(layer, case.backward)
        style, _ = _call_style(back, dy, case.backward)
        bwd = ((lambda: back(*dy)) if style == "spread" else (lambda: back(dy))
               if style == "one" else back)
        return {"forward": lambda: fwd(*inputs), "backward": bwd}
    if isinstance(inputs, dict):
        def forward() -> Any:
            return case.fwd(**inputs)
    else:
        def forward() -> Any:
            return case.fwd(*inputs)
    y, cache = forward()
    dy = _cotangent(y, np.random.default_rng(seed + 1))
    return {"forward": forward, "backward": lambda: case.bwd(dy, cache)}


def _step(model: Any, batch: tuple[Any, ...]) -> Callable[[], Any]:
    def step() -> Any:
        return model.loss_and_grads(*batch)
    return step


def _prepare(state: _State, keys: list[tuple[str, str]], seed: int) -> dict[str, str]:
    """Build the timed calls; ``timer key -> error message`` for those that failed."""
    failed: dict[str, str] = {}
    for kind, key in keys:
        seed_globals(seed)
        try:
            if kind == "layer":
                case, dtype = state.layers[key]
                for part, fn in _timers_of_layer(case, dtype, seed).items():
                    state.timers[f"{key} {part}"] = fn
            else:
                state.timers[f"{key} training step"] = _step(*state.models[key].build())
        except Exception as exc:
            failed[key] = fault_of(exc).describe().removeprefix("error: ")
    return failed


def _time(state: _State, key: str, calls: int, reps: int = 1) -> tuple[float, float]:
    """Thread CPU seconds of ``calls`` calls of one timed call (the least of ``reps``
    runs: a run that a neighbour's process interrupted, and whose caches it evicted, is
    set aside) and the wall seconds of all the runs over their CPU seconds."""
    fn = state.timers[key]
    best, cpu_all, wall_all = math.inf, 0.0, 0.0
    for _ in range(reps):
        pad = _heap_pad(state.layout)
        w0, c0 = time.perf_counter(), time.thread_time()
        for _ in range(calls):
            fn()
        cpu, wall = time.thread_time() - c0, time.perf_counter() - w0
        best, cpu_all, wall_all = min(best, cpu), cpu_all + cpu, wall_all + wall
        del pad
    return best, wall_all / max(cpu_all, 1e-12)


def _heap_pad(rng: np.random.Generator) -> list[np.ndarray]:
    """Blocks of random sizes held while a run is timed, so that the arrays the call
    allocates land somewhere else in the heap at each run. Where they land relative to
    its inputs (cache sets, addresses 4 KiB apart) moves a small call's time by up to
    1.7x, and a worker's heap keeps one layout for its whole life: the same code timed
    in two workers read 0.65-1.7x apart, every pair alike. With the layout drawn anew
    at each run and the least of the runs kept, both workers sample the same spread."""
    return [np.empty(int(n), dtype=np.uint8) for n in rng.integers(1, 1 << 20, 3)]


def _calibrate(state: _State, key: str, target: float) -> int:
    """Calls that take at least ``target`` thread CPU seconds (after one warm-up call)."""
    calls = 1
    _time(state, key, 1)
    for _ in range(3):
        cpu, _wall = _time(state, key, calls)
        if cpu >= target:
            break
        calls = min(100_000, max(calls + 1, math.ceil(calls * 1.2 * target / max(cpu, 1e-7))))
    return calls


def _pin(state: _State, cpu: int | None) -> bool:
    """Run on ``cpu`` only (both workers on one core while they are timed in turn, so
    that neither gets a core a neighbour's load shares); False where unsupported."""
    if cpu is None or not hasattr(os, "sched_setaffinity"):
        return False
    os.sched_setaffinity(0, {cpu})
    return True


_OPS: dict[str, Callable[..., Any]] = {
    "load": _load, "check": _check, "value": _value, "prepare": _prepare,
    "time": _time, "calibrate": _calibrate, "pin": _pin,
    "imports": _imports,
}
