"""Measurement of the reference model, beside its budgets (``budgets.toml``): the
budgets' measurements, the speed against PyTorch, the checker's own cost, and the
allocator tuning the timed runs use. The model itself is the folder above; nothing
there imports this package but the subject's budget phase and the training loop's
allocator tuning.
"""
