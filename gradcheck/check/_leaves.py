"""The inputs and outputs of a check as named leaves.

:class:`_Inputs` turns the user's inputs (a list, a dict, nested containers) into the
leaves a check works on: private, C-contiguous copies of what it differentiates, deep
copies of the constants, integer leaves set apart; settings dicts and strings are
constants without ``wrt=``. :class:`_Outputs` does the same for what the forward
returns, and :func:`_split_forward` reads ``(y, cache)``.
"""

from __future__ import annotations

import copy
import inspect
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..read._conventions import is_configuration
from ..read._layer_call import ones_like
from ..read._protocol import ProtocolError, Tree, call_user
from ._numeric import F64

__all__ = ["input_names", "not_data"]


# -- inputs --------------------------------------------------------------------------------
@dataclass
class _Inputs:
    """The user's inputs as named leaves: working copies, and which ones are checked."""

    tree: Tree
    leaves: list[Any]
    as_kwargs: bool
    diff: list[int] = field(default_factory=list)  # float leaves to differentiate
    ints: list[int] = field(default_factory=list)  # integer leaves (not differentiable)
    consts: list[int] = field(default_factory=list)  # leaves outside wrt
    owner: list[Any] = field(default_factory=list)  # leaf -> the input it belongs to

    def args(self) -> tuple[list[Any], dict[str, Any]]:
        built = self.tree.build(self.leaves)
        return ([], built) if self.as_kwargs else (list(built), {})

    def call(self, fn: Callable[..., Any], what: str) -> Any:
        args, kwargs = self.args()
        return call_user(fn, *args, what=what, **kwargs)


def _as_array(x: Any, path: str) -> np.ndarray:
    """Own a C-contiguous, writable copy of an input leaf."""
    try:
        arr = np.array(x, copy=True, order="C")
    except Exception as exc:  # pragma: no cover - numpy raises many types here
        raise TypeError(f"{path} cannot be converted to an array: {exc}") from exc
    if arr.dtype == object or arr.dtype.kind in "SUV":
        raise TypeError(
            f"{path} has dtype {arr.dtype}; expected a numeric array (pass wrt= with the "
            "inputs to differentiate; the others are passed through as constants)"
        )
    if arr.dtype.kind == "c":
        raise TypeError(f"{path} is complex ({arr.dtype}); only real inputs are checked")
    return arr


def _top_keys(inputs: Any) -> list[Any]:
    return list(inputs) if isinstance(inputs, dict) else list(range(len(inputs)))


def _resolve_wrt(inputs: Any, wrt: Any, names: Sequence[str] = ()) -> set[Any]:
    """The top-level inputs ``wrt`` chooses: keys of a dict, or indices of a sequence,
    given as such or by the names its results use (``'y_pred'`` for ``fwd(y_true,
    y_pred)``, ``'x1'``)."""
    keys = _top_keys(inputs)
    if wrt is None:
        return set(keys)
    items = [wrt] if isinstance(wrt, (int, str)) and not isinstance(wrt, bool) else wrt
    try:
        chosen = list(items)
    except TypeError:
        raise TypeError(f"wrt must be indices or names of inputs, got {wrt!r}") from None
    if not isinstance(inputs, dict):
        top = list(names) or [f"x{k}" for k in keys]
        chosen = [top.index(k) if isinstance(k, str) and k in top else k for k in chosen]
    for k in chosen:
        if isinstance(k, bool) or k not in keys:
            kind = "names" if isinstance(inputs, dict) else "indices"
            raise ValueError(f"wrt: {k!r} is not an input; the {kind} are {keys}" + (
                f" (or the names {list(names)})" if names and kind == "indices" else ""))
    return set(chosen)


