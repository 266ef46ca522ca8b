"""The gradients a backward returned: matched to the input leaves (a stacked array split
for a list input), validated (shape, dtype, finite) with a hint when a sum over the batch
axes or a transpose would fix a shape, and the result row of an input not compared.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Sequence
from typing import Any

import numpy as np

from ..read._conventions import zero_one
from ..read._observe import same_but_unit, unit_note
from ..read._protocol import ProtocolError, key_mismatch
from ._hints import unreduced_hint
from ._leaves import _Inputs
from ._numeric import F64
from ._result import InputResult

__all__ = ["Misshapen", "gradient_leaves", "keyed", "plain_result", "validated"]


def _bare(name: str) -> str:
    """``['x0']`` as ``x0``: an input's name in a note."""
    return name.strip("[]'\" ") or "x0"


def gradient_leaves(grads_raw: Any, prep: _Inputs, chosen: set[Any],
                    notes: list[str] | None = None) -> list[Any]:
    """The backward's gradients matched to the input leaves (None where absent). Into
    ``notes`` (the first call's) go the readings: a list input's gradient stacked in one
    array, a dict of gradients named ``d`` + each input's name."""
    shapes = [np.shape(v) for v in prep.leaves]
    stacked: list[str] = []
    if prep.as_kwargs:
        if not isinstance(grads_raw, dict):
            raise ProtocolError("bad-protocol", "inputs were a dict: backward must return a "
                                f"dict of gradients by name, got {type(grads_raw).__name__}")
        if set(grads_raw) - set(prep.tree.skeleton):
            raise ProtocolError("bad-protocol", "inputs were a dict: backward must return the "
                                "gradients under the inputs' names; "
                                + key_mismatch(prep.tree.skeleton, grads_raw))
        masked: Any = {k: grads_raw.get(k) if k in chosen else None for k in prep.tree.skeleton}
        leaves = prep.tree.match(masked, "gradient ", stacked, shapes)
    else:
        grads_raw = _fields(grads_raw, prep, notes)
        if isinstance(grads_raw, dict):
            grads_raw = _by_name(grads_raw, prep, notes, chosen)
        if isinstance(grads_raw, np.ndarray) or not isinstance(grads_raw, (list, tuple)):
            raise ProtocolError("bad-protocol", "backward must return a list or tuple of "
                                f"gradients, one per input; got {type(grads_raw).__name__}")
        n_top = len(prep.tree.skeleton)
        if len(grads_raw) != n_top:
            raise ProtocolError("shape-mismatch", f"backward returned {len(grads_raw)} "
                                f"gradient(s) for {n_top} input(s)")
        _in_order(grads_raw, prep.leaves if len(prep.leaves) == n_top else None)
        masked = [g if k in chosen else None for k, g in enumerate(grads_raw)]
        leaves = prep.tree.match(masked, "gradient ", stacked, shapes)
    if notes is not None:
        notes += [f"the gradient of the sequence input {_bare(n)} came as one array stacked "
                  "along its first axis: split into its parts" for n in stacked]
    return leaves


def keyed(grads: Any) -> bool:
    """Whether gradients came keyed: a dict, or a list or tuple holding one (``dx,
    {"Wq": dWq}`` for ``x, attn``): an array part a key is missing for is then checked
    to leave the output unchanged."""
    return isinstance(grads, dict) or (isinstance(grads, (list, tuple)) and any(
        isinstance(g, dict) for g in grads))


