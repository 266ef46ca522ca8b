"""Which of the user's functions a call runs, what their calls receive and return, and
which of their lines run: observed with a profile hook and a line trace, never read
from names. The facts the report's link between a failing model check and a failing
layer check of the same subject rests on:

- :func:`user_codes`: the functions of the user's code (not NumPy's, SciPy's, the
  standard library's or this package's) that ``run()`` calls, each with the least number
  of user frames beneath it (1: called straight from library code, as a layer case's
  ``fwd`` is by the checker; 2: called by such a function...);
- :func:`inputs_at`: every call of some of those functions during ``run()`` (a model's
  loss): copies of the arrays it received that are not parameters (its inputs), where
  it received parameters, and copies of what it returned;
- :func:`lines_run`: the lines of some of those functions that ``run()`` executes.
"""

from __future__ import annotations

import sys
import sysconfig
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from types import CodeType, FrameType
from typing import Any

import numpy as np

__all__ = ["Seen", "inputs_at", "lines_run", "user_codes"]


def _library_roots() -> tuple[tuple[str, ...], tuple[str, ...]]:
    """Folders whose code is not the user's (NumPy, SciPy, this package, the standard
    library), and the folders of installed packages under the standard library's that
    are the user's unless under one of the first (site-packages)."""
    def folder(path: str) -> str:
        return str(Path(path)) + "/"

    lib = {folder(str(Path(str(np.__file__)).parent)), folder(str(Path(__file__).parents[1]))}
    scipy_file = getattr(sys.modules.get("scipy"), "__file__", None)
    if scipy_file:
        lib.add(folder(str(Path(scipy_file).parent)))
    paths = sysconfig.get_paths()
    std = {folder(paths[k]) for k in ("stdlib", "platstdlib") if paths.get(k)}
    installed = {folder(paths[k]) for k in ("purelib", "platlib") if paths.get(k)}
    installed |= {folder(p) for p in sys.path if "-packages" in p}
    return tuple(lib | std), tuple(installed)


class _Filter:
    """Is a code object the user's? Answered once per code object."""

    def __init__(self) -> None:
        self.roots, self.installed = _library_roots()
        self.numeric = tuple(r for r in self.roots if r.startswith(self.installed))
        self.seen: dict[CodeType, bool] = {}

    def __call__(self, code: CodeType) -> bool:
        known = self.seen.get(code)
        if known is None:
            name = code.co_filename
            if name.startswith("<") or name.startswith(self.numeric) or \
                    code.co_name == "<module>":  # an import, not a function
                known = False
            else:
                known = name.startswith(self.installed) or not name.startswith(self.roots)
            self.seen[code] = known
        return known


def _profiled(run: Callable[[], Any], hook: Callable[[FrameType, str, Any], None]) -> None:
    """``run()`` with ``hook`` as this thread's profile function; the previous one (a
    debugger's, a profiler's) is put back whatever happens."""
    before = sys.getprofile()
    if before is not None and not callable(before):  # cProfile's: it could not be put back
        raise RuntimeError(f"a profiler ({type(before).__name__}) is running: the calls are "
                           "not observed beside it")
    sys.setprofile(hook)
    try:
        run()
    finally:
        sys.setprofile(before)


def user_codes(run: Callable[[], Any]) -> dict[CodeType, int]:
    """The user's functions that ``run()`` calls, each with its least depth in user
    frames (1 for a function called from library code)."""
    mine = _Filter()
    depth: dict[CodeType, int] = {}
    stack: list[bool] = []

    def hook(frame: FrameType, event: str, _arg: Any) -> None:
        if event == "call":
            user = mine(frame.f_code)
            stack.append(user)
            if user:
                d = sum(stack)
                depth[frame.f_code] = min(d, depth.get(frame.f_code, d))
        elif event == "return" and stack:
            stack.pop()

    _profiled(run, hook)
    return depth


@dataclass
class Seen:
    """One call of a watched function: its array arguments that are not parameters (its
    inputs: position among the array arguments, copy), the positions of the parameters
    it received directly, and copies of the arrays it returned."""

    code: CodeType
    inputs: list[tuple[int, np.ndarray]]
    params: dict[str, int]
    outputs: list[np.ndarray]


def inputs_at(run: Callable[[], Any], codes: set[CodeType], params: dict[str, np.ndarray]
              ) -> list[Seen]:
    """Every call of a function in ``codes`` during ``run()``, in the order they began:
    what it received and what it returned (:class:`Seen`)."""
    by_id = {id(a): n for n, a in params.items()}
    seen: list[Seen] = []
    open_: dict[int, Seen] = {}

    def hook(frame: FrameType, event: str, arg: Any) -> None:
        if frame.f_code not in codes:
            return
        if event == "call":
            arrays = [v for v in frame.f_locals.values() if isinstance(v, np.ndarray)]
            got = Seen(frame.f_code, [], {}, [])
            for k, v in enumerate(arrays):
                name = by_id.get(id(v), by_id.get(id(v.base)))
                if name is None:
                    got.inputs.append((k, np.array(v)))
                else:
                    got.params.setdefault(name, k)
            seen.append(got)
            open_[id(frame)] = got
        elif event == "return" and id(frame) in open_:
            open_.pop(id(frame)).outputs.extend(
                np.array(v) for v in _returned(arg) if isinstance(v, np.ndarray))

    _profiled(run, hook)
    return seen


def _returned(value: Any) -> list[Any]:
    """A returned value's arrays: itself, or the items of a returned tuple or list (and
    of tuples and lists inside it: a cache)."""
    if isinstance(value, (tuple, list)):
        return [v for item in value[:64] for v in _returned(item)]
    return [value]


def lines_run(run: Callable[[], Any], codes: set[CodeType]) -> set[tuple[CodeType, int]]:
    """The lines of the functions ``codes`` that ``run()`` executes. A line trace of
    those functions only (another tracer, a debugger's or coverage's, is put back
    after)."""
    seen: set[tuple[CodeType, int]] = set()

    def local(frame: FrameType, event: str, _arg: Any) -> Any:
        if event == "line":
            seen.add((frame.f_code, frame.f_lineno))
        return local

    def calls(frame: FrameType, _event: str, _arg: Any) -> Any:
        return local if frame.f_code in codes else None

    before = sys.gettrace()
    if before is not None and not callable(before):
        raise RuntimeError(f"a tracer ({type(before).__name__}) is running: the lines are "
                           "not observed beside it")
    sys.settrace(calls)
    try:
        run()
    finally:
        sys.settrace(before)
    return seen
