"""Answering: the views of `queries/` run over a store's `requests`, as rows or DataFrames.

Each module answers one family of questions and returns data, never text for a terminal
(logan.show prints it):

- stats       where the time goes: per group, percentiles, histogram, slowest, pareto,
              apdex, cache candidates, the headline
"""
