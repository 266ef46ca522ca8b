"""How user code is called and read: the protocol of a forward and a backward, the
calling conventions of functions, and the reading of layer objects by observing what
their calls return and store.

The bottom floor: imports NumPy and nothing else of gradcheck.
"""
