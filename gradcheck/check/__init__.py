"""The checker: finite differences that know their own error, modes (full, sampled,
directional), kinks, separable and joint directions, the complex step, tolerances and
hints, the result objects, and the entry points (vjp, layer, element-wise, model).

Imports :mod:`gradcheck.read` only.
"""
