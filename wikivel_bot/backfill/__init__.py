"""The backfill: the linker over Commons' existing files, as a Ray Data pipeline.

``sources`` turn a title list, a category, a time range or the dumps into ``File:`` titles;
``stages`` are the plain functions each step runs (the daemon's own fetcher, eligibility
rules, thumbnail client, decoder, ``link_files`` and store methods underneath); ``limiter``
holds one download budget for the whole cluster; ``pipeline`` wires the stages into Ray Data
(tasks for I/O and decoding, an actor pool for the model) and writes the results to the
queue. Ray is imported only by ``limiter`` and ``pipeline``, and only when a backfill runs.
"""