def _fields(grads: Any, prep: _Inputs, notes: list[str] | None) -> Any:
    """A dataclass of gradients: a dict by its fields' names when each one set names an
    input (``d`` + its name, ``GradsWX(dw, dx)``), else the tuple of its fields in order
    (``LayerGradients(dX, dW=None, db=None)``), those left None past the inputs dropped;
    one set past them is a ``bad-protocol`` naming it."""
    if not dataclasses.is_dataclass(grads) or isinstance(grads, type):
        return grads
    pairs = [(f.name, getattr(grads, f.name)) for f in dataclasses.fields(grads)]
    names = {n for k in prep.tree.skeleton if isinstance(k, int)
             for n in (prep.tree.names[k], f"d{prep.tree.names[k]}")}
    kind = type(grads).__name__
    if all(k in names for k, v in pairs if v is not None):
        if notes is not None:
            notes.append(f"backward returned a {kind}: its fields read by their names")
        return {k: v for k, v in pairs if v is not None}
    n = len(prep.tree.skeleton)
    while len(pairs) > n and pairs[-1][1] is None:
        pairs.pop()
    if len(pairs) > n:
        raise ProtocolError("bad-protocol", (
            f"backward returned a {kind} of {len(pairs)} fields set for {n} input(s) "
            f"({', '.join(k for k, _ in pairs[n:])} past them): return one gradient per "
            "input, in order or named d + the input's name"))
    if notes is not None:
        notes.append(f"backward returned a {kind}: its fields "
                     f"{', '.join(k for k, _ in pairs)} read in order, one per input")
    return tuple(v for _, v in pairs)


def _in_order(grads: Any, leaves: list[Any] | None) -> None:
    """A ``bad-protocol`` when the gradients returned, one per array input, have the
    inputs' shapes in another order (``(dw_down, dw_up, dw_gate, dX)`` for
    ``(X, w_up, w_gate, w_down)``): returned in another order, or each computed wrongly?
    Shapes cannot tell (as for a layer, :func:`gradcheck.read._flat.split_flat`)."""
    if leaves is None or not all(isinstance(g, np.ndarray) for g in grads) or not all(
            isinstance(x, np.ndarray) for x in leaves):
        return
    got, want = [g.shape for g in grads], [x.shape for x in leaves]
    if got != want and sorted(got) == sorted(want):
        raise ProtocolError("bad-protocol", (
            f"backward returned gradients with the shapes of the inputs in another order "
            f"(shapes {got} for inputs of shapes {want}): returned in another order, or "
            "each computed wrongly? Shapes cannot tell; return them in the inputs' order"))


def _by_name(grads: dict[Any, Any], prep: _Inputs, notes: list[str] | None,
             chosen: Any = None) -> list[Any]:
    """A dict of gradients for positional inputs, read by name: ``d`` + an input's name
    (``dxt`` for ``xt``; for a dict input, a dict under its own name, ``'fc1': {'dW':
    ...}``), and for a dict input ``d`` + each key (``dWax`` for ``parameters['Wax']``)
    or the key itself (``'WLSTM'`` for ``model['WLSTM']``, no input being so named); the
    dicts inside read so too; an input with none is None. A key naming no input is an
    error, so no gradient is left unread, but when every part of the dict inputs has one
    and the key resembles no input left without (``dA1`` beside ``dW1``, ``db1``: the
    gradients of a model's activations), which is noted."""
    out: list[Any] = []
    used: set[Any] = set()
    for s in prep.tree.skeleton:
        if isinstance(s, int):
            name = prep.tree.names[s]
            key = next((k for k in (f"d{name}", name) if k in grads), None)
            if key is None and (key := _loosely(grads, name, prep.tree.names)) is not None \
                    and notes is not None:
                notes.append(f"backward returned {key} for {name}: its name but for "
                             "underscores, no other input's")
            out.append(None if key is None else grads[key])
            used.add(key)
        elif isinstance(s, dict):  # d + each key, or the key itself (neuraltalk's
            names = set(prep.tree.names)  # grads['WLSTM'] for model['WLSTM'])
            own = _own_name(prep, s)
            if own is not None and isinstance(grads.get(own), dict):
                keys = {k: own for k in s}
                sub = _undecorated(grads[own], s)
            else:
                keys = {k: f"d{k}" if f"d{k}" in grads else k for k in s
                        if f"d{k}" in grads or (k in grads and k not in names)}
                sub = {k: _undecorated(grads[g], s[k]) for k, g in keys.items()}
            out.append(sub or None)
            used |= set(keys.values())
        else:
            out.append(None)
    extra = sorted(str(k) for k in set(grads) - used)
    if extra and used - {None} and _aside({k: grads[k] for k in grads if str(k) in extra},
                                          prep, out, chosen):
        if notes is not None:
            notes.append(f"backward returned {', '.join(extra)} beside the gradients of "
                         "every part of the dict inputs: naming no input, not read")
        extra = []
    if extra or not used - {None}:
        wanted = [f"d{prep.tree.names[s]}" if isinstance(s, int) else ", ".join(
            f"d{k}" for k in s) for s in prep.tree.skeleton if isinstance(s, (int, dict))]
        dicts = [k for k, (s, g) in enumerate(zip(prep.tree.skeleton, out, strict=True))
                 if isinstance(s, dict) and isinstance(g, dict) and set(g) == set(s)]
        raise ProtocolError("bad-protocol", (
            f"backward returned a dict of gradients whose keys {extra or sorted(map(str, grads))} "
            "name no input: for positional inputs its keys are read as 'd' + each input's "
            f"name ({', '.join(wanted)})" + (
                "; if they are no input's gradient (an activation's), name the inputs it "
                f"differentiates: wrt={dicts!r}" if extra and dicts else "")))
    if notes is not None:
        notes.append("backward returned a dict of gradients: read by name, 'd' + each "
                     "input's name (an input with none is a constant; a part of a dict "
                     "input with none, beside parts with one, is checked to leave the "
                     "output unchanged)")
    return out


