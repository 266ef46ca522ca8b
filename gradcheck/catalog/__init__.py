"""The bug catalog: classic wrong backward passes, each with the layer it breaks.

Imports nothing of gradcheck.
"""
