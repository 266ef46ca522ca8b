"""Full checks that perturb many elements at once where the forward keeps them apart.

Many layers are separable along some axes: each row of a LayerNorm or softmax input
reaches only its own output row, each column of a linear layer's weight only its own
output column, each batch item only its own outputs. :func:`find_layout` finds such
axes from the forward itself with a few probes: one element is moved and the outputs
that changed tell which output axis keeps its coordinate, and along which input axis
of the same size; a second element, different along those axes, must then stay inside
the outputs that the layout predicts for it, or there is no layout.

The elements that differ only along the separable axes form a group; one evaluation
moves the whole group, and the change of each output slice is credited to the one
element whose slice it is (:func:`group_stencils`). The per-element comparison then
runs on these stencils exactly as on its own ones; it evaluates an element alone
whenever it needs a step the group did not take, so every element that does not pass
at once (a wrong gradient, a kink, or credit spoilt by a coupling the probes missed)
is judged on its own, and the verdicts are the per-element ones.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from ._numeric import F64, Runner, Stencil
from ._options import NOISE_ULPS

__all__ = ["GroupStencils", "Layout", "find_layout", "group_stencils"]

_PROBES = 4  # elements tried when looking for a layout
_MIN_SIZE = 8  # smaller inputs are checked element by element


@dataclass(frozen=True)
class Layout:
    """Input axes that keep their coordinate in the output, and their output axes.

    ``pairs`` are ``(input_axis, output_axis)``, sorted by output axis; ``groups`` has
    one row of flat input indices per group (elements equal outside the paired axes).
    """

    pairs: tuple[tuple[int, int], ...]
    out_shape: tuple[int, ...]
    groups: NDArray[np.intp]

    def slot(self, coords: NDArray[np.intp]) -> tuple[NDArray[np.intp], ...]:
        """Index into the per-slice sums for elements with these input coordinates."""
        return tuple(coords[a] for a, _b in self.pairs)

    @property
    def summed_axes(self) -> tuple[int, ...]:
        """Output axes summed over to get one value per slice."""
        kept = {b for _a, b in self.pairs}
        return tuple(b for b in range(len(self.out_shape)) if b not in kept)


def _changed(runner: Runner, i: int, j: int, h: float) -> NDArray[np.bool_] | None:
    """Which outputs move when element ``j`` of input ``i`` moves by ``h``."""
    arr = runner.arrays[i]
    flat = arr.reshape(-1)
    x0 = flat[j].copy()
    try:
        flat[j] = (x0 + arr.dtype.type(h)).astype(arr.dtype)
        y = runner._run()
    finally:
        flat[j] = x0
    if not np.all(np.isfinite(y)):
        return None
    return (y != runner.y0).reshape(runner.out_shapes[0])


def _pairs_from(changed: NDArray[np.bool_], coords: tuple[int, ...],
                in_shape: tuple[int, ...]) -> list[tuple[int, int]] | None:
    """Input/output axis pairs that one probe shows; None if it is ambiguous."""
    pairs: list[tuple[int, int]] = []
    used: set[int] = set()
    for b in range(changed.ndim):
        if changed.shape[b] == 1:
            continue
        others = tuple(k for k in range(changed.ndim) if k != b)
        hit = np.flatnonzero(np.any(changed, axis=others) if others else changed)
        if hit.size != 1:
            continue
        c = int(hit[0])
        cands = [a for a in range(len(in_shape)) if a not in used
                 and in_shape[a] == changed.shape[b] and coords[a] == c]
        if len(cands) > 1:
            return None
        if cands:
            pairs.append((cands[0], b))
            used.add(cands[0])
    return pairs


def _predicted(pairs: list[tuple[int, int]], coords: tuple[int, ...],
               out_shape: tuple[int, ...]) -> NDArray[np.bool_]:
    mask = np.ones(out_shape, dtype=bool)
    for a, b in pairs:
        sel: list[int | slice] = [slice(None)] * len(out_shape)
        sel[b] = coords[a]
        keep = np.zeros(out_shape, dtype=bool)
        keep[tuple(sel)] = True
        mask &= keep
    return mask


def find_layout(runner: Runner, i: int, steps: F64) -> Layout | None:
    """Probe input ``i``; return its separable layout, or None (check elements).

    ``steps`` holds each element's first step (the probe moves it by that much).
    """
    arr = runner.arrays[i]
    if len(runner.out_shapes) != 1 or arr.ndim == 0 or arr.size < _MIN_SIZE:
        return None
    out_shape = runner.out_shapes[0]
    if len(out_shape) == 0:
        return None
    order = runner.rng.permutation(arr.size)[:_PROBES]
    pairs: list[tuple[int, int]] | None = None
    first = -1
    for j in order:
        changed = _changed(runner, i, int(j), float(steps[int(j)]))
        if changed is None or not changed.any():
            continue
        coords = tuple(int(c) for c in np.unravel_index(int(j), arr.shape))
        if pairs is None:
            found = _pairs_from(changed, coords, tuple(arr.shape))
            if found:
                pairs, first = found, int(j)
            continue
        # A second probe that moved: its changes must stay inside its predicted slice.
        if not np.all(changed <= _predicted(pairs, coords, out_shape)):
            return None
        first_coords = np.unravel_index(first, arr.shape)
        if any(coords[a] == int(first_coords[a]) for a, _b in pairs):
            continue  # not different along every paired axis: no evidence
        layout = _layout(pairs, tuple(arr.shape), out_shape)
        if layout is None or _leaks(runner, i, layout, steps):
            return None
        return layout
    return None


def _slice_ids(pairs: tuple[tuple[int, int], ...], in_shape: tuple[int, ...],
               coords: list[NDArray[np.intp]], use_input: bool) -> NDArray[np.intp]:
    """The slice (combination of paired coordinates) of input elements or outputs."""
    ids: NDArray[np.intp] = np.zeros(np.shape(coords[0]), dtype=np.intp)
    for a, b in pairs:
        ids = ids * in_shape[a] + coords[a if use_input else b]
    return ids


def _leaks(runner: Runner, i: int, layout: Layout, steps: F64) -> bool:
    """Whether some element moves outputs outside its own slice.

    For every bit of the slice number, the elements of the slices with that bit set
    (then clear) move together; the outputs of the other slices must not change. Every
    ordered pair of slices differs in some bit, so ``2 * ceil(log2(slices))``
    evaluations see any element that reaches another slice's outputs, probed or not.
    """
    arr = runner.arrays[i]
    shape = tuple(arr.shape)
    elem = _slice_ids(layout.pairs, shape,
                      list(np.unravel_index(np.arange(arr.size), shape)), True)
    outs = _slice_ids(layout.pairs, shape, list(np.indices(layout.out_shape)), False)
    n_slices = int(np.prod([shape[a] for a, _b in layout.pairs]))
    flat = arr.reshape(-1)
    for bit in range(max(1, (n_slices - 1).bit_length())):
        for value in (0, 1):
            moved = np.flatnonzero(((elem >> bit) & 1) == value)
            if moved.size in (0, arr.size):
                continue
            x0 = flat[moved].copy()
            try:
                flat[moved] = (x0.astype(np.float64) + steps[moved]).astype(arr.dtype)
                y = runner._run().reshape(layout.out_shape)
            finally:
                flat[moved] = x0
            still = ((outs >> bit) & 1) != value
            if np.any(y[still] != runner.y0.reshape(layout.out_shape)[still]):
                return True
    return False


def _layout(pairs: list[tuple[int, int]], in_shape: tuple[int, ...],
            out_shape: tuple[int, ...]) -> Layout | None:
    paired = [a for a, _b in sorted(pairs, key=lambda p: p[1])]
    free = [a for a in range(len(in_shape)) if a not in paired]
    idx = np.arange(int(np.prod(in_shape))).reshape(in_shape)
    n_free = int(np.prod([in_shape[a] for a in free])) if free else 1
    groups = idx.transpose(free + paired).reshape(n_free, -1)
    if groups.shape[1] < 2:
        return None
    return Layout(tuple(sorted(pairs, key=lambda p: p[1])), out_shape, groups)


@dataclass
class GroupStencils:
    """Per-element stencils of one group at one set of steps (arrays over the group).

    ``valid`` marks the elements whose slice moved in both directions; the others are
    left to the per-element path.
    """

    valid: NDArray[np.bool_]
    d: F64
    noise: F64
    dplus: F64
    dminus: F64
    analytic: F64

    def stencil(self, k: int) -> Stencil:
        return Stencil(d=float(self.d[k]), noise=float(self.noise[k]),
                       dplus=float(self.dplus[k]), dminus=float(self.dminus[k]),
                       analytic=float(self.analytic[k]))


def group_stencils(runner: Runner, i: int, layout: Layout, group: NDArray[np.intp],
                   steps: F64) -> GroupStencils:
    """Move every element of ``group`` by its own step at once; credit each slice.

    The values are those :meth:`Runner.element` computes for one element, the sums
    taken over the element's own slice of the output.
    """
    arr = runner.arrays[i]
    flat = arr.reshape(-1)
    x0 = flat[group].copy()
    xp = (x0.astype(np.float64) + steps).astype(arr.dtype)
    xm = (x0.astype(np.float64) - steps).astype(arr.dtype)
    yp, ym = runner.run_pair_at(i, group, xp, xm)
    g = runner.grads[i]
    analytic = (g.reshape(-1)[group] if g is not None else np.zeros(group.size)).astype(
        np.float64)
    if not (np.all(np.isfinite(yp)) and np.all(np.isfinite(ym))):
        zero = np.zeros(group.size)
        return GroupStencils(np.zeros(group.size, dtype=bool), zero, zero, zero, zero,
                             analytic)
    shape = layout.out_shape
    y0, dy = runner.y0.reshape(shape), runner.dy.reshape(shape)
    yp, ym = yp.reshape(shape), ym.reshape(shape)
    axes = layout.summed_axes
    up_y, um_y = yp - y0, y0 - ym
    changed = (up_y != 0) | (um_y != 0)
    w = np.maximum(np.abs(yp) + np.abs(ym), runner.y_rms) * runner.absdy.reshape(shape)
    slot = layout.slot(np.asarray(np.unravel_index(group, arr.shape)))
    dp = np.sum(up_y * dy, axis=axes)[slot]
    dm = np.sum(um_y * dy, axis=axes)[slot]
    w2 = np.sum(np.where(changed, w * w, 0.0), axis=axes)[slot]
    moved = np.sum(changed, axis=axes)[slot] > 0
    up = xp.astype(np.float64) - x0.astype(np.float64)
    um = x0.astype(np.float64) - xm.astype(np.float64)
    valid = moved & (up != 0) & (um != 0)
    up_safe, um_safe = np.where(valid, up, 1.0), np.where(valid, um, 1.0)
    span = up_safe + um_safe
    eps = runner.eps(i)
    return GroupStencils(valid, (dp + dm) / span, NOISE_ULPS * eps * np.sqrt(w2) / span,
                         dp / up_safe, dm / um_safe, analytic)
