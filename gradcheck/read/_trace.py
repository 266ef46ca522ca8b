"""Which of the user's functions a call runs, and which parameters each of their calls
receives: observed with a profile hook, never read from names.

Two facts serve the report's link between a failing model check and a failing layer
check of the same subject:

- :func:`user_codes`: the functions of the user's code (not NumPy's, SciPy's, the
  standard library's or this package's) that ``run()`` calls, each with the least number
  of user frames beneath it (1: called straight from library code, as a layer case's
  ``fwd`` is by the checker; 2: called by such a function...);
- :func:`user_calls`: every call of a user function during ``run()`` (a model's loss),
  with when it started and ended on one clock, and which of the model's parameter
  arrays it received: as an argument, inside a dict, list or tuple argument, or as an
  attribute of one (``self.W`` of a layer object).
"""

from __future__ import annotations

import sys
import sysconfig
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from types import CodeType, FrameType, FunctionType, ModuleType
from typing import Any

import numpy as np

__all__ = ["Call", "inputs_at", "user_calls", "user_codes"]


def _library_roots() -> tuple[str, ...]:
    """Folders whose code is not the user's: the standard library, NumPy, SciPy and
    this package."""
    roots = {sysconfig.get_paths()[k] for k in ("stdlib", "platstdlib")}
    roots.add(str(Path(str(np.__file__)).parent))
    roots.add(str(Path(__file__).parents[1]))
    scipy_file = getattr(sys.modules.get("scipy"), "__file__", None)
    if scipy_file:
        roots.add(str(Path(scipy_file).parent))
    return tuple(str(Path(r)) + "/" for r in roots if r)


class _Filter:
    """Is a code object the user's? Answered once per code object."""

    def __init__(self) -> None:
        self.roots = _library_roots()
        self.seen: dict[CodeType, bool] = {}

    def __call__(self, code: CodeType) -> bool:
        known = self.seen.get(code)
        if known is None:
            name = code.co_filename
            known = not name.startswith("<") and not name.startswith(self.roots)
            self.seen[code] = known
        return known


def _profiled(run: Callable[[], Any], hook: Callable[[FrameType, str, Any], None]) -> None:
    """``run()`` with ``hook`` as this thread's profile function; the previous one (a
    debugger's, a profiler's) is put back whatever happens."""
    before = sys.getprofile()
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


@dataclass(frozen=True)
class Call:
    """One call of a user function: its code, when it started and ended (one clock for
    the whole run: calls inside it start and end between the two) and the names of the
    parameters it received."""

    code: CodeType
    start: int
    end: int
    params: frozenset[str]


def user_calls(run: Callable[[], Any], params: dict[str, np.ndarray]) -> list[Call]:
    """Every call of a user function during ``run()``, with the parameters (by identity,
    or as the base of a view) found among its arguments."""
    by_id = {id(a): n for n, a in params.items()}
    mine = _Filter()
    open_: list[tuple[CodeType, int, frozenset[str]] | None] = []
    calls: list[Call] = []
    clock = 0

    def hook(frame: FrameType, event: str, _arg: Any) -> None:
        nonlocal clock
        if event == "call":
            if not mine(frame.f_code):
                open_.append(None)
                return
            clock += 1
            found = frozenset(_params_in(frame.f_locals.values(), by_id))
            open_.append((frame.f_code, clock, found))
        elif event == "return" and open_:
            top = open_.pop()
            if top is not None:
                clock += 1
                calls.append(Call(top[0], top[1], clock, top[2]))

    _profiled(run, hook)
    return calls


_OPAQUE = (ModuleType, FunctionType, type, str, bytes)


def _params_in(values: Any, by_id: dict[int, str], depth: int = 0) -> Iterator[str]:
    """Names of the parameters among ``values``, looking two levels into containers
    and objects (at most 64 items each)."""
    for k, v in enumerate(values):
        if k >= 64:
            return
        if isinstance(v, np.ndarray):
            for a in (v, v.base):
                if a is not None and id(a) in by_id:
                    yield by_id[id(a)]
        elif depth < 2 and not isinstance(v, _OPAQUE):
            inner = (v.values() if isinstance(v, dict) else v
                     if isinstance(v, (list, tuple)) else _attributes(v))
            yield from _params_in(inner, by_id, depth + 1)


def _attributes(obj: Any) -> list[Any]:
    """An object's own attribute values, or nothing (slots, builtins)."""
    held = getattr(obj, "__dict__", None)
    return list(held.values()) if isinstance(held, dict) else []


def inputs_at(run: Callable[[], Any], codes: set[CodeType], params: dict[str, np.ndarray]
              ) -> list[tuple[CodeType, list[np.ndarray]]]:
    """For every call of a function in ``codes`` during ``run()``, in order: copies of
    the float arrays it received as arguments that are not ``params`` (its inputs)."""
    held = {id(a) for a in params.values()}
    seen: list[tuple[CodeType, list[np.ndarray]]] = []

    def hook(frame: FrameType, event: str, _arg: Any) -> None:
        if event == "call" and frame.f_code in codes:
            seen.append((frame.f_code, [
                np.array(v) for v in frame.f_locals.values()
                if isinstance(v, np.ndarray) and v.dtype.kind in "fc"
                and id(v) not in held and id(v.base) not in held]))

    _profiled(run, hook)
    return seen