def _loosely(grads: dict[Any, Any], name: str, names: Sequence[str]) -> str | None:
    """The one key that is ``d`` + ``name`` but for underscores (``da0`` for ``a_0``),
    when no other input's name reads so too."""
    def bare(k: str) -> str:
        return k.replace("_", "")
    if "_" not in name or [bare(n) for n in names].count(bare(name)) != 1:
        return None
    keys = [k for k in grads if isinstance(k, str) and bare(k) == bare(f"d{name}")]
    return keys[0] if len(keys) == 1 else None


def _own_name(prep: _Inputs, s: dict[Any, Any]) -> str | None:
    """The name of the dict input of skeleton ``s`` (``fc1`` for ``f(x, fc1, fc2)``), as
    its parts' leaves are named ``fc1['W']``; None when it has no leaf."""
    first = next((v for v in s.values() if isinstance(v, int)), None)
    return None if first is None else prep.tree.names[first].split("[", 1)[0] or None


def _undecorated(sub: Any, s: Any) -> Any:
    """A dict of gradients for the dict of arrays ``s`` keyed ``d`` + each key (``{'dW':
    dW, 'db': db}`` for ``{'W': W, 'b': b}``), read by its keys, the dicts inside so too;
    as it came unless every key is read so."""
    if not isinstance(sub, dict) or not isinstance(s, dict):
        return sub
    keys = {k: f"d{k}" if f"d{k}" in sub and k not in sub else k for k in s}
    if set(sub) - set(keys.values()):
        return sub
    return {k: _undecorated(sub[g], s[k]) for k, g in keys.items() if g in sub}


_LABEL_NAME = re.compile(r"^(y|t|labels?|targets?|y_?true|truth)\d*$", re.I)


def _aside(extra: dict[Any, Any], prep: _Inputs, out: list[Any], chosen: Any) -> bool:
    """Whether keys naming no input may be left unread: every part of every dict input
    has its gradient, and no key resembles an input differentiated and left without one
    (``dx`` for ``xt``) nor holds an array of its shape (``dX`` for ``inputs``), which may
    be its gradient misnamed."""
    parts = [(s, g) for s, g in zip(prep.tree.skeleton, out, strict=True) if isinstance(s, dict)]
    if not parts or any(not isinstance(g, dict) or set(g) != set(s) for s, g in parts):
        return False
    left = [s for k, (s, g) in enumerate(zip(prep.tree.skeleton, out, strict=True))
            if isinstance(s, int) and g is None and (chosen is None or k in chosen)
            and not (zero_one(np.asarray(prep.leaves[s])) and _LABEL_NAME.match(
                prep.tree.names[s]))]  # 0/1 targets named so: no gradient expected
    names = [prep.tree.names[s].lower() for s in left]
    shapes = {np.shape(prep.leaves[s]) for s in left}
    stems = [str(k).lower().removeprefix("d") for k in extra]
    return not any(a.startswith(b) or b.startswith(a) for a in names for b in stems
                   if a and b) and not any(np.shape(v) in shapes for v in extra.values())


