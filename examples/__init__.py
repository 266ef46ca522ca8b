"""Runnable examples of subjects: code written the ways people write backprop by hand."""
