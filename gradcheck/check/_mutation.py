"""Users' code that writes into what it was given. A forward that modifies its input in
place (``x[x < 0] = 0; return x``) and a backward that writes into ``dy`` are checked all
the same, each call on fresh copies, so their gradients get a verdict; when the gradients
are right the status is still ``mutation``: a caller that reads the array again (a
residual connection, a branch) gets the overwritten values.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

from ..read._protocol import ProtocolError

__all__ = ["WROTE_DY", "ForwardMutation", "final_status", "on_copies"]

WROTE_DY = "backward modified dy (the output gradient) in place"


class ForwardMutation(ProtocolError):
    """The forward modified an input it was given (``name``)."""

    def __init__(self, name: str) -> None:
        super().__init__("mutation", f"forward modified its input {name}")
        self.name = name


def on_copies(fwd: Callable[..., Any]) -> Callable[..., Any]:
    """``fwd`` called on deep copies of its arguments: its writes stay its own."""
    def forward(*args: Any, **kwargs: Any) -> Any:
        return fwd(*copy.deepcopy(args), **copy.deepcopy(kwargs))
    return forward


def final_status(status: str, message: str, notes: list[str],
                 wrote_input: ForwardMutation | None) -> tuple[str, str]:
    """The status once the gradients are compared: ``mutation`` when they are right but
    the forward modified its input or the backward ``dy``; otherwise the gradients'
    status, the writes stated in ``notes``."""
    if wrote_input is not None and status != "ok":
        notes.append(f"{wrote_input.message} (each call was given fresh copies)")
    elif wrote_input is not None:
        return "mutation", (
            f"{wrote_input.message}: the gradients are right (checked on fresh copies of "
            f"the inputs per call), but a caller that uses {wrote_input.name} after the "
            "forward (a residual connection, a branch) reads the overwritten values; "
            "compute into a new array (np.maximum(x, 0)) instead")
    if status == "ok" and WROTE_DY in notes:
        notes.remove(WROTE_DY)
        return "mutation", (
            f"{WROTE_DY}: the gradients it returns are right (checked on a fresh dy per "
            "call), but a caller that reads dy again (a residual connection, a branch) gets "
            "the overwritten values; return a new array (dout * mask) instead")
    return status, message