class Misshapen(ProtocolError):
    """A gradient of the wrong shape that a sum over the batch axes or a transpose fixes,
    carried by its input's result so that ``CheckResult.hint`` shows the hint."""

    def __init__(self, message: str, entry: InputResult) -> None:
        super().__init__("shape-mismatch", message)
        self.entry = entry


def validated(g: Any, x: np.ndarray, name: str, notes: list[str], *, unit: bool = True
              ) -> F64:
    """The gradient ``g`` of input ``x`` as float64, after the protocol's rules (shape,
    dtype, finite); ``unit``: one that differs by size-1 axes and broadcasts to ``x`` is
    reshaped, with a note (a bias's ``(H,)`` for ``(1, H)``)."""
    try:
        ga = np.asarray(g)
    except (ValueError, TypeError):
        kinds = ", ".join(type(v).__name__ for v in g) if isinstance(g, (list, tuple)) else ""
        raise ProtocolError("bad-protocol", (
            f"gradient of {name} is a {type(g).__name__}" + (f" of {kinds}" if kinds else "")
            + f", not an array of shape {x.shape}; return one array per input (and the "
            "parameters' gradients apart, as dX, [dW, db])")) from None
    if ga.dtype == object and not isinstance(g, np.ndarray):  # {'W': dW, 'b': db}: no array
        raise ProtocolError("bad-protocol", (
            f"gradient of {name} is a {type(g).__name__}, not an array of shape {x.shape}: "
            "what the backward returned was matched to the inputs one item each, and this "
            "item holds no array of numbers (the gradients of something else, a list of "
            "layers' dicts?); return one array per input"))
    if unit and ga.shape != x.shape and ga.size == x.size and same_but_unit(ga.shape, x.shape):
        notes.append(unit_note(name, ga.shape, x.shape))
        ga = ga.reshape(x.shape)
    if ga.shape != x.shape:
        message = f"gradient of {name} has shape {ga.shape}, expected {x.shape}"
        if ga.size == x.size and _widens(ga.shape, x.shape):
            message += (f": as many elements, but an update {name} - lr * grad broadcasts to "
                        f"{np.broadcast_shapes(ga.shape, x.shape)}, widening it (return it in "
                        f"{name}'s shape: .reshape({name}.shape))")
        hint = unreduced_hint(ga.shape, x.shape)
        if hint:
            entry = plain_result(name, x, "shape-mismatch", message)
            entry.hint = hint
            raise Misshapen(f"{message}; {hint}", entry)
        raise ProtocolError("shape-mismatch", message)
    if ga.dtype.kind not in "fiub":
        raise ProtocolError("bad-protocol", f"gradient of {name} has dtype {ga.dtype}")
    if not np.all(np.isfinite(ga)):
        raise ProtocolError("non-finite", f"gradient of {name} contains NaN/Inf")
    if ga.dtype.kind == "f" and ga.dtype != x.dtype:
        notes.append(f"gradient of {name} is {ga.dtype}, input is {x.dtype}")
    return ga.astype(np.float64, copy=False)  # the snapshot `first` guards its values


def _widens(a: tuple[int, ...], b: tuple[int, ...]) -> bool:
    """Whether shapes ``a`` and ``b``, the same but for size-1 axes, broadcast to a shape
    larger than ``b`` (``(5,)`` beside a column ``(5, 1)``: ``(5, 5)``)."""
    try:
        return [d for d in a if d != 1] == [d for d in b if d != 1] and \
            np.broadcast_shapes(a, b) != b
    except ValueError:
        return False


def plain_result(name: str, x: Any, status: str, message: str) -> InputResult:
    arr = np.asarray(x) if isinstance(x, np.ndarray | np.generic | int | float) else None
    shape = tuple(arr.shape) if arr is not None else ()
    dtype = arr.dtype.name if arr is not None else type(x).__name__
    return InputResult(name=name, shape=shape, dtype=dtype, status=status, mode="none",
                       message=message)
