"""The resident suggestion service: the ready linker kept in memory for ``GET /api/suggest``.

A room of its own between the linker and the web: it may import ``linker/`` (through its
front door), ``commons/`` (the sources it reads, never the writer), ``queue/`` (the store's
own moves and read queries), ``wikidata/`` (the plain API client), ``labels/`` and ``core/``.
The web never imports it (nor ``linker/``, ``commons/``, ``learning/``): the CLI
(``wikivel-bot web``, ``cli/wsgi.py``) builds it and hands it to ``web.app.create_app`` as
its ``suggester``, so a web process without the ML extras still serves the review page.
docs/architecture.md draws it; tests/test_import_contract.py holds both sides to it.

* :mod:`~wikivel_bot.resident.answer` — a file's JSON: the one function behind
  ``suggest --json`` and ``/api/suggest``.
* :mod:`~wikivel_bot.resident.service` — :class:`ResidentSuggester`: batching window,
  bounded line, cache per (file revision, linker version).
* :mod:`~wikivel_bot.resident.revisions` — the light revision check behind the cache.
* :mod:`~wikivel_bot.resident.queueing` — a file it linked, queued as the daemon queues one.
"""