def input_names(fwd: Callable[..., Any], n: int) -> list[str]:
    """The names of ``n`` positional inputs of ``fwd``: its parameters' names when the
    ``n`` inputs bind to named parameters (``def fwd(x, W, b)`` gives ``x``, ``W``,
    ``b``); else ``x0``, ``x1``... (``*args``, a builtin or any callable whose
    signature cannot be read)."""
    fallback = [f"x{k}" for k in range(n)]
    try:
        params = list(inspect.signature(fwd).parameters.values())
    except (TypeError, ValueError):
        return fallback
    named = [p.name for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    return named[:n] if len(named) >= n else fallback


def _prepare(inputs: Any, wrt: Any, names: Sequence[str] | None = None) -> _Inputs:
    if isinstance(inputs, np.ndarray) or isinstance(inputs, str) or not isinstance(
        inputs, (Sequence, dict)
    ):
        raise TypeError(
            "inputs must be a list or tuple of arrays (one per argument of fwd) or a dict "
            f"of name -> array, got {type(inputs).__name__}; wrap a single array as [x]"
        )
    chosen = _resolve_wrt(inputs, wrt, names or ())
    keys = _top_keys(inputs)
    if isinstance(inputs, dict):
        top = [str(k) for k in keys]
    else:
        top = list(names) if names is not None else [f"x{k}" for k in keys]
    tree, raw = Tree.of(inputs, top)
    owner = _leaf_owners(inputs, keys)
    prep = _Inputs(tree, [None] * len(raw), isinstance(inputs, dict), owner=owner)
    for i, (leaf, name) in enumerate(zip(raw, tree.names, strict=True)):
        if isinstance(leaf, (bool, int, np.bool_, np.integer)) and owner[i] in chosen:
            prep.leaves[i] = leaf  # a flag or a count, as given: ``training is True``
            prep.ints.append(i)
            continue
        nested = leaf is None and name != top[keys.index(owner[i])]  # [None, W1, W2]: a
        if owner[i] not in chosen or (wrt is None or nested) and _no_number(leaf):  # place
            prep.leaves[i] = _private_copy(leaf)  # (None, a name, an array of names:
            prep.consts.append(i)  # constants unless wrt= asks for them)
            continue
        key = owner[i]
        arr = _as_array(leaf, f"inputs[{key!r}]{name[len(top[keys.index(key)]):]}")
        prep.leaves[i] = arr
        (prep.diff if arr.dtype.kind == "f" else prep.ints).append(i)
    return prep


def _no_number(leaf: Any) -> bool:
    """None, a string, or an array of strings (``np.array(["tanh", "x"])``); an array of
    objects stays an error (weight matrices, or ``np.array([None, 1])``: say what it is)."""
    return leaf is None or isinstance(leaf, (str, bytes)) or (
        isinstance(leaf, np.ndarray) and leaf.dtype.kind in "SU")


def _leaf_owners(inputs: Any, keys: list[Any]) -> list[Any]:
    owners: list[Any] = []
    for k in keys:
        _, sub = Tree.of(inputs[k])
        owners += [k] * len(sub)
    return owners


def _private_copy(value: Any) -> Any:
    """A deep copy of a constant, so that the user's object is never touched."""
    try:
        return copy.deepcopy(value)
    except Exception:  # uncopyable (a ctypes handle, a lock): passed as it is
        return value


# -- outputs -------------------------------------------------------------------------------
def _split_forward(out: Any) -> tuple[Any, Any]:
    if not isinstance(out, tuple) or len(out) != 2:
        got = type(out).__name__
        if isinstance(out, tuple):
            got = f"a tuple of {len(out)}"
        raise ProtocolError("bad-protocol", f"forward must return (y, cache); it returned {got}")
    return out[0], out[1]


@dataclass
class _Outputs:
    """The forward's output as leaves; only floating leaves enter ``phi``."""

    tree: Tree
    dtypes: list[np.dtype[Any]]
    floating: list[int]

    @staticmethod
    def of(y: Any) -> tuple[_Outputs, list[np.ndarray]]:
        tree, leaves = Tree.of(y)
        arrays = []
        for leaf, name in zip(leaves, tree.names, strict=True):
            a = np.asarray(leaf)
            if a.dtype.kind not in "fiub":
                raise ProtocolError("bad-protocol", f"forward output y{name} must be a real "
                                    f"array or scalar, got dtype {a.dtype}")
            arrays.append(a)
        floating = [k for k, a in enumerate(arrays) if a.dtype.kind == "f"] or list(
            range(len(arrays)))
        return _Outputs(tree, [a.dtype for a in arrays], floating), arrays

    def flat(self, y: Any) -> F64:
        _, leaves = Tree.of(y)
        if len(leaves) != len(self.dtypes):
            raise ProtocolError("bad-protocol", "the forward's output changed structure")
        parts = [np.asarray(leaves[k]).reshape(-1) for k in self.floating]
        if not parts:
            return np.zeros(0)
        if len(parts) == 1 and parts[0].dtype.kind != "c":
            return np.array(parts[0], dtype=np.float64)  # one copy: the user may reuse it
        return np.concatenate([p.astype(np.float64) if p.dtype.kind != "c" else p
                               for p in parts])

    def cotangent(self, arrays: list[np.ndarray], rng: np.random.Generator) -> list[Any]:
        """A random signed ``dy`` per floating output: uniform, mean 0, variance 1.

        Uniform rather than Gaussian: as random for every purpose here (signs and sizes
        independent of the outputs) and several times cheaper to draw, which a cheap
        check of a large layer feels.
        """
        out: list[Any] = [None] * len(arrays)
        for k in self.floating:
            dt = arrays[k].dtype if arrays[k].dtype.kind == "f" else np.dtype(np.float64)
            d = rng.random(arrays[k].shape)
            d -= 0.5
            d *= 2.0 * np.sqrt(3.0)
            out[k] = d.astype(dt, copy=False)
        return out


def _without_configuration(inputs: Any, wrt: Any, names: Sequence[str] | None,
                           pair: tuple[Callable[..., Any], Callable[..., Any]] | None = None
                           ) -> tuple[Any, list[str]]:
    """Without ``wrt=``, settings dicts (:func:`is_configuration`) are constants: ``wrt``
    becomes the other inputs, and a note names them; but a dict whose float arrays the
    backward of ``pair`` (``fwd``, ``bwd``) returns gradients for, by key and shape
    (``attn = {"n_heads": 2, "Wq": ...}`` with ``grads = {"Wq": ...}``), is differentiated
    all the same, its other values held constant."""
    if wrt is not None or not isinstance(inputs, (Sequence, dict)) or isinstance(
            inputs, str):
        return wrt, []
    keys = _top_keys(inputs)
    config = [k for k in keys if isinstance(inputs[k], (str, bytes)) or inputs[k] is None
              or is_configuration(inputs[k]) or (callable(inputs[k]) and not isinstance(
                  inputs[k], np.ndarray))]  # an activation function given to the forward
    if not config:
        return wrt, []
    kept = _given_gradients(inputs, config, pair) if isinstance(inputs, Sequence) else []
    config = [k for k in config if k not in kept]

    def shown(ks: list[Any]) -> str:
        return ", ".join(names[k] if names and isinstance(k, int) and k < len(names) else
                         f"x{k}" if isinstance(k, int) else str(k) for k in ks)
    notes = [f"{shown(kept)}: holds settings beside float arrays the backward returns "
             "gradients for: those are checked, the settings held constant"] if kept else []
    return [k for k in keys if k not in config], notes + [
        f"{shown(config)}: settings (holds values that are no float): passed through "
        "as a constant, the float arrays in it too (name it in wrt= to differentiate it)"
    ] if config else notes


def _given_gradients(inputs: Sequence[Any], config: list[Any],
                     pair: tuple[Callable[..., Any], Callable[..., Any]] | None) -> list[Any]:
    """The settings dicts among ``config`` whose float arrays get a gradient by key and
    shape in what one forward and backward on copies return (none if they raise)."""
    dicts = [k for k in config if isinstance(inputs[k], dict)]
    if pair is None or not dicts:
        return []
    try:
        out, cache = pair[0](*copy.deepcopy(list(inputs)))
        grads = pair[1](ones_like(out), cache)
    except Exception:  # noqa: BLE001 - no evidence: the settings stay constants
        return []
    if not isinstance(grads, (list, tuple)) or len(grads) != len(inputs):
        return []
    return [k for k in dicts if _fits_keys(grads[k], inputs[k])]


def _fits_keys(g: Any, x: Any) -> bool:
    """Whether ``g`` is a non-empty dict (nested dicts too) each of whose arrays sits at
    the key of a float array of ``x``, or at ``d`` + that key (``{"attn": {"Wq": dWq}}``,
    ``{"dWq": ...}``), whatever its shape (a wrong one is that gradient's verdict)."""
    if not isinstance(g, dict) or not isinstance(x, dict) or not g:
        return False
    for key, v in g.items():
        own = key[1:] if isinstance(key, str) and key not in x and key[:1] == "d" else key
        if v is None:
            continue
        if isinstance(v, dict):
            if not _fits_keys(v, x.get(own)):
                return False
        elif not (isinstance(v, np.ndarray) and isinstance(x.get(own), np.ndarray) and
                  x[own].dtype.kind == "f"):
            return False
    return True


def not_data(prep: _Inputs, i: int) -> bool:
    """Whether a gradient of leaf ``i`` that differs by size-1 axes is compared after
    reshaping: not for a first positional input of one array (data, whose batch of one
    leaves no other evidence than that shape); for parts of a first input made of
    several arrays (``check_grad``'s point ``[A, B, C]``) and any other input, yes."""
    return prep.as_kwargs or prep.owner[i] != prep.owner[0] or prep.owner.count(
        prep.owner[0]) > 1
