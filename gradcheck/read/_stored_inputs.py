"""The input gradients of a backward that returned nothing: which inputs want one
(:func:`inputs_wanting`, the arrays it stored being matched to them by name and shape
elsewhere) and what is said when none was found (:func:`inputs_read`: a first layer's
input held constant, a misshapen one a ``shape-mismatch``, else a ``bad-protocol``)."""

from __future__ import annotations

from typing import Any

import numpy as np

from ._depends import misshapen_input, moves_with_dout
from ._layer_call import Protocol
from ._loss_read import given_targets
from ._observe import TARGET_NAMED, grad_of, grad_stem, positional_names
from ._protocol import ProtocolError
from ._reading import describe
from ._tied import collinear

__all__ = ["inputs_read", "inputs_wanting"]


def inputs_wanting(proto: Protocol, first: Any) -> dict[int, tuple[str, Any]]:
    """The differentiated inputs whose gradient the backward did not return."""
    ret, wanted, names = first.ret, proto.wanted, positional_names(getattr(
        first.init, proto.forward)) or []
    if isinstance(ret, np.ndarray) and proto.returned is None and len(wanted) > 1 and \
            np.shape(first.xs[wanted[0]]) == ret.shape:  # dx returned, d_h0 stored (by name)
        return {k: (names[k], first.xs[k]) for k in wanted[1:] if k < len(names) and (
            g := grad_of(names[k], np.shape(first.xs[k]), first.stored) or (_named_for(
                names[k], first.stored) if not _zero_one(first.xs[k]) else None)) and not collinear(
                first.stored[g], ret, np.size(first.out) == 1)}  # (a loss's self.dy: no other's)
    if proto.returned is not None or ret is not None:
        return {}
    given_targets(proto, first.xs)  # a loss storing its gradient: labels are targets
    return {k: (names[k] if k < len(names) else "", first.xs[k]) for k in proto.wanted}


def _zero_one(x: Any) -> bool:
    """Whether ``x`` holds only 0 and 1 (a mask: no gradient read for it by name)."""
    return isinstance(x, np.ndarray) and x.size > 1 and bool(np.all((x == 0) | (x == 1)))


def _named_for(name: str, stored: dict[str, np.ndarray]) -> str | None:
    """The one array stored on the layer itself named as the gradient of the forward's
    argument ``name``, whatever its shape (``db`` for ``b``: a wrong shape is its verdict)."""
    found = [c for c in stored if "." not in c and "[" not in c and grad_stem(
        c.lstrip("_")) == name.lower() != c.lstrip("_").lower()]
    return found[0] if len(found) == 1 else None


def _first_of_two(proto: Protocol, first: Any, got_x: dict[int, str]
                  ) -> tuple[int, str] | None:
    """For a loss (one number) of two float inputs of one shape whose backward stored one
    array of their shape under an input's generic gradient name (``self.dinputs``) and
    nothing else, ``(k, that path)``: the gradient of input ``k``, the one the forward's
    argument names do not name as the target (``y_true``), else the first, as a returned
    one is read (the gradient of either input of a difference is minus the other's)."""
    xs = first.xs
    if got_x or proto.wanted != [0, 1] or len(xs) != 2 or np.size(first.out) != 1 or not all(
            isinstance(x, np.ndarray) and x.dtype.kind == "f" for x in xs) or \
            xs[0].shape != xs[1].shape or len(first.stored) != 1:
        return None
    (path, a), = first.stored.items()
    if "." in path or "[" in path or a.shape != xs[0].shape or grad_stem(
            path.lstrip("_")) not in ("inputs", "input", "x"):
        return None
    names = (positional_names(getattr(first.init, proto.forward)) or [])[:2]
    said = [k for k, n in enumerate(names) if TARGET_NAMED.fullmatch(n)]
    return (1 - said[0] if len(said) == 1 and len(names) == 2 else 0), path


def inputs_read(proto: Protocol, first: Any, got_x: dict[int, str],
                 params: bool = False, claimed: frozenset[Any] = frozenset()) -> None:
    """A backward that returned nothing must have stored every differentiated input's
    gradient where it can be found (one named as its gradient in another shape is a
    ``shape-mismatch``); one that computes its parameters' gradients (``claimed``, where
    they are) and none for its input (a first layer) holds the input constant, and says
    so."""
    if first.ret is not None or proto.returned is not None:
        return
    if (first_of := _first_of_two(proto, first, got_x)) is not None:
        k, path = first_of
        got_x[k] = path
        proto.note(f"the loss stores one gradient for its two float inputs of one shape, "
                   f"{path}: read as x{k}'s, x{1 - k} (its target, "
                   f"{'by its name' if k else 'the second'}) held constant; if x{1 - k} is "
                   f"the prediction, name it: wrt=['x{1 - k}']")
        return
    lost = [k for k in proto.wanted if k not in got_x]
    free = {c: a for c, a in first.stored.items() if c not in got_x.values()
            and c not in claimed and not any(  # (bias_grad, whose items are claimed)
                isinstance(g, str) and g.startswith(f"{c}[") for g in claimed)}
    misshapen_input(proto, first, lost, free)
    unread = {c: a for c, a in free.items() if any(  # of the input's size: reshaped or
        np.size(a) == np.size(first.xs[k]) for k in lost)}  # transposed, no first layer
    if lost and params and not unread and not got_x:  # nor arrays moving with dout
        unread = moves_with_dout(proto, first, free)
    if lost and params and not unread and not got_x:  # (one that computes some input's
        # gradient and not another's forgot it: no first layer)
        proto.note(f"the backward returned nothing and stored no gradient for "
                   f"{', '.join(f'x{k}' for k in lost)}: held constant, not checked (a "
                   "first layer's backward computes none)")
        return
    if lost:
        raise ProtocolError("bad-protocol", (
            f"{type(proto.layer).__name__}.{proto.backward} returned None and stored no "
            f"gradient found for input(s) {', '.join(f'x{k}' for k in lost)} (it stored "
            f"{describe(first.stored) or 'nothing'}" + (
                f"; no parameter's gradient, of the input's size or moving with the output "
                f"gradient: {describe(unread)}"
                if unread else "") + "); return the input gradient, or name what to check "
            f"with wrt= (the parameters alone: wrt={[p.name for p in proto.params] or ['W']})"))
