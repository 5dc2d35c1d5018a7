"""Run sets: the per-rank traces of one job, found, parsed rank by rank and summarised.

``discover`` turns a directory, a glob or a list of files into (rank, file) pairs;
``summarize`` reads one rank's trace into a compact ``RankSummary``; ``parse`` maps
``summarize`` over the ranks through a ``concurrent.futures.Executor`` (local processes by
default, Dask distributed beyond one machine) and reduces to a ``RankSet``.
"""
