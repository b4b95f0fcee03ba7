"""Showing: answers (Records, DataFrames) turned into what people and programs read.

- console   the terminal: answers on stdout, summaries and errors on stderr, Text cells only
- writers   CSV (formula-safe), JSON, Parquet, Markdown (escaped)
- stats     the cells of the stats answers and views: units, columns, ab/hey pictures

Log content is data in every output here, never markup, a formula or a terminal command.
"""
