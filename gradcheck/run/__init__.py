"""Running work apart: a process per case, BLAS threads, interrupts that end everything
at once, files written whole.

Imports :mod:`gradcheck.check` (the recording of results) and nothing above it.
"""
